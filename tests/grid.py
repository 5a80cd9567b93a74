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


def summary(repo: Path, model: str, run: str) -> dict:
    return json.loads((repo / "test_tipc/output" / model / run / "summary.json").read_text())


def run_chain(repo: Path, *args: str, env: dict | None = None) -> str:
    """`tipcgen run ARGS --quiet` that must pass; returns its stdout."""
    proc = tipcgen("run", *args, "--quiet", cwd=repo, env=env)
    assert proc.returncode == 0, f"tipcgen run {' '.join(args)}\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
    return proc.stdout


def assert_checked(repo: Path, model: str, run: str, outputs: set[str], env_note: str = "") -> list[dict]:
    """Every step passed or was skipped with a reason, and every fixed-input check compared at least
    one configuration (mkldnn on, or ONNX Runtime) with the reference, output by output."""
    steps = summary(repo, model, run)["steps"]
    assert all(s["status"] in ("passed", "skipped") for s in steps), (run, steps)
    checks = [s for s in steps if "fixed_inputs" in s["name"]]
    assert checks and all(s["status"] == "passed" and s["check"]["logs"] >= 1 and set(s["check"]["max_abs"]) == outputs
                          for s in checks), (run, checks)  # at least one configuration compared with the reference
    if env_note:
        assert all(env_note in s["note"] for s in steps if s["kind"] in ("export", "infer") and s["status"] == "passed")
    return steps


def run_grid(repo: Path, model: str, outputs: set[str], whole: Path, env: dict | None = None,
             env_note: str = "") -> dict[str, str]:
    """All four modes, then the paddle2onnx chain; returns each run's stdout."""
    out = {}
    for mode in MODES:
        extra = ("--data-dir", str(whole)) if mode in WHOLE else ()
        out[mode] = run_chain(repo, "--mode", mode, *extra, env=env)
        assert "\nPASSED: " in out[mode], out[mode][-1500:]  # not "PASSED (results not checked)"
        assert_checked(repo, model, mode, outputs, env_note)
    out["paddle2onnx"] = run_chain(repo, "--chain", "paddle2onnx", "--mode", MODES[0], env=env)
    steps = assert_checked(repo, model, f"paddle2onnx/{MODES[0]}", outputs, env_note)
    onnx = next(s for s in steps if s["name"] == "onnx_fixed_inputs_cpu")
    assert "onnxruntime_cpu" in onnx["check"]["latency_ms"]
    return out


def perturbed_weight_fails(repo: Path, model: str, descriptor: str, checkpoint: Path, whole: Path,
                           env: dict | None = None) -> str:
    """Golden results of whole_infer from its passing run; one float of the checkpoint it exports moved;
    whole_infer again must fail its golden check. Returns the failing run's stdout."""
    tipcgen("golden", descriptor, "--mode", "whole_infer", cwd=repo, check=True)
    subprocess.run([sys.executable, "-c", PERTURB, str(checkpoint)], cwd=repo, env=chain_env(**(env or {})),
                   check=True, capture_output=True, text=True, timeout=120)
    proc = tipcgen("run", "--mode", "whole_infer", "--data-dir", str(whole), "--quiet", cwd=repo, env=env)
    assert proc.returncode == 1, proc.stdout[-3000:]
    steps = {s["name"]: s["status"] for s in summary(repo, model, "whole_infer")["steps"]}
    assert steps["fixed_inputs_gpus_-1_model_1"] == "passed", steps  # every configuration agrees with the model
    assert steps["golden_fixed_inputs_gpus_-1_model_1"] == "failed", steps  # which is no longer the recorded one
    assert "\nFAILED: " in proc.stdout
    return proc.stdout
