"""One runner for a whole repository (issue 27): several models rendered into one test_tipc/ one after
another without --force share one runner, common_func.sh and prepare.sh; `tipcgen suite` runs every
model's chain against them; rendering one model leaves what the others' chains do as it was, and
re-rendering any one leaves every file unchanged. Stub chains (TIPC_NO_PADDLE): three models, both
layouts (the 51-line one and the tutorial's 32-line one). The paddle version is tests/chains/test_repository_lite.py."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, STUB, make_stub_repo, tipcgen

MODE = "lite_train_lite_infer"
MODELS = {"stub_model": STUB / "tipc.yaml",
          "stub_variant": ROOT / "tests" / "fixtures" / "stub_variant" / "tipc.yaml",
          "stub_tutorial": ROOT / "tests" / "fixtures" / "stub_tutorial" / "tipc.yaml"}
SHARED = ("test_tipc/test_train_inference_python.sh", "test_tipc/common_func.sh", "test_tipc/tipc_steps.sh", "test_tipc/prepare.sh")
SKIP = ("test_tipc/output", ".tipcgen/backup", ".tipcgen/cache")  # run outputs, backups, run's --help cache


def config(model: str) -> str:
    return f"test_tipc/configs/{model}/train_infer_python.txt"


def tree(repo: Path) -> dict[str, bytes]:
    """Every file of the repository but run outputs and backups, by relative path."""
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and not p.relative_to(repo).as_posix().startswith(SKIP)}


def steps(repo: Path, model: str) -> list[tuple]:
    """A chain's steps as it ran them: kind, name, status and the command (the run folder made relative)."""
    run = repo / "test_tipc" / "output" / model / MODE
    records = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    return [(r["kind"], r["name"], r["status"], r["command"].replace(str(repo), "REPO")) for r in records]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> dict:
    """One repository, its models rendered one after another without --force. Before the second model
    comes in, the first model's chain runs once: its steps are what the later runs must repeat."""
    repo = make_stub_repo(tmp_path_factory.mktemp("zoo") / "repo", init=False)
    first = tipcgen("init", str(MODELS["stub_model"]), "--root", str(repo), check=True)
    alone = tree(repo)
    tipcgen("run", "--mode", MODE, "--quiet", "--config", config("stub_model"), cwd=repo, check=True)
    alone_steps = steps(repo, "stub_model")
    shutil.rmtree(repo / "test_tipc" / "output")
    inits = [first] + [tipcgen("init", str(MODELS[m]), "--root", str(repo)) for m in ("stub_variant", "stub_tutorial")]
    return {"repo": repo, "alone": alone, "alone_steps": alone_steps, "inits": inits}


def test_models_are_added_one_after_another_without_force(zoo):
    repo = zoo["repo"]
    for proc in zoo["inits"]:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
    for model in MODELS:
        assert (repo / config(model)).is_file(), model
    answers = (repo / ".tipcgen-answers.yml").read_text()
    assert "stub_variant/tipc.yaml" in answers and "stub_tutorial/tipc.yaml" in answers
    # One prepare.sh, dispatched on model_name; one tipc_layouts.json with each model's own settings.
    prepare = (repo / "test_tipc/prepare.sh").read_text()
    assert all(f"    {m}) prepare_{m} ;;" in prepare for m in MODELS)
    settings = json.loads((repo / "test_tipc/tipc_layouts.json").read_text())["settings"]
    assert settings["stub_tutorial"] == {"timeout": 300, "env": ["env", "STUB_TUTORIAL=1"],
                                         "note": "ran with STUB_TUTORIAL=1 (descriptor env:)"}


def test_the_suite_runs_every_model_against_the_one_runner(zoo, tmp_path):
    repo = zoo["repo"]
    proc = tipcgen("suite", "-o", str(tmp_path / "out"), cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    suite = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert sorted(c["chain"]["key"] for c in suite["chains"]) == sorted(f"{m}/basic/{MODE}" for m in MODELS)
    assert {c["chain"]["model"]: c["verdict"] for c in suite["chains"]} == dict.fromkeys(MODELS, "passed")
    by_model = {c["chain"]["model"]: c["summary"] for c in suite["chains"]}
    # Each model's own env: only the tutorial stub's export and inference steps run under it.
    for model, summary in by_model.items():
        envs = {s["kind"]: s["command"].startswith("env STUB_TUTORIAL=1 ") for s in summary["steps"]
                if s["status"] == "passed" and s["kind"] in ("export", "infer")}
        assert envs == {"export": model == "stub_tutorial", "infer": model == "stub_tutorial"}, model
    # The 32-line config ran as the tutorial layout: its inference runs on the export folder's model.
    infer = next(s for s in by_model["stub_tutorial"]["steps"] if s["kind"] == "infer")
    assert "--model_dir=" in infer["command"] and "--use-gpu=False" in infer["command"]


def test_adding_models_leaves_the_first_models_chain_as_it_was(zoo):
    """Rendering two more models changed the shared files' bytes, not what the first model's chain runs:
    its config is byte-identical and its chain runs the same steps with the same commands."""
    repo, alone = zoo["repo"], zoo["alone"]
    assert (repo / config("stub_model")).read_bytes() == alone[config("stub_model")]
    copy = repo.parent / "again"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns("output"))
    tipcgen("run", "--mode", MODE, "--quiet", "--config", config("stub_model"), cwd=copy, check=True)
    assert steps(copy, "stub_model") == [tuple(s[:3]) + (s[3].replace("/repo/", "/again/"),) for s in zoo["alone_steps"]]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_rerendering_any_one_model_leaves_every_file_unchanged(zoo, model, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(zoo["repo"], repo, ignore=shutil.ignore_patterns("output"))
    before = tree(repo)
    proc = tipcgen("init", str(MODELS[model]), "--root", str(repo))
    assert proc.returncode == 0, proc.stderr
    assert tree(repo) == before
    assert " 0 file(s) written" in proc.stdout


def test_several_descriptors_at_once_render_what_one_after_another_renders(zoo, tmp_path):
    repo = make_stub_repo(tmp_path / "repo", init=False)
    tipcgen("init", *(str(MODELS[m]) for m in ("stub_model", "stub_variant", "stub_tutorial")), "--root", str(repo),
            check=True)
    other = tree(zoo["repo"])
    mine = tree(repo)
    assert sorted(mine) == sorted(other)
    for rel in mine:
        if rel == ".tipcgen-answers.yml":  # descriptor paths are relative to the repository
            continue
        assert mine[rel] == other[rel], rel
    # In another order: the shared files do not depend on the order the models came in.
    repo2 = make_stub_repo(tmp_path / "repo2", init=False)
    for model in ("stub_tutorial", "stub_model", "stub_variant"):
        tipcgen("init", str(MODELS[model]), "--root", str(repo2), check=True)
    assert all(tree(repo2)[rel] == other[rel] for rel in SHARED)


def test_an_edited_shared_file_is_never_overwritten_without_force(zoo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(zoo["repo"], repo, ignore=shutil.ignore_patterns("output"))
    common = repo / "test_tipc/common_func.sh"
    common.write_text(common.read_text() + "# my own helper\n")
    (repo / config("stub_variant")).unlink()
    before = tree(repo)
    proc = tipcgen("init", str(MODELS["stub_variant"]), "--root", str(repo))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "test_tipc/common_func.sh" in proc.stderr and "nothing was written" in proc.stderr
    assert tree(repo) == before


def test_a_model_whose_descriptor_is_gone_is_named_not_dropped(tmp_path):
    repo = make_stub_repo(tmp_path / "repo", init=False)
    gone = tmp_path / "gone.yaml"
    shutil.copy(MODELS["stub_variant"], gone)
    tipcgen("init", str(gone), "--root", str(repo), check=True)
    gone.unlink()
    before = tree(repo)
    proc = tipcgen("init", str(MODELS["stub_model"]), "--root", str(repo))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "gone.yaml" in proc.stderr and "nothing was written" in proc.stderr and "--force" in proc.stderr
    assert tree(repo) == before
    forced = tipcgen("init", str(MODELS["stub_model"]), "--root", str(repo), "--force")
    assert forced.returncode == 0, forced.stderr
    assert "drops the model of ../gone.yaml" in forced.stderr
    assert "stub_variant" not in (repo / "test_tipc/prepare.sh").read_text()


def test_a_model_the_repository_does_not_know_is_refused_by_prepare(zoo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(zoo["repo"], repo, ignore=shutil.ignore_patterns("output"))
    text = (repo / config("stub_variant")).read_text().replace("model_name:stub_variant", "model_name:stranger")
    (repo / "test_tipc/configs/stub_variant/stranger.txt").write_text(text)
    import subprocess

    proc = subprocess.run(["bash", "test_tipc/prepare.sh", "test_tipc/configs/stub_variant/stranger.txt", MODE],
                          cwd=repo, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "is for model 'stranger'; this prepare.sh prepares stub_model, stub_tutorial, stub_variant" in proc.stderr


def test_update_re_renders_every_model_and_an_edit_reaches_only_its_own_config(tmp_path):
    repo = make_stub_repo(tmp_path / "repo", init=False)
    mine = repo / "variant.yaml"  # inside: an edited descriptor outside the repository is not loaded (issue 34)
    shutil.copy(MODELS["stub_variant"], mine)
    tipcgen("init", str(MODELS["stub_model"]), str(mine), "--root", str(repo), check=True)
    before = tree(repo)
    mine.write_text(mine.read_text().replace("lite_train_lite_infer: 1, whole_train_whole_infer: 3",
                                             "lite_train_lite_infer: 2, whole_train_whole_infer: 3"))
    proc = tipcgen("update", "--root", str(repo))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed since the last render" in proc.stdout
    after = tree(repo)
    changed = sorted(rel for rel in after if after[rel] != before.get(rel) and rel != "variant.yaml")
    assert changed == [".tipcgen-answers.yml", ".tipcgen/base/" + config("stub_variant"), config("stub_variant")]
    assert "--epochs:lite_train_lite_infer=2|" in (repo / config("stub_variant")).read_text()


def test_doctor_finds_each_models_own_descriptor(zoo, doctor_probes_once):
    """What doctor reads of each model's descriptor (not its probe of the interpreter: that runs once a worker)."""
    proc = tipcgen("doctor", "--config", config("stub_tutorial"), cwd=zoo["repo"])
    assert "stub_tutorial: the descriptor names no data" in proc.stdout, proc.stdout


def test_a_damaged_answers_file_is_named_and_force_renders_the_models_named(tmp_path):
    repo = make_stub_repo(tmp_path / "repo", init=False)
    tipcgen("init", str(MODELS["stub_model"]), "--root", str(repo), check=True)
    answers = repo / ".tipcgen-answers.yml"
    answers.write_text("tipcgen_version: [unclosed\n")
    before = tree(repo)
    proc = tipcgen("init", str(MODELS["stub_variant"]), "--root", str(repo))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert ".tipcgen-answers.yml" in proc.stderr and "nothing was written" in proc.stderr and "--force" in proc.stderr
    assert tree(repo) == before
    forced = tipcgen("init", str(MODELS["stub_variant"]), "--root", str(repo), "--force")
    assert forced.returncode == 0, forced.stderr
    assert "renders only the models named" in forced.stderr
    assert "stub_variant/tipc.yaml" in answers.read_text() and "others:" not in answers.read_text()
