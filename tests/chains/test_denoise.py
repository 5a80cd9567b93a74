"""Issue #28's test projects (a) and (b) on a real paddle repository written for the tests
(tests/fixtures/denoise: tutorial layout; eval and export load the committed weights/denoise.pdparams
unless --weights names another file; train's default output folder holds a committed logs/net.pdparams).

(a) two keys spelled otherwise than the scripts' flags: refused before anything runs, both named;
(b) null checkpoint keys: refused before the run; keys that point elsewhere (--ckpt_dir, accepted and
    ignored): every step passes, and the parameter check of the export fails, naming the parameter;
and `tipcgen new` on the project writes an output folder, whose chain passes without changing a
tracked file. Each run is a real lite chain of the 77-parameter model (about 8 s on one core)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from conftest import ROOT, tipcgen

FIXTURE = ROOT / "tests" / "fixtures" / "denoise"
CONFIG = "test_tipc/configs/denoise/train_infer_python.txt"
OUT = "test_tipc/output/denoise/lite_train_lite_infer"


def _repo(tmp_path: Path, descriptor: str | None = None, *edits: tuple[str, str]) -> Path:
    """The project in a git repository, test_tipc/ rendered from its descriptor with edits, all committed."""
    repo = tmp_path / "denoise"
    shutil.copytree(FIXTURE, repo)
    text = descriptor if descriptor is not None else (repo / "tipc.yaml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    (repo / "tipc.yaml").write_text(text)
    tipcgen("init", "tipc.yaml", "--output", ".", "--force", cwd=repo, check=True)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def _steps(repo: Path) -> dict[str, dict]:
    return {s["name"]: s for s in json.loads((repo / OUT / "summary.json").read_text())["steps"]}


def _tracked_changes(repo: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout


def test_a_two_keys_the_scripts_do_not_accept_are_caught_before_the_run(tmp_path: Path):
    repo = _repo(tmp_path, None, ("key: --batch_size, value: {lite", "key: --batch-size, value: {lite"),
                 ("key: --save_dir", "key: --save-dir"))
    proc = tipcgen("run", "--quiet", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "2 key(s) the runner would pass are not flags of their script" in proc.stderr
    assert f"{CONFIG}:8: train passes --batch-size=... (line 8) to train.py (line 14)" in proc.stderr
    assert f"{CONFIG}:20: export passes --save-dir=... (line 20) to export_model.py (line 22)" in proc.stderr
    assert "the script's flag --batch_size" in proc.stderr and "the script's flag --save_dir" in proc.stderr  # the fix names each flag
    assert not (repo / "test_tipc/output").exists()  # nothing ran, not even prepare.sh
    lint = tipcgen("lint", CONFIG, "--root", ".", "--trust-repo", cwd=repo)
    assert lint.returncode == 1 and lint.stdout.count("unknown-flag") == 2


def test_b_null_checkpoint_keys_are_refused_before_the_run(tmp_path: Path):
    repo = _repo(tmp_path, None, ("pretrained: {key: --weights, value: null}", "pretrained: null"),
                 ("weights: {key: --weights, value: null}", "weights: null"))
    proc = tipcgen("run", "--quiet", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "eval gets no trained checkpoint: it would evaluate whatever eval.py loads by default" in proc.stderr
    assert "export gets no trained checkpoint: it would export whatever export_model.py loads by default" in proc.stderr
    assert not (repo / "test_tipc/output").exists()


def test_b_keys_pointing_elsewhere_fail_the_parameter_check_naming_it(tmp_path: Path):
    repo = _repo(tmp_path, None, ("pretrained: {key: --weights", "pretrained: {key: --ckpt_dir"),
                 ("weights: {key: --weights", "weights: {key: --ckpt_dir"))
    proc = tipcgen("run", "--quiet", cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    steps = _steps(repo)
    assert [s["status"] for s in steps.values() if s["kind"] in ("train", "eval", "export", "infer")] == ["passed"] * 4
    check = steps["export_params_gpus_-1"]
    assert check["status"] == "failed" and check["reference"] == "trained"
    assert check["reason"].startswith("trained parameter conv1.weight [4, 1, 3, 3] is not in the export")
    assert "FAILED" in proc.stdout and "export did not use the trained checkpoint" in proc.stdout
    assert _tracked_changes(repo) == ""


def test_new_writes_an_output_folder_and_its_chain_changes_no_tracked_file(tmp_path: Path):
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    (project / "tipc.yaml").unlink()
    tipcgen("new", "--model-name", "denoise", "--train", "train.py", "--eval", "eval.py", "--export",
            "export_model.py", "--infer", "infer.py", "--checkpoint", "net.pdparams", "-o", "tipc.yaml",
            "--root", ".", cwd=project, check=True)
    written = (project / "tipc.yaml").read_text()
    assert "output_dir: {key: --output_dir, value: ./output/}" in written  # never rendered empty
    repo = _repo(tmp_path, written)
    committed = (repo / "logs/net.pdparams").read_bytes()
    proc = tipcgen("run", "--quiet", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = _steps(repo)
    assert steps["export_params_gpus_-1"]["status"] == "passed"
    assert steps["export_params_gpus_-1"]["note"].startswith(  # conv2.bias [1]: not compared
        "3 of 3 trained parameters found in the export with their trained values; parameters the training changed")
    assert steps["tracked_files"]["status"] == "passed"
    assert (repo / "logs/net.pdparams").read_bytes() == committed and _tracked_changes(repo) == ""


def test_a_training_that_saves_into_a_tracked_file_fails_naming_it(tmp_path: Path):
    """The issue's run: no output-folder key, so train.py saves to its default logs/, over the committed
    logs/net.pdparams. The train step fails naming the checkpoint it did not write where it was told and the
    tracked file it changed, and so does the tracked_files check."""
    repo = _repo(tmp_path, None, ("output_dir: {key: --output_dir, value: ./output/}", "output_dir: null"))
    proc = tipcgen("run", "--quiet", cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    steps = _steps(repo)
    train = next(s for s in json.loads((repo / OUT / "summary.json").read_text())["steps"] if s["kind"] == "train")
    assert train["status"] == "failed" and train["reason"] == (  # it saved into logs/, not the folder it was given
        f"it wrote no checkpoint {OUT}/{train['name']}/net.pdparams (train_model_name 'net.pdparams', the descriptor's "
        "train.checkpoint), which eval and export load: check that the training saves (a flag that gates saving, such "
        "as a save or eval interval) into the output folder it is given (train.output_dir); it changed tracked "
        "file(s) logs/net.pdparams")
    assert steps["tracked_files"]["reason"].startswith(
        f"the runner's steps changed 1 tracked file(s): logs/net.pdparams (train {train['name']}: logs/net.pdparams)")
    assert _tracked_changes(repo) == " M logs/net.pdparams\n"
