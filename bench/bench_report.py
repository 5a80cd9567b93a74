"""CPU time of drawing a report's pictures, side by side in one run: as `tipcgen report` draws them now (margins
measured from their text in one pass, outputs/plot_layout.py, then one draw) and the same figures laid out by
matplotlib's constrained layout (how they were drawn before: the figure is drawn twice, once to measure every
artist). The report is tests/test_report.py's synthetic run (six steps, a loss curve), and one with 40 steps.
Prints a table, writes bench/results/report.json.

Run from the repository root: ``python bench/bench_report.py [--rounds N]``.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10, help="reports drawn per way and report (default 10)")
    args = parser.parse_args()
    sys.path[:0] = [str(REPO), str(REPO / "tests")]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from test_report import fake_run
    from tipcgen.outputs import report

    built = report.build(fake_run(Path(tempfile.mkdtemp())))
    long = report.build(fake_run(Path(tempfile.mkdtemp())))
    long.rows = [report.Row(number=i + 1, status="PASS", kind="infer", name=f"python_infer_cpu_case_{i}", seconds="1.5",
                            detail="", command="", log="") for i in range(40)]

    def draw(subject, constrained: bool) -> int:
        size = 0
        for fig in (report._timing_figure(Figure, subject), report._loss_figure(Figure, subject)):
            if constrained:  # the layout before: the engine replaces the measured margins, the title back on the axes
                fig.set_layout_engine("constrained")
            FigureCanvasAgg(fig)
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
            size += len(buffer.getvalue())
        return size

    draw(built, False), draw(built, True)  # fonts and caches loaded before the first measure
    rows = []
    for name, subject in (("6 steps + loss curve", built), ("40 steps + loss curve", long)):
        seconds = {True: 0.0, False: 0.0}
        for _ in range(args.rounds):  # interleaved, so a change in the machine's load falls on both ways alike
            for constrained in (False, True):
                start = time.process_time()
                draw(subject, constrained)
                seconds[constrained] += time.process_time() - start
        rows.append({"report": name, "one_pass_ms": round(1000 * seconds[False] / args.rounds, 1),
                     "constrained_ms": round(1000 * seconds[True] / args.rounds, 1)})
    print("| report | one pass (now) | constrained layout (before) | ratio |\n| --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['report']} | {row['one_pass_ms']} ms | {row['constrained_ms']} ms | "
              f"{row['constrained_ms'] / row['one_pass_ms']:.2f} |")
    out = REPO / "bench" / "results" / "report.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rounds": args.rounds, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
