"""Which repository and which config a command works on.

``find_root``: the repository root, found as pytest finds its rootdir: ``--root`` where it is given (a folder
that must exist), else the nearest folder, from the current one up, that holds ``test_tipc/`` (or tipcgen's
answers file); failing that the nearest that holds a descriptor (``tipc.yaml``), then the git root, then the
current folder. ``find_config``: the config given (a path under the root, a path from the current folder, or a
model's name: ``-c bert_sst2``), or the only one of a chain. Shared by run, doctor and the commands that read a
run (doctor says what run would do, without importing run).
"""
from __future__ import annotations

import os
from pathlib import Path

from tipcgen.core.errors import RunError, TipcgenError
from tipcgen.format import paths
from tipcgen.format.chains import BASIC
from tipcgen.format.paths import ANSWERS, CONFIG_NAMES, TEST_TIPC

DESCRIPTOR_NAMES = ("tipc.yaml", "tipc.yml")  # a repository's descriptor, where `tipcgen new` writes it
ROOT_HELP = ("The repository root, where test_tipc/ is (default: the nearest folder holding test_tipc/, from the "
             "current one up; else the one holding tipc.yaml, else the git root).")


def find_root(given: Path | None, start: Path | None = None) -> Path:
    """The repository root a command works in: see the module docstring. A given root that is missing or not a
    folder is an error (exit 2) naming it."""
    if given is not None:
        if not given.is_dir():
            raise TipcgenError(f"--root {given}: " + ("is not a folder" if given.exists() else "no such folder"),
                               "pass the repository root (the folder that holds test_tipc/), or leave --root out "
                               "to have it found from the current folder up")
        return given
    here = Path(".") if start is None else start  # relative: the paths a command prints stay short
    chain = [here, *here.absolute().parents] if here.is_absolute() else [here, *_relative_parents(here)]
    for test in (lambda d: (d / TEST_TIPC).is_dir() or (d / ANSWERS).is_file(),
                 lambda d: any((d / name).is_file() for name in DESCRIPTOR_NAMES),
                 lambda d: (d / ".git").exists()):
        for folder in chain:
            if test(folder):
                return folder
    return here


def _relative_parents(here: Path) -> list[Path]:
    """The folders above a relative ``here``, spelt relative to the current folder (``..``, ``../..``)."""
    absolute = here.absolute()
    return [Path(os.path.relpath(parent)) for parent in absolute.parents]


def find_config(config: str | None, root: Path, chain: str = BASIC) -> Path:
    """The config to run: the one given, or the only one of the chain under test_tipc/configs."""
    name = CONFIG_NAMES[chain]
    if config:
        return _given_config(config, root, name)
    found = sorted((root / paths.CONFIGS).glob(f"*/{name}"))
    if not found:
        raise RunError(f"no test_tipc/configs/*/{name} under {root.resolve()}",
                       "render one first: tipcgen init <sample | descriptor.yaml>, or pass --config")
    if len(found) > 1:
        listing = ", ".join(str(p.relative_to(root)) for p in found)
        raise RunError(f"several configs found ({listing})", "choose one with --config")
    return found[0].relative_to(root)


def _given_config(config: str, root: Path, name: str) -> Path:
    """--config as a path relative to the root (else to the current folder), or a model's name (its folder under
    test_tipc/configs): an existing regular file inside the root (the scripts run from the root)."""
    full = root / config  # an absolute config stays absolute
    if not os.path.lexists(full) and os.path.lexists(config):
        full = Path(config)  # a path from the current folder (a subfolder of the root)
    if not os.path.lexists(full):
        model = _by_model(config, root, name)
        if model is None:
            models = sorted(p.parent.name for p in (root / paths.CONFIGS).glob(f"*/{name}"))
            raise RunError(f"config file not found: {config}" + (f" (nor a model of {paths.CONFIGS}: "
                                                                  f"{', '.join(models[:20])})" if models else ""),
                           f"pass a model's name or a file such as test_tipc/configs/<model>/{name}")
        full = model
    if not full.is_file():
        raise RunError(f"{config} is not a regular file (a folder, pipe, device or broken link)",
                       f"pass the config file itself, such as test_tipc/configs/<model>/{name}")
    relative = Path(os.path.relpath(os.path.abspath(full), os.path.abspath(root)))
    if relative.parts[:1] == ("..",):
        raise RunError(f"{config} is outside the repository root {root}",
                       "the scripts run from the root and read the config relative to it: pass a config under "
                       "--root, or point --root at the repository that holds it")
    return relative


def _by_model(config: str, root: Path, name: str) -> Path | None:
    """``-c bert_sst2``: the chain's config of that model's folder under test_tipc/configs (``-`` and ``_`` alike)."""
    if not config or "/" in config or os.sep in config or config in (".", ".."):
        return None
    for folder in dict.fromkeys((config, config.replace("-", "_"), config.replace("_", "-"))):
        candidate = root / paths.CONFIGS / folder / name
        if candidate.is_file():
            return candidate
    return None
