"""`tipcgen doctor`: real interpreters probed in real subprocesses; each failure names its fix."""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tipcgen.run import doctor
from tipcgen.run.doctor import Check

from conftest import HAS_PADDLE, NO_PADDLE_PYTHON, ROOT, SST2, needs_plain_python, tipcgen
from test_chain_proof import TUTORIAL

SAMPLE_CONFIG = "test_tipc/configs/bert_sst2/train_infer_python.txt"


needs_paddle = pytest.mark.skipif(importlib.util.find_spec("paddle") is None, reason="paddle is not installed here")


@pytest.fixture
def only_python(tmp_path: Path) -> Path:
    """A PATH folder holding nothing but `python` -> a system Python 3 without paddle."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python").symlink_to(NO_PADDLE_PYTHON)
    return folder


@pytest.fixture(autouse=True)
def probe_each_interpreter_once(doctor_probes_once):
    """Each interpreter is probed for real once per worker (conftest.doctor_probes_once): these tests are about
    what doctor makes of the probe's record. The subprocess tests (test_doctor_never_imports_paddle_in_process)
    probe anew."""


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


@needs_plain_python
def test_cli_without_paddle_says_what_to_install(only_python: Path):
    env = {"PATH": str(only_python), "TIPC_PYTHON": ""}
    proc = tipcgen("doctor", cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    paddle_row = next(i for i, line in enumerate(lines) if line.startswith("FAIL  paddle "))
    assert "No module named 'paddle'" in lines[paddle_row]
    assert "fix: pip install paddlepaddle==3.3.1" in lines[paddle_row + 1]
    assert any(line.startswith("ok    python ") and str(only_python / "python") in line for line in lines)
    assert any(line.startswith("FAIL  bash ") for line in lines) and any(line.startswith("FAIL  timeout ") for line in lines)


@needs_plain_python
def test_without_paddle_only_the_paddle_side_fails(only_python: Path, monkeypatch):
    monkeypatch.setenv("PATH", f"{only_python}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.delenv("TIPC_PYTHON", raising=False)
    checks = by_name(doctor.diagnose(ROOT, None, None))
    assert checks["paddle"].status == "fail" and "pip install paddlepaddle" in checks["paddle"].fix
    assert ".[paddle]" in checks["paddle"].fix
    assert "export format" not in checks and "gpu" not in checks, "nothing to say about paddle it cannot import"
    for name in ("paddlenlp", "paddle2onnx", "onnxruntime"):
        assert checks[name].status == "warn" and "pip install" in checks[name].fix
    assert checks["bash"].status == checks["timeout"].status == checks["scripts"].status == "ok"


@pytest.mark.paddle
@needs_paddle
def test_with_the_venv_python_paddle_passes(monkeypatch):
    monkeypatch.setenv("TIPC_PYTHON", sys.executable)
    checks = by_name(doctor.diagnose(ROOT, None, None))
    assert checks["python"].status == "ok" and "TIPC_PYTHON" in checks["python"].detail
    assert checks["paddle"].status == "ok", checks["paddle"]
    major = int(checks["paddle"].detail.split()[1].split(".")[0])
    assert ("inference.json" if major >= 3 else "inference.pdmodel") in checks["export format"].detail
    assert checks["gpu"].status in ("ok", "warn")
    assert checks["scripts"].status == "ok" and checks["lite data"].status == "ok"


def test_cli_with_no_python_at_all(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = tipcgen("doctor", cwd=ROOT, env={"PATH": str(empty), "TIPC_PYTHON": ""})
    assert proc.returncode == 1
    row = next(line for line in proc.stdout.splitlines() if line.startswith("FAIL  python "))
    assert "'python' (python: line of train_infer_python.txt) is not on PATH" in row
    assert "install Python 3.9+" in proc.stdout and "TIPC_PYTHON" in proc.stdout


def test_tipc_python_wins_over_the_config(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("TIPC_PYTHON", str(tmp_path / "no-such-python"))
    check = by_name(doctor.diagnose(ROOT, None, None))["python"]
    assert check.status == "fail" and "(TIPC_PYTHON) is not on PATH" in check.detail


def test_doctor_never_imports_paddle_in_process():
    code = ("import sys; from pathlib import Path; from tipcgen.run import doctor; "
            f"doctor.diagnose(Path({str(ROOT)!r}), None, None); "
            "sys.exit(1 if any(m == 'paddle' or m.startswith('paddle.') for m in sys.modules) else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TIPC_PYTHON=sys.executable))
    assert proc.returncode == 0, proc.stderr


def test_a_missing_script_fails_with_its_name(stub_repo: Path, monkeypatch):
    monkeypatch.setenv("TIPC_PYTHON", sys.executable)
    (stub_repo / "stub" / "stub_eval.py").unlink()
    checks = doctor.diagnose(stub_repo, None, None)
    scripts = [c for c in checks if c.name == "scripts"]
    assert [c.status for c in scripts] == ["fail"] and "stub/stub_eval.py" in scripts[0].detail
    assert doctor.exit_code(checks) == 1
    # No tipc.yaml at its root: the data is checked against the descriptor init rendered it from.
    assert by_name(checks)["lite data"].status == "ok" and "data" not in by_name(checks)


def test_missing_runner_and_unknown_config(stub_repo: Path):
    (stub_repo / "test_tipc" / "prepare.sh").unlink()
    runner = by_name(doctor.diagnose(stub_repo, None, None))["runner"]
    assert runner.status == "fail" and "prepare.sh is missing" in runner.detail and "tipcgen init" in runner.fix
    config = by_name(doctor.diagnose(stub_repo, "test_tipc/configs/nope.txt", None))["config"]
    assert config.status == "fail" and "config file not found" in config.detail


def test_no_config_yet_is_a_warning_with_the_next_step(tmp_path: Path):
    config = by_name(doctor.diagnose(tmp_path, None, None))["config"]
    assert config.status == "warn" and "tipcgen init" in config.fix


def test_whole_data_folder_is_checked_against_the_descriptor(tmp_path: Path):
    checks = by_name(doctor.diagnose(ROOT, None, None))
    assert checks["lite data"].status == "ok"
    (tmp_path / "train.tsv").write_text("label\ttext\n")
    whole = by_name(doctor.diagnose(ROOT, None, str(tmp_path)))["whole data"]
    assert whole.status == "fail" and "dev.tsv is missing" in whole.detail and "train.tsv has md5" in whole.detail
    missing = by_name(doctor.diagnose(ROOT, None, str(tmp_path / "nope")))["whole data"]
    assert missing.status == "fail" and "is not a folder" in missing.detail


def test_missing_lite_data_fails_with_the_files(tmp_path: Path):
    """A repository with the sample's descriptor at its root but none of the data that ships with the sample."""
    (tmp_path / "tipc.yaml").write_text((ROOT / "sample_models" / "bert-sst2" / "tipc.yaml").read_text())
    lite = by_name(doctor.diagnose(tmp_path, None, None))["lite data"]
    assert lite.status == "fail" and "sample_models/bert-sst2/data/lite_train.tsv" in lite.detail


@pytest.mark.skipif(not (SST2 / "train.tsv").is_file(), reason=f"SST-2 not found at {SST2}")
def test_the_real_whole_data_set_passes():
    whole = by_name(doctor.diagnose(ROOT, None, str(SST2)))["whole data"]
    assert whole.status == "ok" and "md5 checked" in whole.detail


def test_whole_data_unset_is_a_warning(monkeypatch):
    monkeypatch.delenv("TIPC_DATA_DIR", raising=False)
    whole = by_name(doctor.diagnose(ROOT, None, None))["whole data"]
    assert whole.status == "warn" and "TIPC_DATA_DIR is not set" in whole.detail and "--data-dir" in whole.fix


@pytest.mark.parametrize("probe, status, words", [
    ({"cuda": False}, "warn", "CPU build"),
    ({"cuda": True, "gpus": 0}, "warn", "no CUDA device is visible"),
    ({"cuda_error": "RuntimeError: driver"}, "warn", "could not count"),
])
def test_gpu_rows_without_a_gpu(probe, status, words):
    """This machine has no GPU, so the probe results a GPU machine would give are written out here."""
    check = doctor._gpu(probe)
    assert check.status == status and words in check.detail and check.fix


def test_gpu_row_follows_the_runners_count(monkeypatch, tmp_path: Path):
    """As above, a written-out probe result: paddle sees 2 GPUs, but the runner counts via nvidia-smi."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("TIPC_GPU_COUNT", raising=False)
    assert "TIPC_GPU_COUNT=2" in doctor._gpu({"cuda": True, "gpus": 2}).fix
    monkeypatch.setenv("TIPC_GPU_COUNT", "2")
    assert doctor._gpu({"cuda": True, "gpus": 2}).status == "ok"


def test_format_and_exit_code():
    checks = [Check("python", "ok", "3.11"), Check("paddle", "fail", "cannot import paddle", "pip install x"),
              Check("gpu", "warn", "CPU build", "install the GPU build")]
    text = doctor.format_checks(checks)
    assert text.splitlines() == [
        "ok    python  3.11",
        "FAIL  paddle  cannot import paddle",
        "              fix: pip install x",
        "warn  gpu     CPU build",
        "              fix: install the GPU build",
        "doctor: 1 failed, 1 warning(s), 1 ok",
    ]
    assert doctor.exit_code(checks) == 1 and doctor.exit_code(checks[::2]) == 0


def test_pins_match_the_paddle_extra():
    tomllib = pytest.importorskip("tomllib")
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["paddle"]
    for pin in (doctor.PADDLE_PIN, doctor.PADDLENLP_PIN, *doctor.ONNX_PINS.split()):
        assert pin in extra, f"{pin} is not in the [paddle] extra: update doctor.py"


# ---------------------------------------------------------------- the flags row: run's flag check, before the run

FLAG_CONFIG = "test_tipc/configs/m/train_infer_python.txt"
_ARGPARSE = "import argparse\np = argparse.ArgumentParser()\nfor f in {flags!r}:\n    p.add_argument(f)\np.parse_args()\n"
# Run, a script without argparse leaves a file beside it: the proof that doctor never runs it.
_NO_ARGPARSE = "import sys\nopen(sys.argv[0] + '.RAN', 'w').close()\n"


def _flag_repo(tmp_path: Path, monkeypatch, config: str = TUTORIAL, infer: str | None = None) -> Path:
    """test_chain_proof's tutorial-layout config, with real argparse scripts that take every key the runner passes
    them (11 keys of 3 scripts), and a flag cache of its own."""
    repo = tmp_path / "repo"
    (repo / FLAG_CONFIG).parent.mkdir(parents=True)
    (repo / FLAG_CONFIG).write_text(config)
    (repo / "train.py").write_text(_ARGPARSE.format(flags=("--epochs", "--output-dir", "--batch-size", "--pretrained",
                                                           "--test-only")))
    (repo / "export.py").write_text(_ARGPARSE.format(flags=("--save-inference-dir", "--pretrained")))
    (repo / "infer.py").write_text(infer or _ARGPARSE.format(flags=("--use-gpu", "--batch-size", "--model-dir",
                                                                   "--img-path", "--benchmark")))
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TIPC_PYTHON", raising=False)
    return repo


def _flag_rows(checks: list[Check]) -> list[Check]:
    return [check for check in checks if check.name == "flags"]


def test_flags_row_counts_the_keys_and_scripts_checked_and_says_when_cached(tmp_path: Path, monkeypatch):
    repo = _flag_repo(tmp_path, monkeypatch)
    [row] = _flag_rows(doctor.diagnose(repo, None, None, unsandboxed=True))
    assert row == Check("flags", "ok", "11 key(s) of 3 script(s) checked: each is a flag of its script's --help"), row
    assert len(list((tmp_path / "cache" / "flags").glob("*.json"))) == 3  # flag_check's cache, where run keeps it
    [again] = _flag_rows(doctor.diagnose(repo, None, None, unsandboxed=True))
    assert again.status == "ok" and again.detail.endswith("--help (cached)"), again


def test_a_misspelled_key_fails_naming_the_key_its_line_the_script_and_the_fix(tmp_path: Path, monkeypatch):
    repo = _flag_repo(tmp_path, monkeypatch, TUTORIAL.replace("--batch-size:lite", "--batch_size:lite"))
    checks = doctor.diagnose(repo, None, None, unsandboxed=True)
    assert [row.status for row in _flag_rows(checks)] == ["fail"], "no ok row beside a failed key"
    [row] = _flag_rows(checks)
    assert row.detail == (f"{FLAG_CONFIG}:8: train passes --batch_size=... (line 8) to train.py (line 14), which does "
                          "not accept it: `train.py --help` has no --batch_size")
    assert row.fix == "make the key of train.batch_size (in tipc.yaml; line 8 of the config) the script's flag --batch-size, or null to pass nothing"
    assert doctor.exit_code(_flag_rows(checks)) == 1  # alone it fails doctor (the CLI test below: exit 1)


def test_a_script_without_argparse_is_said_so_and_never_run(tmp_path: Path, monkeypatch):
    repo = _flag_repo(tmp_path, monkeypatch, infer=_NO_ARGPARSE)
    rows = doctor._flags(repo, Path(FLAG_CONFIG), unsandboxed=True)
    assert [(row.status, row.detail) for row in rows] == [
        ("ok", "6 key(s) of 2 script(s) checked: each is a flag of its script's --help"),
        ("warn", f"{FLAG_CONFIG}:27: infer.py does not use argparse (no ArgumentParser in it), so its flags are not checked"),
    ]
    assert doctor.exit_code(rows) == 0 and not (repo / "infer.py.RAN").exists()


@pytest.mark.parametrize("case", ["interpreter", "submission", "lint", "timeout", "paddle2onnx"])
def test_the_flags_row_says_why_no_key_was_checked(case: str, tmp_path: Path, monkeypatch):
    """Each reason tipcgen run has not to check the keys, or cannot, is a warning naming it; nothing is probed
    (a probe that hangs is stopped at its limit, here 1 s)."""
    from tipcgen.configs import flag_check

    repo = _flag_repo(tmp_path, monkeypatch)
    if case == "interpreter":
        monkeypatch.setenv("TIPC_PYTHON", "python3.7-absent")
    elif case == "submission":  # the template's own runner, not tipcgen's
        (repo / "test_tipc" / "test_train_inference_python.sh").write_text("#!/bin/bash\n# the template's runner\n")
    elif case == "timeout":
        (repo / "train.py").write_text("import argparse, time\ntime.sleep(30)\nargparse.ArgumentParser().parse_args()\n")
        monkeypatch.setattr(flag_check, "survey", functools.partial(flag_check.survey, timeout=1))
    elif case == "lint":  # the config tipcgen run refuses first
        (repo / FLAG_CONFIG).write_text(TUTORIAL.replace("model_name:m", "model_name:null"))
    elif case == "paddle2onnx":
        (repo / FLAG_CONFIG).write_text((ROOT / "test_tipc/configs/bert_sst2/model_linux_gpu_normal_normal_paddle2onnx_"
                                         "python_linux_cpu.txt").read_text())
    checks = doctor.diagnose(repo, FLAG_CONFIG, None, unsandboxed=True)
    assert (case == "lint") == (by_name(checks)["lint"].status == "fail"), by_name(checks)["lint"]
    rows = _flag_rows(checks)
    words = {"interpreter": "the chain's interpreter 'python3.7-absent' is not on PATH (see the python row)",
             "submission": "the repository's own runner (init --submission) decides which keys reach which script",
             "lint": "tipcgen run stops at the lint errors first",
             "timeout": "train.py's flags are not checked: train.py --help did not finish in 1 s",
             "paddle2onnx": "a paddle2onnx config: tipcgen run checks the basic chain's (train_infer_python.txt) only"}
    assert any(row.status == "warn" and words[case] in row.detail for row in rows), rows
    assert doctor.exit_code(rows) == 0
    if case != "timeout":
        assert rows == [Check("flags", "warn", "the keys the runner passes are not checked against the scripts' "
                                               f"--help: {words[case]}", "remove what stops the check (above), then "
                                               f"see it alone: tipcgen lint {FLAG_CONFIG} --root .")]
        assert not (tmp_path / "cache").exists(), "nothing probed, nothing cached"


def test_hostile_keys_run_nothing_and_are_shown_escaped_and_short(tmp_path: Path, monkeypatch):
    """A key with shell metacharacters, one of 20,000 characters and one with a terminal escape: each is a FAIL
    row (the runner would pass it), quoted, never run; the only commands are the scripts' `--help`."""
    from tipcgen.configs import script_help

    hostile = (TUTORIAL.replace("--epochs:", "--epochs;touch PWNED$(touch PWNED2)`touch PWNED3`:")
               .replace("--save-inference-dir:", "--" + "s" * 20000 + ":")
               .replace("--img-path:", "--img\x1b]0;owned\x07-path:"))
    repo = _flag_repo(tmp_path, monkeypatch, hostile)
    commands: list[list[str]] = []
    real_run = script_help.process.run

    def recorded(request):
        commands.append(list(request.argv))
        return real_run(request)

    monkeypatch.setattr(script_help.process, "run", recorded)
    monkeypatch.chdir(repo)
    rows = doctor._flags(repo, Path(FLAG_CONFIG), unsandboxed=True)
    assert sorted(c[1:] for c in commands) == [["--", "export.py", "--help"], ["--", "infer.py", "--help"],
                                               ["--", "train.py", "--help"]]
    assert sorted(p.name for p in repo.iterdir() if p.name.startswith("PWNED")) == []
    failed = [row for row in rows if row.status == "fail"]
    assert [row.detail.split(": ", 1)[0] for row in failed] == [f"{FLAG_CONFIG}:{n}" for n in (6, 20, 31)], rows
    assert "passes --epochs;touch=... (line 6)" in failed[0].detail
    assert f"--{'s' * 78}... (20002 characters)" in failed[1].detail and len(failed[1].detail) < 500
    text = doctor.format_checks(rows)
    assert "\x1b" not in text and "\x07" not in text and "passes --img\\x1b]0;owned\\x07-path=..." in text


def test_the_cli_fails_on_a_misspelled_key_of_the_tutorial_project(tmp_path: Path, monkeypatch):
    """The tutorial fixture (its real scripts), imported and rendered: doctor says its 11 keys are the scripts'
    flags, then, with two keys misspelled, fails naming each with its line, script and fix (exit 1)."""
    repo = tmp_path / "tutorial"
    shutil.copytree(ROOT / "tests" / "fixtures" / "tutorial", repo, ignore=shutil.ignore_patterns("__pycache__"))
    config = "test_tipc/configs/tutorial_model/train_infer_python.txt"
    tipcgen("import", config, "-o", "tipc.yaml", cwd=repo, check=True)
    tipcgen("init", "tipc.yaml", "--force", cwd=repo, check=True)  # tipcgen's runner: the keys it passes are checked
    monkeypatch.setenv("TIPCGEN_CACHE_DIR", str(tmp_path / "cache"))
    clean = tipcgen("doctor", "--trust-repo", cwd=repo)
    row = next(line for line in clean.stdout.splitlines() if " flags " in line)
    if HAS_PADDLE:  # the scripts import paddle before they parse their flags
        assert row.split() == ["ok", "flags", "11", "key(s)", "of", "3", "script(s)", "checked:", "each", "is", "a",
                               "flag", "of", "its", "script's", "--help"], clean.stdout
        assert clean.returncode == 0, clean.stdout
    (repo / config).write_text((repo / config).read_text().replace("--batch-size:lite", "--batch_size:lite")
                               .replace("--img-path:", "--image-path:"))
    proc = tipcgen("doctor", "--trust-repo", cwd=repo)
    lines = proc.stdout.splitlines()
    if HAS_PADDLE:
        assert proc.returncode == 1 and [line.split()[1] for line in lines if line.startswith("FAIL")] == ["flags", "flags"]
        first = next(i for i, line in enumerate(lines) if line.startswith("FAIL  flags "))
        assert lines[first].endswith(f"{config}:8: train passes --batch_size=... (line 8) to train.py (line 14), which "
                                     "does not accept it: `train.py --help` has no --batch_size")
        assert lines[first + 1].strip() == "fix: make the key of train.batch_size (in tipc.yaml; line 8 of the config) the script's flag --batch-size, or null to pass nothing"
        assert "infer passes --image-path=... (line 31) to deploy/inference_python/infer.py" in lines[first + 2]
        assert "the key of inference.data (in tipc.yaml; line 31 of the config) the script's flag --img-path" in lines[first + 3]
    else:
        assert any(line.startswith("warn  flags ") and "flags are not checked" in line for line in lines), proc.stdout
