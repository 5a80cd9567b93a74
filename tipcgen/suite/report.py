"""A suite's results as data (SuiteResult), its writers (terminal table, suite.json, junit.xml) and the
live progress lines. Formats live in templates/report/suite.*.j2."""
from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO

from tipcgen.core.text import code, shown, terminal
from tipcgen.core.writes import write_file
from tipcgen.format.words import CHAIN_FAILED, CHAIN_PASSED, ERROR, FAILED, INTERRUPTED, PASSED, PROGRESS, SKIPPED, SUITE_MARKS
from tipcgen.results import junit
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
    """A live line per running chain and a done/failed/remaining count.

    On a terminal the running chains are redrawn in place; elsewhere (a CI log) each event is one plain line.
    """

    def __init__(self, total: int, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.total, self.done_n, self.failed_n = total, 0, 0
        self.running: dict[str, tuple[float, str]] = {}
        self.drawn = 0
        self.lock = threading.Lock()
        self.closed = threading.Event()
        if self.tty:  # the elapsed seconds move even while no step ends
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self) -> None:
        while not self.closed.wait(1.0):
            with self.lock:
                if self.running and not self.closed.is_set():
                    self._emit(None)

    def close(self) -> None:
        """Stop redrawing and leave the final count on screen."""
        with self.lock:
            self.closed.set()
            self._emit(None)

    def count(self) -> str:
        return f"{self.done_n}/{self.total} done, {self.failed_n} failed, {self.total - self.done_n} remaining"

    def _emit(self, text: str | None) -> None:
        """Every write goes through core.text.shown, as the CLI's echo does: a chain's progress line or key
        cannot move the cursor or retitle the terminal; the redraw's own cursor moves are text.code's."""
        if self.tty:
            self.stream.write(shown(code("up") + code("clear")) * self.drawn)
            if text:
                self.stream.write(terminal(text) + "\n")
            now = time.monotonic()
            width = shutil.get_terminal_size().columns - 1  # a wrapped line would break the cursor moves
            block = [terminal(f"  running  {key}  {now - t0:5.0f} s  {last}")[:width]
                     for key, (t0, last) in self.running.items()]
            block.append(f"[suite] {self.count()}"[:width])
            self.stream.write("\n".join(block) + "\n")
            self.drawn = len(block)
        elif text:
            self.stream.write(terminal(text) + "\n")
        self.stream.flush()

    def start(self, chain: Chain, slot: Slot, where: str = "") -> None:
        with self.lock:
            self.running[chain.key] = (time.monotonic(), "starting")
            cores = ",".join(map(str, slot.cores)) or "any"
            gpus = ",".join(slot.gpus) or "none"
            self._emit(f"[suite] start {chain.key} ({chain.config}; cores {cores}; gpus {gpus}{where})")

    def line(self, chain: Chain, line: str) -> None:
        if not line.startswith(PROGRESS):
            return
        with self.lock:
            t0 = self.running.get(chain.key, (time.monotonic(), ""))[0]
            self.running[chain.key] = (t0, line)
            self._emit(None if self.tty else f"[suite] {chain.key}: {line}")

    def done(self, result: ChainResult) -> None:
        with self.lock:
            self.running.pop(result.chain.key, None)
            self.done_n += 1
            self.failed_n += result.verdict != PASSED
            detail = f": {result.message}" if result.message else ""
            self._emit(f"[suite] {SUITE_MARKS.get(result.verdict, result.verdict)} {result.chain.key} in "
                       f"{result.seconds:.1f} s{detail} ({self.count()})")
