"""A run you can watch (issue #57): on a terminal the running step's elapsed time and its log's last line,
live; `-v` the step's log as it grows; in a log (no terminal) a line per step and a heartbeat, and no escape
code. Real `tipcgen run` and `tipcgen suite` processes on the stub model, under a pseudo-terminal (pty) where a
terminal is the point; the stub's train step holds (STUB_TICKS) until the test has seen what it waits for, so
no wall-clock bound decides anything."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import chain_env, fuzz_examples, make_stub_repo

CEILING = float(os.environ.get("TIPCGEN_TEST_CEILING", 300))  # seconds a test waits for an event before it fails (a loaded machine is slow, never this slow)
ESCAPE = re.compile(r"\x1b")


class Screen:
    """A process's output, read in a thread as it comes (from a pty or a pipe)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.data, self.lock = fd, b"", threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: the pty's other side closed
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    @property
    def text(self) -> str:
        with self.lock:
            return self.data.decode("utf-8", errors="replace")

    def wait_for(self, pattern: str, proc: subprocess.Popen, after: int = 0) -> re.Match:
        """The first match of ``pattern`` in the output from character ``after`` on, once it has come."""
        ceiling = time.monotonic() + CEILING
        while time.monotonic() < ceiling:
            found = re.compile(pattern).search(self.text, after)
            if found:
                return found
            if proc.poll() is not None:
                self.thread.join(timeout=10)
                found = re.compile(pattern).search(self.text, after)
                if found:
                    return found
                raise AssertionError(f"exited {proc.returncode} before {pattern!r}:\n{self.text[-3000:]}")
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} in:\n{self.text[-3000:]}")


def wait_file(path: Path, proc: subprocess.Popen, screen: Screen) -> None:
    ceiling = time.monotonic() + CEILING
    while not path.exists():
        assert proc.poll() is None, f"exited {proc.returncode} before {path.name}:\n{screen.text[-3000:]}"
        assert time.monotonic() < ceiling, f"no {path}:\n{screen.text[-3000:]}"
        time.sleep(0.02)


def start(args: list[str], cwd: Path, env: dict, terminal: bool) -> tuple[subprocess.Popen, Screen]:
    """`python -m tipcgen ARGS` with its stdout and stderr on a pty 200 columns wide (terminal) or a pipe."""
    if terminal:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        proc = subprocess.Popen([sys.executable, "-m", "tipcgen", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        return proc, Screen(master)
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "tipcgen", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=write, stderr=write, close_fds=True)
    os.close(write)
    return proc, Screen(read)


def ticks(proc: subprocess.Popen, screen: Screen, hold: Path, first: str, second: str, *also: str) -> None:
    """Hold the stub's train step at `tick 1`, wait for ``first`` (and each of ``also``) on screen, release it to
    `tick 2`, wait for ``second`` after ``first``, release it again."""
    wait_file(hold.with_name(hold.name + ".1"), proc, screen)
    seen = screen.wait_for(first, proc)
    for pattern in also:
        screen.wait_for(pattern, proc)
    Path(f"{hold}.1.go").touch()
    wait_file(hold.with_name(hold.name + ".2"), proc, screen)
    screen.wait_for(second, proc, after=seen.end())
    Path(f"{hold}.2.go").touch()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_stub_repo(tmp_path / "repo")


def _env(hold: Path, **extra: str) -> dict:
    env = chain_env(STUB_TICKS=f"train:{hold}", TERM="xterm", **extra)
    env.pop("FORCE_COLOR", None)
    for name in ("COLUMNS", "LINES"):  # rich takes these over the pty's size; a process may have them set (80 columns
        env.pop(name, None)  # truncated the suite's live table in a whole-suite run: 'tick 1 lo…')
    return env


def test_run_on_a_terminal_shows_the_running_steps_time_and_its_logs_last_line_live(repo, tmp_path):
    """The stub prints `tick 1 loss 0.1` into its log and holds: the live line under the step lines shows the
    step, its time and that line while the step runs; then `tick 2 loss 0.2` replaces it. The runner's own
    output never carries these lines (they are only in the log): the live line read them there."""
    hold = tmp_path / "tick"
    proc, screen = start(["run"], repo, _env(hold), terminal=True)
    try:
        ticks(proc, screen, hold, r"train norm_train\S*\s+\d+ s\s+\| tick 1 loss 0\.1", r"\| tick 2 loss 0\.2")
        assert proc.wait(timeout=CEILING) in (0, 1)
    finally:
        proc.kill()
        proc.wait()
    screen.thread.join(timeout=10)
    assert "\x1b[" in screen.text, "a terminal gets the live line's redraws"
    assert "PASS train norm_train" in screen.text and "Traceback" not in screen.text


def test_run_in_a_log_says_each_step_a_heartbeat_and_with_v_the_log_with_no_escape_code(repo, tmp_path):
    """No terminal (a CI log): the step lines as plain lines, a heartbeat line while the held step runs (naming
    its log's last line), and with -v the log's lines themselves as they are written; no escape code at all."""
    hold = tmp_path / "tick"
    proc, screen = start(["run", "-v"], repo, _env(hold, TIPCGEN_HEARTBEAT="0.5"), terminal=False)
    try:
        ticks(proc, screen, hold, r"(?m)^    tick 1 loss 0\.1$", r"(?m)^    tick 2 loss 0\.2$",
              r"(?m)^\[tipcgen\] train norm_train\S*: still running after \d+ s; log: tick 1 loss 0\.1$")
        assert proc.wait(timeout=CEILING) in (0, 1)
    finally:
        proc.kill()
        proc.wait()
    screen.thread.join(timeout=10)
    text = screen.text
    assert not ESCAPE.search(text), text
    assert "[tipc] RUN  train norm_train" in text and "[tipc] PASS train norm_train" in text


def test_run_with_force_color_colours_a_log_without_redrawing_it(repo):
    """FORCE_COLOR (or --color always) in a CI log: the step marks coloured, no cursor move; --color never wins."""
    env = chain_env(FORCE_COLOR="1", TIPCGEN_HEARTBEAT="0")
    env.pop("NO_COLOR")
    coloured = subprocess.run([sys.executable, "-m", "tipcgen", "run"], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=CEILING)
    assert "\x1b[32m[tipc] PASS\x1b[0m train" in coloured.stdout, coloured.stdout
    assert not re.search(r"\x1b\[(\d*[A-HJKF]|\?25)", coloured.stdout), "colour, never a redraw"
    plain = subprocess.run([sys.executable, "-m", "tipcgen", "run", "--color", "never"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=CEILING)
    assert not ESCAPE.search(plain.stdout), plain.stdout


def test_quiet_and_verbose_together_is_one_error(repo):
    proc = subprocess.run([sys.executable, "-m", "tipcgen", "run", "-q", "-v"], cwd=repo, env=chain_env(),
                          capture_output=True, text=True, timeout=CEILING)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --quiet and --verbose"), proc.stderr


def test_suite_on_a_terminal_shows_each_running_chains_step_and_log_line_live(repo, tmp_path):
    hold = tmp_path / "tick"
    proc, screen = start(["suite", "--output", str(tmp_path / "out")], repo, _env(hold), terminal=True)
    try:
        ticks(proc, screen, hold, r"stub_model/basic/\S+\s+train norm_train\S*\s+\d+ s\s+tick 1 loss 0\.1",
              r"train norm_train\S*\s+\d+ s\s+tick 2 loss 0\.2")
        assert proc.wait(timeout=CEILING) in (0, 1)
    finally:
        proc.kill()
        proc.wait()
    screen.thread.join(timeout=10)
    assert "\x1b[" in screen.text and "Traceback" not in screen.text


def test_suite_in_a_log_says_each_event_and_a_heartbeat_with_no_escape_code(repo, tmp_path):
    hold = tmp_path / "tick"
    proc, screen = start(["suite", "--output", str(tmp_path / "out")], repo, _env(hold, TIPCGEN_HEARTBEAT="0.2"),
                         terminal=False)
    try:
        ticks(proc, screen, hold, r"\[suite\] stub_model/basic/\S+: still running after \d+ s, train norm_train\S* "
              r"for \d+ s; log: tick 1 loss 0\.1", r"log: tick 2 loss 0\.2")
        assert proc.wait(timeout=CEILING) in (0, 1)
    finally:
        proc.kill()
        proc.wait()
    screen.thread.join(timeout=10)
    assert not ESCAPE.search(screen.text), screen.text
    assert "[suite] start stub_model/basic/" in screen.text


# The parts, alone.

def test_the_watch_finds_the_steps_log_by_its_name_else_the_newest_and_skips_the_runners_own(tmp_path):
    from tipcgen.run.watch import StepWatch

    watch = StepWatch(tmp_path)
    (tmp_path / "results_python.log").write_text("Run successfully with command - x\n")
    watch.line("[tipc] RUN  train t1")
    assert watch.step == "train t1" and watch.last_line(every=0) == ""
    (tmp_path / "t1.log").write_text("epoch 1\nloss 0.5\n\n")
    watch._log_seen = 0.0
    assert watch.last_line(every=0) == "loss 0.5"
    watch.line("[tipc] PASS train t1 (1.0 s)")
    assert watch.step == ""
    watch.line("[tipc] RUN  infer other_name")
    (tmp_path / "python_infer_cpu.log").write_text("progress 10%\rprogress 90%\r\n")
    assert watch.last_line(every=0) == "progress 90%", "a progress bar's last state"


@settings(max_examples=fuzz_examples(200), deadline=None)
@given(st.binary(max_size=6000))
def test_a_logs_bytes_are_shown_escaped_on_one_bounded_line(data):
    """Whatever a script writes to its log (escapes, NUL, invalid UTF-8, no newline, a huge line): the live line
    is one line of at most LINE_CHARS characters with no control character, and -v's lines have no newline."""
    import tempfile

    from tipcgen.run.watch import LINE_CHARS, StepWatch

    with tempfile.TemporaryDirectory() as folder:
        watch = StepWatch(Path(folder))
        watch.line("[tipc] RUN  train t")
        Path(folder, "t.log").write_bytes(data)
        last = watch.last_line(every=0)
        assert len(last) <= LINE_CHARS and not re.search("[\x00-\x1f\x7f-\x9f]", last)
        assert all("\n" not in line for line in watch.new_lines() + watch.rest())


def test_follow_reads_what_the_log_gained_and_skips_a_flood_saying_so(tmp_path):
    from tipcgen.run.watch import FOLLOW_BYTES, StepWatch

    watch = StepWatch(tmp_path)
    watch.line("[tipc] RUN  train t")
    log = tmp_path / "t.log"
    log.write_text("a\nb")
    assert watch.new_lines() == ["a"]
    with log.open("a") as f:
        f.write("c\n")
    assert watch.new_lines() == ["bc"]
    with log.open("a") as f:
        f.write("x" * (3 * FOLLOW_BYTES) + "\nlast\n")
    lines = watch.new_lines()
    assert lines[0].startswith("... (") and "skipped" in lines[0] and lines[-1] == "last"
    assert sum(map(len, lines)) <= FOLLOW_BYTES + 100


def test_read_tail_never_waits_on_a_pipe_nor_follows_a_link(tmp_path):
    from tipcgen.core.inputs import read_tail

    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    assert read_tail(fifo) == (b"", 0)
    secret = tmp_path / "secret"
    secret.write_text("secret\n")
    (tmp_path / "link.log").symlink_to(secret)
    assert read_tail(tmp_path / "link.log") == (b"", 0)
    (tmp_path / "a.log").write_bytes(b"0123456789")
    assert read_tail(tmp_path / "a.log", 4) == (b"6789", 10)
    assert read_tail(tmp_path / "a.log", 4, start=2) == (b"2345", 10)
    assert read_tail(tmp_path / "missing.log") == (b"", 0)


@pytest.mark.parametrize("choice, env, tty, expected", [
    ("auto", {}, True, True), ("auto", {}, False, False),
    ("auto", {"NO_COLOR": "1"}, True, False), ("auto", {"NO_COLOR": ""}, True, True),
    ("auto", {"FORCE_COLOR": "1"}, False, True), ("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, True),
    ("always", {"NO_COLOR": "1"}, False, True), ("never", {"FORCE_COLOR": "1"}, True, False),
])
def test_colour_follows_the_option_then_force_color_then_no_color_then_the_terminal(choice, env, tty, expected):
    from tipcgen.core.console import wants_color

    class Stream:
        def isatty(self) -> bool:
            return tty

    assert wants_color(choice, Stream(), env) is expected


def test_a_step_run_beside_the_next_is_shown_again_when_the_one_shown_ends(tmp_path):
    """The export beside the eval, the fixed-input check beside the inference: the display shows the step started
    last; when it ends, the one still running beside it comes back with its own start, not a blank line."""
    from tipcgen.run.watch import StepWatch

    watch = StepWatch(tmp_path)
    watch.line("[tipc] RUN  export m_export (beside the next steps)")
    started = watch.step_started
    watch.line("[tipc] RUN  eval m_eval")
    assert watch.step == "eval m_eval"
    watch.line("[tipc] PASS eval m_eval (1.0 s)")
    assert watch.step == "export m_export" and watch.step_started == started
    watch.line("[tipc] PASS export m_export (1.5 s)")
    assert watch.step == ""
    # a step beside that ends first is forgotten, never shown again
    watch.line("[tipc] RUN  check fixed (beside the next steps)")
    watch.line("[tipc] RUN  infer case_1")
    watch.line("[tipc] FAIL check fixed (0.1 s): exit code 1, log: x")
    watch.line("[tipc] PASS infer case_1 (1.0 s)")
    assert watch.step == ""
