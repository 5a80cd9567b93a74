"""What `tipcgen run` shows while its chain runs.

On a terminal: the lines the run prints (the runner's step lines, prepare.sh's output), and under them one
live line, redrawn by rich, with the running step, how long it has run and its log's last line (the scripts
write their output, the loss, to the step's log, not to the run's output: run/watch.py reads its end). In a
log (no terminal): the same lines, no escape codes, and for a step longer than the heartbeat (60 s,
TIPCGEN_HEARTBEAT) one line each heartbeat saying it is still running and what its log says last, so that a
CI job that watches for silence sees the run alive. ``--verbose`` prints the step's log as it grows;
``--quiet`` only the step lines.

Every text goes through ``core.text.shown`` (here by ``echo`` or ``core.console.line``): a log's escapes are
shown, never acted on.
"""
from __future__ import annotations

import re
import threading
from enum import Enum
from pathlib import Path
from typing import Any

from tipcgen.cli.echo import echo
from tipcgen.core import console
from tipcgen.core.errors import ScriptError
from tipcgen.core.text import paint
from tipcgen.format import words
from tipcgen.run.watch import StepWatch, clock, heartbeat_seconds

# The colour of a step line's mark, where colour is wanted.
MARK_COLORS = {words.MARKS[words.PASSED]: "green", words.MARKS[words.FAILED]: "red",
               words.MARKS[words.SKIPPED]: "yellow", words.MARKS[words.INTERRUPTED]: "yellow", words.STARTED: "cyan"}
# The runner's closing count (`[tipc] MODEL: 5 passed, 0 failed, 2 skipped; results: ...`): the run's own closing line
# counts the same steps with prepare and tipcgen's checks of the run, so this one is left out (one count on screen).
RUNNER_COUNT = re.compile(re.escape(words.PROGRESS) + r"\S+: \d+ passed, \d+ failed, \d+ skipped; results: ")
FOLLOW_SECONDS = 0.25  # how often --verbose looks at the step's log
REFRESH_PER_SECOND = 4  # the live line's redraws


class Color(str, Enum):
    """--color's choices (core/console.py says what auto means)."""

    auto = "auto"
    always = "always"
    never = "never"


def marked(line: str, mark: str | None, color: bool) -> str:
    """A runner's line with its mark (``[tipc] PASS``) coloured, where colour is wanted."""
    if not color or mark not in MARK_COLORS:
        return line
    head = words.PROGRESS + mark
    return paint(head, MARK_COLORS[mark]) + line[len(head):]


class RunDisplay:
    """The output of one `tipcgen run`: a context manager (the live line and the threads live inside it);
    ``on_line`` and ``on_run_dir`` are the RunRequest's callbacks."""

    def __init__(self, quiet: bool = False, verbose: bool = False, color: str = "auto", stream: Any = None) -> None:
        self.quiet, self.verbose = quiet, verbose
        self.tty = console.is_tty(stream)
        self.color = console.wants_color(color, stream)
        self.console = console.make(stream, color)
        self.watch = StepWatch()
        self.lock = threading.Lock()
        self.heartbeat = heartbeat_seconds()
        self.beats = 0  # heartbeats said for the running step
        self.beat_step = ""
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.live: Any = None
        self.spinner: Any = None

    def __enter__(self) -> RunDisplay:
        if self.tty:
            from rich.live import Live
            from rich.spinner import Spinner

            self.spinner = Spinner("dots", style="cyan" if self.color else None)
            self.live = Live(self, console=self.console, refresh_per_second=REFRESH_PER_SECOND, transient=True,
                             redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        if self.verbose or (not self.tty and self.heartbeat > 0):
            self.thread = threading.Thread(target=self._tick, name="tipcgen-display", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
        if self.verbose:
            with self.lock:
                self._follow(end=True)
        if self.live is not None:
            self.live.stop()

    def on_run_dir(self, run_dir: Path) -> None:
        self.watch.set_run_dir(run_dir)

    def on_line(self, line: str) -> None:
        if ScriptError.is_own_line(line):
            return  # a script that refuses to start: the run raises it as one error message
        mark = words.progress_mark(line)
        with self.lock:
            if self.verbose and mark not in (None, words.STARTED):
                self._follow(end=True)  # the step's last log lines before its PASS/FAIL line
            self.watch.line(line)
            if RUNNER_COUNT.match(line) and not self.verbose:
                return
            if not self.quiet or mark is not None:
                self._print(marked(line, mark, self.color))

    def _print(self, text: str) -> None:
        """One line above the live line (a terminal) or in the log; the caller holds the lock."""
        if self.tty:
            self.console.print(console.line(text))
        else:
            echo(text, color=self.color or None)

    def _follow(self, end: bool = False) -> None:
        """--verbose: the step log's new lines, indented; with ``end`` its unended last line too."""
        lines = self.watch.new_lines() + (self.watch.rest() if end else [])
        for text in lines:
            self._print(f"    {text}")

    def _tick(self) -> None:
        wait = FOLLOW_SECONDS if self.verbose else min(1.0, self.heartbeat / 4)
        while not self.stopped.wait(wait):
            with self.lock:
                if self.verbose:
                    self._follow()
                if not self.tty and self.heartbeat > 0:
                    self._beat()

    def _beat(self) -> None:
        """A log's heartbeat: a line each time the running step has run another heartbeat."""
        step = self.watch.step
        if step != self.beat_step:
            self.beat_step, self.beats = step, 0
        if not step:
            return
        elapsed = self.watch.elapsed()
        if int(elapsed // self.heartbeat) > self.beats:
            self.beats = int(elapsed // self.heartbeat)
            last = self.watch.last_line(every=0)
            self._print(f"[tipcgen] {step}: still running after {clock(elapsed)}" + (f"; log: {last}" if last else ""))

    def __rich__(self) -> Any:
        """The live line (rich calls this on each redraw)."""
        from rich.text import Text

        step = self.watch.step
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(step or "between steps", style="bold" if self.color else None)
        text.append(f"  {clock(self.watch.elapsed())}")
        last = self.watch.last_line()
        if last:
            text.append("  | ", style="dim" if self.color else None)
            text.append_text(console.line(last))
        self.spinner.update(text=text)
        return self.spinner
