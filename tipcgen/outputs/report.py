"""``tipcgen report``: one document for a submission or a pull request, from a run folder.

Reads what a ``tipcgen run`` left (summary.json, the step logs, the train script's train.log) into
a ``Report``; draws the per-step times and the training loss as PNGs (matplotlib, Agg, imported only
here); and renders ``templates/report/report.md.j2`` and ``report.html.j2`` (self-contained: the
pictures are embedded, no JavaScript). Pure reading and rendering; ``writes.write_tree`` writes.
"""
from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from tipcgen import __version__
from tipcgen.core import writes
from tipcgen.core.errors import TipcgenError
from tipcgen.core.needs import numpy_for
from tipcgen.format.chains import BASIC
from tipcgen.format.paths import (BACKUP, LOSS_PNG, OUTPUT, PREPARE_SH, REPORT_HTML, REPORT_MD, RUNNERS, SUMMARY_JSON,
                                  TEST_TIPC, is_previous)
from tipcgen.format.words import BENCHMARK_TRAIN, SKIPPED, TRAIN
from tipcgen.outputs import markup, plot_layout, report_bench, report_checks
from tipcgen.outputs.checklist import Acceptance
from tipcgen.outputs.report_logs import (
    TrainCurve,
    autolog_info,
    parse_train_log,  # noqa: F401 (report.parse_train_log, as before the split)
    read_curve,
)
from tipcgen.render import templating
from tipcgen.results.summary import Summary, check_text, load_summary, relocate_logs
from tipcgen.results.summary_check import check_alignment_data

TIMING_PNG = "report-timing.png"
ALIGN_JSON = "align_report.json"
FORMATS = ("md", "html")

_SHOWN_ENV = ("python", "platform", "paddle")  # summary.json environment keys with a row of their own


@dataclass
class Row:
    """One line of the step table."""

    number: int
    status: str  # PASS | FAIL | SKIP
    kind: str
    name: str
    seconds: str
    detail: str
    command: str
    log: str


@dataclass
class Report:
    summary: Summary
    run_dir: Path
    root: Path
    environment: list[tuple[str, str]]
    rows: list[Row]
    curves: list[TrainCurve]
    checks: list[report_checks.CheckRow]
    alignment: dict | None
    reproduce: list[str]
    images: dict[str, str] = field(default_factory=dict)  # loss / timing -> file name
    notes: list[str] = field(default_factory=list)
    acceptance: Acceptance | None = None  # the basic chain's acceptance checklist (tipcgen accept)
    speeds: list = field(default_factory=list)  # benchmark_train: report_bench.SpeedRow per case
    quant: list = field(default_factory=list)  # ptq: report_checks.QuantRow per int8-vs-float check

    @property
    def trained(self) -> bool:
        return any(step.kind == TRAIN and step.status != SKIPPED for step in self.summary.steps)

    @property
    def verdict(self) -> str:
        return self.summary.verdict

    @property
    def provenance(self) -> list[tuple[str, str]]:
        from tipcgen.run.provenance import rows

        return rows(self.summary.provenance)

    @property
    def target_lines(self) -> list[str]:
        from tipcgen.results.target_check import result_lines

        return result_lines(self.summary.target) if self.summary.target else []


# ---------------------------------------------------------------- finding and reading a run

def find_run(root: Path) -> Path:
    """The newest run folder (the one whose summary.json was written last) under root/test_tipc/output."""
    output = root / OUTPUT
    found = [p for p in [*output.glob("*/*/" + SUMMARY_JSON), *output.glob("*/*/*/" + SUMMARY_JSON)]
             if not is_previous(p.parent)]  # a folder a rerun moved aside: passed by name, never picked
    if not found:
        raise TipcgenError(f"no {SUMMARY_JSON} under {output}",
                           "run a chain first (tipcgen run --mode lite_train_lite_infer), or pass its run folder")
    return max(found, key=lambda p: p.stat().st_mtime).parent


def root_of(run_dir: Path) -> Path:
    """The repository root of a run folder (the folder that holds its test_tipc/)."""
    for parent in run_dir.resolve().parents:
        if parent.name == TEST_TIPC:
            return parent.parent
    return Path.cwd()


def build(run_dir: Path, root: Path | None = None, align: Path | None = None,
          acceptance: Acceptance | None = None) -> Report:
    """Everything the report shows, read from a run folder, and the acceptance checklist it is given
    (accept.for_report: the report shows it, it does not run it)."""
    path = run_dir / SUMMARY_JSON
    if not path.is_file():
        raise TipcgenError(f"{run_dir} has no {SUMMARY_JSON}", "pass a run folder such as "
                           "test_tipc/output/<model>/<mode>, which tipcgen run writes")
    summary = load_summary(path)  # SummaryFileError (exit 2) names the file and the field
    root = root or root_of(run_dir)
    relocate_logs(summary, run_dir, root)
    curves = [curve for step in summary.steps if step.kind == TRAIN and step.status != SKIPPED
              for curve in [read_curve(step, run_dir, root)] if curve is not None]
    report = Report(summary=summary, run_dir=run_dir, root=root, environment=environment_rows(summary, root),
                    rows=step_rows(summary), curves=curves, checks=report_checks.check_rows(summary.steps),
                    alignment=read_alignment(align, run_dir, root, summary.model), reproduce=reproduce(summary))
    report.acceptance = acceptance
    if summary.chain == BENCHMARK_TRAIN:
        report.speeds = report_bench.speed_rows(summary, run_dir)
    report.quant = report_checks.quant_rows(summary.steps)
    for curve in curves:
        if curve.restarts:
            report.notes.append(f"{curve.step}: the step counter of {curve.source} starts over {curve.restarts} time(s) "
                                "(every epoch): the loss is plotted over global steps, counted on across restarts")
        if curve.non_finite:
            report.notes.append(f"{curve.step}: the loss is not finite at {curve.x_label} "
                                f"{', '.join(f'{x:g}' for x in curve.non_finite[:5])}")
    return report


def environment_rows(summary: Summary, root: Path) -> list[tuple[str, str]]:
    """Python, platform, Paddle and the device, from summary.json and the AutoLog block of an inference log."""
    autolog = autolog_info(summary, root)
    env = summary.environment
    versions = (summary.provenance or {}).get("versions") or {}
    # the interpreter the chain ran with (provenance), else an AutoLog block, else tipcgen's own interpreter
    paddle = str(versions.get("paddle") or "") or autolog.get("paddle_version") or env.get("paddle") or ""
    if paddle and autolog.get("paddle_commit"):
        paddle += f" (commit {autolog['paddle_commit'][:10]})"
    rows = [("model", summary.model), ("mode", summary.mode), ("chain", summary.chain), ("config", summary.config),
            ("Python", env.get("python", "not recorded")), ("platform", env.get("platform", "not recorded")),
            ("Paddle", paddle or "not recorded (not installed for the chain's interpreter, and no AutoLog block)"),
            ("device", device_text(summary, autolog))]
    for key in ("CUDA_version", "CUDNN_version"):
        if autolog.get(key) and autolog[key] != "None":
            rows.append((key.replace("_version", ""), autolog[key]))
    if autolog.get("OS_version"):
        rows.append(("OS", autolog["OS_version"]))
    rows.extend((key, value) for key, value in env.items() if key not in _SHOWN_ENV)
    rows.append(("tipcgen", __version__))
    return rows


def device_text(summary: Summary, autolog: dict[str, str]) -> str:
    """`CPU (gpu_list -1); GPU cases skipped: no CUDA device` from the steps that ran and were skipped."""
    ran = []
    for step in summary.steps:
        if step.kind == TRAIN and step.status != SKIPPED and step.training.gpu:
            entry = step.training.gpu
            if entry == "-1":
                ran.append("CPU (gpu_list -1)")
            elif step.case.device == "cpu":  # a multi-GPU entry run as CPU processes on a machine without CUDA
                ran.append(f"CPU, {len(entry.split(','))} processes (gpu_list {entry}, no CUDA device)")
            else:
                ran.append(f"GPU {entry} (gpu_list {entry})")
    if not ran and autolog.get("runtime_device"):
        ran.append(autolog["runtime_device"])
    text = ", ".join(dict.fromkeys(ran)) or "not recorded"
    if any("CUDA device" in step.reason for step in summary.steps if step.status == SKIPPED):
        text += "; GPU cases skipped: no CUDA device on this machine"
    return text


def step_rows(summary: Summary) -> list[Row]:
    rows = []
    for number, step in enumerate(summary.steps, 1):
        parts = [", ".join(f"{k} {v:.4f}" for k, v in step.metrics.items()), step.reason, step.hint and f"hint: {step.hint}",
                 check_text(step.check.differences), step.note]
        rows.append(Row(number, step.mark, step.kind, step.name,
                        f"{step.seconds:.1f}" if step.status != SKIPPED else "-",
                        "; ".join(p for p in parts if p), step.command, step.log.removeprefix("./")))
    return rows


def read_alignment(align: Path | None, run_dir: Path, root: Path, model: str) -> dict | None:
    """The alignment table: --align (a JSON file from `tipcgen align report --json`, or a reproduction
    folder to check now), else align_report.json next to summary.json, else none."""
    if align is None:
        if not (run_dir / ALIGN_JSON).is_file():
            return None
        align = run_dir / ALIGN_JSON
    if not align.is_dir() and not align.is_file():  # missing, or a FIFO or device that would block or never end
        raise TipcgenError(f"--align {align}: no such file or folder (or not a regular file)",
                           "pass the JSON that tipcgen align report --json wrote, or the reproduction folder")
    if align.is_dir():
        numpy_for(f"--align {align} (a reproduction folder to re-check)")
        from tipcgen.repro import align_report

        return align_report.build_report(align, align_report.resolve_thresholds(), root, model).to_dict()
    try:
        data = json.loads(align.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not valid JSON"
        raise TipcgenError(f"--align {align}: cannot read it ({reason})",
                           "pass the JSON that tipcgen align report --json wrote, or the reproduction folder") from None
    try:
        check_alignment_data(data, f"--align {align}")
    except TipcgenError as exc:
        raise TipcgenError(exc.message, "write one with: tipcgen align report DIR --json align_report.json") from None
    return data


def reproduce(summary: Summary) -> list[str]:
    """The commands a reviewer runs, from the repository root."""
    runner = RUNNERS.get(summary.chain, RUNNERS[BASIC])
    tipcgen_run = f"tipcgen run --mode {summary.mode}" + (f" --chain {summary.chain}" if summary.chain != BASIC else "")
    return [f"bash {PREPARE_SH} {summary.config} {summary.mode}",
            f"bash {runner} {summary.config} {summary.mode}",
            f"# or both, with this summary: {tipcgen_run}"]


# ---------------------------------------------------------------- pictures

def draw(report: Report) -> dict[str, bytes]:
    """The PNGs (file name → bytes): per-step time, and the loss curve when a train log has one.
    Empty, with a note, when matplotlib is not installed."""
    try:
        from matplotlib.backends import backend_agg  # noqa: F401  (the canvas plot_layout measures and draws on)
        from matplotlib.figure import Figure
    except ImportError:
        report.notes.append("matplotlib is not installed, so this report has no pictures (pip install matplotlib)")
        return {}
    import io

    def png(fig: Figure) -> bytes:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
        return buffer.getvalue()

    pictures = {}
    timing = _timing_figure(Figure, report)
    if timing is not None:
        pictures[TIMING_PNG] = png(timing)
        report.images["timing"] = TIMING_PNG
    if report.curves:
        pictures[LOSS_PNG] = png(_loss_figure(Figure, report))
        report.images["loss"] = LOSS_PNG
    ips = report_bench.ips_figure(Figure, report.speeds, report.summary)
    if ips is not None:
        pictures[report_bench.IPS_PNG] = png(ips)
        report.images["ips"] = report_bench.IPS_PNG
    return pictures


_COLOURS = {"PASS": "#2e7d32", "FAIL": "#c62828", "SKIP": "#9e9e9e", "INTR": "#ef6c00"}


def _label(row: Row) -> str:
    return f"{row.number}. {markup.plot_name(row.name)}" if row.kind in row.name else f"{row.number}. {markup.plot_name(row.kind)}: {markup.plot_name(row.name)}"


def _timing_figure(figure, report: Report):
    rows = [row for row in report.rows if row.status != "SKIP"]
    if not rows:
        return None
    fig = figure(figsize=(12, 1.1 + 0.28 * len(rows)))
    ax = fig.add_subplot()
    seconds = [float(row.seconds) for row in rows]
    positions = list(range(len(rows)))[::-1]
    labels = [_label(row) for row in rows]
    ax.barh(positions, seconds, color=[_COLOURS.get(row.status, "#1565c0") for row in rows], height=0.65)
    ax.set_yticks(positions, labels, fontsize=8)
    for y, value, row in zip(positions, seconds, rows):
        ax.text(value, y, f" {value:.1f} s" + ("  FAILED" if row.status == "FAIL" else ""), va="center", fontsize=8)
    ax.set_xlabel("seconds")
    ax.set_xlim(0, max(seconds + [0.1]) * 1.18)
    s = report.summary
    title = (f"Time per step: {markup.plot_name(s.model, 60)} / {markup.plot_name(s.mode, 40)}\n{sum(seconds):.1f} s in steps, "
             f"{s.wall_seconds:.1f} s wall; skipped steps not shown")
    ax.grid(axis="x", alpha=0.3)
    plot_layout.fit(fig, ax, tick_labels=labels, tick_size=8, title=title, xlabel="seconds")
    return fig


def _loss_figure(figure, report: Report):
    fig = figure(figsize=(12, 3.8))
    ax = fig.add_subplot()
    for curve in report.curves:
        xs = [x for x, _ in curve.points]
        ys = [y if math.isfinite(y) else float("nan") for _, y in curve.points]
        ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.5, label=markup.plot_name(curve.step, 60))
    ax.set_xlabel(markup.plot_text(report.curves[0].x_label))
    ax.set_ylabel("loss")
    title = f"Training loss: {markup.plot_name(report.summary.model, 60)} / {markup.plot_name(report.summary.mode, 40)}"
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plot_layout.fit(fig, ax, title=title, xlabel=ax.get_xlabel(), ylabel="loss")
    return fig


# ---------------------------------------------------------------- documents

def render_documents(report: Report, pictures: dict[str, bytes], formats: tuple[str, ...] = FORMATS) -> dict[str, str]:
    """report.md (pictures as files next to it) and report.html (pictures embedded), by file name."""
    env = templating.environment()
    env.filters.update(md=markup.md_text, cell=markup.md_cell, code=markup.md_code, fence=markup.fence, wbr=markup.wbr)
    env.filters["int_or"] = lambda value: int(value) if isinstance(value, float) and value.is_integer() else value
    embedded = {name: base64.b64encode(data).decode("ascii") for name, data in pictures.items()}
    context = {"r": report, "s": report.summary, "embedded": embedded, "alignment": report.alignment}
    out = {}
    if "md" in formats:
        out[REPORT_MD] = env.get_template("report/report.md.j2").render(**context)
    if "html" in formats:
        out[REPORT_HTML] = env.get_template("report/report.html.j2").render(**context)
    return out


def write(run_dir: Path, out_dir: Path | None = None, formats: tuple[str, ...] = FORMATS,
          align: Path | None = None, root: Path | None = None, force: bool = False,
          acceptance: Acceptance | None = None) -> tuple[Report, list[Path]]:
    """Build, draw and render the report; write it (and its PNGs) to out_dir, default the run folder.

    In the run folder a report is part of the run's output and is replaced; in any other folder an
    existing file that differs is replaced only with force, and then kept under .tipcgen/backup/."""
    in_run_dir = out_dir is None or out_dir.resolve() == run_dir.resolve()
    out_dir = out_dir or run_dir
    report = build(run_dir, root, align, acceptance)
    pictures = draw(report)
    files: dict[str, str | bytes] = dict(render_documents(report, pictures, formats))
    if "md" in formats:
        files.update(pictures)  # the HTML embeds them; the Markdown links to them
    top = writes.owned_root(out_dir, root if root is not None else root_of(run_dir))  # the repository, when it is in one
    for name in files:  # a link on the way from the repository root: refused before a file is read or written
        writes.check_no_links(top, out_dir / name, name)
    if in_run_dir:
        writes.write_tree(files, out_dir, force=True, backup=False, root=top)
    else:
        _refuse_overwrite(files, out_dir, force)
        writes.write_tree(files, out_dir, force=True, backup=True, root=top)
    return report, [out_dir / name for name in sorted(files)]


def _refuse_overwrite(files: dict[str, str | bytes], out_dir: Path, force: bool) -> None:
    changed = []
    for name, content in sorted(files.items()):
        target = out_dir / name
        data = content.encode("utf-8") if isinstance(content, str) else content
        if target.is_file() and target.read_bytes() != data:
            changed.append(name)
    if changed and not force:
        raise TipcgenError(f"{out_dir} already has {', '.join(changed)}, different from this report; "
                           "nothing was written", "pass --force to replace them (the old ones are kept under "
                           f"{out_dir / BACKUP}/), or choose another --output")

