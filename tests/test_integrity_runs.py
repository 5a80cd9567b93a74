"""Issue 12, the runner's part: a shifted or conflicted config never runs, runs never mix, and a
verdict is only PASSED when the steps it claims ran. Real scripts, real processes (the stub model).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import chain_env, default_signals, edit, make_stub_repo, read_records, read_summary, tipcgen

MODE = "lite_train_lite_infer"
CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"
RUNNER = "test_tipc/test_train_inference_python.sh"


@pytest.fixture(scope="module")
def layout_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rendered stub repository for the layout cases: none of them runs a step."""
    repo = tmp_path_factory.mktemp("layout")
    make_stub_repo(repo)
    return repo


def _insert(lines: list[str], at: int, *new: str) -> list[str]:
    return lines[:at] + list(new) + lines[at:]


# Each case: how the config is broken, and the editor line the runner must name. Line 44 is
# --batch_size:1 (idx 43), inside the keyless inference block (idx 40-50) where no key anchors.
BROKEN = {
    "conflict-markers": (lambda ls: ls[:43] + ["<<<<<<< ours", ls[43], "=======", "--batch_size:2", ">>>>>>> theirs"]
                         + ls[44:], 44, "merge conflict marker"),
    "extra-line-in-inference-block": (lambda ls: _insert(ls, 44, "--foo:bar"), 45, "expected key '--use_tensorrt'"),
    "duplicated-line-in-inference-block": (lambda ls: _insert(ls, 43, ls[42]), 44, "expected key '--batch_size'"),
    "missing-line-in-inference-block": (lambda ls: ls[:44] + ls[45:], None, "51"),
    "tab-after-key": (lambda ls: [line.replace("--epochs:", "--epochs\t:") for line in ls], 7, "whitespace around ':'"),
    "fullwidth-colon": (lambda ls: [line.replace("--cpu_threads:", "--cpu_threads\uff1a") for line in ls], 43,
                        "full-width"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_layout_is_refused_by_the_runner_and_by_run(layout_repo: Path, case: str):
    change, line, words = BROKEN[case]
    original = (layout_repo / CONFIG).read_text(encoding="utf-8").splitlines()
    name = f"test_tipc/configs/stub_model/{case}.txt"
    (layout_repo / name).write_text("\n".join(change(original)) + "\n", encoding="utf-8")
    direct = subprocess.run(["bash", RUNNER, name, MODE], cwd=layout_repo, capture_output=True, text=True,
                            timeout=60)
    assert direct.returncode == 2, direct.stdout + direct.stderr
    assert words in direct.stderr and (line is None or f"{name}:{line}:" in direct.stderr), direct.stderr
    assert "[tipc] RUN" not in direct.stdout
    proc = tipcgen("run", "--mode", MODE, "--config", name, cwd=layout_repo, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "lint error" in proc.stderr and f"{name}:" in proc.stderr and "Traceback" not in proc.stderr
    assert "[tipc] RUN" not in proc.stdout and not (layout_repo / "test_tipc/output").exists()
    lint = tipcgen("lint", name, cwd=layout_repo, timeout=60)
    assert lint.returncode == 1 and "error" in lint.stdout, "lint must see what run refuses"


def test_run_refuses_what_only_the_runner_sees_before_prepare_runs(layout_repo: Path):
    """An extra line among idx 46-50 has no value shape lint could check; the runner knows the keys."""
    original = (layout_repo / CONFIG).read_text(encoding="utf-8").splitlines()
    name = "test_tipc/configs/stub_model/extra-line-late.txt"
    (layout_repo / name).write_text("\n".join(_insert(original, 47, "--x:y")) + "\n", encoding="utf-8")
    assert tipcgen("lint", name, cwd=layout_repo).returncode == 0  # what lint cannot see
    proc = tipcgen("run", "--mode", MODE, "--config", name, cwd=layout_repo, timeout=60)
    assert proc.returncode == 2 and f"{name}:48: expected key '--data_file'" in proc.stderr, proc.stderr
    assert "prepare" not in proc.stdout and not (layout_repo / "test_tipc/output").exists()


def test_the_paddle2onnx_runner_refuses_conflict_markers(tmp_path: Path):
    repo = tmp_path / "repo"
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    config = next((repo / "test_tipc/configs").glob("*/*paddle2onnx*.txt"))
    text = config.read_text().replace("--use_onnx:True\n", "<<<<<<< ours\n--use_onnx:True\n=======\n"
                                      "--use_onnx:False\n>>>>>>> theirs\n")
    config.write_text(text)
    direct = subprocess.run(["bash", "test_tipc/test_paddle2onnx.sh", str(config.relative_to(repo)), MODE], cwd=repo,
                            capture_output=True, text=True, timeout=60)
    assert direct.returncode == 2 and "merge conflict marker" in direct.stderr, direct.stderr


# -- one run per output folder; signals; the death of tipcgen run ----------------------------------

RUN_DIR = Path("test_tipc/output/stub_model") / MODE


def _start(repo: Path, **env: str) -> subprocess.Popen:
    """tipcgen run in its own process group (as a shell's job is), training for a fixed time."""
    return subprocess.Popen([sys.executable, "-m", "tipcgen", "run", "--mode", MODE], cwd=repo,
                            env=chain_env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=default_signals)


def _wait_for_training(proc: subprocess.Popen, held: Path) -> list[str]:
    """Until the train step is in its wait: it has written its pid to held (STUB_HANG_ONCE, STUB_HOLD)."""
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("[tipc] RUN  train"):
            ceiling = time.monotonic() + 120  # a ceiling, not a bound: a loaded machine gets there later
            while not held.exists() and proc.poll() is None and time.monotonic() < ceiling:
                time.sleep(0.02)
            assert held.exists(), "the train step never started its wait:\n" + "".join(seen)
            return seen
    raise AssertionError("training never started:\n" + "".join(seen))


def _left_behind(repo: Path) -> list[str]:
    """Live processes whose command line or working folder mentions the test's repository."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if "Z" not in state and (str(repo) in cmdline or cwd.startswith(str(repo))):
            left.append(f"{entry.name}: {cmdline}")
    return left


def _gone(repo: Path, seconds: float = 60) -> list[str]:
    """What is left of the repository's processes once they are all gone, or after a ceiling (not a bound: the
    tests that stop a run set TIPC_KILL_GRACE=600, so that a killer left behind would stay far longer)."""
    deadline = time.monotonic() + seconds
    while (left := _left_behind(repo)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_a_second_run_on_the_same_folder_is_refused_and_the_first_is_untouched(stub_repo: Path, tmp_path: Path):
    held = tmp_path / "train.pid"  # the first run's train step waits there until the test lets it go
    first = _start(stub_repo, STUB_HOLD=f"train:{held}")
    try:
        _wait_for_training(first, held)
        second = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=60)
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"pid {first.pid}" in second.stderr and "Traceback" not in second.stderr, second.stderr
        direct = subprocess.run(["bash", RUNNER, CONFIG, MODE], cwd=stub_repo, capture_output=True, text=True,
                                timeout=60)
        assert direct.returncode == 2 and f"pid {first.pid}" in direct.stderr, direct.stderr
        assert first.poll() is None, "the first run was still training while the second was refused"
    finally:
        Path(f"{held}.go").touch()  # the first run goes on, whatever happened here
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 0, out
    summary = read_summary(stub_repo)
    names = [(s["kind"], s["name"]) for s in summary["steps"]]
    assert summary["ok"] and len(names) == len(set(names)) == 8, names
    assert not (stub_repo / "test_tipc/output/stub_model/lite_train_lite_infer.lock").exists()


@pytest.mark.parametrize("how, code", [("SIGTERM", 143), ("SIGHUP", 129), ("group SIGINT", 130)])
def test_a_signal_mid_training_writes_an_interrupted_summary_and_leaves_no_process(stub_repo: Path, tmp_path: Path,
                                                                                    how, code):
    held = tmp_path / "train.pid"  # the train step writes its pid there, then sleeps
    proc = _start(stub_repo, STUB_HANG_ONCE=f"train:{held}", TIPC_KILL_GRACE="600")
    _wait_for_training(proc, held)
    if how == "group SIGINT":  # Ctrl-C in a terminal: the whole foreground process group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(getattr(signal, how))
    out, _ = proc.communicate(timeout=120)  # a ceiling: a loaded machine stops the chain more slowly
    assert proc.returncode == code, out
    summary = read_summary(stub_repo)
    assert summary["interrupted"] and summary["interrupted_by"] == how.split()[-1] and not summary["ok"]
    assert summary["exit_code"] == code
    train = [s for s in summary["steps"] if s["kind"] == "train" and s["status"] != "skipped"]
    # The step cut short is interrupted in summary.json, not failed (#57); the runner's own record keeps failed.
    assert [(s["status"], s["reason"]) for s in train] == [("interrupted", "interrupted")], train
    assert summary["interrupted_steps"] == 1 and summary["failed"] == 0, summary
    records = read_records(stub_repo, "stub_model", MODE)
    assert [(r["status"], r["reason"]) for r in records if r["kind"] == "train" and r["status"] != "skipped"] == [
        ("failed", "interrupted")]
    assert "INTERRUPTED" in out and "PASSED" not in out
    # The table shows the step cut short as interrupted, not failed, and the closing line counts it apart (#57).
    assert re.search(r"^  INTR  train ", out, re.MULTILINE) and not re.search(r"^  FAIL  train ", out, re.MULTILINE), out
    assert re.search(r"^INTERRUPTED: \d+ passed, 0 failed, \d+ skipped, 1 interrupted in ", out, re.MULTILINE), out
    assert "--- train" not in out, "no failure block for a step cut short"
    # JUnit: an <error> naming the interrupt (a CI page counts it with the failures), never a <failure> or <skipped>.
    case = _junit_case(stub_repo, "train")
    assert case.find("failure") is None and case.find("skipped") is None, ET.tostring(case)
    assert case.find("error").get("message") == f"interrupted by {how.split()[-1]}: the run was stopped while this step ran"
    if how == "group SIGINT":  # the report (once: it renders, it does not run) shows the step and the count
        report = tipcgen("report", "--format", "all", cwd=stub_repo, timeout=300)
        assert report.returncode == 0 and "1 interrupted" in report.stdout, report.stdout + report.stderr
        run_dir = stub_repo / "test_tipc/output/stub_model" / MODE
        html, md = (run_dir / "report.html").read_text(), (run_dir / "report.md").read_text()
        assert '<td class="status INTR">INTR</td><td>train</td>' in html and 'class="verdict INTR"' in html, html
        assert "1 interrupted" in html and "1 interrupted" in md and "**INTERRUPTED**" in md
    assert _gone(stub_repo) == []


def _junit_case(repo: Path, kind: str) -> ET.Element:
    """The one <testcase> of a step kind in the run's junit.xml (not a skipped one)."""
    root = ET.parse(repo / "test_tipc/output/stub_model" / MODE / "junit.xml").getroot()
    cases = [c for c in root.iter("testcase") if c.get("classname", "").endswith(f".{kind}") and c.find("skipped") is None]
    assert len(cases) == 1, [ET.tostring(c) for c in cases]
    return cases[0]


@pytest.mark.waits
def test_a_ci_cancel_gets_the_summary_before_its_kill(stub_repo: Path, tmp_path: Path):
    """SIGTERM, then SIGKILL a second later (a CI cancel), while the step ignores SIGTERM."""
    held = tmp_path / "train.pid"
    proc = _start(stub_repo, STUB_HANG_ONCE=f"train:{held}", STUB_IGNORE_TERM="train", TIPC_KILL_GRACE="2")
    _wait_for_training(proc, held)
    proc.send_signal(signal.SIGTERM)
    time.sleep(1)
    proc.kill()
    proc.wait()
    summary = read_summary(stub_repo)
    assert summary["interrupted"] and summary["interrupted_by"] == "SIGTERM" and not summary["ok"]
    assert _gone(stub_repo) == [], "the runner KILLs the step's group after TIPC_KILL_GRACE"


@pytest.mark.waits
def test_a_second_signal_to_the_runner_leaves_no_killer_behind(stub_repo: Path, tmp_path: Path):
    """Ctrl-C twice, a CI's TERM after a HUP, or tipcgen's death (its parent-death TERM) beside another signal:
    the second finds the stop under way. Each signal used to start a killer and the runner ended only the last,
    so the first was left waiting out TIPC_KILL_GRACE (600 s here); seen after kill -9 of tipcgen run."""
    held = tmp_path / "train.pid"  # the train step ignores SIGTERM and waits there until the test lets it go
    env = chain_env(STUB_HOLD=f"train:{held}", STUB_IGNORE_TERM="train", TIPC_KILL_GRACE="600")
    runner = subprocess.Popen(["bash", RUNNER, CONFIG, MODE], cwd=stub_repo, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=default_signals)
    try:
        ceiling = time.monotonic() + 120  # a ceiling, not a bound
        while not held.exists() and runner.poll() is None and time.monotonic() < ceiling:
            time.sleep(0.02)
        assert held.exists(), "the train step never started its wait"
        runner.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # order only: sent sooner, the second is still a trap of its own (another signal)
        runner.send_signal(signal.SIGINT)
    finally:
        Path(f"{held}.go").touch()  # the step, which ignored the TERM, ends on its own
    assert runner.wait(timeout=120) == 130
    assert _gone(stub_repo) == [], "a killer was left waiting out its grace"


def test_kill_9_of_tipcgen_run_leaves_no_process_and_a_rerun_recovers_the_lock(stub_repo: Path, tmp_path: Path):
    held = tmp_path / "train.pid"
    proc = _start(stub_repo, STUB_HANG_ONCE=f"train:{held}", TIPC_KILL_GRACE="600")
    _wait_for_training(proc, held)
    proc.kill()
    proc.wait()
    assert _gone(stub_repo) == [], "the runner and its steps must not outlive tipcgen run"
    lock = stub_repo / "test_tipc/output/stub_model/lite_train_lite_infer.lock"
    assert json.loads(lock.read_text())["pid"] == proc.pid  # kill -9 left it
    again = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "recovered the stale lock" in again.stdout and f"pid {proc.pid}" in again.stdout
    assert not lock.exists()


def test_a_stale_lock_stops_the_dead_runs_leftovers_before_the_new_run(stub_repo: Path):
    """A writer of an older run (here: a process carrying its run id) never sees the new run."""
    old_id = "0" * 32
    orphan = subprocess.Popen(["sleep", "60"], env={**os.environ, "TIPC_RUN_ID": old_id}, cwd=stub_repo,
                              preexec_fn=default_signals)
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = stub_repo / "test_tipc/output/stub_model/lite_train_lite_infer.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "run_id": old_id,
                                "started": "2026-01-01T00:00:00+00:00"}))
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "stopped 1 leftover process" in proc.stdout
    assert orphan.wait(timeout=120) == -signal.SIGTERM


# -- verdicts ------------------------------------------------------------------------------------

@pytest.mark.parametrize("trainer", ["trainer:", "trainer:null"])
def test_a_config_that_trains_nothing_is_refused_before_any_step(stub_repo: Path, trainer: str):
    edit(stub_repo / CONFIG, "trainer:norm_train\n", trainer + "\n")
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=120)
    assert proc.returncode == 2 and "PASSED" not in proc.stdout, proc.stdout + proc.stderr
    assert "trainer" in proc.stderr and "Traceback" not in proc.stderr
    assert not (stub_repo / RUN_DIR / "summary.json").exists()


def test_a_chain_whose_training_all_skipped_is_not_passed(stub_repo: Path):
    """Lint accepts a GPU-only gpu_list; on a machine without a GPU nothing trains, so nothing passes."""
    edit(stub_repo / CONFIG, "gpu_list:0|-1\n", "gpu_list:0\n")
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, env={"TIPC_GPU_COUNT": "0"}, timeout=120)
    summary = read_summary(stub_repo)
    assert proc.returncode == 1 and "PASSED" not in proc.stdout, proc.stdout
    assert not summary["ok"] and summary["exit_code"] == 1
    assert not [s for s in summary["steps"] if s["kind"] == "train" and s["status"] == "passed"]
    assert "train" in summary["required_kinds"]


def test_a_chain_without_inference_cases_is_not_passed(stub_repo: Path):
    """Both inference devices are GPU ones on this CPU machine: every case is skipped."""
    edit(stub_repo / CONFIG, "--use_gpu:True|False\n", "--use_gpu:True\n")
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, env={"TIPC_GPU_COUNT": "0"}, timeout=120)
    summary = read_summary(stub_repo)
    assert proc.returncode == 1 and not summary["ok"], proc.stdout
    assert summary["runner_exit_code"] == 0 and "no infer step passed" in " ".join(summary["problems"])


def test_a_config_without_inference_needs_none(stub_repo: Path):
    edit(stub_repo / CONFIG, "inference:stub/stub_infer.py\n", "inference:null\n")
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=120)
    summary = read_summary(stub_repo)
    assert proc.returncode == 0 and summary["ok"] and summary["required_kinds"] == ["train", "eval", "export"]


@pytest.mark.parametrize("env, reason", [
    ({"STUB_EXIT": "eval:241"}, "exit code 241"),
    ({"STUB_EXIT": "eval:137"}, "exit code 137"),
    ({"STUB_KILL": "eval:SIGKILL"}, "killed by signal SIGKILL"),
])
def test_exit_codes_and_signals_are_reported_as_what_they_are(stub_repo: Path, env, reason):
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, env=env, timeout=120)
    summary = read_summary(stub_repo)
    step = next(s for s in summary["steps"] if s["kind"] == "eval")
    assert step["reason"] == reason, step
    assert proc.returncode == 1 and not summary["ok"]


def test_ok_is_never_true_next_to_a_failing_runner(tmp_path: Path):
    from tipcgen.results.summary import Step, Summary

    summary = Summary(model="m", mode=MODE, config="c", steps=[Step("train", "t", "passed")], runner_exit_code=1)
    assert not summary.ok and summary.to_dict()["ok"] is False


@pytest.mark.parametrize("content", ["not json", '{"pid": "x"}'])
def test_a_garbled_lock_is_stale(stub_repo: Path, content: str):
    lock = stub_repo / "test_tipc/output/stub_model/lite_train_lite_infer.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(content)
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=120)
    assert proc.returncode == 0 and "recovered the stale lock" in proc.stdout, proc.stdout + proc.stderr


def test_a_lock_held_by_a_reused_pid_is_stale(stub_repo: Path):
    """The pid is alive, but it is not tipcgen (here: this pytest process's sleeping child)."""
    other = subprocess.Popen(["sleep", "30"])
    try:
        lock = stub_repo / "test_tipc/output/stub_model/lite_train_lite_infer.lock"
        lock.parent.mkdir(parents=True)
        lock.write_text(json.dumps({"pid": other.pid, "host": socket.gethostname(), "run_id": "1" * 32}))
        proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=120)
        assert proc.returncode == 0 and "recovered the stale lock" in proc.stdout, proc.stdout + proc.stderr
        assert other.poll() is None, "a process of another program is never stopped"
    finally:
        other.kill()


@pytest.mark.skipif(shutil.which("git") is None, reason="update merges with git merge-file")
def test_the_markers_tipcgen_update_writes_are_refused(tmp_path: Path):
    """A hand edit and a descriptor change on the same inference line: update --conflict markers."""
    make_stub_repo(tmp_path, tmp_path / "stub" / "tipc.yaml")  # the copy: update reads it again
    config = tmp_path / CONFIG
    config.write_text(config.read_text().replace("--cpu_threads:1\n", "--cpu_threads:2\n"))
    descriptor = tmp_path / "stub" / "tipc.yaml"
    descriptor.write_text(descriptor.read_text().replace("cpu_threads: {key: --cpu_threads, value: 1}",
                                                         "cpu_threads: {key: --cpu_threads, value: [1, 4]}"))
    assert tipcgen("update", "--conflict", "markers", cwd=tmp_path).returncode == 1
    assert "<<<<<<<" in config.read_text()
    direct = subprocess.run(["bash", RUNNER, CONFIG, MODE], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert direct.returncode == 2 and f"{CONFIG}:43: merge conflict marker" in direct.stderr, direct.stderr
    proc = tipcgen("run", "--mode", MODE, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "conflict marker" in proc.stderr and "[tipc] RUN" not in proc.stdout


def test_a_renamed_key_is_named_as_renamed_not_as_a_missing_line(layout_repo: Path):
    """Issue 28 item 7: '--epochs' renamed in place; the lines around it are where they were."""
    original = (layout_repo / CONFIG).read_text(encoding="utf-8")
    name = "test_tipc/configs/stub_model/renamed-key.txt"
    (layout_repo / name).write_text(original.replace("\n--epochs:", "\n--epoch_num:"), encoding="utf-8")
    direct = subprocess.run(["bash", RUNNER, name, MODE], cwd=layout_repo, capture_output=True, text=True, timeout=60)
    assert direct.returncode == 2, direct.stdout + direct.stderr
    assert (f"{name}:7: expected key '--epochs' on non-blank line 7, found '--epoch_num:lite_train_lite_infer=1|"
            "whole_train_whole_infer=2': the key was renamed (the lines around it are in place, no line is missing)") in direct.stderr
    assert "restore '--epochs'" in direct.stderr and "missing or extra" not in direct.stderr


def _weights(folder: Path) -> list[str]:
    """What the recorder would count as a training's weights in folder (repro/record.py): a weight suffix, or a
    pickle whatever its name; and every link, which the previous folder keeps none of."""
    from tipcgen.format.paths import WEIGHT_SUFFIXES

    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or (path.is_file() and (path.name.endswith(WEIGHT_SUFFIXES) or path.read_bytes()[:1] == b"\x80")):
            found.append(str(path.relative_to(folder)))
    return found


def test_a_rerun_keeps_the_last_run_aside_with_its_report_and_no_weight_file(stub_repo: Path, tmp_path: Path):
    """#57: rerunning a mode used to delete its folder, report.html with it, before the new run could fail. The last
    run is moved aside to <mode>.previous (one, replaced each time) by the runner run by hand and by tipcgen run
    (before prepare.sh), without a weight file: no checkpoint of it can pass for a new training."""
    run_dir = stub_repo / "test_tipc/output/stub_model" / MODE
    previous = run_dir.with_name(MODE + ".previous")
    # 1. The runner by hand, twice: the second run moves the first aside (tipc_keep_previous, bash).
    assert subprocess.run(["bash", RUNNER, CONFIG, MODE], cwd=stub_repo, env=chain_env(), capture_output=True,
                          timeout=300).returncode == 0
    (run_dir / "model_latest").write_bytes(b"\x80\x04stub")  # what paddle.save writes under any name
    (run_dir / "note.txt").write_text("kept")
    (run_dir / "link.log").symlink_to(tmp_path)
    trained = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*.pdparams"))
    assert trained, "the stub's training saves a checkpoint"
    direct = subprocess.run(["bash", RUNNER, CONFIG, MODE], cwd=stub_repo, env=chain_env(), capture_output=True,
                            text=True, timeout=300)
    assert direct.returncode == 0, direct.stdout + direct.stderr
    assert (previous / "note.txt").read_text() == "kept" and (previous / "results_python.log").is_file()
    assert _weights(previous) == [] and not (run_dir / "note.txt").exists()
    assert [p for p in trained if (previous / p).parent.is_dir()] == trained, "the folders stay, their weights go"
    # 2. tipcgen run (it moves the folder aside itself, before prepare.sh) passes beside the previous folder: an
    #    honest run never fails for it; then its report.
    second = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    assert read_summary(stub_repo)["previous"] == f"test_tipc/output/stub_model/{MODE}.previous"
    assert "previous run: " in second.stdout and not (previous / "note.txt").exists(), "replaced, not piled up"
    assert tipcgen("report", cwd=stub_repo, timeout=300).returncode == 0
    html = (run_dir / "report.html").read_bytes()
    assert f"The run before this one, with its report: <code>test_tipc/output/stub_model/{MODE}.previous</code>".encode() in html
    # 3. A run stopped in its training: the passed run's report, summary and logs are there, in the previous folder.
    held = tmp_path / "train.pid"
    proc = _start(stub_repo, STUB_HANG_ONCE=f"train:{held}", TIPC_KILL_GRACE="600")
    _wait_for_training(proc, held)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert (previous / "report.html").read_bytes() == html and not (run_dir / "report.html").exists()
    assert json.loads((previous / "summary.json").read_text())["ok"] and not read_summary(stub_repo)["ok"]
    assert _weights(previous) == []
    # The report of the previous folder reads its own logs (its summary names them where they were written), and
    # the report without a folder is of the newest run, never of a folder moved aside, however new its files.
    os.utime(previous / "summary.json", (time.time() + 60, time.time() + 60))
    again = tipcgen("report", str(previous), "--format", "md", "-o", str(tmp_path / "again"), cwd=stub_repo, timeout=300)
    assert again.returncode == 0 and "PASSED" in again.stdout, again.stdout + again.stderr
    md = (tmp_path / "again/report.md").read_text()
    assert "The run before this one" not in md, "a moved folder's summary names itself as the previous: not shown"
    log = "python_infer_cpu_gpus_-1_usemkldnn_False_threads_1_precision_fp32_batchsize_1.log"  # acceptance 3.2.3's
    assert f"{MODE}.previous/{log}" in md and f"{MODE}/{log}" not in md, md
    newest = tipcgen("report", "--format", "md", cwd=stub_repo, timeout=300)
    assert newest.returncode == 0 and "INTERRUPTED" in newest.stdout, newest.stdout + newest.stderr


def test_a_link_where_the_previous_run_goes_is_refused_and_never_followed(layout_repo: Path, tmp_path: Path):
    """<mode>.previous a link (to a folder of the user's): tipcgen run and the runner by hand both stop (exit 2)
    naming it, before any step, and neither the link's target nor the last run is touched."""
    run_dir = layout_repo / "test_tipc/output/stub_model" / MODE
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.pdparams").write_bytes(b"\x80theirs")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text("{}")
    run_dir.with_name(MODE + ".previous").symlink_to(outside)
    try:
        direct = subprocess.run(["bash", RUNNER, CONFIG, MODE], cwd=layout_repo, env=chain_env(), capture_output=True,
                                text=True, timeout=120)
        assert direct.returncode == 2 and f"{MODE}.previous is a symbolic link" in direct.stderr, direct.stderr
        proc = tipcgen("run", "--mode", MODE, cwd=layout_repo, timeout=120)
        assert proc.returncode == 2 and f"{MODE}.previous" in proc.stderr and "link" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "[tipc] RUN" not in proc.stdout
        assert sorted(p.name for p in outside.iterdir()) == ["keep.pdparams"] and (run_dir / "summary.json").is_file()
    finally:
        run_dir.with_name(MODE + ".previous").unlink()
        shutil.rmtree(layout_repo / "test_tipc/output")  # the module's other cases find none


@pytest.mark.skipif(shutil.which("git") is None, reason="no git here")
def test_a_tracked_file_in_the_run_folder_moved_aside_is_said_so_and_an_untracked_one_is_not(stub_repo: Path):
    """The tracked-files check compares git status before the run (the preflight's) with after each part: a file git
    tracks in the last run folder, moved aside, is named as the move's doing (not prepare.sh's, not a step's); the
    last run's untracked files moving aside change nothing it checks."""
    run_dir = stub_repo / "test_tipc/output/stub_model" / MODE
    run_dir.mkdir(parents=True)
    (run_dir / "committed.log").write_text("a run's log, committed by mistake\n")
    (stub_repo / ".gitignore").write_text("test_tipc/output/\n")
    for args in (["init", "-q"], ["add", "-A"], ["add", "-f", str(run_dir / "committed.log")],
                 ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=stub_repo, check=True, capture_output=True)
    (run_dir / "untracked.log").write_text("the last run's\n")
    proc = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=300)
    check = next(s for s in read_summary(stub_repo)["steps"] if s["name"] == "tracked_files")
    assert proc.returncode == 1 and check["status"] == "failed", proc.stdout
    assert check["reason"].startswith(f"moving the last run aside (to test_tipc/output/stub_model/{MODE}.previous) "
                                      f"changed 1 tracked file(s): test_tipc/output/stub_model/{MODE}/committed.log"), check
    assert "prepare.sh changed" not in check["reason"] and "runner's steps changed" not in check["reason"]
    assert (run_dir.with_name(MODE + ".previous") / "untracked.log").is_file()
    again = tipcgen("run", "--mode", MODE, cwd=stub_repo, timeout=300)  # the tracked file is gone already: nothing moves it
    assert again.returncode == 0, again.stdout
