"""A Summary as text: the terminal table (templates/report/) and JUnit XML (`junit`, ElementTree), one level
above results.

results parses what a chain left behind into a Summary and stays pure (it imports no Jinja, no
render); run, submission and cli write and print a Summary through here.
"""
from __future__ import annotations

from pathlib import Path

from tipcgen.core.text import paint, terminal
from tipcgen.core.writes import write_file
from tipcgen.format.words import CHECK, FAILED, INTERRUPTED, PASSED, PREPARE, SKIPPED, SPEED
from tipcgen.render import templating
from tipcgen.results import junit, speeds
from tipcgen.format.chains import run_check_references
from tipcgen.results.summary import Summary, check_text


def write_junit(summary: Summary, path: Path) -> None:
    write_file(path, junit.junit_text("tipc", [junit.summary_suite(summary)], summary.wall_seconds), within=path.parent)


def terminal_text(summary: Summary, color: bool = False) -> str:
    """The table a person reads at the end of a run."""
    colours = {PASSED: "green", FAILED: "red", SKIPPED: "yellow", INTERRUPTED: "yellow"} if color else {}
    rows = []
    for step in summary.steps:
        mark, status = step.mark, step.status
        if status in colours:  # tipcgen's own colour: the CLI's echo turns it into the terminal code
            mark = paint(mark, colours[status])
        detail = "; ".join(part for part in (step.reason, check_text(step.check.differences), step.note) if part)
        if step.metrics:
            detail = "; ".join(part for part in (", ".join(f"{k} {v:.4f}" for k, v in step.metrics.items()), detail) if part)
        if step.kind == SPEED and step.speed:
            detail = "; ".join(part for part in (speeds.speed_text(step.speed), detail) if part)
        rows.append((mark, terminal(step.kind), terminal(step.name),
                     f"{step.seconds:.1f}" if step.status != SKIPPED else "-", terminal(detail)))
    return templating.environment().get_template("report/summary.txt.j2").render(
        s=summary, rows=rows, name_width=max([len(r[2]) for r in rows] + [4]),
        kind_width=max([len(r[1]) for r in rows] + [4]),
        verdict=summary.verdict, runner_counts=_runner_counts(summary),
        target_lines=_target_lines(summary))


def _runner_counts(summary: Summary) -> tuple[int, int, int] | None:
    """(passed, failed, skipped) of the runner's own steps, as its closing line counts them, where tipcgen run
    added steps around them (prepare, and the checks of the run itself: format/chains.py's run_check_references); else None. The
    closing line then says what its count includes; run's display leaves the runner's own count line out
    (cli/progress.py), so that the last line is the one count a person reads."""
    own = [step for step in summary.steps
           if not (step.kind == PREPARE or (step.kind == CHECK and step.check.reference in run_check_references()))]
    if len(own) == len(summary.steps):
        return None
    passed, failed, skipped = (sum(1 for step in own if step.status == status) for status in (PASSED, FAILED, SKIPPED))
    return passed, failed, skipped


def _target_lines(summary: Summary) -> list[str]:
    from tipcgen.results.target_check import result_lines

    return result_lines(summary.target) if summary.target else []
