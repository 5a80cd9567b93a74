"""Reading reprod_log files (``.npy`` pickled dicts, pickle-free ``.npz``) without trusting them.

For `tipcgen align` and `tipcgen report --align`: a checkpoint file comes from anyone's script, so
reading it must never run code and never allocate more than a stated limit. The pickle reader knows
only the exact globals a dict of numpy arrays needs, and each of them is a checking stand-in, not
the numpy function itself; every counted length and memo index is checked against the file before
the unpickler sees it; every array's declared size is checked before numpy allocates it.
"""
from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from tipcgen.core.errors import AlignFileError
from tipcgen.core.inputs import read_bytes
from tipcgen.repro.pickles import (  # noqa: F401  # the limits are part of this module's interface
    DEFAULT_MAX_BYTES,
    MAX_DEPTH,
    MAX_KEY,
    MAX_NDIM,
    MAX_OPCODES,
    MAX_VALUES,
    Budget,
    Refused,
    Stand,
    brief,
    check_key,
    check_opcodes,
    declared_bytes,
    limit_text,
    open_zip,
    plain,
    read_member,
    short,
    zip_members,
)

_NPZ_SEP = "/"
_KINDS = "biufcUS"  # bool, integers, floats, complex, text: what reprod_log files hold
_DTYPE_CLASSES = frozenset(
    f"{name}DType" for name in (
        "Bool", "Int8", "Byte", "UInt8", "UByte", "Int16", "Short", "UInt16", "UShort", "Int32", "Int", "UInt32",
        "UInt", "Int64", "Long", "UInt64", "ULong", "LongLong", "ULongLong", "Float16", "Float32", "Float64",
        "LongDouble", "Complex64", "Complex128", "CLongDouble", "Bytes", "Str"))
_HINT = "expected np.save(path, {key: ndarray}) as ReprodLogger.save writes it, or an .npz of plain arrays"

Info = dict[str, Any]


_plain, _brief, _short, _check_key = plain, brief, short, check_key


def load_info(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Info:
    """The dict in a reprod_log ``.npy`` (pickled dict) or an ``.npz`` file ('a/b' names become nesting).

    Refuses (AlignFileError) any file over ``max_bytes``, any array or ``.npz`` member declared over it,
    and any pickle that names anything but the numpy pieces of an array dict."""
    path = Path(path)
    if not path.is_file():  # a FIFO or a device would block or never end
        what = "not a regular file" if path.exists() else "no such file"
        raise AlignFileError(f"{path}: {what}", "pass the .npy/.npz files that ReprodLogger.save or "
                             "tipcgen.align.save_info wrote")
    size = path.stat().st_size
    if size > max_bytes:
        raise AlignFileError(f"{path}: {size} bytes, over the limit of {limit_text(max_bytes)}",
                             "raise it with --max-bytes if this file is really that large")
    try:
        if path.suffix == ".npz":
            return _unflatten(_load_npz(path, max_bytes))
        return _load_npy_dict(read_bytes(path, "reprod_log file", max_bytes), max_bytes)
    except (Refused, zipfile.BadZipFile) as exc:
        raise AlignFileError(f"{path}: refused: {exc}", _HINT) from None
    except Exception as exc:  # noqa: BLE001  # a hostile file can make the unpickler raise anything
        raise AlignFileError(f"{path}: not a reprod_log file ({type(exc).__name__}: {_short(exc)})", _HINT) from None


# ---------------------------------------------------------------- .npz: plain arrays, sizes first

def load_arrays(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, np.ndarray]:
    """The arrays of a pickle-free ``.npz`` by member name (``align trace --inputs``), read with the
    checks of ``load_info``; any refusal is an AlignFileError naming the file."""
    path = Path(path)
    try:
        return _load_npz(path, max_bytes)
    except (Refused, zipfile.BadZipFile) as exc:
        raise AlignFileError(f"{path}: refused: {exc}", "save the inputs with numpy.savez(path, ids=..., ...)") from None
    except AlignFileError:
        raise
    except Exception as exc:  # noqa: BLE001  # a hostile file can make numpy or zipfile raise anything
        raise AlignFileError(f"{path}: not an .npz of plain arrays ({type(exc).__name__}: {_short(exc)})",
                             "save the inputs with numpy.savez(path, ids=..., ...)") from None


def _load_npz(path: Path, max_bytes: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    raw = read_bytes(path, ".npz file", max_bytes)
    budget = Budget(max_bytes)
    with open_zip(raw) as archive:
        for member in zip_members(archive, max_bytes):
            if not member.filename.endswith(".npy"):
                raise Refused(f"member {_plain(member.filename)} is not an .npy array")
            name = member.filename[: -len(".npy")]
            _check_key(name)
            array = _plain_array(read_member(archive, member), member.filename, max_bytes)
            budget.take(array.nbytes)
            out[name] = array
    return out


def _plain_array(data: bytes, name: str, max_bytes: int) -> np.ndarray:
    """An .npy without pickle: its header's declared size must be exactly the bytes that follow."""
    handle = io.BytesIO(data)
    shape, fortran, dtype = _read_header(handle)
    if dtype.hasobject or dtype.kind not in _KINDS:
        raise Refused(f"member {_plain(name)} holds {dtype} values, not plain numbers")
    nbytes = _declared_bytes(shape, dtype, max_bytes)
    body = data[handle.tell():]
    if len(body) != nbytes:
        raise Refused(f"member {_plain(name)} declares {nbytes} bytes of data but holds {len(body)}")
    return np.frombuffer(body, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()


def _read_header(handle: io.BytesIO) -> tuple[Any, bool, np.dtype]:
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(handle)
    return np.lib.format.read_array_header_2_0(handle)


def _declared_bytes(shape: Any, dtype: np.dtype, max_bytes: int) -> int:
    return declared_bytes(shape, dtype.itemsize, max_bytes)


# ---------------------------------------------------------------- .npy: a pickled dict, read with checks

def _load_npy_dict(raw: bytes, max_bytes: int) -> Info:
    handle = io.BytesIO(raw)
    shape, _, dtype = _read_header(handle)
    if not (dtype.hasobject and shape == ()):
        raise ValueError(f"it holds a plain {dtype} array of shape {shape}, not a dict")
    return load_pickled_dict(handle, len(raw), max_bytes)


def load_pickled_dict(handle: io.BytesIO, size: int, max_bytes: int, checkpoint: bool = False) -> Info:
    """The dict of numpy arrays pickled at ``handle``'s position (np.save's object array, or a
    ``.pdparams``): opcodes checked first, fresh stand-ins, every array counted against ``max_bytes``.
    With ``checkpoint``, the plain values a ``paddle.save`` checkpoint holds beside its arrays are kept too
    (``CHECKPOINT_GLOBALS``): text (paddle.save's name table), None, tuples, lists and sets of plain values
    (a tensor inside a nested dict is pickled as ``builtins.tuple(((name, ndarray),))``; protocol 2 writes
    bytes as ``_codecs.encode(text, 'latin1')``), an ``argparse.Namespace`` as the dict of its fields.
    Raises Refused/ValueError."""
    start = handle.tell()
    check_opcodes(handle, size)
    handle.seek(start)
    reader = _Reader(max_bytes, checkpoint)
    data = reader.resolve(_Unpickler(handle, reader).load(), 0)
    if not isinstance(data, dict):
        raise ValueError(f"it holds a {type(data).__name__}, not a dict")
    return data


class _Unpickler(pickle.Unpickler):
    def __init__(self, handle: io.BytesIO, reader: _Reader) -> None:
        super().__init__(handle)
        self._globals = reader.globals()
        self._allowed = "numpy arrays and plain values" if reader.checkpoint else "numpy arrays"

    def find_class(self, module: str, name: str) -> Any:
        found = self._globals.get((module, name))
        if found is None:
            raise Refused(f"refusing to load {_plain(module)}.{_plain(name)}: only {self._allowed} in a dict are allowed")
        return found


def _ndarray_called(*args: Any) -> None:
    raise Refused("numpy.ndarray called directly: np.save never does that")


# The globals paddle.save writes for the plain values of a checkpoint, besides numpy's (a reprod_log file
# never needs them): each is a checking stand-in that builds only a plain value, never the builtin itself.
CHECKPOINT_GLOBALS = (("builtins", "tuple"), ("__builtin__", "tuple"), ("builtins", "complex"),
                      ("__builtin__", "complex"), ("_codecs", "encode"), ("argparse", "Namespace"))


def _tuple(*args: Any) -> tuple:
    """builtins.tuple as paddle.save calls it (``tuple(((name, ndarray),))``): of one tuple or list only."""
    if len(args) != 1 or type(args[0]) not in (tuple, list):
        raise Refused("builtins.tuple called on something other than a tuple or a list")
    return tuple(args[0])


def _complex(*args: Any) -> complex:
    """builtins.complex as pickle calls it (``complex(real, imag)``): of numbers only."""
    if not 1 <= len(args) <= 2 or any(type(a) not in (int, float) for a in args):
        raise Refused("builtins.complex called on something other than numbers")
    return complex(*args)


def _encode(*args: Any) -> bytes:
    """_codecs.encode as protocol 2 pickles bytes: ``encode(text, 'latin1')``, nothing else."""
    if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
        raise Refused("_codecs.encode called otherwise than pickle's protocol 2 writes bytes")
    return args[0].encode("latin1")


class _Fields:
    """argparse.Namespace as a checkpoint holds it (``'args': args``): the dict of its fields, nothing run."""

    __slots__ = ("fields",)

    def __init__(self, *args: Any) -> None:
        if args:
            raise Refused("argparse.Namespace built with arguments: pickle builds it from its fields")
        self.fields: Any = {}

    def __setstate__(self, state: Any) -> None:
        if type(state) is not dict:
            raise Refused("argparse.Namespace fields that are not a dict")
        self.fields = state


class _PendingDtype:
    """A dtype named in the file; its state (byte order) is checked before it becomes a numpy dtype."""

    def __init__(self, spec: Any, align: Any = False, copy: Any = False) -> None:
        if not isinstance(spec, str) or len(spec) > 16:
            raise Refused(f"dtype {_brief(spec)} is not a plain numpy type code")
        self.dtype = np.dtype(spec)

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) < 5 or state[1] not in ("<", ">", "|", "=") \
                or any(part is not None for part in state[2:5]):
            raise Refused("a structured or sub-array dtype: only plain numeric dtypes are allowed")
        if state[1] in "<>":
            self.dtype = self.dtype.newbyteorder(state[1])


class _PendingArray:
    """What _reconstruct returns: the array is made in __setstate__, once its declared size is checked."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.value: Any = _PendingArray  # not yet built

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) != 5 or not isinstance(state[2], _PendingDtype):
            raise Refused("an array state that np.save never writes")
        _, shape, pending, fortran, raw = state
        dtype = pending.dtype
        if dtype.hasobject:  # np.save of a dict: a 0-d object array holding it
            if shape != () or not isinstance(raw, list) or len(raw) != 1:
                raise Refused(f"an object array of shape {_brief(shape)}: only arrays of numbers are allowed")
            self.value = raw[0]
            return
        self.value = self.reader.array(raw, dtype, shape, "F" if fortran else "C")


class _Reader:
    """The checking stand-ins for the globals a pickled array dict names, and its running totals."""

    def __init__(self, max_bytes: int, checkpoint: bool = False) -> None:
        self.max_bytes = max_bytes
        self.total = 0
        self.values = 0
        self.checkpoint = checkpoint
        # numpy.ndarray: only _reconstruct takes it; calling it allocates nothing. Fresh for each file.
        self.ndarray = Stand(_ndarray_called)

    def globals(self) -> dict[tuple[str, str], Any]:
        found: dict[tuple[str, str], Any] = {("numpy", "ndarray"): self.ndarray, ("numpy", "dtype"): Stand(_PendingDtype),
                                             ("collections", "OrderedDict"): Stand(dict)}
        for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            found[(module, "_reconstruct")] = Stand(self.reconstruct)
            found[(module, "scalar")] = Stand(self.scalar)
        for module in ("numpy.core.numeric", "numpy._core.numeric"):
            found[(module, "_frombuffer")] = Stand(self.frombuffer)
        for name in _DTYPE_CLASSES:
            found[("numpy.dtypes", name)] = Stand(lambda *_args, _name=name: _PendingDtype(_dtype_code(_name)))
        if self.checkpoint:
            calls = {"tuple": Stand(_tuple), "complex": Stand(_complex), "encode": Stand(_encode)}
            # NEWOBJ needs a class: _Fields is tipcgen's own, with no state of its class a file could change
            found.update({key: calls.get(key[1], _Fields) for key in CHECKPOINT_GLOBALS})
        return found

    def reconstruct(self, subtype: Any, shape: Any, code: Any) -> _PendingArray:
        if subtype is not self.ndarray or not isinstance(shape, tuple) or any(n != 0 for n in shape[:1]) \
                or len(shape) != 1:
            raise Refused("an array that is not a plain numpy.ndarray of the form np.save writes")
        return _PendingArray(self)

    def frombuffer(self, buf: Any, pending: Any, shape: Any, order: Any) -> np.ndarray:
        if not isinstance(pending, _PendingDtype) or order not in ("C", "F"):
            raise Refused("an array buffer that np.save never writes")
        return self.array(buf, pending.dtype, shape, order)

    def scalar(self, pending: Any, raw: Any = None) -> Any:
        if not isinstance(pending, _PendingDtype) or not isinstance(raw, bytes):
            raise Refused("a numpy scalar that is not a plain number")
        return self.array(raw, pending.dtype, (), "C")[()]

    def array(self, raw: Any, dtype: np.dtype, shape: Any, order: str) -> np.ndarray:
        if dtype.kind not in _KINDS:
            raise Refused(f"an array of {dtype}: only numbers and text are allowed")
        nbytes = _declared_bytes(shape, dtype, self.max_bytes)
        self.total += nbytes
        if self.total > self.max_bytes:
            raise Refused(f"its arrays add up to more than {limit_text(self.max_bytes)} "
                           "(raise the limit with --max-bytes if that is expected)")
        if isinstance(raw, pickle.PickleBuffer):
            raw = raw.raw()
        if not isinstance(raw, (bytes, bytearray, memoryview)) or len(raw) != nbytes:
            raise Refused(f"an array of shape {_brief(shape)} whose data is not its {nbytes} bytes")
        return np.frombuffer(raw, dtype=dtype).reshape(shape, order=order).copy()

    def resolve(self, value: Any, depth: int) -> Any:
        """The loaded object with every stand-in replaced, checked to be a dict tree of arrays."""
        self.values += 1
        if self.values > MAX_VALUES or depth > MAX_DEPTH:
            raise Refused(f"more than {MAX_VALUES} values or {MAX_DEPTH} levels of nesting")
        if isinstance(value, _PendingArray):
            if value.value is _PendingArray:
                raise Refused("an array without its data")
            return self.resolve(value.value, depth)
        if isinstance(value, _Fields):
            return self.resolve(getattr(value, "fields", {}), depth)
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if type(key) not in ((str, int, float, bool, type(None)) if self.checkpoint else (str, int)):
                    raise Refused(f"a key of type {type(key).__name__}: keys are names")
                _check_key(str(key))
                out[key] = self.resolve(item, depth + 1)
            return out
        if isinstance(value, np.ndarray) or type(value) in (bool, int, float) \
                or isinstance(value, np.generic) and value.dtype.kind in _KINDS:
            return value
        if self.checkpoint:
            if type(value) in (str, bytes, complex) or value is None:  # a config's text, never printed
                return value
            if type(value) in (tuple, list):  # a step's shape, a list of scores, (name, ndarray)
                return type(value)(self.resolve(item, depth + 1) for item in value)
            if type(value) in (set, frozenset):
                items = [self.resolve(item, depth + 1) for item in value]
                if not all(type(item) in (bool, int, float, str, bytes, tuple, type(None)) for item in items):
                    raise Refused("a set of other values than numbers and text")
                return frozenset(items)
        raise Refused(f"a value of type {type(value).__name__}: only arrays and numbers are allowed")


def _dtype_code(class_name: str) -> str:
    """`Float32DType` -> the dtype code of that class (for a pickled DType class)."""
    return np.dtype(getattr(np.dtypes, class_name).type).str


def _unflatten(flat: dict[str, np.ndarray]) -> Info:
    out: Info = {}
    for name, value in flat.items():
        *parents, leaf = name.split(_NPZ_SEP)
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise Refused(f"member {_plain(name)} nests under an array")
        if isinstance(node.get(leaf), dict):
            raise Refused(f"member {_plain(name)} is both an array and a folder of arrays")
        node[leaf] = value
    return out
