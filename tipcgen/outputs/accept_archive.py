"""The lite_data archive's members, listed within a budget, and why it would not unpack safely.

Headers only, never extracted. A tar is read as a stream (one pass, no seeking back into a compressed
file) through two guards: the compressed bytes are read under a CPU-time budget (so a file of many tiny
concatenated gzip/bzip2/xz streams cannot keep it busy; CPU time, not wall time, so a loaded machine
does not end a listing an idle one finishes), the unpacked bytes under a size budget (a decompression
bomb ends at MAX_UNPACKED). Whether a file is a zip or a tar is decided by its content as
prepare.sh decides it (zip first); a file that is both is refused, so what is checked is what unpacks.
The member rules are prepare.sh's unpacker's (render/shipped/unpack_archive.py: what accept passes is
what unpacks); the member check is linear; member names are shown through core.text.terminal (no escape
reaches a terminal). For accept_repo's 2.2.1 item.
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import time
import zipfile
from pathlib import Path

from tipcgen.core.errors import ArchiveLimit
from tipcgen.core.text import terminal
from tipcgen.render.shipped.unpack_archive import Names, member_kind, parts_of, unsafe

MAX_UNPACKED = 512 << 20  # bytes of tar data read through the decompressor: lite data is a few samples
MAX_SECONDS = 5.0  # CPU seconds (time.process_time) reading one archive's headers
MAX_MEMBERS = 1_000_000
_SHOWN = 5


class _Guarded(io.RawIOBase):
    """A readable file that raises ArchiveLimit past a deadline, or past `limit` bytes (None: no limit)."""

    def __init__(self, inner, deadline: float, limit: int | None, what: str) -> None:
        self.inner, self.deadline, self.limit, self.what, self.count = inner, deadline, limit, what, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if time.process_time() > self.deadline:
            raise ArchiveLimit(f"listing its members took over {MAX_SECONDS:g} s of CPU time (many concatenated compressed "
                               "streams, or a decompression bomb)")
        data = self.inner.read(len(buffer))
        self.count += len(data)
        if self.limit is not None and self.count > self.limit:
            raise ArchiveLimit(f"{self.what} more than {self.limit >> 20} MiB (a decompression bomb, or not lite data)")
        buffer[:len(data)] = data
        return len(data)


def _tar_stream(raw, deadline: float):
    """The uncompressed tar bytes of an open file, whatever the compression tar would accept."""
    head = raw.read(6)
    raw.seek(0)
    guarded = io.BufferedReader(_Guarded(raw, deadline, None, "compressed"), 1 << 16)
    if head.startswith(b"\x1f\x8b"):
        inner = gzip.GzipFile(fileobj=guarded, mode="rb")
    elif head.startswith(b"BZh"):
        inner = bz2.BZ2File(guarded)
    elif head.startswith(b"\xfd7zXZ\x00"):
        inner = lzma.LZMAFile(guarded)
    else:
        inner = guarded
    return io.BufferedReader(_Guarded(inner, deadline, MAX_UNPACKED, "unpacks to"), 1 << 16)


def _tar_members(path: Path, deadline: float, first_only: bool = False) -> list[tuple[str, str]]:
    out = []
    with open(path, "rb") as raw, tarfile.open(fileobj=_tar_stream(raw, deadline), mode="r|") as archive:
        for member in archive:
            out.append((member.name, member_kind(member)))
            archive.members = []  # a stream keeps every TarInfo otherwise: counted here instead
            if first_only or len(out) > MAX_MEMBERS:
                break
    return out


def _is_tar(path: Path, deadline: float) -> bool:
    try:
        return bool(_tar_members(path, deadline, first_only=True))
    except (OSError, EOFError, tarfile.TarError, ArchiveLimit, lzma.LZMAError, zipfile.BadZipFile):
        return False


def archive_members(path: Path) -> list[tuple[str, str]]:
    """(name, kind) of every member, kind file | dir | link | sparse | other. ArchiveLimit for a file
    that is both a zip and a tar, too many members, or past the time or size budget; OSError,
    tarfile.TarError, zipfile.BadZipFile, EOFError or lzma.LZMAError for one that is not an archive."""
    deadline = time.process_time() + MAX_SECONDS
    if zipfile.is_zipfile(path):
        if _is_tar(path, deadline):
            raise ArchiveLimit("it is both a zip and a tar (a file that unpacks differently by tool): "
                               "rebuild it as one of them")
        with open(path, "rb") as handle:  # the central directory's count, before zipfile reads every entry
            end = zipfile._EndRecData(handle)  # noqa: SLF001 - the standard library's own end-record reader
        if end and end[zipfile._ECD_ENTRIES_TOTAL] > MAX_MEMBERS:
            raise ArchiveLimit(f"it has {end[zipfile._ECD_ENTRIES_TOTAL]} members (at most {MAX_MEMBERS})")
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                raise ArchiveLimit(f"it has {len(infos)} members (at most {MAX_MEMBERS})")
            return [(info.filename, member_kind(info)) for info in infos]
    out = _tar_members(path, deadline)
    if len(out) > MAX_MEMBERS:
        raise ArchiveLimit(f"it has more than {MAX_MEMBERS} members")
    return out


def _shown(names: list[str]) -> str:
    return ", ".join(terminal(name) for name in names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more"
                                                                   if len(names) > _SHOWN else "")


def archive_problems(members: list[tuple[str, str]]) -> list[str]:
    """Why an archive would not unpack to lite_data/ safely: unsafe members (absolute, '..', link, device,
    sparse), a member under a name that is also a file (file then folder), by prepare.sh's own unpacker's
    rules (render/shipped/unpack_archive.py); and accept's: members outside lite_data/, no files. One pass
    over the members (sets, never a list search)."""
    bad, outside, clash, files, tops = [], [], [], 0, set()
    names = Names()
    for name, kind in members:
        parts = parts_of(name)
        if unsafe(name, kind):
            bad.append(name)
            continue
        if not parts or parts[0] != "lite_data":
            outside.append(name)
            if parts:  # what `tar -xf` puts at the top: a folder (or a loose file)
                tops.add(parts[0] + ("/" if len(parts) > 1 or kind == "dir" else ""))
            continue
        if names.clashes(parts, kind):
            clash.append(name)
        files += kind == "file"
    problems = []
    if bad:
        problems.append(f"unsafe member(s) (absolute, '..', link, device, sparse, or a file named as a folder): {_shown(bad)}")
    if clash:
        problems.append(f"member(s) under a name that is also a file (a file, then a folder of that name): "
                        f"{_shown(clash)}")
    if outside:
        shown = sorted(tops)
        listed = f"{', '.join(terminal(top) for top in shown[:3])}{', ...' if len(shown) > 3 else ''}"
        unpacks = "" if not shown else f"it also unpacks {listed} beside lite_data/; " \
            if len(members) > len(bad) + len(outside) \
            else f"it unpacks to {listed} instead of lite_data/; "
        problems.append(f"{unpacks}member(s) outside lite_data/: {_shown(outside)}")
    if not files:
        problems.append("no file under lite_data/")
    return problems
