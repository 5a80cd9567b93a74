"""`tipcgen doctor`: real interpreters probed in real subprocesses; each failure names its fix."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tipcgen.run import doctor
from tipcgen.run.doctor import Check

from conftest import NO_PADDLE_PYTHON, ROOT, SST2, needs_plain_python, tipcgen

SAMPLE_CONFIG = "test_tipc/configs/bert_sst2/train_infer_python.txt"


needs_paddle = pytest.mark.skipif(importlib.util.find_spec("paddle") is None, reason="paddle is not installed here")


@pytest.fixture
def only_python(tmp_path: Path) -> Path:
    """A PATH folder holding nothing but `python` -> a system Python 3 without paddle."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python").symlink_to(NO_PADDLE_PYTHON)
    return folder


_PROBED: dict[tuple, object] = {}


@pytest.fixture(autouse=True)
def probe_each_interpreter_once(monkeypatch):
    """Each interpreter is probed for real once per worker (a subprocess that imports paddle: ~1.5 s of CPU),
    and its record reused by the tests after it: the probe's output depends only on the interpreter and the
    environment it reads, and these tests are about what doctor makes of it. The subprocess tests
    (test_doctor_never_imports_paddle_in_process) probe anew."""
    real = doctor._probe

    def once(path: str):
        key = (path, os.environ.get("PYTHONPATH"), os.environ.get("CUDA_VISIBLE_DEVICES"))
        if key not in _PROBED:
            _PROBED[key] = real(path)
        return _PROBED[key]

    monkeypatch.setattr(doctor, "_probe", once)


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
