"""A chain never writes into the repository's tracked files silently (issue #28).

Where the repository is a git work tree, ``git status`` is read before prepare.sh, after it and after
the runner: a tracked file that a script changed, deleted or replaced (one already modified before the
run counts when its content changed again) is listed, by the part of the run that changed it, in a
failed ``tracked_files`` check step, and the runner's step that changed it (the last to start before
the file's modification time) fails too, naming it; with none changed the check passes; where git answered
before the run but not after a part of it, the check fails (a proof that could not run). Untracked and ignored files
(the run's output, data, tipcgen's caches) are not looked at. Without git there is nothing to compare
with, and no step.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from tipcgen.core import git, inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.format.chains import GIT
from tipcgen.format.words import CHECK, FAILED, PASSED
from tipcgen.results.summary import Step, StepCheck

SHOWN = 10
HASH_BYTES = 1 << 30  # a tracked file larger than this is compared by its size and time
COMMAND = "git status --untracked-files=no, before and after each part of the run"


def snapshot(root: Path) -> dict[str, str] | None:
    """The tracked files that differ from HEAD, each with a hash of what is there now; None without git."""
    if git.found() is None:
        return None
    outcome = git.run(["status", "--porcelain=v2", "-z", "--untracked-files=no"], root, output_cap=64 << 20)
    if outcome.exit_code != 0 or outcome.timed_out or outcome.truncated:
        return None  # not a git work tree (or no git, or no answer)
    return from_status(root, outcome.data)


# Fields before the path in a v2 entry: 1 XY sub mH mI mW hH hI PATH; 2 ... hI Xscore PATH\0ORIG; u ... h3 PATH.
_V2_FIELDS = {"1": 8, "2": 9, "u": 10}


def from_status(root: Path, data: bytes) -> dict[str, str]:
    """The snapshot from ``git status --porcelain=v2 -z``'s answer (the run's provenance probe gives the first
    one, so the run starts one git, not two): changed tracked files, submodules left out."""
    entries = data.decode("utf-8", errors="surrogateescape").split("\0")
    state: dict[str, str] = {}
    skip_next = False
    for entry in entries:
        if skip_next:  # a rename's source path
            skip_next = False
            continue
        fields = entry.split(" ", _V2_FIELDS.get(entry[:1], 0))
        if entry[:1] not in _V2_FIELDS or len(fields) <= _V2_FIELDS[entry[:1]]:
            continue  # a header (# branch.oid) or nothing
        skip_next = entry[0] == "2"
        if fields[2].startswith("S"):  # a submodule: never looked at (--ignore-submodules=all before)
            continue
        code, path = fields[1].replace(".", " "), fields[-1]
        file = root / path
        state[path] = _digest(file) if file.is_file() else code.strip() or "gone"
    return state


def _digest(file: Path) -> str:
    """sha256 of a tracked file read in blocks (a regular file only: core/inputs.py), at most HASH_BYTES of it;
    a larger one by its size and time. "unreadable" where it cannot be read."""
    try:
        info = file.stat()
        if info.st_size > HASH_BYTES:
            return f"size {info.st_size} mtime {info.st_mtime_ns}"
        digest = hashlib.sha256()
        with inputs.open_binary(file, "tracked file") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
                if handle.tell() > HASH_BYTES:
                    break
        return digest.hexdigest()
    except (OSError, TipcgenError):
        return "unreadable"


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Tracked files whose state differs between two snapshots (a file back as committed counts too)."""
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def _shown(paths: list[str]) -> str:
    return ", ".join(paths[:SHOWN]) + (f" (and {len(paths) - SHOWN} more)" if len(paths) > SHOWN else "")


def attribute(root: Path, paths: list[str], steps: list[Step], starts: list[tuple[float, str, str]]) -> dict[int, list[str]]:
    """The runner's step (index into steps) that changed each file: the last one to start (its
    ``[tipc] RUN kind name`` line, timed as tipc read it) before the file's modification time; steps
    run one after another. A deleted file, or one changed before any step, is attributed to none."""
    out: dict[int, list[str]] = {}
    for path in paths:
        try:
            changed_at = os.stat(root / path).st_mtime
        except OSError:
            continue
        started = [(kind, name) for at, kind, name in starts if at <= changed_at]
        if not started:
            continue
        index = next((i for i, s in enumerate(steps) if (s.kind, s.name) == started[-1]), None)
        if index is not None:
            out.setdefault(index, []).append(path)
    return out


def check_step(parts: list[tuple[str, dict[str, str] | None]], root: Path | None = None,
               steps: list[Step] | None = None, starts: Sequence[tuple[float, str, str]] = ()) -> Step | None:
    """The tracked_files check from snapshots taken before and after each part of the run
    (``[("before", s0), ("prepare", s1), ("the runner", s2)]``); None without git. A runner's step
    that changed a tracked file (``attribute``) fails too, naming the files."""
    if len(parts) < 2 or parts[0][1] is None:
        return None  # no git work tree: nothing to compare with
    lost = [part for part, state in parts[1:] if state is None]
    if lost:  # git answered before the run, not after a part of it: the proof could not run, so it fails
        return Step(kind=CHECK, name="tracked_files", status=FAILED, check=StepCheck(GIT), command=COMMAND,
                    reason=f"git status could not be read after {lost[0]} (it failed or timed out), so the tracked "
                           "files were not compared: run again, or check the repository with git status")
    found: list[str] = []
    for (_, before), (part, after) in zip(parts, parts[1:]):
        paths = changed(before, after)  # type: ignore[arg-type]
        if paths:
            found.append(f"{part} changed {len(paths)} tracked file(s): {_shown(paths)}")
            if part == parts[-1][0] and root is not None and steps:
                for index, files in attribute(root, paths, steps, list(starts)).items():
                    step = steps[index]
                    found[-1] += f" ({step.kind} {step.name}: {', '.join(files)})"
                    step.status = FAILED
                    step.reason = "; ".join(filter(None, [step.reason, f"it changed tracked file(s) {_shown(files)}"]))
    step = Step(kind=CHECK, name="tracked_files", status=FAILED if found else PASSED, check=StepCheck(GIT), command=COMMAND)
    if found:
        step.reason = ("; ".join(found) + ": a chain must not write into the repository's tracked files "
                       "(point the script's output flag at the run's folder; git diff shows the change)")
    else:
        step.note = "no tracked file was changed by the run"
    return step


def snapshot_and_untracked(root: Path) -> tuple[dict[str, str] | None, set[str] | None]:
    """One git status for two answers: ``snapshot``'s (the tracked files that differ from HEAD, hashed) and the
    untracked, not ignored paths of the work tree (a new folder as one entry); (None, None) without git. Taken after
    prepare.sh and after the runner's steps: what is new between them was left behind by the steps
    (results/unchecked.left_behind)."""
    if git.found() is None:
        return None, None
    outcome = git.run(["status", "--porcelain=v2", "-z", "--untracked-files=normal"], root, output_cap=64 << 20)
    if outcome.exit_code != 0 or outcome.timed_out or outcome.truncated:
        return None, None
    entries = outcome.data.decode("utf-8", errors="surrogateescape").split("\0")
    return from_status(root, outcome.data), {entry[2:] for entry in entries if entry.startswith("? ")}


def committed(root: Path, paths: list[str]) -> set[str]:
    """Which of ``paths`` (relative to the root) git tracks; empty without git."""
    if not paths or git.found() is None:
        return set()
    outcome = git.run(["ls-files", "-z", "--", *paths], root, output_cap=1 << 20)
    if outcome.exit_code != 0 or outcome.timed_out:
        return set()
    return {entry for entry in outcome.data.decode("utf-8", errors="surrogateescape").split("\0") if entry}
