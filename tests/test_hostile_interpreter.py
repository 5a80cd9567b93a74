"""Issue #59 item 5: a config's ``python:`` word that is not a Python interpreter (``python:make``, which would
read the repository's Makefile) is never run: not by doctor's probe, not by run's interpreter probe (in or out of
``--sandbox``), not by a --help probe; one message names the config line and the fix (--python / TIPC_PYTHON).
A venv's python, python3, python3.x and pypy3 still run."""
from __future__ import annotations

import os
import shutil
import string
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import make_stub_repo, tipcgen
from tipcgen.configs import flag_check
from tipcgen.core import isolated, sandbox
from tipcgen.run import doctor

MODE = "lite_train_lite_infer"
CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"


def _program(folder: Path, name: str, marks: Path) -> Path:
    """An executable named ``name`` that leaves a mark if it ever runs."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\ntouch {marks / 'RAN'}\nexec make \"$@\"\n")
    path.chmod(0o755)
    return path


_NOT_PYTHON = st.text(string.ascii_letters + string.digits + "._+", min_size=1, max_size=14).filter(
    lambda w: flag_check.is_command_name(w) and not isolated.PYTHON_NAME.fullmatch(w))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(_NOT_PYTHON, st.sampled_from(["make", "bash", "sh", "env", "ipython", "python3-config",
                                                    "pythonw.sh", "py", "python_", "xpython3", "cmake"])))
def test_a_word_that_names_no_interpreter_is_refused_and_never_chosen(tmp_path_factory, name):
    tmp = tmp_path_factory.mktemp("word")
    found = _program(tmp / "bin", name, tmp)
    text = f"===========================train_params===========================\nmodel_name:m\npython:{name}\n"
    env = {"PATH": str(tmp / "bin") + os.pathsep + os.environ["PATH"]}
    assert not isolated.is_python(str(found))
    message = flag_check.not_python(text, env, str(found), "c.txt")
    assert message and message.startswith("c.txt:3: python:") and "not a Python interpreter" in message
    assert flag_check.probe_interpreter(text, env)[0] == "python"  # a probe takes PATH's python instead
    assert flag_check.not_python(text, dict(env, TIPC_PYTHON=str(found)), str(found), "c.txt") is None  # the user's


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.from_regex(isolated.PYTHON_NAME, fullmatch=True).filter(lambda w: len(w) < 30))
def test_an_interpreters_name_still_runs(tmp_path_factory, name):
    """Must not fire: python, python3, python3.11, python3.13t, pypy3.10 (here, links to this interpreter, as a
    venv's are) are interpreters, chosen and run."""
    folder = tmp_path_factory.mktemp("py")
    (folder / name).symlink_to(sys.executable)
    assert isolated.is_python(str(folder / name))
    text = f"python:{name}\n"
    env = {"PATH": str(folder)}
    assert flag_check.not_python(text, env, str(folder / name), "c.txt") is None
    if flag_check.is_command_name(name):  # python3-dbg is a path-like word to the probes (no '-' in a name)
        assert flag_check.probe_interpreter(text, env)[0] == name


def test_a_venv_python_and_paths_own_are_interpreters():
    for word in ("python", "python3"):
        assert isolated.is_python(shutil.which(word)), word
    assert isolated.is_python(sys.executable)
    assert not isolated.is_python(shutil.which("make") or shutil.which("bash"))
    assert not isolated.is_python(None) and not isolated.is_python("/nonexistent/python3")


def _makefile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """The stub repository, its config's python: line saying ``make``, and a committed Makefile that marks."""
    repo = make_stub_repo(tmp_path / "repo")
    marks = tmp_path / "marks"
    marks.mkdir()
    text = (repo / CONFIG).read_text()
    (repo / CONFIG).write_text(text.replace("\npython:python\n", "\npython:make\n"))
    assert "python:make" in (repo / CONFIG).read_text()
    (repo / "Makefile").write_text(f".PHONY: all\nall:\n\ttouch {marks / 'MAKEFILE_RAN'}\n"
                                   f"%:\n\ttouch {marks / 'MAKEFILE_RAN'}\n")
    return repo, marks


@pytest.mark.skipif(shutil.which("make") is None, reason="no make here")
def test_doctor_never_runs_make_from_the_config(tmp_path, monkeypatch):
    repo, marks = _makefile_repo(tmp_path)
    monkeypatch.delenv("TIPC_PYTHON", raising=False)
    monkeypatch.chdir(repo)
    checks = {c.name: c for c in doctor.diagnose(repo, CONFIG)}
    assert list(marks.iterdir()) == []
    row = checks["python"]
    assert row.status == "fail" and "train_infer_python.txt:" in row.detail and "python:make" in row.detail
    assert "not a Python interpreter" in row.detail and "TIPC_PYTHON" in row.fix


@pytest.mark.skipif(shutil.which("make") is None, reason="no make here")
@pytest.mark.parametrize("sandboxed", [False, True])
def test_run_refuses_make_before_any_probe(tmp_path, sandboxed):
    if sandboxed and not sandbox.available()[0]:
        pytest.skip("no working bubblewrap here")
    repo, marks = _makefile_repo(tmp_path)
    proc = tipcgen("run", "--mode", MODE, *(["--sandbox"] if sandboxed else []), cwd=repo, env={"TIPC_PYTHON": ""})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "python:make" in proc.stderr and "not a Python interpreter" in proc.stderr and "--python" in proc.stderr
    assert "Traceback" not in proc.stderr and "[tipc] RUN" not in proc.stdout
    assert list(marks.iterdir()) == []
