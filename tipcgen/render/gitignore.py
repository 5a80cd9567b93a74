"""The working folders a chain writes (outputs, prepared data, backups), as .gitignore lines.

``tipcgen init`` appends the ones a repository's .gitignore does not cover yet, and never
changes a line that is there: running init again adds nothing.
"""
from __future__ import annotations

import posixpath

from tipcgen.descriptor import Descriptor
from tipcgen.format import paths

HEADER = "# tipcgen working folders: chain outputs, prepared data, backups (tipcgen init adds what is missing)"


def _anchored(path: str) -> str:
    return "/" + posixpath.normpath(path).lstrip("/") + "/"


def entries(desc: Descriptor) -> list[str]:
    """The folders this descriptor's chain writes, anchored at the repository root."""
    out = [_anchored(paths.OUTPUT), _anchored(paths.BACKUP), _anchored(paths.CACHE)]
    data = desc.data
    if data is not None:
        shipped = [f.lite for f in data.files if f.lite] + [call[0] for call in data.setup]
        folder = _anchored(data.dir)
        # a data folder that also holds files the project ships is theirs to ignore, not ours
        if not any(_anchored(path).startswith(folder) for path in shipped):
            out.append(folder)
        if data.trained_model and not _anchored(data.trained_model).startswith(folder):
            out.append(_anchored(data.trained_model).rstrip("/"))
    return out


def _covers(line: str, entry: str) -> bool:
    line = line.strip()
    if not line or line.startswith(("#", "!")):
        return False
    pattern = line.lstrip("/")
    target = entry.lstrip("/")
    if pattern.endswith("/"):
        return target.startswith(pattern)
    return target.rstrip("/") == pattern


def merged(existing: str | None, wanted: list[str]) -> str | None:
    """The .gitignore text with the missing entries appended, or None when nothing is missing."""
    lines = (existing or "").splitlines()
    missing = [e for e in wanted if not any(_covers(line, e) for line in lines)]
    if not missing:
        return None
    text = existing or ""
    if text and not text.endswith("\n"):
        text += "\n"
    if text:
        text += "\n"
    return text + "\n".join([HEADER, *missing]) + "\n"
