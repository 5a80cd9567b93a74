"""One runner for a whole repository with real Paddle chains (issue 27, done-when): the models tutorial
template's project (tests/fixtures/tutorial, its 32-line config) at the root, and beside it bert-sst2,
question-matching and the imgcls and two_io test projects, rendered one after another without --force;
`tipcgen suite` runs the lite chains against the one runner and they pass (in every run the two that no
other test runs, all five in the full run); re-rendering any one model leaves every file unchanged. One suite
run (the chains are slow on 2 cores); the stub-chain version of the same checks, with more of them, is
tests/test_repository.py."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_tutorial_layout as tutorial
from conftest import ROOT, tipcgen

MODE = "lite_train_lite_infer"
FIXTURES = ROOT / "tests" / "fixtures"
CPU_CI = ("--devices", "cpu", "--value", "inference.cpu_threads=1", "--value", "inference.enable_mkldnn=false")
NEW = {
    "imgcls": ("--train", "imgcls/train.py", "--export", "imgcls/export_model.py", "--infer", "imgcls/infer.py",
               "--checkpoint", "latest", "--train-data", "imgcls/lite_data.tar", "--infer-data", "imgcls/lite_data.tar",
               "--env", "FLAGS_enable_pir_api=0"),  # its infer.py loads inference.pdmodel: new's note asks for it
    "two_io": ("--train", "two_io/train.py", "--eval", "two_io/eval.py", "--export", "two_io/export_model.py",
               "--infer", "two_io/infer.py", "--checkpoint", "model", "--train-data", "two_io/data/train.npz",
               "--eval-data", "two_io/data/infer.npz", "--infer-data", "two_io/data/infer.npz"),
}
ORDER = ("bert-sst2", "question-matching", "imgcls.yaml", "two_io.yaml", "tipc.yaml")  # the tutorial's: tipc.yaml
MODELS = ("bert_sst2", "question_matching", "imgcls", "two_io", "tutorial_model")


def _tree(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and not p.relative_to(repo).as_posix().startswith(("test_tipc/output", ".tipcgen/backup"))
            and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> dict:
    """The repository after five inits, each checked to leave the configs rendered before it as they were."""
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("zoo") / "repo"
    # The template's project without its own test_tipc/ (its config is imported from the fixture: the
    # descriptor is its source from then on).
    shutil.copytree(FIXTURES / "tutorial", repo, ignore=shutil.ignore_patterns("__pycache__", "test_tipc"))
    for name in NEW:
        shutil.copytree(FIXTURES / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "make_lite_data.py", "lite_data.tar"], cwd=repo / "imgcls", check=True,
                   capture_output=True)
    for name, args in NEW.items():
        tipcgen("new", "--model-name", name, *args, *CPU_CI, "-o", f"{name}.yaml", cwd=repo, check=True)
    tipcgen("import", str(FIXTURES / "tutorial" / tutorial.CONFIG), "-o", "tipc.yaml", cwd=repo, check=True)
    (repo / "tipc.yaml").write_text((repo / "tipc.yaml").read_text() + tutorial.BY_HAND)
    inits, configs = [], {}
    for target in ORDER:
        inits.append(tipcgen("init", target, "--devices", "cpu", cwd=repo))
        assert inits[-1].returncode == 0, f"init {target}:\n{inits[-1].stderr}"
        for rel, data in configs.items():
            assert (repo / rel).read_bytes() == data, f"init {target} changed {rel}"
        configs = {p.relative_to(repo).as_posix(): p.read_bytes() for p in (repo / "test_tipc/configs").rglob("*.txt")}
    return {"repo": repo, "inits": inits}


# The models whose real lite chain no other test of every run passes: imgcls (tar data, an old-IR export) and the
# tutorial's 32-line project. bert_sst2 (chains/test_chain.py), question_matching (test_question_matching.py) and
# two_io (chains/test_fixed_checks.py's grid) pass theirs in every run; the runner they share is the one file these
# run against, and test_repository.py runs all of a repository's models against it with the stub.
EVERY_RUN = ("imgcls", "tutorial_model")


def _suite_passes(repo: Path, out: Path, models: tuple[str, ...]) -> None:
    configs = [f"test_tipc/configs/{model}/train_infer_python.txt" for model in models]
    proc = tipcgen("suite", *configs, "-o", str(out), cwd=repo, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    suite = json.loads((out / "suite.json").read_text())
    assert {c["chain"]["model"]: c["verdict"] for c in suite["chains"]} == dict.fromkeys(models, "passed")
    for chain in suite["chains"]:
        summary = chain["summary"]
        kinds = {s["kind"] for s in summary["steps"] if s["status"] == "passed"}
        assert {"train", "export", "infer"} <= kinds, chain["chain"]["key"]


def test_the_models_no_other_test_runs_pass_against_the_one_runner(zoo, tmp_path):
    repo = zoo["repo"]
    assert sorted(p.name for p in (repo / "test_tipc/configs").iterdir()) == sorted(MODELS)
    _suite_passes(repo, tmp_path / "out", EVERY_RUN)


@pytest.mark.full  # all five again: three of them pass their lite chains in other tests of every run (EVERY_RUN)
def test_every_models_lite_chain_passes_against_the_one_runner(zoo, tmp_path):
    _suite_passes(zoo["repo"], tmp_path / "out", MODELS)


@pytest.mark.parametrize("target", ORDER)
def test_rerendering_any_one_model_leaves_every_file_unchanged(zoo, target):
    repo = zoo["repo"]
    before = _tree(repo)
    proc = tipcgen("init", target, "--devices", "cpu", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert " 0 file(s) written" in proc.stdout
    assert _tree(repo) == before
