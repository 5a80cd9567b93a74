"""Steps that break in the ways real model scripts do, through the generated runner with the stub model.

A crash, a kill by a signal and gigabytes of output each fail that one step with a reason; the
chain goes on, and the log of a step that floods its output stops at TIPC_MAX_LOG_MB. A missing
interpreter stops the chain before any step; a missing script or paddle fails the step that needs it.
(Exit codes, hangs and Ctrl-C are in test_runner.py; `tipcgen doctor` in test_doctor.py.)
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (NO_PADDLE_PYTHON, chain_env, make_stub_repo, needs_plain_python, read_records, read_summary,
                      tipcgen)

MODE = "lite_train_lite_infer"


def run(repo: Path, env: dict) -> tuple[int, str, list[dict]]:
    proc = tipcgen("run", "--mode", MODE, cwd=repo, env=env, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr, read_records(repo, "stub_model", MODE)


def only(records: list[dict], kind: str) -> dict:
    ran = [r for r in records if r["kind"] == kind and r["status"] != "skipped"]
    assert len(ran) == 1, ran
    return ran[0]


def assert_rest_of_chain_ran(records: list[dict]) -> None:
    assert only(records, "train")["status"] == "passed" and only(records, "export")["status"] == "passed"
    assert any(r["kind"] == "infer" and r["status"] == "passed" for r in records)


def test_a_crash_fails_the_step_and_shows_the_traceback(stub_repo: Path):
    rc, out, records = run(stub_repo, {"STUB_RAISE": "eval"})
    assert rc == 1
    step = only(records, "eval")
    assert step["status"] == "failed" and step["reason"] == "exit code 1"
    assert "RuntimeError: eval: crashing on purpose" in out, "the log tail belongs in the summary"
    assert_rest_of_chain_ran(records)


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGSEGV"])
def test_a_step_killed_by_a_signal_names_the_signal(stub_repo: Path, signal_name: str):
    rc, _, records = run(stub_repo, {"STUB_KILL": f"eval:{signal_name}"})
    assert rc == 1
    step = only(records, "eval")
    assert step["status"] == "failed" and step["reason"] == f"killed by signal {signal_name}", step
    assert_rest_of_chain_ran(records)
    summary = read_summary(stub_repo, mode=MODE)
    assert summary["exit_code"] == 1 and not summary["ok"]


def test_a_native_step_flooding_its_log_stops_at_the_cap(stub_repo: Path):
    """A program that does not ignore SIGPIPE (a C++ predictor) is killed when its log is full at TIPC_MAX_LOG_MB."""
    rc, _, records = run(stub_repo, {"STUB_SPAM": "eval:native", "TIPC_MAX_LOG_MB": "1"})
    assert rc == 1
    step = only(records, "eval")
    assert step["reason"] == ("log over 1 MB (TIPC_MAX_LOG_MB): the log stops there, and the step was killed by "
                              "SIGPIPE when it wrote on"), step
    assert (stub_repo / step["log"]).stat().st_size == 1 << 20
    assert_rest_of_chain_ran(records)


def test_the_log_cap_never_limits_what_a_step_saves(stub_repo: Path):
    """Issue #35: the cap was `ulimit -f`, which killed a step saving a checkpoint larger than the cap with
    a plain `exit code 1`. Now a 3 MiB checkpoint is saved whole under a 1 MB log cap; a file-size limit of
    the user's own shell still kills a native step, and its reason says which limit and how to raise it."""
    rc, out, records = run(stub_repo, {"STUB_SAVE_MB": "3:native", "TIPC_MAX_LOG_MB": "1"})
    train = only(records, "train")
    assert train["status"] == "passed", out
    assert (stub_repo / train["model_dir"] / "checkpoint/big.pdparams").stat().st_size == 3 << 20
    proc = subprocess.run(["bash", "-c", 'ulimit -f 2048 && exec "$@"', "bash", sys.executable, "-m", "tipcgen", "run",
                           "--mode", MODE], cwd=stub_repo, env=chain_env(STUB_SAVE_MB="3:native"), capture_output=True,
                          text=True, timeout=300)
    train = only(read_records(stub_repo, "stub_model", MODE), "train")
    assert proc.returncode == 1 and train["status"] == "failed", proc.stdout + proc.stderr
    assert train["reason"] == ("killed by signal SIGXFSZ: a file it wrote reached the file-size limit of the shell "
                               "that started the run (ulimit -f 2048): raise it (ulimit -f unlimited) and run again")


@pytest.fixture(scope="module")
def python_flood(tmp_path_factory) -> tuple[Path, int, str, list[dict]]:
    """One chain whose Python eval step floods its log past a 1 MB cap, for the tests that read it: the
    repository, then what run() returns."""
    repo = make_stub_repo(tmp_path_factory.mktemp("python_flood"))
    return (repo, *run(repo, {"STUB_SPAM": "eval", "TIPC_MAX_LOG_MB": "1"}))


def test_a_python_step_flooding_its_log_stops_at_the_cap(python_flood):
    """CPython ignores SIGPIPE, so the write fails (EPIPE) and the script exits non-zero: the cap still holds."""
    stub_repo, rc, _, records = python_flood
    assert rc == 1
    step = only(records, "eval")
    assert step["status"] == "failed"
    assert (stub_repo / step["log"]).stat().st_size == 1 << 20
    assert_rest_of_chain_ran(records)


def test_a_python_step_flooding_its_log_says_why(python_flood):
    _, _, _, records = python_flood
    assert only(records, "eval")["reason"].startswith("log over 1 MB")


def test_a_missing_interpreter_stops_before_any_step(stub_repo: Path):
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, env={"TIPC_PYTHON": "no-such-python"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "error: the chain's interpreter 'no-such-python' (--python / TIPC_PYTHON) is not on PATH" in proc.stderr
    assert "hint: " in proc.stderr and "TIPC_PYTHON" in proc.stderr and "Traceback" not in proc.stderr
    assert "[tipc] RUN" not in proc.stdout


def test_a_missing_script_is_named_before_any_step_runs(stub_repo: Path):
    (stub_repo / "stub" / "stub_eval.py").unlink()
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "stub/stub_eval.py" in proc.stderr and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    assert "[tipc] RUN" not in proc.stdout


def test_a_script_that_disappears_fails_its_step_and_says_which(stub_repo: Path):
    """Bash run directly (no preflight): the step fails and its log names the file."""
    (stub_repo / "stub" / "stub_eval.py").unlink()
    config = "test_tipc/configs/stub_model/train_infer_python.txt"
    proc = subprocess.run(["bash", "test_tipc/test_train_inference_python.sh", config, MODE], cwd=stub_repo,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    records = read_records(stub_repo, "stub_model", MODE)
    step = only(records, "eval")
    assert step["reason"] == "exit code 2" and "stub/stub_eval.py" in (stub_repo / step["log"]).read_text()
    assert_rest_of_chain_ran(records)


@needs_plain_python
def test_without_paddle_the_run_stops_before_any_step_and_says_what_to_install(tmp_path: Path):
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    proc = tipcgen("run", "--mode", MODE, cwd=tmp_path, env={"TIPC_PYTHON": NO_PADDLE_PYTHON, "TIPC_NO_PADDLE": ""},
                   timeout=300)  # conftest.py turns the probe off for the stub chains: on here
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "paddle is not installed for" in proc.stderr and "pip install paddlepaddle==3.3.1" in proc.stderr
    assert "[tipc] RUN" not in proc.stdout and "Traceback" not in proc.stderr


@needs_plain_python
def test_a_chain_that_needs_no_paddle_runs_with_tipc_no_paddle(stub_repo: Path):
    """TIPC_NO_PADDLE=1 (docs/CHAINS.md) skips only the paddle probe: the stub's steps run and pass
    on a Python without paddle; without the switch the same run stops before any step."""
    env = {"TIPC_PYTHON": NO_PADDLE_PYTHON}
    refused = tipcgen("run", "--mode", MODE, cwd=stub_repo, env={**env, "TIPC_NO_PADDLE": ""}, timeout=300)
    assert refused.returncode == 2 and "paddle is not installed for" in refused.stderr, refused.stderr
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, env={**env, "TIPC_NO_PADDLE": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    passed = {r["kind"] for r in read_records(stub_repo, "stub_model", MODE) if r["status"] == "passed"}
    assert passed >= {"train", "eval", "export", "infer"}, passed


@needs_plain_python
def test_without_paddle_the_runner_fails_the_first_paddle_step_and_skips_its_dependents(tmp_path: Path):
    """The generated runner run directly (no preflight): train fails with the import error in its log."""
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    config = "test_tipc/configs/bert_sst2/train_infer_python.txt"
    env = dict(__import__("os").environ, TIPC_PYTHON=NO_PADDLE_PYTHON)
    prepare, proc = [subprocess.run(["bash", script, config, MODE], cwd=tmp_path, env=env, capture_output=True,
                                    text=True)
                     for script in ("test_tipc/prepare.sh", "test_tipc/test_train_inference_python.sh")]
    assert prepare.returncode == 0, prepare.stdout + prepare.stderr  # lite data needs no paddle
    assert proc.returncode == 1, proc.stdout + proc.stderr
    records = read_records(tmp_path, "bert_sst2", MODE)
    assert [r["kind"] for r in records if r["status"] == "failed"] == ["train"]
    assert "ModuleNotFoundError: No module named" in (tmp_path / records[1]["log"]).read_text()
    assert all(r["status"] == "skipped" for r in records if r["kind"] != "train")
