"""The dy2static chain for real on CPU (tests/fixtures/dy2static_mlp; docs/CHAINS.md, "The dy2static chain").

`tipcgen run --chain dy2static` trains the MLP in dygraph and through paddle.jit.to_static (the config's
to_static_train switch), compares the losses step by step, and evaluates, exports and infers both trained
models. The broken project (tipc_drift.yaml: a Python-side branch that to_static traces once) fails the
loss check naming step 4, the first where the losses part. The hostile one (tipc_nostatic.yaml: a switch the script
reads as dygraph, so to_static is never called and the losses agree) fails naming what paddle did not log. The
check's evidence is paddle's own: the programs it logs under TRANSLATOR_VERBOSITY=1. One run of each (about 40 s
each on two shared cores).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, tipcgen
from tipcgen.format import paths

FIXTURE = ROOT / "tests" / "fixtures" / "dy2static_mlp"
MODE = "lite_train_lite_infer"


def _run(tmp_path_factory, descriptor: str) -> tuple[Path, subprocess.CompletedProcess, dict]:
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("dy2static") / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    tipcgen("init", descriptor, cwd=repo, check=True)
    proc = tipcgen("run", "--chain", "dy2static", "--mode", MODE, cwd=repo)
    model = next((repo / "test_tipc" / "configs").iterdir()).name
    run = repo / "test_tipc" / "output" / model / "dy2static" / MODE
    return run, proc, json.loads((run / "summary.json").read_text())


@pytest.fixture(scope="module")
def passing(tmp_path_factory):
    return _run(tmp_path_factory, "tipc.yaml")


@pytest.fixture(scope="module")
def never_static(tmp_path_factory):
    return _run(tmp_path_factory, "tipc_nostatic.yaml")


@pytest.fixture(scope="module")
def drifting(tmp_path_factory):
    return _run(tmp_path_factory, "tipc_drift.yaml")


def test_the_dy2static_chain_passes_on_a_model_where_both_agree(passing) -> None:
    run, proc, summary = passing
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary["ok"] and "\nPASSED: " in proc.stdout
    assert summary["chain"] == "dy2static" and summary["required_kinds"] == ["train", "export", "infer", "check"]
    steps = {s["name"]: s for s in summary["steps"]}
    static = steps["to_static_train_gpus_-1_autocast_null"]
    assert static["status"] == "passed" and "--to_static=True" in static["command"]
    assert "--to_static" not in steps["norm_train_gpus_-1_autocast_null"]["command"]
    for kind in ("eval", "export"):
        assert steps[f"to_static_train_gpus_-1_autocast_null_nodes_1_{kind}"]["status"] == "passed"
    assert any(s["kind"] == "infer" and s["status"] == "passed" and "to_static_train" in s["name"] for s in summary["steps"])
    loss = steps["dy2static_loss"]
    assert (loss["status"], loss["reference"]) == ("passed", "dygraph")
    assert loss["check"]["logs"] == 1 and loss["check"]["max_abs"] == {"loss (gpus -1, autocast null)": 0.0}
    # Paddle's evidence that the static training went through to_static: the programs it built, with gradients.
    assert "the to_static training went through paddle.jit.to_static: paddle built 1 program(s) from the converted " \
        "code, 1 with a backward program holding ops" in (run.parents[4] / loss["log"]).read_text()
    assert "[JIT] PIR backward program" in (run.parents[4] / static["log"]).read_text()
    curves = json.loads((run / "dy2static_losses.json").read_text())["gpus -1, autocast null"]
    assert len(curves["dygraph"]) == len(curves["to_static"]) == 12  # 48 rows / batch 8 x 2 epochs
    assert steps["export_params_gpus_-1_to_static_train_autocast_null"]["status"] == "passed"
    # The config was not edited; the trainings ran from the one the runner wrote into the run folder.
    assert (run / paths.DY2STATIC_CONFIG).read_text().count("trainer:norm_train|to_static_train") == 1
    # The report draws both trainings' losses in one chart.
    tipcgen("report", str(run), cwd=run.parents[4], check=True)
    section = (run / paths.REPORT_MD).read_text().split("## Training loss", 1)[1].split("\n## ", 1)[0]
    assert paths.LOSS_PNG in section and section.count("12 values over global_step 1 to 12") == 2


def test_a_model_that_breaks_to_static_fails_naming_the_first_step_where_the_losses_part(drifting) -> None:
    run, proc, summary = drifting
    assert proc.returncode == 1, proc.stdout + proc.stderr
    steps = {s["name"]: s for s in summary["steps"]}
    assert steps["norm_train_gpus_-1_autocast_null"]["status"] == "passed"
    assert steps["to_static_train_gpus_-1_autocast_null"]["status"] == "passed"  # both train: only the losses tell
    loss = steps["dy2static_loss"]
    assert loss["status"] == "failed"
    text = "\n".join(loss["tail"])
    assert "diverge first at step 4 (logged loss 4 of 12)" in text and "the 3 logged step(s) before it agree" in text
    assert "step 4" in proc.stdout
    assert loss["check"]["failures"] == 1 and "step 4" in loss["check"]["messages"][0]
    tipcgen("report", str(run), cwd=run.parents[4], check=True)  # a failed loss check reads back too


def test_a_static_training_that_never_called_to_static_fails_naming_what_paddle_did_not_log(never_static) -> None:
    run, proc, summary = never_static
    assert proc.returncode == 1, proc.stdout + proc.stderr
    steps = {s["name"]: s for s in summary["steps"]}
    static = steps["to_static_train_gpus_-1_autocast_null"]
    assert static["status"] == "passed" and "--to_static=true" in static["command"]  # it trains, in dygraph
    loss = steps["dy2static_loss"]
    assert loss["status"] == "failed" and not summary["ok"]
    message = loss["check"]["messages"][0]
    assert "the to_static training did not go through paddle.jit.to_static" in message
    assert "shows no program paddle.jit.to_static built" in message and "TRANSLATOR_VERBOSITY=1" in message
