"""The working folders a chain writes (outputs, prepared data, backups), as .gitignore lines.

``tipcgen init`` appends the ones a repository's .gitignore does not cover yet, and never
changes a line that is there: running init again adds nothing. Whether a line covers a folder is git's
answer (`git check-ignore`, every pattern: globs, `**`, negations, a parent folder ignored), asked in a
scratch repository that holds only the .gitignore text; without git, a line covers a folder only when it
names that folder or a folder above it.
"""
from __future__ import annotations

import hashlib
import posixpath
import tempfile
from pathlib import Path

from tipcgen.core import git
from tipcgen.core.writes import write_file
from tipcgen.descriptor import Descriptor
from tipcgen.format import paths

HEADER = "# tipcgen working folders: chain outputs, prepared data, backups (tipcgen init adds what is missing)"


def _anchored(path: str) -> str:
    """``/path/`` from the repository root; the root itself (``.``, ``./``) is ``/``."""
    inside = posixpath.normpath(path).lstrip("/")
    return "/" if inside in ("", ".") else "/" + inside + "/"


def entries(desc: Descriptor) -> list[str]:
    """The folders this descriptor's chain writes, anchored at the repository root."""
    out = [_anchored(paths.OUTPUT), _anchored(paths.BACKUP), _anchored(paths.CACHE)]
    data = desc.data
    if data is not None:
        shipped = [f.lite for f in data.files if f.lite] + [call[0] for call in data.setup]
        folder = _anchored(data.dir)
        # a data folder that also holds files the project ships is theirs to ignore, not ours
        if folder != "/" and not any(_anchored(path).startswith(folder) for path in shipped):  # never the root
            out.append(folder)
        if data.trained_model and (folder == "/" or not _anchored(data.trained_model).startswith(folder)):
            out.append(_anchored(data.trained_model).rstrip("/"))
    return out


# git's answers by (git, the .gitignore text's sha256, names): a question asked again in one process (a suite, the
# tests: many repositories with the same .gitignore) is answered without two more processes; the answer depends on
# nothing else. By digest, so that no text is kept.
_ANSWERS: dict[tuple[str, bytes, tuple[str, ...]], frozenset[str]] = {}
_MAX_ANSWERS = 64


def _ignored_by_git(text: str, wanted: list[str]) -> frozenset[str] | None:
    """The entries of wanted that the .gitignore text ignores, by git; None where git cannot say."""
    found = git.found()
    if found is None:
        return None
    question = (found, hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest(), tuple(wanted))
    if question not in _ANSWERS:
        answer = _ask_git(text, wanted)
        if answer is None:
            return None
        if len(_ANSWERS) >= _MAX_ANSWERS:
            _ANSWERS.clear()
        _ANSWERS[question] = answer
    return _ANSWERS[question]


def _ask_git(text: str, wanted: list[str]) -> frozenset[str] | None:
    """git check-ignore's answer in a scratch repository that holds only the .gitignore text, and reads no
    configuration of the user's or the system's (core/git.py: no fsmonitor, no hook: git runs nothing)."""
    with tempfile.TemporaryDirectory(prefix="tipcgen-ignore-") as scratch:
        env = {"HOME": scratch}
        write_file(Path(scratch) / paths.GITIGNORE, text, within=scratch)
        names = [entry.lstrip("/") for entry in wanted]
        if any(ord(ch) < 32 or ch in '"\\' for name in names for ch in name):
            return None  # git would quote such a name in its answer: the literal match decides
        init = git.run(["init", "-q", "--template=", scratch], env=env, writable=[scratch])
        if not init.ok:
            return None
        # The entries follow `--`: paths to ask about, never options.
        proc = git.run(["check-ignore", "--no-index", "--", *names], scratch, env=env)
    if proc.timed_out or proc.exit_code not in (0, 1):  # 1: none of them is ignored
        return None
    return frozenset(name for name in proc.data.decode("utf-8", "surrogateescape").splitlines() if name)


def _covers(line: str, entry: str) -> bool:
    """Without git: the line names the entry, or a folder above it."""
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
    ignored = _ignored_by_git(existing or "", wanted)
    if ignored is None:
        lines = (existing or "").splitlines()
        missing = [e for e in wanted if not any(_covers(line, e) for line in lines)]
    else:
        missing = [e for e in wanted if e.lstrip("/") not in ignored]
    if not missing:
        return None
    text = existing or ""
    if text and not text.endswith("\n"):
        text += "\n"
    if text:
        text += "\n"
    return text + "\n".join([HEADER, *missing]) + "\n"
