"""The done-when grid of issue 13 for a test project (docs/CHAINS.md, "The grid"): the four modes on CPU,
each inference model with passed fixed-input checks, the paddle2onnx chain, and a perturbed weight
failing the golden check naming the output. One repository, the chains in sequence (CI time)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import chain_env, tipcgen

MODES = ("lite_train_lite_infer", "lite_train_whole_infer", "whole_train_whole_infer", "whole_infer")
WHOLE = {"lite_train_whole_infer", "whole_train_whole_infer", "whole_infer"}
# One float of a checkpoint moved by 0.5: the last float parameter's first value (paddle.save format).
PERTURB = """import sys, numpy as np, paddle
state = paddle.load(sys.argv[1])
name = [k for k, v in state.items() if 'float' in str(v.dtype)][-1]
value = np.array(state[name]); value.flat[0] += 0.5
state[name] = paddle.to_tensor(value)
paddle.save(state, sys.argv[1])
print(name)
"""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def pdiparams_tensors(data: bytes) -> list[tuple[int, int, list[int]]]:
    """(offset of the raw data, dtype code, dims) of each tensor of a .pdiparams file (Paddle's
    save_combine stream: version, LoD, version, TensorDesc protobuf, raw data)."""
    import struct

    tensors, pos = [], 0
    while pos < len(data):
        (lod_levels,) = struct.unpack_from("<Q", data, pos + 4)
        pos += 12
        for _ in range(lod_levels):
            (size,) = struct.unpack_from("<Q", data, pos)
            pos += 8 + size
        (desc_size,) = struct.unpack_from("<i", data, pos + 4)
        desc, pos = data[pos + 8:pos + 8 + desc_size], pos + 8 + desc_size
        dtype, dims, i = 0, [], 0
        while i < len(desc):
            tag, i = _varint(desc, i)
            if tag == 0x08:
                dtype, i = _varint(desc, i)
            elif tag == 0x10:
                dim, i = _varint(desc, i)
                dims.append(dim)
            elif tag == 0x12:  # packed dims
                length, i = _varint(desc, i)
                stop = i + length
                while i < stop:
                    dim, i = _varint(desc, i)
                    dims.append(dim)
            else:
                raise ValueError(f"unexpected TensorDesc field {tag}")
        itemsize = {5: 4, 6: 8, 3: 8, 2: 4, 4: 2}[dtype]  # FP32, FP64, INT64, INT32, FP16
        numel = 1
        for dim in dims:
            numel *= dim
        tensors.append((pos, dtype, dims))
        pos += numel * itemsize
    return tensors


def perturb_bias(params: Path) -> None:
    """Add 0.5 to one float of a .pdiparams file: the first value of its last 1-D float32 tensor (a bias,
    so the change reaches the outputs whatever the activations)."""
    import numpy as np

    data = bytearray(params.read_bytes())
    offset = [off for off, dtype, dims in pdiparams_tensors(bytes(data)) if dtype == 5 and len(dims) == 1][-1]
    value = np.frombuffer(bytes(data[offset:offset + 4]), dtype="<f4")[0] + np.float32(0.5)
    data[offset:offset + 4] = np.array([value], dtype="<f4").tobytes()
    params.write_bytes(bytes(data))


def summary(repo: Path, model: str, run: str) -> dict:
    return json.loads((repo / "test_tipc/output" / model / run / "summary.json").read_text())


def run_chain(repo: Path, *args: str, env: dict | None = None) -> str:
    """`tipcgen run ARGS --quiet` that must pass; returns its stdout."""
    proc = tipcgen("run", *args, "--quiet", cwd=repo, env=env)
    assert proc.returncode == 0, f"tipcgen run {' '.join(args)}\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
    return proc.stdout


def assert_checked(repo: Path, model: str, run: str, outputs: set[str], env_note: str = "", compared: int = 1) -> list[dict]:
    """Every step passed or was skipped with a reason, and every fixed-input check compared at least
    `compared` configurations (mkldnn on, or ONNX Runtime) with the reference, output by output (the
    tutorial layout lists one CPU configuration: its basic chain's check records the outputs only)."""
    steps = summary(repo, model, run)["steps"]
    assert all(s["status"] in ("passed", "skipped") for s in steps), (run, steps)
    checks = [s for s in steps if "fixed_inputs" in s["name"]]
    assert checks and all(s["status"] == "passed" and s["check"]["logs"] >= compared
                          and set(s["check"]["outputs"]) == outputs for s in checks), (run, checks)
    if env_note:
        assert all(env_note in s["note"] for s in steps if s["kind"] in ("export", "infer") and s["status"] == "passed")
    return steps


def run_grid(repo: Path, model: str, outputs: set[str], whole: Path, env: dict | None = None,
             env_note: str = "", compared: int = 1, whole_infer_data: bool = True) -> dict[str, str]:
    """All four modes, then the paddle2onnx chain; returns each run's stdout. whole_infer_data: the project's
    inference data is a file of its own (lite_train_whole_infer takes it from the whole data set)."""
    out = {}
    for mode in MODES:
        extra = ("--data-dir", str(whole)) if mode in WHOLE else ()
        out[mode] = run_chain(repo, "--mode", mode, *extra, env=env)
        assert "\nPASSED: " in out[mode], out[mode][-1500:]  # not "PASSED (results not checked)"
        assert_checked(repo, model, mode, outputs, env_note, compared)
        prepared = (repo / "test_tipc/output" / model / mode / "prepare.log").read_text()
        if mode == "whole_train_whole_infer":  # trained on the whole data, never silently on the lite data
            assert f" -> {whole}/" in prepared and "(whole data" in prepared and "(lite data" not in prepared, prepared
        elif mode == "lite_train_whole_infer":  # trained on the lite data; inference data, if its own, whole
            assert "(lite data" in prepared, prepared
            assert not whole_infer_data or f" -> {whole}/" in prepared, prepared
    out["paddle2onnx"] = run_chain(repo, "--chain", "paddle2onnx", "--mode", MODES[0], env=env)
    steps = assert_checked(repo, model, f"paddle2onnx/{MODES[0]}", outputs, env_note)
    onnx = next(s for s in steps if s["name"] == "onnx_fixed_inputs_cpu")
    assert "onnxruntime_cpu" in onnx["check"]["latency_ms"] and set(onnx["check"]["max_abs"]) == outputs
    return out


def perturbed_weight_fails(repo: Path, model: str, descriptor: str, checkpoint: Path, whole: Path,
                           env: dict | None = None) -> str:
    """Golden results of whole_infer from its passing run; one float of the checkpoint it exports (or of the
    exported .pdiparams it reads) moved; whole_infer again must fail its golden check. Returns its stdout."""
    tipcgen("golden", descriptor, "--mode", "whole_infer", cwd=repo, check=True)
    golden = next((repo / "test_tipc/results").glob(f"python_{model}_whole_infer_gpus_-1*_fixed_results_fp32.txt"))
    same = subprocess.run([sys.executable, "test_tipc/compare_results.py", f"--gt_file={golden}",  # the check can pass
                           f"--log_file=test_tipc/output/{model}/whole_infer/fixed_inputs_gpus_-1_model_1/*_results.txt"],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert same.returncode == 0, same.stdout + same.stderr
    if checkpoint.suffix == ".pdiparams":  # an exported model that whole_infer reads as it is (infer_export: null)
        perturb_bias(checkpoint)
    else:
        subprocess.run([sys.executable, "-c", PERTURB, str(checkpoint)], cwd=repo, env=chain_env(**(env or {})),
                       check=True, capture_output=True, text=True, timeout=120)
    proc = tipcgen("run", "--mode", "whole_infer", "--data-dir", str(whole), "--quiet", cwd=repo, env=env)
    assert proc.returncode == 1, proc.stdout[-3000:]
    steps = {s["name"]: s["status"] for s in summary(repo, model, "whole_infer")["steps"]}
    assert steps["fixed_inputs_gpus_-1_model_1"] == "passed", steps  # every configuration agrees with the model
    assert steps["golden_fixed_inputs_gpus_-1_model_1"] == "failed", steps  # which is no longer the recorded one
    assert "\nFAILED: " in proc.stdout
    return proc.stdout
