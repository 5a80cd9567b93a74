"""What a run did not check, in its notes (tipcgen/results/unchecked.py, issue #56 item 5): no eval step, a result
check that compared nothing, files the steps left untracked, a committed model file the inference names. Each note
tried where it must be said and where it must not; the chain test runs the restore fixture (tests/fixtures/restore,
which writes train.h5 into the repository root) in a git work tree, and reads summary.json and the terminal."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, read_summary, tipcgen
from tipcgen.configs.script_reading import model_file_literals
from tipcgen.results import unchecked
from tipcgen.results.summary import Step, Summary

FIXTURE = ROOT / "tests" / "fixtures" / "restore"
NO_EVAL = "not checked: no eval step ran"
NOTHING = "compared nothing"

CHECKS = st.sampled_from([
    ({"max_abs": {}, "logs": 0}, True), ({"max_abs": {"out": 1e-7}, "logs": 2}, False), ({}, False),
    ({"max_abs": {}, "logs": 0, "accuracy": {"float": 0.9, "int8": 0.89, "delta": -0.01}}, False),
    ({"max_abs": {"x": 0.0}, "logs": 0}, True), ({"max_abs": {}}, True)])


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(["prepare", "train", "eval", "export", "infer"]), max_size=6),
       st.lists(st.tuples(CHECKS, st.sampled_from(["passed", "failed"]), st.sampled_from(["fixed", "golden", "trained", "git"])),
                max_size=3), st.sampled_from(["basic", "benchmark"]))
def test_the_summary_s_gaps_are_said_exactly_where_they_are(kinds, checks, chain):
    steps = [Step(kind=k, name=f"{k}_{i}", status="passed") for i, k in enumerate(kinds)]
    steps += [Step.flat(kind="check", name=f"c{i}", status=status, reference=ref, check=check)
              for i, ((check, _), status, ref) in enumerate(checks)]
    notes = unchecked.summary_notes(Summary(model="m", mode="lite_train_lite_infer", config="c", steps=steps, chain=chain))
    assert any(NO_EVAL in n for n in notes) == ("train" in kinds and "eval" not in kinds and chain == "basic")
    said = sum(NOTHING in n for n in notes)
    assert said == sum(1 for (_, empty), status, ref in checks if empty and status == "passed" and ref in ("fixed", "golden"))
    assert all(n.startswith(unchecked.PREFIX) for n in notes)


def test_only_whole_literal_model_paths_are_named():
    source = '''
import argparse, os, paddle
p = argparse.ArgumentParser()
p.add_argument("--weights", default="weights/default.pdparams", help="a .pdparams file")
a = p.parse_args()
config = os.path.join(a.model_dir, "inference.pdmodel")
other = a.model_dir + "/inference.pdiparams"
named = f"{a.model_dir}/model.pdparams"
state = paddle.load("weights/best.pdparams")
both = os.path.join("weights", "final.pdparams")
'''
    assert [lit for lit, _ in model_file_literals(source)] == ["weights/best.pdparams"]
    assert model_file_literals("def (:") == []


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args], check=True,
                   capture_output=True)


def test_a_passed_chain_says_what_it_did_not_check(tmp_path: Path):
    repo = tmp_path / "restore"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "weights").mkdir()
    (repo / "weights" / "best.pdparams").write_bytes(b"committed")
    with (repo / "infer.py").open("a") as handle:  # a committed model the script names (not what it loads here)
        handle.write('\nREFERENCE_WEIGHTS = "weights/best.pdparams"\nNOT_COMMITTED = "weights/other.pdparams"\n')
    tipcgen("new", "--model-name", "restore", "--train", "train.py --pretrained False --preprocess True --test_epochs 1",
            "--export", "export_model.py --pretrained False", "--infer", "infer.py", "--checkpoint", "net.pdparams",
            "--train-data", "lite_data", "--devices", "cpu", cwd=repo, check=True)
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the repository")
    run = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo)
    assert run.returncode == 0, run.stdout[-3000:]
    notes = read_summary(repo, "restore")["notes"]
    left = "not checked: the run left 1 untracked file(s) in the repository, outside its output folder: train.h5"
    committed = "opens committed file(s) by a literal name: weights/best.pdparams (infer.py:"
    for said in (NO_EVAL, left, committed):
        assert any(said in note for note in notes), (said, notes)
        assert said in run.stdout.replace("\n  ", " ") or said[:60] in run.stdout, said
    assert not any("other.pdparams" in note or NOTHING in note for note in notes)
    # train.h5 now ignored: not left behind
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "\ntrain.h5\n"
                                     if (repo / ".gitignore").exists() else "train.h5\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "ignore train.h5")
    run = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo)
    notes = read_summary(repo, "restore")["notes"]
    assert run.returncode == 0 and not any("untracked" in note for note in notes), notes
    assert any(NO_EVAL in note for note in notes)
