"""The command line of a probe run in another Python: isolated from the folder it runs in.

``python -c CODE`` puts the current folder first on sys.path, so a committed ``json.py`` (or
``importlib``, ``platform``, ...) in a user's repository would run inside tipcgen's probe. ``-I`` keeps
the current folder (and the script's folder) off sys.path; as it also drops PYTHONPATH and the user's
site-packages, which a chain's interpreter may find paddle in, the probe puts those two back first,
with modules the interpreter imported at start-up (``os``, ``site``): ``-P``'s meaning, on every Python 3.
Every probe of tipcgen (doctor, provenance) starts through ``command``.

``is_python`` says whether a program a config's ``python:`` word names is a Python interpreter at all (issue
#59 item 5): ``python:make`` would run ``make -I -c ...``, which reads the repository's Makefile. A word that is
not one is never run by a probe; the fix is the user's own interpreter (``--python``/``TIPC_PYTHON``).
"""
from __future__ import annotations

import os
import re
import stat

from tipcgen.core import inputs

# python, python3, python3.11, python3.13t, python3.8m, python3-dbg, pypy, pypy3.10: CPython's and PyPy's names.
PYTHON_NAME = re.compile(r"(?:python|pypy)(?:[0-9]+(?:\.[0-9]+)*)?(?:[dmut]|-dbg)?", re.ASCII)

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


def is_python(path: str | None) -> bool:
    """Whether ``path`` (a found program's full path) is a Python interpreter by its name: the name it is called
    by, or the name of the file it resolves to (a venv's ``python`` links to ``python3.11``), is one of
    ``PYTHON_NAME``'s; and it is an executable regular file that starts as a program (ELF, or a ``#!`` script: a
    pyenv shim). Read, never run."""
    if not path:
        return False
    names = {os.path.basename(path), os.path.basename(os.path.realpath(path))}
    if not any(PYTHON_NAME.fullmatch(name) for name in names):
        return False
    try:
        info = os.stat(path)
    except OSError:
        return False
    return (stat.S_ISREG(info.st_mode) and os.access(path, os.X_OK)
            and inputs.program_head(path).startswith((b"#!", b"\x7fELF")))
