"""Writing files safely: all of a set or none, never a changed file without force, backups kept.

``write_tree`` is the one function that replaces files in a user's folder (init, update, golden,
report -o, accept --write-docs, schema -o all call it).
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tipcgen.core.errors import RenderConflictError, TipcgenError


@dataclass(frozen=True)
class Written:
    path: str
    action: str  # created | unchanged | overwritten | updated (tipcgen's own files) | removed


def write_tree(files: dict[str, str | bytes], out_dir: Path, force: bool = False, backup: bool = True,
               owned: frozenset[str] | set[str] = frozenset(), remove: tuple[str, ...] | list[str] = ()) -> list[Written]:
    """Write all files under out_dir, or none. A file that differs is only replaced with force,
    and then its old content is kept under .tipcgen/backup/<time>/ (unless backup is False).

    ``owned`` files are tipcgen's own bookkeeping (the answers file, the merge base): they are
    replaced without force and without a backup. ``remove`` names files to delete (backed up too)."""
    plan: list[tuple[str, Path, bytes, str]] = []
    conflicts = []
    for rel, content in sorted(files.items()):
        data = content.encode("utf-8") if isinstance(content, str) else content
        target = out_dir / rel
        blocker = next((parent for parent in target.parents if parent.is_file()), None)
        if blocker is not None:
            raise TipcgenError(f"{blocker} is a file, but tipcgen needs a folder there", "choose another folder to write into")
        if target.is_dir():
            raise TipcgenError(f"{target} is a folder, but tipcgen writes a file there", "move it away and run again")
        if target.exists() and not target.is_file():  # reading a FIFO or /dev/zero to compare would never end
            raise TipcgenError(f"{target} is not a regular file (a pipe, device or socket), where tipcgen writes a file",
                               "choose another output path")
        if target.is_symlink() and not target.exists():
            raise TipcgenError(f"{target} is a symbolic link that leads nowhere (or to itself), where tipcgen writes a file",
                               "remove the link or fix its target, then run again")
        if target.exists():
            if target.read_bytes() == data:
                plan.append((rel, target, data, "unchanged"))
                continue
            if rel in owned:
                plan.append((rel, target, data, "updated"))
                continue
            conflicts.append(rel)
            plan.append((rel, target, data, "overwritten"))
        else:
            plan.append((rel, target, data, "created"))
    for rel in sorted(set(remove) - set(files)):
        if (out_dir / rel).is_file():
            plan.append((rel, out_dir / rel, b"", "removed"))
    if conflicts and not force:
        listing = "\n".join(f"  {rel}" for rel in conflicts)
        raise RenderConflictError(
            f"{len(conflicts)} file(s) in {out_dir} differ from what tipcgen renders; nothing was written:\n{listing}",
            "rerun with --force to replace them (the old files are kept under .tipcgen/backup/), "
            "or keep your edits and merge the new render with tipcgen update")
    # removals first, so that a failed write later on puts them back too
    todo = sorted((item for item in plan if item[3] != "unchanged"), key=lambda item: item[3] != "removed")
    if todo:
        try:
            _commit(todo, out_dir, backup)
        except OSError as exc:
            raise TipcgenError(f"cannot write under {out_dir}: {exc.strerror or exc} ({exc.filename or out_dir}); nothing was written",
                               "choose an output folder you can write to") from None
    return [Written(rel, action) for rel, _, _, action in plan]


def _commit(todo: list[tuple[str, Path, bytes, str]], out_dir: Path, keep_backup: bool) -> None:
    """Stage every file, then move each into place; on any failure put back what was there."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".tipcgen-stage-", dir=out_dir))
    undo = stage.parent / (stage.name + "-undo")  # old copies needed only to roll back
    backup: Path | None = None if keep_backup else undo
    done: list[tuple[Path, Path | None]] = []
    try:
        for rel, _, data, action in todo:
            if action == "removed":
                continue
            staged = stage / rel
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_bytes(data)
            if rel.endswith(".sh"):
                staged.chmod(0o755)
        for rel, target, _, action in todo:
            saved = None
            if action != "created":
                if action in ("overwritten", "removed") and backup is None:
                    backup = claim_backup_dir(out_dir)
                saved = (backup if action in ("overwritten", "removed") else undo) / rel
                saved.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(target, saved)
            if action == "removed":
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(stage / rel, target)
            done.append((target, saved))
    except BaseException:
        for target, saved in reversed(done):
            if saved is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(saved, target)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        shutil.rmtree(undo, ignore_errors=True)


def claim_backup_dir(out_dir: Path) -> Path:
    """A new folder .tipcgen/backup/<time>[-N]/ that no other write (in this second, or by another
    process) has: created exclusively, so a backup never lands on an older one."""
    root = out_dir / ".tipcgen" / "backup"
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for number in itertools.count(1):
        folder = root / (stamp if number == 1 else f"{stamp}-{number:02d}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise AssertionError("unreachable")
