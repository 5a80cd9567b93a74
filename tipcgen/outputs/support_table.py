"""The support table of test_tipc/docs/test_train_inference_python.md (§1 测试结论汇总), from a run.

``rows(summary)`` reads what the run's passed steps prove (train entries, inference cases) into the
table's cells; ``templates/docs/support_table.md.j2`` renders them; ``replace`` swaps the tables of
§1 for that text; ``table_body`` finds the rows a doc's §1 tables hold (an empty table is a failed
acceptance item). Pure text in, text out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from tipcgen.core import inputs
from tipcgen.format.words import INFER, PASSED, SKIPPED, TRAIN
from tipcgen.results.summary import Summary

SECTION = "## 1."
MARKER = "<!-- tipcgen: support table from "  # the rendered table starts and ends with these lines
END_MARKER = "<!-- tipcgen: end of support table -->"
# Table column -> the field of a step's case it shows (summary.StepCase).
_CASE_KEYS = {"mkldnn": "mkldnn", "threads": "threads", "trt": "use_trt", "precision": "precision",
              "batch_size": "batch_size"}
_TRAINERS = {"norm_train": "正常训练", "pact_train": "量化训练", "fpgm_train": "裁剪训练", "distill_train": "蒸馏训练"}


@dataclass
class InferRow:
    device: str  # GPU | CPU
    values: dict[str, set[str]] = field(default_factory=dict)

    def cell(self, key: str) -> str:
        found = self.values.get(key)
        return "/".join(sorted(found, key=_natural)) if found else "-"


@dataclass
class Table:
    model: str
    run: str  # the run folder, relative to the repository root
    single: list[str]  # 单机单卡 cells: `正常训练 (CPU)` ...
    multi: list[str]  # 单机多卡
    infer: list[InferRow]
    skipped: list[str]  # why cases did not run (one line each, deduplicated)


def _natural(text: str) -> tuple:
    number = inputs.whole_number(text)
    return (0, number) if number is not None else (1, text)


def build(summary: Summary, run: str) -> Table:
    """The cells a run proves: only steps that passed count; skipped ones are listed with their reason."""
    single: list[str] = []
    multi: list[str] = []
    infer: dict[str, InferRow] = {}
    for step in summary.steps:
        if step.status != PASSED:
            continue
        if step.kind == TRAIN:
            trainer, entry = step.training.trainer, step.training.gpu
            if not entry or not trainer:
                continue
            devices = entry.split(",")
            if entry == "-1":
                where = "CPU"
            elif step.case.device == "cpu":  # no CUDA device: the runner stood in processes over gloo
                where = f"CPU, {len(devices)} processes over gloo"
            else:
                where = f"{len(devices)} GPU" if len(devices) > 1 else "GPU"
            text = f"{_TRAINERS.get(trainer, trainer)} ({where})"
            target = multi if len(devices) > 1 else single
            if text not in target:
                target.append(text)
        elif step.kind == INFER and step.training.gpu and step.case.device in ("cpu", "gpu"):  # the basic chain's matrix
            row = infer.setdefault(step.case.device, InferRow(step.case.device.upper()))
            for key, field_name in _CASE_KEYS.items():
                value = getattr(step.case, field_name)
                if value is not None:
                    row.values.setdefault(key, set()).add(value)
    skipped = [f"{step.kind} {step.name}: {step.reason}" for step in summary.steps if step.status == SKIPPED]
    return Table(model=summary.model, run=run, single=single, multi=multi,
                 infer=[infer[d] for d in ("gpu", "cpu") if d in infer], skipped=skipped)


def render(table: Table) -> str:
    from tipcgen.render.templating import environment

    return environment().get_template("docs/support_table.md.j2").render(t=table)


def _section(lines: list[str]) -> tuple[int, int] | None:
    """The line range [start, end) of §1 (from its heading to the next `## ` heading)."""
    start = next((i for i, line in enumerate(lines) if line.startswith(SECTION)), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return start, end


def _is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _is_rule(line: str) -> bool:
    return bool(re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", line)) and "-" in line


def table_body(text: str) -> tuple[int, list[tuple[int, str]]] | None:
    """(line of §1, [(line number, row)] of the body rows of its tables whose cells say something);
    None when the doc has no §1. Header and rule rows, and rows of only `-` cells, are not body rows."""
    lines = text.splitlines()
    found = _section(lines)
    if found is None:
        return None
    start, end = found
    body = []
    for number in range(start + 1, end):
        line = lines[number]
        if not _is_row(line) or _is_rule(line) or number + 1 < end and _is_rule(lines[number + 1]):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if any(cell not in ("", "-") for cell in cells[2:] or cells):
            body.append((number + 1, line))
    return start + 1, body


def replace(text: str, table_text: str) -> str | None:
    """text with the table this module wrote before (between its markers), else §1's tables, replaced
    by table_text; None when the doc has neither."""
    lines = text.splitlines(keepends=True)
    begin = next((i for i, line in enumerate(lines) if line.startswith(MARKER)), None)
    close = next((i for i, line in enumerate(lines) if line.startswith(END_MARKER)), None)
    if begin is not None and close is not None and close > begin:
        return "".join(lines[:begin]) + table_text + "".join(lines[close + 1:])
    found = _section([line.rstrip("\n") for line in lines])
    if found is None:
        return None
    inside = [i for i in range(found[0] + 1, found[1]) if _is_row(lines[i])]
    if not inside:
        return None
    return "".join(lines[:inside[0]]) + table_text + "".join(lines[inside[-1] + 1:])
