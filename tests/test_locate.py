"""Commands find their folder (issue #57 item 2), as pytest finds its rootdir: from any subfolder of a
repository, up to the folder holding test_tipc/ (else the descriptor's, else the git root); `-c MODEL` as well as
a config's path; a --root that does not exist is said to be missing (exit 2). Each command that reads a
repository is run from a subfolder of a real stub repository that has run once."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_stub_repo, tipcgen

MODE = "lite_train_lite_infer"


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    """A stub repository with one lite run (a subfolder is `stub/deep/`)."""
    repo = tmp_path_factory.mktemp("locate") / "repo"
    make_stub_repo(repo, repo / "stub" / "tipc.yaml")  # the answers file names the copy: update reads it
    (repo / "stub" / "deep").mkdir()
    tipcgen("run", cwd=repo, check=True)
    return repo


def test_the_root_is_the_nearest_folder_holding_test_tipc_then_the_descriptors_then_the_git_root(tmp_path):
    from tipcgen.configs.locate import find_root

    deep = tmp_path / "repo" / "a" / "b"
    deep.mkdir(parents=True)
    assert find_root(None, deep) == deep, "nothing above: the folder itself"
    (tmp_path / "repo" / ".git").mkdir()
    assert find_root(None, deep) == tmp_path / "repo"
    (tmp_path / "repo" / "a" / "tipc.yaml").write_text("model_name: m\n")
    assert find_root(None, deep) == tmp_path / "repo" / "a", "a descriptor's folder before the git root"
    (tmp_path / "repo" / "test_tipc").mkdir()
    assert find_root(None, deep) == tmp_path / "repo", "test_tipc/ before a nearer descriptor"
    (deep / "test_tipc").mkdir()
    assert find_root(None, deep) == deep, "the nearest test_tipc/"
    (deep / "test_tipc").rmdir()
    (tmp_path / "repo" / "a" / ".tipcgen-answers.yml").write_text("")
    assert find_root(None, deep) == tmp_path / "repo" / "a", "init's answers file marks a root as test_tipc/ does"


def test_a_given_root_is_taken_as_it_is_and_a_missing_one_is_an_error(tmp_path):
    from tipcgen.configs.locate import find_root
    from tipcgen.core.errors import TipcgenError

    assert find_root(tmp_path, tmp_path / "elsewhere") == tmp_path
    with pytest.raises(TipcgenError, match="no such folder"):
        find_root(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(TipcgenError, match="is not a folder"):
        find_root(tmp_path / "file")


@pytest.mark.parametrize("command", [
    ["run"], ["doctor"], ["report"], ["accept"], ["update", "--diff"], ["golden", "stub_model"],
    ["suite", "--lint-only"],
])
def test_a_missing_root_is_said_to_be_missing_with_exit_2(command, tmp_path):
    proc = tipcgen(*command, "--root", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert proc.returncode == 2 and f"--root {tmp_path / 'nowhere'}: no such folder" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_from_a_subfolder_finds_the_repository_and_a_models_name_names_its_config(ran):
    sub = ran / "stub" / "deep"
    proc = tipcgen("run", "-q", cwd=sub)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "summary: ../../test_tipc/output/stub_model/lite_train_lite_infer/summary.json" in proc.stdout
    by_name = tipcgen("run", "-q", "-c", "stub_model", cwd=sub)
    assert by_name.returncode == 0, by_name.stdout + by_name.stderr
    assert "test_tipc/configs/stub_model/train_infer_python.txt" in by_name.stdout
    by_path = tipcgen("run", "-q", "-c", "../../test_tipc/configs/stub_model/train_infer_python.txt", cwd=sub)
    assert by_path.returncode == 0, "a config's path from the current folder: " + by_path.stderr
    unknown = tipcgen("run", "-c", "no_such_model", cwd=sub)
    assert unknown.returncode == 2 and "nor a model of test_tipc/configs: stub_model" in unknown.stderr, unknown.stderr


def test_doctor_from_a_subfolder_checks_the_repositorys_config(ran, doctor_probes_once):
    proc = tipcgen("doctor", "-c", "stub_model", cwd=ran / "stub" / "deep")
    assert "no test_tipc/configs" not in proc.stdout + proc.stderr
    assert "train_infer_python.txt" in proc.stdout and proc.returncode in (0, 1), proc.stdout + proc.stderr


def test_report_and_accept_from_a_subfolder_find_the_newest_run(ran):
    sub = ran / "stub" / "deep"
    report = tipcgen("report", "--format", "md", cwd=sub)
    assert report.returncode == 0 and f"stub_model / {MODE}" in report.stdout, report.stdout + report.stderr
    accept = tipcgen("accept", "--format", "json", cwd=sub)
    assert accept.returncode in (0, 1) and "no summary.json" not in accept.stderr, accept.stderr
    assert accept.stdout.lstrip().startswith("{"), accept.stdout


def test_update_from_a_subfolder_finds_the_rendered_repository(ran):
    update = tipcgen("update", "--diff", cwd=ran / "stub" / "deep")
    assert update.returncode == 0 and "0 file(s) would change" in update.stdout, update.stdout + update.stderr


def test_suite_from_a_subfolder_plans_the_repositorys_configs(ran):
    proc = tipcgen("suite", "--lint-only", cwd=ran / "stub" / "deep")
    assert proc.returncode == 0 and "1 chain(s) to run" in proc.stderr, proc.stdout + proc.stderr
    assert "stub_model/basic/" in proc.stdout
