"""An exported model's parameters (``<prefix>.pdiparams`` beside a PIR ``<prefix>.json`` or an old-IR
``<prefix>.pdmodel``) read with numpy, without importing paddle (issue #39: the export check then costs no
interpreter start).

``paddle.jit.save`` (3.x) writes the parameters as Paddle's combined-params file: one serialized LoDTensor
after another, each

    uint32 version (0) | uint64 lod levels, per level: uint64 byte size + that many bytes of offsets
    | uint32 tensor version (0) | int32 desc size | a protobuf ``VarType.TensorDesc`` of that size
    (field 1: data_type enum, field 2: repeated int64 dims, packed or not) | the raw data, little-endian

in the order of the parameters' names, sorted; the names are the ``.json`` program's parameter ops
(``"#": "p"``, the name last in ``"A"``), or, in an old-IR export, the ``.pdmodel`` program's persistable
variables (a protobuf ``ProgramDesc``, read field by field within its bounds), whose declared shapes must
match the file's tensors one by one. Anything else (a truncated file, dims whose data lies beyond the file, a
desc size beyond the file, a negative size, an unknown data type, bytes left over, a program that does not
parse or does not name the tensors) is refused with one ``ExportFormatError``: the caller then reads
the file with paddle in the chain's interpreter instead. Memory is bounded by the file's size: every
size is checked against the bytes that are left before anything is allocated.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from tipcgen.core.errors import ExportFormatError, TipcgenError
from tipcgen.core.inputs import read_bytes

MAX_DIMS = 64  # a TensorDesc with more dims than this is not a parameter
MAX_LOD_LEVELS = 16
MAX_PROGRAM = 1 << 28  # bytes of a .json or .pdmodel program read for its parameters' names
DENSE_TENSOR = 7  # VarType.Type of an old-IR program's variables (framework.proto)
NOT_SAVED = {9, 10, 15, 17}  # FEED_MINIBATCH, FETCH_LIST, READER, RAW: never in the combined-params file
# VarType.Type (framework.proto) -> numpy dtype; bfloat16 is widened to float32 (the upper half of one), as
# checkpoint_io reads a bfloat16 checkpoint (paddle's own reader gives its raw uint16 words).
DTYPES = {0: np.dtype("bool"), 1: np.dtype("<i2"), 2: np.dtype("<i4"), 3: np.dtype("<i8"), 4: np.dtype("<f2"),
          5: np.dtype("<f4"), 6: np.dtype("<f8"), 20: np.dtype("u1"), 21: np.dtype("i1"), 22: "bfloat16",
          23: np.dtype("<c8"), 24: np.dtype("<c16")}


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("a varint runs past its message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def tensor_desc(data: bytes, pos: int, end: int) -> tuple[int, list[int]]:
    """(data_type, dims) of a protobuf VarType.TensorDesc in data[pos:end]; unknown fields are skipped."""
    dtype, dims = None, []
    for number, wire, value in _fields(data, pos, end):
        if number == 1 and wire == 0:
            dtype = value
        elif number == 2 and wire == 0:
            dims.append(_signed(value))
        elif number == 2 and wire == 2:  # packed dims
            at, stop = value
            while at < stop:
                dim, at = _varint(data, at, stop)
                dims.append(_signed(dim))
        if len(dims) > MAX_DIMS:
            raise ValueError(f"more than {MAX_DIMS} dims")
    if dtype is None:
        raise ValueError("the TensorDesc has no data type")
    return dtype, dims


def read_tensors(data: bytes) -> list[np.ndarray]:
    """Every tensor of a combined-params file's bytes, in file order (ValueError naming the first fault)."""
    out: list[np.ndarray] = []
    pos, end = 0, len(data)

    def take(size: int, what: str) -> int:
        nonlocal pos
        if size < 0 or size > end - pos:
            raise ValueError(f"tensor {len(out)}: its {what} ({size} bytes) runs past the end of the file")
        start, pos = pos, pos + size
        return start

    while pos < end:
        (version,) = struct.unpack_from("<I", data, take(4, "version"))
        if version != 0:
            raise ValueError(f"tensor {len(out)}: version {version}, not 0")
        (levels,) = struct.unpack_from("<Q", data, take(8, "lod level count"))
        if levels > MAX_LOD_LEVELS:
            raise ValueError(f"tensor {len(out)}: {levels} lod levels")
        for _ in range(levels):
            (size,) = struct.unpack_from("<Q", data, take(8, "lod size"))
            take(size, "lod data")
        (version,) = struct.unpack_from("<I", data, take(4, "tensor version"))
        if version != 0:
            raise ValueError(f"tensor {len(out)}: tensor version {version}, not 0")
        (size,) = struct.unpack_from("<i", data, take(4, "desc size"))
        start = take(size, "desc")
        dtype_code, dims = tensor_desc(data, start, start + size)
        dtype = DTYPES.get(dtype_code)
        if dtype is None:
            raise ValueError(f"tensor {len(out)}: data type {dtype_code} is not one this reader knows")
        if any(d < 0 for d in dims):
            raise ValueError(f"tensor {len(out)}: negative dims {dims}")
        count = 1
        for d in dims:
            count *= d
            if count > end:  # more elements than bytes left: checked before the product can grow without end
                break
        width = 2 if dtype == "bfloat16" else dtype.itemsize
        start = take(count * width, f"data ({dims}, type {dtype_code})")
        if dtype == "bfloat16":
            words = np.frombuffer(data, "<u2", count, start).astype(np.uint32) << 16
            out.append(words.view(np.float32).reshape(dims))
        else:
            out.append(np.frombuffer(data, dtype, count, start).reshape(dims))
    return out


def _fields(data: bytes, pos: int, end: int):
    """(field number, wire type, value) of each field of the protobuf message in data[pos:end]: an int for a
    varint, (start, stop) for a length-delimited field; fixed-width fields are skipped (ValueError past end)."""
    while pos < end:
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos, end)
            yield number, wire, value
            continue
        if wire == 2:
            size, pos = _varint(data, pos, end)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire} is not in a Paddle message")
        if size > end - pos:
            raise ValueError("a field runs past its message")
        if wire == 2:
            yield number, wire, (pos, pos + size)
        pos += size


def _variable(data: bytes, start: int, stop: int) -> tuple[str, int, bool, list[int] | None]:
    """(name, VarType.Type, persistable, dims of its dense tensor) of a protobuf VarDesc."""
    name, kind, persistable, dims = None, None, False, None
    for number, wire, value in _fields(data, start, stop):
        if number == 1 and wire == 2:
            name = data[value[0]:value[1]].decode("utf-8")
        elif number == 3 and wire == 0:
            persistable = bool(value)
        elif number == 2 and wire == 2:  # VarType: type (1), dense_tensor (3: DenseTensorDesc, its tensor 1)
            for inner, inner_wire, item in _fields(data, *value):
                if inner == 1 and inner_wire == 0:
                    kind = item
                elif inner == 3 and inner_wire == 2:
                    for field_number, field_wire, desc in _fields(data, *item):
                        if field_number == 1 and field_wire == 2:
                            dims = tensor_desc(data, *desc)[1]
    if name is None or kind is None:
        raise ValueError("a variable without a name or a type")
    return name, kind, persistable, dims


def pdmodel_parameters(data: bytes) -> list[tuple[str, list[int] | None]]:
    """(name, declared shape) of every variable an old-IR ``.pdmodel`` (a protobuf ``ProgramDesc``: blocks 1,
    their vars 3) has paddle save in its combined-params file: the persistable ones that are not a feed, fetch,
    reader or raw variable (``paddle.static.io``'s ``is_persistable``), once each, in program order."""
    found: dict[str, list[int] | None] = {}
    for number, wire, block in _fields(data, 0, len(data)):
        if number != 1 or wire != 2:
            continue
        for inner, inner_wire, var in _fields(data, *block):
            if inner == 3 and inner_wire == 2:
                name, kind, persistable, dims = _variable(data, *var)
                if persistable and kind not in NOT_SAVED:
                    found.setdefault(name, dims if kind == DENSE_TENSOR else None)
    return list(found.items())


def json_parameters(text: str) -> list[tuple[str, list[int]]]:
    """(name, declared shape) of every parameter op (``"#": "p"``) of a PIR ``.json`` program, in program order."""
    found: list[tuple[str, list[int]]] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            if node.get("#") == "p" and isinstance(node.get("A"), list) and node["A"] and isinstance(node["A"][-1], str):
                shape = node.get("O", {}).get("TT", {}).get("D", [None, None])
                found.append((node["A"][-1], shape[1] if isinstance(shape, list) and len(shape) > 1 else None))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(text))
    return found


def read_pdiparams(prefix: Path, max_bytes: int) -> dict[str, np.ndarray]:
    """The exported parameters (name -> array) of ``<prefix>.pdiparams`` with names from ``<prefix>.json`` (PIR)
    or, where there is none, ``<prefix>.pdmodel`` (the old IR); ``ExportFormatError`` for a file this reader
    does not know."""
    program = Path(f"{prefix}.json")
    if not program.is_file():
        program = Path(f"{prefix}.pdmodel")
    if not program.is_file():
        raise ExportFormatError(f"{prefix}: no .json or .pdmodel program beside the .pdiparams", "read it with paddle")
    params_file = Path(f"{prefix}.pdiparams")
    size = params_file.stat().st_size
    if size > max_bytes:  # not read into this process (paddle reads it in the chain's interpreter, as it did before)
        raise ExportFormatError(f"{params_file}: is {size} bytes, over the {max_bytes} bytes this process reads",
                                "read it with paddle")
    try:  # each read at most the file's size: read_bytes allocates its limit
        data = read_bytes(params_file, "exported parameters file", size)
        text = read_bytes(program, "exported program", min(program.stat().st_size, MAX_PROGRAM))
        params = json_parameters(text.decode("utf-8")) if program.suffix == ".json" else pdmodel_parameters(text)
        tensors = read_tensors(data)
    except (TipcgenError, ValueError, UnicodeDecodeError, RecursionError, struct.error) as exc:
        text = getattr(exc, "message", None) or str(exc)
        raise ExportFormatError(f"{prefix}.pdiparams: not a combined-params file this reader knows ({text})",
                                "read it with paddle") from None
    names = sorted(name for name, _ in params)
    shapes = dict(params)
    if not all(isinstance(n, str) and n.isprintable() for n in names):  # a name is shown in the check's messages
        raise ExportFormatError(f"{prefix}.pdiparams: {program.name} names a parameter with control characters",
                                "read it with paddle")
    if len(names) != len(tensors) or len(set(names)) != len(names) or any(
            shapes[n] is not None and list(shapes[n]) != list(t.shape) for n, t in zip(names, tensors)):
        raise ExportFormatError(f"{prefix}.pdiparams: its {len(tensors)} tensors are not the {len(names)} parameters "
                                f"{program.name} names, in sorted order", "read it with paddle")
    return dict(zip(names, tensors))
