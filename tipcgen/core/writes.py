"""Writing files safely: never through a link, never half a file, never a changed file without force.

Every file tipcgen writes goes through this module (``tests/test_writes.py`` greps the package):

- ``write_file(path, data)``: one output or bookkeeping file (a diff log, a JSON report, a summary).
- ``staged_path(path)``: for a library that can only write by path (``paddle.save``): it writes into a
  private folder, and the file is renamed into place when the block ends without an error.
- ``write_tree(files, out_dir, force)``: a set of files into a user's folder, all or none, a changed
  file only with force, its old content backed up (init, update, golden, report -o, accept --write-docs,
  schema -o).

The rules they share: the bytes go to a temporary file created exclusively (``O_CREAT | O_EXCL |
O_NOFOLLOW``, mode 0600 until complete) in the target's own folder and are renamed over the target, so
a symbolic link at the target is replaced, never followed; a reader sees the old file or the new one,
never half; and a folder on the way that is a symbolic link is refused when it lies inside the folder
the command owns (the current folder by default: a repository can commit ``output -> ~/.ssh``).
"""
from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from tipcgen.core.errors import RenderConflictError, TipcgenError, os_error

_TEMP_PREFIX = ".tipcgen-tmp-"
BACKUP_DIR = ".tipcgen/backup"  # under the folder written into (format/paths.py's BACKUP: it imports this one)


def write_file(path: str | Path, data: str | bytes, *, mode: int = 0o644, within: str | Path | None = None) -> Path:
    """Write ``data`` (text is UTF-8) to ``path``: a fresh temporary file in its folder, renamed into place.

    A symbolic link at ``path`` is replaced by the file (the link's target is untouched). A missing
    folder is created; a folder on the way that is a symbolic link inside ``within`` (default: the
    current folder, when ``path`` lies in it) is refused. Errors are ``TipcgenError`` naming the path."""
    target = _checked_target(Path(path), within)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        fd, temp = _exclusive_temp(target.parent, target.name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            os.chmod(temp, mode)
            os.replace(temp, target)
        except BaseException:
            _remove(temp)
            raise
    except OSError as exc:
        raise _write_error(target, exc) from None
    return target


@contextlib.contextmanager
def staged_path(path: str | Path, *, within: str | Path | None = None) -> Iterator[Path]:
    """A path for a library that writes by name (``paddle.save(obj, str(temp))``): inside a private
    folder (mode 0700, created exclusively next to ``path``), so no link can be planted there; when the
    block ends without an error the file is renamed over ``path`` (a link there is replaced), otherwise
    it is removed and ``path`` is untouched."""
    target = _checked_target(Path(path), within)
    try:
        folder = Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=target.parent))
    except OSError as exc:
        raise _write_error(target, exc) from None
    try:
        temp = folder / target.name
        yield temp
        if temp.is_symlink() or not temp.is_file():
            raise TipcgenError(f"{target}: the library wrote no regular file", "report this as a tipcgen bug")
        try:
            os.replace(temp, target)
        except OSError as exc:
            raise _write_error(target, exc) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _checked_target(target: Path, within: str | Path | None) -> Path:
    """The target, after refusing a folder on the way that is a link (inside ``within``) or not a folder."""
    absolute = Path(os.path.abspath(target))
    if absolute.name in ("", ".", ".."):
        raise TipcgenError(f"{target}: not a file name", "name the file to write")
    root = Path(os.path.abspath(within if within is not None else os.getcwd()))
    try:
        inside = absolute.parent.relative_to(root).parts
    except ValueError:
        inside = ()
    folder = root
    for part in inside:
        folder = folder / part
        if folder.is_symlink():
            raise TipcgenError(f"{target}: {folder} is a symbolic link; tipcgen does not write through links",
                               "replace the link with a real folder, or write elsewhere")
    if os.path.isdir(absolute) and not absolute.is_symlink():
        raise TipcgenError(f"{target} is a folder, but tipcgen writes a file there", "choose another path")
    if absolute.exists() and not absolute.is_symlink() and not absolute.is_file():
        raise TipcgenError(f"{target} is not a regular file (a pipe, device or socket), where tipcgen writes a file",
                           "choose another output path")
    try:
        absolute.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_error(target, exc) from None
    return absolute


def _exclusive_temp(folder: Path, name: str) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for number in itertools.count(1):
        temp = folder / f"{_TEMP_PREFIX}{os.getpid()}-{number}-{name[:80]}"
        try:
            return os.open(temp, flags, 0o600), temp
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _write_error(target: Path, exc: OSError) -> TipcgenError:
    if exc.filename is None:
        exc.filename = str(target)
    return os_error(exc, "cannot write")


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
        linked = next((folder for folder in reversed(target.parents) if folder.is_symlink()
                       and out_dir in folder.parents), None)
        if linked is not None:
            raise TipcgenError(f"{linked} is a symbolic link; tipcgen does not write through links ({rel})",
                               "replace the link with a real folder, or write elsewhere")
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
    root = out_dir / BACKUP_DIR
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
