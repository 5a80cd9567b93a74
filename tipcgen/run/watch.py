"""The step a chain is running now, as a display shows it: its kind and name, how long it has run, and its
log's last line (or, with ``follow``, the log's new lines).

Fed the lines a run prints (the runner's progress lines, ``[tipc] RUN kind name`` when a step starts and
``[tipc] PASS|FAIL|SKIP kind name ...`` when it ends; before the runner, prepare.sh's own lines). The
step's output goes to its log file, never to the run's output: the log is found in the run folder
(``<name>.log``, else the newest ``*.log`` written since the step started) and read from its end, at most
``TAIL_BYTES`` at a time, through ``core.inputs.read_tail`` (no link followed, no pipe waited on). What is
read is shown, never acted on: every text here is escaped by the display (core.text.shown).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.text import terminal
from tipcgen.format import paths, words

TAIL_BYTES = 4096  # read from a log's end for its last line
FOLLOW_BYTES = 1 << 16  # the most a follower reads of a log per look; more is skipped, and said
LINE_CHARS = 300  # the most of a log line the live display keeps
MAX_LOGS = 500  # the most entries of a run folder looked at for the newest log
# Logs that are not a step's own: the runner's status lines and prepare.sh's log.
_NOT_A_STEP = {paths.PREPARE_LOG, *paths.RESULT_LOGS.values()}


def heartbeat_seconds(default: float = 60.0) -> float:
    """How often a display without a terminal says that a long step is still running: TIPCGEN_HEARTBEAT
    (seconds, above 0; 0 turns it off), else ``default``."""
    text = os.environ.get("TIPCGEN_HEARTBEAT", "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        return default
    return value if value == value and 0 <= value < 1e6 else default


def clock(seconds: float) -> str:
    """``42 s``, ``3m05s``, ``1h02m``: a running time as a line shows it."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class StepWatch:
    """One chain's running step; thread-safe (the lines come from a reader thread, a display reads from its own)."""

    def __init__(self, run_dir: Path | None = None, prepare: bool = True) -> None:
        self.run_dir = run_dir
        self.lock = threading.Lock()
        self.started = time.monotonic()  # the chain's start
        # Before the runner's first step: prepare.sh (tipcgen run), or a chain starting (a suite's).
        self.kind, self.name = ("prepare", "") if prepare else ("", "")
        self.step_started = self.started
        self.step_wall = time.time()
        self.last = ""  # the last line printed that was not a progress line (prepare.sh's output)
        self._log: Path | None = None
        self._log_seen = 0.0  # when the log was last looked for
        self._follow_at = 0  # the follower's offset in the log
        self._follow_rest = b""  # a line the follower has read part of
        self._tail = ("", 0.0)  # the last log line read, and when
        # Steps started before the shown one and still running (one run beside the next steps, tipc_step_beside: an
        # export beside the eval, a proof beside the inference): each shown again when the step shown ends.
        self._beside: list[tuple[str, str, float, float]] = []

    def set_run_dir(self, run_dir: Path) -> None:
        with self.lock:
            self.run_dir = run_dir

    def line(self, text: str) -> str | None:
        """Take one line the run printed; the progress mark it is (RUN, PASS, ...), or None."""
        mark = words.progress_mark(text)
        with self.lock:
            if mark is None:
                if text.strip() and not text.startswith(words.PROGRESS):
                    self.last = text
                return None
            fields = text[len(words.PROGRESS):].split()
            if mark == words.STARTED and len(fields) >= 3:
                if self.name:  # a step started beside the next ones: shown again when this one ends
                    self._beside.append((self.kind, self.name, self.step_started, self.step_wall))
                self._show(fields[1], fields[2], time.monotonic(), time.time())
            elif len(fields) >= 3 and (fields[1], fields[2].rstrip(":")) == (self.kind, self.name):
                self.kind, self.name = "", ""
                if self._beside:
                    self._show(*self._beside.pop())
            elif len(fields) >= 3:
                ended = (fields[1], fields[2].rstrip(":"))
                self._beside = [step for step in self._beside if step[:2] != ended]
            return mark

    def _show(self, kind: str, name: str, started: float, wall: float) -> None:
        """Show a running step (its log looked for anew)."""
        self.kind, self.name, self.step_started, self.step_wall = kind, name, started, wall
        self._log, self._log_seen, self._follow_at, self._follow_rest = None, 0.0, 0, b""
        self._tail = ("", 0.0)
        self.last = ""

    @property
    def step(self) -> str:
        """``train norm_train_gpus_-1``, ``prepare``, or "" between steps."""
        with self.lock:
            return f"{self.kind} {self.name}".strip()

    def elapsed(self) -> float:
        """Seconds the running step (or, between steps, the chain) has run."""
        with self.lock:
            return time.monotonic() - (self.step_started if self.kind else self.started)

    def _find_log(self) -> Path | None:
        """The running step's log in the run folder: ``<name>.log``, else the newest ``*.log`` (not the runner's
        status log nor prepare.log) written since the step started; looked for at most twice a second."""
        if self._log is not None or self.run_dir is None or not self.name:
            return self._log
        now = time.monotonic()
        if now - self._log_seen < 0.5:
            return None
        self._log_seen = now
        named = self.run_dir / f"{self.name}.log"
        if named.is_file() and not named.is_symlink():
            self._log = named
            return named
        newest, when = None, self.step_wall - 1
        try:
            with os.scandir(self.run_dir) as entries:
                for count, entry in enumerate(entries):
                    if count >= MAX_LOGS:
                        break
                    if not entry.name.endswith(".log") or entry.name in _NOT_A_STEP:
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if entry.is_file(follow_symlinks=False) and info.st_mtime >= when:
                        newest, when = Path(entry.path), info.st_mtime
        except OSError:
            return None
        return newest  # not kept: a step's log written later may be newer still

    def last_line(self, every: float = 0.25) -> str:
        """The last line of the running step's log (escaped, at most LINE_CHARS), else the last line the run
        printed; read from the file at most every ``every`` seconds."""
        with self.lock:
            text, when = self._tail
            if time.monotonic() - when >= every:
                log = self._find_log()
                text = _last_line(inputs.read_tail(log, TAIL_BYTES)[0]) if log is not None else ""
                self._tail = (text, time.monotonic())
            return text or terminal(self.last.replace("\t", " "))[:LINE_CHARS]

    def new_lines(self) -> list[str]:
        """The lines the running step's log gained since the last call (for -v): at most FOLLOW_BYTES read per
        call, the bytes beyond it skipped and said; a line not yet ended waits for its end."""
        with self.lock:
            log = self._find_log()
            if log is None:
                return []
            data, size = inputs.read_tail(log, FOLLOW_BYTES, self._follow_at)
            out: list[str] = []
            if size < self._follow_at:  # the log was cut or replaced: from its start again
                self._follow_at, self._follow_rest = 0, b""
                return out
            if size - self._follow_at > FOLLOW_BYTES:
                skipped = size - FOLLOW_BYTES - self._follow_at
                out.append(f"... ({skipped} bytes of {log.name} skipped)")
                data, size = inputs.read_tail(log, FOLLOW_BYTES)
                self._follow_rest, self._follow_at = b"", size - len(data)
            self._follow_at += len(data)
            *done, self._follow_rest = (self._follow_rest + data).split(b"\n")
            if len(self._follow_rest) > FOLLOW_BYTES:
                done.append(self._follow_rest)
                self._follow_rest = b""
            out.extend(_decoded(chunk) for chunk in done)
            return out

    def rest(self) -> list[str]:
        """What the follower has read of the log's last line that has no end yet (said when its step ends)."""
        with self.lock:
            rest, self._follow_rest = self._follow_rest, b""
            return [_decoded(rest)] if rest.strip() else []


def _decoded(data: bytes) -> str:
    """A log line as text: invalid UTF-8 replaced; a progress bar's carriage returns leave its last state."""
    return data.decode("utf-8", errors="replace").rstrip("\r").rsplit("\r", 1)[-1]


def _last_line(data: bytes) -> str:
    """The last non-empty line of a log's end, escaped (core.text.terminal), at most LINE_CHARS."""
    for chunk in reversed(data.split(b"\n")):
        text = _decoded(chunk).strip()
        if text:
            return terminal(text.replace("\t", " "))[:LINE_CHARS]  # one line of fixed width: no tab either
    return ""
