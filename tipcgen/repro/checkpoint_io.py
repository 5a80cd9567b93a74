"""Read PyTorch and Paddle state dicts as numpy arrays without running any code a file carries.

For weight conversion (tipcgen.convert). A ``torch.save`` file (zip or the legacy format), a
``.safetensors`` file and a ``.pdparams`` file are all read the one way of tipcgen.repro.pickles:
only the globals that rebuild a tensor from raw storage bytes are allowed, as stand-ins made fresh
for each load (never torch's); a file that names anything else (``os.system``, ``builtins.eval``)
is refused before that object is built; opcodes, zip members, storages, views and safetensors
headers are checked against the limits and the memory budget before anything is allocated.
Needs neither torch nor paddle.

A ``paddle.save`` checkpoint (for the export proof, tipcgen.repro.export_check) is read by
``read_paddle_checkpoint`` whatever its shape: a state dict, or a dict holding one or several under any
key and nesting (``state_dict``, ``model``, ``net``, ``ema``) beside optimizer state, step counters and
plain values (tuples, lists, text, None, numpy scalars, an ``argparse.Namespace``), under any file name;
it gives back every state dict in it by where it is (``checkpoint_states``), sets optimizer state apart
(by its key or its accumulators' names, ``linear_0.w_0_moment1_0``), and says what a file without one holds.
"""
from __future__ import annotations

import io
import json
import math
import pickle
import re
import struct
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tipcgen.core.errors import CheckpointError
from tipcgen.core.inputs import read_bytes
from tipcgen.core.writes import staged_path
from tipcgen.repro.pickles import (
    DEFAULT_MAX_BYTES,
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
    shape_of,
    short,
    zip_members,
)
from tipcgen.repro.reprod_files import load_pickled_dict

StateDict = dict[str, np.ndarray]

# torch's storage classes (the pickle names them) -> numpy dtype; bfloat16 is widened to float32 on read.
_STORAGES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool",
}
_SAFETENSORS = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
                "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
# A tensor's values may not take more than MAX_EXPANSION times the bytes of the storage it views (a stride-0
# view of a 4-byte storage as 2**28 floats is a 512-byte file that would make 1 GiB, and more to write); a
# small broadcast (up to SMALL_EXPANSION bytes) is let through.
MAX_EXPANSION = 4
SMALL_EXPANSION = 1 << 20
MAX_HEADER = 16 << 20  # a safetensors header: about 150 bytes per tensor (the library's own cap is 100 MB)


class _Storage:
    """Raw bytes of one torch storage and their dtype name."""

    def __init__(self, dtype: str, data: bytes | memoryview) -> None:
        self.dtype = dtype
        self.data = data

    @property
    def itemsize(self) -> int:
        return _itemsize(self.dtype)

    def array(self) -> np.ndarray:
        if self.dtype == "bfloat16":  # numpy has no bfloat16: the upper half of a float32
            bits = np.frombuffer(self.data, dtype="<u2").astype("<u4") << 16
            return bits.view("<f4")
        return np.frombuffer(self.data, dtype=np.dtype(self.dtype).newbyteorder("<"))

    def __setstate__(self, state: Any) -> None:
        raise Refused("a pickle that sets state on a storage")


def _itemsize(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


class _Tensor:
    """A tensor as the pickle describes it; its bytes may come later (the legacy format stores them last)."""

    def __init__(self, storage: Any, offset: Any, size: Any, stride: Any, *_: Any) -> None:
        if not isinstance(storage, _Storage) or type(offset) is not int or offset < 0:
            raise Refused("a tensor without a storage of its own, or with a negative offset")
        self.storage, self.offset = storage, offset
        if isinstance(stride, (tuple, list)) and any(type(s) is int and s < 0 for s in stride):
            raise Refused(f"a tensor with a negative stride {brief(stride)}")
        self.size, self.stride = shape_of(size), shape_of(stride)  # sizes and strides >= 0
        if len(self.size) != len(self.stride):
            raise Refused(f"a tensor of size {brief(self.size)} with strides {brief(self.stride)}")

    def __setstate__(self, state: Any) -> None:
        raise Refused("a pickle that sets state on a tensor")

    def array(self, budget: Budget) -> np.ndarray:
        """The tensor's values, copied: its declared size is counted against the budget first, so a
        tiny storage viewed with stride 0 as a huge tensor is refused before anything is allocated."""
        itemsize = self.storage.itemsize
        expanded = math.prod(self.size) * itemsize
        stored = len(self.storage.data)  # the bytes the file really holds for it
        if expanded > max(stored * MAX_EXPANSION, SMALL_EXPANSION):  # a stride-0 view: its real size is the storage's
            raise Refused(f"a tensor of size {brief(self.size)} (strides {brief(self.stride)}) expands its storage of "
                          f"{stored} bytes to {expanded} bytes, more than {MAX_EXPANSION} times it: a checkpoint "
                          "saves a tensor's values, not a broadcast (save tensor.contiguous() instead)")
        budget.take(math.prod(self.size) * (4 if self.storage.dtype == "bfloat16" else itemsize), "a tensor")
        flat = self.storage.array()
        if any(n == 0 for n in self.size):
            return np.zeros(self.size, dtype=flat.dtype.newbyteorder("="))
        end = self.offset + 1 + sum((n - 1) * s for n, s in zip(self.size, self.stride))
        if end > flat.size:
            raise Refused(f"a tensor of size {brief(self.size)} runs past its storage of {flat.size} elements")
        view = np.lib.stride_tricks.as_strided(flat[self.offset:], shape=self.size,
                                               strides=tuple(s * flat.itemsize for s in self.stride))
        return np.array(view, dtype=flat.dtype.newbyteorder("="), order="C")


class _StorageType:
    __slots__ = ("dtype",)

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    def __setstate__(self, state: Any) -> None:
        raise Refused("a pickle that sets state on a storage type")


def _torch_globals() -> dict[tuple[str, str], Any]:
    """The globals a torch state dict names, as stand-ins made fresh for this one load."""
    rebuild = Stand(_Tensor)
    return {
        ("collections", "OrderedDict"): Stand(OrderedDict),
        ("torch._utils", "_rebuild_tensor_v2"): rebuild,
        ("torch._utils", "_rebuild_tensor"): rebuild,
        ("torch._utils", "_rebuild_parameter"): Stand(lambda data, *_: data),
        **{("torch", name): _StorageType(dtype) for name, dtype in _STORAGES.items()},
    }


class _TorchUnpickler(pickle.Unpickler):
    """Knows only the tensor-rebuild globals above; storages come from `load_storage`."""

    def __init__(self, handle: Any, load_storage: Callable[[str, str, int], _Storage], source: Path,
                 known: dict[tuple[str, str], Any]) -> None:
        super().__init__(handle)
        self._load_storage = load_storage
        self._source = source
        self._globals = known

    def find_class(self, module: str, name: str) -> Any:
        found = self._globals.get((module, name))
        if found is None:
            raise CheckpointError(f"{self._source}: refused to load: the file asks for {plain(module)}.{plain(name)}, "
                                  "which is not part of a tensor state dict (a pickle can run code; nothing was run)",
                                  "save a plain state dict (torch.save(model.state_dict(), path)) or a .safetensors file")
        return found

    def persistent_load(self, pid: Any) -> _Storage:
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage" or not isinstance(pid[1], _StorageType) \
                or not isinstance(pid[2], str) or type(pid[4]) is not int or pid[4] < 0:
            raise Refused(f"an unknown persistent id {brief(pid[0] if isinstance(pid, tuple) and pid else pid)}")
        return self._load_storage(pid[1].dtype, pid[2], pid[4])


def _load_pickle(handle: io.BytesIO, size: int, storage: Callable[[str, str, int], _Storage], path: Path,
                 known: dict[tuple[str, str], Any]) -> Any:
    start = handle.tell()
    check_opcodes(handle, size)
    handle.seek(start)
    return _TorchUnpickler(handle, storage, path, known).load()


def _no_storage(dtype: str, key: str, numel: int) -> _Storage:
    raise Refused("a storage in a header pickle")


def _read_torch_zip(data: bytes, path: Path, budget: Budget, known: dict[tuple[str, str], Any]) -> Any:
    with open_zip(data) as archive:
        members = {m.filename: m for m in zip_members(archive, budget.max_bytes)}
        pkl = next((n for n in members if n.endswith("/data.pkl") or n == "data.pkl"), None)
        if pkl is None:
            raise CheckpointError(f"{path}: a zip file without data.pkl is not a torch.save file",
                                  "pass the file torch.save wrote")
        prefix = pkl[: -len("data.pkl")]
        loaded: dict[str, _Storage] = {}

        def storage(dtype: str, key: str, numel: int) -> _Storage:
            if key not in loaded:
                member = members.get(f"{prefix}data/{key}")
                if member is None:
                    raise Refused(f"storage {plain(key)} is not in the archive")
                if member.file_size < numel * _itemsize(dtype):
                    raise Refused(f"storage {plain(key)} holds {member.file_size} bytes, fewer than its "
                                  f"{numel} elements need")
                budget.count()
                loaded[key] = _Storage(dtype, read_member(archive, member))
            return loaded[key]

        raw = read_member(archive, members[pkl])
        return _load_pickle(io.BytesIO(raw), len(raw), storage, path, known)


def _read_torch_legacy(data: bytes, path: Path, budget: Budget, known: dict[tuple[str, str], Any]) -> Any:
    handle, size = io.BytesIO(data), len(data)
    if _load_pickle(handle, size, _no_storage, path, known) != _LEGACY_MAGIC:
        raise CheckpointError(f"{path}: not a torch.save file (no zip, no legacy magic number)",
                              "pass a .pt/.pth/.bin written by torch.save, or a .safetensors file")
    _load_pickle(handle, size, _no_storage, path, known)  # protocol version
    _load_pickle(handle, size, _no_storage, path, known)  # sys_info
    pending: dict[str, tuple[_Storage, int]] = {}

    def storage(dtype: str, key: str, numel: int) -> _Storage:
        if key not in pending:
            budget.count()
            pending[key] = (_Storage(dtype, b""), numel)
        return pending[key][0]

    result = _load_pickle(handle, size, storage, path, known)
    keys = _load_pickle(handle, size, _no_storage, path, known)
    if not isinstance(keys, list) or len(keys) > MAX_VALUES:
        raise Refused("the legacy format's storage list is not a list of keys")
    for key in keys:
        if str(key) not in pending:
            raise Refused(f"storage {brief(key)} is listed but no tensor uses it")
        stored, numel = pending[str(key)]
        (count,) = struct.unpack("<q", handle.read(8))
        nbytes = count * stored.itemsize
        if count < 0 or count != numel or nbytes > size - handle.tell():
            raise Refused(f"storage {brief(key)} declares {count} elements, which the file does not hold")
        stored.data = handle.read(nbytes)
    if any(not stored.data and numel for stored, numel in pending.values()):
        raise Refused("a tensor's storage is missing from the file")
    return result


def _read_safetensors(data: bytes, path: Path, budget: Budget) -> StateDict:
    """The header (a JSON object of at most MAX_HEADER bytes, plain values) is checked in full before any
    tensor is made: known dtypes, shapes, and offsets that lie in the file, match the shape, and never overlap."""
    if len(data) < 8:
        raise Refused("shorter than a safetensors header")
    (length,) = struct.unpack("<Q", data[:8])
    if length > min(MAX_HEADER, len(data) - 8):
        raise Refused(f"a header of {length} bytes (at most {MAX_HEADER}, and inside the file)")
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"))
    except RecursionError:
        raise Refused("its header nests too deeply to be a table of tensors") from None
    body = memoryview(data)[8 + length:]
    if not isinstance(header, dict) or len(header) > MAX_VALUES:
        raise Refused("the header is not a JSON object of tensors")
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise Refused("__metadata__ is not a mapping of text")
            continue
        check_key(name)
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"} \
                or info["dtype"] not in _SAFETENSORS or not isinstance(info["data_offsets"], list) \
                or len(info["data_offsets"]) != 2 or not all(type(o) is int for o in info["data_offsets"]):
            raise Refused(f"tensor {plain(name)}: not {{dtype, shape, data_offsets}} of a known dtype")
        dtype = _SAFETENSORS[info["dtype"]]
        start, end = info["data_offsets"]
        nbytes = declared_bytes(info["shape"], _itemsize(dtype), budget.max_bytes)
        if not 0 <= start <= end <= len(body) or end - start != nbytes:
            raise Refused(f"tensor {plain(name)}: data_offsets [{start}, {end}] do not hold its {nbytes} bytes "
                          f"inside the {len(body)} bytes of data")
        entries.append((start, end, name, dtype, tuple(info["shape"])))
    entries.sort()
    for (_, end, before, _, _), (start, _, name, _, _) in zip(entries, entries[1:]):
        if start < end:
            raise Refused(f"tensors {plain(before)} and {plain(name)} overlap in the file")
    out = {}
    for start, end, name, dtype, shape in entries:
        budget.count()
        budget.take(math.prod(shape) * (4 if dtype == "bfloat16" else _itemsize(dtype)))
        out[name] = _Storage(dtype, body[start:end]).array().reshape(shape).copy()  # the one copy
    return out


def _read_file(path: Path, what: str, max_bytes: int, hint: str) -> bytes:
    """The file's bytes, through tipcgen.core.inputs; over the limit is refused before it is read."""
    if path.is_file() and path.stat().st_size > max_bytes:
        raise CheckpointError(f"{path}: {path.stat().st_size} bytes, over the limit of {limit_text(max_bytes)}",
                              "raise it with --max-bytes if this file is really that large")
    if not path.exists():
        raise CheckpointError(f"{path}: no such file", hint)
    return read_bytes(path, what, max_bytes)


def read_torch_state(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> StateDict:
    """A PyTorch state dict file (.pt/.pth/.bin via torch.save, or .safetensors) as name -> numpy array.

    Never runs code from the file and never holds more than the budget in tipcgen.repro.pickles
    (``max_bytes`` for the file, for its storages and for the arrays); any refusal is a CheckpointError."""
    path = Path(path)
    data = _read_file(path, "PyTorch weights file", max_bytes,
                      "pass the PyTorch weights file (.pt, .pth, .bin, .safetensors)")
    budget = Budget(max_bytes)
    try:
        if path.suffix == ".safetensors":
            return _read_safetensors(data, path, budget)
        known = _torch_globals()
        raw = (_read_torch_zip if data[:4] == b"PK\x03\x04" else _read_torch_legacy)(data, path, budget, known)
        return _state_of(raw, path, budget)
    except CheckpointError:
        raise
    except Refused as exc:
        raise CheckpointError(f"{path}: refused: {exc}", "pass a file written by torch.save(model.state_dict(), path) "
                              "or a .safetensors file") from None
    except Exception as exc:  # noqa: BLE001  # a hostile file can make the unpickler, zipfile or json raise anything
        raise CheckpointError(f"{path}: cannot read it as a PyTorch state dict ({type(exc).__name__}: {short(exc)})",
                              "pass a file written by torch.save(model.state_dict(), path)") from None


def _state_of(raw: Any, path: Path, budget: Budget) -> StateDict:
    """The name -> array dict of what was saved: a state dict, or a checkpoint holding one."""
    if isinstance(raw, dict):
        for key in ("state_dict", "model_state_dict", "model"):
            if isinstance(raw.get(key), dict):
                raw = raw[key]
                break
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path}: holds a {type(raw).__name__}, not a state dict",
                              "save model.state_dict(), not the model")
    out = {}
    for key, value in raw.items():
        if isinstance(value, _Tensor):
            if not isinstance(key, str):
                raise Refused(f"a key of type {type(key).__name__}: keys are names")
            check_key(key)
            out[key] = value.array(budget)
    return out


# An optimizer's state (paddle.optimizer.Optimizer.state_dict()): its accumulators are named after the
# parameter they belong to, ``linear_0.w_0_moment1_0``; beside them ``LR_Scheduler`` and ``master_weights``.
_ACCUMULATOR = re.compile(r"_(moment\d?|moment\d_max|beta\d_pow(_acc)?|velocity|momentum|momentum_decay_pow|"
                          r"mean_square|mean_grad|inf_norm|avg_squared_grad|avg_squared_update|mu_product|prevs|rho|"
                          r"learning_rates|fp32_master)_\d+$")
_OPTIMIZER_KEYS = ("LR_Scheduler", "master_weights")
# A key that names optimizer state (``optimizer``, ``opt``, ``optim_G``, ``g_optimizer``, ``optimizerD``), lowercased
_OPTIMIZER_NAME = re.compile(r"^optimizer|(^|_)(optimizers?|optim|opt)(_|\d|$)|(^|_)(lr_)?scheduler(_|$)")
SHOWN_KEYS = 8


@dataclass
class PaddleCheckpoint:
    """What a paddle.save file holds: its candidate state dicts by where they are in it (``''`` for a plain
    state dict, ``model``, ``ema``, ``model/backbone``), where optimizer state sits, and a sentence naming
    what it found (for a file with no state dict, in place of one)."""

    states: dict[str, StateDict]
    optimizer: list[str]
    found: str


def _tensor(value: Any) -> np.ndarray | None:
    """A tensor as paddle.save writes it: an ndarray at the top of a state dict, ``(name, ndarray)`` inside
    any other object (its reduce_varbase)."""
    if isinstance(value, np.ndarray):
        return value
    if type(value) is tuple and len(value) == 2 and type(value[0]) is str and isinstance(value[1], np.ndarray):
        return value[1]
    return None


def _weights(state: StateDict) -> bool:
    """Model weights hold at least one floating tensor of two elements or more (what match compares)."""
    return any(np.issubdtype(a.dtype, np.floating) and a.size > 1 for a in state.values())


def _optimizer_like(key: str | None, node: dict) -> bool:
    if key is not None and _OPTIMIZER_NAME.search(key.lower()) or any(k in node for k in _OPTIMIZER_KEYS):
        return True
    names = [str(k) for k, v in node.items() if _tensor(v) is not None]
    return bool(names) and all(_ACCUMULATOR.search(n) for n in names)


def checkpoint_states(tree: Any) -> PaddleCheckpoint:
    """Every state dict in a loaded paddle.save object, any nesting: a dict's own tensors are one state
    dict (named by its keys' path), its dict, list and tuple values are searched the same way; optimizer
    state (by its key, ``optimizer``/``opt``/``optim_G``, or its content) is recorded, never a candidate;
    a dict of tensors of no more than one element each (a step, a best score) is no state dict."""
    states: dict[str, StateDict] = {}
    optimizer: list[str] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            if _optimizer_like(path[-1] if path else None, node):
                optimizer.append("/".join(path) or "the whole file")
                return
            own: StateDict = {}
            for key, value in node.items():
                array = _tensor(value)
                if array is not None:
                    check_key(str(key))
                    own[str(key)] = array
                elif isinstance(value, (dict, list, tuple)):
                    walk(value, [*path, str(key)])
            if _weights(own):
                states["/".join(path)] = own
        elif isinstance(node, (list, tuple)):
            for i, value in enumerate(node):
                if isinstance(value, (dict, list, tuple)) and _tensor(value) is None:
                    walk(value, [*path, str(i)])

    walk(tree, [])
    return PaddleCheckpoint(states, optimizer, "" if states else _found(tree, optimizer))


def _found(tree: Any, optimizer: list[str]) -> str:
    """What a file without a state dict holds, in a few words: its keys, and where its optimizer state is."""
    if not isinstance(tree, dict):
        return f"a {type(tree).__name__}, not a dict; no state dict in it"
    keys = [plain(k) for k in list(tree)[:SHOWN_KEYS]] + (["..."] if len(tree) > SHOWN_KEYS else [])
    what = f"a dict with keys {', '.join(keys)}" if tree else "an empty dict"
    if optimizer == ["the whole file"]:
        return f"optimizer state only ({what}), not model weights"
    if optimizer:
        return f"{what}; optimizer state under {', '.join(optimizer[:SHOWN_KEYS])}, no model weights under any other key"
    return f"{what}; no tensors of model weights under any key"


def read_paddle_checkpoint(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> PaddleCheckpoint:
    """A paddle.save file of any shape people save (a state dict; a dict holding one or several beside
    optimizer state, step counters, scores, tuples and lists of plain values, an ``argparse.Namespace``;
    under any name: ``.pdparams``, ``.pth``, ``.pd``, ``.pt``, none) as its candidate state dicts, without
    importing paddle: read by tipcgen.repro.reprod_files' checking unpickler (the limits of a reprod_log
    file; only numpy's pieces and the stand-ins of ``CHECKPOINT_GLOBALS``). Any refusal is a CheckpointError."""
    path = Path(path)
    data = _read_file(path, "paddle.save file", max_bytes, "pass a .pdparams written by paddle.save")
    if data[:4] == b"PK\x03\x04":
        raise CheckpointError(f"{path}: a zip archive (torch.save writes those), not a paddle.save pickle",
                              "save the checkpoint with paddle.save(model.state_dict(), path)")
    try:
        return checkpoint_states(load_pickled_dict(io.BytesIO(data), len(data), max_bytes, checkpoint=True))
    except Refused as exc:
        text = str(exc).replace("refusing to load", "refused to load: the file asks for")
        raise CheckpointError(f"{path}: {text} (not part of a Paddle checkpoint; nothing was run)",
                              "save the state dict with paddle.save(model.state_dict(), path)") from None
    except Exception as exc:  # noqa: BLE001  # a hostile file can make the unpickler raise anything
        raise CheckpointError(f"{path}: cannot read it as a paddle.save checkpoint ({type(exc).__name__}: {short(exc)})",
                              "pass a file written by paddle.save(model.state_dict(), path)") from None


def read_paddle_state(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> StateDict:
    """A .pdparams (paddle.save of a state dict, or of a checkpoint dict holding one) as name -> numpy
    array: the file's first state dict (``read_paddle_checkpoint``), refused where it holds none."""
    path = Path(path)
    found = read_paddle_checkpoint(path, max_bytes)
    if not found.states:
        raise CheckpointError(f"{path}: {found.found}", "save the state dict with paddle.save(model.state_dict(), path)")
    return next(iter(found.states.values()))


def write_paddle_state(state: StateDict, path: str | Path) -> None:
    """paddle.save of the arrays as Paddle tensors, into a private temporary folder first, then renamed
    into place (never half a file, never through a link: tipcgen.core.writes.staged_path)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # paddle's import warns about ccache, which says nothing about the conversion
        import paddle

    with staged_path(Path(path)) as partial:
        paddle.save({name: paddle.to_tensor(value) for name, value in state.items()}, str(partial))
