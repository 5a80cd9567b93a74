"""The grid of issue 13 on a model with two inputs and two outputs and numpy data (tests/fixtures/two_io), whose
scripts print nothing tipcgen reads: from `tipcgen new` with its data named by hand to the four modes and the
paddle2onnx chain passing with the chain's own result check (test_tipc/check_inference.py), and a perturbed
weight failing the golden check naming the output. Real chains, real processes, one repository per session."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, STUB, chain_env, make_stub_repo, read_records, tipcgen
from grid import perturbed_weight_fails, run_grid, summary

TWO_IO = ROOT / "tests" / "fixtures" / "two_io"
MODE = "lite_train_lite_infer"
TRAINED = "norm_train_gpus_-1_autocast_fp32"
NEW = ("new", "--model-name", "two_io", "--train", "two_io/train.py", "--eval", "two_io/eval.py",
       "--export", "two_io/export_model.py", "--infer", "two_io/infer.py", "--checkpoint", "model",
       "--train-data", "two_io/data/train.npz", "--eval-data", "two_io/data/infer.npz",
       "--infer-data", "two_io/data/infer.npz", "--devices", "cpu",
       # CI time: two CPU configurations; a GPU one, skipped with the reason on this machine
       "--value", "inference.cpu_threads=1", "--value", "inference.enable_mkldnn=[false, true]",
       "--value", "inference.use_gpu=[true, false]", "-o", "tipc.yaml")


@pytest.fixture(scope="session")
def two_io_grid(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """two_io after `tipcgen new` (plus checks: golden and output names) and `tipcgen init`, the grid run once."""
    pytest.importorskip("paddle")
    pytest.importorskip("paddle2onnx")
    pytest.importorskip("onnxruntime")
    repo = tmp_path_factory.mktemp("two_io")
    shutil.copytree(TWO_IO, repo / "two_io", ignore=shutil.ignore_patterns("__pycache__"))
    tipcgen(*NEW, cwd=repo, check=True)
    descriptor = repo / "tipc.yaml"
    descriptor.write_text(descriptor.read_text() + "\nchecks:\n  golden: golden\n  outputs: [logits, score]\n")
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    whole = repo.parent / "two_io_whole"
    whole.mkdir()
    for name, source in (("train.npz", "train.npz"), ("eval.npz", "infer.npz"), ("infer.npz", "infer.npz")):
        shutil.copy(TWO_IO / "data" / source, whole / name)
    return repo, run_grid(repo, "two_io", {"logits", "score"}, whole), whole




def test_new_descriptor_of_the_two_input_model(two_io_grid):
    repo, _, _ = two_io_grid
    text = (repo / "tipc.yaml").read_text()
    for line in ("extra: {key: --data_file, value: ./train_data/two_io/train.npz}",
                 "models: ./train_data/two_io/trained/model",
                 "  onnx_flag: null      # the script runs no ONNX model"):
        assert line in text, line
    assert "env:" not in text  # infer.py loads inference.json: no Paddle 2 format needed


def test_basic_chain_checks_results_of_scripts_that_print_nothing(two_io_grid):
    repo, out, _ = two_io_grid
    records = {r["name"]: r for r in read_records(repo, "two_io", MODE)}
    assert records["fixed_inputs_gpus_-1"]["status"] == "passed"
    fixed = records["fixed_inputs_gpus_-1"]
    assert (fixed["reference"], fixed["training"], fixed["gpu"]) == ("fixed", "gpus_-1", "-1"), fixed
    # What tipcgen golden reads instead of the results files' names: each file with its place and precision.
    run_dir = repo / "test_tipc/output/two_io" / MODE / "fixed_inputs_gpus_-1"
    cases = json.loads((run_dir / "cases.json").read_text())
    assert cases and all((c["place"], c["precision"]) == ("cpu", "fp32") and (run_dir / c["file"]).is_file()
                         for c in cases), cases
    step = next(s for s in summary(repo, "two_io", MODE)["steps"] if s["name"] == "fixed_inputs_gpus_-1")
    assert set(step["check"]["max_abs"]) == {"logits", "score"}  # checks.outputs names them
    assert step["check"]["logs"] == 1  # mkldnn on, compared with the first CPU fp32 configuration (mkldnn off)
    latency = step["check"]["latency_ms"]
    assert set(latency) == {"cpu_usemkldnn_False_threads_1_precision_fp32", "cpu_usemkldnn_True_threads_1_precision_fp32"}
    assert all(t["mean_ms"] > 0 and t["runs"] == 5 for t in latency.values())
    log = (repo / records["fixed_inputs_gpus_-1"]["log"]).read_text()
    assert "input ids: shape [1, 4] int64" in log and "ids below 50" in log  # the embedding table's size
    assert "skipped gpu_usetrt_False_precision_fp32: needs a CUDA device" in log
    assert "output 'score': max abs diff" in log
    assert "\nPASSED: " in out[MODE], out[MODE][-1500:]  # not "PASSED (results not checked)"


def test_report_shows_latency_per_configuration(two_io_grid, tmp_path: Path):
    repo, _, _ = two_io_grid
    tipcgen("report", f"test_tipc/output/two_io/{MODE}", "--format", "md", "--output", str(tmp_path), cwd=repo, check=True)
    text = next(tmp_path.glob("*.md")).read_text()
    assert "Latency per configuration" in text
    assert "| `fixed_inputs_gpus_-1` | `cpu_usemkldnn_True_threads_1_precision_fp32` |" in text
    assert "| `fixed_inputs_gpus_-1` | PASS | score |" in text
    assert "1 configuration(s) compared with cpu_usemkldnn_False_threads_1_precision_fp32" in text


def test_paddle2onnx_chain_runs_onnx_itself_and_copies_no_checkpoint(two_io_grid):
    repo, _, _ = two_io_grid
    records = {r["name"]: r for r in read_records(repo, "two_io", f"paddle2onnx/{MODE}")}
    assert records["paddle2onnx_infer_cpu"]["status"] == "skipped"
    assert "takes no ONNX flag" in records["paddle2onnx_infer_cpu"]["reason"]
    assert records["onnx_fixed_inputs_cpu"]["status"] == "passed"
    assert (records["onnx_fixed_inputs_cpu"]["reference"], records["onnx_fixed_inputs_cpu"]["device"]) == ("fixed", "cpu")
    step = next(s for s in summary(repo, "two_io", f"paddle2onnx/{MODE}")["steps"] if s["name"] == "onnx_fixed_inputs_cpu")
    assert set(step["check"]["max_abs"]) == {"logits", "score"}
    assert "onnxruntime_cpu" in step["check"]["latency_ms"]
    # The exported folder holds the training checkpoint too: only the .onnx file is in the ONNX folder.
    assert (repo / "test_tipc/output/two_io" / MODE / TRAINED / "model.pdparams").is_file()
    assert sorted(p.name for p in (repo / "train_data/two_io/onnx").iterdir()) == ["model.onnx"]


def test_named_inputs_are_fed_and_a_pickled_file_never_runs(two_io_grid, tmp_path: Path):
    """checks.fixed_inputs names a .npz: its arrays are fed; an object array (pickle) is refused unread;
    output names that do not fit the model are refused."""
    import numpy as np

    repo, _, _ = two_io_grid
    trained = repo / "test_tipc/output/two_io" / MODE / TRAINED
    script = [sys.executable, "test_tipc/check_inference.py", f"--model_dir={trained}", "--enable_mkldnn=False|True"]
    proc = subprocess.run([*script, "--inputs=two_io/data/infer.npz"], cwd=repo, env=chain_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input ids: shape [4, 6] int64 (the arrays of two_io/data/infer.npz)" in proc.stdout
    assert "output 1 (fetch_name_1): max abs diff" in proc.stdout  # unnamed: by position and program name
    np.savez(tmp_path / "evil.npz", ids=np.array([object()], dtype=object))
    proc = subprocess.run([*script, f"--inputs={tmp_path / 'evil.npz'}"], cwd=repo, env=chain_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "is not a readable .npz of arrays" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = subprocess.run([*script, "--output_names=logits"], cwd=repo, env=chain_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--output_names names 1 output(s) (logits), the model has 2" in proc.stderr


def test_a_perturbed_weight_fails_the_golden_check_naming_the_output(two_io_grid):
    """Golden results of whole_infer (`tipcgen golden`); one float of the checkpoint moved by 0.5: every
    configuration still agrees with the (perturbed) model, but the golden check fails, naming the output."""
    repo, _, whole = two_io_grid
    trained = repo / "test_tipc/output/two_io/whole_train_whole_infer" / TRAINED / "model.pdparams"
    out = perturbed_weight_fails(repo, "two_io", "tipc.yaml", trained, whole)
    assert "output 'logits' differs by up to" in out  # the head's bias moves the logits, not the score
    assert "output 'score'" not in out.split("FAILED: ")[-1]


def _stub_with_checks(tmp_path: Path, checks: str) -> Path:
    make_stub_repo(tmp_path, init=False)
    (tmp_path / "stub/tipc.yaml").write_text((STUB / "tipc.yaml").read_text() + f"\nchecks:\n{checks}")
    return tmp_path / "stub/tipc.yaml"


@pytest.mark.parametrize("value, line", [("false", "fixed_inputs:null"), ("data/x.npz", "fixed_inputs:data/x.npz")])
def test_checks_fixed_inputs_renders_into_the_config(tmp_path: Path, value: str, line: str):
    descriptor = _stub_with_checks(tmp_path, f"  golden: golden\n  fixed_inputs: {value}\n")
    tipcgen("init", str(descriptor), "--output", str(tmp_path / "out"), check=True)
    config = (tmp_path / "out/test_tipc/configs/stub_model/train_infer_python.txt").read_text().splitlines()
    assert line in config


def test_checks_outputs_name_the_outputs_in_both_configs(tmp_path: Path):
    descriptor = _stub_with_checks(tmp_path, "  outputs: [logits, probs]\npaddle2onnx:\n  model_dir: ./out/stub\n"
                                   "  save_file: ./out/stub.onnx\n  inference: stub/stub_infer.py\n")
    tipcgen("init", str(descriptor), "--output", str(tmp_path / "out"), check=True)
    configs = sorted((tmp_path / "out/test_tipc/configs/stub_model").glob("*.txt"))
    assert len(configs) == 2
    for config in configs:
        assert "output_names:logits|probs" in config.read_text().splitlines(), config.name


@pytest.mark.parametrize("checks, message", [
    ("  fixed_inputs: 'a b.txt'\n", "checks.fixed_inputs"),
    ("  outputs: [logits, logits]\n", "checks.outputs: names 'logits' twice"),
    ("  outputs: ['a|b']\n", "checks.outputs[0]: expected an output name: letters, digits, '_', '-' and '.', "
                            "found the text 'a|b'"),
    ("  outputs: logits\n", "checks.outputs"),
])
def test_bad_checks_are_refused_before_writing(tmp_path: Path, checks: str, message: str):
    descriptor = _stub_with_checks(tmp_path, checks)
    proc = tipcgen("init", str(descriptor), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2 and message in proc.stderr + proc.stdout, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out/test_tipc").exists()
