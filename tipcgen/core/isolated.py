"""The command line of a probe run in another Python: isolated from the folder it runs in.

``python -c CODE`` puts the current folder first on sys.path, so a committed ``json.py`` (or
``importlib``, ``platform``, ...) in a user's repository would run inside tipcgen's probe. ``-I`` keeps
the current folder (and the script's folder) off sys.path; as it also drops PYTHONPATH and the user's
site-packages, which a chain's interpreter may find paddle in, the probe puts those two back first,
with modules the interpreter imported at start-up (``os``, ``site``): ``-P``'s meaning, on every Python 3.
Every probe of tipcgen (doctor, provenance) starts through ``command``.
"""
from __future__ import annotations

_PREAMBLE = ("import os, site, sys\n"
             "sys.path[1:1] = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]\n"
             "site.ENABLE_USER_SITE = not os.environ.get('PYTHONNOUSERSITE')\n"
             "if site.ENABLE_USER_SITE:\n"
             "    site.addsitedir(site.getusersitepackages())\n"
             "del os, site, sys\n")


def command(python: str, code: str) -> list[str]:
    """``[python, "-I", "-c", preamble + code]``: code run with the interpreter's own sys.path, never the
    current folder's modules."""
    return [python, "-I", "-c", _PREAMBLE + code]
