"""The fleet chain's own check: every rank of every simulated node started, and the multi-node losses match a
one-process run of the same training.

    python test_tipc/check_fleet.py --node=DIR0 --node=DIR1 --procs=2 --single=LOG [--atol=1e-5] [--rtol=1e-5]

Each DIR (one --node each, in node order) is one node's paddle.distributed.launch --log_dir, in node order. Node k must hold, for each of its P
local ranks i, launch's ``envlog.i`` saying PADDLE_TRAINER_ID k*P+i and PADDLE_TRAINERS_NUM N*P (the world the
launcher built from the config's machine list), and the rank's ``workerlog.i``. Every rank's `loss: X` lines (the
first on a line; its step is the `global_step`/`step`/`iter` number there) are read; at each logged step the mean
over the ranks is compared with the one-process run's loss (the same command, batch size x N*P, no launcher):
data-parallel training over equal shares of each global batch with averaged gradients is that run, so they agree
within atol + rtol * |one-process loss|. The first node, rank and step that does not is named. Prints one line
per node and the structured line tipcgen reads; exits 1 when something fails. Reads text only.
"""
import argparse
import json
import math
import os
import re
import sys

MARKER = ":::TIPC_CHECK "  # as tipc_compare.MARKER
LOSS = re.compile(r"(?<![\w.])loss\s*[:=]\s*([-+]?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))", re.IGNORECASE)
STEP = re.compile(r"(?<![\w.])(?:global_step|step|iter)\s*[:=]?\s*\[?(\d+)", re.IGNORECASE)


def losses(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = LOSS.search(line)
            if match:
                step = STEP.search(line)
                out.append((int(step.group(1)) if step else len(out) + 1, float(match.group(1))))
    return out


def env_of(path):
    """The PADDLE_* lines of a launcher's envlog (the rest of the environment is not read)."""
    found = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            key, _, value = line.rstrip("\n").partition("=")
            if key in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_CURRENT_ENDPOINT"):
                found[key] = value
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", action="append", required=True, help="a node's launch --log_dir (one per node, in order)")
    parser.add_argument("--procs", type=int, required=True, help="processes per node")
    parser.add_argument("--single", default=None, help="the one-process run's log")
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--out", default=None, help="write every rank's and the one-process run's losses here (JSON)")
    args = parser.parse_args(argv)
    dirs = args.node
    world = len(dirs) * args.procs
    failures, curves = [], {}
    for node, folder in enumerate(dirs):
        started = []
        for local in range(args.procs):
            rank = node * args.procs + local
            env_path, log_path = (os.path.join(folder, f"{name}.{local}") for name in ("envlog", "workerlog"))
            if not os.path.isfile(env_path) or not os.path.isfile(log_path):
                failures.append(f"node {node}: rank {rank} never started (no {env_path if not os.path.isfile(env_path) else log_path})")
                continue
            env = env_of(env_path)
            if env.get("PADDLE_TRAINER_ID") != str(rank) or env.get("PADDLE_TRAINERS_NUM") != str(world):
                failures.append(f"node {node}: local rank {local} started as rank {env.get('PADDLE_TRAINER_ID')} of "
                                f"{env.get('PADDLE_TRAINERS_NUM')}, not rank {rank} of {world} ({env_path})")
                continue
            curves[f"node {node} rank {rank}"] = losses(log_path)
            started.append(rank)
        print(f"node {node}: ranks {', '.join(map(str, started)) or 'none'} of world size {world} started "
              f"({env_of(os.path.join(folder, 'envlog.0')).get('PADDLE_CURRENT_ENDPOINT', '?') if started else folder})")
    worst = {}
    if args.single and not failures:
        single = losses(args.single)
        curves["one process"] = single
        if not single:
            failures.append(f"the one-process run's log {args.single} prints no `loss: X`")
        for name, values in curves.items():
            if name != "one process" and len(values) != len(single):
                failures.append(f"{name.replace(' rank', ': rank')} logged {len(values)} losses, the one-process run {len(single)}")
        if not failures:
            ranks = [values for name, values in curves.items() if name != "one process"]
            worst["loss (mean over ranks vs one process)"] = 0.0
            for i, (step, reference) in enumerate(single):
                mean = sum(values[i][1] for values in ranks) / len(ranks)
                diff = abs(mean - reference)
                if math.isnan(diff) or diff > args.atol + args.rtol * abs(reference):
                    failures.append(f"at step {step} the mean loss over the {world} ranks is {mean:g}, the one-process "
                                    f"run's {reference:g}: |diff| {diff:.3g} > atol {args.atol:g} + rtol {args.rtol:g} x |loss|")
                    break
                worst["loss (mean over ranks vs one process)"] = max(worst["loss (mean over ranks vs one process)"], diff)
            else:
                print(f"{len(single)} logged steps: the mean over {world} ranks matches the one-process run "
                      f"(max |diff| {worst['loss (mean over ranks vs one process)']:.3g})")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({name: [[s, v if math.isfinite(v) else None] for s, v in values] for name, values in curves.items()},
                      handle, indent=1)
    for failure in failures:
        print("FAILED: " + failure)
    print(MARKER + json.dumps({"max_abs": worst, "atol": args.atol, "rtol": args.rtol, "logs": len(curves),
                               "failures": len(failures), "messages": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
