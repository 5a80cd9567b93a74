"""The exported parameters read with numpy (tipcgen/repro/pdiparams.py, issue #39): the same arrays as paddle's
own reader on real exports, and every hostile file refused with one message, in memory bounded by its size."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tipcgen.repro import export_check
from tipcgen.core.errors import ExportFormatError
from tipcgen.repro.pdiparams import read_pdiparams, read_tensors

CODES = {np.dtype("float32"): 5, np.dtype("float16"): 4, np.dtype("int64"): 3, np.dtype("int32"): 2,
         np.dtype("float64"): 6, np.dtype("uint8"): 20, np.dtype("bool"): 0}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _tensor(array: np.ndarray, code: int | None = None, packed: bool = False, lod: bytes = b"") -> bytes:
    code = CODES[array.dtype] if code is None else code
    dims = b"".join(_varint(d) for d in array.shape)
    desc = b"\x08" + _varint(code) + ((b"\x12" + _varint(len(dims)) + dims) if packed and array.shape else
                                      b"".join(b"\x10" + _varint(d) for d in array.shape))
    lod_part = struct.pack("<Q", 1) + struct.pack("<Q", len(lod)) + lod if lod else struct.pack("<Q", 0)
    return (struct.pack("<I", 0) + lod_part + struct.pack("<I", 0) + struct.pack("<i", len(desc)) + desc
            + np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())


def _export(folder: Path, arrays: dict[str, np.ndarray]) -> Path:
    """A .pdiparams and a .json program naming its parameters, as paddle.jit.save writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    ops = [{"#": "p", "A": [0, 1, 1, name], "O": {"%": i, "TT": {"#": "0.t_dtensor", "D": [{"#": "0.t_f32"},
                                                                                            list(a.shape), "NCHW"]}}}
           for i, (name, a) in enumerate(arrays.items())]
    (folder / "inference.json").write_text(json.dumps({"base_code": {"magic": "pir"}, "program": {
        "regions": [{"blocks": [{"ops": ops}]}]}}))
    (folder / "inference.pdiparams").write_bytes(b"".join(_tensor(arrays[n]) for n in sorted(arrays)))
    return folder / "inference"


def test_a_written_file_reads_back_with_its_names_dtypes_and_shapes(tmp_path: Path):
    arrays = {"linear_1.w_0": np.arange(12, dtype=np.float32).reshape(3, 4), "linear_0.b_0": np.ones(3, np.float16),
              "steps": np.array([[1, 2, 3]], np.int64), "scalar": np.array(7.5, np.float32),
              "empty": np.zeros((0, 4), np.float32)}
    got = read_pdiparams(_export(tmp_path, arrays), 1 << 20)
    assert sorted(got) == sorted(arrays)
    for name, array in arrays.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape and np.array_equal(got[name], array)
    packed = read_tensors(_tensor(arrays["linear_1.w_0"], packed=True) + _tensor(arrays["steps"], lod=b"\0" * 16))
    assert np.array_equal(packed[0], arrays["linear_1.w_0"]) and np.array_equal(packed[1], arrays["steps"])
    bf16 = read_tensors(_tensor(np.array([0x3F80, 0xC000], np.uint16), code=22))[0]  # bfloat16 1.0, -2.0
    assert bf16.dtype == np.float32 and bf16.tolist() == [1.0, -2.0]


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _var(name: str, kind: int = 7, persistable: bool = True, dims: tuple = ()) -> bytes:
    """A protobuf VarDesc: name, VarType (type; a dense tensor's TensorDesc), persistable."""
    tensor = _field(1, _field(1, 5) + b"".join(_field(2, d) for d in dims)) if kind == 7 else b""
    return _field(1, name.encode()) + _field(2, _field(1, kind) + (_field(3, tensor) if tensor else b"")) + (
        _field(3, 1) if persistable else b"")


def _pdmodel(folder: Path, arrays: dict[str, np.ndarray], blocks: int = 1) -> Path:
    """An old-IR export: a .pdmodel ProgramDesc (its parameters, activations, feed and fetch) and its .pdiparams."""
    folder.mkdir(parents=True, exist_ok=True)
    names = list(arrays)
    variables = [[_var("x", persistable=False, dims=(-1, 3)), _var("feed", 9), _var("fetch", 10), _var("raw", 17)]
                 for _ in range(blocks)]
    for i, name in enumerate(names):  # parameters spread over the blocks; a later block may repeat one
        variables[i % blocks].append(_var(name, dims=arrays[name].shape))
    variables[-1].append(_var(names[0], dims=arrays[names[0]].shape))
    program = b"".join(_field(1, _field(1, i) + _field(2, -1) + b"".join(_field(3, v) for v in vs))
                       for i, vs in enumerate(variables)) + _field(4, _field(1, 0))
    (folder / "inference.pdmodel").write_bytes(program)
    (folder / "inference.pdiparams").write_bytes(b"".join(_tensor(arrays[n]) for n in sorted(arrays)))
    return folder / "inference"


OLD_IR = {"linear_1.w_0": np.arange(8, dtype=np.float32).reshape(4, 2), "linear_0.b_0": np.ones(4, np.float32),
          "batch_norm_0.w_1": np.full(4, 0.5, np.float32), "linear_0.w_0": np.arange(12, dtype=np.float32).reshape(3, 4)}


@pytest.mark.parametrize("blocks", [1, 2])
def test_an_old_ir_export_is_read_with_the_names_of_its_pdmodel(tmp_path: Path, blocks: int):
    got = read_pdiparams(_pdmodel(tmp_path, OLD_IR, blocks), 1 << 20)
    assert sorted(got) == sorted(OLD_IR) and all(np.array_equal(got[n], a) for n, a in OLD_IR.items())


def test_a_program_that_does_not_parse_or_name_the_tensors_is_left_to_paddle(tmp_path: Path):
    prefix = _export(tmp_path / "a", {"w": np.ones((2, 2), np.float32)})
    os.replace(f"{prefix}.json", f"{prefix}.pdmodel")  # JSON text where a protobuf program belongs
    with pytest.raises(ExportFormatError, match="not a combined-params file this reader knows"):
        read_pdiparams(prefix, 1 << 20)
    os.remove(f"{prefix}.pdmodel")
    with pytest.raises(ExportFormatError, match="no .json or .pdmodel program"):
        read_pdiparams(prefix, 1 << 20)
    prefix = _pdmodel(tmp_path / "c", OLD_IR)  # the parameters file of another model
    Path(f"{prefix}.pdiparams").write_bytes(_tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(ExportFormatError, match="not the 4 parameters inference.pdmodel names"):
        read_pdiparams(prefix, 1 << 20)
    prefix = _export(tmp_path / "b", {"w": np.ones((2, 2), np.float32), "v": np.ones(3, np.float32)})
    Path(f"{prefix}.pdiparams").write_bytes(_tensor(np.ones((2, 2), np.float32)) + _tensor(np.ones(3, np.float32)))
    with pytest.raises(ExportFormatError, match="not the 2 parameters inference.json names, in sorted order"):
        read_pdiparams(prefix, 1 << 20)  # sorted, v comes first: its shape (3,) is not the file's first (2, 2)


GOOD = _tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
HOSTILE = {
    "truncated data": GOOD[:-1],
    "truncated header": GOOD[:10],
    "huge dims": _tensor(np.ones(1, np.float32))[:16] + b"\x09\0\0\0" + b"\x08\x05\x10" + _varint(1 << 62)
                 + b"\x10" + _varint(1 << 62),
    "dims whose product wraps": _tensor(np.ones(1, np.float32))[:16] + b"\x07\0\0\0\x08\x05\x10" + _varint(1 << 32)[:5]
                                + b"\x10\x01",
    "desc size beyond the file": GOOD[:16] + struct.pack("<i", 1 << 30) + GOOD[20:],
    "negative desc size": GOOD[:16] + struct.pack("<i", -5) + GOOD[20:],
    "negative dims": _tensor(np.ones(1, np.float32))[:16] + b"\x05\0\0\0\x08\x05\x10" + _varint(-3)[:2],
    "lod size beyond the file": struct.pack("<IQQ", 0, 1, 1 << 60) + GOOD[12:],
    "unknown data type": GOOD[:21] + b"\x63" + GOOD[22:],
    "bytes left over": GOOD + b"\0\0",
    "a version that is not 0": struct.pack("<I", 7) + GOOD[4:],
    "a varint that never ends": GOOD[:16] + b"\x04\0\0\0\x08\xff\xff\xff" + GOOD[28:],
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_is_refused_with_one_message(tmp_path: Path, name: str):
    prefix = _export(tmp_path, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
    Path(f"{prefix}.pdiparams").write_bytes(HOSTILE[name])
    tracemalloc.start()
    try:
        with pytest.raises(ExportFormatError) as caught:
            read_pdiparams(prefix, 1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.message.startswith(f"{prefix}.pdiparams: not a combined-params file this reader knows (")
    assert "\n" not in caught.value.message and caught.value.hint == "read it with paddle"
    assert peak < 1 << 20  # nothing allocated for the sizes the file claims


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.integers(0, len(GOOD)))
def test_any_bytes_are_read_or_refused_never_anything_else(data: bytes, cut: int):
    for blob in (data, GOOD[:cut] + data, GOOD + data):
        try:
            tensors = read_tensors(blob)
        except ValueError:
            continue
        assert sum(t.nbytes for t in tensors) <= 2 * len(blob)  # bfloat16 widens: twice its bytes at most


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.binary(max_size=12), st.integers(0, 3))
def test_any_change_to_a_pdmodel_is_read_right_or_refused(where: int, bytes_in: bytes, how: int):
    """A .pdmodel cut, overwritten, grown or with bytes inserted anywhere: read, it gives the file's tensors in
    the order of the names it holds (printable ones: a name changed in place is another name), else it is
    refused with one ExportFormatError; nothing else is raised."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        prefix = _pdmodel(Path(tmp), OLD_IR, 2)
        program = Path(f"{prefix}.pdmodel").read_bytes()
        at = where % (len(program) + 1)
        program = {0: program[:at], 1: program[:at] + bytes_in + program[at + len(bytes_in):],
                   2: program + bytes_in, 3: program[:at] + bytes_in + program[at:]}[how]
        Path(f"{prefix}.pdmodel").write_bytes(program)
        try:
            got = read_pdiparams(prefix, 1 << 20)
        except ExportFormatError as exc:
            assert "\n" not in exc.message
            return
        assert all(name.isprintable() for name in got)
        tensors = [OLD_IR[n] for n in sorted(OLD_IR)]
        assert len(got) == len(tensors) and all(np.array_equal(got[n], t) for n, t in zip(sorted(got), tensors))


def test_the_export_check_falls_back_to_paddle_and_says_so_only_for_a_file_the_reader_refuses(tmp_path: Path):
    prefix = _export(tmp_path, {"w": np.ones((2, 2), np.float32)})
    assert export_check.read_exported(prefix, None, {}, 1 << 20)[1] == ""  # no interpreter needed
    with pytest.raises(export_check.CheckpointError, match="over the 20 bytes this process reads"):
        export_check.read_exported(prefix, None, {}, 20)  # over the limit: not read here (paddle would read it)
    Path(f"{prefix}.pdiparams").write_bytes(GOOD[:-1])
    with pytest.raises(export_check.CheckpointError, match="^no interpreter to read the export with: .*truncated|runs past"):
        export_check.read_exported(prefix, None, {}, 1 << 20)


_GENERATE = """
import sys, paddle
class M(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w32 = self.create_parameter([3, 4], dtype="float32")
        self.w16 = self.create_parameter([4, 2], dtype="float16")
        self.wbf = self.create_parameter([5], dtype="bfloat16")
        self.w64 = self.create_parameter([2, 3], dtype="float64")
        self.register_buffer("steps", paddle.to_tensor([[1, 2, 3]], dtype="int64"), persistable=True)
        self.register_buffer("flags", paddle.to_tensor([1, 0, 1], dtype="int32"), persistable=True)
        self.register_buffer("scalar", paddle.to_tensor(7.5, dtype="float32"), persistable=True)
    def forward(self, x):
        y = paddle.matmul(x, self.w32).sum() + self.w16.astype("float32").sum() + self.wbf.astype("float32").sum()
        return y + self.w64.astype("float32").sum() + self.steps.astype("float32").sum() + self.scalar \\
            + self.flags.astype("float32").sum()
paddle.jit.save(M(), sys.argv[1], input_spec=[paddle.static.InputSpec([None, 3], "float32", "x")])
"""


@pytest.mark.paddle
def test_numpy_reads_what_paddle_reads_from_real_exports(tmp_path: Path, sample_lite_run: Path):
    """paddle.jit.save's own files: the sample chain's BERT export and a tiny model of several dtypes."""
    env = dict(os.environ, GLOG_minloglevel="3")
    (tmp_path / "tiny.py").write_text(_GENERATE)  # a file: dy2static reads forward's source
    subprocess.run([sys.executable, str(tmp_path / "tiny.py"), str(tmp_path / "tiny/inference")], env=env, check=True,
                   capture_output=True, timeout=300)
    bert = sorted(sample_lite_run.rglob("norm_train*/inference.pdiparams"))[0].with_suffix("")
    for prefix in (tmp_path / "tiny/inference", bert):
        ours = read_pdiparams(prefix, 1 << 30)
        paddles = export_check.read_export(prefix, sys.executable, env)
        assert sorted(ours) == sorted(paddles) and len(ours) >= 7
        for name, array in paddles.items():
            if array.dtype == np.uint16:  # bfloat16: paddle gives its raw words, tipcgen the float32 they are the top of
                assert ours[name].dtype == np.float32 and np.array_equal(ours[name].view(np.uint32) >> 16, array)
            else:
                assert ours[name].dtype == array.dtype and ours[name].shape == array.shape
                assert np.array_equal(ours[name], array)
    assert {str(a.dtype) for a in read_pdiparams(tmp_path / "tiny/inference", 1 << 20).values()} == {
        "float32", "float16", "float64", "int64", "int32"}


_OLD_IR = """
import sys, paddle
model = paddle.nn.Sequential(paddle.nn.Linear(3, 4), paddle.nn.BatchNorm1D(4), paddle.nn.ReLU(), paddle.nn.Linear(4, 2))
model.eval()
static = paddle.jit.to_static(model, input_spec=[paddle.static.InputSpec([None, 3], "float32", "x")])
paddle.jit.save(static, sys.argv[1])
"""


@pytest.mark.paddle
def test_numpy_reads_what_paddle_reads_from_a_real_old_ir_export(tmp_path: Path):
    """paddle.jit.save with the old IR (FLAGS_enable_pir_api=0: a .pdmodel program, as older repositories and
    the imgcls test project export): its parameters and the batch norm's running statistics, read with numpy."""
    env = dict(os.environ, GLOG_minloglevel="3", FLAGS_enable_pir_api="0")
    (tmp_path / "old.py").write_text(_OLD_IR)
    subprocess.run([sys.executable, str(tmp_path / "old.py"), str(tmp_path / "old/inference")], env=env, check=True,
                   capture_output=True, timeout=300)
    prefix = tmp_path / "old/inference"
    assert Path(f"{prefix}.pdmodel").is_file() and not Path(f"{prefix}.json").is_file()
    ours, why = export_check.read_exported(prefix, None, {}, 1 << 30)  # no interpreter: numpy or nothing
    paddles = export_check.read_export(prefix, sys.executable, env)
    assert why == "" and sorted(ours) == sorted(paddles) and len(ours) == 8  # 2 x (w, b), bn: w, b, mean, variance
    assert all(ours[name].dtype == a.dtype and np.array_equal(ours[name], a) for name, a in paddles.items())
