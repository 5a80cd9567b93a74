"""Which config a command works on: the one given (inside the repository root), or the only one of a chain.

Shared by run and doctor (doctor says what run would do, without importing run).
"""
from __future__ import annotations

import os
from pathlib import Path

from tipcgen.core.errors import RunError
from tipcgen.format import paths
from tipcgen.format.paths import CONFIG_NAMES


def find_config(config: str | None, root: Path, chain: str = "basic") -> Path:
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
    """--config as a path relative to the root: an existing regular file inside it (the scripts run from the root)."""
    full = root / config  # an absolute config stays absolute
    if not os.path.lexists(full):
        raise RunError(f"config file not found: {config}", f"pass a file such as test_tipc/configs/<model>/{name}")
    if not full.is_file():
        raise RunError(f"{config} is not a regular file (a folder, pipe, device or broken link)",
                       f"pass the config file itself, such as test_tipc/configs/<model>/{name}")
    relative = Path(os.path.relpath(os.path.abspath(full), os.path.abspath(root)))
    if relative.parts[:1] == ("..",):
        raise RunError(f"{config} is outside the repository root {root}",
                       "the scripts run from the root and read the config relative to it: pass a config under "
                       "--root, or point --root at the repository that holds it")
    return relative
