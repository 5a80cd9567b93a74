"""Issue #59 item 4: every read of a file a repository or a step controls (step logs, records, the run lock, a run
folder a suite copies, the logs report and seeds read) refuses links out, FIFOs and devices and is bounded in
bytes (tipcgen/core/inputs.py); golden never writes through a committed link; a step's daemon, double-forked,
out of its session, its environment cleared, ends with the run, sandboxed or not (run/guard.py Leftovers)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import finishes, make_stub_repo, tipcgen
from tipcgen.core import inputs
from tipcgen.core.errors import RunError, TipcgenError
from tipcgen.format.paths import RECORDS
from tipcgen.results.summary import Summary, log_tail, read_records, write_json
from tipcgen.results.summary_text import write_junit
from tipcgen.run import guard
from tipcgen.suite import suite

SECRET = "TOP-SECRET-7f3a"
MODE = "lite_train_lite_infer"




# ---------------------------------------------------------------- a step's log, swapped

def _swap(root: Path, outside: Path, shape: str) -> str:
    """The log path a record names after a step swapped it (shape), relative to root or not."""
    run = root / "test_tipc" / "output" / "m" / MODE
    run.mkdir(parents=True, exist_ok=True)
    log = run / "train.log"
    secret = outside / "secret.txt"
    rel = str(log.relative_to(root))
    if shape == "link_out":
        log.symlink_to(secret)
    elif shape == "relative_link_out":
        log.symlink_to(os.path.relpath(secret, log.parent))
    elif shape == "chain_out":
        (run / "hop").symlink_to(secret)
        log.symlink_to("hop")
    elif shape == "folder_link_out":
        (run / "logs").symlink_to(outside)
        rel = str((run / "logs" / "secret.txt").relative_to(root))
    elif shape == "fifo":
        os.mkfifo(log)
    elif shape == "dev_zero":
        log.symlink_to("/dev/zero")
    elif shape == "absolute":
        rel = str(secret)
    elif shape == "dotdot":
        rel = os.path.relpath(secret, root)
    elif shape == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(log))
        server.close()
    return rel


SHAPES = ["link_out", "relative_link_out", "chain_out", "folder_link_out", "fifo", "dev_zero", "absolute", "dotdot",
          "socket"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from(SHAPES), kind=st.sampled_from(["train", "eval", "infer", "check"]),
       status=st.sampled_from(["failed", "passed"]))
def test_a_swapped_log_never_reaches_the_summary(tmp_path_factory, shape, kind, status):
    tmp = tmp_path_factory.mktemp("swap")
    root, outside = tmp / "repo", tmp / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"accuracy: 0.99\n{SECRET}\n:::TIPC_CHECK {{\"secret\": \"{SECRET}\"}}\n")
    rel = _swap(root, outside, shape)
    run = root / "test_tipc" / "output" / "m" / MODE
    (run / RECORDS).write_text(json.dumps({"kind": kind, "name": "n", "status": status, "log": rel}) + "\n")
    steps, problems = finishes(lambda: read_records(run, root))
    summary = Summary(model="m", mode=MODE, config="c.txt", steps=steps, problems=problems)
    write_json(summary, run / "summary.json")
    write_junit(summary, run / "junit.xml")
    for name in ("summary.json", "junit.xml"):
        assert SECRET not in (run / name).read_text(), (shape, name)
    assert not steps[0].metrics
    if status == "failed":
        assert "tipcgen did not read this log" in steps[0].tail[0] or shape in ("absolute", "dotdot")


def test_an_honest_log_is_read(tmp_path: Path):
    """Must not fire: a regular log inside the repository, reached through a link inside it too."""
    run = tmp_path / "test_tipc" / "output" / "m" / MODE
    run.mkdir(parents=True)
    (run / "real.log").write_text("step 1\nTraceback (most recent call last):\nValueError: bad\n")
    (run / "train.log").symlink_to("real.log")
    (run / RECORDS).write_text(json.dumps({"kind": "train", "name": "n", "status": "failed",
                                           "log": str((run / "train.log").relative_to(tmp_path))}) + "\n")
    steps, problems = read_records(run, tmp_path)
    assert problems == [] and steps[0].tail[-1] == "ValueError: bad"


def test_the_records_file_itself_is_not_followed_out(tmp_path: Path):
    root, outside = tmp_path / "repo", tmp_path / "outside"
    run = root / "out"
    run.mkdir(parents=True)
    outside.mkdir()
    (outside / "r.jsonl").write_text(json.dumps({"kind": "train", "name": SECRET, "status": "passed"}) + "\n")
    (run / RECORDS).symlink_to(outside / "r.jsonl")
    steps, problems = read_records(run, root)
    assert steps == [] and problems and SECRET not in problems[0]
    (run / RECORDS).unlink()
    os.mkfifo(run / RECORDS)
    steps, problems = finishes(lambda: read_records(run, root))
    assert steps == [] and "not a regular file" in problems[0]


# ---------------------------------------------------------------- bounded reads

def test_a_one_line_gigabyte_log_costs_little(tmp_path: Path):
    """A 1 GiB log of one line (sparse: no disk): report's curve reader and the seed reader read a bounded
    part of it, cut into bounded lines; measured in a child so that its peak memory is its own (VmHWM, its own
    address space's high-water mark: getrusage's ru_maxrss keeps a forking parent's, ~490 MB after paddle loaded)."""
    big = tmp_path / "repo" / "big.log"
    big.parent.mkdir()
    with big.open("wb") as handle:
        handle.truncate(1 << 30)
    code = ("import sys\nfrom pathlib import Path\nfrom tipcgen.outputs import report_logs\n"
            "from tipcgen.run import seeds\nfrom tipcgen.core import inputs\n"
            "n = sum(1 for _ in inputs.lines(sys.argv[1]))\n"
            "seeds.log_seeds(Path(sys.argv[2]), ['big.log'])\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
            "print(n, hwm)\n")
    out = subprocess.run([sys.executable, "-c", code, str(big), str(big.parent)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert out.returncode == 0, out.stderr
    lines, peak_kib = map(int, out.stdout.split())
    assert lines == 1 and peak_kib < 400 * 1024, peak_kib  # 2.1 GB before


@pytest.mark.parametrize("size, line_limit", [(0, 32), (5, 32), (100, 32), (200_000, 1 << 16)])
def test_lines_are_cut_never_lost(tmp_path: Path, size, line_limit):
    """Must not fire: every line of an ordinary log comes back whole and in order; only an over-long one is cut."""
    text = "".join(f"line {i} " + "x" * (i % 7) + "\n" for i in range(size)) + "a" * (line_limit * 3)
    (tmp_path / "l.log").write_text(text)
    got = list(inputs.lines(tmp_path / "l.log", line_limit=line_limit))
    want = text.split("\n")
    assert got[:-1] == want[:-1] and got[-1] == "a" * line_limit


@pytest.mark.parametrize("shape", ["fifo", "dev_zero", "link_out_big"])
def test_the_tail_of_a_log_never_blocks_and_stays_small(tmp_path: Path, shape):
    log = tmp_path / "repo" / "step.log"
    log.parent.mkdir()
    if shape == "fifo":
        os.mkfifo(log)
    elif shape == "dev_zero":
        log.symlink_to("/dev/zero")
    else:
        with (tmp_path / "big").open("wb") as handle:
            handle.truncate(1 << 30)
        log.symlink_to(tmp_path / "big")
    tail = finishes(lambda: log_tail(log, folder=log.parent))
    assert len(tail) == 1 and tail[0].startswith("(tipcgen did not read this log")


# ---------------------------------------------------------------- the run lock

@pytest.mark.parametrize("shape", ["fifo", "dev_zero", "link", "dangling_link", "socket"])
def test_a_lock_that_is_not_a_file_is_refused_at_once(tmp_path: Path, shape):
    run_dir = tmp_path / "out" / MODE
    lock = guard.lock_path(run_dir)
    lock.parent.mkdir(parents=True)
    if shape == "fifo":
        os.mkfifo(lock)
    elif shape == "dev_zero":
        lock.symlink_to("/dev/zero")
    elif shape == "link":
        (tmp_path / "elsewhere").write_text(json.dumps({"pid": 1, "host": "h", "run_id": "x"}))
        lock.symlink_to(tmp_path / "elsewhere")
    elif shape == "dangling_link":
        lock.symlink_to(tmp_path / "nowhere")
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(lock))
        server.close()

    def take():
        with guard.run_lock(run_dir, "id", lambda line: None):
            return "taken"

    with pytest.raises(RunError) as caught:
        finishes(take)
    assert "not a regular file" in caught.value.message and f"rm {lock}" in caught.value.hint
    assert os.path.lexists(lock)  # never removed by tipcgen: the user looks at it


def test_an_ordinary_stale_lock_is_still_recovered(tmp_path: Path):
    run_dir = tmp_path / "out" / MODE
    lock = guard.lock_path(run_dir)
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": 2 ** 22 + 1, "host": socket.gethostname(), "run_id": "old"}))
    notes = []
    with guard.run_lock(run_dir, "new", notes.append):
        assert json.loads(lock.read_text())["run_id"] == "new"
    assert notes and "recovered the stale lock" in notes[0]


# ---------------------------------------------------------------- a suite's copy of a run folder

def test_a_suite_copies_a_run_folder_holding_a_fifo_a_socket_and_a_link(tmp_path: Path):
    src, dest = tmp_path / "run", tmp_path / "copy"
    (src / "sub").mkdir(parents=True)
    (src / "summary.json").write_text("{}")
    (src / "sub" / "a.log").write_text("a\n")
    os.mkfifo(src / "pipe")
    os.mkfifo(src / "sub" / "pipe2")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(src / "sock"))
    server.close()
    (src / "link").symlink_to("/dev/zero")
    finishes(lambda: shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True, ignore=suite._not_plain))
    assert sorted(p.name for p in dest.rglob("*")) == ["a.log", "link", "sub", "summary.json"]
    assert (dest / "link").is_symlink()


# ---------------------------------------------------------------- golden through a link

@pytest.mark.parametrize("linked", [True, False])
def test_golden_never_writes_through_a_committed_link(tmp_path: Path, monkeypatch, linked):
    """golden regenerate with the descriptor's golden folder committed as a link to a folder outside: refused,
    nothing written there; must not fire: a plain golden folder is written as before."""
    from types import SimpleNamespace

    from tipcgen.outputs import golden

    root, outside = tmp_path / "repo", tmp_path / "outside"
    base = root / "model"
    base.mkdir(parents=True)
    outside.mkdir()
    if linked:
        (base / "golden").symlink_to(outside)
    desc = SimpleNamespace(base_dir=base, checks=SimpleNamespace(golden="golden"), model_name="m",
                           source=str(base / "tipc.yaml"))
    monkeypatch.setattr(golden, "collect", lambda *a: {"python_m_results_fp32.txt": "a\t{}\n"})
    monkeypatch.setattr(golden, "builtin_sample", lambda d: None)
    if linked:
        with pytest.raises(TipcgenError):
            golden.regenerate(desc, root, MODE)
        assert list(outside.iterdir()) == []
    else:
        golden.regenerate(desc, root, MODE)
        assert (base / "golden" / "python_m_results_fp32.txt").read_text() == "a\t{}\n"


# ---------------------------------------------------------------- a step's daemon

DAEMONS = {
    "double_fork": "os.setsid()",
    "double_fork_env_cleared": "os.setsid(); os.environ.clear()",
    "ignores_term": "os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN)",
    "own_group": "os.setpgid(0, 0)",
}


def _daemon_line(marks: Path, shape: str) -> str:
    """A prepare.sh line that starts a daemon which writes its pid and then lives for ten minutes."""
    code = (f"import os, signal, sys, time\nif os.fork() == 0:\n    {DAEMONS[shape]}\n    if os.fork() == 0:\n"
            f"        open({str(marks / 'pid')!r}, 'w').write(str(os.getpid()))\n"
            "        env = {} if 'cleared' in " + repr(shape) + " else dict(os.environ)\n"
            "        os.execve('/bin/sleep', ['sleep', '600'], env)\n    os._exit(0)\n"
            f"while not os.path.exists({str(marks / 'pid')!r}):\n    time.sleep(0.01)\n")
    (marks / "daemon.py").write_text(code)
    return f"python {marks / 'daemon.py'} || exit 9\n"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sandboxed", [False, True])
@pytest.mark.parametrize("shape", sorted(DAEMONS))
def test_a_steps_daemon_ends_with_the_run(tmp_path: Path, shape, sandboxed):
    from tipcgen.core import sandbox

    if sandboxed and not sandbox.available()[0]:
        pytest.skip("no working bubblewrap here")
    repo = make_stub_repo(tmp_path / "repo")
    marks = tmp_path / "marks"
    marks.mkdir()
    if sandboxed:
        marks = repo / "marks"
        marks.mkdir()
    prepare = repo / "test_tipc" / "prepare.sh"
    lines = prepare.read_text().splitlines(keepends=True)
    prepare.write_text("".join([lines[0], _daemon_line(marks, shape), *lines[1:]]))
    bystander = subprocess.Popen(["sleep", "600"])  # must not fire: a child the caller had before the run
    try:
        proc = tipcgen("run", "--quiet", "--mode", MODE, *(["--sandbox"] if sandboxed else []), cwd=repo)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        pid = int((marks / "pid").read_text())
        if not sandboxed:  # in the sandbox the pid is the namespace's own
            assert not _alive(pid), f"the daemon {pid} outlived the run"
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.text(max_size=300), max_size=200), maxlen=st.integers(1, 50), max_bytes=st.integers(1, 2000))
def test_prepare_output_is_kept_bounded_and_its_end_whole(lines, maxlen, max_bytes):
    """prepare.sh's output (prepare.log): bounded in lines and characters; what is kept is the stream's end."""
    from tipcgen.core.process import LineTail

    kept = LineTail(maxlen, max_bytes, line_cap=100)
    for line in lines:
        kept.append(line)
    cut = [line[:100] for line in lines]
    assert len(kept) <= maxlen and kept.size == sum(map(len, kept))
    assert kept.size <= max_bytes or len(kept) == 1
    assert list(kept) == cut[len(cut) - len(kept):]
    if cut:
        assert list(kept)[-1] == cut[-1]  # the last line is never dropped


@pytest.mark.parametrize("shape", ["one_line_gigabyte", "fifo", "generated"])
def test_the_runner_is_judged_from_its_head(tmp_path: Path, shape):
    """Whether a committed runner is tipcgen's (a kept runner's submission check) reads its first 4 KiB only: a
    1 GiB one-line runner or a FIFO costs nothing; must not fire: a generated runner is still recognised."""
    from tipcgen.configs import submission
    from tipcgen.format import paths

    runner = tmp_path / paths.BASIC_RUNNER
    runner.parent.mkdir(parents=True)
    if shape == "one_line_gigabyte":
        with runner.open("wb") as handle:
            handle.truncate(1 << 30)
    elif shape == "fifo":
        os.mkfifo(runner)
    else:
        runner.write_text(f"#!/usr/bin/env bash\n# {submission.GENERATED_MARK} 0.1.0\n")
    assert finishes(lambda: submission.is_generated(tmp_path)) is (shape == "generated")


@pytest.mark.paddle
def test_the_export_check_imports_no_module_of_the_folder_it_runs_in(tmp_path: Path, monkeypatch):
    """The proof that reads an export in the chain's interpreter runs with -I: a committed numpy.py in the folder
    tipcgen runs from never shadows numpy (before: `python -c` put that folder first on sys.path)."""
    import test_pdiparams
    from tipcgen.repro import export_check
    from tipcgen.repro.pdiparams import read_pdiparams

    env = dict(os.environ, GLOG_minloglevel="3")
    (tmp_path / "tiny.py").write_text(test_pdiparams._GENERATE)
    subprocess.run([sys.executable, str(tmp_path / "tiny.py"), str(tmp_path / "tiny/inference")], env=env, check=True,
                   capture_output=True, timeout=600)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "numpy.py").write_text(f"open({str(tmp_path / 'SHADOWED')!r}, 'w')\nraise SystemExit(3)\n")
    monkeypatch.chdir(repo)
    read = export_check.read_export(tmp_path / "tiny/inference", sys.executable, env)
    assert sorted(read) == sorted(read_pdiparams(tmp_path / "tiny/inference", 1 << 30))
    assert not (tmp_path / "SHADOWED").exists()
    with pytest.raises(TipcgenError, match="not a Python interpreter"):
        export_check.read_export(tmp_path / "tiny/inference", shutil.which("bash"), env)
