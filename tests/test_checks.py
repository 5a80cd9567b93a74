"""The generated compare_results.py: names, then shapes and dtypes, then values; every failure
collected; NaN, Inf, missing results and outputs fail with a clear message. Real files, real process."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytest.importorskip("numpy")
COMPARE = ROOT / "test_tipc" / "compare_results.py"


def write(path: Path, results: dict) -> Path:
    path.write_text("".join(f"{name}\t{json.dumps(value)}\n" for name, value in results.items()))
    return path


def compare(gt: Path, log: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(COMPARE), f"--gt_file={gt}", f"--log_file={log}", *extra],
                          capture_output=True, text=True)


GT = {"sst2_0": {"label": 1, "logits": [-0.5, 0.5]}, "sst2_1": {"label": 0, "logits": [0.25, -0.25]}}


def check_line(out: str) -> dict:
    return json.loads(next(line for line in out.splitlines() if line.startswith(":::TIPC_CHECK "))[14:])


def test_equal_results_pass_and_report_the_differences(tmp_path: Path):
    log = tmp_path / "python_infer_cpu_precision_fp32_batchsize_1.log"
    log.write_text("noise line\n" + "".join(f"{k}\t{json.dumps(v)}\n" for k, v in GT.items()) + "accuracy: 1\n")
    actual = {**GT, "sst2_1": {"label": 0, "logits": [0.25 + 4e-6, -0.25]}}
    write(log, actual)
    proc = compare(write(tmp_path / "gt.txt", GT), log, "--atol=1e-5", "--rtol=0", f"--diff_log={tmp_path / 'diff.log'}")
    assert proc.returncode == 0, proc.stdout
    result = check_line(proc.stdout)
    assert result["passed"] and abs(result["max_abs"]["logits"] - 4e-6) < 1e-9
    diff_log = (tmp_path / "diff.log").read_text().splitlines()
    assert diff_log[0].endswith("root INFO: label: ") and "\tmax diff: check passed: True" in diff_log[1]
    assert diff_log[-1].endswith("diff check passed")


@pytest.mark.parametrize("actual, words", [
    ({**GT, "sst2_1": {"label": 0, "logits": [0.26, -0.25]}}, "output 'logits' differs by up to 1.000e-02"),
    ({**GT, "sst2_1": {"label": 0, "logits": [float("nan"), -0.25]}}, "output 'logits' holds NaN or Inf"),
    ({**GT, "sst2_1": {"label": 0, "logits": [float("inf"), -0.25]}}, "output 'logits' holds NaN or Inf"),
    ({**GT, "sst2_1": {"label": 0, "logits": [[0.25, -0.25]]}}, "output 'logits' has shape (1, 2), expected (2,)"),
    ({**GT, "sst2_1": {"label": 0, "logits": [0.25]}}, "output 'logits' has shape (1,), expected (2,)"),
    ({**GT, "sst2_1": {"label": 0.0, "logits": [0.25, -0.25]}}, "output 'label' has dtype float64, expected int64"),
    ({**GT, "sst2_1": {"label": 0}}, "output 'logits' is missing"),
    ({"sst2_0": GT["sst2_0"]}, "result sst2_1 is missing"),
    ({**GT, "sst2_1": {"label": 1, "logits": [0.25, -0.25]}}, "output 'label' differs by up to 1.000e+00"),
])
def test_each_fault_fails_with_its_reason(tmp_path: Path, actual, words):
    log = tmp_path / "result.log"
    # json.dumps writes NaN/Infinity, which json.loads reads back: the guard must catch them.
    log.write_text("".join(f"{k}\t{json.dumps(v)}\n" for k, v in actual.items()))
    proc = compare(write(tmp_path / "gt.txt", GT), log, "--atol=1e-5", "--rtol=1e-5")
    assert proc.returncode == 1, proc.stdout
    assert words in proc.stdout, proc.stdout
    assert "inconsistent" in proc.stdout and not check_line(proc.stdout)["passed"]


def test_every_failure_is_collected_before_the_verdict(tmp_path: Path):
    actual = {"sst2_0": {"label": 1, "logits": [float("nan"), 0.5]}, "sst2_1": {"label": 0, "logits": [9.0, -0.25]}}
    log = tmp_path / "r.log"
    log.write_text("".join(f"{k}\t{json.dumps(v)}\n" for k, v in actual.items()))
    proc = compare(write(tmp_path / "gt.txt", GT), log)
    assert proc.returncode == 1 and proc.stdout.count("FAIL ") == 2


def test_precision_buckets(tmp_path: Path):
    write(tmp_path / "python_m_results_fp32.txt", GT)
    fp16 = write(tmp_path / "python_infer_gpu_precision_fp16_batchsize_1.log", GT)
    fp32 = write(tmp_path / "python_infer_cpu_precision_fp32_batchsize_1.log", GT)
    proc = compare(tmp_path / "python_m_results_*.txt", tmp_path / "python_infer_*.log")
    assert proc.returncode == 0 and "no fp16 ground truth" in proc.stdout and check_line(proc.stdout)["logs"] == 1
    proc = compare(tmp_path / "python_m_results_*.txt", fp16)
    assert proc.returncode == 1 and "nothing was compared" in proc.stdout
    assert fp32.exists()


def test_bad_arguments_exit_2(tmp_path: Path):
    proc = compare(tmp_path / "none*.txt", tmp_path / "x.log")
    assert proc.returncode == 2 and "no ground-truth file matches" in proc.stderr


@pytest.mark.parametrize("check, verdict", [
    ({"passed": True, "logs": 2}, "PASSED"),
    ({"passed": True, "logs": 0}, "PASSED (results not checked)"),  # one configuration, nothing compared
    (None, "PASSED (results not checked)"),                          # no check step at all
])
def test_a_check_that_compared_nothing_does_not_make_a_checked_verdict(check, verdict):
    from tipcgen.results.summary import Step, Summary, verdict as verdict_of

    steps = [Step("train", "norm_train", "passed"), Step("infer", "python_infer_cpu", "passed")]
    if check is not None:
        steps.append(Step.flat("check", "fixed_inputs_gpus_-1", "passed", check=check))
    summary = Summary(model="m", mode="lite_train_lite_infer", config="c.txt", steps=steps, runner_exit_code=0)
    assert verdict_of(summary) == verdict
