"""Run the whole bert-sst2 alignment example: both sides, the weight conversion, the five diff logs, the report.

    python sample_models/bert-sst2/align/run_all.py --out output/align

1. paddle_side.py --init-only -> init/ (vocab, config, a random-init checkpoint: the target), fake_data.npz
2. torch_side.py --init      -> init/torch_init.bin (the reference's random init, torch.save)
3. tipcgen align convert init/torch_init.bin --rules bert --check init/model_state.pdparams
                             -> init/model_state.pdparams (every key checked, Linear weights transposed)
4. paddle_side.py -> *_paddle.npy;  torch_side.py -> *_torch.npy
5. per checkpoint, tipcgen.align compares <stem>_torch.npy with <stem>_paddle.npy -> <stem>_diff.log
6. the report of the six checkpoints (the TIPC row comes from --root's last `tipcgen run`)

The two sides run as separate processes, so --paddle-python and --torch-python may name two environments.
Exit code 0 when the five compared checkpoints pass (a missing TIPC run does not count here).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2]))  # the repository root, for tipcgen when it is not installed

import align_common as ac  # noqa: E402

from tipcgen.repro import align
from tipcgen.repro import align_report  # noqa: E402


def run_side(python: str, script: str, args: list[str]) -> float:
    """Run one step as its own process (output passes through); its wall time in seconds."""
    start = time.time()
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parents[2]), env.get("PYTHONPATH")]))
    command = [python, "-m", "tipcgen", *args] if script == "tipcgen" else [python, str(HERE / script), *args]
    proc = subprocess.run(command, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{script} failed with exit code {proc.returncode}")
    return time.time() - start


def compare_all(out: Path) -> bool:
    """Compare each checkpoint's pair, write its <stem>_diff.log, print one line each; True if all pass."""
    ok = True
    for checkpoint in align_report.CHECKPOINTS:
        name = checkpoint.name
        result = align.compare_files(ac.file_of(str(out), name, "torch"), ac.file_of(str(out), name, "paddle"),
                                     "mean", checkpoint.threshold, allow_identical=checkpoint.allow_identical)
        log = align.write_log(result, out / f"{ac.STEMS[name]}_diff.log")
        verdict = "passed" if result.passed else "FAILED"
        print(f"{name:9} {verdict}: worst mean diff {result.worst:.3g}, max abs diff {result.max_abs:.3g} "
              f"(threshold {checkpoint.threshold:g}) -> {log}")
        for reason in result.failures + result.warnings:
            print(f"          {reason}")
        ok = ok and result.passed
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--out", default="output/align", help="the folder for every file (default output/align)")
    parser.add_argument("--paddle-python", default=sys.executable, help="the Python with paddle")
    parser.add_argument("--torch-python", default=sys.executable, help="the Python with torch + transformers")
    parser.add_argument("--root", default=".", help="the repository whose test_tipc/output has the TIPC run")
    parser.add_argument("--fresh", action="store_true", help="make a new random init even if OUT has one")
    args = parser.parse_args(argv)
    out = Path(args.out)
    init = out / ac.INIT_DIR
    if args.fresh and (init / "config.json").exists():
        (init / "config.json").unlink()
    seconds = {"init": run_side(args.paddle_python, "paddle_side.py", ["--out", str(out), "--init-only"])}
    seconds["init"] += run_side(args.torch_python, "torch_side.py", ["--out", str(out), "--init"])
    target = str(init / "model_state.pdparams")
    seconds["convert"] = run_side(args.paddle_python, "tipcgen", [
        "align", "convert", str(init / ac.TORCH_INIT), "--rules", "bert", "--check", target, "--output", target,
        "--force", "--map", str(init / ac.NAME_MAP)])
    seconds["paddle"] = run_side(args.paddle_python, "paddle_side.py", ["--out", str(out)])
    seconds["torch"] = run_side(args.torch_python, "torch_side.py", ["--out", str(out)])
    print("wall time: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
    ok = compare_all(out)
    report = align_report.build_report(out, align_report.resolve_thresholds(), Path(args.root))
    print(align_report.report_text(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
