"""doctor checks what run will meet (issue #57 item 3): paddle imported inside run --sandbox's sandbox by the same
interpreter and environment; an unreadable descriptor's own error, not "no descriptor"; the tracked-files check's
precondition (a git work tree) said; every row that is not ok with its fix; --format json. Real interpreters (a
venv made here), a real bubblewrap sandbox, real git."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import chain_env, make_stub_repo, tipcgen
from tipcgen.core import sandbox
from tipcgen.run import doctor
from tipcgen.run.doctor import Check

needs_sandbox = pytest.mark.skipif(not sandbox.available()[0], reason="no bubblewrap sandbox here")
PADDLE_OK = [Check("paddle", "ok", "paddle 3.3.1")]


def _venv(folder: Path) -> Path:
    """A venv (no pip) at folder; its python. Its base interpreter lies elsewhere: bin/python is a link."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=300)
    return folder / "bin" / "python"


def _site(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, timeout=120)
    return Path(out.stdout.strip())


def _stand_in_paddle(folder: Path) -> None:
    (folder / "paddle").mkdir(parents=True)
    (folder / "paddle" / "__init__.py").write_text('__version__ = "3.3.1"\n')


@needs_sandbox
def test_a_venv_under_tmp_imports_paddle_inside_the_sandbox_as_run_sandbox_binds_it(tmp_path):
    """Before: the sandbox bound the venv's resolved base prefix only, so a venv under /tmp lost its packages
    (`No module named 'paddle'` in run --sandbox's first step) while doctor's sandbox row said ok."""
    assert str(tmp_path).startswith("/tmp"), "the case is a venv under /tmp, which the sandbox replaces"
    python = _venv(tmp_path / "venv")
    _stand_in_paddle(_site(python))
    rows = doctor._sandboxed_paddle(tmp_path, str(python), PADDLE_OK)
    assert [(r.name, r.status) for r in rows] == [("sandboxed paddle", "ok")], rows


@needs_sandbox
def test_paddle_the_sandbox_hides_is_a_failed_row_with_its_fix(tmp_path):
    """Must fire: paddle reached through a .pth file to a folder under /tmp outside the venv (an editable
    install there) imports outside the sandbox, and not inside: the row fails, says why, and how to fix it."""
    python = _venv(tmp_path / "venv")
    elsewhere = tmp_path / "src"
    _stand_in_paddle(elsewhere)
    (_site(python) / "elsewhere.pth").write_text(f"{elsewhere}\n")
    outside = subprocess.run([str(python), "-c", "import paddle"], capture_output=True, timeout=120)
    assert outside.returncode == 0, "paddle imports outside the sandbox"
    (tmp_path / "repo").mkdir()  # the repository is bound writable: src/ is outside it
    rows = doctor._sandboxed_paddle(tmp_path / "repo", str(python), PADDLE_OK)
    assert [(r.name, r.status) for r in rows] == [("sandboxed paddle", "fail")], rows
    assert "No module named 'paddle'" in rows[0].detail and "python -m venv .venv" in rows[0].fix


def test_no_sandboxed_row_where_paddle_fails_outside_it_or_no_sandbox_can_be_had(tmp_path, monkeypatch):
    assert doctor._sandboxed_paddle(tmp_path, sys.executable, [Check("paddle", "fail", "x", "y")]) == []
    monkeypatch.setenv(sandbox.OFF_VAR, "off")
    assert doctor._sandboxed_paddle(tmp_path, sys.executable, PADDLE_OK) == []


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    return make_stub_repo(root, root / "stub" / "tipc.yaml")  # the answers file names the copy, which tests edit


CONFIG = Path("test_tipc/configs/stub_model/train_infer_python.txt")


def test_a_descriptor_with_a_typo_shows_its_own_error_not_no_descriptor(repo):
    assert [c.name for c in doctor._data(repo, CONFIG, None)] == ["lite data", "whole data"], "must not fire"
    desc = repo / "stub" / "tipc.yaml"
    desc.write_text(desc.read_text().replace("  epochs:", "  epoch:"))
    rows = doctor._data(repo, CONFIG, None)
    assert [(r.name, r.status) for r in rows] == [("descriptor", "fail")], rows
    assert "epoch" in rows[0].detail and "tipc.yaml" in rows[0].detail and rows[0].fix, rows[0]
    assert "no descriptor" not in rows[0].detail


def test_a_repositorys_own_tipc_yaml_with_a_typo_is_said_too(tmp_path):
    root = tmp_path / "plain"
    (root / "test_tipc" / "configs" / "m").mkdir(parents=True)
    (root / "tipc.yaml").write_text("model_name: m\ntrain:\n  epochz: 1\n")
    rows = doctor._data(root, None, None)
    assert rows[0].name == "descriptor" and rows[0].status == "fail" and "tipc.yaml" in rows[0].detail, rows


def test_the_git_row_says_whether_the_tracked_files_check_can_run(repo):
    row = doctor._git(repo)
    assert row.status == "warn" and "not in a git work tree" in row.detail and "git init" in row.fix
    env = chain_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "base"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True, timeout=120)
    row = doctor._git(repo)
    assert row.status == "ok" and "changes no tracked file" in row.detail


def test_doctor_json_holds_every_row_and_each_row_that_is_not_ok_has_its_fix(repo):
    proc = tipcgen("doctor", "--format", "json", cwd=repo)
    data = json.loads(proc.stdout)
    assert proc.returncode == data["exit_code"] in (0, 1), proc.stderr
    names = [row["name"] for row in data["checks"]]
    assert {"python", "paddle", "sandbox", "git", "config"} <= set(names), names
    assert data["failed"] == sum(row["status"] == "fail" for row in data["checks"])
    assert [row for row in data["checks"] if row["status"] != "ok" and not row["fix"]] == []
