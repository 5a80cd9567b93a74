"""Submission mode on a repository with its own runner (tests/fixtures/own_runner, test project c of issue 28).

Real subprocesses, no paddle: the fixture's runner logs to test_tipc/output/<model>/results_python.log (no
mode folder) and exits 0 whatever its steps did; its scripts and prepare.sh need FLAGS_own_runner=1, the
descriptor's env:; its prepare.sh fails at the end (the template's offline wget); inference fails on purpose
for batch size 2.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tipcgen.format import paths
from tipcgen.run import submission_run

from conftest import tipcgen

FIXTURE = Path(__file__).parent / "fixtures" / "own_runner"
SUMMARY = "test_tipc/output/own_model/lite_train_lite_infer/summary.json"
EXPECTED = [("prepare", "failed"), ("train", "passed"), ("eval", "passed"), ("export", "passed"),
            ("infer", "passed"), ("infer", "failed")]


@pytest.fixture
def own_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    tipcgen("init", "tipc.yaml", "--submission", cwd=repo, check=True)
    return repo


def run_steps(repo: Path) -> tuple[int, dict]:
    assert "FLAGS_own_runner" not in os.environ  # only the descriptor's env: sets it
    proc = tipcgen("run", "-q", cwd=repo)
    return proc.returncode, json.loads((repo / SUMMARY).read_text())


def test_each_status_line_of_the_own_runner_is_reported_truthfully(own_repo: Path, descriptor_loads: list) -> None:
    code, summary = run_steps(own_repo)
    # the descriptor is loaded once: its checks.own_weights for preflight.refuse, its env: for the runner
    assert [kind for kind, _ in descriptor_loads] == ["walk", "load"], descriptor_loads
    assert code == 1 and summary["ok"] is False
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == EXPECTED
    assert [s["name"] for s in summary["steps"]][4:] == ["python_infer_cpu_batchsize_1", "python_infer_cpu_batchsize_2"]
    assert "status lines read from test_tipc/output/own_model/results_python.log" in summary["notes"]
    assert summary["runner_exit_code"] == 0  # the runner's own exit status says nothing about its steps
    # the env reached prepare.sh (it wrote the data) and the runner (train read it): FLAGS_own_runner came only
    # from the descriptor
    assert "prepare.sh and the runner ran with the descriptor's env: FLAGS_own_runner=1" in summary["notes"]
    prepare = summary["steps"][0]
    assert prepare["exit_code"] == 4 and "the runner ran anyway" in prepare["note"]
    assert "wget: unable to resolve host" in (own_repo / prepare["log"]).read_text()
    # a second run reads only its own status lines (the runner appends to the same results_python.log)
    code, summary = run_steps(own_repo)
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == EXPECTED


def test_without_the_env_the_steps_fail_and_init_submission_rerenders_its_own_files(own_repo: Path) -> None:
    descriptor = own_repo / "tipc.yaml"
    descriptor.write_text(descriptor.read_text().replace('env: {FLAGS_own_runner: "1"}\n', ""))
    # the config and docs init --submission rendered itself are replaced without --force
    again = tipcgen("init", "tipc.yaml", "--submission", cwd=own_repo)
    assert again.returncode == 0, again.stderr
    code, summary = run_steps(own_repo)
    assert code == 1
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == [
        ("prepare", "failed"), ("train", "failed"), ("eval", "failed"), ("export", "failed"),
        ("infer", "failed"), ("infer", "failed")]
    assert summary["steps"][0]["exit_code"] == 3  # prepare.sh's own check of FLAGS_own_runner
    # a doc the user edited is still theirs: replaced only with --force
    readme = own_repo / "test_tipc/README.md"
    readme.write_text(readme.read_text() + "\nour notes\n")
    descriptor.write_text(descriptor.read_text().replace("gpu_list: [\"-1\"]", "gpu_list: [\"0\", \"-1\"]"))
    refused = tipcgen("init", "tipc.yaml", "--submission", cwd=own_repo)
    assert refused.returncode == 2 and "test_tipc/README.md" in refused.stderr
    assert "test_tipc/docs" not in refused.stderr and "our notes" in readme.read_text()


def test_the_log_path_is_read_from_the_runner(tmp_path: Path) -> None:
    runner = tmp_path / paths.BASIC_RUNNER
    runner.parent.mkdir(parents=True)
    runner.write_text('LOG_PATH="./out/${model_name}/logs_${MODE}"\nmkdir -p ${LOG_PATH}\n'
                      'status_log="${LOG_PATH}/results_python.log"\nother="${lines[3]}/results_python.log"\n')
    logs = submission_run._results_logs(tmp_path, "m", "lite_train_lite_infer")
    assert logs[0] == tmp_path / "out/m/logs_lite_train_lite_infer/results_python.log"
    assert tmp_path / "test_tipc/output/m/results_python.log" in logs
    assert not any("lines" in str(p) for p in logs)  # a value the runner computes is not guessed


def test_status_lines_only_printed_by_the_runner_are_read(own_repo: Path) -> None:
    """A runner that writes no results_python.log anywhere: its printed status lines, said so."""
    runner = own_repo / paths.BASIC_RUNNER
    runner.write_text(runner.read_text().replace('status_log="${LOG_PATH}/results_python.log"', "status_log=/dev/null"))
    code, summary = run_steps(own_repo)
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == EXPECTED
    assert "no results_python.log grew during the run: the status lines are those the runner printed" in summary["notes"]
    assert any("changed since tipcgen init --submission" in p for p in summary["problems"])  # the edit is still named


def test_status_lines_in_paddleocr_form_name_their_log(tmp_path: Path) -> None:
    """PaddleOCR's status_check writes `... - MODEL - COMMAND - LOG_PATH`: the log is the step's, not its command."""
    log = tmp_path / "test_tipc/output/m/lite/python_infer_cpu.log"
    log.parent.mkdir(parents=True)
    log.write_text("ok\n")
    values = {"train.norm": "tools/train.py -c x.yml", "inference.script": "tools/infer/predict_det.py"}
    lines = ["\x1b[33m Run successfully with command - m - python3 tools/train.py -c x.yml -o Global.epoch_num=1 - "
             "./test_tipc/output/m/lite/train.log!  \x1b[0m",
             " Run failed with command - m - python3 tools/infer/predict_det.py --use_gpu=False - "
             "./test_tipc/output/m/lite/python_infer_cpu.log! "]
    train, infer = submission_run.read_status_lines(lines, values, tmp_path)
    assert (train.kind, train.status, train.command) == ("train", "passed", "python3 tools/train.py -c x.yml -o Global.epoch_num=1")
    assert train.name == "train" and train.log == "" and train.note  # its log is not there: the status line is all
    assert (infer.kind, infer.status, infer.name) == ("infer", "failed", "python_infer_cpu")
    assert infer.log == "test_tipc/output/m/lite/python_infer_cpu.log"
