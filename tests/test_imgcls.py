"""A plain-paddle image classifier that tipcgen has never seen (tests/fixtures/imgcls): lite data is an
ImageFolder tree shipped as a tar, infer.py loads inference.pdmodel. From `tipcgen new` with only its data
(and a smaller inference matrix, for CI time) named by hand to lite_train_lite_infer, whole_train_whole_infer and whole_infer
passing on CPU under Paddle 3."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, tipcgen

FIXTURE = ROOT / "tests" / "fixtures" / "imgcls"


def _summary(repo: Path, mode: str) -> dict:
    return json.loads((repo / "test_tipc/output/imgcls" / mode / "summary.json").read_text())


@pytest.mark.paddle
@pytest.mark.chain
def test_new_on_an_image_classifier_passes_lite_and_whole_modes(tmp_path: Path):
    pytest.importorskip("paddle")
    repo = tmp_path / "imgcls"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "make_lite_data.py", "lite_data.tar"], cwd=repo, check=True, capture_output=True)
    proc = tipcgen("new", "--model-name", "imgcls", "--train", "train.py", "--export", "export_model.py",
                   "--infer", "infer.py", "--checkpoint", "latest", "--train-data", "lite_data.tar",
                   "--infer-data", "lite_data.tar", "--devices", "cpu",
                   "--value", "inference.cpu_threads=1", "--value", "inference.enable_mkldnn=[true]",  # CI time
                   "-o", "tipc.yaml", cwd=repo, check=True)
    assert "loads inference.pdmodel" in proc.stdout
    text = (repo / "tipc.yaml").read_text()
    for line in ("autocast: {key: --amp_level, value: O1}",            # its help says O1 or O2
                 "extra: {key: --data_dir, value: ./train_data/imgcls/train}",   # the unpacked tree
                 "data: {key: --img-path, value: ./train_data/imgcls/infer}",
                 "models: ./train_data/imgcls/trained/latest",          # whole_infer filled
                 "env: {FLAGS_enable_pir_api: '0'}"):
        assert line in text, line
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)

    lite = tipcgen("run", "--mode", "lite_train_lite_infer", "--quiet", cwd=repo)
    assert lite.returncode == 0, lite.stdout[-3000:] + lite.stderr
    whole = tmp_path / "whole"  # the whole data set: the same tree layout, a folder per role
    for role in ("train", "infer"):
        shutil.copytree(repo / "train_data/imgcls/train", whole / role)
    trained = tipcgen("run", "--mode", "whole_train_whole_infer", "--data-dir", str(whole), "--quiet", cwd=repo)
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr
    assert (repo / "train_data/imgcls/train").resolve() == (whole / "train").resolve(), "trained on the whole data"
    infer = tipcgen("run", "--mode", "whole_infer", "--data-dir", str(whole), "--quiet", cwd=repo)
    assert infer.returncode == 0, infer.stdout[-3000:] + infer.stderr
    newest = repo / "test_tipc/output/imgcls/whole_train_whole_infer/norm_train_gpus_-1_autocast_O1"
    assert (repo / "train_data/imgcls/trained").resolve() == newest.resolve(), "the latest train run"
    for mode in ("lite_train_lite_infer", "whole_train_whole_infer", "whole_infer"):
        steps = _summary(repo, mode)["steps"]
        kinds = {s["kind"] for s in steps if s["status"] == "passed"}
        assert {"export", "infer"} <= kinds and all(s["status"] == "passed" for s in steps), (mode, steps)
        assert all("FLAGS_enable_pir_api=0" in s["note"] for s in steps if s["kind"] in ("export", "infer"))
