"""`tipcgen init` appends to .gitignore only the working folders it does not cover yet; whether a line covers a
folder is git's answer (`git check-ignore`), so globs, `**`, a parent folder and negations count (#37 item 4)."""
from __future__ import annotations

import shutil

import pytest

from tipcgen.render import gitignore

WANTED = ["/test_tipc/output/", "/test_tipc/.tipcgen_backup/", "/data/lite/", "/models/trained"]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _added(existing: str | None) -> list[str]:
    text = gitignore.merged(existing, WANTED)
    return [] if text is None else text[len(existing or ""):].split(gitignore.HEADER + "\n", 1)[1].splitlines()


@needs_git
@pytest.mark.parametrize("existing, added", [
    ("**/output/\n*.pyc\n", ["/test_tipc/.tipcgen_backup/", "/data/lite/", "/models/trained"]),  # a glob
    ("test_tipc/\n", ["/data/lite/", "/models/trained"]),  # a folder above
    ("/test_tipc/*/\n/data/*\n/models/*\n", []),  # one star each
    ("output\n", ["/test_tipc/.tipcgen_backup/", "/data/lite/", "/models/trained"]),  # unanchored: any depth
    ("*/output/\n!test_tipc/output/\n", WANTED),  # a negation
    ("test_tipc/\n!test_tipc/output/\n", ["/data/lite/", "/models/trained"]),  # git: a folder below one ignored stays so
    ("# /data/\n\\#x\n/dat?/li[a-z]e/\n", ["/test_tipc/output/", "/test_tipc/.tipcgen_backup/", "/models/trained"]),
])
def test_git_says_which_lines_cover_a_folder(existing, added):
    assert _added(existing) == added
    assert gitignore.merged(gitignore.merged(existing, WANTED) or existing, WANTED) is None  # again: nothing more


def test_without_git_a_line_covers_the_folder_it_names_or_a_folder_above(monkeypatch):
    monkeypatch.setattr(gitignore.git, "found", lambda: None)
    assert _added("/test_tipc/output/\ntest_tipc/.tipcgen_backup/\n**/lite/\n") == ["/data/lite/", "/models/trained"]
    assert _added(None) == WANTED


@needs_git
def test_the_users_git_configuration_is_not_read(monkeypatch, tmp_path):
    """A global excludes file of the user's would make init think a folder is ignored in the repository."""
    excludes = tmp_path / "excludes"
    excludes.write_text("/test_tipc/\n/data/\n/models/\n")
    (tmp_path / ".gitconfig").write_text(f"[core]\n\texcludesFile = {excludes}\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / ".gitconfig"))
    assert _added("") == WANTED


def test_a_data_folder_at_the_repository_root_is_never_ignored_and_init_stays_idempotent():
    """data.dir '.' (the tutorial layout's data in the repository itself) adds no '/./' line: such a line matched
    nothing for git, so every init appended it again (and an ignore of the root would hide the repository)."""
    from types import SimpleNamespace

    data = SimpleNamespace(dir=".", files=[], setup=[], trained_model="output/model_infer")
    wanted = gitignore.entries(SimpleNamespace(data=data))
    assert "/./" not in wanted and "/" not in wanted and "/output/model_infer" in wanted, wanted
    text = gitignore.merged(None, wanted)
    assert text is not None and gitignore.merged(text, wanted) is None
