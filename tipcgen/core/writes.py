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

Links, for every command (``check_no_links``): a command owns a root (the repository root; a folder the
user named outside it) and every component of every path it writes or deletes under, from that root
down, is checked with ``lstat``; a link there (to a folder outside or inside, to a file, dangling, a chain
of links) is refused with one message naming it and where it points, before anything is written or run.
``make_dirs`` creates folders one component at a time relative to the folder above (``O_NOFOLLOW``), so a
link planted after the check is refused too; ``remove_tree`` deletes a tree without following a link in
it (``shutil.rmtree``'s descriptor-based walk unlinks a link, never its target's contents).
"""
from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Callable, Iterator

from tipcgen.core.errors import LinkRefused, RenderConflictError, TipcgenError, os_error
from tipcgen.core.text import terminal

_TEMP_PREFIX = ".tipcgen-tmp-"
BACKUP_DIR = ".tipcgen/backup"  # under the folder written into (format/paths.py's BACKUP: it imports this one)


def owned_root(path: str | Path, repo: str | Path | None = None) -> Path:
    """The root a write under ``path`` is checked from: the repository ``repo`` (default: the current folder)
    when ``path`` lies in it, else ``path`` itself (a folder the user named outside it is theirs)."""
    absolute = Path(os.path.abspath(path))
    top = Path(os.path.abspath(repo if repo is not None else os.getcwd()))
    return top if absolute == top or top in absolute.parents else absolute


def check_no_links(root: str | Path, path: str | Path, what: str = "", inside: bool = False) -> Path:
    """Refuse a symbolic link at ``path`` or at any folder between ``root`` (not itself: the user's choice)
    and it, each component read with ``lstat``; a component that does not exist yet ends the walk (tipcgen
    creates the rest: ``make_dirs``). A path outside ``root`` is checked from nowhere (it is the user's).
    ``what`` says what tipcgen writes there (the message names it); ``inside``: a path that leaves the root
    (a model name ``../x``) is refused too. Returns the absolute path."""
    top = Path(os.path.abspath(root))
    absolute = Path(os.path.abspath(path))
    if inside and absolute != top and top not in absolute.parents:
        raise TipcgenError(f"{terminal(path)} leads out of {terminal(top)}, where tipcgen writes {what or 'its files'}",
                           "name a path inside it (a model name has no '/' or '..')")
    raw = Path(os.getcwd(), path).parts  # not normalised: in output/../x, output is walked through
    if raw[:len(top.parts)] != top.parts:
        return absolute  # outside the root: the user's
    current = top
    for part in raw[len(top.parts):]:
        if part == "..":  # the folder above a real folder (checked below) is the lexical parent
            if current == top:
                break  # it leaves the root: the rest is the user's
            current = current.parent
            continue
        current = current / part
        try:
            info = os.lstat(current)
        except OSError:
            break  # missing (created later, by make_dirs), or a file on the way (the writer says so)
        if stat.S_ISLNK(info.st_mode):
            raise link_refused(current, top, what)
        if not stat.S_ISDIR(info.st_mode):
            break
    return absolute


def link_refused(link: Path, root: Path, what: str = "") -> LinkRefused:
    """The one message for a link where tipcgen writes: the link, where it points, how to fix it."""
    try:
        points = os.readlink(link)
    except OSError:
        points = "?"
    leads = "" if os.path.exists(link) else ", which leads nowhere"
    way = f" on the way to {terminal(what)}" if what else ""
    return LinkRefused(f"{terminal(link)} is a symbolic link to {terminal(points)}{leads}{way}: tipcgen writes and "
                       f"deletes through no link from {terminal(root)} down, and wrote nothing",
                       f"remove the link (rm {terminal(link)}; tipcgen creates a real folder there), or choose "
                       "another folder")


def make_dirs(root: str | Path, path: str | Path, what: str = "") -> Path:
    """Create the folder ``path`` and those above it down from ``root``, refusing a link on the way: each
    component is created and opened relative to the folder above with ``O_NOFOLLOW``, so a link put there
    after a check is refused too, never followed. Returns the absolute path."""
    os.close(_folder_fd(root, path, what))
    return Path(os.path.abspath(path))


def _folder_fd(root: str | Path, path: str | Path, what: str = "") -> int:
    """make_dirs's walk; the descriptor of the folder it reached (the caller closes it)."""
    top = Path(os.path.abspath(root))
    absolute = check_no_links(top, path, what)
    try:
        parts = absolute.relative_to(top).parts
    except ValueError:  # a folder the user named outside the root: theirs, from itself down
        top, parts = absolute, ()
    try:
        top.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(top, flags)  # the root itself may be a link: the user's choice
        flags |= getattr(os, "O_NOFOLLOW", 0)
        try:
            current = top
            for part in parts:
                current = current / part
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                try:
                    below = os.open(part, flags, dir_fd=fd)
                except OSError:
                    if os.path.islink(current):
                        raise link_refused(current, top, what) from None
                    raise
                os.close(fd)
                fd = below
        except BaseException:
            os.close(fd)
            raise
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(absolute)
        raise os_error(exc, "cannot create the folder") from None
    return fd


def remove_tree(root: str | Path, path: str | Path, what: str = "") -> None:
    """Delete the folder ``path`` (nothing when it is missing), after refusing a link at it or on the way
    from ``root``; a link inside the tree is removed, its target untouched (shutil.rmtree's walk by
    descriptors, ``rmtree.avoids_symlink_attacks``)."""
    absolute = check_no_links(root, path, what)
    if not os.path.lexists(absolute):
        return
    if not os.path.isdir(absolute) or os.path.islink(absolute):
        raise link_refused(absolute, Path(os.path.abspath(root)), what) if os.path.islink(absolute) else \
            TipcgenError(f"{terminal(absolute)} is a file, where tipcgen keeps a folder{f' ({what})' if what else ''}",
                         "move it away and run again")
    try:
        shutil.rmtree(absolute)
    except OSError as exc:
        raise os_error(exc, "cannot remove") from None


def move_aside(root: str | Path, path: str | Path, aside: str | Path, drop: Callable[[Path], bool],
               what: str = "") -> bool:
    """Move the folder ``path`` to ``aside`` (an older ``aside`` removed first; a link or a file there refused,
    never followed), then empty it of what it must not keep: every entry that is neither a regular file nor a
    folder (a link, itself; a FIFO, a socket) and every regular file ``drop`` names. One rename on one file
    system: ``path`` is whole until it is gone. False (nothing done) when ``path`` does not exist or is an empty
    folder (nothing to keep: the folder kept aside stays)."""
    absolute = check_no_links(root, path, what)
    if not os.path.lexists(absolute) or (os.path.isdir(absolute) and not os.listdir(absolute)):
        return False
    remove_tree(root, aside, what)
    target = check_no_links(root, aside, what)
    try:
        os.rename(absolute, target)
    except OSError as exc:
        raise os_error(exc, "cannot move") from None
    for folder, dirs, files in os.walk(target, followlinks=False):
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = [d for d in dirs if d not in links]
        for name in [*files, *links]:
            entry = Path(folder, name)
            try:
                if os.path.islink(entry) or not stat.S_ISREG(os.lstat(entry).st_mode) or drop(entry):
                    entry.unlink()
            except OSError as exc:
                raise os_error(exc, "cannot remove") from None
    return True


def remove_file(root: str | Path, path: str | Path, what: str = "") -> None:
    """Delete one file or link (a link itself, never its target; nothing when it is missing), after refusing
    a link on the way from ``root``."""
    absolute = Path(os.path.abspath(path))
    check_no_links(root, absolute.parent, what or absolute.name)
    if os.path.isdir(absolute) and not os.path.islink(absolute):
        raise TipcgenError(f"{terminal(absolute)} is a folder, where tipcgen removes a file", "move it away and run again")
    try:
        absolute.unlink(missing_ok=True)
    except OSError as exc:
        raise os_error(exc, "cannot remove") from None


def write_file(path: str | Path, data: str | bytes, *, mode: int = 0o644, within: str | Path | None = None) -> Path:
    """Write ``data`` (text is UTF-8) to ``path``: a fresh temporary file in its folder, renamed into place.

    A symbolic link at ``path`` is replaced by the file (the link's target is untouched). A missing
    folder is created; a folder on the way that is a symbolic link inside ``within`` (default: the
    current folder, when ``path`` lies in it) is refused. Errors are ``TipcgenError`` naming the path."""
    target = _checked_target(Path(path), within)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    root = Path(os.path.abspath(within)) if within is not None else owned_root(target.parent)
    folder = _folder_fd(root, target.parent, target.name)  # the temporary and the rename: in this folder, by descriptor
    try:
        fd, temp = _exclusive_temp(folder, target.name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                os.fchmod(handle.fileno(), mode)
            os.replace(temp, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
    except OSError as exc:
        raise _write_error(target, exc) from None
    finally:
        os.close(folder)
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
    root = Path(os.path.abspath(within)) if within is not None else owned_root(absolute.parent)
    check_no_links(root, absolute.parent, absolute.name)
    if os.path.isdir(absolute) and not absolute.is_symlink():
        raise TipcgenError(f"{target} is a folder, but tipcgen writes a file there", "choose another path")
    if absolute.exists() and not absolute.is_symlink() and not absolute.is_file():
        raise TipcgenError(f"{target} is not a regular file (a pipe, device or socket), where tipcgen writes a file",
                           "choose another output path")
    make_dirs(root, absolute.parent, absolute.name)
    return absolute


def _exclusive_temp(folder: int, name: str) -> tuple[int, str]:
    """A new temporary file in the folder open as ``folder`` (created exclusively, never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for number in itertools.count(1):
        temp = f"{_TEMP_PREFIX}{os.getpid()}-{number}-{name[:80]}"
        try:
            return os.open(temp, flags, 0o600, dir_fd=folder), temp
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _write_error(target: Path, exc: OSError) -> TipcgenError:
    if exc.filename is None:
        exc.filename = str(target)
    return os_error(exc, "cannot write")


@dataclass(frozen=True)
class Written:
    path: str
    action: str  # created | unchanged | overwritten | updated (tipcgen's own files) | removed


def write_tree(files: Mapping[str, str | bytes], out_dir: Path, force: bool = False, backup: bool = True,
               owned: frozenset[str] | set[str] = frozenset(), remove: tuple[str, ...] | list[str] = (),
               root: Path | None = None) -> list[Written]:
    """Write all files under out_dir, or none. A file that differs is only replaced with force,
    and then its old content is kept under .tipcgen/backup/<time>/ (unless backup is False).

    ``owned`` files are tipcgen's own bookkeeping (the answers file, the merge base): they are
    replaced without force and without a backup. ``remove`` names files to delete (backed up too).
    ``root``: the folder the command owns (the repository root, when out_dir lies in it: ``owned_root``;
    default: out_dir, a folder the user named): a link at any component from it down to each file, or to
    the backup folder, is refused before anything is written."""
    out_dir = Path(os.path.abspath(out_dir))
    top = Path(os.path.abspath(root)) if root is not None else out_dir
    check_no_links(top, out_dir)
    plan: list[tuple[str, Path, bytes, str]] = []
    conflicts = []
    for rel, content in sorted(files.items()):
        data = content.encode("utf-8") if isinstance(content, str) else content
        target = out_dir / rel
        check_no_links(top, target, rel)
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
        check_no_links(top, out_dir / rel, rel)
        if (out_dir / rel).is_file():
            plan.append((rel, out_dir / rel, b"", "removed"))
    if backup and any(action in ("overwritten", "removed") for *_, action in plan):
        check_no_links(top, out_dir / BACKUP_DIR, "the backups of replaced files")
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
            _commit(todo, out_dir, backup, top)
        except OSError as exc:
            raise TipcgenError(f"cannot write under {out_dir}: {exc.strerror or exc} ({exc.filename or out_dir}); nothing was written",
                               "choose an output folder you can write to") from None
    return [Written(rel, action) for rel, _, _, action in plan]


def _commit(todo: list[tuple[str, Path, bytes, str]], out_dir: Path, keep_backup: bool, top: Path) -> None:
    """Stage every file, then move each into place; on any failure put back what was there."""
    make_dirs(top, out_dir)
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
                    backup = claim_backup_dir(out_dir, top)
                saved = (backup if action in ("overwritten", "removed") else undo) / rel
                saved.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(target, saved)
            if action == "removed":
                target.unlink()
            else:
                make_dirs(top, target.parent, rel)
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


def claim_backup_dir(out_dir: Path, top: Path | None = None) -> Path:
    """A new folder .tipcgen/backup/<time>[-N]/ that no other write (in this second, or by another
    process) has: created exclusively, so a backup never lands on an older one. A link on the way
    from ``top`` (default: out_dir) is refused."""
    root = make_dirs(top if top is not None else out_dir, out_dir / BACKUP_DIR, "the backups of replaced files")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for number in itertools.count(1):
        folder = root / (stamp if number == 1 else f"{stamp}-{number:02d}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise AssertionError("unreachable")
