"""A run against its reproduction target: each paper figure of the descriptor's ``target`` section
(descriptor/target.py) against the last passed eval step that printed that metric, as the summary's ``target``
entry, and its lines for the terminal and the report. Pure functions over data: no I/O.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tipcgen.descriptor.target import Target
from tipcgen.format.chains import BASIC
from tipcgen.format.words import WHOLE_TRAIN_WHOLE_INFER


@dataclass
class MetricResult:
    metric: str
    paper: float
    measured: float | None
    bound: float  # the worst value that still counts as reproduced
    difference: float | None  # measured - paper
    relative_difference: float | None
    reproduced: bool
    step: str = ""


@dataclass
class TargetResult:
    mode: str
    target: dict[str, Any]
    metrics: list[MetricResult] = field(default_factory=list)
    note: str = ""

    @property
    def reproduced(self) -> bool:
        return bool(self.metrics) and all(m.reproduced for m in self.metrics)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "reproduced": self.reproduced, "target": self.target, "note": self.note,
                "metrics": [asdict(m) for m in self.metrics]}


def check(target: Target, eval_metrics: list[tuple[str, dict[str, float]]], mode: str = WHOLE_TRAIN_WHOLE_INFER) -> TargetResult:
    """Each paper figure against the last eval step (name, metrics) that printed that metric."""
    result = TargetResult(mode=mode, target=target.to_dict())
    for name, paper in target.metrics.items():
        lower = name in target.lower_is_better
        allowed = target.tolerance * abs(paper) if target.relative else target.tolerance
        bound = paper + allowed if lower else paper - allowed
        found = [(step, metrics[name]) for step, metrics in eval_metrics if name in metrics]
        if not found:
            result.metrics.append(MetricResult(name, paper, None, bound, None, None, False))
            continue
        step, measured = found[-1]
        ok = measured <= bound if lower else measured >= bound
        relative = (measured - paper) / abs(paper) if paper else None
        result.metrics.append(MetricResult(name, paper, measured, bound, measured - paper, relative, ok, step))
    if not eval_metrics:
        result.note = "no passed eval step printed a metric"
    return result


def result_lines(result: dict[str, Any]) -> list[str]:
    """`accuracy: 0.8108 vs paper 0.8000 (-2% allowed, >= 0.7840): reproduced` per metric, for the terminal."""
    target = result.get("target") or {}
    tol = target.get("tolerance", 0)
    allowed = f"{tol:.0%}" if target.get("relative") else f"{tol:g}"
    lines = []
    for m in result.get("metrics") or []:
        sign = "<=" if m["metric"] in target.get("lower_is_better", []) else ">="
        measured = "not measured" if m["measured"] is None else f"{m['measured']:.4f}"
        verdict = "reproduced" if m["reproduced"] else "MISSED"
        lines.append(f"{m['metric']}: {measured} vs paper {m['paper']:.4f} (tolerance {allowed}, "
                     f"{sign} {m['bound']:.4f}): {verdict}")
    verdict = "reproduced" if result.get("reproduced") else "NOT reproduced"
    lines.append(f"paper target {verdict}" + (f" ({result['note']})" if result.get("note") else ""))
    return lines


def against_target(desc: Any, mode: str, chain: str, eval_steps: list[tuple[str, dict[str, float]]]) -> dict[str, Any]:
    """The summary's ``target`` entry: checked on whole_train_whole_infer's basic chain when the descriptor has one."""
    if desc is None or getattr(desc, "target", None) is None or mode != WHOLE_TRAIN_WHOLE_INFER or chain != BASIC:
        return {}
    return check(desc.target, eval_steps, mode).to_dict()
