"""The dy2static chain's own check: the static training went through paddle.jit.to_static, by paddle's own word, and
its losses match the dygraph training's, step by step.

    python test_tipc/check_dy2static.py --records=RUN/train/steps.jsonl [--atol=1e-5] [--rtol=1e-5] \
        [--out=RUN/dy2static_losses.json]

The records are the basic runner's (one per step) of the two trainings the dy2static runner asked for:
trainer norm_train (dygraph) and to_static_train (the same command with the config's to_static switch).
The runner trains both with TRANSLATOR_VERBOSITY=1, under which paddle.jit logs every program it builds from
the code it converts (``[JIT] PIR forward program ...`` and ``[JIT] PIR backward program ...``, each a block of
ops; under the old IR, FLAGS_enable_pir_api=0, only the functions its AST translator converted). The to_static
training must show a converted program with a backward program holding ops (its gradients went through the
static program); none, or only programs without gradients, fails naming what is missing, and so does a dygraph
training whose gradients went through one (the comparison would be static against static).
Then each pair of trainings of one gpu_list entry and autocast is compared: every `loss: X` its log prints
(the first on a line; its step is the `global_step`/`step`/`iter` number on that line, else its place;
paddle's program and source dumps are not read for losses), in order, within atol + rtol * |dygraph loss|
(upstream, PaddleClas's runner, diffs the printed losses). The first step where they part is named; a training
that logged no loss, or another number of losses, fails. Prints one line per pair and the structured line
tipcgen reads; exits 1 when a pair fails. Reads only the logs (text): it imports neither paddle nor numpy.
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


TRANSLATOR = "Dynamic-to-Static"  # the name paddle.jit's translator logger puts on each of its lines
PROGRAM = re.compile(r"\[JIT\] PIR (forward|backward) program before PIR PASS")
CONVERTED = re.compile(r"Convert callable object: convert |\(Level 1\) Source code:")
OP = re.compile(r'^\s+(?:\([^)]*\)\s*)?=\s*"[\w.]+"')  # an op line of a program block: (%3) = "pd_op.matmul" (...)
DUMPED = re.compile(r"^(?:\s|[{}]|def |async def |class |@|$)")  # a line of a program or source dump


def read_log(path):
    """What a training's log holds: its losses [(step, loss)] in the order it prints them, and paddle's evidence of
    conversion: {"forward": programs built, "backward": backward programs with ops, "converted": AST conversions}.
    The lines of paddle's dumps (a program block, a converted function's source) are not read for losses."""
    out, seen = [], {"forward": 0, "backward": 0, "converted": 0}
    dump, block, ops = False, None, 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if TRANSLATOR in line:
                program = PROGRAM.search(line)
                if program:
                    block, ops = program.group(1), 0
                    seen["forward"] += block == "forward"
                seen["converted"] += bool(CONVERTED.search(line))
                dump = True
                continue
            if dump and DUMPED.match(line):
                if block and OP.match(line):
                    ops += 1
                if block and line.rstrip() == "}":
                    seen["backward"] += block == "backward" and ops > 0
                    block = None
                continue
            dump, block = False, None
            match = LOSS.search(line)
            if match is None:
                continue
            step = STEP.search(line)
            out.append((int(step.group(1)) if step else len(out) + 1, float(match.group(1))))
    return out, seen


def losses(path):
    """[(step, loss)] in the order the log prints them."""
    return read_log(path)[0]


def static_problem(seen, log):
    """Why the to_static training's log does not show it went through to_static (None: it does), and what it shows."""
    if seen["backward"]:
        return None, (f"paddle built {seen['forward']} program(s) from the converted code, {seen['backward']} with a "
                      "backward program holding ops (the gradients went through it)")
    if seen["converted"] and not seen["forward"]:
        return None, (f"paddle's AST translator converted {seen['converted']} function(s) (the old IR, "
                      "FLAGS_enable_pir_api=0, logs no program)")
    if seen["forward"]:
        return (f"paddle built {seen['forward']} program(s) from converted code in {log}, but every backward program is "
                "empty: the training's gradients never went through a to_static program (only something without "
                "gradients, e.g. a function under paddle.no_grad, was converted)"), None
    return (f"its log ({log}) shows no program paddle.jit.to_static built: with TRANSLATOR_VERBOSITY=1 (the runner "
            "sets it) paddle logs `[JIT] PIR forward program` for each one, and none was logged, so the training ran "
            "in dygraph: the config's to_static switch never reached paddle.jit.to_static (a value the script does not "
            "take, e.g. true for True), paddle.jit.enable_to_static(False) turned it off, SOT ran every subgraph in "
            "dygraph (each under MIN_GRAPH_SIZE ops, default 10), or the script silenced it with "
            "paddle.jit.set_verbosity(0)"), None


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
        (dygraph, dy_seen), (static, st_seen) = (read_log(found[t]["log"]) for t in (DYGRAPH, STATIC))
        curves[name] = {"dygraph": dygraph, "to_static": static}
        problem, shown = static_problem(st_seen, found[STATIC]["log"])
        if problem:
            failures.append(f"{name}: the to_static training did not go through paddle.jit.to_static: {problem}")
            continue
        print(f"{name}: the to_static training went through paddle.jit.to_static: {shown}")
        if dy_seen["backward"]:
            failures.append(f"{name}: the dygraph training's gradients went through {dy_seen['backward']} program(s) "
                            f"paddle.jit.to_static built (its log, {found[DYGRAPH]['log']}, shows them): the comparison "
                            "would be static against static; the norm_train command must train in dygraph")
            continue
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
