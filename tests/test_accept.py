"""`tipcgen accept`: the acceptance checklist on a repository and its last run; AutoLog speed figures;
the docs' support table from a run.

A toy tutorial-layout project (tests/fixtures/accept_project: pure-Python scripts, a real chain in
about 2 s) passes, and copies of it missing one item each fail naming that item; the bert-sst2 sample
passes after its real lite chain (marked paddle + chain).
"""
from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tipcgen.outputs import accept
from tipcgen.outputs import accept_repo
from tipcgen.results import autolog
from tipcgen.outputs import report
from tipcgen.outputs import support_table
from tipcgen.results.summary import Step, Summary
from tipcgen.format import paths

from conftest import ROOT, edit, read_summary, tipcgen

TOY = ROOT / "tests" / "fixtures" / "accept_project"
MODE = "lite_train_lite_infer"
SAMPLE = ROOT / "sample_models" / "bert-sst2"

# ---------------------------------------------------------------- AutoLog

AUTOLOG_BLOCK = """\
[2026-11-30 11:50:56] det INFO: ---------------------- Env info ----------------------
[2026-11-30 11:50:56] det INFO:  OS_version: Ubuntu 20.04
[2026-11-30 11:50:56] det INFO: ----------------------- Conf info -----------------------
[2026-11-30 11:50:56] det INFO:  runtime_device: gpu
[2026-11-30 11:50:56] det INFO:  enable_tensorrt: False
[2026-11-30 11:50:56] det INFO: ----------------------- Model info ----------------------
[2026-11-30 11:50:56] det INFO:  model_name: det
[2026-11-30 11:50:56] det INFO:  precision: fp32
[2026-11-30 11:50:56] det INFO: ----------------------- Data info -----------------------
[2026-11-30 11:50:56] det INFO:  batch_size: 1
[2026-11-30 11:50:56] det INFO:  data_num: 50
[2026-11-30 11:50:56] det INFO: ----------------------- Perf info -----------------------
[2026-11-30 11:50:56] det INFO:  cpu_rss(MB): 315.2656, gpu_rss(MB): 8842.0, gpu_util: 0.0%
[2026-11-30 11:50:56] det INFO:  total time spent(s): 4.2386
[2026-11-30 11:50:56] det INFO:  preprocess_time(ms): 33.7887, inference_time(ms): 50.7443, postprocess_time(ms): 0.2391
"""


def test_autolog_block_is_read_by_key():
    speed = autolog.read_block(("result line: 1, loss: 3\n" + AUTOLOG_BLOCK).splitlines())
    assert speed == {"device": "gpu", "tensorrt": "False", "model_name": "det", "precision": "fp32", "batch_size": 1.0,
                     "data_num": 50.0, "cpu_rss_mb": 315.2656, "gpu_rss_mb": 8842.0, "gpu_util_percent": 0.0,
                     "total_s": 4.2386, "preprocess_ms": 33.7887, "inference_ms": 50.7443, "postprocess_ms": 0.2391}


def test_autolog_variants_and_absence():
    cpp = ["----------------------- Perf info ------------------------",
           "preproce_time(ms): 1.5, inference_time(ms): nan, postprocess_time(ms): 0.5"]
    assert autolog.read_block(cpp) == {}, "no inference time (nan is no figure): no block"
    cpp[1] = cpp[1].replace("nan", "7.25")
    assert autolog.read_block(cpp) == {"preprocess_ms": 1.5, "inference_ms": 7.25, "postprocess_ms": 0.5}
    assert autolog.read_block(["inference_time(ms): 3.0", "cpu_rss(MB): 3"]) == {}, "no section rule: not AutoLog"
    renamed = AUTOLOG_BLOCK.replace("Perf info", "Perf")
    assert autolog.read_block(renamed.splitlines()) == {}, "times outside a Perf info section are not AutoLog's"
    assert autolog.read_block([]) == {}
    two = AUTOLOG_BLOCK + AUTOLOG_BLOCK.replace("50.7443", "9.5")
    assert autolog.read_block(two.splitlines())["inference_ms"] == 9.5, "the last block counts"


# ---------------------------------------------------------------- lite_data archives (headers only)

def _tar(path: Path, members: list[tuple[str, bytes | None, str | None]], gz: bool = True) -> Path:
    with tarfile.open(path, "w:gz" if gz else "w") as tar:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def test_lite_data_archive_accepts_gzip_behind_dot_tar_and_zip(tmp_path: Path):
    _tar(tmp_path / "lite_data.tar", [("lite_data", None, None), ("lite_data/a.tsv", b"1\tx\n", None)])  # tar -zcf
    item = accept_repo.check_lite_data(tmp_path)
    assert item.passed and item.where == "lite_data.tar", item
    (tmp_path / "model").mkdir()
    _tar(tmp_path / "model" / "lite_data.tgz", [("lite_data/b.tsv", b"0\ty\n", None)])
    assert accept_repo.check_lite_data(tmp_path).where == "lite_data.tar", "nearest the root first"
    assert accept_repo.check_lite_data(tmp_path, [tmp_path / "model"]).where == "model/lite_data.tgz", "beside the scripts first"
    (tmp_path / "model" / "lite_data.tgz").unlink()
    (tmp_path / "lite_data.tar").unlink()
    (tmp_path / "data").mkdir()
    with zipfile.ZipFile(tmp_path / "data" / "lite_data.zip", "w") as z:
        z.writestr("lite_data/a.tsv", "1\tx\n")
    assert accept_repo.check_lite_data(tmp_path).passed


@pytest.mark.parametrize("members, named", [
    ([("lite_data/a.tsv", b"x", None), ("../evil.sh", b"rm", None)], "../evil.sh"),
    ([("lite_data/a.tsv", b"x", None), ("/etc/cron.d/x", b"x", None)], "/etc/cron.d/x"),
    ([("lite_data/a.tsv", b"x", None), ("lite_data/link", None, "/etc/passwd")], "lite_data/link"),
    ([("lite_data/../../x", b"x", None)], "lite_data/../../x"),
    ([("data/a.tsv", b"x", None)], "outside lite_data/: data/a.tsv"),
    ([("lite_data", None, None)], "no file under lite_data/"),
])
def test_unsafe_or_misplaced_members_fail_naming_them(tmp_path: Path, members, named):
    _tar(tmp_path / "lite_data.tar.gz", members)
    item = accept_repo.check_lite_data(tmp_path)
    assert not item.passed and named in item.detail, item
    assert not (tmp_path / "lite_data").exists() and not (tmp_path.parent / "evil.sh").exists(), "never extracted"


def test_a_file_that_is_no_archive_fails(tmp_path: Path):
    (tmp_path / "lite_data.tar").write_text("not an archive")
    item = accept_repo.check_lite_data(tmp_path)
    assert not item.passed and "not a readable archive" in item.detail


def test_the_sample_archive_holds_exactly_the_lite_data():
    with tarfile.open(SAMPLE / "lite_data.tar.gz", "r:*") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert files == {"lite_data/train.tsv": (SAMPLE / "data/lite_train.tsv").read_bytes(),
                     "lite_data/dev.tsv": (SAMPLE / "data/lite_dev.tsv").read_bytes()}


# ---------------------------------------------------------------- the support table

def _summary() -> Summary:
    s = Summary(model="m", mode=MODE, config="c")
    # Fields as the runner records them (the names are upstream's; nothing reads them).
    cpu = {"device": "cpu", "use_gpu": "False", "training": "gpus_-1", "gpu": "-1", "batch_size": "4", "precision": "fp32"}
    s.steps = [Step.flat("train", "gpus_0", "skipped", reason="needs a CUDA device", gpu="0"),
               Step.flat("train", "norm_train_gpus_-1_autocast_fp32", "passed", gpu="-1", trainer="norm_train", device="cpu"),
               Step.flat("train", "norm_train_gpus_0,1_autocast_fp32", "failed", gpu="0,1", trainer="norm_train", device="gpu"),
               Step.flat("train", "norm_train_gpus_2,3_autocast_fp32", "passed", gpu="2,3", trainer="norm_train", device="cpu",
                    note="ran on CPU: 2 processes over gloo (no CUDA device for gpu_list entry 2,3)"),
               Step.flat("infer", "python_infer_gpu_gpus_0_usetrt_True_precision_fp16_batchsize_1", "passed", gpu="0",
                    device="gpu", use_gpu="True", use_trt="True", precision="fp16", batch_size="1"),
               Step.flat("infer", "python_infer_cpu_gpus_-1_usemkldnn_True_threads_2_precision_fp32_batchsize_4", "passed",
                    mkldnn="True", threads="2", **cpu),
               Step.flat("infer", "python_infer_cpu_gpus_-1_usemkldnn_False_threads_1_precision_fp32_batchsize_4", "passed",
                    mkldnn="False", threads="1", **cpu)]
    return s


def test_support_table_says_only_what_passed_and_replaces_itself():
    table = support_table.build(_summary(), "test_tipc/output/m/" + MODE)
    assert table.single == ["正常训练 (CPU)"], "a failed step proves nothing"
    assert table.multi == ["正常训练 (CPU, 2 processes over gloo)"], "a gloo stand-in is no GPU"
    text = support_table.render(table)
    assert "| 正常模型 | CPU | 4 | - | False/True | 1/2 |" in text and "| 正常模型 | GPU | 1 | True | - | - |" in text
    assert "train gpus_0: needs a CUDA device" in text
    doc = "# t\n\n## 1. 测试结论汇总\n\n| a | b | c |\n| --- | --- | --- |\n| m | m | x |\n\nafter\n\n## 2. next\n"
    once = support_table.replace(doc, text)
    assert once.endswith("\nafter\n\n## 2. next\n") and "| m | m | x |" not in once
    assert support_table.replace(once, text) == once, "a second write replaces the first, nothing piles up"
    line, body = support_table.table_body(once)
    assert line == 3 and [row for _, row in body] == [
        "| m | m | 正常训练 (CPU) | 正常训练 (CPU, 2 processes over gloo) | - | - |",
        "| 正常模型 | GPU | 1 | True | - | - |", "| 正常模型 | CPU | 4 | - | False/True | 1/2 |"]
    empty = doc.replace("| m | m | x |\n", "")
    assert support_table.table_body(empty)[1] == []
    assert support_table.table_body(doc.replace("| m | m | x |", "| m | m | - |"))[1] == []


# ---------------------------------------------------------------- the toy project, end to end

@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("toy") / "repo"
    shutil.copytree(TOY, repo)
    tipcgen("init", "tipc.yaml", "--output", ".", cwd=repo, check=True)
    tipcgen("run", "--mode", MODE, "--quiet", cwd=repo, check=True)
    return repo


def _copy(repo: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    return copy


def _accept(repo: Path, *extra: str) -> tuple[int, dict]:
    proc = tipcgen("accept", "--format", "json", *extra, cwd=repo)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] == (proc.returncode == 0)
    return proc.returncode, data


def _failed(data: dict) -> dict[str, dict]:
    return {item["id"] + " " + item["title"].split(":")[0]: item for item in data["items"] if not item["passed"]}


def test_toy_project_passes_and_its_summary_has_the_speed(toy_repo: Path):
    proc = tipcgen("accept", cwd=toy_repo)
    assert proc.returncode == 0, proc.stdout
    assert "ACCEPTED: 10 passed, 0 failed" in proc.stdout and "README.md:18" in proc.stdout
    summary = read_summary(toy_repo, "toy_accept", MODE)
    infer = [s for s in summary["steps"] if s["kind"] == "infer"]
    assert len(infer) == 1 and infer[0]["speed"]["inference_ms"] == 2.25 and infer[0]["speed"]["cpu_rss_mb"] == 12.5


MUTATIONS = {
    "no lite_data archive": (lambda r: (r / "lite_data.tar.gz").unlink(), False, {"2.2.1 lite_data archive that unpacks to lite_data/"}),
    "no predict.py": (lambda r: (r / "predict.py").unlink(), False,
                      {"2.2.2 entry points train.py, eval.py, predict.py", "2.2.4 prediction on the training engine"}),
    "no documented result": (lambda r: edit(r / "README.md", 'Result:\n\n```\n{"text": "a good film", "label": 1}\n```\n', ""),
                             False, {"2.2.4 prediction on the training engine"}),
    "no avg_ips": (lambda r: edit(r / "train.py", ', avg_ips: 100.0 samples/sec"', '"'), True,
                   {"2.2.3 training log"}),
    "no AutoLog block": (lambda r: edit(r / "infer.py", 'if args.get("benchmark") == "True":', "if False:"), True,
                         {"3.2.3 inference speed"}),
    "empty docs table": (lambda r: edit(r / paths.CHAIN_DOC, "| toy_accept | toy_accept | 正常训练 |", "| toy_accept | toy_accept | - |")
                         or edit(r / paths.CHAIN_DOC, "| 正常模型 | GPU | 1 | False | - | - |\n| 正常模型 | CPU | 1 | - | False | 1 |\n", ""),
                         False, {"4.2.2-docs docs/test_train_inference_python.md"}),
    "a failing step": (lambda r: edit(r / "eval.py", 'print("accuracy', 'raise SystemExit(3)\nprint("accuracy'), True,
                       {"4.2.2-run the chain passes (prepare.sh + test_train_inference_python.sh)"}),
    "no runner": (lambda r: (r / "test_tipc/common_func.sh").unlink(), False, {"4.2.1 test_tipc tree"}),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_copy_missing_one_item_fails_naming_it(toy_repo: Path, tmp_path: Path, name: str):
    mutate, rerun, expected = MUTATIONS[name]
    repo = _copy(toy_repo, tmp_path)
    mutate(repo)
    if rerun:
        tipcgen("run", "--mode", MODE, "--quiet", cwd=repo)
    rc, data = _accept(repo)
    assert rc == 1 and set(_failed(data)) == expected, _failed(data)
    assert all(item["hint"] for item in _failed(data).values()), "every failure says how to fix it"


def test_the_failing_train_log_line_is_named(toy_repo: Path, tmp_path: Path):
    repo = _copy(toy_repo, tmp_path)
    run_dir = repo / "test_tipc/output/toy_accept" / MODE
    log = run_dir / "norm_train_gpus_-1_autocast_fp32/train.log"
    log.write_text(log.read_text() + "[Eval] epoch: 1, loss: 0.3000, acc: 0.5\nepoch: 1, val_loss: 0.3\n")
    item = accept.check_train_log(repo, run_dir, accept.read_run(run_dir))
    assert item.passed and item.detail.startswith("3 logged iteration(s)"), "eval lines are no training iterations"
    edit(log, "global_step: 2, loss: 0.5000, avg_reader_cost: 0.0010 sec,", "global_step: 2, loss: 0.5000,")
    _, data = _accept(repo)
    item = _failed(data)["2.2.3 training log"]
    assert item["where"].endswith("train.log:3") and "no avg_reader_cost" in item["detail"] and "global_step: 2" in item["detail"]


def test_without_a_run_the_run_items_fail_and_user_errors_exit_2(toy_repo: Path, tmp_path: Path):
    repo = _copy(toy_repo, tmp_path)
    shutil.rmtree(repo / "test_tipc" / "output")
    rc, data = _accept(repo)
    failed = _failed(data)
    assert rc == 1 and {k.split()[0] for k in failed} == {"2.2.3", "3.2.3", "4.2.2-run"}
    assert all(item["detail"] == "no run found" and "tipcgen run" in item["hint"] for item in failed.values())
    proc = tipcgen("accept", cwd=repo)
    assert proc.returncode == 1 and "NOT ACCEPTED: 7 passed, 3 failed" in proc.stdout
    assert "fix: run the chain first: tipcgen run" in proc.stdout
    for args, said in ((["--root", str(tmp_path / "nothing")], "no such folder"), (["--run", str(tmp_path / "nothing")], "is not a folder"),
                       (["--run", str(repo / "test_tipc")], "has no summary.json"), (["--write-docs"], "no run under")):
        proc = tipcgen("accept", *args, cwd=repo)
        assert proc.returncode == 2 and said in proc.stderr and "hint:" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stdout == ""


def test_write_docs_fills_the_table_from_the_run(toy_repo: Path, tmp_path: Path):
    repo = _copy(toy_repo, tmp_path)
    doc = repo / paths.CHAIN_DOC
    assert "| 正常模型 | GPU |" in doc.read_text(), "the descriptor's table claims a GPU case that never ran"
    proc = tipcgen("accept", "--write-docs", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = doc.read_text()
    assert "| 正常模型 | GPU |" not in text and "| 正常模型 | CPU | 1 | - | False | 1 |" in text
    assert "| toy_accept | toy_accept | 正常训练 (CPU) | - | - | - |" in text and "from a run" in proc.stdout
    assert text.count("## 1.") == 1 and "## 2. 测试流程" in text
    tipcgen("accept", "--write-docs", cwd=repo, check=True)
    assert doc.read_text() == text
    assert list((repo / ".tipcgen" / "backup").rglob("test_train_inference_python.md")), "the old file is kept"


def _report_md(repo: Path) -> str:
    """report.md's text, rendered in this process (the CLI path and the pictures are test_report's)."""
    run_dir = repo / "test_tipc/output/toy_accept" / MODE
    built = report.build(run_dir, acceptance=accept.for_report(run_dir, report.root_of(run_dir)))
    return report.render_documents(built, {}, ("md",))[paths.REPORT_MD]


def test_report_shows_the_speed_and_the_checklist(toy_repo: Path, tmp_path: Path):
    repo = _copy(toy_repo, tmp_path)
    md = _report_md(repo)
    case = "| `python_infer_cpu_gpus_-1_usemkldnn_False_threads_1_precision_fp32_batchsize_1` |"
    assert re.search(re.escape(case + " cpu | 1 | 1 | 0.5 | 2.25 | 0.125 | 0.01 | 12.5 | - | ") + r"\d+\.\d \|", md), md
    assert "## Acceptance checklist\n\nACCEPTED" in md and "| 2.2.1 | PASS | lite_data archive" in md
    (repo / "lite_data.tar.gz").unlink()
    summary = repo / "test_tipc/output/toy_accept" / MODE / "summary.json"
    data = json.loads(summary.read_text())
    for step in data["steps"]:
        step["speed"] = {}  # a script without AutoLog: the case still gets its wall time
    summary.write_text(json.dumps(data))
    md = _report_md(repo)
    assert "NOT ACCEPTED" in md and "| 2.2.1 | **FAIL** |" in md
    assert re.search(re.escape(case + " no AutoLog block in its log: only the step's wall time | | | | | | | | | ") + r"\d+\.\d \|", md)


# ---------------------------------------------------------------- the bert-sst2 sample

@pytest.mark.paddle
@pytest.mark.chain
def test_the_sample_passes_and_its_documented_demo_runs(sample_lite_run: Path, tmp_path: Path):
    repo = _copy(sample_lite_run, tmp_path)
    rc, data = _accept(repo, "--write-docs")
    assert rc == 0, _failed(data)
    text = (repo / paths.CHAIN_DOC).read_text()
    assert "正常训练 (CPU)" in text and "| 正常模型 | CPU | 2 | - | False/True | 1/2 |" in text
    readme = (repo / "sample_models/bert-sst2/README.md").read_text()
    command = readme.split("python sample_models/bert-sst2/predict.py", 1)[1].split("```", 1)[0]
    args = shlex.split(command.replace("\\\n", " "))

    proc = subprocess.run([sys.executable, "sample_models/bert-sst2/predict.py", *args], cwd=repo,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    documented = json.loads(readme.split('Result (', 1)[1].split("```\n", 1)[1].split("\n", 1)[0])
    assert result["text"] == documented["text"] and result["label"] == documented["label"]


@pytest.mark.paddle
@pytest.mark.chain
def test_sample_copies_without_avg_ips_or_autolog_fail(sample_lite_run: Path, tmp_path: Path):
    repo = _copy(sample_lite_run, tmp_path)
    run_dir = repo / "test_tipc/output/bert_sst2" / MODE
    log = run_dir / "norm_train_gpus_-1_autocast_fp32/train.log"
    log.write_text(log.read_text().replace("avg_ips", "ips"))
    infer = sorted(run_dir.glob("python_infer_*.log"))[0]
    infer.write_text(infer.read_text().replace("Perf info", "Perf"))
    _, data = _accept(repo)
    failed = _failed(data)
    assert set(failed) == {"2.2.3 training log", "3.2.3 inference speed"}
    assert "no avg_ips" in failed["2.2.3 training log"]["detail"] and infer.stem in failed["3.2.3 inference speed"]["detail"]
    assert accept.find_run(repo) == run_dir


def test_an_archive_that_unpacks_elsewhere_names_the_folder_it_unpacks_to(tmp_path: Path):
    """Issue 28 item 7: the archive exists and is safe; the real reason is the folder it unpacks to."""
    _tar(tmp_path / "lite_data.tar", [("data", None, None), ("data/a.tsv", b"1\tx\n", None)])
    item = accept_repo.check_lite_data(tmp_path)
    assert not item.passed and item.detail.startswith("lite_data.tar: it unpacks to data/ instead of lite_data/; ")
    assert item.hint.startswith("rename the folder it holds to lite_data and pack it again")
    _tar(tmp_path / "lite_data.tar", [("lite_data/a.tsv", b"x", None), ("README", b"x", None)])
    assert "it also unpacks README beside lite_data/" in accept_repo.check_lite_data(tmp_path).detail


def test_inference_speed_names_a_config_that_turns_benchmark_off(toy_repo: Path, tmp_path: Path):
    """Issue 28 item 7: no AutoLog block because the config passes --benchmark:False, said so with its line."""
    repo = _copy(toy_repo, tmp_path)
    config = next((repo / "test_tipc/configs").glob("*/train_infer_python.txt"))
    text = config.read_text()
    assert "\n--benchmark:True\n" in text
    config.write_text(text.replace("\n--benchmark:True\n", "\n--benchmark:False\n"))
    tipcgen("run", "--mode", MODE, "-q", cwd=repo)
    rc, data = _accept(repo)
    item = _failed(data)["3.2.3 inference speed"]
    number = config.read_text().splitlines().index("--benchmark:False") + 1
    assert item["where"].endswith(f"train_infer_python.txt:{number}")
    assert item["detail"].startswith(f"the config passes --benchmark:False (line {number}), so the inference script is never asked")
    assert item["hint"].startswith("set --benchmark:True in the config")
