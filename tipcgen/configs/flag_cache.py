"""The flag check's cache (configs/flag_check.py): the flags a finished ``--help`` probe read, in the user's
cache folder, never the repository's (a committed cache must never vouch for a flag).

An entry's name is ``key``: the sha256 of the script, the interpreter (its path, and what it resolves to
with its size and time), the repository files the script imports (found with ``ast``, transitively,
bounded) and whether the probe was sandboxed. An entry is read bounded (core/inputs.py) and checked
field by field: anything else is ignored and the script probed again.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path

import platformdirs

from tipcgen.configs.script_help import Flag
from tipcgen.core import inputs, writes
from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import terminal


def cache_dir(root: Path | None = None) -> Path:
    """Where probes are cached: the user's cache folder, never the repository (a committed cache must never
    vouch for a flag): $TIPCGEN_CACHE_DIR/flags, else the platform's user cache folder as platformdirs names it
    (on Linux $XDG_CACHE_HOME/tipcgen/flags when that is absolute, else ~/.cache/tipcgen/flags). ``root`` is
    ignored (kept for the callers that pass it)."""
    shared = os.environ.get("TIPCGEN_CACHE_DIR", "")
    if shared:
        return Path(shared) / "flags"
    base = Path(platformdirs.user_cache_dir("tipcgen", appauthor=False))
    if not base.is_absolute():
        # the platformdirs that Python < 3.11 gets takes a relative $XDG_CACHE_HOME as it is: a folder under the
        # current one, which may be the repository; the XDG spec says to ignore it
        base = Path.home() / ".cache" / "tipcgen"
    return base / "flags"


_MAX_IMPORTED = 200  # repository files a cache key follows from a script's imports
_ENTRY_BYTES = 1 << 20  # a cache entry is at most this big (a real one is a few KB)
_NAME_CHARS = 200


# a source's sha256 -> its import names: one script is keyed again and again (init, lint, run, a suite's chains);
# by digest, so that no source is kept (one may be 16 MiB), at most _MAX_SOURCES of them
_NAMES: dict[bytes, tuple[tuple[int, str], ...]] = {}
_MAX_SOURCES = 256


def import_names(source: bytes) -> tuple[tuple[int, str], ...]:
    """(level, dotted name) of each import of a Python source: the module, and each name taken from it; () where
    it does not parse. script_rest follows a script's modules with it too (one parse of each source)."""
    digest = hashlib.sha256(source).digest()
    if digest not in _NAMES:
        if len(_NAMES) >= _MAX_SOURCES:
            _NAMES.clear()
        _NAMES[digest] = _names_in(source)
    return _NAMES[digest]


def _names_in(source: bytes) -> tuple[tuple[int, str], ...]:
    tree = inputs.python_tree(source)
    if tree is None:
        return ()
    names: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names += [(node.level, base)] + [(node.level, f"{base}.{a.name}" if base else a.name) for a in node.names]
    return tuple(names)


def _imported_files(root: Path, script: Path) -> list[Path]:
    """The repository's .py files the script imports (ast; absolute imports from the repository root or the
    script's folder, relative ones from the importing file), transitively, at most _MAX_IMPORTED. A name whose
    first part a folder does not hold (``os``, ``paddle``: most of them) is not looked for there file by file."""
    top = root.resolve()
    seen: dict[Path, None] = {}
    listings: dict[Path, frozenset[str]] = {}

    def holds(folder: Path, first: str) -> bool:
        if folder not in listings:
            try:
                listings[folder] = frozenset(os.listdir(folder))
            except OSError:
                listings[folder] = frozenset()
        return first in listings[folder] or first + ".py" in listings[folder]

    todo = [script]
    while todo and len(seen) < _MAX_IMPORTED:
        path = todo.pop()
        try:
            names = import_names(inputs.read_bytes(path, "script"))
        except TipcgenError:
            continue
        for level, name in names:
            parts = [p for p in name.split(".") if p]
            bases = [path.parent] if level else [root, script.parent]
            for base_dir in bases:
                for _ in range(max(0, level - 1)):
                    base_dir = base_dir.parent
                if parts and not holds(base_dir, parts[0]):
                    continue
                stem = base_dir.joinpath(*parts)
                for found in (stem.with_suffix(".py") if name else None, stem / "__init__.py"):
                    if found is None or found in seen or found == script or not found.is_file():
                        continue
                    if not found.resolve().is_relative_to(top):
                        continue
                    seen[found] = None
                    todo.append(found)
    return sorted(seen)


def key(root: Path, script: str, data: bytes, python: str, sandboxed: bool) -> str:
    """sha256 of the script, the interpreter (its path, and what it resolves to with its size and time: a new
    version is a new key), the repository files the script imports, and whether the probe was sandboxed."""
    digest = hashlib.sha256(b"tipcgen-flags-3\0" + data + b"\0" + python.encode() + b"\0")
    try:
        real = os.path.realpath(python)
        info = os.stat(real)
        digest.update(f"{real}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    except OSError:
        digest.update(b"?\0")
    for path in _imported_files(root, root / script):
        try:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + inputs.read_bytes(path, "script") + b"\0")
        except (TipcgenError, ValueError):
            digest.update(b"?\0")
    digest.update(b"sandboxed" if sandboxed else b"trusted")
    return digest.hexdigest() + ".json"


def read(path: Path) -> list[Flag] | None:
    """A cache entry's flags, read bounded and checked; None for anything else (missing, bad: probe again)."""
    if not path.is_file() or path.is_symlink():
        return None
    try:
        record = json.loads(inputs.read_text(path, "cache entry", limit=_ENTRY_BYTES))
        flags = record["flags"]
        if not isinstance(flags, list):
            return None
        out = []
        for item in flags:
            names, takes = item["names"], item["takes_value"]
            choices, text, required = item["choices"], item["help"], item["required"]
            if (not isinstance(names, list) or not names or not isinstance(takes, bool)
                    or not all(isinstance(n, str) and n.startswith("-") and 1 < len(n) <= _NAME_CHARS
                               and terminal(n) == n and " " not in n for n in names)
                    or not isinstance(choices, list) or not all(isinstance(c, str) for c in choices)
                    or not isinstance(text, str) or not isinstance(required, bool)):
                return None
            out.append(Flag(tuple(names), takes, tuple(choices), text, required))
        return out
    except (TipcgenError, ValueError, KeyError, TypeError):
        return None


def write(cache: Path, name: str, script: str, flags: list[Flag]) -> None:
    """Keep a finished probe's flags (through core/writes.py; an unwritable folder loses only the cache)."""
    record = {"script": script, "flags": [{"names": list(f.names), "takes_value": f.takes_value, "choices": list(f.choices),
                                           "help": f.help, "required": f.required} for f in flags]}
    try:
        writes.write_tree({name: json.dumps(record, indent=1) + "\n"}, cache, backup=False, owned=frozenset({name}))
    except (TipcgenError, OSError):
        pass
