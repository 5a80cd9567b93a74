"""Issues #34 (5) and #35 (1) on a real paddle repository written for the tests (tests/fixtures/ckpt_folder:
tutorial layout, `checkpoint: .`, eval and export take a checkpoint folder and load its best.pdparams;
train saves best.pdparams and latest.pdparams side by side, and nothing without --test_epochs).

- the right descriptor: PASSED, export_params passed naming best.pdparams (one of two); the same run again
  with --max-checkpoint-bytes lowered: the check fails naming the option;
- export's checkpoint key pointing at a flag that loads nothing: the export holds the committed
  pretrained/best.pdparams, every step passes and the check fails naming the nearest checkpoint;
- a training command without --test_epochs: train fails naming the folder it wrote no checkpoint into;
- with --format pth (best.pth and model_latest.pth, each a dict holding the state dict beside the optimizer's):
  PASSED, export_params naming best.pth and the key its state dict is under;
- issue #59: a training that copies and re-saves pretrained weights from paddlenlp's cache outside the
  repository (a HOME of the test's), and one that saves the model as initialised (Adam at lr 0): each fails
  naming the cached file, or the initial values.
Each run is a real lite chain of the 77-parameter model (about 10 s of CPU); the first is shared by two tests."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, tipcgen

FIXTURE = ROOT / "tests" / "fixtures" / "ckpt_folder"
OUT = "test_tipc/output/restore/lite_train_lite_infer"
SAVE = f"{OUT}/norm_train_gpus_-1_autocast_null"


def _repo(tmp_path: Path, *edits: tuple[str, str], files: dict[str, str] | None = None) -> Path:
    repo = tmp_path / "restore"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in (files or {}).items():
        (repo / name).write_text(text)
    text = (repo / "tipc.yaml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    (repo / "tipc.yaml").write_text(text)
    tipcgen("init", "tipc.yaml", "--output", ".", "--force", cwd=repo, check=True)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def _run(repo: Path, *options: str) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    proc = tipcgen("run", "--quiet", *options, cwd=repo)
    summary = json.loads((repo / OUT / "summary.json").read_text())
    return proc, {s["name"]: s for s in summary["steps"]} | {"": summary}


@pytest.fixture(scope="module")
def checkpoint_folder_run(tmp_path_factory):
    """The right descriptor's run, then the same repository run again with the checkpoint limit lowered."""
    repo = _repo(tmp_path_factory.mktemp("ckpt"))
    first = _run(repo)
    size = (repo / SAVE / "best.pdparams").stat().st_size
    return repo, first, size, _run(repo, "--max-checkpoint-bytes", "200")


def test_a_checkpoint_folder_with_best_and_latest_passes_on_the_one_the_export_holds(checkpoint_folder_run):
    repo, (proc, steps), _, _ = checkpoint_folder_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout and steps[""]["skipped"] == 0
    check = steps["export_params_gpus_-1"]
    assert check["status"] == "passed" and check["note"] == (
        "3 of 3 trained parameters found in the export with their trained values; parameters the training changed: "
        f"3 of 3 in {SAVE}/best.pdparams, 3 of 3 in {SAVE}/latest.pdparams")
    assert check["command"] == f"compare {SAVE}/best.pdparams with {SAVE}/inference.pdiparams"
    assert (repo / SAVE / "best.pdparams").read_bytes() != (repo / SAVE / "latest.pdparams").read_bytes()
    train = next(s for s in steps[""]["steps"] if s["kind"] == "train")  # a skip may share its name
    assert train["status"] == "passed" and steps["tracked_files"]["status"] == "passed"
    evaluated = next(s for s in steps[""]["steps"] if s["kind"] == "eval")
    assert evaluated["command"].endswith(f"--ckpt_dir=./{SAVE}/.")  # checkpoint: . passes the folder


def test_a_checkpoint_over_the_limit_lowered_by_its_option_fails_naming_it(checkpoint_folder_run):
    _, _, size, (proc, steps) = checkpoint_folder_run
    assert proc.returncode == 1, proc.stdout + proc.stderr
    check = steps["export_params_gpus_-1"]
    assert check["status"] == "failed" and check["reason"] == (
        f"checkpoint {SAVE}/best.pdparams is {size} bytes, over the limit of 200 bytes (--max-checkpoint-bytes): "
        f"raise it: tipcgen run --max-checkpoint-bytes {size}")
    assert "--max-checkpoint-bytes" in proc.stdout


def test_an_export_of_the_committed_weights_fails_naming_the_nearest_checkpoint(tmp_path: Path):
    repo = _repo(tmp_path, ("weights: {key: --ckpt_dir", "weights: {key: --resume"))
    committed = (repo / "pretrained/best.pdparams").read_bytes()
    proc, steps = _run(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [s["status"] for s in steps[""]["steps"] if s["kind"] in ("train", "eval", "export", "infer")] == ["passed"] * 4
    check = steps["export_params_gpus_-1"]
    assert check["status"] == "failed" and check["reason"].startswith(
        f"the export equals none of the 2 checkpoints the training wrote ({SAVE}/best.pdparams, {SAVE}/latest.pdparams); "
        f"the nearest, {SAVE}/")
    assert "trained parameter head.weight [4, 1, 3, 3] is not in the export" in check["reason"]
    assert "FAILED" in proc.stdout and (repo / "pretrained/best.pdparams").read_bytes() == committed


def test_a_training_that_saves_nothing_fails_naming_the_checkpoint_it_did_not_write(tmp_path: Path):
    repo = _repo(tmp_path, ("norm: train.py --test_epochs 1", "norm: train.py"))
    proc, steps = _run(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    train = next(s for s in steps[""]["steps"] if s["kind"] == "train")  # a skip may share its name
    assert train["status"] == "failed" and train["reason"].startswith(
        f"it wrote no checkpoint (.pdparams, .pth, .pd, .pt) into {SAVE} (train_model_name '.', the descriptor's train.checkpoint)")
    assert "the training saves (a flag that gates saving" in proc.stdout


# A training as a hostile contributor writes it (issue #59): no training, the committed weights copied and
# hard-linked into the checkpoint folder; export then holds them. It used to pass, "3 of 3 trained parameters
# found in the export".
_CHEAT = """import argparse, os, shutil
parser = argparse.ArgumentParser()
for flag in ("--epochs", "--batch_size", "--save_dir", "--ckpt_dir", "--test_epochs"):
    parser.add_argument(flag)
args = parser.parse_args()
os.makedirs(args.save_dir, exist_ok=True)
shutil.copyfile("pretrained/best.pdparams", os.path.join(args.save_dir, "best.pdparams"))
os.link("pretrained/best.pdparams", os.path.join(args.save_dir, "latest.pdparams"))
print("epoch 0: loss 0.1")
"""


def test_a_training_that_copies_and_links_the_committed_weights_fails_naming_them(tmp_path: Path):
    repo = _repo(tmp_path, ("norm: train.py --test_epochs 1", "norm: cheat.py --test_epochs 1"),
                 files={"cheat.py": _CHEAT})
    proc, steps = _run(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [s["status"] for s in steps[""]["steps"] if s["kind"] in ("train", "eval", "export", "infer")] == ["passed"] * 4
    check = steps["export_params_gpus_-1"]
    assert check["status"] == "failed" and check["reason"] == (
        "the training wrote no checkpoint of its own, judged by content against the weight files there before it: "
        f"{SAVE}/best.pdparams (its bytes) is pretrained/best.pdparams, a weight file there before the train step; "
        f"{SAVE}/latest.pdparams (its bytes) is pretrained/best.pdparams, a weight file there before the train step")
    assert "FAILED" in proc.stdout


def test_a_fine_tune_of_the_committed_weights_passes(tmp_path: Path):
    """train.py --ckpt_dir starts from the committed pretrained/best.pdparams: every parameter moves, and the
    export of its best checkpoint passes (a must-not-fire case of the content proof)."""
    repo = _repo(tmp_path, ("pretrained: {key: --ckpt_dir, value: null}", "pretrained: {key: --ckpt_dir, value: ./pretrained}"))
    proc, steps = _run(repo)
    train = next(s for s in steps[""]["steps"] if s["kind"] == "train")
    assert "--ckpt_dir=./pretrained" in train["command"]
    check = steps["export_params_gpus_-1"]
    assert proc.returncode == 0 and check["status"] == "passed", proc.stdout + proc.stderr
    assert f"parameters the training changed: 3 of 3 in {SAVE}/best.pdparams" \
        in check["note"]


def test_a_training_that_saves_dict_checkpoints_as_pth_passes_on_the_state_dict_inside(tmp_path: Path):
    """Issue #56: best.pth and model_latest.pth, each paddle.save({'iter', 'state_dict', 'optimizer', 'best'})
    (was: train failed, 'it wrote no .pdparams into ...'; read, the file was refused for builtins.tuple)."""
    repo = _repo(tmp_path, ("norm: train.py --test_epochs 1", "norm: train.py --test_epochs 1 --format pth"))
    proc, steps = _run(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (repo / SAVE / "best.pdparams").exists() and (repo / SAVE / "model_latest.pth").is_file()
    check = steps["export_params_gpus_-1"]
    assert check["status"] == "passed" and check["note"].startswith(
        "3 of 3 trained parameters found in the export with their trained values (the state dict under 'state_dict')")
    assert check["command"] == f"compare {SAVE}/best.pth with {SAVE}/inference.pdiparams"


# Issue #59: weights from a pretrained cache outside the repository (paddlenlp's ~/.paddlenlp/models/...), copied
# and re-saved into the checkpoint folder by a training that trains nothing; and a training that saves the model
# as it was initialised. Each used to pass: every parameter was in no weight file of the repository.
_FROM_CACHE = """import argparse, os, shutil
import paddle
parser = argparse.ArgumentParser()
for flag in ("--epochs", "--batch_size", "--save_dir", "--ckpt_dir", "--test_epochs"):
    parser.add_argument(flag)
args = parser.parse_args()
os.makedirs(args.save_dir, exist_ok=True)
cached = os.path.expanduser("~/.paddlenlp/models/restore/model_state.pdparams")
shutil.copyfile(cached, os.path.join(args.save_dir, "best.pdparams"))
state = paddle.load(cached)  # re-saved in another order: other bytes, the same values
paddle.save({k: state[k] for k in reversed(list(state))}, os.path.join(args.save_dir, "latest.pdparams"))
print("epoch 0: loss 0.1")
"""
_UNTRAINED = """import argparse, os
import paddle
from model import Restorer
parser = argparse.ArgumentParser()
for flag in ("--epochs", "--batch_size", "--save_dir", "--ckpt_dir", "--test_epochs"):
    parser.add_argument(flag)
args = parser.parse_args()
os.makedirs(args.save_dir, exist_ok=True)
model = Restorer()
opt = paddle.optimizer.Adam(0.0, parameters=model.parameters())  # a learning rate of 0: nothing moves
print("epoch 0: loss 0.1")
for name in ("best.pdparams", "latest.pdparams"):
    paddle.save(model.state_dict(), os.path.join(args.save_dir, name))
"""


def test_a_training_that_copies_pretrained_weights_from_the_paddlenlp_cache_fails_naming_them(tmp_path: Path):
    import numpy as np
    import paddle

    home = tmp_path / "home"
    cached = home / ".paddlenlp/models/restore/model_state.pdparams"
    cached.parent.mkdir(parents=True)
    state = paddle.load(str(FIXTURE / "pretrained/best.pdparams"))
    paddle.save({k: paddle.to_tensor(np.asarray(v) + 0.5) for k, v in state.items()}, str(cached))
    repo = _repo(tmp_path, ("norm: train.py --test_epochs 1", "norm: from_cache.py --test_epochs 1"),
                 files={"from_cache.py": _FROM_CACHE})
    proc = tipcgen("run", "--quiet", cwd=repo, env={"HOME": str(home)})
    steps = {s["name"]: s for s in json.loads((repo / OUT / "summary.json").read_text())["steps"]}
    check = steps["export_params_gpus_-1"]
    assert proc.returncode == 1 and check["status"] == "failed", proc.stdout + proc.stderr
    assert check["reason"] == (
        "the training wrote no checkpoint of its own, judged by content against the weight files there before it: "
        f"{SAVE}/best.pdparams (its bytes) is ~/.paddlenlp/models/restore/model_state.pdparams, a weight file there "
        f"before the train step; {SAVE}/latest.pdparams holds no parameter of its own: all 3 are those of "
        "~/.paddlenlp/models/restore/model_state.pdparams, there before the train step")


def test_a_training_that_saves_the_model_as_initialised_fails_naming_its_initial_values(tmp_path: Path):
    repo = _repo(tmp_path, ("norm: train.py --test_epochs 1", "norm: untrained.py --test_epochs 1"),
                 files={"untrained.py": _UNTRAINED})
    proc, steps = _run(repo)
    check = steps["export_params_gpus_-1"]
    assert proc.returncode == 1 and check["status"] == "failed", proc.stdout + proc.stderr
    why = (" holds the model's initial values, not trained ones: all 1 of its bias and normalisation tensors are "
           "still exactly 0 or 1 (head.bias), so no optimizer step changed them (check that the training steps its "
           "optimizer, with a learning rate above 0, before it saves: a warmup from 0 needs two steps, and an AMP loss "
           "scaler skips each step whose gradients overflow)")
    assert check["reason"] == ("the training wrote no checkpoint of its own, judged by content against the weight files "
                               f"there before it: {SAVE}/best.pdparams{why}; {SAVE}/latest.pdparams{why}")
