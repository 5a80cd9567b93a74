"""The report's tables of result checks: each output of each check against its tolerance, and the PTQ
chain's int8 against float (test_tipc/check_quant.py's figures side by side: difference, top-1 agreement,
latency, accuracy on the labelled data)."""
from __future__ import annotations

from dataclasses import dataclass

from tipcgen.format.words import CHECK
from tipcgen.results.summary import Step


@dataclass
class CheckRow:
    """One output of one result check: the worst difference against the tolerance."""

    check: str
    status: str
    output: str
    max_abs: str
    max_rel: str
    tolerance: str
    note: str


@dataclass(frozen=True)
class QuantRow:
    check: str
    status: str
    max_diff: str  # max |int8 - float|, and its share of the float outputs' largest magnitude
    top1: str  # the share of samples whose top-1 class is the same
    float_ms: str
    int8_ms: str
    speedup: str
    float_accuracy: str
    int8_accuracy: str
    delta: str


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _shown(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def quant_rows(steps: list[Step]) -> list[QuantRow]:
    rows = []
    for step in steps:
        check = step.check.differences if isinstance(step.check.differences, dict) else {}
        if step.kind != CHECK or "top1_agreement" not in check:
            continue
        diff, scale = _number(check.get("max_diff")), _number(check.get("float_abs_max"))
        float_ms, int8_ms = _number(check.get("float_ms")), _number(check.get("int8_ms"))
        share = f" ({diff / scale:.1%})" if diff is not None and scale else ""
        accuracy = check.get("accuracy") if isinstance(check.get("accuracy"), dict) else {}
        rows.append(QuantRow(step.name, step.mark, _shown(diff, ".4g") + share, _shown(_number(check.get("top1_agreement")), ".0%"),
                             _shown(float_ms, ".3f"), _shown(int8_ms, ".3f"),
                             f"{float_ms / int8_ms:.2f}x" if float_ms and int8_ms else "-",
                             _shown(_number(accuracy.get("float")), ".4f"), _shown(_number(accuracy.get("int8")), ".4f"),
                             _shown(_number(accuracy.get("delta")), "+.4f")))
    return rows


def check_rows(steps: list[Step]) -> list[CheckRow]:
    rows = []
    for step in steps:
        if step.kind != CHECK:
            continue
        status = step.mark
        check = step.check.differences
        if not check.get("max_abs"):
            rows.append(CheckRow(step.name, status, "-", "-", "-", "-", step.reason or "no differences recorded"))
            continue
        tolerance = f"atol {check.get('atol', 0):g}, rtol {check.get('rtol', 0):g}"
        compared = f"{check.get('logs', '?')} log(s) compared"
        if isinstance(check.get("reference"), str):  # the chain's own check: configurations vs the reference one
            compared = f"{check.get('logs', '?')} configuration(s) compared with {check['reference']}"
        note = compared + (f"; {check['failures']} failure(s)" if check.get("failures") else "")
        for output, value in sorted(check["max_abs"].items()):
            rel = check.get("max_rel", {}).get(output)
            rows.append(CheckRow(step.name, status, output, f"{value:.3g}", "-" if rel is None else f"{rel:.3g}",
                                 tolerance, note))
    return rows
