"""The benchmark_train chain: the descriptor's benchmark section, the generated analysis, a real run.

The speed JSONs are checked against upstream's rules, written here independently of the
generated test_tipc/benchmark_analysis.py:
- PaddlePaddle/benchmark scripts/analysis.py, TimeAnalyzer._distil / get_iteration_cost: a value is
  the word after a word equal to the keyword (`ips:`) on a line split at whitespace; `mean(values[2:])`
  (PaddleOCR test_tipc/benchmark_train.sh passes --keyword ips: --skip_steps 2);
- the same script's JOB_FAIL_FLAG: a job fails when `int(ips) == 0` (no value left after skipping);
- the speed JSON keys (PaddleOCR benchmark_train.sh → analysis.py --speed_log_file; SPEC §4).
"""
from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tipcgen.descriptor import benchmark
from tipcgen.results import speeds
from tipcgen import descriptor
from tipcgen.render import repository
from tipcgen.outputs import report_bench
from tipcgen.results.summary import load_summary
from tipcgen.core.errors import DescriptorError

from conftest import ROOT, chain_env, make_stub_repo, tipcgen

SAMPLE = ROOT / "sample_models" / "bert-sst2" / "tipc.yaml"
ANALYSIS = ROOT / "test_tipc" / "benchmark_analysis.py"
RUN = Path("test_tipc/output/bert_sst2/benchmark_train/benchmark_train")


def upstream_ips(log: Path, keyword: str = "ips:", skip_steps: int = 2) -> tuple[float, int]:
    """(mean of the values after the first skip_steps, number of values) by upstream's rules."""
    values = []
    for line in log.read_text(errors="replace").splitlines():
        if keyword not in line:
            continue
        words = line.strip().split()
        for i in range(len(words) - 1):
            if words[i] == keyword:
                values.append(float(words[i + 1]))
    kept = values[skip_steps:]
    return (sum(kept) / len(kept) if kept else 0.0), len(values)


def load(text: str):
    return descriptor.load_text(text, source="t.yaml")


def test_sample_section_renders_upstream_order():
    text = repository.render_config(descriptor.load("bert-sst2"))
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "=train_benchmark_params=" in line)
    # upstream's benchmark_train.sh reads the five lines after the header by position
    assert [line.split(":", 1)[0] for line in lines[start + 1:start + 6]] == [
        "batch_size", "fp_items", "epoch", "--profiler_options", "flags"]
    assert lines[start + 1:start + 4] == ["batch_size:8", "fp_items:fp32|fp16", "epoch:4"]
    assert lines[start + 6] == "device_num:N1C1|N1C2"


@pytest.mark.parametrize("edit, field, words", [
    # A list's wrong item is named by its index, found by the model's JSON Schema (descriptor/structure.py).
    ("  batch_size: [8]", "benchmark.batch_size[0]", "expected a whole number from 1 to 999999, found the number 0"),
    ("  fp_items: [fp32, bf16]", "benchmark.fp_items[1]", "expected fp32 or fp16, found the text 'bf16'"),
    ("  device_num: [N1C1, 2]", "benchmark.device_num[1]", "found the number 2"),
    ("  device_num: " + "x" * 5000, "benchmark.device_num", "found a text of 5000 characters"),
    ("  flags: {FLAGS_x: '1;rm -rf /'}", "benchmark.flags.FLAGS_x", "not NAME=VALUE"),
    ("  epochs: 4", "benchmark.epochs", "unknown field"),
])
def test_section_mistakes_name_the_field(edit, field, words):
    text = SAMPLE.read_text()
    if edit.startswith("  batch_size"):
        text = text.replace("  batch_size: [8]\n", "  batch_size: [0]\n")
    elif "fp_items" in edit:
        text = text.replace("  fp_items: [fp32, fp16]", edit)
    elif "device_num" in edit:
        text = text.replace("  device_num: [N1C1, N1C2]", edit)
    else:
        text = text.replace("  epoch: 4 ", edit + "\n  epoch: 4 ")
    with pytest.raises(DescriptorError) as info:
        load(text)
    message = str(info.value)
    assert f": {field}:" in message and words in message, message


def test_a_bad_section_is_one_message_exit_2(tmp_path: Path):
    bad = tmp_path / "tipc.yaml"
    bad.write_text(SAMPLE.read_text().replace("  epoch: 4 ", "  epoch: four "))
    proc = tipcgen("init", str(bad), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2 and "benchmark.epoch" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "test_tipc").exists()


def _analyse(tmp_path: Path, log_text: str) -> tuple[subprocess.CompletedProcess, dict]:
    log, speed, memory = tmp_path / "train_log", tmp_path / "speed", tmp_path / "memory.json"
    log.write_text(log_text)
    memory.write_text(json.dumps({"seconds": 3.5, "peak_rss_mb": 123.4}))
    proc = subprocess.run([sys.executable, str(ANALYSIS), "analyse", "--filename", str(log), "--speed_log_file",
                           str(speed), "--memory_file", str(memory), "--model_name", "m_bs8_fp32_DP",
                           "--base_batch_size", "8", "--fp_item", "fp32", "--device_num", "N1C2"],
                          capture_output=True, text=True, timeout=60)
    return proc, json.loads(speed.read_text())


def test_analysis_follows_upstream_rules(tmp_path: Path):
    # avg_ips: is another word, never an ips: value; the first two values are skipped
    lines = [f"step: {i}, loss: 0.{i}5, avg_ips: 999.0 samples/sec, ips: {v} samples/sec"
             for i, v in enumerate([1.0, 2.0, 10.0, 20.0, 33.0])]
    proc, data = _analyse(tmp_path, "\n".join(lines) + "\nmax_mem_reserved: 512.5 MB\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected, count = upstream_ips(tmp_path / "train_log")
    assert count == 5 and data["ips"] == pytest.approx(expected, abs=1e-3) == 21.0
    assert tuple(k for k in data if k in benchmark.UPSTREAM_KEYS) == benchmark.UPSTREAM_KEYS
    assert data["convergence_value"] == 0.45 and data["device_num"] == "N1C2" and data["model_run_time"] == 3.5
    assert (data["peak_memory_mb"], data["peak_memory_kind"]) == (512.5, "gpu_reserved")


def test_analysis_fails_a_job_with_no_value_after_skipping(tmp_path: Path):
    proc, data = _analyse(tmp_path, "loss: 0.5, ips: 10.0 samples/sec\nloss: 0.4, ips: 11.0 samples/sec\n")
    assert proc.returncode == 1 and "JOB_FAIL_FLAG" in proc.stdout
    assert data["ips"] == 0 and data["peak_memory_kind"] == "rss" and data["peak_memory_mb"] == 123.4


def test_no_section_no_benchmark_script(stub_repo: Path):
    proc = tipcgen("run", "--chain", "benchmark_train", cwd=stub_repo)
    assert proc.returncode == 2 and "no benchmark section" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory) -> Path:
    """The sample's benchmark_train chain on this machine (CPU in CI), once for the module."""
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("bench_run")
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    proc = tipcgen("run", "--chain", "benchmark_train", "--quiet", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    (repo / "run_stdout.txt").write_text(proc.stdout)
    return repo


@pytest.mark.paddle
@pytest.mark.chain
def test_speed_jsons_pass_upstream_rules(bench_run: Path):
    run = bench_run / RUN
    by_device = {data["device_num"]: data for data in speeds.read_speeds(run)}
    assert set(by_device) >= {"N1C1", "N1C2"}, sorted(by_device)
    summary = json.loads((run / "summary.json").read_text())
    cpu = not any(s["kind"] == "train" and "CUDA" in s["note"] for s in summary["steps"])
    for device_num, data in by_device.items():
        assert tuple(k for k in data if k in benchmark.UPSTREAM_KEYS) == benchmark.UPSTREAM_KEYS
        case = data["file"].removesuffix("_speed")
        log = run / "train_log" / f"{case}_log"
        workerlog = run / case / "log" / "workerlog.0"
        expected, count = upstream_ips(workerlog if workerlog.is_file() else log)
        assert count > 2, f"{case}: {count} ips: values, upstream skips the first 2"
        assert data["ips"] == pytest.approx(expected, abs=1e-3) and int(data["ips"]) != 0  # JOB_FAIL_FLAG stays 0
        assert data["peak_memory_mb"] > 0 and data["batch_size"] == 8 and data["fp_item"] == "fp32"
        assert data["frame_version"] == importlib.metadata.version("paddlepaddle") and len(data["frame_commit"]) == 40
    # summary.json and the terminal summary carry each case's figures
    by_name = {s["name"]: s for s in summary["steps"] if s["kind"] == "speed"}
    shown = (bench_run / "run_stdout.txt").read_text()
    for data in by_device.values():
        name = data["file"]
        assert by_name[name]["status"] == "passed" and by_name[name]["speed"]["ips"] == data["ips"]
        assert f"ips {data['ips']:g} samples/s, peak memory {data['peak_memory_mb']:g} MB" in shown
    if cpu:
        note = next(s["note"] for s in summary["steps"] if s["kind"] == "train" and s["name"].endswith("N1C2"))
        assert "2 processes over gloo on 127.0.0.1 stand for 2 devices" in note
        skipped = [s for s in summary["steps"] if s["status"] == "skipped"]
        assert {s["name"].split("_")[-3] for s in skipped} == {"fp16"}
        assert all("AMP has no effect on CPU" in s["reason"] for s in skipped)
        assert not any(d["fp_item"] == "fp16" for d in by_device.values())


@pytest.mark.paddle
@pytest.mark.chain
def test_report_charts_ips_per_case(bench_run: Path):
    proc = tipcgen("report", str(RUN), "--format", "md", cwd=bench_run)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    md = (bench_run / RUN / "report.md").read_text()
    assert "## Training speed (benchmark_train)" in md and "![ips per case](report-ips.png)" in md
    section = md.split("## Training speed (benchmark_train)", 1)[1].split("\n## ", 1)[0]
    for data in speeds.read_speeds(bench_run / RUN):
        row = next(line for line in section.splitlines() if data["file"].removesuffix("_speed") in line)
        assert f"{data['ips']:g} samples/s" in row and data["device_num"] in row
    assert (bench_run / RUN / "report-ips.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_imported_section_gets_the_script_and_both_at_once_are_refused(tmp_path: Path):
    imported = tmp_path / "tipc.yaml"
    tipcgen("import", str(ROOT / "test_tipc/configs/bert_sst2/train_infer_python.txt"), "-o", str(imported), check=True)
    desc = descriptor.load(str(imported))
    assert desc.benchmark is None and any(name == benchmark.SECTION for name, _ in desc.sections)
    files = repository.render_files(desc)
    assert "test_tipc/benchmark_train.sh" in files and "test_tipc/benchmark_analysis.py" in files
    both = imported.read_text() + "benchmark: {batch_size: [8]}\n"
    with pytest.raises(DescriptorError) as info:
        load(both)
    assert ": benchmark:" in str(info.value) and "keep one" in info.value.hint


def test_a_train_that_logs_no_ips_is_failed(tmp_path: Path):
    """The stub trains without logging ips: values: its case must fail (upstream's JOB_FAIL_FLAG), never pass."""
    repo = tmp_path / "repo"
    make_stub_repo(repo, init=False)
    desc = repo / "stub" / "tipc.yaml"
    desc.write_text(desc.read_text() + "benchmark: {batch_size: [8], fp_items: [fp32, fp16], epoch: 3, device_num: [N1C1]}\n")
    tipcgen("init", str(desc), "--output", str(repo), check=True)
    argv = tmp_path / "argv.jsonl"
    proc = tipcgen("run", "--chain", "benchmark_train", "--quiet", cwd=repo, env={"STUB_ARGV": str(argv),
                                                                                   "TIPC_GPU_COUNT": "0"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    run_dir = next(repo.glob("test_tipc/output/*/benchmark_train/benchmark_train/summary.json")).parent
    summary = json.loads((run_dir / "summary.json").read_text())
    steps = {s["kind"]: s for s in summary["steps"] if s["status"] != "skipped"}
    # The fp16 case is skipped on a CPU machine; its record says which case (no reader parses its name).
    fp16 = next(s for s in summary["steps"] if s["status"] == "skipped")
    assert (fp16["precision"], fp16["batch_size"], fp16["device_num"]) == ("fp16", "8", "N1C1"), fp16
    assert (steps["train"]["device"], steps["train"]["precision"], steps["train"]["autocast"]) == ("cpu", "fp32", "fp32")
    row = next(r for r in report_bench.speed_rows(load_summary(run_dir / "summary.json"), run_dir) if r.ips is None)
    assert (row.fp_item, row.batch_size, row.device_num) == ("fp16", "8", "N1C1")
    assert steps["train"]["status"] == "passed" and steps["speed"]["status"] == "failed"
    assert any("JOB_FAIL_FLAG" in line for line in steps["speed"]["tail"]) and not summary["ok"]
    calls = [json.loads(line) for line in argv.read_text().splitlines()]
    assert [c[0] for c in calls] == ["train"]  # upstream's benchmark runs no eval, export or inference
    assert {"--batch_size=8", "--epochs=3", "--auto_cast=fp32"} <= set(calls[0][1:])


def test_one_case_by_upstream_name_and_a_bad_name_refused(stub_repo: Path, tmp_path: Path):
    desc = stub_repo / "stub" / "tipc.yaml"
    desc.write_text(desc.read_text() + "benchmark: {batch_size: [8, 16], epoch: 2}\n")
    tipcgen("init", str(desc), "--output", str(stub_repo), "--force", check=True)
    config = next(stub_repo.glob("test_tipc/configs/*/train_infer_python.txt")).relative_to(stub_repo)
    argv = tmp_path / "argv.jsonl"

    def script(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "test_tipc/benchmark_train.sh", str(config), *args], cwd=stub_repo,
                              env=chain_env(STUB_ARGV=str(argv)), capture_output=True, text=True, timeout=120)

    proc = script("benchmark_train", "norm_bs16_fp32_DP_N1C1")
    calls = [json.loads(line) for line in argv.read_text().splitlines()]
    assert len(calls) == 1 and "--batch_size=16" in calls[0], proc.stdout + proc.stderr
    assert proc.returncode == 1  # the stub logs no ips: values
    for args, words in ((("benchmark_train", "bs16_fp32"), "is not <type>_bs<N>"),
                        (("lite_train_lite_infer",), "unknown mode")):
        proc = script(*args)
        assert proc.returncode == 2 and words in proc.stderr and "hint:" in proc.stderr, proc.stderr


def test_profiler_options_add_a_profiling_run_per_single_device_case(stub_repo: Path, tmp_path: Path):
    desc = stub_repo / "stub" / "tipc.yaml"
    desc.write_text(desc.read_text() + "benchmark: {batch_size: [8], fp_items: [fp32], device_num: [N1C1],\n"
                    "            profiler_options: 'batch_range=[10,20];state=CPU'}\n")
    tipcgen("init", str(desc), "--output", str(stub_repo), "--force", check=True)
    argv = tmp_path / "argv.jsonl"
    tipcgen("run", "--chain", "benchmark_train", "--quiet", cwd=stub_repo, env={"STUB_ARGV": str(argv)})
    calls = [json.loads(line) for line in argv.read_text().splitlines()]
    assert len(calls) == 2 and "--profiler_options=batch_range=[10,20];state=CPU" in calls[0]
    assert not any(arg.startswith("--profiler_options") for arg in calls[1])
