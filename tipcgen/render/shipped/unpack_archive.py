"""Unpack a lite data archive (a tar or a zip) into one folder, refusing any member that could land elsewhere.

    python -I test_tipc/unpack_archive.py ARCHIVE DEST

prepare.sh runs it for each lite data file that is an archive (`-I`: no module of the current folder is
imported). An archive of one top folder gives DEST that folder's content. Refused before anything is unpacked:
a member with an absolute name, a `..` or a drive; a link, device, sparse or other special member; a member
under a name that is also a file (a file, then a folder of that name); a file that is both a zip and a tar (it
would unpack differently by tool). The member rules (`member_kind`, `unsafe`, `Names`) are also the ones
`tipcgen accept` applies when it checks the archive without unpacking it (outputs/accept_archive.py imports
them), so what accept passes is what prepare.sh unpacks. Standard library only; imports nothing from tipcgen.
"""
import os
import shutil
import stat
import sys
import tarfile
import zipfile

KINDS = ("file", "dir", "link", "sparse", "other")  # what member_kind says a member is


def member_kind(member) -> str:
    """A tar or zip member as one of KINDS."""
    if isinstance(member, zipfile.ZipInfo):
        mode = member.external_attr >> 16
        if stat.S_ISLNK(mode):
            return "link"
        if member.is_dir():
            return "dir"
        return "file" if stat.S_IFMT(mode) in (0, stat.S_IFREG) else "other"
    if member.issparse():
        return "sparse"  # GNU sparse: its holes are not what the file holds
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    return "link" if member.issym() or member.islnk() else "other"


def parts_of(name: str) -> list:
    """A member's path, one name a part ('' and '.' left out; a backslash separates too)."""
    return [part for part in name.replace("\\", "/").split("/") if part not in ("", ".")]


def unsafe(name: str, kind: str):
    """Why a member must not be unpacked at all (it could land outside the folder, or is not plain data);
    None when it may be."""
    parts = parts_of(name)
    if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
        return "would land outside the data folder"
    if kind not in ("file", "dir"):
        return "is a link, sparse or special file"
    if kind == "file" and (not parts or name.replace("\\", "/").rsplit("/", 1)[-1] in ("", ".")):
        return "is a file named as a folder"  # `x/` or `x/.`: it cannot be written where its name says
    return None


class Names:
    """The paths of the members seen so far: a member clashes when it lies under a name that is a file, or
    is a file where a folder is (or a folder where a file is)."""

    def __init__(self) -> None:
        self.files, self.dirs = set(), set()

    def clashes(self, parts: list, kind: str) -> bool:
        """Whether the member clashes with one seen before; it is counted either way."""
        path = "/".join(parts)
        above = ["/".join(parts[:i]) for i in range(1, len(parts))]
        clash = any(p in self.files for p in above) or path in (self.files if kind == "dir" else self.dirs)
        self.dirs.update(above)
        (self.dirs if kind == "dir" else self.files).add(path)
        return clash


class Refused(Exception):
    """An archive that is not unpacked, and why."""


def _is_tar(archive: str) -> bool:
    try:
        with tarfile.open(archive) as tar:
            return tar.next() is not None
    except (OSError, EOFError, tarfile.TarError):
        return False


def _checked(members, name_of) -> None:
    names = Names()
    for member in members:
        name, kind = name_of(member), member_kind(member)
        problem = unsafe(name, kind)
        if problem is None and names.clashes(parts_of(name), kind):
            problem = "lies under, or is, a name that is also a file"
        if problem is not None:
            raise Refused(f"member {name!r} {problem}")


def unpack(archive: str, dest: str) -> None:
    """ARCHIVE into the folder DEST, through DEST.unpacking (removed when refused): all of it or nothing."""
    into = dest + ".unpacking"
    shutil.rmtree(into, ignore_errors=True)
    os.makedirs(into)
    try:
        if zipfile.is_zipfile(archive):
            if _is_tar(archive):
                raise Refused("it is both a zip and a tar (it would unpack differently by tool): "
                              "rebuild it as one of them")
            with zipfile.ZipFile(archive) as zipped:
                _checked(zipped.infolist(), lambda info: info.filename)
                zipped.extractall(into)
        else:
            with tarfile.open(archive) as tar:
                members = tar.getmembers()
                _checked(members, lambda member: member.name)
                tar.extractall(into, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    except Refused:
        shutil.rmtree(into, ignore_errors=True)
        raise
    top = os.listdir(into)
    if len(top) == 1 and os.path.isdir(os.path.join(into, top[0])):
        os.rename(os.path.join(into, top[0]), dest)
        os.rmdir(into)
    else:
        os.rename(into, dest)


def main(argv: list) -> int:
    archive, dest = argv
    try:
        unpack(archive, dest)
    except Refused as exc:
        print(f"{archive}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
