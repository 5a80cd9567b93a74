"""The pretrained-weight caches outside the repository, and tipcgen's own records of their files (issue #59).

A train step may copy pretrained weights from a cache outside the repository (paddlenlp's
``~/.paddlenlp/models/bert-base-uncased/model_state.pdparams``, paddle's ``~/.cache/paddle/hapi/weights``) into
its checkpoint folder: untrained, they would look trained. ``folders`` names the caches a step sees (the HOME
and ``PPNLP_HOME`` of the step's environment: the sandbox keeps both, and binds the whole filesystem read-only,
so a sandboxed step reads them too); repro/record.py records their weight files before a train step, by
content, as it records the repository's.

Reading a 400 MB pretrained file costs about a second, so each file's record is kept across runs in tipcgen's
cache folder (``entry_path``: ``<TIPCGEN_CACHE_DIR or the user cache>/weights``, never the repository), under
the sha256 of the file's device, inode, size, change time and modification time (``os.stat``): a file written
again has another change time, which no unprivileged process can set back, so no repository can make a stale
entry match a file it changed. An entry is read bounded (core/inputs.py) and checked field by field; anything
else is ignored and the file read again. An unsandboxed step runs with your rights and could write an entry
itself (it could as well write the cache's weights): the sandbox makes the cache folder read-only.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Mapping

from tipcgen.core import inputs, writes
from tipcgen.core.errors import TipcgenError

# The caches Paddle's libraries download pretrained weights into, under the step's HOME (PaddleNLP's PPNLP_HOME,
# when set, replaces ~/.paddlenlp).
HOME_CACHES = (".paddlenlp", ".cache/paddle", ".paddleclas", ".paddleseg", ".paddleocr", ".paddledet",
               ".paddlespeech", ".paddlehub")
_ENTRY_BYTES = 16 << 20  # an entry is at most this big (bert-base's: 25 KB)
_SHA = re.compile(r"^[0-9a-f]{64}$")
_DIGEST = re.compile(r"^[0-9a-f]{64}\((\d+(, ?\d+)*,?)?\)$")


def folders(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(the folder, links resolved; how a message names it: ``~/.paddlenlp``) of each cache a step with this
    environment sees, those that exist, each once; none inside another. HOME and PPNLP_HOME count only as
    absolute paths."""
    home = env.get("HOME", "")
    wanted: list[tuple[str, str]] = []
    if os.path.isabs(home):
        for name in HOME_CACHES:
            if name == ".paddlenlp" and os.path.isabs(env.get("PPNLP_HOME", "")):
                continue
            wanted.append((os.path.join(home, name), f"~/{name}"))
    ppnlp = env.get("PPNLP_HOME", "")
    if os.path.isabs(ppnlp):
        wanted.append((ppnlp, shown(ppnlp, home)))
    out: list[tuple[str, str]] = []
    for folder, name in wanted:
        real = os.path.realpath(folder)
        if not os.path.isdir(real) or real == os.sep:
            continue
        if any(real == r or real.startswith(r + os.sep) for r, _ in out):
            continue
        out = [(r, n) for r, n in out if not r.startswith(real + os.sep)] + [(real, name)]
    return out


def shown(path: str, home: str) -> str:
    """A path as a message names it: ``~/...`` below HOME, else as it is."""
    if os.path.isabs(home) and home != os.sep and path.startswith(home.rstrip(os.sep) + os.sep):
        return "~/" + path[len(home.rstrip(os.sep)) + 1:]
    return path


def cache_dir() -> Path:
    """tipcgen's records of the caches' files: beside the flag cache (configs/flag_cache.py), never the repository."""
    from tipcgen.configs.flag_cache import cache_dir as flags

    return flags().parent / "weights"


def entry_name(info: os.stat_result) -> str:
    """An entry's file name: the sha256 of the file's device, inode, size, change and modification times."""
    key = f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_ctime_ns}:{info.st_mtime_ns}"
    return hashlib.sha256(key.encode()).hexdigest() + ".json"


def read(info: os.stat_result) -> tuple[str, dict[str, str] | None, tuple[str, ...], str] | None:
    """(sha256, parameter digests or None, the names of those exactly 0 or 1, why not read) of the file with
    this stat, as an earlier run recorded it; None where no good entry is kept."""
    path = cache_dir() / entry_name(info)
    if not path.is_file() or path.is_symlink():
        return None
    try:
        entry = json.loads(inputs.read_text(path, "weight cache entry", limit=_ENTRY_BYTES))
        sha, size, params, constant, why = (entry["sha256"], entry["size"], entry["params"], entry["constant"],
                                            entry["why"])
    except (TipcgenError, ValueError, KeyError, TypeError):
        return None
    if (not isinstance(sha, str) or not _SHA.match(sha) or size != info.st_size or not isinstance(why, str)
            or not isinstance(constant, list) or not all(isinstance(c, str) for c in constant)):
        return None
    if params is not None and (not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _DIGEST.match(v) for k, v in params.items())):
        return None
    return sha, params, tuple(constant), why


def write(info: os.stat_result, sha: str, params: dict[str, str] | None, constant: tuple[str, ...], why: str) -> None:
    """Keep a file's record for later runs (through core/writes.py; an unwritable folder loses only the cache)."""
    entry = {"sha256": sha, "size": info.st_size, "params": params, "constant": list(constant), "why": why}
    name = entry_name(info)
    try:
        writes.write_tree({name: json.dumps(entry) + "\n"}, cache_dir(), backup=False, owned=frozenset({name}))
    except (TipcgenError, OSError):
        pass
