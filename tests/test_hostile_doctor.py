"""Hostile repositories for `doctor`, the run's provenance probe and prepare.sh's unpacker (issue 26,
class 8): a committed `json.py`, `platform.py`, `re.py` or `tarfile.py` in the folder they run in never
runs; every probe starts through core.isolated (`-I`, with PYTHONPATH and the user's site-packages put
back), so the probe still sees what the chain's interpreter sees. Real subprocesses, real stub runs.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import STUB, make_stub_repo, read_summary, tipcgen
from test_real_data import make_repo, prepare
from tipcgen.core import isolated

SHADOWS = ("json", "platform", "re", "tarfile", "zipfile", "shutil", "importlib")


def _plant(folder: Path) -> Path:
    """A module for each name in SHADOWS that, imported, leaves PWNED-<name> in the folder."""
    for name in SHADOWS:
        code = f"open({str(folder / ('PWNED-' + name))!r}, 'w').close()\n"
        if name == "importlib":
            (folder / name).mkdir(exist_ok=True)
            (folder / name / "__init__.py").write_text(code)
        else:
            (folder / f"{name}.py").write_text(code)
    return folder


def _pwned(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("PWNED-*"))


def test_a_probe_never_imports_the_current_folder_but_keeps_pythonpath(tmp_path: Path):
    _plant(tmp_path)
    extra = tmp_path / "extra"
    extra.mkdir()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(extra)}
    proc = subprocess.run(isolated.command(sys.executable, "import json, platform, re, sys\n"
                                                          "print(json.dumps(sys.path))"),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    path = json.loads(proc.stdout)
    assert str(extra) in path and "" not in path and str(tmp_path) not in path
    assert _pwned(tmp_path) == []
    plain = subprocess.run([sys.executable, "-c", "import json"], cwd=tmp_path, env=env, timeout=60)
    assert _pwned(tmp_path) == ["PWNED-json"] and plain.returncode == 0, "the planted module works: the test can fail"


def test_doctor_in_a_repository_with_shadowing_modules_runs_none_of_them(tmp_path: Path):
    repo = tmp_path / "repo"
    make_stub_repo(repo)
    _plant(repo)
    proc = tipcgen("doctor", cwd=repo, timeout=180)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert _pwned(repo) == [], proc.stdout
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in proc.stdout, proc.stdout  # the probe itself worked


def test_a_run_and_its_prepare_sh_run_none_of_them(tmp_path: Path):
    data = {"dir": "./data", "whole_from_lite": True, "files": {"imgs": {"role": "train", "lite": "lite.tar"}}}
    repo = make_repo(tmp_path, data)
    with tarfile.open(repo / "lite.tar", "w") as tar:
        tar.add(STUB / "stub.py", arcname="imgs/a.py")
    _plant(repo)
    proc = prepare(repo, "lite_train_lite_infer")
    assert proc.returncode == 0 and (repo / "data" / "imgs" / "a.py").is_file(), proc.stdout + proc.stderr
    assert _pwned(repo) == [], "prepare.sh's unpacker imported a module of the repository"
    run = tipcgen("run", "--mode", "lite_train_lite_infer", "--quiet", cwd=repo)
    assert "Traceback" not in run.stderr
    summary = read_summary(repo)
    assert summary["provenance"]["versions"].get("python") == sys.version.split()[0], summary["provenance"]
    assert _pwned(repo) == [], "a probe of tipcgen run imported a module of the repository"
