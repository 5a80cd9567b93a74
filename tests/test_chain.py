"""The real bert-sst2 chain: Paddle training, export and inference on the lite data, through the
generated scripts, in real subprocesses, exactly as a reviewer runs them."""
from __future__ import annotations

import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT, read_records, tipcgen

pytest.importorskip("paddle")
pytestmark = [pytest.mark.paddle, pytest.mark.chain]

MODE = "lite_train_lite_infer"
# The chain's scripts run `python` from PATH: make it this interpreter (the one with paddle).
ENV = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="module")
def lite_run(tmp_path_factory) -> tuple[Path, object]:
    """`tipcgen init bert-sst2` in an empty folder, then `tipcgen run` there."""
    repo = tmp_path_factory.mktemp("repo")
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    proc = tipcgen("run", "--mode", MODE, cwd=repo, env=ENV)
    return repo, proc


def test_lite_chain_passes(lite_run):
    repo, proc = lite_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    records = read_records(repo, "bert_sst2", MODE)
    passed = [(r["kind"], r["name"]) for r in records if r["status"] == "passed"]
    assert [k for k, _ in passed][:3] == ["train", "eval", "export"]
    cpu_infer = [n for k, n in passed if k == "infer" and n.startswith("python_infer_cpu")]
    assert len(cpu_infer) >= 4
    assert {("usemkldnn_True" in n, "threads_2" in n) for n in cpu_infer} == {(a, b) for a in (True, False) for b in (True, False)}
    skipped = [r for r in records if r["status"] == "skipped"]
    assert skipped and all("CUDA device" in r["reason"] for r in skipped), "GPU cases are skipped, never passed"
    run_dir = repo / "test_tipc" / "output" / "bert_sst2" / MODE
    results = (run_dir / "results_python.log").read_text().splitlines()
    assert results and all(line.startswith("Run successfully with command - bert_sst2 - ") for line in results)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["ok"] and summary["failed"] == 0
    assert ET.parse(run_dir / "junit.xml").getroot().find("testsuite").get("failures") == "0"


def test_train_log_has_the_tipc_fields(lite_run):
    repo, _ = lite_run
    train_log = repo / "test_tipc/output/bert_sst2" / MODE / "norm_train_gpus_-1_autocast_fp32" / "train.log"
    text = train_log.read_text()
    for field in ("loss:", "avg_reader_cost:", "avg_batch_cost:", "avg_samples:", "avg_ips:"):
        assert field in text


def test_inference_prints_one_result_per_example(lite_run):
    repo, _ = lite_run
    run_dir = repo / "test_tipc/output/bert_sst2" / MODE
    log = next(run_dir.glob("python_infer_cpu_*usemkldnn_True_threads_1*.log")).read_text()
    rows = (repo / "train_data/bert_sst2/infer.tsv").read_text().splitlines()[1:]
    results = [line for line in log.splitlines() if line.startswith("sst2_")]
    assert len(results) == len(rows)
    assert "inference_time(ms)" in log  # the AutoLog-style benchmark block


def test_a_broken_step_fails_with_its_log_tail_and_the_rest_runs(tmp_path: Path):
    repo = tmp_path / "repo"
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    descriptor = repo / "sample_models/bert-sst2/tipc.yaml"
    text = descriptor.read_text()
    descriptor.write_text(text.replace("extra: {key: --data_file, value: ./train_data/bert_sst2/dev.tsv}",
                                       "extra: {key: --data_fil, value: ./train_data/bert_sst2/dev.tsv}"))
    tipcgen("init", str(descriptor), "--output", str(repo), "--force", check=True)
    proc = tipcgen("run", "--mode", MODE, cwd=repo, env=ENV)
    assert proc.returncode == 1
    records = read_records(repo, "bert_sst2", MODE)
    status = {r["kind"]: r["status"] for r in records if r["status"] != "skipped"}
    assert status == {"train": "passed", "eval": "failed", "export": "passed", "infer": "passed"}
    assert "--data_fil" in proc.stdout and "FAIL" in proc.stdout  # the failing log's tail is shown


def test_upstream_runner_semantics_pass(tmp_path: Path):
    """The CPU config and the sample scripts under upstream's rules (SPEC §2): fixed line numbers,
    values cut at a second ':', flags as key=value, train status taken from `cat <save_dir>/train.log`."""
    from upstream_runner import run_upstream

    repo = tmp_path / "repo"
    tipcgen("init", "bert-sst2", "--devices", "cpu", "--output", str(repo), check=True)
    prep = tipcgen("run", "--mode", MODE, cwd=repo, env=ENV)  # also prepares the data
    assert prep.returncode == 0, prep.stdout[-3000:]
    shutil.rmtree(repo / "test_tipc" / "output")
    lines = run_upstream(repo, "test_tipc/configs/bert_sst2/train_infer_python.txt", MODE, env=ENV)
    assert len(lines) >= 7, lines  # train, eval, export, 4 inference cases
    assert all(line.startswith("Run successfully with command - bert_sst2 - ") for line in lines), lines
