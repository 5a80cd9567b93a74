"""Time parse, render and lint over the whole TIPC corpus; print a summary, write bench/results/parse.json.

Run from the repository root: ``python bench/bench_parse.py [--repeat N]``.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "tipc-corpus"


def _time(repeat: int, work) -> dict[str, float]:
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "max_s": max(seconds)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="timed passes over the corpus (default 5)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # run as a plain script, without installing tipcgen
    from tipcgen.format.config import TipcConfig
    from tipcgen.configs.lint import lint_text

    paths = sorted(args.corpus.rglob("*.txt"))
    if not paths:
        print(f"no corpus files under {args.corpus}", file=sys.stderr)
        return 1
    texts = [path.read_bytes().decode("utf-8", errors="surrogateescape") for path in paths]
    configs = [TipcConfig.parse(text) for text in texts]
    names = [str(path.relative_to(args.corpus)) for path in paths]
    lines = sum(len(config.lines) for config in configs)

    results = {
        "parse": _time(args.repeat, lambda: [TipcConfig.parse(text) for text in texts]),
        "render": _time(args.repeat, lambda: [config.render() for config in configs]),
        "lint": _time(args.repeat, lambda: [lint_text(text, name) for text, name in zip(texts, names)]),
    }
    report = {
        "files": len(paths), "lines": lines, "repeat": args.repeat,
        "python": platform.python_version(), "machine": platform.machine(), "results": results,
    }
    print(f"{len(paths)} files, {lines} lines, {args.repeat} passes (whole corpus per pass)")
    for name, timing in results.items():
        print(f"{name:7s} median {timing['median_s']:.4f} s  min {timing['min_s']:.4f} s  max {timing['max_s']:.4f} s")
    out = REPO / "bench" / "results" / "parse.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
