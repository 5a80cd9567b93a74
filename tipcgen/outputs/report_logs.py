"""What a report reads from a run's logs: the loss curve of each train step, and the AutoLog block.

Regular expressions here read a training log's free text (loss and step lines) and AutoLog's
`INFO: key: value` lines, never a step or log name: which step a log belongs to comes from its record.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.format.paths import TRAIN_LOG
from tipcgen.format.words import INFER, PASSED
from tipcgen.results.summary import Step, Summary
from tipcgen.results.summary_check import inside

# `epoch: 1, global_step: 5, loss: 0.69312, ...` (the TIPC train log fields); step counters by other names too.
_LOSS = re.compile(r"(?<![\w.])loss\s*[:=]\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))", re.IGNORECASE)
_STEP = re.compile(r"(?<![\w.])(global_step|step|iter|iteration)\s*[:=]\s*([0-9]{1,15})(?![0-9])", re.IGNORECASE | re.ASCII)
_IPS = re.compile(r"(?<![\w.])avg_ips\s*[:=]\s*([-+0-9.eE]+)")
# paddle.jit's translator (the dy2static chain trains under TRANSLATOR_VERBOSITY=1) dumps programs and converted source
# after a line naming it: those lines (indented, braces, def/class/decorators, blank) are code, never loss lines.
_TRANSLATOR = "Dynamic-to-Static"
_DUMPED = re.compile(r"^(?:\s|[{}]|def |async def |class |@|$)")
# AutoLog's environment block in inference logs: `... INFO:  paddle_version: 3.3.1`.
_AUTOLOG = re.compile(r"INFO:\s+(OS_version|CUDA_version|CUDNN_version|paddle_version|paddle_commit|"
                      r"runtime_device|inference_engine):\s*(.*?)\s*$")


@dataclass
class TrainCurve:
    """The loss values one train step logged, in order."""

    step: str  # the train step's name
    source: str  # the log they were read from, relative to the repository root
    x_label: str
    points: list[tuple[float, float]] = field(default_factory=list)
    ips: float | None = None  # the last avg_ips
    restarts: int = 0  # times the step counter started over (once per epoch in many repositories)

    @property
    def non_finite(self) -> list[float]:
        return [x for x, loss in self.points if not math.isfinite(loss)]


def read_curve(step: Step, run_dir: Path, root: Path) -> TrainCurve | None:
    """The loss values of a train step: from <output_dir>/train.log, else from the step's own log (each
    only where it lies inside the run folder, or the repository: summary_check.inside)."""
    for path in (inside(run_dir, f"{step.name}/{TRAIN_LOG}"), inside(root, step.log)):
        if path is None:
            continue
        try:  # line by line, bounded (core/inputs.py): a whole-data log can be large, a hostile one a 1 GiB line
            curve = parse_train_log(inputs.lines(path, "training log"), step.name, _rel(path, root))
        except TipcgenError:
            continue
        if curve.points:
            return curve
    return None


def _without_dumps(lines: Iterable[str]) -> Iterable[str]:
    """The lines of a log without paddle.jit's dumps (as test_tipc/check_dy2static.py reads it)."""
    dump = False
    for line in lines:
        if _TRANSLATOR in line:
            dump = True
        elif not (dump and _DUMPED.match(line)):
            dump = False
            yield line


def parse_train_log(text: str | Iterable[str], step: str, source: str) -> TrainCurve:
    """Loss lines (`global_step: 5, loss: 0.69`) → points; without a step counter, the line's order."""
    curve = TrainCurve(step=step, source=source, x_label="global_step")
    counters = set()
    offset, restarts = 0.0, 0
    last = stride = None  # the previous counter value and its usual increment
    for line in _without_dumps(text.splitlines() if isinstance(text, str) else text):
        loss = _LOSS.search(line)
        if not loss:
            continue
        counter = _STEP.search(line)
        counters.add(counter.group(1).lower() if counter else "")
        x = float(counter.group(2)) if counter else float(len(curve.points) + 1)
        if counter and last is not None:
            if x < last:  # the counter restarted (a new epoch): carry on from the last global step
                offset += last + (stride or 1.0) - x
                restarts += 1
            elif stride is None and x > last:
                stride = x - last
        last = x if counter else last
        curve.points.append((x + offset if counter else x, float(loss.group(1))))
        ips = _IPS.search(line)
        if ips:
            try:
                curve.ips = float(ips.group(1))
            except ValueError:
                pass
    named = counters - {""}
    curve.x_label = named.pop() if len(named) == 1 and "" not in counters else "logged loss line"
    if restarts and curve.x_label != "logged loss line":
        curve.x_label, curve.restarts = "global step", int(restarts)
    if curve.x_label == "logged loss line":
        curve.points = [(float(i), loss) for i, (_, loss) in enumerate(curve.points, 1)]
    return curve


def autolog_info(summary: Summary, root: Path) -> dict[str, str]:
    """The AutoLog environment block of the first passed inference log that has one (paddle_version ...)."""
    for step in summary.steps:
        path = inside(root, step.log) if step.kind == INFER and step.status == PASSED else None
        if path is not None:
            found = {}
            try:
                for line in inputs.lines(path, "inference log"):
                    match = _AUTOLOG.search(line)
                    if match:
                        found[match.group(1)] = match.group(2)
            except TipcgenError:
                continue
            if found:
                return found
    return {}


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
