"""The report's training-speed part for a benchmark_train run: one row per case, and the ips chart.

Rows come from the speed JSONs the run wrote (index/*_speed, results/speeds.read_speeds), plus
the cases the run skipped, with the reason (e.g. fp16 on a CPU machine, where AMP has no effect).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tipcgen.results import speeds
from tipcgen.format.words import SKIPPED, TRAIN
from tipcgen.outputs import plot_layout
from tipcgen.outputs.markup import plot_name, plot_text
from tipcgen.results.summary import Summary

IPS_PNG = "report-ips.png"


@dataclass
class SpeedRow:
    case: str
    device_num: str
    fp_item: str
    batch_size: str
    ips: float | None  # None: the case did not run
    unit: str
    records: str  # "5 (first 2 skipped)"
    peak_memory: str  # "688.3 MB RSS"
    note: str


def speed_rows(summary: Summary, run_dir: Path) -> list[SpeedRow]:
    rows = []
    for data in speeds.read_speeds(run_dir):
        kind = {"rss": "RSS", "gpu_reserved": "GPU reserved"}.get(str(data.get("peak_memory_kind")), "")
        peak = data.get("peak_memory_mb")
        rows.append(SpeedRow(
            case=data["file"].removesuffix("_speed"), device_num=str(data.get("device_num", "")),
            fp_item=str(data.get("fp_item", "")), batch_size=str(data.get("batch_size", "")), ips=float(data["ips"]),
            unit=str(data.get("speed_unit", "")),
            records=f"{data.get('ips_records', '?')} (first {data.get('skip_steps', '?')} skipped)",
            peak_memory=f"{peak} MB {kind}".strip() if isinstance(peak, (int, float)) else "-",
            note=str(data.get("note") or "")))
    for step in summary.steps:
        if step.kind == TRAIN and step.status == SKIPPED:
            rows.append(SpeedRow(case=step.name, device_num=step.case.device_num or "", fp_item=step.case.precision or "",
                                 batch_size=step.case.batch_size or "", ips=None,
                                 unit="", records="-", peak_memory="-", note=f"not run: {step.reason}"))
    return rows


def ips_figure(figure, rows: list[SpeedRow], summary: Summary):
    """A bar per case that ran: its ips as upstream's analysis computes it."""
    ran = [row for row in rows if row.ips is not None]
    if not ran:
        return None
    fig = figure(figsize=(10, 1.4 + 0.45 * len(ran)))
    ax = fig.add_subplot()
    positions = list(range(len(ran)))[::-1]
    values = [row.ips for row in ran]
    labels = [plot_text(f"bs{r.batch_size} {r.fp_item} {r.device_num}") for r in ran]
    ax.barh(positions, values, color="#1565c0", height=0.6)
    ax.set_yticks(positions, labels, fontsize=9)
    for y, row in zip(positions, ran):
        ax.text(row.ips, y, plot_text(f" {row.ips:g} {row.unit}"), va="center", fontsize=8)
    ax.set_xlim(0, max(values + [0.1]) * 1.3)
    ax.set_xlabel(plot_text(ran[0].unit or "ips"))
    title = (f"Training speed per case: {plot_name(summary.model, 60)} / {plot_name(summary.mode, 40)}\n"
             "ips: mean of the logged ips: values after the first 2 (upstream's analysis)")
    ax.grid(axis="x", alpha=0.3)
    plot_layout.fit(fig, ax, tick_labels=labels, tick_size=9, title=title, xlabel=ax.get_xlabel())
    return fig
