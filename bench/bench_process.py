"""CPU time of starting one process through core/process.py, by the way its parent-death signal is set, side
by side in one run, from a parent of each size (tipcgen is ~70 MB; a test worker that runs the CLI in-process,
200 MB and more). Python code in the child (``preexec_fn``) makes Python fork the whole parent instead of using
vfork: the cost grows with the parent's memory. Prints a table, writes bench/results/process.json.

Run from the repository root: ``python bench/bench_process.py [--starts N]``.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=200, help="processes started per way and size (default 200)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from tipcgen.core import process

    if process._setpriv() is None:
        print("no setpriv with --pdeathsig here: every start is Python code in the child", file=sys.stderr)
        return 1
    ways = {"setpriv --pdeathsig (vfork)": {}, "python in the child (fork)": {"memory_cap": 1 << 40}}
    rows, ballast = [], []
    for megabytes in (0, 64, 192):
        ballast.extend(bytearray(1 << 20) for _ in range(megabytes - len(ballast)))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        for _ in range(3):  # interleaved: the machine's speed moves both alike
            for way, options in ways.items():
                started = _cpu()
                for _ in range(args.starts):
                    assert process.run(process.Request(["/bin/true"], **options)).ok
                rows.append({"rss_mb": rss, "way": way, "cpu_ms": (_cpu() - started) / args.starts * 1000})
    table: dict[tuple[int, str], list[float]] = {}
    for row in rows:
        table.setdefault((row["rss_mb"], row["way"]), []).append(row["cpu_ms"])
    print(f"{'parent RSS':>10}  {'way':<28} CPU per start (ms, best of 3)")
    for (rss, way), values in table.items():
        print(f"{rss:>7} MB  {way:<28} {min(values):6.2f}")
    out = REPO / "bench" / "results" / "process.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"starts": args.starts, "time": time.time(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
