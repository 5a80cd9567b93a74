"""`tipcgen report`: a run folder → report.md / report.html with the timing and loss-curve PNGs.

A synthetic run folder (no paddle) checks what the documents say and how; the real bert-sst2 lite
chain (marked paddle + chain) checks the report of an actual run.
"""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from tipcgen.outputs import report
from tipcgen.results.summary import Step, Summary, write_json

from conftest import ROOT, fuzz_sample, tipcgen

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MODE = "lite_train_lite_infer"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of a valid PNG (signature and IHDR checked)."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR" and data.endswith(b"IEND\xaeB`\x82")
    return struct.unpack(">II", data[16:24])


def fake_run(root: Path, *, nan: bool = False) -> Path:
    """A run folder as `tipcgen run` leaves it: summary.json, a train.log, step logs (one with AutoLog lines)."""
    run_dir = root / "test_tipc" / "output" / "toy" / MODE
    train = "norm_train_gpus_-1_autocast_fp32"
    (run_dir / train).mkdir(parents=True)
    lines = [f"epoch: {e}, global_step: {e * 4}, loss: {0.7 - e * 0.05:.5f}, avg_reader_cost: 0.1 sec, "
             f"avg_batch_cost: 0.2 sec, avg_samples: 8.0, avg_ips: {100 + e}.0 sequences/sec" for e in range(1, 7)]
    if nan:
        lines.append("epoch: 7, global_step: 28, loss: nan, avg_ips: 107.0 sequences/sec")
    (run_dir / train / "train.log").write_text("setup line without the fields\n" + "\n".join(lines) + "\n")
    infer_log = run_dir / "python_infer_cpu_gpus_-1_usemkldnn_True_threads_1_precision_fp32_batchsize_1.log"
    infer_log.write_text("[2026] toy INFO:  paddle_version: 3.3.1\n[2026] toy INFO:  runtime_device: cpu\n"
                         "[2026] toy INFO:  OS_version: Debian 12\n")
    rel = lambda p: "./" + p.relative_to(root).as_posix()  # noqa: E731
    summary = Summary(model="toy", mode=MODE, config="test_tipc/configs/toy/train_infer_python.txt",
                      wall_seconds=12.5, environment={"python": "3.11.7", "platform": "Linux-test", "machine": "x86_64"})
    summary.steps = [
        Step("prepare", "prepare", "passed", 0, 0.2, command="bash test_tipc/prepare.sh c m"),
        Step.flat("train", "gpus_0", "skipped", reason="gpu_list entry '0' needs a CUDA device; none found", gpu="0"),
        Step.flat("train", train, "passed", 0, 4.0, log=rel(run_dir / (train + ".log")), command="python train.py --epochs=6",
             gpu="-1", trainer="norm_train", autocast="fp32", training="gpus_-1", device="cpu", use_gpu="cpu"),
        Step("eval", train + "_nodes_1_eval", "passed", 0, 2.0, command="python eval.py", metrics={"accuracy": 0.875}),
        Step("export", train + "_nodes_1_export", "failed", 1, 1.5, reason="exit code 1", command="python export.py",
             log="./export.log", tail=["Traceback (most recent call last):", "ValueError: <bad> | shape"]),
        Step("infer", infer_log.stem, "passed", 0, 1.0, log=rel(infer_log), command="python infer.py --use_gpu=False"),
        Step.flat("check", "golden_gpus_-1", "passed", 0, 0.1, command="python test_tipc/compare_results.py",
             check={"passed": True, "atol": 1e-3, "rtol": 1e-3, "max_abs": {"label": 0.0, "logits": 1.2e-7},
                    "max_rel": {"label": 0.0, "logits": 3.2e-7}, "failures": 0, "logs": 4}),
        Step("check", "infer_vs_dygraph_gpus_-1", "skipped", reason="no reference results"),
    ]
    write_json(summary, run_dir / "summary.json")
    return run_dir


def test_report_of_a_synthetic_run(tmp_path: Path):
    pytest.importorskip("matplotlib")
    run_dir = fake_run(tmp_path)
    built, paths = report.write(run_dir)
    names = sorted(p.name for p in paths)
    assert names == ["report-loss.png", "report-timing.png", "report.html", "report.md"]
    assert all(p.parent == run_dir for p in paths)  # default: next to summary.json
    for png in ("report-loss.png", "report-timing.png"):
        width, height = png_size(run_dir / png)
        assert width >= 800 and height >= 200 and (run_dir / png).stat().st_size > 10_000
    md = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text().replace("<wbr>", "")  # wrap points in names
    for step in built.summary.steps:
        assert step.name in md and step.name in html
    assert "**FAILED**" in md and ">FAILED<" in html
    assert "![Training loss](report-loss.png)" in md and "![Time per step" in md
    assert md.count("data:image/png") == 0 and html.count("data:image/png;base64,") == 2
    assert "<script" not in html.lower()
    assert "ValueError: &lt;bad&gt; | shape" in html and "<bad>" not in html  # escaped, not markup
    assert "| Paddle | 3.3.1 |" in md and "CPU (gpu_list -1); GPU cases skipped" in md
    assert "| `golden_gpus_-1` | PASS | logits | 1.2e-07 | 3.2e-07 | atol 0.001, rtol 0.001 |" in md
    assert "| `infer_vs_dygraph_gpus_-1` | SKIP |" in md
    assert "accuracy 0.8750" in md
    assert "6 values over global_step 4 to 24; loss 0.65 first, 0.4 last; last avg_ips 106" in md
    assert "bash test_tipc/test_train_inference_python.sh test_tipc/configs/toy/train_infer_python.txt " + MODE in md
    assert "python infer.py --use_gpu=False" in md and "python infer.py --use_gpu=False" in html
    assert "ValueError: <bad> | shape" in md  # the failed step's log tail, in a code block


def test_report_is_deterministic_and_writes_elsewhere_with_output(tmp_path: Path):
    run_dir = fake_run(tmp_path)
    out = tmp_path / "pr"
    report.write(run_dir, out, formats=("md",))
    first = (out / "report.md").read_bytes()
    report.write(run_dir, out, formats=("md",))
    assert (out / "report.md").read_bytes() == first
    assert not (out / "report.html").exists() and not (run_dir / "report.md").exists()


def test_a_non_finite_loss_is_a_note_and_the_curve_still_draws(tmp_path: Path):
    pytest.importorskip("matplotlib")
    built, _ = report.write(fake_run(tmp_path, nan=True))
    assert any("not finite at global_step 28" in note for note in built.notes)
    assert "not finite at global_step 28" in (built.run_dir / "report.md").read_text()


def test_parse_train_log_forms():
    curve = report.parse_train_log("step 1 loss: 0.5\nloss=0.25 on batch\nno loss here\n", "t", "t.log")
    assert curve.x_label == "logged loss line" and curve.points == [(1.0, 0.5), (2.0, 0.25)]
    curve = report.parse_train_log("iter: 10, loss: 1.5e-1, avg_ips: 3.0\niter: 20, loss: 0.1\n", "t", "t.log")
    assert curve.x_label == "iter" and curve.points == [(10.0, 0.15), (20.0, 0.1)] and curve.ips == 3.0
    assert report.parse_train_log("val_loss: 3\nglobal_loss_scale: 2\n", "t", "t.log").points == []


def test_paddles_dumps_in_a_static_training_log_are_not_loss_lines():
    # What paddle.jit logs under TRANSLATOR_VERBOSITY=1 (the dy2static chain): a converted function's source, whose
    # `loss = 0.5 * x` is code, and a program block; the training's own lines around them are read.
    dumps = (ROOT / "tests" / "fixtures" / "dy2static_logs" / "to_static_pir.log").read_text()
    log = ("global_step: 1, loss: 0.9\nSun Dec 06 10:38:59 Dynamic-to-Static INFO: (Level 1) Source code: \n"
           "def forward(self, x):\n    loss = 0.5 * x\n\n    return loss\n" + dumps + "global_step: 2, loss: 0.8\n")
    assert report.parse_train_log(log, "t", "t.log").points == [(1.0, 0.9), (2.0, 0.8)]


def test_alignment_json_becomes_a_table(tmp_path: Path):
    run_dir = fake_run(tmp_path)
    rows = [{"checkpoint": "forward", "status": "pass", "worst": 1e-8, "threshold": 1e-6, "detail": "mean abs diff"},
            {"checkpoint": "tipc", "status": "fail", "worst": None, "threshold": None, "detail": "1 failed"}]
    (run_dir / "align_report.json").write_text(json.dumps(
        {"folder": "output/align", "passed": False, "pass": 1, "fail": 1, "missing": 0, "rows": rows}))
    report.write(run_dir, formats=("md",))
    md = (run_dir / "report.md").read_text()
    assert "## Alignment" in md and "| forward | PASS | 1e-08 | 1e-06 | mean abs diff |" in md
    assert "| tipc | FAIL | - | - | 1 failed |" in md


def test_cli_finds_the_newest_run_and_reports_bad_input(tmp_path: Path):
    fake_run(tmp_path)
    proc = tipcgen("report", "--root", str(tmp_path), "--format", "html")
    assert proc.returncode == 0, proc.stderr
    assert "report.html" in proc.stdout and "toy / lite_train_lite_infer: FAILED" in proc.stdout
    assert (tmp_path / "test_tipc/output/toy" / MODE / "report.html").is_file()
    proc = tipcgen("report", "--root", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and "nothing: no such folder" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = tipcgen("report", "--root", str(tmp_path / "empty"))
    assert proc.returncode == 2 and "tipcgen run" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- a real run

@pytest.mark.paddle
@pytest.mark.chain
def test_report_of_a_real_bert_sst2_run(sample_lite_run: Path):
    pytest.importorskip("matplotlib")
    proc = tipcgen("report", cwd=sample_lite_run, check=True)  # the session's lite run (conftest.py)
    run_dir = sample_lite_run / "test_tipc/output/bert_sst2" / MODE
    assert "bert_sst2 / lite_train_lite_infer: PASSED" in proc.stdout
    for png in ("report-loss.png", "report-timing.png"):
        png_size(run_dir / png)
        assert (run_dir / png).stat().st_size > 10_000
    md = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text().replace("<wbr>", "")  # wrap points in names
    summary = json.loads((run_dir / "summary.json").read_text())
    for step in summary["steps"]:
        assert step["name"] in md and step["name"] in html
    checks = [s["name"] for s in summary["steps"] if s["kind"] == "check"]
    assert {"infer_vs_dygraph_gpus_-1", "golden_gpus_-1", "fixed_inputs_gpus_-1"} <= set(checks)
    for name in ("infer_vs_dygraph_gpus_-1", "golden_gpus_-1"):  # the results infer.py prints
        assert re.search(rf"\| `{re.escape(name)}` \| PASS \| logits \| ", md)
    # The chain's own check names the exported program's output (jit.save calls it fetch_name_0).
    assert re.search(r"\| `fixed_inputs_gpus_-1` \| PASS \| fetch_name_0 \| ", md)
    assert re.search(r"\| Paddle \| 3\.\d+\.\d+", md)
    assert "10 values over global_step" in md  # 10 epochs of the lite data, one loss line each
    assert "bash test_tipc/prepare.sh test_tipc/configs/bert_sst2/train_infer_python.txt " + MODE in md


def test_a_step_counter_that_restarts_every_epoch_is_plotted_over_global_steps():
    log = "".join(f"epoch: {e}, step: {s}, loss: {1 - (e * 3 + s) / 10:.2f}\n" for e in range(3) for s in range(3))
    curve = report.parse_train_log(log, "t", "t.log")
    assert curve.x_label == "global step" and curve.restarts == 2
    assert [x for x, _ in curve.points] == [float(i) for i in range(9)], "one line, never back"
    by_ten = report.parse_train_log("step: 10, loss: 1\nstep: 20, loss: 1\nstep: 10, loss: 1\n", "t", "t.log")
    assert [x for x, _ in by_ten.points] == [10.0, 20.0, 30.0]


def test_paddle_from_the_environment_and_cpu_processes_shown_as_cpu(tmp_path: Path):
    run_dir = fake_run(tmp_path)
    (run_dir / "python_infer_cpu_gpus_-1_usemkldnn_True_threads_1_precision_fp32_batchsize_1.log").write_text("")
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["provenance"] = {"versions": {"paddle": "3.3.1"}}
    summary["steps"].insert(2, {**summary["steps"][2], "name": "norm_train_gpus_0,1_autocast_fp32", "gpu": "0,1",
                                "training": "gpus_0,1", "note": "ran on CPU: 2 processes over gloo (no CUDA device for gpu_list entry 0,1)"})
    (run_dir / "summary.json").write_text(json.dumps(summary))
    rows = dict(report.build(run_dir, tmp_path).environment)
    assert rows["Paddle"] == "3.3.1", "no AutoLog block: the version comes from the environment"
    assert rows["device"].startswith("CPU, 2 processes (gpu_list 0,1, no CUDA device), CPU (gpu_list -1)"), rows["device"]
    assert "GPU 0,1" not in rows["device"]


def test_every_picture_keeps_all_its_text_inside_and_clear_of_its_axes(tmp_path: Path):
    """The pictures are laid out in one pass from their own text (outputs/plot_layout.py), not by
    constrained layout: over generated reports (1 to 40 steps, names from 1 to 200 characters, '$' and
    newlines in model names, loss curves from 1e-9 to 1e9, speed rows), everything the drawn figure shows lies
    inside the picture (its bars' value labels too), the y tick labels end left of the axes, and the axes keep a height of their own."""
    pytest.importorskip("matplotlib")
    import random

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from tipcgen.outputs import report_bench
    from tipcgen.outputs.report_logs import TrainCurve

    built = report.build(fake_run(tmp_path))
    letters = "abcdefghijklmnopqrstuvwxyz_-0123456789$ /ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    cases, label = fuzz_sample(list(range(16)))  # each case draws three pictures and measures them: ~0.3 s
    for case in cases:
        rng = random.Random(case)
        n = rng.choice([1, 2, 5, 40])
        built.rows = [report.Row(number=i + 1, status=rng.choice(["PASS", "FAIL"]), kind="train",
                                 name="".join(rng.choice(letters) for _ in range(rng.choice([1, 30, 200]))),
                                 seconds=f"{rng.uniform(0, 10 ** rng.randint(0, 4)):.1f}", detail="", command="", log="")
                      for i in range(n)]
        built.summary.model = rng.choice(["m", "model$with$dollars", "two\nlines", "x" * 120])
        scale = 10.0 ** rng.randint(-9, 9)
        built.curves = [TrainCurve(step="t" * rng.choice([1, 90]), source="l", x_label="global_step",
                                   points=[(i, scale * rng.random()) for i in range(rng.choice([1, 3, 50]))])]
        speeds = [report_bench.SpeedRow(case="c", device_num="N1C1", fp_item="fp32", batch_size=str(b),
                                        ips=rng.uniform(0.1, 1e6), unit="samples/s", records="", peak_memory="",
                                        note="") for b in range(rng.choice([1, 6]))]
        figures = [report._timing_figure(Figure, built), report._loss_figure(Figure, built),
                   report_bench.ips_figure(Figure, speeds, built.summary)]
        for fig in figures:
            renderer = FigureCanvasAgg(fig).get_renderer()
            fig.draw(renderer)
            ax = fig.axes[0]
            drawn = fig.get_tightbbox(renderer)  # inches: every artist drawn, text included, ticks past the limits not
            width, height = fig.get_size_inches()
            where = f"case {case}: the drawn picture spans {drawn}, the figure is {width} x {height} in"
            assert drawn.x0 >= -0.02 and drawn.y0 >= -0.02 and drawn.x1 <= width + 0.02 and drawn.y1 <= height + 0.02, \
                f"{where} ({label})"
            for tick in ax.get_yticklabels():
                if tick.get_text():
                    assert tick.get_window_extent(renderer).x1 <= ax.bbox.x0, f"case {case}: {tick.get_text()[:40]!r}"
            assert ax.bbox.height > 0.05 * fig.bbox.height, f"case {case}: the axes were squeezed to {ax.bbox}"
