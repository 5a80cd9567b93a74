"""The runner a run drives as a strategy (issue 58 item 4): tipcgen's (pipeline.TipcgenRunner) and the repository's own,
kept by init --submission (submission_run.KeptRunner), behind one Driver. The pipeline asks the driver and never
which runner it is: what it does with each is tested end to end in test_runner.py and test_submission_run.py."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tipcgen.core.errors import RunError
from tipcgen.format import paths
from tipcgen.format.chains import BASIC, PADDLE2ONNX
from tipcgen.results.summary import Step
from tipcgen.run import pipeline
from tipcgen.run import submission_run
from tipcgen.run.request import RunRequest

from conftest import ROOT

PIPELINE = ("_prepare", "_Pipeline", "run")


def test_the_pipeline_never_asks_which_runner_it_drives() -> None:
    """No `kept` in the pipeline (neither `ctx.kept` nor a name of that word): what differs is the driver's."""
    tree = ast.parse((ROOT / "tipcgen/run/pipeline.py").read_text(encoding="utf-8"))
    parts = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in PIPELINE]
    assert {node.name for node in parts} == set(PIPELINE)
    for part in parts:
        named = {n.attr for n in ast.walk(part) if isinstance(n, ast.Attribute)}
        named |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
        assert not {name for name in named if "kept" in name.lower()}, part.name


def test_a_repository_that_keeps_its_runner_gets_the_kept_driver_for_the_basic_chain_only(tmp_path: Path) -> None:
    assert isinstance(pipeline.driver_of(tmp_path, BASIC), pipeline.TipcgenRunner)  # no runner at all: tipcgen's
    runner = tmp_path / paths.BASIC_RUNNER
    runner.parent.mkdir(parents=True)
    runner.write_text("#!/bin/bash\necho the repository's own\n")
    assert isinstance(pipeline.driver_of(tmp_path, BASIC), submission_run.KeptRunner)
    assert isinstance(pipeline.driver_of(tmp_path, PADDLE2ONNX), pipeline.TipcgenRunner)


def test_the_two_drivers_differ_where_the_runners_do() -> None:
    tipcgen, kept = pipeline.TipcgenRunner(), submission_run.KeptRunner()
    assert (tipcgen.kept, tipcgen.gated, tipcgen.handshake, tipcgen.bounded, tipcgen.refuses) == (False, True, True, True, True)
    assert (kept.kept, kept.gated, kept.handshake, kept.bounded, kept.refuses) == (True, False, False, False, False)
    assert tipcgen.scripts(BASIC) == (paths.PREPARE_SH, paths.BASIC_RUNNER) and kept.scripts(BASIC) == (paths.BASIC_RUNNER,)
    waited: list = []
    tipcgen.runner_starts(lambda *asked: waited.append(asked))
    assert waited == []  # it waits for tipcgen at each step itself
    kept.runner_starts(lambda *asked: waited.append(asked))
    assert waited == [("start", "train", "*")]  # the weights recorded before it starts


@pytest.mark.parametrize("model_dir, refused", [(None, False), ("m", True)])
def test_only_the_kept_driver_refuses_model_dir(model_dir, refused) -> None:
    request = RunRequest(model_dir=model_dir)
    pipeline.TipcgenRunner().check_options(request)
    if not refused:
        submission_run.KeptRunner().check_options(request)
        return
    with pytest.raises(RunError, match="--model-dir cannot apply to the repository's own runner"):
        submission_run.KeptRunner().check_options(request)


def test_a_prepare_log_that_shows_a_failure_fails_only_a_kept_runners_prepare() -> None:
    """tipcgen's prepare.sh stops at its first failed command (its exit code says it); an upstream one exits 0."""
    lines = ["downloading", "ERROR: Could not find a version that satisfies the requirement paddlenlp"]
    ours, theirs = (Step(kind="prepare", name="prepare", status="passed", exit_code=0) for _ in range(2))
    pipeline.TipcgenRunner().judge_prepare(ours, iter(lines))
    submission_run.KeptRunner().judge_prepare(theirs, iter(lines))
    assert ours.status == "passed" and theirs.status == "failed" and "ERROR: Could not find" in theirs.reason
