"""The one way tipcgen reads a pickle-based file (.npy/.npz, .pt/.pth/.bin, .pdparams, .safetensors).

Shared by `align` (reprod_files), `align convert` and `align trace` (checkpoint_io): a checkpoint comes
from anyone's script, so reading it must never run code, never follow a declared size before checking
it, and never hold more than a stated memory budget. The pieces:

- the file is read through ``tipcgen.core.inputs`` (a regular file, at most ``max_bytes``);
- ``check_opcodes``: every pickle is walked with pickletools before the C unpickler sees it: every
  counted length must lie inside the file, every memo index be one the file could have made, the
  opcode count stay under ``MAX_OPCODES``;
- ``Stand``: each allowed global is a stand-in made fresh for each load, callable and nothing else
  (a ``BUILD`` on it is refused), so no file can change what a later file loads into;
- ``Budget``: every array and storage is counted before it is allocated;
- ``zip_members``: a zip's member count, declared sizes and compression ratios are checked before
  any member is read (the count before zipfile parses them), and a member is read only up to its
  declared size.

**Memory budget.** With the limit ``max_bytes`` (default 1 GiB, ``--max-bytes``), reading one file
holds at most the file itself, the raw storages or members it declares (together at most
``max_bytes``) and the arrays built from them (together at most ``max_bytes``): under three times
``max_bytes`` beyond the interpreter. A file that asks for more is refused before the allocation.
"""
from __future__ import annotations

import io
import math
import pickletools
import re
import zipfile
from typing import Any

from tipcgen.core.text import terminal

DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB: the file, each array, all arrays together, a zip's members together
MAX_VALUES = 100_000  # keys, arrays, storages and zip members in one file
MAX_DEPTH = 32  # nesting of dicts
MAX_NDIM = 32
MAX_OPCODES = 2_000_000  # about 20 per array: room for far more arrays than MAX_VALUES
MAX_KEY = 1024  # characters in one key
MAX_RATIO = 1100  # deflate cannot compress better than about 1032:1; a member declaring more lies
MAX_MEMBERS = 20_000  # zip members: a checkpoint has one per storage (BERT-large: about 400)
_CENTRAL_ENTRY = b"PK\x01\x02"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class Refused(ValueError):
    """The file asks for something a dict of arrays never needs, or more than the limits allow."""


def limit_text(max_bytes: int) -> str:
    return f"{max_bytes / (1 << 20):g} MiB"


def plain(text: Any) -> str:
    """A name from the file, printable and short (never its raw bytes on the terminal)."""
    text = terminal(str(text)[:200])
    return text if len(text) <= 60 else text[:60] + "..."


def brief(value: Any) -> str:
    """A value from the file in a message: its repr, cut (a deep or huge value is never repr'd whole)."""
    plain_items = isinstance(value, (tuple, list)) and len(value) <= 8 and all(type(v) is int for v in value)
    try:
        text = repr(value) if plain_items or isinstance(value, (int, float, str, bytes, type(None))) else type(value).__name__
    except (ValueError, RecursionError):  # an int of more digits than Python prints
        text = type(value).__name__
    return plain(text[:200])


def short(exc: BaseException) -> str:
    """An exception's message, escaped and cut: it may quote bytes of the file (numpy quotes a bad header)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001  # a message that cannot even be made
        text = ""
    return terminal(text[:200]) + ("..." if len(text) > 200 else "")


def check_key(key: str) -> None:
    """A key is printed in a log and on the terminal: a short name without control characters."""
    if len(key) > MAX_KEY or _CONTROL.search(key):
        raise Refused(f"a key over {MAX_KEY} characters or with a control character: keys are names")


def check_opcodes(handle: io.BytesIO, size: int) -> None:
    """Walk one pickle (up to its STOP) before the C unpickler does: it allocates a declared length (or a
    memo table that large) before it reads, so every counted length and memo index must fit the file."""
    ops = 0
    try:
        for op, arg, pos in pickletools.genops(handle):  # raises ValueError where a length runs past the end
            ops += 1
            if op.name == "FRAME" and arg > size - pos:
                raise Refused(f"a pickle frame of {arg} bytes in a file of {size}")
            if op.name.endswith(("PUT", "GET")) and isinstance(arg, int) and arg > ops:
                raise Refused(f"memo index {arg} at opcode {ops}")
            if ops > MAX_OPCODES:
                raise Refused(f"more than {MAX_OPCODES} pickle opcodes")
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, Refused):
            raise
        raise Refused(f"not a well-formed pickle ({short(exc)})") from None


class Stand:
    """The stand-in for one allowed global: it can be called and nothing else (no state, no attributes).
    Made fresh for each load, so nothing a file does to it reaches another file."""

    __slots__ = ("call",)

    def __init__(self, call: Any) -> None:
        self.call = call

    def __call__(self, *args: Any) -> Any:
        return self.call(*args)

    def __setstate__(self, state: Any) -> None:
        raise Refused("a pickle that sets state on an allowed global")

    def __reduce__(self) -> Any:
        raise Refused("a stand-in is never pickled")


class Budget:
    """Bytes a file may make tipcgen allocate: each array and all together at most ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.total = 0
        self.values = 0

    def take(self, nbytes: int, what: str = "an array") -> None:
        if nbytes > self.max_bytes:
            raise Refused(f"{what} needs {nbytes} bytes, over the limit of {limit_text(self.max_bytes)} "
                          "(raise it with --max-bytes if that is expected)")
        self.total += nbytes
        if self.total > self.max_bytes:
            raise Refused(f"its arrays add up to more than {limit_text(self.max_bytes)} "
                          "(raise the limit with --max-bytes if that is expected)")

    def count(self) -> None:
        self.values += 1
        if self.values > MAX_VALUES:
            raise Refused(f"more than {MAX_VALUES} values")


def shape_of(shape: Any) -> tuple[int, ...]:
    """A declared shape: a tuple (or list) of at most MAX_NDIM sizes >= 0."""
    if not isinstance(shape, (tuple, list)) or len(shape) > MAX_NDIM or not all(type(n) is int and n >= 0 for n in shape):
        raise Refused(f"an array shape {brief(shape)} is not a tuple of at most {MAX_NDIM} sizes")
    return tuple(shape)


def declared_bytes(shape: Any, itemsize: int, max_bytes: int) -> int:
    """The bytes an array of ``shape`` needs, refused over ``max_bytes`` before anything is allocated."""
    nbytes = math.prod(shape_of(shape)) * itemsize
    if nbytes > max_bytes:
        raise Refused(f"an array of shape {brief(tuple(shape))} needs {nbytes} bytes, over the limit of "
                      f"{limit_text(max_bytes)} (raise it with --max-bytes if that is expected)")
    return nbytes


def open_zip(data: bytes) -> zipfile.ZipFile:
    """A zip read from memory, once it is clear that its central directory cannot hold more than
    MAX_MEMBERS entries: zipfile builds an object (about 500 bytes) for every entry before anyone can
    count them, so a 1 GiB file of 46-byte entries would take gigabytes. Every entry starts with a
    signature, so the number of signatures in the file bounds the number of entries."""
    entries = data.count(_CENTRAL_ENTRY)
    if entries > MAX_MEMBERS:
        raise Refused(f"up to {entries} zip members, more than {MAX_MEMBERS}")
    return zipfile.ZipFile(io.BytesIO(data))


def zip_members(archive: zipfile.ZipFile, max_bytes: int) -> list[zipfile.ZipInfo]:
    """The members, once their count, names, declared sizes (together) and compression ratios are checked."""
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise Refused(f"{len(members)} members, more than {MAX_MEMBERS}")
    total = sum(m.file_size for m in members)
    if total > max_bytes:
        raise Refused(f"its members expand to {total} bytes, over the limit of {limit_text(max_bytes)} "
                      "(raise it with --max-bytes if that is expected)")
    for member in members:
        check_key(member.filename)
        if member.file_size > MAX_RATIO * max(member.compress_size, 1) + 1024:
            raise Refused(f"member {plain(member.filename)} declares {member.file_size} bytes from "
                          f"{member.compress_size} compressed (a zip bomb)")
    return members


def read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> bytes:
    """A member's bytes, never more than it declares (zipfile stops there; a shorter one fails its CRC)."""
    with archive.open(member) as handle:
        data = handle.read(member.file_size + 1)
    if len(data) != member.file_size:
        raise Refused(f"member {plain(member.filename)} holds {len(data)} bytes, not the {member.file_size} it declares")
    return data
