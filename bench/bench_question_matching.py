"""The question-matching sample's accuracy figure: LCQMC dev accuracy within a training budget,
R-Drop off and on, plus accuracy per perturbation kind on the project's robustness pairs.

    python bench/bench_question_matching.py [--data-dir ../shared/data/lcqmc] [--coefs 0.0 0.1]
        [--epochs 3] [--budget 300] [--out bench/results/question_matching.json]

For each --coefs value, with the same seed, data, model and budget: build_vocab.py on LCQMC
train.tsv, train.py (dev accuracy every --eval-step steps; training stops at --budget seconds
whatever the epochs), then eval.py on the best checkpoint for LCQMC dev and for
sample_models/question-matching/data/robustness.tsv (accuracy per kind). The machine's load
average is recorded before and after each run: on a shared machine the timings are pessimistic.
Nothing is downloaded; LCQMC is read in place (never copied).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_models" / "question-matching"
ROBUSTNESS = SAMPLE / "data" / "robustness.tsv"
ENV = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore")


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(args: list[str]) -> str:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def one(coef: float, a: argparse.Namespace, work: Path, vocab: Path) -> dict:
    save = work / f"rdrop_{coef:g}"
    load_before = loadavg()
    t0 = time.time()
    run([str(SAMPLE / "train.py"), "--device=cpu", f"--train_set={a.data_dir / 'train.tsv'}",
         f"--dev_set={a.data_dir / 'dev.tsv'}", f"--vocab_file={vocab}", f"--save_dir={save}",
         f"--epochs={a.epochs}", f"--train_batch_size={a.batch_size}", f"--eval_step={a.eval_step}",
         f"--learning_rate={a.learning_rate}", f"--max_seq_length={a.max_seq_length}", f"--rdrop_coef={coef}",
         f"--seed={a.seed}", f"--max_train_seconds={a.budget}", f"--dropout={a.dropout}", *a.train_args])
    wall = time.time() - t0
    load_after = loadavg()
    log = (save / "train.log").read_text(encoding="utf-8")
    done = re.search(r"train done: steps=(\d+), seconds=([\d.]+), best dev accuracy ([\d.]+) at step (\d+)", log)
    evals = [(int(s), float(x)) for s, x in re.findall(r"eval: global_step: (\d+), dev_accuracy: ([\d.]+)", log)]
    stop = re.search(r"stopped after \d+ steps: (.*)", log).group(1)
    dev_out = run([str(SAMPLE / "eval.py"), f"--init_from_ckpt={save / 'best_model'}", f"--dev_set={a.data_dir / 'dev.tsv'}"])
    rob_out = run([str(SAMPLE / "eval.py"), f"--init_from_ckpt={save / 'best_model'}", f"--dev_set={ROBUSTNESS}",
                   "--kinds_column=3"])
    per_kind = {k: float(v) for k, v in re.findall(r"^accuracy\[(\w+)\]: ([\d.]+)", rob_out, re.M)}
    return {
        "rdrop_coef": coef,
        "dev_accuracy": float(re.search(r"^accuracy: ([\d.]+)", dev_out, re.M).group(1)),
        "best_step": int(done.group(4)),
        "steps": int(done.group(1)),
        "train_seconds": float(done.group(2)),
        "train_wall_seconds": round(wall, 1),
        "stopped": stop,
        "evals": evals,
        "robustness_accuracy": float(re.search(r"^accuracy: ([\d.]+)", rob_out, re.M).group(1)),
        "robustness_per_kind": per_kind,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data" / "lcqmc")
    p.add_argument("--coefs", type=float, nargs="+", default=[0.0, 0.1])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--eval-step", type=int, default=100)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--max-seq-length", type=int, default=48)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--budget", type=float, default=300.0, help="training seconds at most (train.py --max_train_seconds)")
    p.add_argument("--train-arg", dest="train_args", action="append", default=[], help="one more train.py flag (repeatable)")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    a = p.parse_args()
    if not (a.data_dir / "train.tsv").is_file() or not (a.data_dir / "dev.tsv").is_file():
        p.error(f"--data-dir {a.data_dir}: needs LCQMC train.tsv and dev.tsv (see ../shared/data/lcqmc/README.md)")
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_qm_") as tmp:
        work = Path(tmp)
        vocab = work / "vocab.txt"
        run([str(SAMPLE / "build_vocab.py"), f"--input={a.data_dir / 'train.tsv'}", f"--output={vocab}"])
        for coef in a.coefs:
            r = one(coef, a, work, vocab)
            results.append(r)
            kinds = ", ".join(f"{k} {v:.3f}" for k, v in sorted(r["robustness_per_kind"].items()))
            print(f"rdrop_coef {coef:g}: LCQMC dev accuracy {r['dev_accuracy']:.4f} (best step {r['best_step']} of "
                  f"{r['steps']}, {r['train_seconds']:.0f} s training, {r['stopped']}); robustness "
                  f"{r['robustness_accuracy']:.3f} ({kinds}); load average {r['loadavg_before']} -> {r['loadavg_after']}",
                  flush=True)
    report = {"settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items() if k != "out"},
              "cpu_count": os.cpu_count(), "results": results}
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
