"""The generated scripts' opening, to their first step: CPU and the processes it starts.

    python bench/bench_opening.py [--runs 15] [--compare OTHER_TREE]

Renders bert-sst2 with this tipcgen tree (and with --compare's, e.g. `git archive fb2886a | tar -x -C /tmp/old`)
and runs, interleaved run for run so both see the same load, each render's

- basic runner under TIPC_CHECK_ONLY=1 (tipcgen run's check of the config: the mode, the config read and checked
  against its layout, and from tipcgen 0.1 on the model's name, the interpreter and its settings), and
- prepare.sh in lite_train_lite_infer (its checks, then the lite data copied),

reporting the median CPU seconds (user + system of the script and everything it started, from
``resource.getrusage(RUSAGE_CHILDREN)``) and, where strace is installed, the programs each started.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MODE = "lite_train_lite_infer"
CONFIG = "test_tipc/configs/bert_sst2/train_infer_python.txt"
SCRIPTS = {"runner (TIPC_CHECK_ONLY=1)": ["bash", "test_tipc/test_train_inference_python.sh", CONFIG, MODE],
           "prepare.sh": ["bash", "test_tipc/prepare.sh", CONFIG, MODE]}


def cpu_of(argv: list[str], cwd: Path, env: dict) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} in {cwd}: exit {proc.returncode}\n{proc.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def programs(argv: list[str], cwd: Path, env: dict, work: Path) -> list[str]:
    trace = work / "trace.txt"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", str(trace), *argv], cwd=cwd,
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return [line.split('execve("', 1)[1].split('"', 1)[0].rsplit("/", 1)[-1] for line in trace.read_text().splitlines()
            if 'execve("' in line and "ENOENT" not in line and "= -1" not in line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--compare", help="another tipcgen source tree, its render timed interleaved with this one's")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tipcgen-opening-"))
    trees = {"this tree": Path(__file__).resolve().parents[1]}
    if args.compare:
        trees[args.compare] = Path(args.compare).resolve()
    env = dict(os.environ, TIPC_PYTHON=sys.executable, TIPC_GPU_COUNT="0",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    try:
        repos = {}
        for i, (name, tree) in enumerate(trees.items()):
            repos[name] = work / f"repo{i}"
            subprocess.run([sys.executable, "-m", "tipcgen", "init", "bert-sst2", "--output", str(repos[name])], cwd=tree,
                           env=dict(env, PYTHONPATH=str(tree)), check=True, stdout=subprocess.DEVNULL)
        for script, argv in SCRIPTS.items():
            runs_env = dict(env, TIPC_CHECK_ONLY="1") if "CHECK_ONLY" in script else env
            seconds: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(args.runs):
                for name in trees:
                    seconds[name].append(cpu_of(argv, repos[name], runs_env))
            for name, values in seconds.items():
                shown = f"{script}, {name}: median {statistics.median(values) * 1000:.0f} ms of CPU"
                started = programs(argv, repos[name], runs_env, work) if shutil.which("strace") else []
                print(shown + (f"; {len(started)} programs: {' '.join(started)}" if started else ""))
        print(f"load average after: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
