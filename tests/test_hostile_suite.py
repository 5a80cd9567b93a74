"""Hostile options and signals for `tipcgen suite` (issue 26, class 7): it owns only what it created
(an output folder holding other files, the repository itself, or a folder above it is refused before
anything is written or removed); --timeout and --jobs are finite and positive; SIGTERM and SIGHUP end it
as SIGINT does: the chains stopped, their summaries kept, suite.json written, no work copy left. The
signal tests start the suite with conftest.default_signals, so they pass under nohup too.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import chain_env, default_signals, make_stub_repo, tipcgen

MODE = "lite_train_lite_infer"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The stub model's repository, rendered once for the module."""
    root = tmp_path_factory.mktemp("hostile_suite") / "stub"
    make_stub_repo(root)
    return root


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else b"/"
            for p in sorted(folder.rglob("*"))}


def test_an_output_folder_holding_other_files_is_refused_and_left_as_it_was(repo: Path, tmp_path: Path):
    user = tmp_path / "mine"
    (user / "work").mkdir(parents=True)
    (user / "work" / "notes.txt").write_text("my work")
    (user / "runs").mkdir()
    (user / "runs" / "r.log").write_text("my runs")
    for out in (user, repo, repo.parent):  # the user's folder; --output . in the repository; a folder above it
        before = _tree(out)
        proc = tipcgen("suite", str(repo), "-o", str(out), "--timeout", "60", cwd=repo)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "nothing was written" in proc.stderr or "copied into itself" in proc.stderr, proc.stderr
        assert _tree(out) == before, "a refused suite wrote or removed something"
    only_runs = tmp_path / "only_runs"
    (only_runs / "runs").mkdir(parents=True)
    proc = tipcgen("suite", str(repo), "-o", str(only_runs), cwd=repo)
    assert proc.returncode == 2 and "did not write (runs)" in proc.stderr, proc.stderr


def test_its_own_output_folder_is_replaced_run_after_run(repo: Path, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()  # an empty folder is the suite's to fill
    for _ in range(2):
        proc = tipcgen("suite", str(repo), "-o", str(out), "-m", MODE, "-m", "whole_infer", cwd=tmp_path)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
        assert {p.name for p in out.iterdir()} == {".tipcgen-suite", "suite.json", "junit.xml", "runs"}
        assert not (out / "work").exists()


@pytest.mark.parametrize("args, words", [
    (["--timeout", "inf"], "--timeout inf"), (["--timeout", "nan"], "--timeout nan"),
    (["--timeout", "-5"], "--timeout -5"), (["--timeout", "0"], "--timeout 0"),
    (["--timeout", "1e300"], "at most"), (["--jobs", "0"], "--jobs"), (["--jobs", "-3"], "--jobs"),
])
def test_limits_must_be_finite_and_positive(repo: Path, tmp_path: Path, args, words):
    proc = tipcgen("suite", str(repo), "-o", str(tmp_path / "out"), *args, cwd=tmp_path)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_still_write_the_suite_summary(repo: Path, tmp_path: Path, signum: int):
    out = tmp_path / "out"
    running = tmp_path / "train.pid"  # the stub's train step writes its pid here, then hangs
    proc = subprocess.Popen([sys.executable, "-m", "tipcgen", "suite", str(repo), "-o", str(out)], cwd=tmp_path,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=chain_env(STUB_HANG_ONCE=f"train:{running}"), preexec_fn=default_signals)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("[suite] start "):
            break
    # the event, not a sleep: the chain is inside its train step (a loaded machine takes longer to get there)
    ceiling = time.monotonic() + 300
    while not running.exists() and proc.poll() is None and time.monotonic() < ceiling:
        time.sleep(0.05)
    assert running.exists(), "the chain never reached its train step"
    proc.send_signal(signum)
    text = proc.stdout.read()
    assert proc.wait(timeout=300) == 128 + signum, text  # a ceiling, not a bound
    suite = json.loads((out / "suite.json").read_text())
    assert suite["interrupted_by"] == signal.Signals(signum).name
    [chain] = suite["chains"]
    assert chain["verdict"] == "interrupted" and chain["summary"]["interrupted"], chain
    assert (out / "runs" / chain["chain"]["key"] / "summary.json").is_file(), "the chain's summary is kept"
    assert not (out / "work").exists() or not any((out / "work").iterdir()), "a work copy was left"
    assert "Traceback" not in text and "INTERRUPTED" in text
