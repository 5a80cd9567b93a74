"""CPU seconds per test, for deciding what the test suite spends its time on (docs/PERFORMANCE.md).

    PYTHONPATH=bench python -m pytest -q -p pytest_cpu                 # the whole suite, as CI runs it
    PYTHONPATH=bench python -m pytest -q -m "not paddle and not ray" -p pytest_cpu   # the unit layer

On two cores the suite is CPU-bound, so its wall time is about its CPU time over the cores, and the
CPU a test costs is what removing or sharing it would save; a test's wall time under xdist is not
(it waits on the other workers). Each test's own process CPU and that of the processes it started and
waited for (every chain step: the generated scripts' children are waited for by bash, and bash by the
test) is counted from getrusage before and after it; a session or module fixture counts in the first
test that uses it. Each xdist worker writes its rows; the controller merges them into
bench/results/test_cpu.json and prints the largest tests and files.

What getrusage cannot see is printed beside it: the whole machine's busy CPU over the session (/proc/stat, on
Linux), and each worker's own CPU outside its tests (its start, collection, session teardown). The difference is
what no test waited for: daemons (Ray's gcs_server, raylet, agents and workers count in no test's children),
processes left to init, and anything else the machine ran meanwhile (measure on a quiet machine).
"""
from __future__ import annotations

import json
import os
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

OUT = Path(__file__).resolve().parent / "results" / "test_cpu.json"
_PARTS = Path(os.environ.get("PYTEST_CPU_DIR") or tempfile.gettempdir()) / "pytest_cpu_parts"
_rows: list[dict] = []
_machine_start: float | None = None  # the controller's reading of _machine_busy() at the session's start


def _machine_busy() -> float | None:
    """The whole machine's busy CPU seconds since boot (/proc/stat's first line less idle and iowait), or None."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children = _cpu()
    start, started = time.perf_counter(), time.time()
    yield
    own2, children2 = _cpu()
    _rows.append({"test": item.nodeid, "own_cpu": round(own2 - own, 3), "children_cpu": round(children2 - children, 3),
                  "wall": round(time.perf_counter() - start, 3), "start": round(started, 3),
                  "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")})


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist): a fresh folder
        _PARTS.mkdir(parents=True, exist_ok=True)
        for old in _PARTS.glob("*.json"):
            old.unlink()
        global _machine_start
        _machine_start = _machine_busy()


def pytest_sessionfinish(session):
    _PARTS.mkdir(parents=True, exist_ok=True)
    own, _children = _cpu()
    outside = round(own - sum(r["own_cpu"] for r in _rows), 3)
    (_PARTS / f"{os.getpid()}.json").write_text(json.dumps({"rows": _rows, "outside_tests": outside}))


def pytest_terminal_summary(terminalreporter):
    if hasattr(terminalreporter.config, "workerinput"):
        return
    parts = [json.loads(part.read_text()) for part in sorted(_PARTS.glob("*.json"))]
    rows = [row for part in parts for row in part["rows"]]
    outside = sum(part["outside_tests"] for part in parts)
    if not rows:
        return
    busy = _machine_busy()
    machine = round(busy - _machine_start, 1) if busy is not None and _machine_start is not None else None
    rows.sort(key=lambda r: -(r["own_cpu"] + r["children_cpu"]))
    total = sum(r["own_cpu"] + r["children_cpu"] for r in rows)
    by_file = Counter()
    for row in rows:
        by_file[row["test"].split("::")[0]] += row["own_cpu"] + row["children_cpu"]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"tests": len(rows), "cpu_seconds": round(total, 1), "pytest_outside_tests":
                               round(outside, 1), "machine_cpu_seconds": machine, "rows": rows}, indent=1) + "\n")
    first = min(r["start"] for r in rows)
    ends = {}
    for row in rows:  # each worker's last test end, from the first test's start: the schedule's tail
        ends[row["worker"]] = max(ends.get(row["worker"], 0.0), row["start"] + row["wall"] - first)
    write = terminalreporter.write_line
    write(f"CPU by test: {total:.0f} s in {len(rows)} tests (own + waited-for children); {OUT}")
    write(f"pytest's processes outside their tests (start, collection, teardown): {outside:.1f} s")
    if machine is not None:
        write(f"the machine, busy over the session: {machine:.0f} s; not counted above (what no test waited for: "
              f"daemons such as Ray's, other load): {machine - total - outside:.0f} s")
    for row in rows[:15]:
        write(f"{row['own_cpu'] + row['children_cpu']:7.1f} s  {row['test']}")
    write("workers done at: " + ", ".join(f"{w} {t:.0f} s" for w, t in sorted(ends.items())))
    write("CPU by file:")
    for name, seconds in by_file.most_common(10):
        write(f"{seconds:7.1f} s  {name}")
