"""Probe int8 quantization on the pinned Paddle stack (CPU): which export path works, and the figures.

    python bench/bench_quant.py [--out bench/results/quant.json] [--threads 1] [--runs 50] [--bert]

One small CNN (3 convs + linear, 3x32x32 input, random weights, seed 0) is exported, quantized
and run with Paddle Inference on CPU in each way docs/QUANTIZATION.md describes; every case prints
one line: max |int8 - float| on fixed inputs, top-1 agreement, latency (ms per batch of 4) or why
it failed. Each case runs in its own subprocess: ``FLAGS_enable_pir_api`` is read at import.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CASE = r'''
import json, os, sys, time
import numpy as np
import paddle
import paddle.nn as nn

work, case, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


class Net(nn.Layer):
    def __init__(self):  # the first parameter must be called `self`: dy2static strips only that name
        super().__init__()
        self.c1, self.c2, self.c3 = nn.Conv2D(3, 16, 3, padding=1), nn.Conv2D(16, 32, 3, padding=1), nn.Conv2D(32, 32, 3, padding=1)
        self.pool, self.fc, self.relu = nn.AdaptiveAvgPool2D(1), nn.Linear(32, 10), nn.ReLU()

    def forward(self, x):
        x = self.relu(self.c3(self.relu(self.c2(self.relu(self.c1(x))))))
        return self.fc(paddle.flatten(self.pool(x), 1))


def batches(seed, count):
    rng = np.random.RandomState(seed)
    return [rng.rand(4, 3, 32, 32).astype("float32") for _ in range(count)]


def model():
    paddle.seed(0)
    net = Net()
    net.eval()
    return net


def infer(prefix, x, mkldnn, int8):
    import paddle.inference as pi
    program = prefix + (".json" if os.path.exists(prefix + ".json") else ".pdmodel")
    config = pi.Config(program, prefix + ".pdiparams")
    config.disable_gpu()
    config.set_cpu_math_library_num_threads(threads)
    config.disable_glog_info()
    if mkldnn:
        config.enable_mkldnn()
        if int8:
            config.enable_mkldnn_int8()
    else:
        config.disable_mkldnn()
    predictor = pi.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(x.shape)
    handle.copy_from_cpu(x)
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    start = time.perf_counter()
    for _ in range(runs):
        handle.copy_from_cpu(x)
        predictor.run()
    return out, (time.perf_counter() - start) / runs * 1000


x = batches(7, 1)[0]
spec = [paddle.static.InputSpec([None, 3, 32, 32], "float32", "x")]
result = {"case": case, "pir": paddle.framework.use_pir_api()}
try:
    if case.startswith("export_float"):
        net = model()
        np.save(f"{work}/ref.npy", net(paddle.to_tensor(x)).numpy())
        paddle.jit.save(net, f"{work}/{case}/inference", input_spec=spec)
        result["files"] = sorted(os.listdir(f"{work}/{case}"))
    elif case.startswith("static_ptq_"):  # static PTQ of the exported float program (TIPC's quant_post_static)
        from paddle.static.quantization import PostTrainingQuantization
        algo, source = case.split("_", 2)[2].rsplit("_", 1)
        paddle.enable_static()
        exe = paddle.static.Executor(paddle.CPUPlace())
        src = f"{work}/export_float_{source}"
        ptq = PostTrainingQuantization(
            executor=exe, model_dir=src, model_filename=[f for f in os.listdir(src) if f.endswith((".json", ".pdmodel"))][0],
            params_filename="inference.pdiparams", data_loader=lambda: ({"x": b} for b in batches(1, 8)),
            batch_size=4, batch_nums=2, algo=algo, onnx_format=True)
        ptq.quantize()
        ptq.save_quantized_model(f"{work}/{case}", model_filename="inference.pdmodel", params_filename="inference.pdiparams")
        result["files"] = sorted(os.listdir(f"{work}/{case}"))
    elif case.startswith(("dygraph_ptq", "dygraph_qat")):
        from paddle.quantization import PTQ, QAT, QuantConfig
        from paddle.quantization.observers import AbsmaxObserver
        from paddle.quantization.quanters import FakeQuanterWithAbsMaxObserver
        net = model()
        if case.startswith("dygraph_ptq"):
            quant = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver()))
            qmodel = quant.quantize(net, inplace=False)
            for b in batches(1, 8):
                qmodel(paddle.to_tensor(b))
            qmodel = quant.convert(qmodel, inplace=False)
        else:  # a few QAT steps; the fake-quant model is exported as it is (no convert)
            fake = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
            quant = QAT(QuantConfig(activation=fake, weight=fake))
            net.train()
            qmodel = quant.quantize(net, inplace=False)
            opt = paddle.optimizer.SGD(0.001, parameters=qmodel.parameters())
            for b in batches(1, 5):
                qmodel(paddle.to_tensor(b)).mean().backward()
                opt.step()
                opt.clear_grad()
            qmodel.eval()
        np.save(f"{work}/ref_{case}.npy", qmodel(paddle.to_tensor(x)).numpy())
        result["dygraph_max_diff_to_float"] = float(np.abs(qmodel(paddle.to_tensor(x)).numpy() - np.load(f"{work}/ref.npy")).max())
        paddle.jit.save(qmodel, f"{work}/{case}/inference", input_spec=spec)
        result["files"] = sorted(os.listdir(f"{work}/{case}"))
    elif case.startswith("bert_"):  # a 2-layer paddlenlp BERT (finding 8): does it export int8-ready?
        from paddlenlp.transformers import BertConfig, BertForSequenceClassification
        paddle.seed(0)
        bert = BertForSequenceClassification(BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2,
                                                        num_attention_heads=2, intermediate_size=256, num_labels=2))
        bert.eval()
        ids = np.random.RandomState(0).randint(1, 1000, (8, 64))
        bert_spec = [paddle.static.InputSpec([8, 64], "int64", "input_ids"), paddle.static.InputSpec([8, 64], "int64", "token_type_ids")]
        if case == "bert_dygraph_ptq_pir":
            from paddle.quantization import PTQ, QuantConfig
            from paddle.quantization.observers import AbsmaxObserver
            quant = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver()))
            bert = quant.quantize(bert, inplace=False)
            bert(paddle.to_tensor(ids), paddle.to_tensor(np.zeros_like(ids)))
            bert = quant.convert(bert, inplace=False)
        paddle.jit.save(paddle.jit.to_static(bert, input_spec=bert_spec), f"{work}/{case}/inference")
        result["files"] = sorted(os.listdir(f"{work}/{case}"))
    elif case.startswith("infer:"):
        _, model_dir, mode = case.split(":")
        own = f"{work}/ref_{model_dir}.npy"  # QAT changed the weights: compare with its own dygraph output
        ref = np.load(own if model_dir.startswith("dygraph_qat") else f"{work}/ref.npy")
        out, ms = infer(f"{work}/{model_dir}/inference", x, mode != "plain", mode == "mkldnn_int8")
        result.update(max_diff=float(np.abs(out - ref).max()), top1_agree=float((out.argmax(1) == ref.argmax(1)).mean()),
                      ms=round(ms, 3), ref_abs_max=float(np.abs(ref).max()))
    result["ok"] = True
except Exception as exc:  # the probe reports every failure as a figure
    result.update(ok=False, error=f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else ''}")
print("RESULT " + json.dumps(result))
'''


def run_case(work: Path, case: str, pir: bool, threads: int, runs: int) -> dict:
    env = {**os.environ, "FLAGS_enable_pir_api": "1" if pir else "0", "GLOG_minloglevel": "2"}
    script = work / "case.py"  # a file, not `python -c`: dy2static reads the model's source
    if not script.exists():
        script.write_text(CASE)
    proc = subprocess.run([sys.executable, str(script), str(work), case, str(threads), str(runs)],
                          env=env, capture_output=True, text=True, timeout=600)
    line = next((line for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    if line is None:
        return {"case": case, "ok": False, "error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    return json.loads(line[len("RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--bert", action="store_true", help="also try a small paddlenlp BERT (needs paddlenlp)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plan = [("export_float_pir", True), ("export_float_legacy", False),
                ("static_ptq_KL_pir", True)]
        plan += [(f"static_ptq_{algo}_legacy", False) for algo in ("KL", "hist", "avg", "mse", "abs_max")]
        plan += [("dygraph_ptq_pir", True), ("dygraph_ptq_legacy", False), ("dygraph_qat_legacy", False)]
        if args.bert:
            plan += [("bert_float_legacy", False), ("bert_dygraph_ptq_pir", True)]
        made = []
        for case, pir in plan:
            results.append(run_case(work, case, pir, args.threads, args.runs))
            print(json.dumps(results[-1]), flush=True)
            if results[-1]["ok"]:
                made.append(case)
        for model_dir in (m for m in made if not m.startswith("bert_")):
            for mode in ("plain", "mkldnn", "mkldnn_int8"):
                results.append(run_case(work, f"infer:{model_dir}:{mode}", True, args.threads, args.runs))
                print(json.dumps(results[-1]), flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
