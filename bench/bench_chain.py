"""Benchmark the bert-sst2 lite chain: tipcgen's overhead, where the time goes, and peak memory.

    python bench/bench_chain.py [--runs 3] [--out bench/results/chain.json]

Measured side by side in one run, interleaved run for run so that all three see the same load (medians,
min and max over --runs; these machines are noisy; the load average is printed before and after):
- `tipcgen run --mode lite_train_lite_infer`;
- the generated prepare.sh + runner run directly with bash (the same scripts, the runner's own checks
  included): tipcgen run / bash is tipcgen's own overhead;
- the upstream-equivalent steps alone: the same prepare.sh + runner with bash, in a copy whose config turns
  the runner's checks off (result_check fixed_inputs:null, compare:null), one step after the other as an
  upstream runner runs them (TIPC_SERIAL=1: no export beside the eval): prepare, train, eval, export and
  the inference cases; tipcgen run / upstream is the whole price of tipcgen's proofs and bookkeeping, less
  what running independent steps side by side gives back;
- the proofs' own seconds (every `check` step of summary.json: the runner's and tipcgen's), the part of them
  that ran beside the inference steps (the fixed-input check: a step started with tipc_step_beside), and the
  proofs' wall cost: tipcgen run less the upstream-equivalent steps (what a user waits for them and for
  tipcgen's bookkeeping), with its share of tipcgen run's wall time;
  the same difference taken round by round (median of the rounds' differences) beside the difference of the
  medians; one `tipcgen run` before the rounds, not counted, fills the flag check's cache as a user's first run does;
- the sum of the steps' own seconds (steps.jsonl) vs the chain's wall time;
- per step kind: process start-up (interpreter + the imports that kind needs) vs the rest;
- `tipcgen --help` and `tipcgen init bert-sst2` wall time;
- peak RSS of the largest step (the runner's descendants' max RSS, from getrusage).
Run it on an otherwise idle machine.
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
MODE = "lite_train_lite_infer"
CONFIG = "test_tipc/configs/bert_sst2/train_infer_python.txt"
TIPCGEN = [sys.executable, "-m", "tipcgen"]
ENV = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", NO_COLOR="1")
# What each step kind imports before it works (see sample_models/bert-sst2/*.py).
STARTUP = {
    "python": "pass",
    "paddle": "import paddle",
    "paddle+paddlenlp": "import paddle, paddlenlp.transformers",
    "infer (paddle.inference)": "import paddle.inference",
    "numpy": "import numpy",
}
# The samples' train, eval and export import paddle only (sample_models/bert-sst2/modeling.py, no paddlenlp).
KIND_STARTUP = {"train": "paddle", "eval": "paddle", "export": "paddle",
                "infer": "infer (paddle.inference)", "check": "numpy"}


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env or ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def stats(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4), "max": round(max(values), 4),
            "runs": [round(v, 4) for v in values]}


def direct_chain(repo: Path, env: dict | None = None) -> float:
    """prepare.sh + runner with bash, as a reviewer runs them (exit 0 required)."""
    start = time.perf_counter()
    for script in ("test_tipc/prepare.sh", "test_tipc/test_train_inference_python.sh"):
        subprocess.run(["bash", script, CONFIG, MODE], cwd=repo, env=env or ENV, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def upstream_copy(repo: Path, work: Path) -> Path:
    """A copy of the rendered repository whose config runs no result check: the upstream-equivalent steps."""
    copy = work / "upstream"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns("output"))
    config = copy / CONFIG
    lines = [("compare:null" if line.startswith("compare:") else line) for line in config.read_text().splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("compare:"))
    lines.insert(at, "fixed_inputs:null")
    config.write_text("\n".join(lines) + "\n")
    return copy


def summary_steps(repo: Path) -> list[dict]:
    path = repo / "test_tipc/output/bert_sst2" / MODE / "summary.json"
    return json.loads(path.read_text())["steps"]


def load() -> float:
    return round(os.getloadavg()[0], 2)


def peak_rss_mb(repo: Path) -> float:
    """Max RSS over the runner's descendants: Linux keeps it in the children's rusage."""
    code = ("import resource, subprocess, sys\n"
            f"subprocess.run(['bash', 'test_tipc/test_train_inference_python.sh', {CONFIG!r}, {MODE!r}], "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=ENV, capture_output=True, text=True, check=True)
    return round(int(out.stdout.strip()) / 1024, 1)


def records(repo: Path) -> list[dict]:
    path = repo / "test_tipc/output/bert_sst2" / MODE / "steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench/results/chain.json"))
    args = parser.parse_args()
    # tipcgen's bytecode, as an installed (or once-run) tipcgen has it: with PYTHONDONTWRITEBYTECODE set (some CI
    # images set it) an editable tree is compiled anew by every process, ~0.2 s of CPU that no user pays
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[1] / "tipcgen")],
                   stdout=subprocess.DEVNULL, check=False)
    work = Path(tempfile.mkdtemp(prefix="tipcgen-bench-"))
    try:
        repo = work / "repo"
        repo.mkdir()
        help_t, init_t, tipcgen_t, direct_t, steps_sum, step_kinds = [], [], [], [], [], {}
        for i in range(args.runs):
            help_t.append(timed([*TIPCGEN, "--help"], work))
            target = work / f"init{i}"
            init_t.append(timed([*TIPCGEN, "init", "bert-sst2", "--output", str(target)], work))
            shutil.rmtree(target)
        timed([*TIPCGEN, "init", "bert-sst2", "--output", str(repo)], work)
        upstream = upstream_copy(repo, work)
        direct_chain(repo)  # warm the page cache once; not counted
        # and tipcgen's: its first run probes the scripts' --help (the flag cache), which later runs read
        timed([*TIPCGEN, "run", "--mode", MODE, "--quiet"], repo)
        upstream_t, proofs_t, beside_t, proofs_by_name, loads = [], [], [], {}, [load()]
        for _ in range(args.runs):
            tipcgen_t.append(timed([*TIPCGEN, "run", "--mode", MODE, "--quiet"], repo))
            steps = records(repo)
            steps_sum.append(sum(float(s["seconds"]) for s in steps))
            for step in steps:
                if step["status"] == "passed":
                    step_kinds.setdefault(step["kind"], []).append(float(step["seconds"]))
            checks = [s for s in summary_steps(repo) if s["kind"] == "check"]
            proofs_t.append(sum(float(s.get("seconds") or 0) for s in checks))
            beside_t.append(sum(float(s.get("seconds") or 0) for s in checks if s["name"].startswith("fixed_inputs")))
            for step in checks:
                proofs_by_name.setdefault(step["name"], []).append(float(step.get("seconds") or 0))
            direct_t.append(direct_chain(repo))
            upstream_t.append(direct_chain(upstream, dict(ENV, TIPC_SERIAL="1")))
            loads.append(load())
        startup = {name: stats([timed([sys.executable, "-c", code], work) for _ in range(args.runs)])
                   for name, code in STARTUP.items()}
        kinds = {}
        for kind, seconds in step_kinds.items():
            per_run = len(seconds) // args.runs or 1
            start = startup[KIND_STARTUP.get(kind, "python")]["median"]
            med = statistics.median(seconds)
            kinds[kind] = {"steps_per_run": per_run, "median_seconds": round(med, 3), "startup_seconds": start,
                           "work_seconds": round(max(med - start, 0.0), 3), "startup_share": round(min(start / med, 1.0), 3)}
        result = {
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "runs": args.runs,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "load_average_1min": loads,
            "tipcgen_run_seconds": stats(tipcgen_t),
            "direct_bash_seconds": stats(direct_t),
            "upstream_steps_seconds": stats(upstream_t),
            "overhead_ratio": round(statistics.median(tipcgen_t) / statistics.median(direct_t), 4),
            "tipcgen_over_upstream": round(statistics.median(tipcgen_t) / statistics.median(upstream_t), 4),
            "bash_over_upstream": round(statistics.median(direct_t) / statistics.median(upstream_t), 4),
            "proofs_seconds": stats(proofs_t),
            "proofs_share_of_wall": round(statistics.median(proofs_t) / statistics.median(tipcgen_t), 4),
            "proofs_beside_seconds": stats(beside_t),
            "proofs_wall_cost_seconds": round(statistics.median(tipcgen_t) - statistics.median(upstream_t), 4),
            "proofs_wall_cost_share": round(1 - statistics.median(upstream_t) / statistics.median(tipcgen_t), 4),
            # the same, round by round (each round runs the three one after another, so they share its load)
            "proofs_wall_cost_paired_seconds": stats([t - u for t, u in zip(tipcgen_t, upstream_t)]),
            "proofs_wall_cost_paired_share": round(statistics.median(
                [1 - u / t for t, u in zip(tipcgen_t, upstream_t)]), 4),
            "proofs": {name: stats(values) for name, values in proofs_by_name.items()},
            "steps_sum_seconds": stats(steps_sum),
            "steps_share_of_wall": round(statistics.median(steps_sum) / statistics.median(tipcgen_t), 4),
            "help_seconds": stats(help_t),
            "init_seconds": stats(init_t),
            "startup_seconds": startup,
            "step_kinds": kinds,
            "peak_rss_mb_largest_step": peak_rss_mb(repo),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'measure':38} {'median':>9} {'min':>9} {'max':>9}")
    print(f"load average (1 min) before and after each round: {result['load_average_1min']} ({os.cpu_count()} CPUs)")
    for name in ("tipcgen_run_seconds", "direct_bash_seconds", "upstream_steps_seconds", "steps_sum_seconds",
                 "proofs_seconds", "proofs_beside_seconds", "help_seconds", "init_seconds"):
        row = result[name]
        print(f"{name:38} {row['median']:9.3f} {row['min']:9.3f} {row['max']:9.3f}")
    for name, row in result["startup_seconds"].items():
        print(f"{'startup: ' + name:38} {row['median']:9.3f} {row['min']:9.3f} {row['max']:9.3f}")
    print(f"\n{'step kind':10} {'steps':>5} {'median s':>9} {'start-up s':>10} {'work s':>8} {'start-up %':>10}")
    for kind, row in kinds.items():
        print(f"{kind:10} {row['steps_per_run']:5d} {row['median_seconds']:9.3f} {row['startup_seconds']:10.3f} "
              f"{row['work_seconds']:8.3f} {100 * row['startup_share']:9.0f}%")
    for name, row in result["proofs"].items():
        print(f"{'proof: ' + name:38} {row['median']:9.3f} {row['min']:9.3f} {row['max']:9.3f}")
    print(f"\ntipcgen overhead (tipcgen run / direct bash): {result['overhead_ratio']:.3f}")
    print(f"tipcgen run / upstream-equivalent steps: {result['tipcgen_over_upstream']:.3f}; "
          f"bash / upstream: {result['bash_over_upstream']:.3f}")
    print(f"proofs' own seconds / tipcgen run wall: {result['proofs_share_of_wall']:.3f} "
          f"(of them beside the inference steps: {result['proofs_beside_seconds']['median']:.3f} s)")
    print(f"proofs' wall cost (tipcgen run - upstream steps): {result['proofs_wall_cost_seconds']:.3f} s, "
          f"{100 * result['proofs_wall_cost_share']:.1f} % of tipcgen run; round by round: median "
          f"{result['proofs_wall_cost_paired_seconds']['median']:.3f} s, "
          f"{100 * result['proofs_wall_cost_paired_share']:.1f} %")
    print(f"steps' own time / chain wall: {result['steps_share_of_wall']:.3f}")
    print(f"peak RSS of the largest step: {result['peak_rss_mb_largest_step']} MB")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
