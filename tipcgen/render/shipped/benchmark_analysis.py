"""The benchmark_train chain's measurements (test_tipc/benchmark_train.sh calls it; standard library only):

    python test_tipc/benchmark_analysis.py measure MEMORY_JSON -- COMMAND...
    python test_tipc/benchmark_analysis.py analyse --filename LOG --speed_log_file FILE ...
    python test_tipc/benchmark_analysis.py frame

`frame` prints paddle's version and commit (upstream's frame_version and frame_commit), read from
the installed files without importing paddle (an import costs seconds per case).

`measure` runs COMMAND, then writes its wall seconds and peak resident memory (the largest process
of the run, launcher workers included: getrusage(RUSAGE_CHILDREN).ru_maxrss) and exits with
COMMAND's exit code. `analyse` reads a training log the way upstream's benchmark analysis does
(PaddlePaddle/benchmark scripts/analysis.py, TimeAnalyzer): a value is the word after a word equal
to --keyword (`ips:`) on a line split at whitespace; the first --skip_steps values are dropped and
the rest averaged; the last --convergence_key (`loss:`) value is the convergence value. It writes
upstream's speed JSON (same keys) plus peak memory: reserved GPU memory when the log has
`max_mem_reserved: <MB>`, else the peak RSS. Exit 1, like upstream's JOB_FAIL_FLAG, when no value
is left after skipping or the ips is 0.
"""
import argparse
import importlib.metadata
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import time

UPSTREAM_KEYS = ("model_branch", "model_commit", "model_name", "batch_size", "fp_item", "run_process_type",
                 "run_mode", "convergence_value", "convergence_key", "ips", "speed_unit", "device_num",
                 "model_run_time", "frame_commit", "frame_version")


def measure(argv):
    if len(argv) < 3 or argv[1] != "--":
        print("usage: benchmark_analysis.py measure MEMORY_JSON -- COMMAND...", file=sys.stderr)
        return 2
    start = time.time()
    try:
        code = subprocess.call(argv[2:])
    except OSError as exc:
        print("cannot run %s: %s" % (argv[2], exc), file=sys.stderr)
        return 127
    seconds = time.time() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    with open(argv[0], "w") as out:
        json.dump({"seconds": round(seconds, 3), "peak_rss_mb": round(peak_kb / 1024.0, 1)}, out)
    return code if code >= 0 else 128 - code


def values_after(path, keyword, strip_comma=False):
    """Upstream's TimeAnalyzer._distil: the word after each word equal to keyword, as a float
    (upstream strips a trailing comma from the loss only)."""
    values = []
    with open(path, "r", errors="replace") as handle:
        for line in handle:
            if keyword not in line:
                continue
            words = line.strip().split()
            for i in range(len(words) - 1):
                if words[i] == keyword:
                    try:
                        values.append(float(words[i + 1].rstrip(",") if strip_comma else words[i + 1]))
                    except ValueError:
                        print("line is: %s; no number after %s" % (line.strip(), keyword))
                    break
    return values


def analyse(argv):
    p = argparse.ArgumentParser(prog="benchmark_analysis.py analyse")
    p.add_argument("--filename", required=True)
    p.add_argument("--speed_log_file", required=True)
    p.add_argument("--memory_file", default="")
    p.add_argument("--model_name", required=True)
    p.add_argument("--base_batch_size", type=int, required=True)
    p.add_argument("--run_mode", default="DP")
    p.add_argument("--run_process_type", default="SingleP")
    p.add_argument("--fp_item", required=True)
    p.add_argument("--keyword", default="ips:")
    p.add_argument("--skip_steps", type=int, default=2)
    p.add_argument("--device_num", default="N1C1")
    p.add_argument("--speed_unit", default="samples/s")
    p.add_argument("--convergence_key", default="loss:")
    p.add_argument("--place", default="cpu")
    p.add_argument("--note", default="")
    args = p.parse_args(argv)
    records = values_after(args.filename, args.keyword)
    losses = values_after(args.filename, args.convergence_key, strip_comma=True)
    kept = records[args.skip_steps:]
    ips = round(sum(kept) / len(kept), 3) if kept else 0
    memory = {}
    if args.memory_file and os.path.isfile(args.memory_file):
        with open(args.memory_file) as handle:
            memory = json.load(handle)
    reserved = values_after(args.filename, "max_mem_reserved:")
    info = {
        "model_branch": os.getenv("model_branch"),
        "model_commit": os.getenv("model_commit"),
        "model_name": args.model_name,
        "batch_size": args.base_batch_size,
        "fp_item": args.fp_item,
        "run_process_type": args.run_process_type,
        "run_mode": args.run_mode,
        "convergence_value": losses[-1] if losses else 0,
        "convergence_key": args.convergence_key,
        "ips": ips,
        "speed_unit": args.speed_unit,
        "device_num": args.device_num,
        "model_run_time": memory.get("seconds", os.getenv("model_run_time")),
        "frame_commit": os.getenv("frame_commit", ""),
        "frame_version": os.getenv("frame_version"),
        # tipcgen's additions
        "peak_memory_mb": reserved[-1] if reserved else memory.get("peak_rss_mb"),
        "peak_memory_kind": "gpu_reserved" if reserved else "rss",
        "place": args.place,
        "ips_records": len(records),
        "skip_steps": args.skip_steps,
        "note": args.note,
    }
    text = json.dumps(info)
    print(text)
    with open(args.speed_log_file, "w") as out:
        out.write(text)
    if not kept or int(ips) == 0:
        print("JOB_FAIL_FLAG: %d %s value(s) in %s, %d skipped: no speed" % (len(records), args.keyword,
                                                                             args.filename, args.skip_steps))
        return 1
    return 0


def frame():
    version = commit = "unknown"
    for name in ("paddlepaddle", "paddlepaddle-gpu"):
        try:
            version = importlib.metadata.version(name)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    spec = importlib.util.find_spec("paddle")
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "version", "__init__.py")
        try:
            with open(path, errors="replace") as handle:
                found = re.search(r"^commit\s*=\s*['\"]([0-9a-fA-F]+)['\"]", handle.read(), re.M)
            commit = found.group(1) if found else commit
        except OSError:
            pass
    print(version, commit)
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("measure", "analyse", "frame"):
        print("usage: benchmark_analysis.py measure|analyse|frame ...", file=sys.stderr)
        return 2
    if sys.argv[1] == "frame":
        return frame()
    return measure(sys.argv[2:]) if sys.argv[1] == "measure" else analyse(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
