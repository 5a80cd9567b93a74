"""Read PyTorch and Paddle state dicts as numpy arrays without running any code a file carries.

For weight conversion (tipcgen.convert). A ``torch.save`` file (zip or the legacy format), a
``.safetensors`` file and a ``.pdparams`` file are all read with restricted unpicklers: only the
globals that rebuild a tensor from raw storage bytes are allowed, and they are tipcgen's own
stand-ins, never torch's. A file that names anything else (``os.system``, ``builtins.eval``) is
refused before that object is built. Needs neither torch nor paddle.
"""
from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tipcgen.core.errors import CheckpointError

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


class _Storage:
    """Raw bytes of one torch storage and their dtype name."""

    def __init__(self, dtype: str, data: bytes) -> None:
        self.dtype = dtype
        self.data = data

    def array(self) -> np.ndarray:
        if self.dtype == "bfloat16":  # numpy has no bfloat16: the upper half of a float32
            bits = np.frombuffer(self.data, dtype="<u2").astype("<u4") << 16
            return bits.view("<f4")
        return np.frombuffer(self.data, dtype=np.dtype(self.dtype).newbyteorder("<"))


class _Tensor:
    """A tensor as the pickle describes it; its bytes may come later (the legacy format stores them last)."""

    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple, *_: Any) -> None:
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def array(self) -> np.ndarray:
        flat = self.storage.array()
        end = self.offset + 1 + sum((n - 1) * s for n, s in zip(self.size, self.stride) if n > 0)
        if any(n == 0 for n in self.size):
            return np.zeros(self.size, dtype=flat.dtype.newbyteorder("="))
        if end > flat.size or self.offset < 0 or min(self.stride, default=0) < 0:
            raise ValueError(f"a tensor of size {self.size} runs past its storage of {flat.size} elements")
        view = np.lib.stride_tricks.as_strided(flat[self.offset:], shape=self.size,
                                               strides=tuple(s * flat.itemsize for s in self.stride))
        return np.ascontiguousarray(view).astype(flat.dtype.newbyteorder("=")).reshape(self.size)


def _rebuild_parameter(data: _Tensor, *_: Any) -> _Tensor:
    return data


class _StorageType:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


_TORCH_GLOBALS: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _Tensor,
    ("torch._utils", "_rebuild_tensor"): _Tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    **{("torch", name): _StorageType(dtype) for name, dtype in _STORAGES.items()},
}


class _TorchUnpickler(pickle.Unpickler):
    """Knows only the tensor-rebuild globals above; storages come from `load_storage`."""

    def __init__(self, handle: Any, load_storage: Callable[[tuple], _Storage], source: Path) -> None:
        super().__init__(handle)
        self._load_storage = load_storage
        self._source = source

    def find_class(self, module: str, name: str) -> Any:
        found = _TORCH_GLOBALS.get((module, name))
        if found is None:
            raise CheckpointError(f"{self._source}: refused to load: the file asks for {module}.{name}, which is "
                                  "not part of a tensor state dict (a pickle can run code; nothing was run)",
                                  "save a plain state dict (torch.save(model.state_dict(), path)) or a .safetensors file")
        return found

    def persistent_load(self, pid: Any) -> _Storage:
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage" or not isinstance(pid[1], _StorageType):
            raise CheckpointError(f"{self._source}: unknown persistent id {str(pid)[:60]!r}",
                                  "save a plain state dict with torch.save")
        return self._load_storage(pid)


def _plain_unpickler(handle: Any, source: Path) -> pickle.Unpickler:
    """For the legacy format's header pickles: numbers, strings, dicts only."""
    return _TorchUnpickler(handle, lambda pid: (_ for _ in ()).throw(CheckpointError(f"{source}: storage in a header")),
                           source)


def _read_torch_zip(path: Path) -> Any:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pkl = next((n for n in names if n.endswith("/data.pkl") or n == "data.pkl"), None)
        if pkl is None:
            raise CheckpointError(f"{path}: a zip file without data.pkl is not a torch.save file",
                                  "pass the file torch.save wrote")
        prefix = pkl[: -len("data.pkl")]

        def storage(pid: tuple) -> _Storage:
            return _Storage(pid[1].dtype, archive.read(f"{prefix}data/{pid[2]}"))

        return _TorchUnpickler(io.BytesIO(archive.read(pkl)), storage, path).load()


def _read_torch_legacy(path: Path) -> Any:
    with path.open("rb") as handle:
        if _plain_unpickler(handle, path).load() != _LEGACY_MAGIC:
            raise CheckpointError(f"{path}: not a torch.save file (no zip, no legacy magic number)",
                                  "pass a .pt/.pth/.bin written by torch.save, or a .safetensors file")
        _plain_unpickler(handle, path).load()  # protocol version
        _plain_unpickler(handle, path).load()  # sys_info
        pending: dict[str, _Storage] = {}

        def storage(pid: tuple) -> _Storage:
            return pending.setdefault(str(pid[2]), _Storage(pid[1].dtype, b""))

        result = _TorchUnpickler(handle, storage, path).load()
        keys = _plain_unpickler(handle, path).load()
        for key in keys:
            stored = pending[str(key)]
            (count,) = struct.unpack("<q", handle.read(8))
            itemsize = 2 if stored.dtype == "bfloat16" else np.dtype(stored.dtype).itemsize
            stored.data = handle.read(count * itemsize)
    return result


def _read_safetensors(path: Path) -> StateDict:
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
        body = handle.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        stored = _Storage(_SAFETENSORS[info["dtype"]], body[start:end])
        out[name] = stored.array().reshape(info["shape"]).copy()
    return out


def read_torch_state(path: str | Path) -> StateDict:
    """A PyTorch state dict file (.pt/.pth/.bin via torch.save, or .safetensors) as name -> numpy array."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file", "pass the PyTorch weights file (.pt, .pth, .bin, .safetensors)")
    try:
        if path.suffix == ".safetensors":
            return _read_safetensors(path)
        raw = _read_torch_zip(path) if zipfile.is_zipfile(path) else _read_torch_legacy(path)
        return _state_of(raw, path)
    except CheckpointError:
        raise
    except (pickle.UnpicklingError, EOFError, KeyError, ValueError, TypeError, IndexError, struct.error,
            zipfile.BadZipFile, AttributeError) as exc:
        raise CheckpointError(f"{path}: cannot read it as a PyTorch state dict ({type(exc).__name__}: {exc})",
                              "pass a file written by torch.save(model.state_dict(), path)") from None


def _state_of(raw: Any, path: Path) -> StateDict:
    """The name -> array dict of what was saved: a state dict, or a checkpoint holding one."""
    if isinstance(raw, dict):
        for key in ("state_dict", "model_state_dict", "model"):
            if isinstance(raw.get(key), dict):
                raw = raw[key]
                break
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path}: holds a {type(raw).__name__}, not a state dict",
                              "save model.state_dict(), not the model")
    return {str(k): v.array() for k, v in raw.items() if isinstance(v, _Tensor)}


class _PdparamsUnpickler(pickle.Unpickler):
    """What paddle.save writes for a state dict: dicts, strings and numpy arrays."""

    _ALLOWED = {("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "OrderedDict")}

    def __init__(self, handle: Any, source: Path) -> None:
        super().__init__(handle)
        self._source = source

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise CheckpointError(f"{self._source}: refused to load: the file asks for {module}.{name}, which is not "
                              "part of a Paddle state dict (nothing was run)",
                              "save the state dict with paddle.save(model.state_dict(), path)")


def read_paddle_state(path: str | Path) -> StateDict:
    """A .pdparams (paddle.save of a state dict) as name -> numpy array, without importing paddle."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file", "pass a .pdparams written by paddle.save")
    try:
        with path.open("rb") as handle:
            raw = _PdparamsUnpickler(handle, path).load()
    except CheckpointError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise CheckpointError(f"{path}: cannot read it as a .pdparams state dict ({type(exc).__name__})",
                              "pass a file written by paddle.save(model.state_dict(), path)") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path}: holds a {type(raw).__name__}, not a state dict", "save model.state_dict()")
    return {str(k): v for k, v in raw.items() if isinstance(v, np.ndarray)}


def write_paddle_state(state: StateDict, path: str | Path) -> None:
    """paddle.save of the arrays as Paddle tensors, written to a temporary file first (never half a file)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # paddle's import warns about ccache, which says nothing about the conversion
        import paddle

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    paddle.save({name: paddle.to_tensor(value) for name, value in state.items()}, str(partial))
    partial.replace(path)
