"""lint says what it did not check, and counts, selects and leaves out rules (issue #57 item 4)."""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT, tipcgen

P2O = ROOT / "test_tipc/configs/bert_sst2/model_linux_gpu_normal_normal_paddle2onnx_python_linux_cpu.txt"
BASIC = ROOT / "test_tipc/configs/bert_sst2/train_infer_python.txt"


def test_a_paddle2onnx_config_with_a_line_deleted_is_said_not_to_be_position_checked(tmp_path):
    """Before: `0 error(s)` and nothing else, as if the file had been checked line by line."""
    lines = P2O.read_text().splitlines(keepends=True)
    broken = tmp_path / "p2o.txt"
    broken.write_text("".join(lines[:4] + lines[5:]))
    proc = tipcgen("lint", str(broken))
    assert proc.returncode == 0, proc.stderr
    assert f"{broken}:1: info not-position-checked a paddle2onnx config" in proc.stdout
    assert "1 file(s) whose lines' positions were not checked" in proc.stderr


def test_a_config_whose_positions_are_checked_gets_no_such_finding():
    from tipcgen.configs import lint

    found = lint.lint_report([BASIC])
    assert [f.rule for f in found] == ["family"], found
    for kind in ("train_infer_python", "tutorial_32", "ptq", "kl_quant", "dy2static"):
        assert lint.position_checked(kind), kind
    for kind in ("paddle2onnx", "serving", "cpp", "lite", "infer_python", "unknown"):
        assert not lint.position_checked(kind), kind


def _with_errors(tmp_path: Path) -> Path:
    """The sample's basic config with CRLF endings (an error per line) and a pinned python (a warning)."""
    text = BASIC.read_text().replace("python:python", "python:python3.7")
    path = tmp_path / "crlf" / "train_infer_python.txt"
    path.parent.mkdir()
    path.write_bytes(text.replace("\n", "\r\n").encode())
    return path


def test_statistics_count_each_rule_and_select_and_ignore_filter_the_findings_and_the_exit_code(tmp_path):
    path = _with_errors(tmp_path)
    stats = tipcgen("lint", str(path), "--statistics")
    rows = [line.split() for line in stats.stdout.splitlines()]
    counts = {rule: int(n) for n, rule, _ in rows}
    assert counts["crlf"] >= 1 and counts["python-version"] == 1 and stats.returncode == 1, stats.stdout
    assert [int(row[0]) for row in rows] == sorted((int(row[0]) for row in rows), reverse=True), "most first"
    as_json = json.loads(tipcgen("lint", str(path), "--statistics", "--format", "json").stdout)
    assert {row["rule"]: row["count"] for row in as_json} == counts
    selected = tipcgen("lint", str(path), "--select", "python-version")
    assert selected.returncode == 0 and re.findall(r" (?:error|warning|info) (\S+)", selected.stdout) == ["python-version"]
    ignored = tipcgen("lint", str(path), "--ignore", "crlf,python-version", "--ignore", "family")
    assert ignored.returncode == 0 and ignored.stdout == "", ignored.stdout
    assert ignored.stderr.startswith("0 error(s), 0 warning(s)")
    kept = tipcgen("lint", str(path), "--ignore", "python-version")
    assert kept.returncode == 1 and "crlf" in kept.stdout, "an error not ignored still fails"


def test_an_unknown_rule_is_one_error_naming_the_rules(tmp_path):
    proc = tipcgen("lint", str(BASIC), "--select", "crlf,no-such-rule")
    assert proc.returncode == 2 and "--select no-such-rule: no such lint rule" in proc.stderr
    assert "trailing-space" in proc.stderr and "Traceback" not in proc.stderr


def test_every_rule_the_linter_reports_is_in_the_table_select_knows():
    from tipcgen.configs import lint

    sources = "".join(p.read_text() for p in (ROOT / "tipcgen/configs").glob("*.py"))
    emitted = set(re.findall(r'"([a-z0-9]+(?:-[a-z0-9]+)+)", "(?:error|warning|info)"', sources))
    assert emitted and emitted <= set(lint.RULES), emitted - set(lint.RULES)


# A per-line silence (#57 item 4): a .tipcgen-lint beside the configs, since a config line cannot hold a comment.

def _repo(tmp_path: Path, silences: str | None = None) -> Path:
    """test_tipc/configs/m/train_infer_python.txt (the sample's, python pinned: a warning on line 3, key python;
    CRLF on line 9 only: an error there) and test_tipc/.tipcgen-lint holding silences."""
    lines = BASIC.read_text().replace("python:python\n", "python:python3.7\n").splitlines(keepends=True)
    lines[8] = lines[8].replace("\n", "\r\n")
    config = tmp_path / "test_tipc/configs/m/train_infer_python.txt"
    config.parent.mkdir(parents=True)
    config.write_bytes("".join(lines).encode())
    if silences is not None:
        (tmp_path / "test_tipc/.tipcgen-lint").write_text(silences)
    return tmp_path


def _rules(out: str) -> list[tuple[str, str]]:
    return re.findall(r":(\d+): (?:error|warning|info) (\S+)", out)


def test_without_silences_the_findings_are_the_warning_and_the_error(tmp_path):
    repo = _repo(tmp_path)
    proc = tipcgen("lint", "test_tipc/configs", cwd=repo)
    assert proc.returncode == 1 and ("3", "python-version") in _rules(proc.stdout) and ("9", "crlf") in _rules(proc.stdout)
    assert "silenced" not in proc.stderr


def test_a_silence_by_line_or_key_quiets_that_finding_only_and_is_counted(tmp_path):
    repo = _repo(tmp_path, "# why each is fine\n"
                           "configs/m/train_infer_python.txt:python python-version   # our CI pins it\n"
                           "configs/*/train_infer_python.txt:9 crlf,trailing-space\n")
    proc = tipcgen("lint", "test_tipc/configs", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the silenced error no longer fails
    assert _rules(proc.stdout) == [("1", "family")], proc.stdout
    assert proc.stderr.strip().endswith("0 error(s), 0 warning(s); 2 silenced (test_tipc/.tipcgen-lint)"), proc.stderr
    # The same from the test_tipc folder: the file is found above the config, its paths relative to itself.
    assert tipcgen("lint", "configs/m/train_infer_python.txt", cwd=repo / "test_tipc").returncode == 0


def test_a_silence_that_names_another_rule_line_or_key_silences_nothing_and_is_reported_unused(tmp_path):
    repo = _repo(tmp_path, "configs/m/train_infer_python.txt:3 crlf\n"  # the line's finding is another rule
                           "configs/m/train_infer_python.txt:10 crlf\n"  # a line with no finding
                           "configs/m/train_infer_python.txt:--epochs python-version\n"  # another key
                           "configs/other/*.txt crlf\n")  # a config not linted now: not judged
    proc = tipcgen("lint", "test_tipc/configs", cwd=repo)
    assert proc.returncode == 1 and ("9", "crlf") in _rules(proc.stdout) and ("3", "python-version") in _rules(proc.stdout)
    unused = re.findall(r"^test_tipc/\.tipcgen-lint:(\d+): warning unused-silence (\S+)", proc.stdout, re.MULTILINE)
    assert unused == [("1", "configs/m/train_infer_python.txt:3"), ("2", "configs/m/train_infer_python.txt:10"),
                      ("3", "configs/m/train_infer_python.txt:--epochs")], proc.stdout
    assert "silenced" not in proc.stderr.splitlines()[-1]
    quiet = tipcgen("lint", "test_tipc/configs", "--ignore", "unused-silence", cwd=repo)
    assert "unused-silence" not in quiet.stdout


def test_the_nearest_file_is_the_one_read(tmp_path):
    repo = _repo(tmp_path, "configs/m/train_infer_python.txt crlf,python-version\n")
    (repo / "test_tipc/configs/m/.tipcgen-lint").write_text("train_infer_python.txt python-version\n")
    proc = tipcgen("lint", "test_tipc/configs", cwd=repo)
    assert proc.returncode == 1 and _rules(proc.stdout) == [("1", "family"), ("9", "crlf")], proc.stdout
    assert "1 silenced (test_tipc/configs/m/.tipcgen-lint)" in proc.stderr


@pytest.mark.parametrize("line, words", [
    ("configs/m/train_infer_python.txt", "is not a silence"),
    ("configs/m/train_infer_python.txt crlf extra", "is not a silence"),
    ("configs/m/train_infer_python.txt no-such-rule", "no-such-rule: no such lint rule"),
    ("configs/m/train_infer_python.txt:0 crlf", "a config has no line 0"),
    (":9 crlf", "names no config"),
])
def test_a_line_that_is_not_a_silence_is_one_error_naming_the_file_and_line(tmp_path, line, words):
    repo = _repo(tmp_path, f"# ok\n{line}\n")
    proc = tipcgen("lint", "test_tipc/configs", cwd=repo)
    assert proc.returncode == 2 and "test_tipc/.tipcgen-lint:2: " in proc.stderr and words in proc.stderr, proc.stderr
    assert "hint:" in proc.stderr and "Traceback" not in proc.stderr


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(list("ab:/#*?,. \t\n-019") + ["crlf", "family", "configs/m/", "\x00", "é", "\r"]),
                max_size=30).map("".join))
def test_any_silences_file_is_read_or_refused_by_name(text):
    from tipcgen.configs import lint_silence
    from tipcgen.core.errors import TipcgenError

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ".tipcgen-lint"
        path.write_text(text, encoding="utf-8")
        try:
            silences = lint_silence.read(path)
        except TipcgenError as exc:
            assert str(path) in exc.message and exc.hint
        else:
            assert all(s.rules and s.pattern and s.number >= 1 for s in silences)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_silences_of_some_findings_take_exactly_those_out(tmp_path_factory, data):
    """Findings (CRLF on every line: one per line) silenced by line and rule: those and no other are taken out; each
    silence that named no finding is reported once."""
    from tipcgen.configs import lint, lint_silence

    repo = tmp_path_factory.mktemp("silences")
    config = repo / "c" / "train_infer_python.txt"
    config.parent.mkdir()
    config.write_bytes(BASIC.read_bytes().replace(b"\n", b"\r\n"))
    found = lint.lint_report([config])
    lines = data.draw(st.sets(st.integers(1, 60), max_size=8))
    (repo / ".tipcgen-lint").write_text("".join(f"c/train_infer_python.txt:{n} crlf\n" for n in sorted(lines)))
    outcome = lint_silence.apply(found, [config])
    hit = {f.line for f in found if f.rule == "crlf"} & lines
    assert sorted(f.line for f in outcome.silenced) == sorted(hit) and all(f.rule == "crlf" for f in outcome.silenced)
    assert outcome.kept == [f for f in found if not (f.rule == "crlf" and f.line in lines)]
    assert len(outcome.unused) == len(lines - hit)


@pytest.mark.parametrize("shape", ["folder", "fifo"])
def test_a_silences_file_that_is_no_regular_file_is_refused_by_name(tmp_path, shape):
    """(A link to a file is read as that file, as a linked config is: the user's own settings, read, never written.)"""
    import os

    repo = _repo(tmp_path)
    path = repo / "test_tipc/.tipcgen-lint"
    if shape == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)  # read, it would block lint for ever
    proc = tipcgen("lint", "test_tipc/configs", cwd=repo, timeout=60)
    assert proc.returncode == 2 and ".tipcgen-lint" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
