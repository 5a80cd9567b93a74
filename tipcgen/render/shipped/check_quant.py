"""The PTQ chain's own check: the int8 model against the float one on fixed inputs, Paddle Inference on CPU.

    python test_tipc/check_quant.py --float_dir=DIR --int8_dir=DIR [--rtol=0.2] [--atol=0] [--runs=20] \
        [--eval_data=FILE.npz --accuracy_drop=0.05]

Both models get the same inputs (built from the float model's input spec: uniform [0, 1), seed 0,
batch 4, -1 dimensions as 4; float32 inputs only). The float model runs with oneDNN fp32, the int8
one with oneDNN int8 (Paddle Inference's int8 CPU path). Prints one line of figures (max |int8 -
float|, the float outputs' largest magnitude, top-1 agreement, latency of both) and exits 1 when
the difference exceeds atol + rtol * that magnitude: an int8 tolerance, relative to the outputs'
range (docs/QUANTIZATION.md measured 1-10 % on a small CNN, 99 % for a broken int8 pass).
With --eval_data (a labelled .npz: arrays x and label, read without unpickling) it also reports both
models' top-1 accuracy there and fails when int8 loses more than --accuracy_drop.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # PTQ models are legacy programs (inference.pdmodel)

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.inference as pi  # noqa: E402
sys.dont_write_bytecode = True  # importing tipc_compare leaves no __pycache__ in the repository's test_tipc/
from tipc_compare import MARKER, abs_diff  # noqa: E402  (beside this script in test_tipc/)


def predictor(model_dir, int8):
    program = next((os.path.join(model_dir, name) for name in ("inference.pdmodel", "inference.json")
                    if os.path.exists(os.path.join(model_dir, name))), None)
    if program is None:
        sys.exit(f"no inference.pdmodel or inference.json in {model_dir}")
    config = pi.Config(program, os.path.join(model_dir, "inference.pdiparams"))
    config.disable_gpu()
    config.set_cpu_math_library_num_threads(1)
    config.enable_mkldnn()
    if int8:
        config.enable_mkldnn_int8()
    config.disable_glog_info()
    return pi.create_predictor(config)


def input_shapes(model_dir):
    """{input name: shape} of the float model's program (float32 inputs assumed)."""
    paddle.enable_static()
    try:
        program, feeds, _ = paddle.static.load_inference_model(
            os.path.join(model_dir, "inference"), paddle.static.Executor(paddle.CPUPlace()))
        return {name: list(program.global_block().var(name).shape) for name in feeds}
    finally:
        paddle.disable_static()


def run(pred, inputs, runs):
    for name, array in inputs.items():
        handle = pred.get_input_handle(name)
        handle.reshape(array.shape)
        handle.copy_from_cpu(array)
    pred.run()
    out = pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        pred.run()
        times.append((time.perf_counter() - start) * 1000)
    if not times:
        return out, None
    return out, {"mean_ms": round(float(np.mean(times)), 4), "p50_ms": round(float(np.median(times)), 4), "runs": runs}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--float_dir", required=True)
    parser.add_argument("--int8_dir", required=True)
    parser.add_argument("--rtol", type=float, default=0.2)
    parser.add_argument("--atol", type=float, default=0.0)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--eval_data", default=None)
    parser.add_argument("--accuracy_drop", type=float, default=0.05)
    args = parser.parse_args()
    float_pred, int8_pred = predictor(args.float_dir, False), predictor(args.int8_dir, True)
    rng = np.random.RandomState(0)
    inputs = {name: rng.rand(*[4 if d < 0 else d for d in shape]).astype("float32")
              for name, shape in input_shapes(args.float_dir).items()}
    ref, float_time = run(float_pred, inputs, args.runs)
    out, int8_time = run(int8_pred, inputs, args.runs)
    if out.shape != ref.shape:
        sys.exit(f"the int8 output has shape {out.shape}, the float one {ref.shape}")
    diff, scale = float(abs_diff(out, ref).max(initial=0.0)), float(np.abs(ref).max(initial=0.0))
    allowed = args.atol + args.rtol * scale
    top1 = float((out.reshape(len(out), -1).argmax(1) == ref.reshape(len(ref), -1).argmax(1)).mean())
    figures = {"max_diff": diff, "float_abs_max": scale, "allowed": allowed, "top1_agreement": top1,
               "float_ms": float_time["mean_ms"], "int8_ms": int8_time["mean_ms"]}
    print("quant check: " + json.dumps(figures))
    print(f"int8 vs float: max diff {diff:.4g} ({diff / scale if scale else 0:.1%} of the float outputs' "
          f"{scale:.4g}; allowed {allowed:.4g}), top-1 agreement {top1:.0%}, latency float {float_time['mean_ms']:.3f} ms, "
          f"int8 {int8_time['mean_ms']:.3f} ms per batch of {len(ref)}")
    problems = [f"the int8 model differs from the float one by {diff:.4g}, more than {allowed:.4g}"] if diff > allowed else []
    if args.eval_data:
        accuracy = evaluate(float_pred, int8_pred, args.eval_data)
        figures["accuracy"] = accuracy
        print(f"accuracy on {args.eval_data}: float {accuracy['float']:.4f}, int8 {accuracy['int8']:.4f} "
              f"(delta {accuracy['delta']:+.4f}, allowed drop {args.accuracy_drop})")
        if -accuracy["delta"] > args.accuracy_drop:
            problems.append(f"the int8 model loses {-accuracy['delta']:.4f} accuracy, more than {args.accuracy_drop}")
    # The line tipcgen's summary reads (summary.check_result): the difference, the tolerance, both latencies.
    # rtol is relative to the float outputs' largest magnitude (float_abs_max), not elementwise.
    print(MARKER + json.dumps({
        "max_abs": {pred_name(float_pred) + " int8 vs float": diff}, "atol": args.atol, "rtol": args.rtol,
        "failures": len(problems), "logs": 1, **figures,
        "latency_ms": {"float (oneDNN fp32)": float_time, "int8 (oneDNN int8)": int8_time}}))
    if problems:
        sys.exit("; ".join(problems))


def evaluate(float_pred, int8_pred, path):
    """Top-1 accuracy of both models on a labelled .npz (x, label), and int8's minus float's."""
    with np.load(path, allow_pickle=False) as data:
        x, label = data["x"].astype("float32"), data["label"].reshape(-1)
    name = float_pred.get_input_names()[0]
    result = {}
    for which, pred in (("float", float_pred), ("int8", int8_pred)):
        out, _ = run(pred, {name: x}, 0)
        result[which] = float((out.reshape(len(out), -1).argmax(1) == label).mean())
    result["delta"] = result["int8"] - result["float"]
    return result


def pred_name(pred):
    return pred.get_output_names()[0]


if __name__ == "__main__":
    main()
