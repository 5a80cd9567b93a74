"""The chain's own result check of an exported model (paddle.jit.save), with no change to the user's scripts:

    python test_tipc/check_inference.py --model_dir DIR [--use_gpu 'True|False'] [--enable_mkldnn 'False|True']
        [--cpu_threads '1|2'] [--precision fp32] [--use_trt False] [--batch_size 2] [--onnx_file F.onnx]
        [--inputs FILE.npz] [--results_dir DIR] [--output_names 'logits|probs']

Feeds the model fixed inputs (the arrays of --inputs, else inputs built from the model's input spec
with seed 0: dynamic dims -> small sizes, int inputs -> ids below the smallest embedding table,
else 0..1), runs it in every inference configuration listed (`|` separated, as the TIPC config
lists them; GPU/TensorRT where a CUDA device is present, else skipped with the reason) and, with
--onnx_file, in ONNX Runtime; compares every output of every configuration with the first CPU fp32
configuration's (shape, dtype, NaN/Inf, |a - e| <= atol + rtol * |e| with per-precision
tolerances) and prints the max abs/rel difference per output and the latency per configuration.
Outputs are named by --output_names (the descriptor's checks.outputs, by position), else by the
program's own names: Paddle 3 programs call them fetch_name_N, shown as "output N (fetch_name_N)".
With --results_dir each configuration's outputs are written as `fixed_inputs\t<json>` lines
(compare_results.py reads them), and cases.json lists them with each configuration's place and
precision (`tipcgen golden` reads it: no file name is parsed). Exit 0 if all pass, 1 if not, 2 on bad
arguments or no model. Needs paddle (and onnxruntime for --onnx_file) and numpy.
"""
import argparse
import glob
import json
import os
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # importing tipc_compare leaves no __pycache__ in the repository's test_tipc/
from tipc_compare import MARKER, Outcome, compare_outputs, label  # noqa: E402

TOLERANCES = {"fp32": (1e-4, 1e-3), "fp16": (1e-2, 1e-2), "bf16": (5e-2, 5e-2), "int8": (1e-1, 1e-1), "onnx": (1e-4, 1e-3)}
SMALL_DIM = 4  # the size of a dynamic dimension other than the batch


def words(value):
    return [w for w in (value or "").split("|") if w.strip() and w.strip() != "null"]


def truthy(value):
    return value.strip().lower() in ("true", "gpu", "1", "yes")


def find_model(model_dir):
    """(program file, params file) of the exported model in model_dir, or None."""
    for params in sorted(glob.glob(os.path.join(model_dir, "*.pdiparams"))):
        stem = params[: -len(".pdiparams")]
        for suffix in (".json", ".pdmodel"):
            if os.path.isfile(stem + suffix):
                return stem + suffix, params
    return None


def feeding_input(value, steps=6):
    """The name of the model input a PIR value comes from, following first operands a few ops back."""
    for _ in range(steps):
        op = value.get_defining_op() if hasattr(value, "get_defining_op") else None
        if op is None:
            return None
        if op.name() == "pd_op.data":
            return op.attrs().get("name")
        if op.num_operands() == 0:
            return None
        value = op.operand_source(0)
    return None


def input_spec(program_file):
    """[(name, shape, numpy dtype)] of the model's inputs and the embedding table sizes: {input name or
    None (not traced to an input): the smallest table it indexes}."""
    import paddle

    paddle.enable_static()
    try:
        exe = paddle.static.Executor(paddle.CPUPlace())
        prefix = program_file.rsplit(".", 1)[0]
        program, feeds, _ = paddle.static.load_inference_model(prefix, exe)
        spec, vocab = {}, []
        block = program.global_block()
        for op in block.ops:
            kind = op.name() if callable(getattr(op, "name", None)) else op.type
            if kind in ("pd_op.data", "pd_op.feed") and op.attrs().get("name") in feeds:
                value = op.result(0)
                spec[op.attrs()["name"]] = (list(value.shape), str(value.dtype).replace("paddle.", ""))
            elif kind in ("pd_op.embedding", "pd_op.lookup_table_v2"):
                vocab.append((feeding_input(op.operand_source(0)), int(op.operand_source(1).shape[0])))
            elif kind in ("lookup_table_v2", "lookup_table"):
                vocab.append((None, int(block.var(op.input("W")[0]).shape[0])))
        for name in feeds:
            if name not in spec and hasattr(block, "var"):
                var = block.var(name)
                spec[name] = (list(var.shape), str(var.dtype).replace("paddle.", "").replace("VarType.", "").lower())
        sizes = {}
        for name, size in vocab + [(None, size) for _, size in vocab]:
            sizes[name] = min(size, sizes.get(name, size))
        return [(name, *spec[name]) for name in feeds], sizes
    finally:
        paddle.disable_static()


def id_bound(vocab, name):
    """Ids for input name stay below its embedding table (at most 100), else below every table, else 2."""
    size = vocab.get(name, vocab.get(None))
    return max(1, min(size, 100)) if size else 2


def build_inputs(spec, vocab, batch_size, seed):
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, shape, dtype in spec:
        high = id_bound(vocab, name)
        dims = [(batch_size if i == 0 else SMALL_DIM) if d is None or d < 0 else d for i, d in enumerate(shape)]
        if "int" in dtype:
            arrays[name] = rng.integers(0, high, size=dims).astype(dtype)
        elif "bool" in dtype:
            arrays[name] = rng.integers(0, 2, size=dims).astype(bool)
        else:
            arrays[name] = rng.standard_normal(dims).astype(dtype if dtype in ("float32", "float64", "float16") else "float32")
    return arrays


def latency(run, repeats, warm_up=False):
    """Latency ms (mean, p50) over repeats runs (after one more warm-up run with warm_up)."""
    if warm_up:
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return {"mean_ms": round(float(np.mean(times)), 3), "p50_ms": round(float(np.median(times)), 3), "runs": repeats}


def paddle_runner(files, inputs, place, mkldnn=False, threads=1, precision="fp32", trt=False, output_names=()):
    import paddle.inference as pi

    config = pi.Config(*files)
    if place == "gpu":
        config.enable_use_gpu(256, 0)
        if trt:
            kind = {"fp16": pi.PrecisionType.Half, "int8": pi.PrecisionType.Int8}.get(precision, pi.PrecisionType.Float32)
            config.enable_tensorrt_engine(workspace_size=1 << 28, max_batch_size=8, min_subgraph_size=3,
                                          precision_mode=kind, use_static=False, use_calib_mode=False)
    else:
        config.disable_gpu()
        config.set_cpu_math_library_num_threads(int(threads))
        if mkldnn:
            config.enable_mkldnn()
            if precision in ("fp16", "bf16"):
                config.enable_mkldnn_bfloat16()
        else:
            config.disable_mkldnn()
    config.disable_glog_info()
    predictor = pi.create_predictor(config)
    names = predictor.get_output_names()

    def run():
        for name in predictor.get_input_names():
            handle = predictor.get_input_handle(name)
            handle.reshape(inputs[name].shape)
            handle.copy_from_cpu(inputs[name])
        predictor.run()
        return {(output_names[i] if i < len(output_names) else name): predictor.get_output_handle(name).copy_to_cpu()
                for i, name in enumerate(names)}

    return run


def one_by_one(files, inputs, ref_case, output_names, report):
    """With one configuration there is nothing to compare: run it on a batch, then on each sample of that
    batch alone, and hold each sample's outputs to its row of the batched run (an exported model's batch
    invariance). ``inputs`` has at least 2 rows. Returns (failures, comparisons made: 0 where the outputs
    have no batch dimension)."""
    rows = min({np.asarray(v).shape[0] for v in inputs.values()})
    case, place, options = ref_case[0] + "_one_sample_at_a_time", ref_case[1], ref_case[2]
    feed = dict(inputs)
    try:
        run = paddle_runner(files, feed, place, output_names=output_names, **options)
        batched = {name: np.asarray(value) for name, value in run().items()}
        if any(value.ndim == 0 or value.shape[0] != rows for value in batched.values()):
            print(f"{ref_case[0]}: the only configuration, and outputs without a batch dimension: nothing compared")
            return [], 0
        parts = []
        for row in range(rows):
            feed.update({name: np.ascontiguousarray(np.asarray(value)[row:row + 1]) for name, value in inputs.items()})
            parts.append(run())
        outputs = {name: np.concatenate([np.asarray(part[name]) for part in parts]) for name in batched}
    except Exception as exc:  # a model that cannot take one sample fails the check, named
        return [f"{case}: did not run ({type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''})"], 1
    atol, rtol = TOLERANCES.get(options["precision"], TOLERANCES["fp32"])
    found = compare(batched, outputs, atol, rtol, case, report)
    print(f"{case}: {'FAILED' if found else 'passed'} against a batched run of {ref_case[0]} ({rows} samples, "
          f"atol {atol:g}, rtol {rtol:g})")
    return found, 1


def onnx_runner(onnx_file, inputs, names):
    import onnxruntime as ort

    session = ort.InferenceSession(onnx_file, providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[i.name] for i in session.get_inputs()}
    outs = [o.name for o in session.get_outputs()]

    def run():
        values = session.run(outs, feeds)
        # ONNX output names differ from Paddle's: outputs are matched by position.
        return {(names[i] if i < len(names) else o): v for i, (o, v) in enumerate(zip(outs, values))}

    return run


def compare(reference, outputs, atol, rtol, case, report):
    """This configuration's outputs against the reference's (tipc_compare); the worst differences go into report."""
    outcome = Outcome(report["max_abs"], report["max_rel"])
    compare_outputs(reference, outputs, atol, rtol, case, outcome)
    return outcome.failures


CASES = "cases.json"  # in --results_dir: [{case, file, place, precision}] for every results file


def write_results(results_dir, case, outputs):
    """Write a configuration's outputs; return the results file's name."""
    os.makedirs(results_dir, exist_ok=True)
    payload = json.dumps({name: np.asarray(value).tolist() for name, value in outputs.items()})
    name = f"{case}_results.txt"
    with open(os.path.join(results_dir, name), "w", encoding="utf-8") as handle:
        handle.write(f"fixed_inputs\t{payload}\n")
    return name


def cases(args, gpu_count):
    """[(case name, place, options)] and [(case name, reason)] skipped."""
    run, skipped = [], []
    for use_gpu in words(args.use_gpu) or ["False"]:
        if not truthy(use_gpu):
            for mkldnn in words(args.enable_mkldnn) or ["False"]:
                for threads in words(args.cpu_threads) or ["1"]:
                    for precision in words(args.precision) or ["fp32"]:
                        name = f"cpu_usemkldnn_{mkldnn}_threads_{threads}_precision_{precision}"
                        if precision != "fp32" and not truthy(mkldnn):
                            skipped.append((name, f"{precision} on CPU needs mkldnn (upstream rule)"))
                        elif precision == "int8":
                            skipped.append((name, "int8 needs a quantised model"))
                        else:
                            run.append((name, "cpu", {"mkldnn": truthy(mkldnn), "threads": threads, "precision": precision}))
            continue
        for trt in words(args.use_trt) or ["False"]:
            for precision in words(args.precision) or ["fp32"]:
                name = f"gpu_usetrt_{trt}_precision_{precision}"
                if not gpu_count:
                    skipped.append((name, "needs a CUDA device; none found (CPU-only machine or CPU build of paddle)"))
                elif precision != "fp32" and not truthy(trt):
                    skipped.append((name, f"{precision} without TensorRT is not tested (upstream rule)"))
                elif precision == "int8":
                    skipped.append((name, "int8 needs a quantised model"))
                else:
                    run.append((name, "gpu", {"trt": truthy(trt), "precision": precision}))
    return run, skipped


HELD_BYTES = 1 << 30  # beside the inference steps: predictors held at once, at most this many bytes of model files in all


def model_bytes(files):
    """The size of the exported model's files (program and parameters)."""
    return sum(os.path.getsize(path) for path in files)


def failure_text(exc):
    """An exception in one line: its type and the last line of its message."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[-1] if text else ''}"


def wait_for_go():
    """Run beside the inference steps (the runner's tipc_step_beside names a file in TIPC_BESIDE_GO), this check
    imports paddle and builds its inputs meanwhile, then waits for that file, which the runner creates once they
    have ended: the model is fed, and its latency measured, alone. Says so in TIPC_BESIDE_GO.waiting first (the
    runner leaves the wait out of the step's seconds)."""
    go = os.environ.get("TIPC_BESIDE_GO", "")
    if not go:
        return
    with open(go + ".waiting", "w", encoding="utf-8"):
        pass
    start = time.perf_counter()
    while not os.path.exists(go):
        time.sleep(0.02)
    print(f"waited {time.perf_counter() - start:.2f} s for the inference steps it ran beside")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--use_gpu", default="False")
    parser.add_argument("--enable_mkldnn", default="False")
    parser.add_argument("--cpu_threads", default="1")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--use_trt", default="False")
    parser.add_argument("--batch_size", default="2")
    parser.add_argument("--onnx_file", help="also run this ONNX model in ONNX Runtime and compare it")
    parser.add_argument("--inputs", help="a .npz of named input arrays (else inputs are built from the input spec)")
    parser.add_argument("--results_dir", help="write each configuration's outputs here")
    parser.add_argument("--output_names", default="", help="'|'-separated names of the model's outputs, by position")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per configuration")
    args = parser.parse_args()
    files = find_model(args.model_dir)
    if not files:
        print(f"check_inference: no exported model (*.json or *.pdmodel with *.pdiparams) in {args.model_dir}", file=sys.stderr)
        return 2
    if args.inputs and not os.path.isfile(args.inputs):
        print(f"check_inference: no input file at {args.inputs} (result_check_params fixed_inputs)", file=sys.stderr)
        return 2
    if args.onnx_file and not os.path.isfile(args.onnx_file):
        print(f"check_inference: no ONNX model at {args.onnx_file}", file=sys.stderr)
        return 2
    try:
        batch = int(words(args.batch_size)[0]) if words(args.batch_size) else 2
    except ValueError:
        batch = 2
    given = None
    if args.inputs:
        try:
            with np.load(args.inputs, allow_pickle=False) as data:
                given = {name: data[name] for name in data.files}
        except (OSError, ValueError) as exc:  # never unpickled: a data file cannot run code
            print(f"check_inference: {args.inputs} is not a readable .npz of arrays ({type(exc).__name__})", file=sys.stderr)
            return 2
    import paddle

    spec, vocab = input_spec(files[0])
    if given is not None:
        inputs = given
        missing = [name for name, _, _ in spec if name not in inputs]
        if missing:
            print(f"check_inference: {args.inputs} has no array named {', '.join(missing)} (the model's inputs: "
                  f"{', '.join(name for name, _, _ in spec)})", file=sys.stderr)
            return 2
        origin = f"the arrays of {args.inputs}"
    else:
        inputs = build_inputs(spec, vocab, batch, args.seed)
        origin = f"built from the input spec, seed {args.seed}"
    for name, array in inputs.items():
        ids = f", ids below {id_bound(vocab, name)}" if given is None and array.dtype.kind in "iu" else ""
        print(f"input {name}: shape {list(array.shape)} {array.dtype} ({origin}{ids})")
    gpu_count = paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda() else 0
    to_run, skipped = cases(args, gpu_count)
    output_names = words(args.output_names)
    report = {"max_abs": {}, "max_rel": {}, "latency_ms": {}, "skipped": {}}
    failures, reference, compared, written = [], None, 0, []
    ref_case = next((c for c in to_run if c[1] == "cpu" and c[2]["precision"] == "fp32" and not c[2]["mkldnn"]), None)
    ref_case = ref_case or next((c for c in to_run if c[2]["precision"] == "fp32"), None)
    if ref_case is None:
        to_run.insert(0, ("cpu_usemkldnn_False_threads_1_precision_fp32", "cpu", {"mkldnn": False, "threads": 1, "precision": "fp32"}))
        ref_case = to_run[0]
    to_run.remove(ref_case)
    to_run.insert(0, ref_case)
    if args.onnx_file:
        to_run.append(("onnxruntime_cpu", "onnx", {"precision": "onnx"}))
    for name, reason in skipped:
        report["skipped"][name] = reason
        print(f"skipped {name}: {reason}")
    # Beside the inference steps (TIPC_BESIDE_GO), every configuration's predictor is built and fed here, and held
    # until the steps have ended; only the timed runs wait for them. A model too large to hold once per
    # configuration waits first and runs one configuration at a time, as a check run alone does.
    hold = bool(os.environ.get("TIPC_BESIDE_GO")) and model_bytes(files) * len(to_run) <= HELD_BYTES
    if not hold:
        wait_for_go()
    ran, ref_names = [], None  # [case, place, options, run (held), outputs, latency]
    for case, place, options in to_run:
        try:
            if place == "onnx":
                run = onnx_runner(args.onnx_file, inputs, list(ref_names))
            else:
                run = paddle_runner(files, inputs, place, output_names=output_names, **options)
            outputs = run()  # the warm-up run gives the outputs
            measured = None if hold else latency(run, args.repeats)
        except Exception as exc:  # a configuration that cannot run fails the check, named
            failures.append(f"{case}: did not run ({failure_text(exc)})")
            continue
        ref_names = list(outputs) if ref_names is None else ref_names
        ran.append([case, place, options, run if hold else None, outputs, measured])
    if hold:
        wait_for_go()
        for entry in ran:
            try:
                entry[5] = latency(entry[3], args.repeats, warm_up=True)
            except Exception as exc:
                failures.append(f"{entry[0]}: did not run ({failure_text(exc)})")
            entry[3] = None
    for case, place, options, _, outputs, measured in ran:
        if measured is None:
            continue
        report["latency_ms"][case] = measured
        if args.results_dir:
            written.append({"case": case, "file": write_results(args.results_dir, case, outputs), "place": place,
                            "precision": options["precision"]})
        if reference is None:
            if output_names and len(output_names) != len(outputs):
                print(f"check_inference: --output_names names {len(output_names)} output(s) ({', '.join(output_names)}), "
                      f"the model has {len(outputs)} (checks.outputs in the descriptor lists them by position)", file=sys.stderr)
                return 2
            reference = {k: np.asarray(v) for k, v in outputs.items()}
            failures += [f"{case}: {label(k)} holds NaN or Inf" for k, v in reference.items()
                         if v.dtype.kind in "fc" and not np.all(np.isfinite(v))]
            print(f"{case}: reference, latency {measured['mean_ms']:.3f} ms (p50 {measured['p50_ms']:.3f} ms)")
            continue
        atol, rtol = TOLERANCES.get(options["precision"], TOLERANCES["fp32"])
        found = compare(reference, outputs, atol, rtol, case, report)
        failures += found
        compared += 1
        print(f"{case}: {'FAILED' if found else 'passed'} against {ref_case[0]} (atol {atol:g}, rtol {rtol:g}), "
              f"latency {measured['mean_ms']:.3f} ms (p50 {measured['p50_ms']:.3f} ms)")
    if reference is not None and compared == 0 and not failures:
        rows = {np.asarray(v).shape[0] if np.ndim(v) else 0 for v in inputs.values()}
        batch_inputs = inputs if min(rows) >= 2 else (
            build_inputs(spec, vocab, SMALL_DIM, args.seed) if given is None  # the same seed, 4 samples
            else {name: np.concatenate([np.asarray(v)] * 2) if np.ndim(v) else v for name, v in inputs.items()})
        found, done = one_by_one(files, batch_inputs, ref_case, output_names, report)
        failures += found
        compared += done
    for output in sorted(report["max_abs"]):
        print(f"{label(output)}: max abs diff {report['max_abs'][output]:.3e}, max rel diff {report['max_rel'][output]:.3e}")
    if args.results_dir and written:
        with open(os.path.join(args.results_dir, CASES), "w", encoding="utf-8") as handle:
            json.dump(sorted(written, key=lambda c: c["file"]), handle, indent=1)
    for failure in failures:
        print(f"FAIL {failure}")
    atol, rtol = TOLERANCES["fp32"]
    print(MARKER + json.dumps({"passed": not failures, "atol": atol, "rtol": rtol, "max_abs": report["max_abs"],
                               "max_rel": report["max_rel"], "failures": len(failures), "logs": compared,
                               "reference": ref_case[0], "latency_ms": report["latency_ms"], "skipped": report["skipped"],
                               "outputs": sorted(reference or {})}))
    if reference is None:
        print("check_inference: the reference configuration did not run: nothing was checked")
        return 1
    if failures:
        print(f"{len(failures)} result check failure(s) over {compared} configuration(s)")
        return 1
    print(f"Results of {compared} configuration(s) match {ref_case[0]}" if compared else
          f"Only {ref_case[0]} ran: outputs written, no other configuration to compare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
