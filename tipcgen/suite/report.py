"""A suite's results as data (SuiteResult), its writers (terminal table, suite.json, junit.xml) and the
live progress lines. Formats live in templates/report/suite.*.j2."""
from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tipcgen.core.text import terminal
from tipcgen.core.writes import write_file
from tipcgen.format.words import CHAIN_FAILED, CHAIN_PASSED, ERROR, FAILED, INTERRUPTED, PASSED, PROGRESS, SKIPPED, SUITE_MARKS
from tipcgen.results import junit
from tipcgen.run.watch import StepWatch, clock, heartbeat_seconds
from tipcgen.suite.slots import Slot
from tipcgen.suite.suite import Chain, ChainResult, Refused



@dataclass
class SuiteResult:
    results: list[ChainResult] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    wall_seconds: float = 0.0
    engine: str = "local"
    notes: list[str] = field(default_factory=list)
    interrupted_by: str = ""  # SIGINT, SIGTERM or SIGHUP, when the suite received it

    def count(self, verdict: str) -> int:
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def ok(self) -> bool:
        return not self.refused and all(r.verdict == PASSED for r in self.results)

    @property
    def exit_code(self) -> int:
        if self.interrupted_by or self.count(INTERRUPTED):
            return 128 + {"SIGHUP": 1, "SIGTERM": 15}.get(self.interrupted_by, 2)
        return 0 if self.ok else 1

    def models(self) -> dict[str, list[ChainResult]]:
        out: dict[str, list[ChainResult]] = {}
        for result in self.results:
            out.setdefault(result.chain.model, []).append(result)
        return out

    def to_dict(self) -> dict:
        return {"ok": self.ok, "exit_code": self.exit_code, "engine": self.engine, "interrupted_by": self.interrupted_by,
                "wall_seconds": self.wall_seconds, "notes": self.notes,
                "counts": {v: self.count(v) for v in SUITE_MARKS} | {"refused": len(self.refused)},
                "chains": [r.to_dict() for r in self.results],
                "refused": [{"config": r.config, "reasons": r.reasons} for r in self.refused]}


def _env():
    from tipcgen.render.templating import environment

    return environment()


def write_json(suite: SuiteResult, path) -> None:
    write_file(path, json.dumps(suite.to_dict(), indent=2, ensure_ascii=False) + "\n", within=path.parent)


def junit_suites(suite: SuiteResult) -> list[junit.Suite]:
    """A test suite per model (a case per step of each of its chains; a chain that did not finish is an error
    case) and one for the refused configs."""
    suites = []
    for model, results in suite.models().items():
        cases = []
        for r in results:
            prefix = f"{model}.{r.chain.chain}.{r.chain.mode}"
            if r.summary:
                cases += junit.summary_suite(r.summary, prefix, log_dir=str(r.run_dir)).cases
            if r.verdict not in (PASSED, FAILED):
                cases.append(junit.Case(prefix, r.verdict, r.seconds, ERROR, f"{r.verdict}: {r.message}", f"log: {r.log}"))
        suites.append(junit.Suite(f"tipc.{model}", cases, sum(r.seconds for r in results)))
    if suite.refused:
        suites.append(junit.Suite("tipc.refused", [junit.Case("refused", r.config, 0.0, ERROR, r.reasons[0], "\n".join(r.reasons))
                                                   for r in suite.refused], 0.0))
    return suites


def write_junit(suite: SuiteResult, path) -> None:
    write_file(path, junit.junit_text("tipc-suite", junit_suites(suite), suite.wall_seconds), within=path.parent)


def terminal_text(suite: SuiteResult) -> str:
    rows = []
    for r in suite.results:
        s = r.summary
        steps = f"{s.count(PASSED)}/{s.count(FAILED)}/{s.count(SKIPPED)}" if s else "-"
        rows.append((SUITE_MARKS.get(r.verdict, r.verdict.upper()), terminal(r.chain.model), terminal(r.chain.chain),
                     terminal(r.chain.mode), steps, f"{r.seconds:.1f}", terminal(r.message)))
    widths = [max([len(row[i]) for row in rows] + [len(h)]) for i, h in enumerate(
        ("verdict", "model", "chain", "mode", "p/f/s"))]
    return _env().get_template("report/suite.txt.j2").render(suite=suite, rows=rows, widths=widths,
                                                             verdict=CHAIN_PASSED if suite.ok else CHAIN_FAILED)


class Progress:
    """What a suite shows while its chains run: an event line as each starts and ends, and a
    done/failed/remaining count.

    On a terminal, rich redraws a table under the event lines: a row per running chain with its running step,
    how long that has run and its log's last line (run/watch.py reads it in the chain's run folder), then the
    count. Elsewhere (a CI log) each event is one plain line, without escape codes, and every heartbeat (60 s,
    TIPCGEN_HEARTBEAT) one line per running chain says it is still running and what its step's log says last.
    """

    def __init__(self, total: int, stream: TextIO | None = None, tty: bool | None = None,
                 color: str = "auto") -> None:
        from tipcgen.core import console

        self.stream = stream or sys.stdout
        self.tty = console.is_tty(self.stream) if tty is None else tty
        self.color = console.wants_color(color, self.stream)
        self.console = console.make(self.stream, color, tty=True) if self.tty else None
        self.total, self.done_n, self.failed_n = total, 0, 0
        self.running: dict[str, StepWatch] = {}
        self.beats: dict[str, int] = {}
        self.heartbeat = heartbeat_seconds()
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.live = None
        self.thread: threading.Thread | None = None
        if self.tty:
            from rich.live import Live

            self.live = Live(self, console=self.console, refresh_per_second=4, transient=True,
                             redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        elif self.heartbeat > 0:
            self.thread = threading.Thread(target=self._tick, name="tipcgen-suite-heartbeat", daemon=True)
            self.thread.start()

    def _tick(self) -> None:
        while not self.closed.wait(min(1.0, self.heartbeat / 4)):
            with self.lock:
                for key, watch in self.running.items():
                    elapsed = time.monotonic() - watch.started
                    if int(elapsed // self.heartbeat) > self.beats.get(key, 0):
                        self.beats[key] = int(elapsed // self.heartbeat)
                        step, last = watch.step, watch.last_line(every=0)
                        self._emit(f"[suite] {key}: still running after {clock(elapsed)}"
                                   + (f", {step} for {clock(watch.elapsed())}" if step else "")
                                   + (f"; log: {last}" if last else ""))

    def close(self) -> None:
        """Stop redrawing and leave the final count on screen."""
        self.closed.set()
        if self.thread is not None:
            self.thread.join()
        with self.lock:
            if self.live is not None:
                self.live.stop()
                self.live = None
            if self.tty:
                self._emit(f"[suite] {self.count()}")

    def count(self) -> str:
        return f"{self.done_n}/{self.total} done, {self.failed_n} failed, {self.total - self.done_n} remaining"

    def rows(self) -> list[tuple[str, str, str, str]]:
        """The live table's rows: (chain, its running step or "starting", how long that has run, its log's last
        line), each escaped (core.text.terminal)."""
        out = []
        for key, watch in list(self.running.items()):  # one step of the interpreter: safe beside start and done
            out.append((terminal(key), terminal(watch.step or "starting"), clock(watch.elapsed()), watch.last_line()))
        return out

    def __rich__(self):
        """The live table (rich calls this on each redraw)."""
        from rich.table import Table
        from rich.text import Text

        from tipcgen.core.console import line

        table = Table.grid(padding=(0, 2))
        for _ in range(4):
            table.add_column(no_wrap=True, overflow="ellipsis")
        for key, step, elapsed, last in self.rows():  # no lock: rich holds its own while it draws, and _emit the two
            table.add_row(line(key), line(step), Text(elapsed), line(last))
        table.add_row(Text("[suite]"), Text(self.count()), Text(""), Text(""))
        return table

    def _emit(self, text: str) -> None:
        """One event line (above the live table on a terminal); through core.text.shown, as the CLI's echo does: a
        chain's progress line or key cannot move the cursor or retitle the terminal."""
        if self.console is not None:
            from tipcgen.core.console import line

            self.console.print(line(text))
        else:
            self.stream.write(terminal(text) + "\n")
            self.stream.flush()

    def start(self, chain: Chain, slot: Slot, where: str = "", run_dir: Path | None = None) -> None:
        """A chain started; run_dir: its run folder while it runs (the working copy's), where its steps' logs are."""
        with self.lock:
            self.running[chain.key] = StepWatch(run_dir, prepare=False)
            self.beats[chain.key] = 0
            cores = ",".join(map(str, slot.cores)) or "any"
            gpus = ",".join(slot.gpus) or "none"
            self._emit(f"[suite] start {chain.key} ({chain.config}; cores {cores}; gpus {gpus}{where})")

    def line(self, chain: Chain, line: str) -> None:
        if not line.startswith(PROGRESS):
            return
        with self.lock:
            watch = self.running.get(chain.key)
            if watch is not None:
                watch.line(line)
            if not self.tty:
                self._emit(f"[suite] {chain.key}: {line}")

    def done(self, result: ChainResult) -> None:
        with self.lock:
            self.running.pop(result.chain.key, None)
            self.done_n += 1
            self.failed_n += result.verdict != PASSED
            detail = f": {result.message}" if result.message else ""
            self._emit(f"[suite] {SUITE_MARKS.get(result.verdict, result.verdict)} {result.chain.key} in "
                       f"{result.seconds:.1f} s{detail} ({self.count()})")
