"""Reading the files a user names (configs, descriptors, answers files) without trusting them.

A path is opened without blocking and checked to be a regular file before any byte is read (a FIFO
or ``/dev/urandom`` is refused, never waited on), at most ``MAX_BYTES`` are read, and the text must be
strict UTF-8 without NUL bytes. Every refusal is an ``InputError`` naming the file and the fix; none
quotes the file's contents. A file found inside a folder the user named is read only through ``within``:
no link on the way to it may lead outside that folder, or nowhere.
"""
from __future__ import annotations

import ast
import codecs
import os
import stat
import threading
from pathlib import Path
from typing import BinaryIO, Iterator

from tipcgen.core.errors import InputError, TipcgenError, os_error

MAX_BYTES = 16 << 20  # a 51-line config is 2 KB and the corpus's largest file 40 KB
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
              (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


LOG_BYTES = 256 << 20  # a step's log, read line by line: more than a whole-data training prints
LINE_BYTES = 64 << 10  # a longer line of a log is cut here: no rule reads further into one line
TAIL_BYTES = 64 << 10


def _open_regular(path: str | Path, what: str, folder: str | Path | None = None) -> tuple[int, os.stat_result]:
    """An fd of ``path`` opened without blocking (a FIFO never waits for a writer), checked to be a regular
    file (never a FIFO, device or socket), and, with ``folder``, reached through no link that leads out of it
    (``within``); the fd is blocking again. InputError otherwise."""
    if folder is not None:
        within(path, folder)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise os_error(exc, f"cannot read the {what}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{path}: is a folder, not a {what}", f"give the {what} itself")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path}: is not a regular file (a pipe, device or socket), so it is not read as a {what}",
                             f"save the {what} to a file and pass that")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_bytes(path: str | Path, what: str = "file", limit: int = MAX_BYTES, head: bool = False,
               folder: str | Path | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; anything else is an ``InputError``. ``head``:
    the first ``limit`` bytes of a file of any size (a program's magic number). ``folder``: the file must lie
    in it, through no link out (``within``)."""
    fd, info = _open_regular(path, what, folder)
    try:
        if info.st_size > limit and not head:
            raise InputError(f"{path}: is {info.st_size} bytes; a {what} is at most {limit} bytes",
                             f"check that this is the {what} you meant")
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read(limit if head else limit + 1)
    except OSError as exc:
        raise os_error(exc, f"cannot read the {what}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise InputError(f"{path}: is more than {limit} bytes; a {what} is at most that",
                         f"check that this is the {what} you meant")
    return data


def open_binary(path: str | Path, what: str = "file", folder: str | Path | None = None) -> BinaryIO:
    """A regular file opened for reading (see ``_open_regular``): the caller bounds what it reads."""
    fd, _ = _open_regular(path, what, folder)
    return os.fdopen(fd, "rb", closefd=True)


def tail(path: str | Path, what: str = "log", limit: int = TAIL_BYTES, folder: str | Path | None = None) -> bytes:
    """The last ``limit`` bytes of a regular file of any size (see ``_open_regular``)."""
    with open_binary(path, what, folder) as handle:
        try:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read(limit)
        except OSError as exc:
            raise os_error(exc, f"cannot read the {what}") from None


def lines(path: str | Path, what: str = "log", folder: str | Path | None = None, limit: int = LOG_BYTES,
          line_limit: int = LINE_BYTES) -> Iterator[str]:
    """The lines of a regular file (see ``_open_regular``), decoded (bad bytes replaced), without their ends:
    at most ``limit`` bytes are read (a larger file's head), and a line longer than ``line_limit`` is cut
    there (a 1 GiB line costs a 64 KiB string, never 1 GiB). Opening fails with an InputError at once."""
    handle = open_binary(path, what, folder)
    return _lines(handle, limit, line_limit)


def _lines(handle: BinaryIO, limit: int, line_limit: int) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with handle:
        kept, skipping, left = bytearray(), False, limit
        while left > 0:
            chunk = handle.read(min(1 << 20, left))
            if not chunk:
                break
            left -= len(chunk)
            start = 0
            while True:
                cut = chunk.find(b"\n", start)
                piece = chunk[start:] if cut < 0 else chunk[start:cut]
                if not skipping:
                    kept += piece[:line_limit - len(kept)]
                    skipping = len(kept) >= line_limit
                if cut < 0:
                    break
                yield decoder.decode(bytes(kept), final=True).rstrip("\r")
                kept.clear()
                skipping, start = False, cut + 1
        if kept:
            yield decoder.decode(bytes(kept), final=True).rstrip("\r")


def program_head(path: str | Path) -> bytes:
    """The first bytes of a file to be run as a program (its ``#!`` line, or ELF's magic number ``\\x7fELF``);
    b"" where it is not a regular file that can be read."""
    try:
        return read_bytes(path, "program", limit=256, head=True)
    except TipcgenError:  # os_error's, or InputError's (a folder, a pipe)
        return b""


def read_tail(path: str | Path, limit: int = 4096, start: int | None = None) -> tuple[bytes, int]:
    """For a display that follows a file another process writes (a step's log): at most ``limit`` bytes of it,
    its last ones (``start`` None) or those from byte ``start`` on, and the file's size when read. Never waits and
    never follows a link (``O_NONBLOCK``, ``O_NOFOLLOW``); a file that is not a regular one, or cannot be read,
    is ``(b"", 0)``: what is shown is a courtesy, never a failure of the command."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return b"", 0
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b"", 0
        size = info.st_size
        offset = max(0, size - limit) if start is None else min(max(0, start), size)
        return os.pread(fd, min(limit, size - offset), offset), size
    except OSError:
        return b"", 0
    finally:
        os.close(fd)


def decode(data: bytes, path: str | Path, what: str = "file") -> str:
    """Strict UTF-8 text (a UTF-8 byte-order mark is kept for the caller to judge)."""
    fix = f"save the {what} as UTF-8 text (most editors: File > Save with Encoding > UTF-8)"
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise InputError(f"{path}: is {name} text, not UTF-8", fix)
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"{path}: has a NUL byte at byte {nul} (line {_line_at(data, nul)}): "
                         f"a binary file, or UTF-16/32 text, is not a {what}", fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: is not UTF-8 text (byte {exc.start}, line {_line_at(data, exc.start)}: "
                         f"{exc.reason})", fix) from None


def pickled(path: str | Path) -> bool:
    """A regular file whose first byte is pickle's PROTO opcode (paddle.save writes protocol 2 to 4; a checkpoint
    whatever its name), read with no FIFO, device or link followed. repro/record.py counts such a file among a
    training's weights, and a rerun's previous folder keeps none (format/paths.py, PREVIOUS)."""
    try:
        return read_bytes(path, "checkpoint", 1, head=True) == b"\x80"
    except (TipcgenError, OSError):
        return False


def read_text(path: str | Path, what: str = "file", limit: int = MAX_BYTES) -> str:
    """A user's text file, read safely: see the module docstring."""
    return decode(read_bytes(path, what, limit), path, what)


def within(path: str | Path, folder: str | Path) -> Path:
    """``path``, a path below ``folder``, when every link on the way down to it (itself included, at any depth,
    chains followed to their end) leads to something that exists inside ``folder`` and ``path`` resolves
    inside ``folder`` (it need not exist); otherwise an ``InputError`` naming the link. ``folder`` may be a
    link itself: it is what the user named. The one check for a file found below a folder the user gave."""
    path, folder = Path(path), Path(folder)
    try:
        top = folder.resolve()
        parts = path.relative_to(folder).parts if path.is_relative_to(folder) else ()
        current = folder
        for part in parts:
            current = current / part
            if current.is_symlink():
                _linked_inside(current, current.resolve(), top, folder)
        real = path.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop: RuntimeError before Python 3.13, OSError (ELOOP) after
        raise InputError(f"{path}: goes through a link that cannot be followed ({getattr(exc, 'strerror', None) or exc})",
                         "fix or remove the link") from None
    if not real.is_relative_to(top):
        raise InputError(f"{path}: leads to {real}, outside {folder}, so it is not read",
                         f"name something inside {folder}")
    return path


def _linked_inside(link: Path, real: Path, top: Path, folder: Path) -> None:
    if not real.is_relative_to(top):
        raise InputError(f"{link}: is a link to {real}, outside {folder}, so it is not read",
                         f"copy what it points to into {folder}, or remove the link")
    if not real.exists():
        raise InputError(f"{link}: is a link to {real}, which does not exist", "fix the link, or remove it")


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


MAX_DIGITS = 9  # a line index, a count, a seed read from a file: ten digits are already a mistake


def whole_number(text: str, most: int = 10**MAX_DIGITS - 1) -> int | None:
    """``text`` as a whole number >= 0 when it is ASCII digits only (``str.isdigit`` and ``int`` also take
    full-width and other scripts' digits, which bash does not) and at most ``most``; else ``None``.
    Digits are counted before ``int`` runs, so a 5,000-digit string costs nothing and raises nothing."""
    if not text or len(text) > len(str(most)) or not text.isascii() or not text.isdigit():
        return None
    number = int(text)
    return number if number <= most else None


_PARSING = threading.Lock()


def python_tree(source: str | bytes) -> ast.Module | None:
    """A user's Python source as a syntax tree, never run; None where it does not parse (a syntax error, a
    nesting too deep, NUL bytes). One parse at a time: CPython 3.11's parser is not safe in threads (a
    concurrent ``ast.parse`` can raise ``SystemError: AST constructor recursion depth mismatch``), and the
    flag check reads scripts from a thread pool."""
    with _PARSING:
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
            return None
