"""Benchmark the fleet chain: the multi-node chain's wall time against the one-process chain's, side by side.

    python bench/bench_fleet.py [--runs 1] [--out bench/results/fleet.json]

One copy of tests/fixtures/dy2static_mlp, rendered once; then, interleaved, `tipcgen run --chain fleet` (2 simulated
machines x 2 CPU processes on 127.0.0.2/127.0.0.3, plus its one-process reference training and check) and
`tipcgen run` (the basic chain, one process) on the same model and data, --runs times each. Reports each chain's
wall time (median, min, max), the sum of its train steps' seconds, and their ratio. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "dy2static_mlp"
MODE = "lite_train_lite_infer"
ENV = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1",
           PYTHONPATH=str(ROOT))


def run(repo: Path, chain: str) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tipcgen", "run", "--chain", chain, "--mode", MODE, "--quiet"], cwd=repo,
                          env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - started
    folder = repo / "test_tipc" / "output" / "dy2static_mlp" / ("" if chain == "basic" else chain) / MODE
    summary = json.loads((folder / "summary.json").read_text())
    trains = [s for s in summary["steps"] if s["kind"] == "train"]
    return {"chain": chain, "exit_code": proc.returncode, "wall_s": round(wall, 2), "steps": len(summary["steps"]),
            "train_steps": len(trains), "train_s": round(sum(s["seconds"] for s in trains), 2),
            "node_train_s": [s["seconds"] for s in trains if (s.get("device_num") or "").startswith("N2")]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "tipcgen", "init", "tipc.yaml"], cwd=repo, env=ENV, check=True,
                       capture_output=True)
        results: dict[str, list[dict]] = {"fleet": [], "basic": []}
        for _ in range(args.runs):
            for chain in ("fleet", "basic"):
                results[chain].append(run(repo, chain))
    report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "load_average": os.getloadavg()[0], "runs": args.runs}
    for chain, rows in results.items():
        walls = [r["wall_s"] for r in rows]
        report[chain] = {"wall_median_s": statistics.median(walls), "wall_min_s": min(walls), "wall_max_s": max(walls),
                         "runs": rows}
    report["ratio_fleet_to_basic"] = round(report["fleet"]["wall_median_s"] / report["basic"]["wall_median_s"], 2)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0 if all(r["exit_code"] == 0 for rows in results.values() for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
