"""What `tipcgen run` starts before the chain's first script and between its parts (issue #39): each thing
once. Counted in process: every process tipcgen starts goes through tipcgen/core/process.py (Running)."""
from __future__ import annotations

import platform
import subprocess
import threading
from pathlib import Path

import pytest

from tipcgen.core import process, sandbox
from tipcgen.run import provenance, tracked

from conftest import tipcgen


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def started(monkeypatch) -> list[list[str]]:
    """The argv of every process tipcgen starts from now on, in order (threads included)."""
    seen: list[list[str]] = []
    lock, inside = threading.Lock(), threading.local()
    real, real_popen = process.Running.__init__, subprocess.Popen.__init__

    def spy(self, request):
        with lock:
            seen.append([str(a) for a in request.argv])
        inside.yes = True
        try:
            real(self, request)
        finally:
            inside.yes = False

    def popen(self, args, *rest, **kwargs):
        if not getattr(inside, "yes", False):  # a process started around core/process.py
            with lock:
                seen.append(["(not through core/process.py)", *map(str, args if isinstance(args, list) else [args])])
        real_popen(self, args, *rest, **kwargs)

    monkeypatch.setattr(process.Running, "__init__", spy)
    monkeypatch.setattr(subprocess.Popen, "__init__", popen)
    sandbox._probe.cache_clear()  # a probe another test made in this process would hide one here
    monkeypatch.setattr(platform, "_uname_cache", None)  # platform.platform() starts `uname -p` once per process
    return seen


def _what(argv: list[str]) -> str:
    if "bwrap" in argv[0] and argv[-1].endswith("true"):
        return "sandbox probe"
    if Path(argv[0]).name == "git" and "status" in argv:
        return "git status"
    if Path(argv[0]).name == "git" and "config" in argv:
        return "git config"  # core/git.py reads the repository's command-running variables first (runs nothing)
    if argv[0] == "bash":
        return f"bash {argv[1].rsplit('/', 1)[-1]}"
    return Path(argv[0]).name


def test_a_run_starts_each_thing_once_before_its_first_step(stub_repo: Path, started: list[list[str]]):
    _git(stub_repo, "init", "-q")
    _git(stub_repo, "add", "-A")
    _git(stub_repo, "commit", "-qm", "base")
    started.clear()  # the test's own git commands
    proc = tipcgen("run", "--quiet", cwd=stub_repo)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    kinds = [_what(argv) for argv in started]
    assert not [argv for argv in started if argv[0] == "(not through core/process.py)"], started
    first = kinds.index("bash prepare.sh")
    before = kinds[:first]
    # The flag check asks whether there is a sandbox from 4 threads: one probe. The provenance's git status
    # is the tracked-files check's first snapshot: one git. The runner's layout check and the interpreter probe.
    assert before.count("sandbox probe") <= 1, before
    assert before.count("git status") == 1 and before.count("git config") <= 1, before
    assert before.count("bash test_train_inference_python.sh") == 1, before
    assert len(before) <= 5, before
    # Then: prepare.sh, git, the runner, git (the tracked-files snapshots after each part; each git status after
    # the git config that reads what the repository's configuration names now: a step may have written it).
    assert kinds[first:first + 6] == ["bash prepare.sh", "git config", "git status", "bash test_train_inference_python.sh",
                                      "git config", "git status"], kinds[first:]


def test_the_provenance_probe_s_git_status_is_the_same_snapshot_as_the_tracked_check_s(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "sub dir").mkdir(parents=True)
    for name in ("a.txt", "gone.txt", "old.txt", "sub dir/new\nline.txt", "kept.txt"):
        (repo / name).write_text(name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "a.txt").write_text("changed")
    (repo / "gone.txt").unlink()
    _git(repo, "mv", "old.txt", "moved to.txt")
    (repo / "sub dir/new\nline.txt").write_text("changed too")
    (repo / "untracked.txt").write_text("never looked at")
    probes = provenance.Probes(repo, None, want=("git",))
    try:
        git = probes.git(repo)
        status = probes.git_status()
    finally:
        probes.close()
    assert git["dirty"] is True and git["changed_files"] == 4 and git["commit"]
    assert status is not None
    snap = tracked.snapshot(repo)
    assert tracked.from_status(repo, status) == snap
    assert sorted(snap) == ["a.txt", "gone.txt", "moved to.txt", "sub dir/new\nline.txt"]
    assert snap["gone.txt"] == "D"
