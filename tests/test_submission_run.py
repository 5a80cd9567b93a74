"""Submission mode on a repository with its own runner (tests/fixtures/own_runner, test project c of issue 28).

Real subprocesses, no paddle: the fixture's runner logs to test_tipc/output/<model>/results_python.log (no
mode folder) and exits 0 whatever its steps did; its scripts and prepare.sh need FLAGS_own_runner=1, the
descriptor's env:; its prepare.sh fails at the end (the template's offline wget); inference fails on purpose
for batch size 2.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tipcgen.format import paths
from tipcgen.results.summary import Step, load_summary
from tipcgen.run import submission_run

from conftest import chain_env, tipcgen

FIXTURE = Path(__file__).parent / "fixtures" / "own_runner"
SUMMARY = "test_tipc/output/own_model/lite_train_lite_infer/summary.json"
EXPECTED = [("prepare", "failed"), ("train", "passed"), ("eval", "passed"), ("export", "passed"),
            ("infer", "passed"), ("infer", "failed")]


@pytest.fixture
def own_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    tipcgen("init", "tipc.yaml", "--submission", cwd=repo, check=True)
    return repo


def run_steps(repo: Path) -> tuple[int, dict]:
    assert "FLAGS_own_runner" not in os.environ  # only the descriptor's env: sets it
    proc = tipcgen("run", "-q", cwd=repo)
    return proc.returncode, json.loads((repo / SUMMARY).read_text())


def test_each_status_line_of_the_own_runner_is_reported_truthfully(own_repo: Path, descriptor_loads: list) -> None:
    code, summary = run_steps(own_repo)
    # the descriptor is loaded once: its checks.own_weights for preflight.refuse, its env: for the runner
    assert [kind for kind, _ in descriptor_loads] == ["walk", "load"], descriptor_loads
    assert code == 1 and summary["ok"] is False
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == EXPECTED
    assert [s["name"] for s in summary["steps"]][4:] == ["python_infer_cpu_batchsize_1", "python_infer_cpu_batchsize_2"]
    assert "status lines read from test_tipc/output/own_model/results_python.log" in summary["notes"]
    assert summary["runner_exit_code"] == 0  # the runner's own exit status says nothing about its steps
    # the env reached prepare.sh (it wrote the data) and the runner (train read it): FLAGS_own_runner came only
    # from the descriptor
    assert "prepare.sh and the runner ran with the descriptor's env: FLAGS_own_runner=1" in summary["notes"]
    prepare = summary["steps"][0]
    assert prepare["exit_code"] == 4 and "the runner ran anyway" in prepare["note"]
    assert "wget: unable to resolve host" in (own_repo / prepare["log"]).read_text()
    # a second run reads only its own status lines (the runner appends to the same results_python.log)
    code, summary = run_steps(own_repo)
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == EXPECTED


def test_without_the_env_the_steps_fail_and_init_submission_rerenders_its_own_files(own_repo: Path) -> None:
    descriptor = own_repo / "tipc.yaml"
    descriptor.write_text(descriptor.read_text().replace('env: {FLAGS_own_runner: "1"}\n', ""))
    # the config and docs init --submission rendered itself are replaced without --force
    again = tipcgen("init", "tipc.yaml", "--submission", cwd=own_repo)
    assert again.returncode == 0, again.stderr
    code, summary = run_steps(own_repo)
    assert code == 1
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == [
        ("prepare", "failed"), ("train", "failed"), ("eval", "failed"), ("export", "failed"),
        ("infer", "failed"), ("infer", "failed")]
    assert summary["steps"][0]["exit_code"] == 3  # prepare.sh's own check of FLAGS_own_runner
    # a doc the user edited is still theirs: kept and named (what --force would do), replaced only with --force
    readme = own_repo / "test_tipc/README.md"
    readme.write_text(readme.read_text() + "\nour notes\n")
    descriptor.write_text(descriptor.read_text().replace("gpu_list: [\"-1\"]", "gpu_list: [\"0\", \"-1\"]"))
    kept = tipcgen("init", "tipc.yaml", "--submission", cwd=own_repo)
    said = kept.stdout + kept.stderr
    assert kept.returncode == 0 and "kept test_tipc/README.md, the repository's own" in said, said
    assert "--force would replace it" in said and "our notes" in readme.read_text()
    assert "kept test_tipc/docs" not in said  # tipcgen's own doc, unedited: rendered again
    forced = tipcgen("init", "tipc.yaml", "--submission", "--force", cwd=own_repo)
    assert forced.returncode == 0 and "replaces test_tipc/README.md, the repository's own" in forced.stdout + forced.stderr
    assert "our notes" not in readme.read_text()


def test_the_log_path_is_read_from_the_runner(tmp_path: Path) -> None:
    runner = tmp_path / paths.BASIC_RUNNER
    runner.parent.mkdir(parents=True)
    runner.write_text('LOG_PATH="./out/${model_name}/logs_${MODE}"\nmkdir -p ${LOG_PATH}\n'
                      'status_log="${LOG_PATH}/results_python.log"\nother="${lines[3]}/results_python.log"\n')
    logs = submission_run._results_logs(tmp_path, "m", "lite_train_lite_infer")
    assert logs[0] == tmp_path / "out/m/logs_lite_train_lite_infer/results_python.log"
    assert tmp_path / "test_tipc/output/m/results_python.log" in logs
    assert not any("lines" in str(p) for p in logs)  # a value the runner computes is not guessed


def test_status_lines_only_printed_by_the_runner_are_read(own_repo: Path) -> None:
    """A runner that writes no results_python.log anywhere: its printed status lines, said so."""
    runner = own_repo / paths.BASIC_RUNNER
    runner.write_text(runner.read_text().replace('status_log="${LOG_PATH}/results_python.log"', "status_log=/dev/null"))
    code, summary = run_steps(own_repo)
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == EXPECTED
    assert "no results_python.log grew during the run: the status lines are those the runner printed" in summary["notes"]
    assert any("changed since tipcgen init --submission" in p for p in summary["problems"])  # the edit is still named


def test_status_lines_in_paddleocr_form_name_their_log(tmp_path: Path) -> None:
    """PaddleOCR's status_check writes `... - MODEL - COMMAND - LOG_PATH`: the log is the step's, not its command."""
    log = tmp_path / "test_tipc/output/m/lite/python_infer_cpu.log"
    log.parent.mkdir(parents=True)
    log.write_text("ok\n")
    values = {"train.norm": "tools/train.py -c x.yml", "inference.script": "tools/infer/predict_det.py"}
    lines = ["\x1b[33m Run successfully with command - m - python3 tools/train.py -c x.yml -o Global.epoch_num=1 - "
             "./test_tipc/output/m/lite/train.log!  \x1b[0m",
             " Run failed with command - m - python3 tools/infer/predict_det.py --use_gpu=False - "
             "./test_tipc/output/m/lite/python_infer_cpu.log! "]
    train, infer = submission_run.read_status_lines(lines, values, tmp_path)
    assert (train.kind, train.status, train.command) == ("train", "passed", "python3 tools/train.py -c x.yml -o Global.epoch_num=1")
    assert train.name == "train" and train.log == "" and train.note  # its log is not there: the status line is all
    assert (infer.kind, infer.status, infer.name) == ("infer", "failed", "python_infer_cpu")
    assert infer.log == "test_tipc/output/m/lite/python_infer_cpu.log"


# --- the kept runner under the generated runner's guarantees (issue 35 item 4, issue 37 item 1) ---

TRAIN_PROBE = '''
import os as _os, sys as _sys, time as _time
_time.sleep(float(_os.environ.get("OWN_SLEEP", "0")))
with open("train_seen.txt", "w") as _f:
    _f.write(f"data_dir={_os.environ.get('TIPC_DATA_DIR')} mark={_os.environ.get('PY_MARK')}\\n")
'''


def make_own_repo(tmp_path: Path, edit=None, git: bool = False) -> Path:
    """The fixture copied, edited by `edit(repo)` before init --submission records its kept files."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    train = repo / "train.py"
    train.write_text(train.read_text() + TRAIN_PROBE)
    if edit is not None:
        edit(repo)
    if git:
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]):
            subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    tipcgen("init", "tipc.yaml", "--submission", cwd=repo, check=True)
    return repo


def fake_python(tmp_path: Path, name: str = "mypython") -> Path:
    """An interpreter of its own name: the tests' Python, with PY_MARK=1 set (what the scripts see of it)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nexport PY_MARK=1\nexec {sys.executable} "$@"\n')
    path.chmod(0o755)
    return path


def steps_of(summary: dict) -> list[tuple[str, str]]:
    return [(s["kind"], s["status"]) for s in summary["steps"]]


def test_python_and_data_dir_reach_the_kept_runner(tmp_path: Path) -> None:
    repo = make_own_repo(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    python = fake_python(tmp_path)
    proc = tipcgen("run", "-q", "--python", str(python), "--data-dir", str(data), cwd=repo)
    summary = json.loads((repo / SUMMARY).read_text())
    assert proc.returncode == 1, proc.stderr
    assert (repo / "train_seen.txt").read_text() == f"data_dir={data.resolve()} mark=1\n"
    assert any(n.startswith("--python: ") and str(python) in n for n in summary["notes"]), summary["notes"]
    assert any(n.startswith("--data-dir: ") for n in summary["notes"])
    assert not (repo / paths.SHIM_DIR).exists() or not any((repo / paths.SHIM_DIR).iterdir())  # removed after the run


@pytest.mark.waits
def test_the_step_timeout_reaches_the_kept_runner(tmp_path: Path) -> None:
    repo = make_own_repo(tmp_path)
    proc = tipcgen("run", "-q", "--step-timeout", "2", cwd=repo, env={"OWN_SLEEP": "60"})
    summary = json.loads((repo / SUMMARY).read_text())
    assert proc.returncode == 1, proc.stderr
    assert steps_of(summary)[1] == ("train", "failed")  # killed by the limit, not trained after 60 s
    assert not (repo / "train_seen.txt").exists()
    assert any(n.startswith("--step-timeout: ") for n in summary["notes"])


def test_a_model_dir_the_kept_runner_cannot_take_is_refused_by_name(own_repo: Path) -> None:
    proc = tipcgen("run", "-q", "--model-dir", str(own_repo), cwd=own_repo)
    assert proc.returncode == 2 and "--model-dir cannot apply" in proc.stderr


def test_the_export_check_runs_on_the_kept_runners_outputs(own_repo: Path) -> None:
    """The export and training folders its status lines' commands name (train.output_dir, export.output_dir):
    an export with no .pdiparams there fails the check, naming the folder (a stand-in model, paddle-free, is
    not exempt here: TIPC_NO_PADDLE=0)."""
    tipcgen("run", "-q", cwd=own_repo, env={"TIPC_NO_PADDLE": "0"})
    summary = json.loads((own_repo / SUMMARY).read_text())
    check = next(s for s in summary["steps"] if s["name"] == "export_params_train")
    assert check["status"] == "failed"
    assert "the export wrote no .pdiparams under test_tipc/output/own_model/norm_train_gpus_-1" in check["reason"]
    train = summary["steps"][1]
    assert (train["kind"], train["model_dir"]) == ("train", "test_tipc/output/own_model/norm_train_gpus_-1")
    load_summary(own_repo / SUMMARY)


def test_a_config_with_python37_runs_with_python(tmp_path: Path) -> None:
    """The models template's config says python:python3.7; --python makes it run (a shim first on PATH)."""
    def edit(repo: Path) -> None:
        desc = repo / "tipc.yaml"
        desc.write_text(desc.read_text().replace("python: python\n", "python: python3.7\n"))

    repo = make_own_repo(tmp_path, edit)
    assert "python:python3.7" in (repo / "test_tipc/configs/own_model/train_infer_python.txt").read_text()
    python = fake_python(tmp_path, "python3")
    proc = tipcgen("run", "-q", "--python", str(python), cwd=repo)
    summary = json.loads((repo / SUMMARY).read_text())
    assert steps_of(summary) == EXPECTED, proc.stdout + proc.stderr
    assert any("python3.7" in n and n.startswith("--python: ") for n in summary["notes"])


def test_a_prepare_log_with_a_pip_failure_fails_though_it_exits_0(tmp_path: Path) -> None:
    def edit(repo: Path) -> None:
        prepare = repo / paths.PREPARE_SH
        text = "\n".join(line for line in prepare.read_text().splitlines() if "wget" not in line)
        prepare.write_text(text.replace(
            "exit 4", "echo 'ERROR: Could not find a version that satisfies the requirement paddlex==9.9'\nexit 0"))

    repo = make_own_repo(tmp_path, edit)
    tipcgen("run", "-q", cwd=repo)
    prepare = json.loads((repo / SUMMARY).read_text())["steps"][0]
    assert (prepare["status"], prepare["exit_code"]) == ("failed", 0)
    assert "ERROR: Could not find a version" in prepare["reason"]


def test_a_gpu_case_on_a_machine_without_a_gpu_is_not_passed(tmp_path: Path) -> None:
    """Paddle falls back to the CPU and the runner prints success: the case is SKIPPED, with the reason."""
    def edit(repo: Path) -> None:
        runner = repo / paths.BASIC_RUNNER
        runner.write_text(runner.read_text().replace(
            'infer_data_key=$(func_parser_key "${lines[47]}")',
            'infer_data_key=$(func_parser_key "${lines[47]}")\nuse_gpu_key=$(func_parser_key "${lines[40]}")').replace(
            '${set_infer_data} > ${_log}', '${set_infer_data} ${use_gpu_key}=True > ${_log}'))

    repo = make_own_repo(tmp_path, edit)
    tipcgen("run", "-q", cwd=repo, env={"PATH": os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "nvidia-smi").exists())})
    summary = json.loads((repo / SUMMARY).read_text())
    infer = [s for s in summary["steps"] if s["kind"] == "infer"]
    assert [s["status"] for s in infer] == ["skipped", "failed"]
    assert "GPU case on a machine with no GPU" in infer[0]["reason"] and infer[0]["device"] == "gpu"
    assert summary["ok"] is False
    load_summary(repo / SUMMARY)  # the one validated reader (suite, report) takes it


def test_the_tracked_file_check_runs_on_a_kept_runner(tmp_path: Path) -> None:
    def edit(repo: Path) -> None:
        train = repo / "train.py"
        train.write_text(train.read_text() + 'open("README.md", "a").write("trained\\n")\n')

    repo = make_own_repo(tmp_path, edit, git=True)
    tipcgen("run", "-q", cwd=repo)
    summary = json.loads((repo / SUMMARY).read_text())
    check = next(s for s in summary["steps"] if s["name"] == "tracked_files")
    assert check["status"] == "failed" and "README.md" in check["reason"]


def test_the_lock_refuses_a_second_run_and_a_signal_stops_the_first(tmp_path: Path) -> None:
    repo = make_own_repo(tmp_path)
    first = subprocess.Popen([sys.executable, "-m", "tipcgen", "run", "-q"], cwd=repo,
                             env=chain_env(OWN_SLEEP="300"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = repo / "test_tipc/output/own_model/lite_train_lite_infer.lock"
        deadline = time.monotonic() + 300
        while not (lock.is_file() and (repo / "train_data/own_model/lite.txt").exists()) \
                and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert lock.is_file(), first.communicate()
        second = tipcgen("run", "-q", cwd=repo)
        assert second.returncode == 2 and "another tipcgen run" in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=300)
    summary = json.loads((repo / SUMMARY).read_text())
    assert summary["interrupted"] is True and summary["interrupted_by"] == "SIGTERM"
    assert not lock.exists()


GPU_NAMES = ["norm_train_gpus_0_autocast_null", "norm_train_gpus_0,1_autocast_null", "pact_train_gpus_1",
             "python_infer_gpu_usetrt_False_precision_fp32_batchsize_1", "norm_train_gpus_0"]
CPU_NAMES = ["norm_train_gpus_-1_autocast_null", "python_infer_cpu_usemkldnn_False_threads_1_batchsize_1",
             "eval", "export_2", "norm_export_gpus_-1", "train_gpusx_0", "norm_train_gpus_-1,0x", "my_gpu_notes"]


@given(st.sampled_from(GPU_NAMES + CPU_NAMES), st.sampled_from(["train", "infer", "eval"]),
       st.sampled_from([({"gpus": []}, {}), ({"gpus": [{"name": "H100"}]}, {"paddle_cuda_version": "False"}),
                        ({"gpus": [{"name": "H100"}]}, {"paddle_dist": "paddlepaddle"}),
                        ({"gpus": [{"name": "H100"}]}, {"paddle_cuda_version": "12.6", "paddle_dist": "paddlepaddle-gpu"})]))
def test_a_case_named_after_a_gpu_entry_is_never_passed_without_a_gpu_paddle(name, kind, machine):
    """A kept runner's `gpus_0` step that a CPU paddle (or a machine with no GPU) ran: SKIPPED with why, never
    PASSED; a CPU entry (-1, cpu) stays passed, and so does a GPU case where a GPU and a GPU build are."""
    device, versions = machine
    step = Step(kind=kind, name=name, status="passed", command=f"python {kind}.py --epochs=1")
    count = submission_run.unverified_gpu_cases([step], {}, device, versions)
    verifiable = bool(device["gpus"]) and versions.get("paddle_dist") == "paddlepaddle-gpu"
    if name in GPU_NAMES and not verifiable:
        assert count == 1 and step.status == "skipped" and step.case.device == "gpu"
        assert ("CPU build of paddle" in step.reason) == bool(device["gpus"]), step.reason
    else:
        assert count == 0 and step.status == "passed", (name, machine)


def test_a_kept_runner_s_failure_gets_the_cause_and_hint_tipcgen_s_runner_gives(tmp_path: Path) -> None:
    """The same output, the same hint: a training with no log of its own (its output is the runner's, before its
    status line) that cannot open its data file, and an inference (its own log) refused by argparse."""
    def edit(repo: Path) -> None:
        train = repo / "train.py"
        train.write_text(train.read_text().replace("with open(args.data_file) as f:",
                                                   'with open("data/train_list.txt") as f:'))
        infer = repo / "infer.py"
        infer.write_text(infer.read_text().replace('p.add_argument("--batch_size", type=int, default=1)',
                                                   'p.add_argument("--batch_size", type=int, choices=[1], default=1)'))

    from tipcgen.results import explain

    repo = make_own_repo(tmp_path, edit)
    tipcgen("run", "-q", cwd=repo)
    summary = json.loads((repo / SUMMARY).read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    train = steps["train"]
    assert train["status"] == "failed" and "FileNotFoundError" in train["reason"], train
    assert train["hint"].startswith("data/train_list.txt is missing") and any("Traceback" in line for line in train["tail"])
    # what tipcgen's runner's step gives for this output (its log's lines, its reason last)
    from tipcgen.run import provenance

    known = explain.known_of(provenance.load_descriptor(repo, "own_model")[0], repo)
    assert train["hint"] == explain.explain([*train["tail"], train["reason"]], "train", known, train["command"])
    infer = steps["python_infer_cpu_batchsize_2"]
    assert "error: argument --batch_size: invalid choice" in infer["reason"] and "refuses --batch_size" in infer["hint"]
    assert steps["python_infer_cpu_batchsize_1"]["status"] in ("failed", "passed")  # fed by the failed training
    # a step that passed gets neither
    assert all(not s.get("hint") for s in summary["steps"] if s["status"] == "passed")


def test_the_keys_check_judges_a_kept_runner_by_what_it_passes(tmp_path: Path, monkeypatch) -> None:
    """A key the kept runner reads into a variable no command uses is never passed: import and lint do not call it
    an error (they did, issue #56); once a command passes it, both do."""
    from tipcgen.configs import importer, lint

    def reads_device(repo: Path) -> None:
        runner = repo / paths.BASIC_RUNNER
        runner.write_text(runner.read_text().replace('epoch_key=$(func_parser_key "${lines[6]}")',
                                                     'device_key=$(func_parser_key "${lines[4]}")\n'
                                                     'epoch_key=$(func_parser_key "${lines[6]}")'))
        desc = repo / "tipc.yaml"
        desc.write_text(desc.read_text().replace("device: {key: --device,", "device: {key: --no_such_flag,"))

    repo = make_own_repo(tmp_path, reads_device)
    monkeypatch.setenv("FLAGS_own_runner", "1")  # the scripts' --help needs it (the descriptor's env:)
    config = repo / "test_tipc/configs/own_model/train_infer_python.txt"
    assert "--no_such_flag" in config.read_text()
    problems = importer.flag_problems(config, repo)
    assert not any("--no_such_flag" in p or "exited" in p for p in problems), problems
    findings = lint.lint_report([config], repo, check_flags=True)
    assert not any("--no_such_flag" in f.message for f in findings), findings
    # the runner passes it now: the same check reports it
    runner = repo / paths.BASIC_RUNNER
    runner.write_text(runner.read_text().replace('cmd="${python} ${norm_train} ${set_save}',
                                                 'set_device=$(func_set_params "${device_key}" "cpu")\n'
                                                 'cmd="${python} ${norm_train} ${set_device} ${set_save}'))
    problems = importer.flag_problems(config, repo)
    assert any("--no_such_flag" in p and p.startswith("error") for p in problems), problems
