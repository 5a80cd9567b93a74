"""Issue #59 item 3: git with a configuration no repository can extend (tipcgen/core/git.py). A repository whose
.git/config (shipped, or written by a step) names a program git would run by itself (core.fsmonitor, a filter,
a textconv, hooks, ...) gets tipcgen's git status, check-ignore and merge-file without that program ever running,
with and without the sandbox; an honest repository's git answers as before; no other module starts git."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from tipcgen.core import git, sandbox
from tipcgen.render import gitignore, update
from tipcgen.run import provenance, tracked

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git here")
SANDBOX_STATES = ("on", "off")
_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent"}


def _git(repo: Path, *args: str) -> None:
    """The test's own git (never tipcgen's): plain, so that it builds the hostile repository."""
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=_ENV)


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    """A committed repository with one tracked file changed since (so git status stats and cleans it)."""
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    marks.mkdir()
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "f.txt").write_text("a\n")
    (repo / "g.py").write_text("print(1)\n")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n*.txt filter=x=y\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    (repo / "f.txt").write_text("b\n")
    return repo, marks


def _touch(marks: Path, name: str) -> str:
    return f"touch {marks / name}; cat"


# Each shape of a .git/config that makes git run a program: (key, value-maker) pairs written with `git config`.
HOSTILE = {
    "fsmonitor": [("core.fsmonitor", "fsmon")],
    "fsmonitor_true": [("core.fsmonitor", None), ("core.fsmonitorHookVersion", None)],
    "filter_required": [("filter.evil.clean", "clean"), ("filter.evil.smudge", "smudge"), ("filter.evil.required", None)],
    "filter_process": [("filter.evil.process", "process")],
    "filter_equals_name": [("filter.x=y.clean", "eq"), ("filter.x=y.required", None)],
    "textconv": [("diff.evil.textconv", "textconv"), ("diff.evil.command", "command")],
    "merge_driver": [("merge.evil.driver", "driver")],
    "hooks": [("core.hooksPath", "HOOKS")],
    "pager_and_external": [("core.pager", "pager"), ("diff.external", "external"), ("pager.status", "pagerstatus")],
    "ssh_and_helpers": [("core.sshCommand", "ssh"), ("credential.helper", "cred"), ("gpg.program", "gpg")],
}


def _make_hostile(repo: Path, marks: Path, shape: str, via_include: bool = False) -> None:
    target = repo / ".git" / ("included.cfg" if via_include else "config")
    for key, mark in HOSTILE[shape]:
        if key == "core.hooksPath":
            hooks = repo / "hooks"
            hooks.mkdir(exist_ok=True)
            for hook in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction"):
                (hooks / hook).write_text(f"#!/bin/sh\ntouch {marks / hook}\n")
                (hooks / hook).chmod(0o755)
            value = str(hooks)
        elif key == "core.fsmonitor" and mark is None:
            value = "true"  # git's own daemon: a process started in the background
        elif mark is None:
            value = "true" if key.endswith("required") else "2"
        else:
            value = _touch(marks, mark)
        subprocess.run(["git", "config", "--file", str(target), key, value], check=True, env=_ENV)
    if via_include:
        _git(repo, "config", "include.path", "included.cfg")


def _every_git_of_tipcgen(repo: Path) -> None:
    """Each way tipcgen runs git on a repository: the tracked-files snapshot, the provenance probe."""
    state = tracked.snapshot(repo)
    assert state is not None and "f.txt" in state  # the change is still seen
    info = provenance.git_info(repo)
    assert info["commit"] and info["dirty"] is True


@pytest.mark.parametrize("state", SANDBOX_STATES)
@pytest.mark.parametrize("via_include", [False, True])
@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_a_repositorys_git_configuration_runs_nothing(tmp_path, monkeypatch, shape, via_include, state):
    if state == "on" and not sandbox.available()[0]:
        pytest.skip("no working bubblewrap here")
    monkeypatch.setenv(sandbox.OFF_VAR, state)
    repo, marks = _repository(tmp_path)
    _make_hostile(repo, marks, shape, via_include)
    _every_git_of_tipcgen(repo)
    assert sorted(p.name for p in marks.iterdir()) == []


def test_the_hostile_configuration_would_run_under_plain_git(tmp_path):
    """The test's own check: plain git does run the fsmonitor and the filter the repository names (status runs the
    fsmonitor; whether it re-reads a file of unchanged size, running its clean filter, depends on the clock, which
    a loaded machine moves on: diff always does)."""
    repo, marks = _repository(tmp_path)
    _make_hostile(repo, marks, "fsmonitor")
    _make_hostile(repo, marks, "filter_required")
    (repo / "f.txt").write_text("c\n")
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, env=_ENV)
    assert "fsmon" in {p.name for p in marks.iterdir()}
    subprocess.run(["git", "-C", str(repo), "diff"], capture_output=True, env=_ENV)
    assert {"fsmon", "clean"} <= {p.name for p in marks.iterdir()}


_SUBSECTION = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0\n\"\\"), min_size=1,
                      max_size=12)
_VARIABLE = st.sampled_from(["clean", "smudge", "process", "textconv", "command", "driver", "cmd", "program",
                             "helper", "sshCommand"])
_SECTION = st.sampled_from(["filter", "diff", "merge", "difftool", "mergetool", "credential", "gpg", "remote"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(_SECTION, _SUBSECTION, _VARIABLE), min_size=1, max_size=4))
def test_generated_command_variables_are_emptied(tmp_path_factory, entries):
    """Any section, any subsection name (spaces, '=', dots, non-ASCII), any command-running variable the
    repository names is overridden, so the status still answers and nothing runs."""
    tmp = tmp_path_factory.mktemp("gen")
    repo, marks = _repository(tmp)
    lines = [f"[{section} \"{sub}\"]\n\t{variable} = touch {marks / 'ran'}; cat\n\trequired = true\n"
             for section, sub, variable in entries]
    with (repo / ".git" / "config").open("a", encoding="utf-8") as handle:
        handle.write("".join(lines))
    with (repo / ".gitattributes").open("a", encoding="utf-8") as handle:
        handle.write("".join(f"* filter={sub} diff={sub}\n" for _, sub, _ in entries if " " not in sub))
    emptied = {key for key, value in git.overrides(git._repository_keys(git.found(), repo, git.base_env()))
               if value == ""}
    for section, sub, variable in entries:
        assert f"{section}.{sub}.{variable}".lower() in {key.lower() for key in emptied}
    _every_git_of_tipcgen(repo)
    assert not (marks / "ran").exists()


def test_an_honest_repository_answers_as_before(tmp_path):
    """Must not fire: an ordinary .git/config (user, remote, autocrlf, an alias, a branch) changes no answer."""
    repo, _ = _repository(tmp_path)
    (repo / ".gitattributes").write_text("*.py text eol=lf\n")
    _git(repo, "add", ".gitattributes")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "attrs")
    for key, value in (("user.name", "Honest"), ("remote.origin.url", "https://example.com/r.git"),
                       ("core.autocrlf", "input"), ("alias.st", "status"), ("branch.main.remote", "origin")):
        _git(repo, "config", key, value)
    plain = subprocess.run(["git", "-C", str(repo), "status", "--porcelain=v2", "-z", "--untracked-files=no"],
                           capture_output=True, env=_ENV, check=True).stdout
    assert git.run(["status", "--porcelain=v2", "-z", "--untracked-files=no"], repo).data == plain
    assert tracked.snapshot(repo) == tracked.from_status(repo, plain)
    (repo / "g.py").write_text("print(2)\n")
    assert set(tracked.snapshot(repo)) == {"f.txt", "g.py"}
    assert len(git.overrides(git._repository_keys(git.found(), repo, git.base_env()))) == len(git.NEUTRAL)


def test_merge_file_and_check_ignore_still_work():
    base = b"a\nb\nc\nd\ne\nf\n"
    merged, conflicts = update.merge3(base.replace(b"b", b"B"), base, base.replace(b"e", b"E"), "x.sh")
    assert (merged, conflicts) == (b"a\nB\nc\nd\nE\nf\n", 0)
    gitignore._ANSWERS.clear()
    assert gitignore._ignored_by_git("/data/\n", ["/data/lite/", "/models/"]) == frozenset({"data/lite/"})


def test_the_callers_environment_reaches_no_git(monkeypatch, tmp_path):
    """GIT_DIR, GIT_EXTERNAL_DIFF, a global config file and a system one of the caller's are not read."""
    repo, marks = _repository(tmp_path)
    config = tmp_path / "global.cfg"
    config.write_text(f"[core]\n\tfsmonitor = touch {marks / 'global'}; false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='touch {marks / 'params'}; false'")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    _every_git_of_tipcgen(repo)
    assert list(marks.iterdir()) == []


_GIT_CALL = re.compile(r"""which\(\s*["']git["']|\[\s*(?:["']git["']|git)\s*,|["']git["']\s*,\s*["'](?:status|"""
                       r"""config|diff|merge-file|check-ignore|init|log|rev-parse|ls-files|show)["']""")


def test_no_module_but_core_git_starts_git():
    """Every git tipcgen runs goes through tipcgen/core/git.py (an argv starting with git, a lookup of git)."""
    offenders = []
    for path in sorted((ROOT / "tipcgen").rglob("*.py")):
        if path == ROOT / "tipcgen" / "core" / "git.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _GIT_CALL.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
    assert _GIT_CALL.search('x = ["git", "-C", root]') and _GIT_CALL.search('shutil.which("git")')


@pytest.mark.parametrize("state", SANDBOX_STATES)
def test_a_linked_work_tree_under_tmp_still_answers(tmp_path, monkeypatch, state):
    """Must not fire: a work tree made by `git worktree add` (its .git a file pointing into the main repository,
    both under /tmp, which the sandbox empties) is still read."""
    if state == "on" and not sandbox.available()[0]:
        pytest.skip("no working bubblewrap here")
    monkeypatch.setenv(sandbox.OFF_VAR, state)
    repo, _ = _repository(tmp_path)
    _git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    (tmp_path / "linked" / "g.py").write_text("print(3)\n")
    assert set(tracked.snapshot(tmp_path / "linked")) == {"g.py"}
    assert provenance.git_info(tmp_path / "linked")["dirty"] is True


@pytest.mark.parametrize("sandboxed", [False, True])
def test_a_step_that_writes_the_git_configuration_runs_nothing_through_tipcgens_git(tmp_path, sandboxed):
    """End to end: prepare.sh (a step of the chain) sets core.fsmonitor and a required clean filter in
    .git/config; the run's tracked-files snapshots after it never run them, in or out of --sandbox, and the
    tracked-files check still passes (the run changed no tracked file)."""
    import json

    from conftest import make_stub_repo, tipcgen

    if sandboxed and not sandbox.available()[0]:
        pytest.skip("no working bubblewrap here")
    repo = make_stub_repo(tmp_path / "repo")
    marks = tmp_path / "marks"
    marks.mkdir()
    (repo / ".gitattributes").write_text("*.py filter=evil\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    prepare = repo / "test_tipc" / "prepare.sh"
    lines = prepare.read_text().splitlines(keepends=True)
    hostile = (f"git config core.fsmonitor 'touch {marks}/fsmonitor; false'\n"
               f"git config filter.evil.clean 'touch {marks}/clean; cat'\ngit config filter.evil.required true\n"
               "touch stub/*.py\n")  # a changed stat: git would clean (filter) each file again
    prepare.write_text("".join([lines[0], hostile, *lines[1:]]))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "hostile prepare")
    proc = tipcgen("run", "--quiet", "--mode", "lite_train_lite_infer", *(["--sandbox"] if sandboxed else []),
                   cwd=repo)
    assert list(marks.iterdir()) == [], proc.stdout[-2000:]
    summary = json.loads((repo / "test_tipc/output/stub_model/lite_train_lite_infer/summary.json").read_text())
    check = next(s for s in summary["steps"] if s["name"] == "tracked_files")
    assert check["status"] == "passed", check
    assert "fsmonitor" in (repo / ".git" / "config").read_text()  # the step did write it
