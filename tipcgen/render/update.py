"""``tipcgen update``: re-render after a descriptor edit or a tipcgen upgrade, keeping the user's edits.

Per generated file, three versions meet: the base (what init rendered last time, kept under
``.tipcgen/base/``), the user's current file, and the new render. A file the user never touched
takes the new render; an edited one is merged three ways with ``git merge-file``. A conflict is
never resolved silently: the file is left as it is (or, on request, gets conflict markers) and its
base is not advanced, so the next update merges the same three versions again.
"""
from __future__ import annotations

import difflib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tipcgen import __version__, descriptor
from tipcgen.configs import submission
from tipcgen.configs.existing import defined_functions
from tipcgen.core import git, writes
from tipcgen.core.errors import TipcgenError
from tipcgen.core.writes import write_file
from tipcgen.descriptor.answers import Answers, base_path, read, sha256_of, target_of
from tipcgen.render import repository
from tipcgen.format import paths

# What happens to one file: nothing to do, or what update writes (or would write, with --diff).
UNCHANGED = "unchanged"  # the file already is the new render
KEPT = "kept"            # the user's edit stays; the render did not change underneath it
UPDATED = "updated"      # an untouched file takes the new render
MERGED = "merged"        # the user's edit and the render's change merged cleanly
CREATED = "created"      # a file the new render adds
REMOVED = "removed"      # an untouched file the new render no longer has
CONFLICT = "conflict"    # both changed the same lines (or one deleted what the other changed)
WRITES = (UPDATED, MERGED, CREATED)


@dataclass
class FileUpdate:
    path: str
    action: str
    reason: str = ""
    current: bytes | None = None   # the file now (None: missing)
    proposed: bytes | None = None  # what update writes (None: nothing, or delete for REMOVED)
    new_base: bytes | None = None  # the render that becomes the merge base when written cleanly


@dataclass
class UpdatePlan:
    out_dir: Path
    old: Answers
    new: Answers
    files: list[FileUpdate] = field(default_factory=list)

    @property
    def conflicts(self) -> list[FileUpdate]:
        return [f for f in self.files if f.action == CONFLICT]

    @property
    def changes(self) -> list[FileUpdate]:
        return [f for f in self.files if f.action not in (UNCHANGED, KEPT)]

    @property
    def descriptor_changed(self) -> bool:
        return [m[1] for m in self.old.models] != [m[1] for m in self.new.models]


def plan(out_dir: Path, marker_size: int = 7) -> UpdatePlan:
    """What update would do in out_dir, file by file. Reads only; raises if a merge needs git and there is none.
    tipcgen's own folder (the merge base, backups) is checked for links first: update reads and writes there."""
    for folder in (paths.BASE, paths.BACKUP):
        writes.check_no_links(out_dir, out_dir / folder, "tipcgen's folder (the merge base and backups)")
    old = read(out_dir)
    models = [(descriptor.load(target_of(reference, out_dir, sha256)), devices)
              for reference, sha256, devices in old.models]
    files = repository.rendered_models(models)
    if (out_dir / paths.SUBMISSION_RECORD).is_file():  # init --submission: the repository keeps its runner files
        files = submission.own_files(files, paths.config_rel(models[0][0].model_name))
    shas = [sha256_of(Path(desc.source)) for desc, _ in models]
    new = Answers(__version__, old.descriptor, shas[0], old.devices, tuple(sorted(files)),
                  tuple((reference, sha, devices) for (reference, _, devices), sha in zip(old.others, shas[1:])))
    result = UpdatePlan(out_dir, old, new)
    for rel in sorted(set(old.files) | set(files)):
        theirs = files.get(rel)
        result.files.append(_file_update(out_dir, rel, rel in old.files,
                                         None if theirs is None else _bytes(theirs), marker_size))
        _say_where_functions_went(result.files[-1], out_dir, files)
    return result


def _say_where_functions_went(item: FileUpdate, out_dir: Path, files: dict[str, str | bytes]) -> None:
    """A conflict in a script whose functions the new render moved to another file (common_func.sh's steps and
    checks to tipc_steps.sh) names that file: the user's edit of a moved function belongs there now."""
    base = _read(out_dir / base_path(item.path))
    if item.action != CONFLICT or base is None or item.new_base is None or not item.path.endswith(".sh"):
        return
    gone = defined_functions(base.decode("utf-8", "replace")) - defined_functions(item.new_base.decode("utf-8", "replace"))
    moved = sorted(rel for rel, text in files.items() if rel != item.path and rel.endswith(".sh") and isinstance(text, str)
                   and gone & defined_functions(text))
    if moved:
        item.reason += (f"; the new render moved functions of this file ({', '.join(sorted(gone)[:3])}"
                        f"{', ...' if len(gone) > 3 else ''}) to {', '.join(moved)}: carry an edit of them there")


def _bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _file_update(out_dir: Path, rel: str, tracked: bool, theirs: bytes | None, marker_size: int) -> FileUpdate:
    ours = _read(out_dir / rel)
    base = _read(out_dir / base_path(rel)) if tracked else None
    item = FileUpdate(rel, UNCHANGED, current=ours, new_base=theirs)
    if ours is not None and _marker(rel, marker_size) in ours:
        item.action, item.reason = CONFLICT, "still has the conflict markers of an earlier update: resolve them first"
        return item
    if theirs is None:  # the new render no longer has this file
        if ours is None:
            pass  # gone from both: forget it
        elif base is not None and ours == base:
            item.action, item.reason = REMOVED, "no longer rendered"
        else:
            item.action = CONFLICT
            item.reason = "no longer rendered, but edited here: delete it or keep it yourself"
        return item
    if ours is None:
        if not tracked:
            item.action, item.proposed = CREATED, theirs
        elif base == theirs:
            item.action, item.reason = KEPT, "deleted here; the render did not change it"
        else:
            item.action, item.reason = CONFLICT, "deleted here, but the new render changes it"
        return item
    if ours == theirs:
        return item
    if base is None:
        item.action = CONFLICT
        item.reason = ("differs from the render and has no merge base (.tipcgen/base/ is missing it)" if tracked else
                       "tipcgen now renders this file, and a different one of yours is there")
        item.reason += ": compare them yourself, or take the render with tipcgen init --force"
        return item
    if ours == base:
        item.action, item.proposed = UPDATED, theirs
        return item
    if base == theirs:
        item.action, item.reason = KEPT, "your edit"
        return item
    merged, conflicts = merge3(ours, base, theirs, rel, marker_size)
    item.proposed = merged
    if conflicts:
        item.action = CONFLICT
        item.reason = f"{conflicts} conflicting change(s): your edit and the new render change the same lines"
    else:
        item.action = MERGED
    return item


def _marker(rel: str, marker_size: int) -> bytes:
    return ("<" * marker_size + f" {rel} (yours)").encode("utf-8")


def merge3(ours: bytes, base: bytes, theirs: bytes, rel: str, marker_size: int = 7) -> tuple[bytes, int]:
    """``git merge-file -p``: the merged text and the number of conflicts (0: clean)."""
    if git.found() is None:
        raise TipcgenError(f"{rel}: your edit must be merged with the new render, and that needs git, which is not installed",
                           "install git (apt-get install git), or take the new render with tipcgen init --force "
                           "(your version is kept under .tipcgen/backup/)")
    with tempfile.TemporaryDirectory(prefix="tipcgen-merge-") as tmp:
        paths = []
        for name, data in (("yours", ours), ("base", base), ("tipcgen", theirs)):
            path = Path(tmp) / name
            write_file(path, data)
            paths.append(str(path))
        proc = git.run(["merge-file", "-p", f"--marker-size={marker_size}",
                        "-L", f"{rel} (yours)", "-L", f"{rel} (last render)", "-L", f"{rel} (new render)", *paths],
                       stderr="separate", output_cap=64 << 20, timeout=None, readable=[tmp])
    code = -1 if proc.exit_code is None else proc.exit_code
    if code < 0 or code > 127 or proc.truncated:
        detail = proc.errors.strip() or proc.error or f"exit code {code}"
        raise TipcgenError(f"{rel}: git merge-file failed: {detail}",
                           "a binary file cannot be merged: take the render with tipcgen init --force, or keep yours")
    return proc.data, code


def apply(update: UpdatePlan, markers: bool = False) -> list[repository.Written]:
    """Write the clean changes atomically and advance their merge base. A conflicting file is left
    as it is and keeps its old base (the next update merges it again), unless markers is set: then it
    gets git's conflict markers and the new base, since the markers already carry the new render."""
    out_dir = update.out_dir
    files: dict[str, bytes] = {}
    remove: list[str] = []
    book_base: dict[str, bytes] = {}
    tracked = []
    for item in update.files:
        if item.action in WRITES:
            files[item.path] = item.proposed or b""
        elif item.action == REMOVED:
            remove.append(item.path)
        elif item.action == CONFLICT and markers and item.proposed is not None:
            files[item.path] = item.proposed
            tracked.append(item.path)
            book_base[item.path] = item.new_base or b""
            continue
        if item.action == CONFLICT:
            tracked.append(item.path)  # keep tracking it (and its old base) until it is resolved
        elif item.action != REMOVED and item.new_base is not None:
            tracked.append(item.path)
            book_base[item.path] = item.new_base
    answers = Answers(update.new.tipcgen_version, update.new.descriptor, update.new.descriptor_sha256,
                      update.new.devices, tuple(sorted(set(tracked))), update.new.others)
    book = repository.bookkeeping(answers, book_base)
    remove += [base_path(item.path) for item in update.files
               if item.path not in tracked and (out_dir / base_path(item.path)).is_file()]
    written = repository.write_tree({**files, **book}, out_dir, force=True, owned=set(book), remove=remove)
    return [w for w in written if w.path in files or w.path in remove or w.path == paths.ANSWERS]


def diff_text(update: UpdatePlan) -> str:
    """Unified diffs, current file → what update would write (conflicts: the merge with markers)."""
    chunks = []
    for item in update.changes:
        if item.action == CONFLICT and item.proposed is None:
            chunks.append(f"--- {item.path} (conflict: {item.reason})\n")
            continue
        before = _lines(item.current)
        after = _lines(item.proposed) if item.action != REMOVED else []
        if before is None or after is None:
            chunks.append(f"Binary file {item.path} would be {item.action}\n")
            continue
        label = f" ({item.action}: {item.reason})" if item.reason else f" ({item.action})"
        diff = difflib.unified_diff(before, after, f"a/{item.path}", f"b/{item.path}{label}")
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
        chunks.append(text or f"--- {item.path}{label}: no content change\n")
    return "".join(chunks)


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None
