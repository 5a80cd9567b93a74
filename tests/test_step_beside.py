"""A step beside the next ones (tipc_step_beside / tipc_step_collect in tipc_steps.sh): the chain's fixed-input
check starts after the export and runs at low CPU priority beside the inference steps (issue #39: one paddle start
hidden behind theirs). Its record is what a step run alone would write: written when it is collected, after the
steps it ran beside, with its own step configuration, its own seconds, its own failure, timeout or interruption,
and no process of it left behind. Real bash over the generated tipc_steps.sh; the stand-in steps are sleeps.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import chain_env, default_signals, make_stub_repo

PRELUDE = r"""source test_tipc/common_func.sh
source test_tipc/tipc_steps.sh
TIPC_MODEL=stub_model CONFIG=test_tipc/configs/stub_model/train_infer_python.txt PYTHON=python
tipc_start_run "$OUT" results_python.log beside
tipc_at gpu=-1 training=gpus_-1
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rendered stub repository: its test_tipc/ holds the generated common_func.sh and tipc_steps.sh."""
    root = tmp_path_factory.mktemp("beside")
    make_stub_repo(root)
    return root


def _script(body: str) -> str:
    return PRELUDE + body + "\ntipc_finish\n"


def _run(repo: Path, out: Path, body: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", _script(body)], cwd=repo, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OUT": str(out), **env})


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]


@pytest.mark.waits
def test_the_step_beside_is_recorded_after_the_steps_it_ran_beside_with_its_own_fields_and_seconds(repo, tmp_path):
    out = tmp_path / "run"
    proc = _run(repo, out, r"""
tipc_case model_dir=/models/m reference=fixed
tipc_step_beside check fixed "$OUT/fixed.log" "" -- python -c 'import os, time; time.sleep(1); print("nice", os.nice(0))'
tipc_case device=cpu
tipc_step infer first "$OUT/first.log" "" -- sleep 3
tipc_step infer second "$OUT/second.log" "" -- sleep 0.2
tipc_step_collect
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = _records(out)
    assert [r["name"] for r in records] == ["first", "second", "fixed"]
    first, _, fixed = records
    assert (fixed["status"], fixed["kind"], fixed["model_dir"], fixed["reference"]) == ("passed", "check", "/models/m", "fixed")
    assert fixed["training"] == "gpus_-1" and first["device"] == "cpu" and first["reference"] is None
    # Its own seconds (it ended during `first`), not the time until it was collected (after `second`).
    assert 1.0 <= float(fixed["seconds"]) < float(first["seconds"]), records
    # 10 above the runner's (this process's: the suite may itself run under nice), at most 19
    assert f"nice {min(os.nice(0) + 10, 19)}" in (out / "fixed.log").read_text(), "the step beside runs at low priority"
    lines = proc.stdout.splitlines()
    assert lines.index("[tipc] RUN  check fixed (beside the next steps)") < lines.index("[tipc] RUN  infer first")
    assert lines.index("[tipc] RUN  infer second") < next(i for i, line in enumerate(lines) if line.startswith("[tipc] PASS check fixed"))
    assert "3 passed, 0 failed" in proc.stdout
    assert (out / "results_python.log").read_text().count("Run successfully with command - stub_model - ") == 3


@pytest.mark.waits
def test_a_step_that_waits_for_its_go_does_its_work_after_the_steps_and_its_wait_is_not_its_seconds(repo, tmp_path):
    """check_inference.py's way: prepare beside the steps, announce the wait, work once the runner says go."""
    out = tmp_path / "run"
    waiter = ("bash -c 'touch \"$TIPC_BESIDE_GO.waiting\"; while [ ! -e \"$TIPC_BESIDE_GO\" ]; do sleep 0.02; done; "
              "date +%s%N > \"$OUT/worked_at\"; sleep 0.5'")
    proc = _run(repo, out, f"""
tipc_step_beside check fixed "$OUT/fixed.log" "" -- {waiter}
tipc_step infer first "$OUT/first.log" "" -- bash -c 'sleep 2; date +%s%N > "$OUT/first_ended_at"'
tipc_step_collect
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, fixed = _records(out)
    assert int((out / "worked_at").read_text()) > int((out / "first_ended_at").read_text()), "its work ran after"
    assert 0.5 <= float(fixed["seconds"]) < float(first["seconds"]), (fixed, first)
    assert not list(out.glob(".beside_*")), "the go files are removed"


@pytest.mark.parametrize("command, reason", [
    ("bash -c 'echo broken >&2; exit 3'", "exit code 3"),
    ("sleep 30", "timeout after 1 s"),
    ("no-such-program-tipcgen", "command not found or not executable: no-such-program-tipcgen"),
    ("bash -c 'kill -SEGV $$'", "killed by signal SIGSEGV"),
])
@pytest.mark.waits
def test_a_failing_step_beside_fails_the_chain_with_its_reason(repo, tmp_path, command, reason):
    out = tmp_path / "run"
    proc = _run(repo, out, f"""
tipc_step_beside check fixed "$OUT/fixed.log" "" -- {command}
tipc_step infer first "$OUT/first.log" "" -- sleep 0.1
tipc_step_collect
""", TIPC_STEP_TIMEOUT="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    fixed = next(r for r in _records(out) if r["name"] == "fixed")
    assert (fixed["status"], fixed["reason"]) == ("failed", reason), fixed
    assert "[tipc] FAIL check fixed" in proc.stdout and "1 passed, 1 failed" in proc.stdout


def test_a_step_beside_left_uncollected_is_collected_by_the_closing_line(repo, tmp_path):
    out = tmp_path / "run"
    proc = _run(repo, out, """tipc_step_beside check fixed "$OUT/fixed.log" "" -- bash -c 'exit 4'""")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [(r["name"], r["reason"]) for r in _records(out)] == [("fixed", "exit code 4")]


def test_a_second_step_beside_first_collects_the_first(repo, tmp_path):
    out = tmp_path / "run"
    proc = _run(repo, out, r"""
tipc_case model_dir=one
tipc_step_beside check one "$OUT/one.log" "" -- sleep 0.3
tipc_case model_dir=two
tipc_step_beside check two "$OUT/two.log" "" -- true
tipc_step_collect
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [(r["name"], r["model_dir"]) for r in _records(out)] == [("one", "one"), ("two", "two")]


def _left_behind(marker: str) -> list[str]:
    """The live sleepers (and their timeouts) whose command line holds marker; the runner itself (bash -c, its
    script holds the marker too) is not one."""
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker.encode() in words and words[0] != b"bash":
                left.append(entry.name)
    return left


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_stops_the_step_beside_too_and_records_it(repo, tmp_path, signum):
    out = tmp_path / "run"
    marker = f"beside-{os.getpid()}-{int(signum)}"  # an argument of both steps' sleepers: it names this test
    sleeper = f"python -c 'import time; time.sleep(600)' {marker}"
    body = f"""
tipc_step_beside check fixed "$OUT/fixed.log" "" -- {sleeper}
tipc_step infer first "$OUT/first.log" "" -- {sleeper}
tipc_step_collect
"""
    proc = subprocess.Popen(["bash", "-c", _script(body)], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "OUT": str(out)}, start_new_session=True,
                            preexec_fn=default_signals)
    assert proc.stdout is not None
    for line in proc.stdout:  # wait for the event: the step in front has started
        if line.startswith("[tipc] RUN  infer first"):
            break
    deadline = time.monotonic() + 120  # a ceiling for a loaded machine, not a bound
    while len(_left_behind(marker)) < 4 and time.monotonic() < deadline:  # two sleepers, each under its timeout
        time.sleep(0.05)
    assert len(_left_behind(marker)) == 4, "both steps run at once"
    proc.send_signal(signum)
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 130, rest
    records = {r["name"]: r for r in _records(out)}
    assert records["fixed"]["reason"] == records["first"]["reason"] == "interrupted", records
    deadline = time.monotonic() + 120
    while _left_behind(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left_behind(marker) == [], "no process of the step beside outlives the runner"



_ZOMBIE = """import subprocess, sys, time
step = subprocess.Popen(["true"])  # a child that ends at once and is not waited for: a zombie of this process
while open(f"/proc/{step.pid}/stat").read().rsplit(") ", 1)[1][0] != "Z":
    time.sleep(0.01)
live = subprocess.Popen(["sleep", "60"])
print(subprocess.run(["bash", "-c", sys.argv[1], "-", str(step.pid), str(live.pid)], capture_output=True, text=True).stdout)
live.kill()
"""


def test_a_step_that_ended_but_was_not_reaped_is_seen_to_have_ended(repo):
    """tipc_running, which every wait of the runner polls: a process that has exited and not been reaped (a zombie)
    has ended, though `kill -0` succeeds on it. bash reaps its children in the background only when a SIGCHLD
    reaches it; a runner under load (two busy loops, 3 test workers) was seen with SIGCHLD blocked, polling its
    golden step's zombie with `kill -0` until the CI run's time would have run out."""
    script = PRELUDE.split("\n", 2)[1] + r"""
kill -0 "$1" && echo "kill -0: the zombie runs"
tipc_running "$1" || echo "tipc_running: the zombie ended"
tipc_running "$2" && echo "tipc_running: the sleep runs"
tipc_running 999999999 || echo "tipc_running: no such process ended"
"""
    proc = subprocess.run([os.environ.get("PYTHON", "python"), "-c", _ZOMBIE, script], cwd=repo, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.split("\n")[:4] == ["kill -0: the zombie runs", "tipc_running: the zombie ended",
                                           "tipc_running: the sleep runs", "tipc_running: no such process ended"], proc


# ---- the export beside the eval (issue #59: every proof at no cost to the user's wait) ----------------------------

CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"
_MODE = "lite_train_lite_infer"


def _chain(repo: Path, **env: str) -> list[str]:
    """The stub chain through the generated prepare.sh and runner, as a reviewer runs them: its progress lines."""
    lines = []
    for script in ("test_tipc/prepare.sh", "test_tipc/test_train_inference_python.sh"):
        proc = subprocess.run(["bash", script, CONFIG, _MODE], cwd=repo, capture_output=True, text=True, timeout=300,
                              env=chain_env(**env))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        lines += [line for line in proc.stdout.splitlines() if line.startswith("[tipc] ")]
    return lines


def _at(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


@pytest.mark.parametrize("serial", [True, False], ids=["serial", "side-by-side"])
def test_the_export_runs_beside_the_eval_where_there_are_cores_and_the_inference_waits_for_both(stub_repo, serial):
    """Where the runner has the cores (nproc: its CPU affinity) and TIPC_SERIAL is not set, the export starts beside
    the eval, at the runner's priority, and the first inference case starts only after both ended; else one step
    at a time, as upstream runs them. The records are the same, in the same order (train, eval, export, infer)."""
    lines = _chain(stub_repo, **({"TIPC_SERIAL": "1"} if serial else {}))
    export = _at(lines, "[tipc] RUN  export")
    eval_run, eval_end = _at(lines, "[tipc] RUN  eval"), _at(lines, "[tipc] PASS eval")
    export_end, infer = _at(lines, "[tipc] PASS export"), _at(lines, "[tipc] RUN  infer")
    if serial or len(os.sched_getaffinity(0)) == 1:
        assert eval_end < export and "beside" not in lines[export], lines
    else:
        assert export < eval_run < eval_end and lines[export].endswith("(beside the next steps)"), lines
    assert eval_end < infer and export_end < infer, lines
    records = _records(stub_repo / "test_tipc/output/stub_model" / _MODE)
    assert [r["kind"] for r in records if r["status"] == "passed"][:3] == ["train", "eval", "export"], records
    export_record = next(r for r in records if r["kind"] == "export")
    assert export_record["model_dir"].endswith("norm_train_gpus_-1_autocast_fp32"), export_record


def test_an_export_beside_runs_at_the_runners_priority_and_a_proof_beside_at_low_priority(repo, tmp_path):
    out = tmp_path / "run"
    proc = _run(repo, out, r"""
nice_of='import os; print("nice", os.nice(0))'
tipc_step_beside export exported "$OUT/export.log" "" -- python -c "$nice_of"
tipc_step eval evaluated "$OUT/eval.log" "" -- sleep 0.2
tipc_step_collect
tipc_step_beside check proof "$OUT/proof.log" "" -- python -c "$nice_of"
tipc_step_collect
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    base = os.nice(0)  # the runner's (the suite may itself run under nice)
    assert f"nice {base}" in (out / "export.log").read_text()
    assert f"nice {min(base + 10, 19)}" in (out / "proof.log").read_text()


def test_an_export_beside_that_fails_skips_the_inference_naming_it(stub_repo):
    export = stub_repo / "stub/stub_export.py"
    export.write_text("raise SystemExit(3)\n" + export.read_text())
    lines = []
    for script in ("test_tipc/prepare.sh", "test_tipc/test_train_inference_python.sh"):
        proc = subprocess.run(["bash", script, CONFIG, _MODE], cwd=stub_repo, capture_output=True, text=True,
                              timeout=300, env=chain_env())
        lines += proc.stdout.splitlines()
    assert proc.returncode == 1, lines
    assert any(line.startswith("[tipc] FAIL export") and "exit code 3" in line for line in lines), lines
    assert any(line.startswith("[tipc] PASS eval") for line in lines), lines  # the eval beside it is its own
    assert any(line.startswith("[tipc] SKIP infer") and "export" in line and "did not pass" in line
               for line in lines), lines
    assert not any(line.startswith("[tipc] RUN  infer") for line in lines), lines
