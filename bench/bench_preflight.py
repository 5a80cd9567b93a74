"""What `tipcgen run` does before the chain's first script: wall time and the processes it starts.

    python bench/bench_preflight.py [--runs 7] [--repo DIR] [--compare OTHER_TREE]

Renders bert-sst2 into a temporary git repository (or uses --repo) and runs
`tipcgen run --mode lite_train_lite_infer` there with BASH_ENV pointing at a stamp file: the
first thing prepare.sh's bash does is write the time and exit 3, so no step runs. Reports the
median (min-max) seconds from the command's start to prepare.sh's start, and, where strace is
installed, every program started before prepare.sh (execve) with the bash subshells counted.
--compare runs another tipcgen tree (e.g. `git archive HEAD~1 | tar -x -C /tmp/old`) interleaved
with this one, run for run, so both see the same load on a shared machine.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODE = "lite_train_lite_infer"
TIPCGEN = [sys.executable, "-m", "tipcgen"]
STAMP = 'if [[ $0 == test_tipc/prepare.sh ]]; then printf "%s\\n" "$EPOCHREALTIME" >> "$TIPC_BENCH_STAMPS"; exit 3; fi\n'


def to_prepare(repo: Path, env: dict) -> float:
    stamps = Path(env["TIPC_BENCH_STAMPS"])
    stamps.write_text("")
    start = time.time()
    subprocess.run([*TIPCGEN, "run", "--mode", MODE, "--quiet"], cwd=repo, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return float(stamps.read_text().split()[0]) - start


def programs_before_prepare(repo: Path, env: dict, work: Path) -> tuple[list[str], int]:
    trace = work / "trace.txt"
    subprocess.run(["strace", "-f", "-s", "48", "-e", "trace=execve,clone,clone3,fork,vfork", "-e", "signal=none", "-o", str(trace),
                    *TIPCGEN, "run", "--mode", MODE, "--quiet"], cwd=repo, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    programs, forks = [], 0
    for line in trace.read_text().splitlines():
        if "execve(" in line and "ENOENT" not in line:
            found = re.search(r'execve\("[^"]*", \[(.*?)\]', line)
            if found:
                argv = re.findall(r'"((?:[^"\\]|\\.)*)"', found.group(1))
                shown = " ".join(argv[:3])
                if "test_tipc/prepare.sh" in argv[1:2]:
                    break
                programs.append(shown[:90])
        elif re.search(r"\b(clone3?|v?fork)\(", line) and "= " in line and "resumed" not in line:
            forks += 1
    return programs, forks


def components(repo: Path, env: dict, runs: int) -> dict[str, list[float]]:
    """Each thing the preflight does, timed alone (sequentially), in a fresh interpreter each time."""
    code = f"""
import os, subprocess, sys, time
from pathlib import Path
from tipcgen.configs import flag_check, preflight
from tipcgen.run import pipeline, provenance
root, config = Path({str(repo)!r}), Path("test_tipc/configs/bert_sst2/train_infer_python.txt")
env = dict(os.environ)
python = flag_check.interpreter((root / config).read_text(), env)[1]
def timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t
print(timed(lambda: preflight.refuse_lint_errors(root, config)),
      timed(lambda: pipeline._layout_check_result(pipeline._start_layout_check(config, root, "basic", env, "{MODE}"))),
      timed(lambda: provenance.versions(python, env)),
      timed(lambda: provenance.git_info(root)),
      timed(lambda: provenance.load_descriptor(root)))
"""
    names = ("lint gate (in process)", "runner layout check (bash)", "interpreter probe (python)", "git status",
             "descriptor load (in process)")
    found: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, check=True)
        for name, value in zip(names, out.stdout.split()):
            found[name].append(float(value))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--repo", help="a repository rendered by tipcgen init (default: bert-sst2 in a temporary folder)")
    parser.add_argument("--compare", help="another tipcgen source tree, timed interleaved with this one")
    args = parser.parse_args()
    # tipcgen's bytecode, as an installed (or once-run) tipcgen has it: with PYTHONDONTWRITEBYTECODE set (some CI
    # images set it) an editable tree is compiled anew by every process, ~0.2 s of CPU that no user pays
    for tree in (Path(__file__).resolve().parents[1], *([Path(args.compare)] if args.compare else [])):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "tipcgen")], stdout=subprocess.DEVNULL,
                       check=False)
    work = Path(tempfile.mkdtemp(prefix="tipcgen-preflight-"))
    try:
        repo = Path(args.repo) if args.repo else work / "repo"
        if not args.repo:
            subprocess.run([*TIPCGEN, "init", "bert-sst2", "--output", str(repo)], check=True, stdout=subprocess.DEVNULL)
            for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "b"]):
                subprocess.run(["git", *cmd], cwd=repo, check=True)
        (work / "stamp.sh").write_text(STAMP)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), BASH_ENV=str(work / "stamp.sh"), TIPC_BENCH_STAMPS=str(work / "stamps"), NO_COLOR="1",
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        trees = {"this tree": env}
        if args.compare:
            trees[args.compare] = dict(env, PYTHONPATH=str(Path(args.compare).resolve()))
        for tree_env in trees.values():
            to_prepare(repo, tree_env)  # warm the page cache
        seconds: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree_env in trees.items():
                seconds[name].append(to_prepare(repo, tree_env))
        for name, values in seconds.items():
            print(f"{name}: tipcgen run → prepare.sh start: median {statistics.median(values):.3f} s "
                  f"(min {min(values):.3f}, max {max(values):.3f}, {args.runs} runs)")
        for name, values in components(repo, {k: v for k, v in env.items() if k != "BASH_ENV"}, args.runs).items():
            print(f"  alone: {name:32} median {statistics.median(values):.3f} s (min {min(values):.3f})")
        print(f"load average after: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
        if shutil.which("strace"):  # execve of every program, clone/fork of every process
            programs, forks = programs_before_prepare(repo, env, work)
            print(f"programs started before prepare.sh ({len(programs) - 1} besides tipcgen; {forks} forks in all, "
                  "bash subshells included):")
            for program in programs:
                print("  " + program)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
