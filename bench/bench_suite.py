"""Benchmark `tipcgen suite`: the lite chains of three models, serial (--jobs 1) against --jobs 2.

    python bench/bench_suite.py [--runs 2] [--out bench/results/suite.json]

The zoo is bert-sst2, the stub and the stub variant (tests/fixtures), each its own repository.
Serial and parallel runs are interleaved, side by side in one run; the ratio is parallel / serial wall
time (medians). The load average before each run is recorded: the machine may be shared. Also the
lint gate over the 207 PaddleOCR corpus configs (`--lint-only`), as a process and in-process.
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
STUB = ROOT / "tests" / "fixtures" / "stub"
CORPUS = ROOT.parent / "shared" / "tipc-corpus" / "PaddleOCR"
TIPCGEN = [sys.executable, "-m", "tipcgen"]
ENV = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1",
           PYTHONPATH=str(ROOT))


def make_zoo(zoo: Path) -> None:
    subprocess.run([*TIPCGEN, "init", "bert-sst2", "--output", str(zoo / "bert")], env=ENV, check=True,
                   capture_output=True)
    for name, descriptor in (("stub", STUB / "tipc.yaml"), ("variant", ROOT / "tests/fixtures/stub_variant/tipc.yaml")):
        shutil.copytree(STUB, zoo / name / "stub")
        subprocess.run([*TIPCGEN, "init", str(descriptor), "--output", str(zoo / name)], env=ENV, check=True,
                       capture_output=True)


def suite(zoo: Path, jobs: int, out: Path) -> dict:
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run([*TIPCGEN, "suite", "bert", "stub", "variant", "--jobs", str(jobs), "-o", str(out)],
                          cwd=zoo, env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"suite --jobs {jobs} failed:\n{proc.stdout[-3000:]}\n{proc.stderr}")
    data = json.loads((out / "suite.json").read_text())
    return {"jobs": jobs, "wall": round(wall, 2), "load_before": round(load, 2),
            "chains": {c["chain"]["model"]: c["seconds"] for c in data["chains"]}}


def lint_gate() -> dict:
    if not CORPUS.is_dir():
        return {}
    started = time.perf_counter()
    subprocess.run([*TIPCGEN, "suite", str(CORPUS), "--lint-only", "--chain", "basic", "--chain", "paddle2onnx"],
                   env=ENV, capture_output=True)
    process = time.perf_counter() - started
    sys.path.insert(0, str(ROOT))
    from tipcgen.suite import suite as planner

    started = time.perf_counter()
    chains, refused = planner.plan([str(CORPUS)], Path("."), ["lite_train_lite_infer"], ["basic", "paddle2onnx"])
    return {"configs": len(chains) + len(refused), "refused": len(refused), "process_s": round(process, 3),
            "in_process_s": round(time.perf_counter() - started, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "suite.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        zoo = Path(tmp) / "zoo"
        make_zoo(zoo)
        suite(zoo, 1, Path(tmp) / "warm")  # a warm page cache for both
        runs = []
        for index in range(args.runs):
            for jobs in ((1, 2) if index % 2 == 0 else (2, 1)):
                runs.append(suite(zoo, jobs, Path(tmp) / f"out{index}-{jobs}"))
                print(f"--jobs {jobs}: {runs[-1]['wall']:.1f} s (load {runs[-1]['load_before']:.1f}) "
                      f"{runs[-1]['chains']}", flush=True)
    serial = statistics.median(r["wall"] for r in runs if r["jobs"] == 1)
    parallel = statistics.median(r["wall"] for r in runs if r["jobs"] == 2)
    gate = lint_gate()
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
              "runs": runs, "serial_median_s": serial, "jobs2_median_s": parallel,
              "ratio_jobs2_over_serial": round(parallel / serial, 3), "lint_gate": gate}
    print(f"serial {serial:.1f} s, --jobs 2 {parallel:.1f} s: ratio {parallel / serial:.3f}")
    if gate:
        print(f"lint gate: {gate['configs']} configs, {gate['refused']} refused, {gate['process_s']:.2f} s "
              f"as a process, {gate['in_process_s']:.2f} s in-process")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
