"""The grid of issue 13 on a plain-paddle image classifier that tipcgen has never seen (tests/fixtures/imgcls):
lite data is an ImageFolder tree shipped as a tar, infer.py loads inference.pdmodel. From `tipcgen new` with its
data named by hand (and two inference configurations, for CI time) to the four modes and the paddle2onnx chain
passing on CPU under Paddle 3 with checked results, and a perturbed weight failing naming the output."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, tipcgen
from grid import perturbed_weight_fails, run_grid

FIXTURE = ROOT / "tests" / "fixtures" / "imgcls"
PIR_OFF = "FLAGS_enable_pir_api=0"



@pytest.mark.full  # the grid again (two_io's in every run); imgcls's lite chain: the zoo's, in every run
def test_new_on_an_image_classifier_passes_the_grid(tmp_path: Path):
    pytest.importorskip("paddle")
    pytest.importorskip("paddle2onnx")
    pytest.importorskip("onnxruntime")
    repo = tmp_path / "imgcls"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "make_lite_data.py", "lite_data.tar"], cwd=repo, check=True, capture_output=True)
    proc = tipcgen("new", "--model-name", "imgcls", "--train", "train.py", "--export", "export_model.py",
                   "--infer", "infer.py", "--checkpoint", "latest", "--train-data", "lite_data.tar",
                   "--infer-data", "lite_data.tar", "--devices", "cpu", "--env", "FLAGS_enable_pir_api=0",  # as its note says
                   "--value", "inference.cpu_threads=1", "--value", "inference.enable_mkldnn=[false, true]",  # CI time
                   "-o", "tipc.yaml", cwd=repo, check=True)
    assert "loads inference.pdmodel" not in proc.stdout  # the env: it needs was asked for: no note (tests/test_reading.py)
    text = (repo / "tipc.yaml").read_text()
    for line in ("autocast: {key: --amp_level, value: O1}",            # its help says O1 or O2
                 "extra: {key: --data_dir, value: ./train_data/imgcls/train}",   # the unpacked tree
                 "data: {key: --img-path, value: ./train_data/imgcls/infer}",
                 "models: ./train_data/imgcls/trained/latest",          # whole_infer filled
                 "env: {FLAGS_enable_pir_api: '0'}",
                 "  onnx_flag: null      # the script runs no ONNX model"):   # infer.py has no --use_onnx
        assert line in text, line
    # The one hand edit besides the data: golden results and the name of the model's output.
    (repo / "tipc.yaml").write_text(text + "\nchecks:\n  golden: golden\n  outputs: [logits]\n")
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    config = (repo / "test_tipc/configs/imgcls/model_linux_gpu_normal_normal_paddle2onnx_python_linux_cpu.txt").read_text()
    assert "--model_filename:inference.pdmodel" in config  # what the export writes under the env:

    whole = tmp_path / "whole"  # the whole data set: the same tree layout, a folder per role
    with tarfile.open(repo / "lite_data.tar") as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    for role in ("train", "infer"):
        shutil.copytree(tmp_path / "unpacked/lite_data", whole / role)
    run_grid(repo, "imgcls", {"logits"}, whole, env_note=PIR_OFF)
    newest = repo / "test_tipc/output/imgcls/whole_train_whole_infer/norm_train_gpus_-1_autocast_O1"
    prepared = (repo / "test_tipc/output/imgcls/whole_infer/prepare.log").read_text()
    assert f"-> ./{newest.relative_to(repo)}/ (trained model)" in prepared, "whole_infer takes the latest train run"

    out = perturbed_weight_fails(repo, "imgcls", "tipc.yaml", newest / "latest.pdparams", whole)
    assert "output 'logits' differs by up to" in out
