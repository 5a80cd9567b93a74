"""lint says what it did not check, and counts, selects and leaves out rules (issue #57 item 4)."""
from __future__ import annotations

import json
import re
from pathlib import Path

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
