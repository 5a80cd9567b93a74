"""The fleet chain's own check: every rank of every simulated node started, and the multi-node training is a
one-process run of the same training (data parallelism: each process a share of each global batch, the gradients
averaged).

    python test_tipc/check_fleet.py --node=DIR0 --node=DIR1 --procs=2 --single=LOG [--atol=1e-5] [--rtol=1e-5] \
        [--checkpoint=PATH --single-checkpoint=PATH]

Each DIR (one --node each, in node order) is one node's paddle.distributed.launch --log_dir. Node k must hold, for
each of its P local ranks i, launch's ``envlog.i`` saying PADDLE_TRAINER_ID k*P+i and PADDLE_TRAINERS_NUM N*P (the
world the launcher built from the config's machine list), and the rank's ``workerlog.i``. Then two proofs, from what
any training leaves; each that can be made must hold, and one at least must be made:

- the checkpoints (--checkpoint, the multi-node training's as the config's train_model_name names it: a file, the
  file with .pdparams added, or a folder's .pdparams; its rank 0 wrote it; --single-checkpoint, the one-process
  run's): every parameter of the one-process run's (a ``_layers.`` prefix, paddle.DataParallel's, aside) equal in
  rank 0's within atol + rtol * |one-process value|. Ranks that average their gradients end where the one-process
  run ends; ranks that each train alone end elsewhere, and the first parameter that differs is named. Read with a
  pickle reader that builds numpy arrays and nothing else (a file asking for anything else is refused).
- the losses, when every rank logs them (a training that logs on rank 0 only leaves the other ranks' logs without
  one, and then this proof is not made): every rank's `loss: X` lines (the first on a line; its step is the
  `global_step`/`step`/`iter` number there); at each logged step the mean over the ranks against the one-process
  run's loss (the same command, batch size x N*P, no launcher), within atol + rtol * |one-process loss|.

Prints one line per node and per proof (what it compared) and the structured line tipcgen reads; exits 1 when
something fails. Needs numpy for the checkpoints only.
"""
import argparse
import json
import math
import os
import pickle
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


class _Arrays(pickle.Unpickler):
    """Unpickles paddle.save's dicts of numpy arrays and nothing else (no other class is ever looked up)."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"), ("numpy", "ndarray"),
               ("numpy", "dtype"), ("collections", "OrderedDict")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"it asks for {module}.{name}: only numpy arrays in a dict are read")
        return super().find_class(module, name)


def parameters(path):
    """{name: float array} of a .pdparams (nested dicts flattened with dots; DataParallel's `_layers.` dropped)."""
    import numpy as np

    with open(path, "rb") as handle:
        data = _Arrays(handle).load()
    out = {}

    def walk(value, name):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{name}.{key}" if name else str(key))
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size:
            out[re.sub(r"(^|\.)_layers\.", r"\1", name)] = value.astype(np.float64)

    walk(data, "")
    return out


def checkpoint_files(path):
    """The .pdparams a checkpoint path names: the file, the file with .pdparams added, or those in a folder."""
    if os.path.isfile(path):
        return [path]
    if os.path.isfile(path + ".pdparams"):
        return [path + ".pdparams"]
    if os.path.isdir(path):
        return sorted(os.path.join(path, n) for n in os.listdir(path)
                      if n.endswith(".pdparams") and os.path.isfile(os.path.join(path, n)))
    return []


def compare_checkpoints(multi, single, atol, rtol):
    """(problems, lines, worst): rank 0's checkpoint files against the one-process run's, parameter by parameter."""
    import numpy as np

    files, reference = checkpoint_files(multi), checkpoint_files(single)
    if not files or not reference:
        return [f"no checkpoint to compare: {'the multi-node training wrote none at ' + multi if not files else ''}"
                f"{'; ' if not files and not reference else ''}"
                f"{'the one-process run wrote none at ' + single if not reference else ''}"], [], None
    problems, lines, worst = [], [], 0.0
    by_name = {os.path.basename(f): f for f in reference}
    for path in files:
        other = by_name.get(os.path.basename(path)) or (reference[0] if len(files) == len(reference) == 1 else None)
        if other is None:
            problems.append(f"the one-process run wrote no {os.path.basename(path)} beside {reference[0]}")
            continue
        try:
            mine, theirs = parameters(path), parameters(other)
        except Exception as exc:  # noqa: BLE001  # any file: one line naming it
            problems.append(f"cannot read {path} or {other} as a paddle.save state dict: {type(exc).__name__}: {exc}")
            continue
        if not theirs:
            problems.append(f"{other} holds no float parameter to compare")
            continue
        for name, value in theirs.items():
            if name not in mine:
                problems.append(f"parameter {name} of the one-process run ({other}) is not in rank 0's {path}")
                break
            if mine[name].shape != value.shape:
                problems.append(f"parameter {name} has shape {list(mine[name].shape)} in rank 0's {path}, "
                                f"{list(value.shape)} in the one-process run's")
                break
            diff = np.abs(mine[name] - value)
            over = ~(diff <= atol + rtol * np.abs(value))  # NaN counts as over
            if over.any():
                at = int(np.argmax(over.reshape(-1)))
                problems.append(
                    f"parameter {name} {list(value.shape)} of rank 0's checkpoint {path} is not the one-process run's "
                    f"({other}): {int(over.sum())} of {value.size} values differ, the first at flat index {at} "
                    f"({mine[name].reshape(-1)[at]:.6g} vs {value.reshape(-1)[at]:.6g}), max |diff| "
                    f"{float(np.nanmax(diff)) if not np.isnan(diff).all() else float('nan'):.3g} > atol {atol:g} + "
                    f"rtol {rtol:g} x |value|: the ranks did not train as one (are their gradients averaged, "
                    "paddle.DataParallel, and does each take its share of every global batch?)")
                break
            worst = max(worst, float(diff.max()) if diff.size else 0.0)
        else:
            lines.append(f"checkpoints: rank 0's {path} and the one-process run's {other}: {len(theirs)} parameters "
                         f"equal within atol {atol:g} + rtol {rtol:g} x |value| (max |diff| {worst:.3g})")
    return problems, lines, worst


def compare_losses(curves, single, world, atol, rtol):
    """(problems, lines, worst): at each logged step, the mean of the ranks' losses against the one-process run's."""
    problems = [f"{name.replace(' rank', ': rank')} logged {len(values)} losses, the one-process run {len(single)}"
                for name, values in curves.items() if len(values) != len(single)]
    if problems:
        return problems, [], None
    worst = 0.0
    ranks = list(curves.values())
    for i, (step, reference) in enumerate(single):
        mean = sum(values[i][1] for values in ranks) / len(ranks)
        diff = abs(mean - reference)
        if math.isnan(diff) or diff > atol + rtol * abs(reference):
            return [f"at step {step} the mean loss over the {world} ranks is {mean:g}, the one-process run's "
                    f"{reference:g}: |diff| {diff:.3g} > atol {atol:g} + rtol {rtol:g} x |loss|"], [], None
        worst = max(worst, diff)
    return [], [f"losses: {len(single)} logged steps, the mean over {world} ranks matches the one-process run "
                f"(max |diff| {worst:.3g})"], worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", action="append", required=True, help="a node's launch --log_dir (one per node, in order)")
    parser.add_argument("--procs", type=int, required=True, help="processes per node")
    parser.add_argument("--single", default=None, help="the one-process run's log")
    parser.add_argument("--checkpoint", default=None, help="the multi-node training's checkpoint (rank 0 wrote it)")
    parser.add_argument("--single-checkpoint", default=None, help="the one-process run's checkpoint")
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
    worst, proofs = {}, []
    single = losses(args.single) if args.single and os.path.isfile(args.single) else []
    if args.single and not failures:
        if single:
            curves["one process"] = single
        silent = [name.split(" rank ")[1] for name, values in curves.items() if name != "one process" and not values]
        if not single:
            print(f"losses: not compared: the one-process run's log {args.single} prints no `loss: X`")
        elif silent:
            print(f"losses: not compared: rank(s) {', '.join(silent)} logged no loss (a training that logs on rank 0 only "
                  "leaves the mean over the ranks unknown); the checkpoints are the proof")
        else:
            problems, lines, value = compare_losses({n: v for n, v in curves.items() if n != "one process"}, single,
                                                    world, args.atol, args.rtol)
            failures += problems
            proofs += lines
            if value is not None:
                worst["loss (mean over ranks vs one process)"] = value
        if args.checkpoint and args.single_checkpoint:
            problems, lines, value = compare_checkpoints(args.checkpoint, args.single_checkpoint, args.atol, args.rtol)
            if problems and problems[0].startswith("no checkpoint to compare") and proofs:
                print(f"checkpoints: not compared: {problems[0]}")  # the losses proved it
            else:
                failures += problems
                proofs += lines
            if value is not None and not problems:
                worst["parameters (rank 0 vs one process)"] = value
        if not proofs and not failures:
            failures.append("nothing proves the ranks trained as one: " + (
                "no checkpoint was given to compare, and " if not (args.checkpoint and args.single_checkpoint) else "")
                + "the losses were not compared (above); make every rank log its loss, or save a checkpoint "
                "(the config's train_model_name names it)")
    for line in proofs:
        print(line)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({name: [[s, v if math.isfinite(v) else None] for s, v in values] for name, values in curves.items()},
                      handle, indent=1)
    for failure in failures:
        print("FAILED: " + failure)
    print(MARKER + json.dumps({"max_abs": worst, "atol": args.atol, "rtol": args.rtol, "logs": len(curves),
                               "failures": len(failures), "messages": failures, "proofs": proofs}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
