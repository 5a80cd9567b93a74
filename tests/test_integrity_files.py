"""Data files are data: a reprod_log file never runs code or allocates past a limit (issue 12).

Each hostile file is written byte by byte (pickle opcodes after an .npy header), read through
`tipcgen.repro.align.load_info` and, for a few, through the real CLI: refused with one message, exit 2,
no traceback, and the marker file its payload would create never appears. Real reprod_log files
still load.
"""
from __future__ import annotations

import importlib.util
import io
import os
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import tipcgen
from tipcgen.repro import align

LOGITS = np.arange(8, dtype="float32").reshape(4, 2) / 7


# ---------------------------------------------------------------- a tiny pickle assembler

def _text(value: str) -> bytes:
    data = value.encode()
    return b"X" + struct.pack("<I", len(data)) + data  # BINUNICODE


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"  # GLOBAL


def _stack_global(module: str, name: str) -> bytes:
    return _text(module) + _text(name) + b"\x93"  # STACK_GLOBAL


def _call(*args: bytes) -> bytes:
    """REDUCE the callable on the stack with these already-encoded arguments."""
    return b"(" + b"".join(args) + b"tR"  # MARK ... TUPLE REDUCE


def _int(value: int) -> bytes:
    return b"\x8a" + bytes([8]) + value.to_bytes(8, "little", signed=True)  # LONG1


def npy_with_pickle(path: Path, program: bytes) -> Path:
    """An .npy whose header says 'a pickled object', followed by this pickle program (protocol 4)."""
    handle = io.BytesIO()
    np.lib.format.write_array_header_1_0(handle, {"descr": "|O", "fortran_order": False, "shape": ()})
    path.write_bytes(handle.getvalue() + b"\x80\x04" + program + b".")
    return path


def _payloads(marker: Path) -> dict[str, bytes]:
    shell = f"touch '{marker}'"
    code = f"__import__('os').system({shell!r}) or {{'logits': 1.0}}"
    return {
        "GLOBAL numpy.dtypes.__builtins__.get -> eval":
            _global("numpy.dtypes", "__builtins__.get") + _call(_text("eval")) + _call(_text(code)),
        "STACK_GLOBAL numpy.dtypes.__builtins__.get -> eval":
            _stack_global("numpy.dtypes", "__builtins__.get") + _call(_text("eval")) + _call(_text(code)),
        "GLOBAL numpy.dtypes.__loader__.get_data":
            _global("numpy.dtypes", "__loader__.get_data") + _call(_text("/etc/hostname")),
        "STACK_GLOBAL numpy.dtypes._add_dtype_helper.__globals__":
            _stack_global("numpy.dtypes", "_add_dtype_helper.__globals__"),
        "GLOBAL numpy.dtypes._add_dtype_helper":
            _global("numpy.dtypes", "_add_dtype_helper"),
        "GLOBAL os.system": _global("os", "system") + _call(_text(shell)),
        "STACK_GLOBAL posix.system": _stack_global("posix", "system") + _call(_text(shell)),
        "GLOBAL builtins.eval": _global("builtins", "eval") + _call(_text(code)),
        "STACK_GLOBAL builtins.eval": _stack_global("builtins", "eval") + _call(_text(code)),
        "STACK_GLOBAL numpy.Float32DType.__init__.__globals__":
            _stack_global("numpy.dtypes", "Float32DType.__init__.__globals__"),
        "GLOBAL numpy.core.multiarray._reconstruct.__globals__":
            _global("numpy.core.multiarray", "_reconstruct.__globals__"),
        "GLOBAL numpy.load (allow_pickle)": _global("numpy", "load") + _call(_text("/etc/hostname")),
    }


def _allocations() -> dict[str, bytes]:
    """Files of a few hundred bytes that ask for gigabytes."""
    f8 = _global("numpy", "dtype") + _call(_text("f8"), b"\x89\x88")
    return {
        "bytearray of 16 GiB": _global("builtins", "bytearray") + _call(_int(16 << 30)),
        "BINBYTES8 declaring 16 GiB": b"\x8e" + struct.pack("<Q", 16 << 30) + b"tiny",
        "memo index 2**31": _text("x") + b"r" + struct.pack("<I", 1 << 31),
        "ndarray((2**36,)) called directly": _global("numpy", "ndarray") + _call(b"(" + _int(1 << 36) + b"t"),
        "_reconstruct of shape (2**36,)":
            _global("numpy._core.multiarray", "_reconstruct")
            + _call(_global("numpy", "ndarray"), b"(" + _int(1 << 36) + b"t", b"C\x01b"),
        "array state declaring 8 TiB":
            _global("numpy._core.multiarray", "_reconstruct")
            + _call(_global("numpy", "ndarray"), b"(K\x00t", b"C\x01b")
            + b"(K\x01" + b"(" + _int(1 << 20) + _int(1 << 20) + b"t" + f8 + b"\x89C\x00tb",
        "object array of 2**30 items":
            _global("numpy._core.multiarray", "_reconstruct")
            + _call(_global("numpy", "ndarray"), b"(K\x00t", b"C\x01b")
            + b"(K\x01" + b"(" + _int(1 << 30) + b"t" + _global("numpy", "dtype") + _call(_text("O8"), b"\x89\x88")
            + b"\x89]tb",
    }


_NOT_ARRAY_DICTS = {
    "state set on a numpy function": _global("numpy._core.multiarray", "_reconstruct") + b"}b",
    "a dict that contains itself": b"}\x94" + _text("a") + b"h\x00s",
    "a key of 2000 characters": b"}" + _text("k" * 2000) + b"G" + struct.pack(">d", 1.0) + b"s",
    "a list value": b"}" + _text("a") + b"]s",
    "a key with an ANSI escape": b"}" + _text("\x1b]0;pwned\x07logits") + b"G" + struct.pack(">d", 1.0) + b"s",
    "a dtype with fields": _global("numpy._core.multiarray", "scalar")
    + _call(_global("numpy", "dtype") + _call(_text("V8"), b"\x89\x88"), b"C\x08" + bytes(8)),
}


@pytest.mark.parametrize("name", sorted(_NOT_ARRAY_DICTS))
def test_a_pickle_that_is_not_a_dict_of_arrays_is_refused(tmp_path: Path, name: str):
    path = npy_with_pickle(tmp_path / "forward_torch.npy", _NOT_ARRAY_DICTS[name])
    with pytest.raises(align.AlignFileError, match="refused"):
        align.load_info(path)


@pytest.mark.parametrize("name", sorted(_payloads(Path("m"))))
def test_a_pickle_that_names_code_is_refused_and_runs_nothing(tmp_path: Path, name: str):
    marker = tmp_path / "pwned"
    path = npy_with_pickle(tmp_path / "forward_torch.npy", _payloads(marker)[name])
    with pytest.raises(align.AlignFileError) as caught:
        align.load_info(path)
    assert "refusing to load" in str(caught.value) and str(path) in str(caught.value)
    assert not marker.exists()


@pytest.mark.parametrize("name", sorted(_allocations()))
def test_a_small_file_asking_for_gigabytes_is_refused(tmp_path: Path, name: str):
    path = npy_with_pickle(tmp_path / "forward_torch.npy", _allocations()[name])
    assert path.stat().st_size < 400
    with pytest.raises(align.AlignFileError) as caught:
        align.load_info(path)
    assert str(path) in str(caught.value) and "Traceback" not in str(caught.value)


def _zip_bomb(path: Path, mebibytes: int) -> Path:
    """An .npz whose one member is a valid .npy of zeros, deflated to a few kilobytes."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (mebibytes << 17,)})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("logits.npy", "w", force_zip64=True) as handle:
            handle.write(member.getvalue())
            for _ in range(mebibytes):
                handle.write(bytes(1 << 20))
    return path


def test_an_npz_is_checked_member_by_member_before_reading(tmp_path: Path):
    bomb = _zip_bomb(tmp_path / "bomb.npz", 16)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(align.AlignFileError, match="expand to 16777.* bytes, over the limit of 1 MiB"):
        align.load_info(bomb, max_bytes=1 << 20)
    assert align.load_info(bomb, max_bytes=32 << 20)["logits"].shape == (2 << 20,)
    # a member that declares 4 GiB uncompressed (the central directory says so): refused unread
    raw = bytearray(bomb.read_bytes())
    central = raw.rindex(b"PK\x01\x02")
    raw[central + 24: central + 28] = struct.pack("<I", 0xFFFFFFF0)
    (tmp_path / "declared.npz").write_bytes(bytes(raw))
    with pytest.raises(align.AlignFileError, match="over the limit of 1024 MiB"):
        align.load_info(tmp_path / "declared.npz")
    # a header that declares more data than the member holds
    small = io.BytesIO()
    np.lib.format.write_array_header_1_0(small, {"descr": "<f8", "fortran_order": False, "shape": (1 << 40,)})
    with zipfile.ZipFile(tmp_path / "liar.npz", "w") as archive:
        archive.writestr("logits.npy", small.getvalue() + bytes(64))
    with pytest.raises(align.AlignFileError, match="over the limit"):
        align.load_info(tmp_path / "liar.npz")
    with zipfile.ZipFile(tmp_path / "pickled.npz", "w") as archive:
        archive.writestr("x.npy", _object_npy())
    with pytest.raises(align.AlignFileError, match="not plain numbers"):
        align.load_info(tmp_path / "pickled.npz")


def _object_npy() -> bytes:
    handle = io.BytesIO()
    np.save(handle, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return handle.getvalue()


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path):
    path = align.save_info(tmp_path / "forward_paddle.npy", {"logits": np.zeros(1000)})
    with pytest.raises(align.AlignFileError, match="over the limit of 0.00390625 MiB"):
        align.load_info(path, max_bytes=4096)
    assert align.load_info(path, max_bytes=16384)["logits"].shape == (1000,)


def test_the_cli_refuses_hostile_files_with_exit_2(tmp_path: Path):
    marker = tmp_path / "pwned"
    good = align.save_info(tmp_path / "forward_paddle.npy", {"logits": LOGITS})
    payloads = _payloads(marker)
    cases = [
        npy_with_pickle(tmp_path / "a_torch.npy", payloads["GLOBAL numpy.dtypes.__builtins__.get -> eval"]),
        npy_with_pickle(tmp_path / "b_torch.npy", payloads["STACK_GLOBAL builtins.eval"]),
        npy_with_pickle(tmp_path / "c_torch.npy", _allocations()["bytearray of 16 GiB"]),
    ]
    bomb = _zip_bomb(tmp_path / "bomb.npz", 16)
    outcomes = [tipcgen("align", "compare", str(path), str(good)) for path in cases]
    outcomes.append(tipcgen("align", "compare", str(bomb), str(good), "--max-bytes", str(1 << 20)))
    for path, outcome in zip(cases, outcomes):
        err = outcome.stderr
        assert outcome.returncode == 2 and err.startswith(f"error: {path}: refused") and "Traceback" not in err, outcome
        assert len(err.splitlines()) == 2 and outcome.stdout == ""
    assert outcomes[3].returncode == 2 and "over the limit of 1 MiB" in outcomes[3].stderr
    assert not marker.exists()


@pytest.mark.parametrize("threshold", ["inf", "nan", "-1e-6", "-inf"])
def test_a_threshold_must_be_finite_and_not_negative(tmp_path: Path, threshold: str):
    from typer.testing import CliRunner

    from tipcgen.cli.align import align_app

    ref = align.save_info(tmp_path / "x_torch.npy", {"logits": LOGITS})
    pd = align.save_info(tmp_path / "x_paddle.npy", {"logits": LOGITS + 1000})
    result = CliRunner().invoke(align_app, ["compare", str(ref), str(pd), "--threshold", threshold])
    assert isinstance(result.exception, align.TipcgenError), result.output
    assert "a threshold must be a finite number >= 0" in str(result.exception)
    if threshold == "inf":  # once through the real CLI: exit 2, not a PASS
        proc = tipcgen("align", "compare", str(ref), str(pd), "--threshold", threshold)
        assert proc.returncode == 2 and "finite number" in proc.stderr and "passed" not in proc.stdout


# ---------------------------------------------------------------- real files still load

def _reprod_logger():
    """reprod_log 1.0.1's ReprodLogger, loaded alone (its package imports paddle; this file only numpy)."""
    spec = importlib.util.find_spec("reprod_log")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("reprod_log is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "ReprodLogger.py"
    module_spec = importlib.util.spec_from_file_location("_reprod_logger_alone", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.ReprodLogger


def test_files_written_by_reprod_log_and_numpy_still_load(tmp_path: Path):
    logger = _reprod_logger()()
    values = {"logits": LOGITS, "loss": np.array(0.6931, dtype="float32"), "step": np.array(3),
              "mask": np.array([True, False]), "ids": np.arange(6, dtype="int64").reshape(2, 3).T,
              "half": np.ones(3, dtype="float16"), "big_endian": np.arange(3, dtype=">f4")}
    for key, value in values.items():
        logger.add(key, value)
    logger.save(str(tmp_path / "forward_paddle.npy"))
    loaded = align.load_info(tmp_path / "forward_paddle.npy")
    assert list(loaded) == list(values)
    for key, value in values.items():
        assert np.array_equal(loaded[key], value) and loaded[key].dtype == value.dtype, key
    assert loaded["ids"].flags.f_contiguous or loaded["ids"].shape == (3, 2)
    for protocol in (2, 3, 4, 5):  # np.save writes 3; other writers pickle the same dict other ways
        holder = np.empty((), dtype=object)
        holder[()] = {"a": {"b": LOGITS}, "s": np.float32(1.5), "n": 2, "f": 0.5}
        handle = io.BytesIO()
        np.lib.format.write_array_header_1_0(handle, {"descr": "|O", "fortran_order": False, "shape": ()})
        (tmp_path / f"p{protocol}.npy").write_bytes(handle.getvalue() + pickle.dumps(holder, protocol=protocol))
        if protocol == 2:  # protocol 2 encodes bytes with _codecs.encode: never written by np.save
            with pytest.raises(align.AlignFileError, match="refusing to load _codecs.encode"):
                align.load_info(tmp_path / "p2.npy")
            continue
        loaded = align.load_info(tmp_path / f"p{protocol}.npy")
        assert np.array_equal(loaded["a"]["b"], LOGITS) and loaded["s"] == np.float32(1.5) and loaded["n"] == 2


def test_align_report_fails_the_row_of_a_refused_file_and_runs_nothing(tmp_path: Path):
    from tipcgen.repro import align_report

    marker = tmp_path / "pwned"
    folder = tmp_path / "align"
    folder.mkdir()
    npy_with_pickle(folder / "forward_torch.npy", _payloads(marker)["STACK_GLOBAL numpy.dtypes.__builtins__.get -> eval"])
    align.save_info(folder / "forward_paddle.npy", {"logits": LOGITS})
    align.save_info(folder / "loss_torch.npy", {"loss": LOGITS})
    align.save_info(folder / "loss_paddle.npy", {"loss": LOGITS + np.float32(1e-8)})
    result = align_report.build_report(folder, align_report.resolve_thresholds(), tmp_path)
    rows = {row.checkpoint: row for row in result.rows}
    assert rows["forward"].status == "fail" and "refusing to load numpy.dtypes.__builtins__.get" in rows["forward"].detail
    assert rows["loss"].status == "pass" and not result.passed and not marker.exists()


def test_a_fifo_or_a_folder_is_refused_without_blocking(tmp_path: Path):
    fifo = tmp_path / "forward_torch.npy"
    os.mkfifo(fifo)
    with pytest.raises(align.AlignFileError, match="not a regular file"):
        align.load_info(fifo)
    with pytest.raises(align.AlignFileError, match="not a regular file"):
        align.load_info(tmp_path)
    with zipfile.ZipFile(tmp_path / "both.npz", "w") as archive:
        for name in ("a/b.npy", "a.npy"):
            handle = io.BytesIO()
            np.save(handle, LOGITS)
            archive.writestr(name, handle.getvalue())
    with pytest.raises(align.AlignFileError, match="both an array and a folder"):
        align.load_info(tmp_path / "both.npz")
