"""The dy2static chain's own check: the static training's losses against the dygraph training's, step by step.

    python test_tipc/check_dy2static.py --records=RUN/train/steps.jsonl [--atol=1e-5] [--rtol=1e-5] \
        [--out=RUN/dy2static_losses.json]

The records are the basic runner's (one per step) of the two trainings the dy2static runner asked for:
trainer norm_train (dygraph) and to_static_train (the same command with the config's to_static switch).
Each pair of trainings of one gpu_list entry and autocast is compared: every `loss: X` its log prints
(the first on a line; its step is the `global_step`/`step`/`iter` number on that line, else its place),
in order, within atol + rtol * |dygraph loss| (upstream, PaddleClas's runner, diffs the printed losses).
The first step where they part is named; a training that logged no loss, or another number of losses,
fails. Prints one line per pair and the structured line tipcgen reads; exits 1 when a pair fails.
Reads only the logs (text): it imports neither paddle nor numpy.
"""
import argparse
import json
import math
import re
import sys

MARKER = ":::TIPC_CHECK "  # as tipc_compare.MARKER (tipcgen reads the last such line of the log)
DYGRAPH, STATIC = "norm_train", "to_static_train"
LOSS = re.compile(r"(?<![\w.])loss\s*[:=]\s*([-+]?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))", re.IGNORECASE)
STEP = re.compile(r"(?<![\w.])(?:global_step|step|iter)\s*[:=]?\s*\[?(\d+)", re.IGNORECASE)


def losses(path):
    """[(step, loss)] in the order the log prints them."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = LOSS.search(line)
            if match is None:
                continue
            step = STEP.search(line)
            out.append((int(step.group(1)) if step else len(out) + 1, float(match.group(1))))
    return out


def trainings(records_path):
    """{(gpu, autocast): {trainer: record}} of the passed trainings of both trainers."""
    pairs = {}
    with open(records_path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record.get("kind") == "train" and record.get("trainer") in (DYGRAPH, STATIC) and record.get("exit_code") == 0:
                pairs.setdefault((record.get("gpu"), record.get("autocast")), {})[record["trainer"]] = record
    return pairs


def compare(dygraph, static, atol, rtol):
    """The first difference beyond the tolerance, as a sentence (None: they agree), and the largest one."""
    worst = 0.0
    for i, ((step, a), (_, b)) in enumerate(zip(dygraph, static)):
        both_nan = math.isnan(a) and math.isnan(b)
        diff = 0.0 if both_nan or a == b else abs(a - b)
        if not both_nan and (math.isnan(diff) or diff > atol + rtol * abs(a)):
            agree = f"; the {i} logged step(s) before it agree" if i else "; it is the first logged step"
            return (f"the losses diverge first at step {step} (logged loss {i + 1} of {len(dygraph)}): dygraph {a:g}, "
                    f"to_static {b:g}, |diff| {diff:.3g} > atol {atol:g} + rtol {rtol:g} x |dygraph|{agree}"), diff
        worst = max(worst, diff)
    if len(dygraph) != len(static):
        return (f"the dygraph training logged {len(dygraph)} losses, the to_static one {len(static)} "
                f"(the first {min(len(dygraph), len(static))} agree)"), worst
    return None, worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", required=True, help="the basic runner's steps.jsonl of the two trainings")
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--out", default=None, help="write both trainings' losses here (JSON), for the report")
    args = parser.parse_args(argv)
    pairs = trainings(args.records)
    failures, worst, curves = [], {}, {}
    if not pairs:
        failures.append("no passed norm_train or to_static_train training in " + args.records)
    for (gpu, autocast), found in sorted(pairs.items(), key=str):
        name = f"gpus {gpu}, autocast {autocast}"
        missing = [trainer for trainer in (DYGRAPH, STATIC) if trainer not in found]
        if missing:
            failures.append(f"{name}: no passed {' or '.join(missing)} training to compare with")
            continue
        dygraph, static = (losses(found[t]["log"]) for t in (DYGRAPH, STATIC))
        curves[name] = {"dygraph": dygraph, "to_static": static}
        empty = [t for t, values in ((DYGRAPH, dygraph), (STATIC, static)) if not values]
        if empty:
            failures.append(f"{name}: the {' and '.join(empty)} log ({found[empty[0]]['log']}) prints no `loss: X`")
            continue
        problem, worst[name] = compare(dygraph, static, args.atol, args.rtol)
        if problem:
            failures.append(f"{name}: {problem}")
        else:
            print(f"{name}: {len(dygraph)} logged losses agree (max |diff| {worst[name]:.3g}, atol {args.atol:g}, "
                  f"rtol {args.rtol:g})")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({name: {k: [[s, v if math.isfinite(v) else None] for s, v in values] for k, values in pair.items()}
                       for name, pair in curves.items()}, handle, indent=1)
    for failure in failures:
        print("FAILED: " + failure)
    print(MARKER + json.dumps({"max_abs": {f"loss ({name})": value for name, value in worst.items()},
                               "atol": args.atol, "rtol": args.rtol, "logs": len(curves), "failures": len(failures),
                               "messages": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
