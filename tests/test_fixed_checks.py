"""The chain's own result check (test_tipc/check_inference.py) on a model whose scripts print nothing
tipcgen reads: two inputs, two outputs, numpy data (tests/fixtures/two_io). Real chains, real processes."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, chain_env, read_records, tipcgen

TWO_IO = ROOT / "tests" / "fixtures" / "two_io"
MODE = "lite_train_lite_infer"
TRAINED = "norm_train_gpus_-1_autocast_fp32"

pytestmark = [pytest.mark.paddle, pytest.mark.chain]


@pytest.fixture(scope="session")
def two_io_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """two_io rendered with `tipcgen init` and its basic lite chain run once per session."""
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("two_io")
    shutil.copytree(TWO_IO, repo / "two_io")
    tipcgen("init", "two_io/tipc.yaml", cwd=repo, check=True)
    proc = tipcgen("run", "--mode", MODE, "--quiet", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    return repo, proc


def _summary(repo: Path, mode: str = MODE) -> dict:
    return json.loads((repo / "test_tipc/output/two_io" / mode / "summary.json").read_text())


def test_basic_chain_checks_results_of_scripts_that_print_nothing(two_io_run):
    repo, proc = two_io_run
    records = {r["name"]: r for r in read_records(repo, "two_io", MODE)}
    assert records["fixed_inputs_gpus_-1"]["status"] == "passed"
    fixed = records["fixed_inputs_gpus_-1"]
    assert (fixed["reference"], fixed["training"], fixed["gpu"]) == ("fixed", "gpus_-1", "-1"), fixed
    # What tipcgen golden reads instead of the results files' names: each file with its place and precision.
    cases = json.loads((repo / "test_tipc/output/two_io" / MODE / "fixed_inputs_gpus_-1" / "cases.json").read_text())
    assert [(c["file"], c["place"], c["precision"]) for c in cases] == [
        ("cpu_usemkldnn_False_threads_1_precision_fp32_results.txt", "cpu", "fp32"),
        ("cpu_usemkldnn_True_threads_1_precision_fp32_results.txt", "cpu", "fp32")]
    step = next(s for s in _summary(repo)["steps"] if s["name"] == "fixed_inputs_gpus_-1")
    assert set(step["check"]["max_abs"]) == {"fetch_name_0", "fetch_name_1"}
    assert step["check"]["logs"] == 1  # mkldnn on, compared with the first CPU fp32 configuration (mkldnn off)
    latency = step["check"]["latency_ms"]
    assert set(latency) == {"cpu_usemkldnn_False_threads_1_precision_fp32", "cpu_usemkldnn_True_threads_1_precision_fp32"}
    assert all(t["mean_ms"] > 0 and t["runs"] == 5 for t in latency.values())
    log = (repo / records["fixed_inputs_gpus_-1"]["log"]).read_text()
    assert "input ids: shape [2, 4] int64" in log and "ids below 50" in log  # the embedding table's size
    assert "skipped gpu_usetrt_False_precision_fp32: needs a CUDA device" in log
    assert "\nPASSED: " in proc.stdout, proc.stdout[-1500:]  # not "PASSED (results not checked)"


def test_report_shows_latency_per_configuration(two_io_run, tmp_path: Path):
    repo, _ = two_io_run
    tipcgen("report", f"test_tipc/output/two_io/{MODE}", "--format", "md", "--output", str(tmp_path), cwd=repo, check=True)
    text = next(tmp_path.glob("*.md")).read_text()
    assert "Latency per configuration" in text
    assert "| `fixed_inputs_gpus_-1` | `cpu_usemkldnn_True_threads_1_precision_fp32` |" in text
    assert "| `fixed_inputs_gpus_-1` | PASS | fetch_name_1 |" in text
    assert "1 configuration(s) compared with cpu_usemkldnn_False_threads_1_precision_fp32" in text


def test_paddle2onnx_chain_runs_onnx_itself_and_copies_no_checkpoint(two_io_run):
    pytest.importorskip("paddle2onnx")
    pytest.importorskip("onnxruntime")
    repo, _ = two_io_run
    proc = tipcgen("run", "--chain", "paddle2onnx", "--mode", MODE, "--quiet", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    records = {r["name"]: r for r in read_records(repo, "two_io", f"paddle2onnx/{MODE}")}
    assert records["paddle2onnx_infer_cpu"]["status"] == "skipped"
    assert "takes no ONNX flag" in records["paddle2onnx_infer_cpu"]["reason"]
    assert records["onnx_fixed_inputs_cpu"]["status"] == "passed"
    assert (records["onnx_fixed_inputs_cpu"]["reference"], records["onnx_fixed_inputs_cpu"]["device"]) == ("fixed", "cpu")
    step = next(s for s in _summary(repo, f"paddle2onnx/{MODE}")["steps"] if s["name"] == "onnx_fixed_inputs_cpu")
    assert set(step["check"]["max_abs"]) == {"fetch_name_0", "fetch_name_1"}
    assert "onnxruntime_cpu" in step["check"]["latency_ms"]
    # The exported folder holds the training checkpoint too: only the .onnx file is in the ONNX folder.
    assert (repo / "test_tipc/output/two_io" / MODE / TRAINED / "model.pdparams").is_file()
    assert sorted(p.name for p in (repo / "train_data/two_io/onnx").iterdir()) == ["model.onnx"]


def test_a_perturbed_exported_weight_fails_the_golden_check_naming_the_output(two_io_run, tmp_path: Path):
    """Golden results from the passing run (`tipcgen golden`); the chain run again, in a copy, with the
    model exported with one bias moved by 0.5: every configuration still agrees with the (perturbed)
    reference, but the golden check of the chain's own results fails, naming the output."""
    repo, _ = two_io_run
    tipcgen("golden", "two_io/tipc.yaml", "--mode", MODE, cwd=repo, check=True)
    golden = repo / f"test_tipc/results/python_two_io_{MODE}_gpus_-1_fixed_results_fp32.txt"
    assert golden.is_file()
    # The check can pass: the fixed inputs are the same in every run.
    same = subprocess.run([sys.executable, "test_tipc/compare_results.py", f"--gt_file={golden}",
                           f"--log_file=test_tipc/output/two_io/{MODE}/fixed_inputs_gpus_-1/*_results.txt"],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert same.returncode == 0, same.stdout
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns("paddle2onnx"))
    proc = tipcgen("run", "--mode", MODE, "--quiet", cwd=copy, env={"TWO_IO_PERTURB": "1"})
    assert proc.returncode == 1, proc.stdout[-3000:]
    records = {r["name"]: r for r in read_records(copy, "two_io", MODE)}
    assert records["fixed_inputs_gpus_-1"]["status"] == "passed"
    assert records["golden_fixed_inputs_gpus_-1"]["status"] == "failed"
    assert records["golden_fixed_inputs_gpus_-1"]["reference"] == "golden"
    assert "output 'fetch_name_0' differs by up to" in proc.stdout
    assert "\nFAILED: " in proc.stdout


def test_named_inputs_are_fed_and_a_pickled_file_never_runs(two_io_run, tmp_path: Path):
    """checks.fixed_inputs names a .npz: its arrays are fed; an object array (pickle) is refused unread."""
    import numpy as np

    repo, _ = two_io_run
    trained = repo / "test_tipc/output/two_io" / MODE / TRAINED
    script = [sys.executable, "test_tipc/check_inference.py", f"--model_dir={trained}", "--enable_mkldnn=False|True"]
    proc = subprocess.run([*script, "--inputs=two_io/data/infer.npz"], cwd=repo, env=chain_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input ids: shape [4, 6] int64 (the arrays of two_io/data/infer.npz)" in proc.stdout
    np.savez(tmp_path / "evil.npz", ids=np.array([object()], dtype=object))
    proc = subprocess.run([*script, f"--inputs={tmp_path / 'evil.npz'}"], cwd=repo, env=chain_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "is not a readable .npz of arrays" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("value, line", [("false", "fixed_inputs:null"), ("data/x.npz", "fixed_inputs:data/x.npz")])
def test_checks_fixed_inputs_renders_into_the_config(tmp_path: Path, value: str, line: str):
    text = (TWO_IO / "tipc.yaml").read_text().replace("  golden: golden\n", f"  golden: golden\n  fixed_inputs: {value}\n")
    (tmp_path / "tipc.yaml").write_text(text)
    tipcgen("init", str(tmp_path / "tipc.yaml"), "--output", str(tmp_path / "out"), check=True)
    config = (tmp_path / "out/test_tipc/configs/two_io/train_infer_python.txt").read_text().splitlines()
    assert line in config


def test_checks_fixed_inputs_must_be_a_npz_path(tmp_path: Path):
    text = (TWO_IO / "tipc.yaml").read_text().replace("  golden: golden\n", "  golden: golden\n  fixed_inputs: 'a b.txt'\n")
    (tmp_path / "tipc.yaml").write_text(text)
    proc = tipcgen("init", str(tmp_path / "tipc.yaml"), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2 and "checks.fixed_inputs" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr and not (tmp_path / "out/test_tipc").exists()
