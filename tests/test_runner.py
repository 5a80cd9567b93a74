"""The generated runner's semantics, through the real scripts, with stand-in model scripts (no paddle).

What these check is the shell: status per step, failure and timeout handling, quoting, layout
checks, mode names, interruption. The real chain with Paddle is in test_chain.py.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import (SST2, STUB, chain_env, default_signals, make_stub_repo, read_records, read_summary, run_in_process,
                      tipcgen)

CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"
RUN_DIR = Path("test_tipc/output/stub_model/lite_train_lite_infer")


def run(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return tipcgen("run", "--mode", "lite_train_lite_infer", *args, cwd=repo, env=env)


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess, Path]:
    """One passing chain of the stub, as it is rendered, for the tests that only read what it left: the
    repository, the finished `tipcgen run` and the argv each step got (STUB_ARGV, a file outside the repository:
    the stub appends to it and changes nothing else)."""
    root = tmp_path_factory.mktemp("plain_run")
    repo, argv_file = make_stub_repo(root / "repo"), root / "argv.jsonl"
    return repo, run(repo, env={"STUB_ARGV": str(argv_file)}), argv_file


def test_passing_chain_writes_every_artefact(plain_run):
    stub_repo, proc, _ = plain_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = read_records(stub_repo, "stub_model", "lite_train_lite_infer")
    kinds = [(r["kind"], r["status"]) for r in records]
    assert ("train", "passed") in kinds and ("eval", "passed") in kinds and ("export", "passed") in kinds
    assert sum(1 for k in kinds if k == ("infer", "passed")) == 2
    gpu_skips = [r for r in records if r["status"] == "skipped"]
    assert gpu_skips and all("CUDA device" in r["reason"] for r in gpu_skips)
    lines = (stub_repo / RUN_DIR / "results_python.log").read_text().splitlines()
    assert len(lines) == 5 and all(line.startswith("Run successfully with command - stub_model - ") for line in lines)
    summary = read_summary(stub_repo)
    assert summary["ok"] and summary["exit_code"] == 0 and summary["passed"] == 6  # prepare + 5 steps
    suite = ET.parse(stub_repo / RUN_DIR / "junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.get("skipped") == str(len(gpu_skips))
    # The stub exports no paddle.jit.save model and has no result checks: the verdict says so.
    assert "PASSED (results not checked): 6 passed, 0 failed" in proc.stdout


RECORD_FIELDS = {"kind", "name", "status", "exit_code", "seconds", "log", "reason", "note", "command", "gpu", "trainer",
                 "autocast", "training", "device", "use_gpu", "use_trt", "mkldnn", "threads", "precision", "batch_size",
                 "model_dir", "reference", "device_num"}


def test_every_record_carries_its_fields(plain_run):
    """steps.jsonl says what each step ran as data (no reader parses a step or log name): every record has
    every field, null where it does not apply; a CPU inference step's are the values its command got."""
    stub_repo, proc, _ = plain_run
    assert proc.returncode == 0
    records = read_records(stub_repo, "stub_model", "lite_train_lite_infer")
    for record in records:
        assert set(record) == RECORD_FIELDS, record
    skipped_gpu_train = next(r for r in records if r["kind"] == "train" and r["status"] == "skipped")
    assert skipped_gpu_train["gpu"] == "0" and skipped_gpu_train["trainer"] is None and skipped_gpu_train["device"] is None
    train = next(r for r in records if r["kind"] == "train" and r["status"] == "passed")
    assert (train["gpu"], train["trainer"], train["autocast"], train["training"], train["device"], train["use_gpu"],
            train["batch_size"]) == ("-1", "norm_train", "fp32", "gpus_-1", "cpu", "cpu", "2")
    infer = next(r for r in records if r["kind"] == "infer" and r["status"] == "passed" and r["mkldnn"] == "False")
    expected = {"kind": "infer", "status": "passed", "exit_code": 0, "reason": "", "gpu": "-1", "trainer": "norm_train",
                "autocast": "fp32", "training": "gpus_-1", "device": "cpu", "use_gpu": "False", "use_trt": None,
                "mkldnn": "False", "threads": "1", "precision": "fp32", "batch_size": "1", "reference": None}
    assert {k: infer[k] for k in expected} == expected, infer
    model_dir = "./test_tipc/output/stub_model/lite_train_lite_infer/norm_train_gpus_-1_autocast_fp32"
    assert infer["model_dir"] == model_dir and f"--model_dir={model_dir}" in infer["command"]
    for flag in ("--use_gpu=False", "--enable_mkldnn=False", "--cpu_threads=1", "--batch_size=1", "--precision=fp32"):
        assert flag in infer["command"].split(), (flag, infer["command"])
    gpu_infer = next(r for r in records if r["kind"] == "infer" and r["device"] == "gpu")
    assert gpu_infer["status"] == "skipped" and gpu_infer["use_trt"] == "False" and gpu_infer["mkldnn"] is None
    assert gpu_infer["command"] == "" and gpu_infer["exit_code"] is None


def test_flags_reach_the_scripts_as_key_value(plain_run):
    _, proc, argv_file = plain_run
    assert proc.returncode == 0
    calls = [json.loads(line) for line in argv_file.read_text().splitlines()]
    train = next(c for c in calls if c[0] == "train")
    assert "--epochs=1" in train and "--batch_size=2" in train and "--device=cpu" in train
    assert "--data_file=./data/train.tsv" in train
    infer = [c for c in calls if c[0] == "infer"]
    assert {a for c in infer for a in c if a.startswith("--enable_mkldnn")} == {"--enable_mkldnn=False", "--enable_mkldnn=True"}


def test_step_time_and_shown_command_need_no_fork_and_no_locale(stub_repo: Path):
    """A step's seconds come from $EPOCHREALTIME read as integer microseconds: its decimal point is the
    locale's (a comma in de_DE, fr_FR, ...), which awk read as the end of the number. The command a record
    shows is shell-quoted, never run. Both answer into a variable (no subshell per step)."""
    script = r"""source test_tipc/common_func.sh
source test_tipc/tipc_steps.sh
now=${EPOCHREALTIME//[!0-9]/}
past=$((now - 1500000))
start="$((past / 1000000)),$(printf %06d $((past % 1000000)))"
tipc_elapsed comma "$start"
tipc_elapsed dot "${start/,/.}"
tipc_show_cmd shown python 'a b' '$(touch pwned)' "it's"
printf '%s\n%s\n%s\n' "$comma" "$dot" "$shown"
"""
    proc = subprocess.run(["bash", "-c", script], cwd=stub_repo, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    comma, dot, shown = proc.stdout.splitlines()
    assert 1.5 <= float(comma) < 1.6 and 1.5 <= float(dot) < 1.6, proc.stdout
    assert shown == "python a\\ b \\$\\(touch\\ pwned\\) it\\'s" and not (stub_repo / "pwned").exists()


def test_a_failing_step_is_reported_and_the_chain_goes_on(stub_repo: Path):
    proc = run(stub_repo, env={"STUB_FAIL": "eval"})
    assert proc.returncode == 1
    records = read_records(stub_repo, "stub_model", "lite_train_lite_infer")
    status = {r["kind"]: r["status"] for r in records if r["kind"] != "infer"}
    assert status["eval"] == "failed" and status["export"] == "passed"
    assert any(r["kind"] == "infer" and r["status"] == "passed" for r in records)
    failed = next(r for r in records if r["status"] == "failed")
    assert failed["exit_code"] == 3 and failed["reason"] == "exit code 3"
    assert "eval: failing on purpose" in proc.stdout  # the log tail in the summary
    results = (stub_repo / RUN_DIR / "results_python.log").read_text()
    assert results.count("Run failed with command - stub_model - ") == 1


def test_failed_train_skips_its_dependents(stub_repo: Path):
    proc = run(stub_repo, env={"STUB_FAIL": "train"})
    assert proc.returncode == 1
    records = read_records(stub_repo, "stub_model", "lite_train_lite_infer")
    assert [r["kind"] for r in records if r["status"] != "skipped"] == ["train"]
    assert any("did not pass" in r["reason"] for r in records if r["status"] == "skipped")


@pytest.mark.waits
def test_a_hanging_step_is_killed_at_its_limit(stub_repo: Path):
    start = time.monotonic()
    proc = run(stub_repo, "--step-timeout", "1", env={"STUB_HANG": "infer"})
    assert time.monotonic() - start < 60
    assert proc.returncode == 1
    records = read_records(stub_repo, "stub_model", "lite_train_lite_infer")
    infers = [r for r in records if r["kind"] == "infer" and r["status"] != "skipped"]
    assert len(infers) == 2 and all(r["reason"] == "timeout after 1 s" for r in infers)
    assert all(r["status"] == "passed" for r in records if r["kind"] in ("train", "eval", "export") and r["status"] != "skipped")
    # the hint under each: what ran (its command) and how far it got (its log), and the field to raise
    summary = read_summary(stub_repo)
    hints = [s["hint"] for s in summary["steps"] if s["kind"] == "infer" and s["status"] == "failed"]
    assert len(hints) == 2 and all("stopped at the step time limit (1 s) running `" in h and "run.step_timeout" in h
                                   for h in hints), hints
    assert "hint: infer was stopped at the step time limit (1 s)" in proc.stdout, hints


def test_the_allowed_silence_is_the_step_limit_the_runner_applies_plus_the_margin(tmp_path: Path):
    """--step-timeout, else TIPC_STEP_TIMEOUT as the runner reads it, else the largest model limit tipc_layouts.json
    holds; a kept runner has none without --step-timeout (its steps are unbounded)."""
    import json

    from tipcgen.format.paths import LAYOUTS_JSON
    from tipcgen.run.request import RunRequest
    from tipcgen.run.pipeline import SILENCE_MARGIN, silence_limit

    tables = tmp_path / LAYOUTS_JSON
    tables.parent.mkdir(parents=True)
    tables.write_text(json.dumps({"settings": {"big": {"timeout": 7200}, "x": {"timeout": 99999999999},
                                               "y": {"timeout": True}, "z": {"timeout": "9000"}, "w": []}}))
    assert silence_limit(RunRequest(), {}, tmp_path, False) == 7200 + SILENCE_MARGIN  # past 24 h: not a limit
    assert silence_limit(RunRequest(step_timeout=5), {"TIPC_STEP_TIMEOUT": "50"}, tmp_path, True) == 5 + SILENCE_MARGIN
    assert silence_limit(RunRequest(), {"TIPC_STEP_TIMEOUT": "50"}, tmp_path, False) == 50 + SILENCE_MARGIN
    for bogus in ("", "0", "-5", "５０", "1e3", "9" * 5000):  # refused by run before this (next test)
        assert silence_limit(RunRequest(), {"TIPC_STEP_TIMEOUT": bogus}, tmp_path, False) == 7200 + SILENCE_MARGIN
    assert silence_limit(RunRequest(), {}, tmp_path, True) is None
    for broken in ("{not json", "[]", '{"settings": [1]}'):
        tables.write_text(broken)  # the default limit (the runner itself refuses to start without its tables)
        assert silence_limit(RunRequest(), {}, tmp_path, False) == 600 + SILENCE_MARGIN
    tables.unlink()
    tables.mkdir()  # unreadable as a file
    assert silence_limit(RunRequest(), {}, tmp_path, False) == 600 + SILENCE_MARGIN


@pytest.mark.parametrize("value", ["0", "abc", "-5", "５０", "1e3", "9" * 5000])
def test_a_step_limit_in_the_environment_that_is_none_is_refused_before_anything_runs(stub_repo: Path, value):
    """The runner hands TIPC_STEP_TIMEOUT to `timeout`: 0 would lift every limit, text would fail every step with
    timeout's own words. run refuses it by name (exit 2, nothing run); --step-timeout takes its place."""
    proc = run(stub_repo, env={"TIPC_STEP_TIMEOUT": value})
    assert proc.returncode == 2 and "in the environment is not a step time limit" in proc.stderr, proc.stderr
    assert "--step-timeout SECONDS" in proc.stderr and "Traceback" not in proc.stderr
    assert not (stub_repo / RUN_DIR).exists()
    assert run(stub_repo, "--step-timeout", "30", env={"TIPC_STEP_TIMEOUT": value}).returncode == 0


@pytest.mark.waits
@pytest.mark.parametrize("script", ["prepare.sh", "test_train_inference_python.sh"])
def test_a_script_stuck_outside_any_step_is_stopped_and_fails_the_run(stub_repo: Path, monkeypatch, script):
    """A script that hangs where no step runs (a wait on a child that never ends: the zombie hang of stop 42)
    is bounded too: silent for longer than a step may run, it is stopped with everything it started, and the
    run fails naming it. The margin is cut from 300 s to 1 s and the step limit to 3 s (a stub step takes ~40 ms
    of CPU), so that the test waits 4 s."""
    from tipcgen.run import pipeline

    monkeypatch.setattr(pipeline, "SILENCE_MARGIN", 1)
    path = stub_repo / "test_tipc" / script
    lines = path.read_text().splitlines(keepends=True)
    marker = f"{3000 + len(script)}.25"  # a sleep no other test starts, to find it afterwards
    path.write_text(lines[0] + f'[[ -n ${{TIPC_CHECK_ONLY:-}} ]] || sleep {marker}\n' + "".join(lines[1:]))
    proc = run(stub_repo, "--step-timeout", "3")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = read_summary(stub_repo)
    said = f"{script} printed nothing for 4 s, longer than a step may run (the step time limit + 1 s): it was stopped as stuck"
    if script == "prepare.sh":
        assert summary["steps"][0]["reason"] == said and summary["steps"][0]["status"] == "failed"
    else:
        assert said in summary["problems"] and summary["steps"][0]["status"] == "passed"
    assert said in proc.stdout and "FAILED" in proc.stdout
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.returncode == 1, f"the stuck script's sleep outlived the run: {left.stdout}"


@pytest.mark.parametrize("mode, words", [
    ("lite_train_infer", "legacy name"),
    ("whole_train_infer", "use whole_train_whole_infer"),
    ("fast", "unknown mode"),
])
def test_mode_names(stub_repo: Path, mode, words):
    proc = tipcgen("run", "--mode", mode, cwd=stub_repo)
    assert proc.returncode == 2 and words in proc.stderr and "lite_train_lite_infer" in proc.stderr
    direct = subprocess.run(["bash", "test_tipc/test_train_inference_python.sh", CONFIG, mode], cwd=stub_repo,
                            capture_output=True, text=True)
    assert direct.returncode == 2 and words in direct.stderr


def test_a_shifted_config_fails_loudly(stub_repo: Path):
    config = stub_repo / CONFIG
    lines = config.read_text().splitlines(keepends=True)
    config.write_text("".join(line for line in lines if not line.startswith("pact_train:")))
    direct = subprocess.run(["bash", "test_tipc/test_train_inference_python.sh", CONFIG, "lite_train_lite_infer"],
                            cwd=stub_repo, capture_output=True, text=True)
    assert direct.returncode == 2
    assert "expected '##'" in direct.stderr and "missing or extra" in direct.stderr
    proc = run(stub_repo)  # tipcgen's preflight lints the config before any step
    assert proc.returncode == 2 and "1 line missing" in proc.stderr and "Traceback" not in proc.stderr


def test_trailing_spaces_and_blank_lines_do_not_change_the_chain(stub_repo: Path, tmp_path: Path):
    config = stub_repo / CONFIG
    text = config.read_text().replace("--use_gpu:True|False\n", "--use_gpu:True|False  \n\n")
    config.write_text(text)
    direct = subprocess.run(["bash", "test_tipc/test_train_inference_python.sh", CONFIG, "lite_train_lite_infer"],
                            cwd=stub_repo, capture_output=True, text=True, timeout=120)
    assert direct.returncode == 0, direct.stdout + direct.stderr
    records = read_records(stub_repo, "stub_model", "lite_train_lite_infer")
    assert sum(1 for r in records if r["kind"] == "infer" and r["status"] == "passed") == 2
    # An upstream runner would compare 'False  ' and skip, so tipcgen run refuses the lint error by name.
    proc = run(stub_repo)
    assert proc.returncode == 2 and f"{CONFIG}:41:" in proc.stderr and "trailing whitespace" in proc.stderr


HOSTILE_FIELDS = ["train.extra", "train.infer_data", "train.pretrained", "eval.extra", "inference.data",
                  "inference.benchmark", "inference.extra", "train.norm", "export.norm"]


def _hostile(number: int) -> str:
    return f"$(touch pwned{number}) ; touch pwned{number}b `touch pwned{number}c` a b'c\"d x|$(touch pwned{number}d) *"


def test_hostile_values_are_data_never_code(tmp_path: Path):
    """Every field a user writes gets its own hostile value (command substitutions, a separator, backquotes,
    quotes, a pipe, a glob); one chain runs them all: nothing runs, and each arrives at its script as data."""
    import yaml

    doc = yaml.safe_load((STUB / "tipc.yaml").read_text())
    for number, field in enumerate(HOSTILE_FIELDS):
        section, name = field.split(".")
        value = _hostile(number)
        if name == "norm":
            doc[section][name] += " --x=" + value.replace(" ", "_")
        elif name == "infer_data":
            doc[section][name] = value
        else:
            doc[section][name] = {"key": f"--hostile{number}", "value": value}
    descriptor_path = tmp_path / "tipc.yaml"
    descriptor_path.write_text(yaml.safe_dump(doc))
    repo = tmp_path / "repo"
    (repo / "stub").mkdir(parents=True)
    for script in STUB.glob("*.py"):
        (repo / "stub" / script.name).write_text(script.read_text())
    tipcgen("init", str(descriptor_path), "--output", str(repo), check=True)
    argv_file = tmp_path / "argv.jsonl"
    proc = tipcgen("run", "--mode", "lite_train_lite_infer", cwd=repo, env={"STUB_ARGV": str(argv_file)})
    assert not list(tmp_path.rglob("pwned*")) and not list(Path.cwd().glob("pwned*")), "a value ran as a command"
    assert proc.returncode == 0, proc.stdout[-3000:]
    seen = argv_file.read_text()
    for number, field in enumerate(HOSTILE_FIELDS):
        if field == "inference.data":
            continue  # its value is read only in whole_infer; its key carries train_infer_img_dir's value
        value = _hostile(number)
        assert json.dumps(value)[1:-1] in seen or json.dumps(value.replace(" ", "_"))[1:-1] in seen, \
            f"{field} must arrive whole, as data"


def test_interrupt_leaves_a_summary(stub_repo: Path, tmp_path: Path):
    hanging = tmp_path / "infer.pid"  # the first infer step writes its pid there, then hangs (STUB_HANG_ONCE)
    env = chain_env(STUB_HANG_ONCE=f"infer:{hanging}")
    proc = subprocess.Popen([sys.executable, "-m", "tipcgen", "run", "--mode", "lite_train_lite_infer"], cwd=stub_repo,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=default_signals)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("[tipc] RUN  infer"):
            break
    deadline = time.monotonic() + 120  # a ceiling: the step is in its hang once its pid is written
    while not hanging.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert hanging.exists(), "".join(seen)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(seen) + out
    summary = read_summary(stub_repo)
    assert summary["interrupted"] is True
    assert [s["kind"] for s in summary["steps"] if s["status"] == "passed"] == ["prepare", "train", "eval", "export"]
    assert "INTERRUPTED" in out


@pytest.mark.parametrize("mode", ["lite_train_whole_infer", "whole_infer", "whole_train_whole_infer"])
def test_whole_modes_stop_at_once_without_data(tmp_path: Path, mode):
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    data = tmp_path / "train_data" / "bert_sst2"
    data.mkdir(parents=True)
    (data / "dev.tsv").write_text("1\tthe data of an earlier run\n")  # prepare.sh checks every source first
    env = {k: v for k, v in chain_env().items() if k != "TIPC_DATA_DIR"}
    proc = run_in_process(["run", "--mode", mode], tmp_path, env)  # tipcgen() keeps TIPC_DATA_DIR where it is set
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "TIPC_DATA_DIR" in proc.stderr and "--data-dir" in proc.stderr and "Traceback" not in proc.stderr
    assert "[tipc] RUN" not in proc.stdout, "no step may run"
    assert [p.name for p in data.iterdir()] == ["dev.tsv"], "nothing copied before the refusal"
    assert (data / "dev.tsv").read_text() == "1\tthe data of an earlier run\n"


def test_whole_infer_without_a_trained_model_stops_before_preparing_anything(tmp_path: Path):
    if not (SST2 / "dev.tsv").is_file():
        pytest.skip("SST-2 is not at ../shared/data/sst2")
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    proc = tipcgen("run", "--mode", "whole_infer", "--data-dir", str(SST2), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "needs a trained model, and no train run of bert_sst2 was found" in proc.stderr
    assert "TIPC_MODEL_DIR" in proc.stderr and "[tipc] RUN" not in proc.stdout
    assert not (tmp_path / "train_data").exists(), "nothing prepared before the refusal"


def test_whole_infer_of_a_model_dir_without_the_checkpoint_names_the_folder(tmp_path: Path):
    if not (SST2 / "dev.tsv").is_file():
        pytest.skip("SST-2 is not at ../shared/data/sst2")
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    empty = tmp_path / "not_a_train_run"
    empty.mkdir()
    proc = tipcgen("run", "--mode", "whole_infer", "--data-dir", str(SST2), "--model-dir", str(empty), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the trained model folder {empty} (TIPC_MODEL_DIR, set by tipcgen run --model-dir) holds no checkpoint" \
        in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "[tipc] RUN" not in proc.stdout
    assert not (tmp_path / "train_data").exists(), "nothing prepared before the refusal"


def test_whole_data_with_the_wrong_checksum_is_refused(tmp_path: Path):
    tipcgen("init", "bert-sst2", "--output", str(tmp_path), check=True)
    fake = tmp_path / "fake_sst2"
    fake.mkdir()
    for name in ("train.tsv", "dev.tsv"):
        (fake / name).write_text("label\tsentence\n1\tgood\n")
    proc = tipcgen("run", "--mode", "whole_train_whole_infer", "--data-dir", str(fake), cwd=tmp_path)
    assert proc.returncode == 2 and "md5" in proc.stderr and "1 data rows, expected 67349" in proc.stderr
    assert not (tmp_path / "train_data" / "bert_sst2").exists(), "nothing prepared before the refusal"


def test_a_second_run_replaces_the_first_cleanly_and_modes_never_share_a_folder(stub_repo: Path):
    assert run(stub_repo, env={"STUB_FAIL": "eval"}).returncode == 1
    (stub_repo / RUN_DIR / "stale.log").write_text("from an earlier run")
    assert run(stub_repo).returncode == 0
    assert not (stub_repo / RUN_DIR / "stale.log").exists()
    assert "Run failed" not in (stub_repo / RUN_DIR / "results_python.log").read_text()
    assert all(r["status"] != "failed" for r in read_records(stub_repo, "stub_model", "lite_train_lite_infer"))
    other = stub_repo / "test_tipc/output/stub_model/whole_train_whole_infer"
    tipcgen("run", "--mode", "whole_train_whole_infer", cwd=stub_repo)
    assert other.is_dir() and (stub_repo / RUN_DIR / "summary.json").is_file(), "each mode keeps its own folder"


def test_the_closing_line_is_the_one_count_on_screen(plain_run):
    """The runner counts its steps ("5 passed"); tipcgen run's table adds prepare and its own checks of the run
    ("6 passed"). Two counts a person must reconcile were one too many (issue #57): run leaves the runner's count
    line out (it stays in the runner's results log and with -v), and its closing line says what it includes."""
    import re

    _, proc, _ = plain_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not re.search(r"stub_model: \d+ passed, \d+ failed, \d+ skipped; results:", proc.stdout), proc.stdout
    closing = re.findall(r"^PASSED[^:]*: (\d+) passed, (\d+) failed, (\d+) skipped in [\d.]+ s \(prepare and tipcgen's "
                         r"checks of the run included\)$", proc.stdout, re.MULTILINE)
    assert len(closing) == 1 and len(re.findall(r"\d+ passed", proc.stdout)) == 1, proc.stdout
