"""`tipcgen update`: the answers file init writes, and a three-way merge that keeps the user's edits.

No paddle: the stub descriptor (tests/fixtures/stub) is rendered, edited and re-rendered in real
`tipcgen` processes; the merge is git's own `git merge-file`.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tipcgen.descriptor import answers
from tipcgen.render import repository
from tipcgen.render import update
from tipcgen.core import writes
from tipcgen.core.errors import TipcgenError
from tipcgen.format import paths

from conftest import fail_nth_replace, make_stub_repo, tipcgen

README = "test_tipc/README.md"
DOC = "test_tipc/docs/test_train_inference_python.md"
CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"
INTRO = "This folder holds the TIPC basic chain (基础训练预测) of **stub_model**"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="update merges with git merge-file")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The stub project with its descriptor inside, rendered by init."""
    return make_stub_repo(tmp_path, tmp_path / "stub" / "tipc.yaml")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def describe(repo: Path) -> None:
    """The descriptor change of these tests: a description (README) and a second CPU thread count (config, docs)."""
    descriptor = repo / "stub" / "tipc.yaml"
    edit(descriptor, "model_name: stub_model\n", "model_name: stub_model\ndescription: A stand-in model.\n")
    edit(descriptor, "cpu_threads: {key: --cpu_threads, value: 1}", "cpu_threads: {key: --cpu_threads, value: [1, 4]}")


# ---------------------------------------------------------------- what init records

def test_init_records_its_answers_and_base_outside_test_tipc(repo: Path):
    recorded = answers.read(repo)
    assert recorded.descriptor == "stub/tipc.yaml" and recorded.devices == "all"
    assert recorded.descriptor_sha256 == answers.sha256_of(repo / "stub" / "tipc.yaml")
    assert README in recorded.files and CONFIG in recorded.files
    for rel in recorded.files:
        assert (repo / answers.base_path(rel)).read_bytes() == (repo / rel).read_bytes()
    assert not list((repo / "test_tipc").rglob("*answers*")) and not (repo / "test_tipc" / ".tipcgen").exists()


def test_a_repeated_init_changes_nothing(repo: Path):
    before = snapshot(repo)
    proc = tipcgen("init", "stub/tipc.yaml", cwd=repo, check=True)
    assert "0 file(s) written" in proc.stdout
    assert snapshot(repo) == before  # no timestamps anywhere


def test_a_sample_is_recorded_by_name(tmp_path: Path):
    tipcgen("init", "bert-sst2", "--devices", "cpu", "--output", str(tmp_path), check=True)
    recorded = answers.read(tmp_path)
    assert (recorded.descriptor, recorded.devices) == ("bert-sst2", "cpu")
    assert "sample_models/bert-sst2/train.py" in recorded.files  # the sample's own files are tracked too
    proc = tipcgen("update", "--output", str(tmp_path), check=True)
    assert "0 file(s) changed, 0 conflict(s)" in proc.stdout


def test_init_force_still_backs_up_and_moves_the_base(repo: Path):
    edit(repo / README, INTRO, "My own introduction")
    proc = tipcgen("init", "stub/tipc.yaml", cwd=repo)
    assert proc.returncode == 2 and README in proc.stderr and "tipcgen update" in proc.stderr
    tipcgen("init", "stub/tipc.yaml", "--force", cwd=repo, check=True)
    assert list((repo / ".tipcgen" / "backup").rglob("README.md"))
    assert INTRO in (repo / README).read_text() and (repo / answers.base_path(README)).read_bytes() == (repo / README).read_bytes()


# ---------------------------------------------------------------- update

def test_update_keeps_the_users_edit_and_takes_the_descriptor_change(repo: Path):
    with (repo / README).open("a", encoding="utf-8") as readme:
        readme.write("\n## Our notes\n\nCPU first, then GPU.\n")
    describe(repo)
    proc = tipcgen("update", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    readme = (repo / README).read_text()
    assert readme.endswith("## Our notes\n\nCPU first, then GPU.\n")  # the user's edit survives
    assert f"{INTRO}: A stand-in model." in readme      # the descriptor's change arrives in the same file
    assert "--cpu_threads:1|4" in (repo / CONFIG).read_text()
    assert "| 1/4 |" in (repo / DOC).read_text()
    assert "merged" in proc.stdout and "updated" in proc.stdout
    recorded = answers.read(repo)
    assert recorded.descriptor_sha256 == answers.sha256_of(repo / "stub" / "tipc.yaml")
    # the merge base is now the new render (not the user's file), so the next update has nothing to do
    assert INTRO + ": A stand-in model." in (repo / answers.base_path(README)).read_text()
    assert "Our notes" not in (repo / answers.base_path(README)).read_text()
    again = tipcgen("update", cwd=repo, check=True)
    assert "0 file(s) changed, 0 conflict(s), 1 kept" in again.stdout


def test_a_conflicting_edit_is_reported_and_the_file_left_untouched(repo: Path):
    edit(repo / README, INTRO, "This folder is OUR chain for **stub_model**")
    describe(repo)
    mine = (repo / README).read_bytes()
    base = (repo / answers.base_path(README)).read_bytes()
    proc = tipcgen("update", cwd=repo)
    assert proc.returncode == 1
    assert "conflict" in proc.stdout and README in proc.stdout and "conflicts:" in proc.stderr
    assert (repo / README).read_bytes() == mine                       # never resolved silently
    assert (repo / answers.base_path(README)).read_bytes() == base    # the same merge is retried next time
    assert "--cpu_threads:1|4" in (repo / CONFIG).read_text()         # clean files are still updated
    assert tipcgen("update", cwd=repo).returncode == 1                # and it stays a conflict


def test_conflict_markers_on_request_then_resolved(repo: Path):
    edit(repo / README, INTRO, "This folder is OUR chain for **stub_model**")
    describe(repo)
    proc = tipcgen("update", "--conflict", "markers", cwd=repo)
    assert proc.returncode == 1
    text = (repo / README).read_text()
    assert f"<<<<<<< {README} (yours)" in text and f">>>>>>> {README} (new render)" in text
    assert "This folder is OUR chain" in text and "A stand-in model." in text
    unresolved = tipcgen("update", cwd=repo)
    assert unresolved.returncode == 1 and "conflict markers" in unresolved.stdout
    resolved = [line for line in text.splitlines(keepends=True)
                if not line.startswith(("<<<<<<<", "=======", ">>>>>>>")) and not line.startswith(INTRO)]
    (repo / README).write_text("".join(resolved))
    proc = tipcgen("update", cwd=repo, check=True)
    assert "This folder is OUR chain" in (repo / README).read_text()


def test_diff_shows_the_change_and_writes_nothing(repo: Path):
    with (repo / README).open("a", encoding="utf-8") as readme:
        readme.write("\nOur notes.\n")
    describe(repo)
    before = snapshot(repo)
    proc = tipcgen("update", "--diff", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert snapshot(repo) == before
    assert f"--- a/{CONFIG}" in proc.stdout and "+--cpu_threads:1|4" in proc.stdout
    assert f"+{INTRO}: A stand-in model." in proc.stdout and "nothing was written" in proc.stdout


def test_diff_exits_1_when_update_would_conflict(repo: Path):
    edit(repo / README, INTRO, "Ours")
    describe(repo)
    before = snapshot(repo)
    proc = tipcgen("update", "--diff", cwd=repo)
    assert proc.returncode == 1 and "<<<<<<<" in proc.stdout
    assert snapshot(repo) == before


def test_renamed_model_removes_untouched_files_and_creates_new_ones(repo: Path):
    edit(repo / "stub" / "tipc.yaml", "model_name: stub_model", "model_name: stub_renamed")
    proc = tipcgen("update", cwd=repo, check=True)
    assert not (repo / CONFIG).exists() and not (repo / answers.base_path(CONFIG)).exists()
    new_config = repo / "test_tipc/configs/stub_renamed/train_infer_python.txt"
    assert new_config.is_file() and "removed" in proc.stdout and "created" in proc.stdout
    assert CONFIG not in answers.read(repo).files


def test_an_edited_file_the_render_drops_is_a_conflict(repo: Path):
    edit(repo / CONFIG, "--cpu_threads:1", "--cpu_threads:2")
    edit(repo / "stub" / "tipc.yaml", "model_name: stub_model", "model_name: stub_renamed")
    proc = tipcgen("update", cwd=repo)
    assert proc.returncode == 1 and "no longer rendered" in proc.stdout
    assert "--cpu_threads:2" in (repo / CONFIG).read_text()


def test_a_new_render_never_overwrites_a_file_of_yours(repo: Path):
    (repo / "test_tipc" / "compare_results.py").write_text("# my own checker\n")
    with (repo / "stub" / "tipc.yaml").open("a") as descriptor:
        descriptor.write("checks: {golden: golden}\n")  # now tipcgen renders test_tipc/compare_results.py
    proc = tipcgen("update", cwd=repo)
    assert proc.returncode == 1 and "a different one of yours is there" in proc.stdout
    assert (repo / "test_tipc" / "compare_results.py").read_text() == "# my own checker\n"


def test_a_file_the_user_deleted_stays_deleted(repo: Path):
    (repo / DOC).unlink()
    proc = tipcgen("update", cwd=repo, check=True)
    assert not (repo / DOC).exists() and "kept" in proc.stdout


def test_update_without_answers_says_what_to_do(tmp_path: Path):
    proc = tipcgen("update", "--output", str(tmp_path))
    assert proc.returncode == 2 and ".tipcgen-answers.yml" in proc.stderr and "tipcgen init" in proc.stderr
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------- the pieces

def test_merge_needs_git_and_says_so(monkeypatch):
    monkeypatch.setattr(update.git, "found", lambda: None)
    with pytest.raises(TipcgenError, match="needs git"):
        update.merge3(b"a\n", b"b\n", b"c\n", "x.txt")


def test_merge3_clean_and_conflicting():
    base = b"one\ntwo\nthree\nfour\nfive\n"
    merged, conflicts = update.merge3(b"ONE\ntwo\nthree\nfour\nfive\n", base, b"one\ntwo\nthree\nfour\nFIVE\n", "f")
    assert (merged, conflicts) == (b"ONE\ntwo\nthree\nfour\nFIVE\n", 0)
    merged, conflicts = update.merge3(b"mine\ntwo\n", b"one\ntwo\n", b"theirs\ntwo\n", "f")
    assert conflicts == 1 and b"<<<<<<< f (yours)" in merged


def test_write_tree_owned_files_and_removals(tmp_path: Path):
    (tmp_path / "user.txt").write_text("edited")
    (tmp_path / "book.txt").write_text("old")
    (tmp_path / "gone.txt").write_text("bye")
    with pytest.raises(TipcgenError):  # a user's changed file still needs force
        repository.write_tree({"user.txt": "new", "book.txt": "new"}, tmp_path, owned={"book.txt"})
    written = repository.write_tree({"book.txt": "new"}, tmp_path, owned={"book.txt"}, remove=["gone.txt", "absent.txt"])
    assert {w.path: w.action for w in written} == {"book.txt": "updated", "gone.txt": "removed"}
    assert (tmp_path / "book.txt").read_text() == "new" and not (tmp_path / "gone.txt").exists()
    assert [p.name for p in (tmp_path / ".tipcgen" / "backup").rglob("*.txt")] == ["gone.txt"]  # owned: no backup


def test_a_failed_write_puts_removed_and_owned_files_back(tmp_path: Path, monkeypatch):
    (tmp_path / "book.txt").write_text("old")
    (tmp_path / "gone.txt").write_text("bye")
    fail_nth_replace(monkeypatch, writes, 2)
    with pytest.raises(TipcgenError, match="disk full"):
        repository.write_tree({"book.txt": "new", "c.txt": "c"}, tmp_path, owned={"book.txt"}, remove=["gone.txt"],
                              backup=False)
    assert (tmp_path / "book.txt").read_text() == "old" and (tmp_path / "gone.txt").read_text() == "bye"
    assert not (tmp_path / "c.txt").exists() and not list(tmp_path.glob(".tipcgen-stage-*"))


def test_answers_file_damage_is_an_error_naming_the_field(tmp_path: Path):
    (tmp_path / paths.ANSWERS).write_text("tipcgen_version: '0.1.0'\ndescriptor: x.yaml\n")
    with pytest.raises(TipcgenError, match="descriptor_sha256 is missing"):
        answers.read(tmp_path)
    with pytest.raises(TipcgenError, match="relative paths"):
        answers.parse("tipcgen_version: '1'\ndescriptor: d\ndescriptor_sha256: x\ndevices: all\nfiles: [../etc/passwd]\n",
                      "a.yml")


# ---------------------------------------------------------------- a file whose functions moved

COMMON, STEPS = paths.COMMON_FUNC, paths.STEPS_SH


def rendered_before_the_split(repo: Path) -> str:
    """The repository as a tipcgen before #37 rendered it: one common_func.sh with the checks and steps
    (here: today's two files as one, the helpers last, as there), no tipc_steps.sh. Its text, also its merge base."""
    one = (repo / STEPS).read_text(encoding="utf-8") + (repo / COMMON).read_text(encoding="utf-8")
    for path in (repo / COMMON, repo / answers.base_path(COMMON)):
        path.write_text(one, encoding="utf-8")
    for path in (repo / STEPS, repo / answers.base_path(STEPS)):
        path.unlink()
    edit(repo / paths.ANSWERS, f'  - "{STEPS}"\n', "")
    return one


def test_an_edit_of_a_function_that_moved_is_a_conflict_naming_where_it_went(repo: Path):
    """A user's edit of a step function in the old common_func.sh is never dropped silently: update leaves the
    file as it is, reports a conflict that names tipc_steps.sh, and still writes tipc_steps.sh."""
    rendered_before_the_split(repo)
    edit(repo / COMMON, "        reason=\"exit code $rc\"\n", "        reason=\"exit code $rc (ours)\"\n")
    mine = (repo / COMMON).read_bytes()
    proc = tipcgen("update", cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(line for line in proc.stdout.splitlines() if COMMON in line)
    assert "conflict" in line and f"to {STEPS}: carry an edit of them there" in line and "tipc_" in line, proc.stdout
    assert (repo / COMMON).read_bytes() == mine
    assert "tipc_step() {" in (repo / STEPS).read_text(encoding="utf-8")


def test_an_own_helper_added_to_the_old_common_func_is_kept_by_the_merge(repo: Path):
    """An edit outside the moved functions (a helper of the user's own at the end) merges cleanly into the new,
    short common_func.sh."""
    rendered_before_the_split(repo)
    text = (repo / COMMON).read_text(encoding="utf-8") + "\nmy_helper() { printf 'mine\\n'; }\n"
    (repo / COMMON).write_text(text, encoding="utf-8")
    proc = tipcgen("update", cwd=repo, check=True)
    assert "conflict" not in proc.stdout.replace("0 conflict(s)", ""), proc.stdout
    merged = (repo / COMMON).read_text(encoding="utf-8")
    assert merged.endswith("\nmy_helper() { printf 'mine\\n'; }\n") and "tipc_step() {" not in merged
    assert "tipc_step() {" in (repo / STEPS).read_text(encoding="utf-8")
