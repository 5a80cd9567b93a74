"""The docs' claims kept true after a change (#29: docs that match the code): every file path a doc names
exists, every test a doc cites by name exists, the README's command table lists every command, and no
module of the package outgrows a screen or two. docs/PERFORMANCE.md is a dated log of measurements: what
it says of files that are gone was true when it was written, so its paths are not checked."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CHECKED = [doc for doc in DOCS if doc.name != "PERFORMANCE.md"]
_PATH = re.compile(r"(?<![\w/.])((?:tipcgen|tests|templates|bench|sample_models|docs)/[A-Za-z0-9_./*<>-]+)")
# Paths that are right though not in this tree: inside test_tipc/ (ACCEPTANCE lists the tree a reviewer checks,
# relative to it) and inside the installed wheel (the package keeps sample_models/ there).
ELSEWHERE = {("ACCEPTANCE.md", "docs/test_train_inference_python.md"), ("RELIABILITY.md", "tipcgen/sample_models/")}
_TEST = re.compile(r"(test_\w+\.py)?::(test_\w+)")
MAX_LINES = 400


def _tests() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py")}


@pytest.mark.parametrize("doc", CHECKED, ids=lambda p: p.name)
def test_every_path_a_doc_names_exists(doc: Path):
    missing = []
    for match in _PATH.finditer(doc.read_text(encoding="utf-8")):
        path = match.group(1).rstrip(".,:;)")
        if any(c in path for c in "*<>") or path.startswith("bench/results") or (doc.name, path) in ELSEWHERE:
            continue  # a pattern, a placeholder, a benchmark's output
        if not (ROOT / path).exists():
            missing.append(path)
    assert missing == [], f"{doc.name} names files that do not exist"


@pytest.mark.parametrize("doc", CHECKED, ids=lambda p: p.name)
def test_every_test_a_doc_cites_exists(doc: Path):
    tests, missing = _tests(), []
    for match in _TEST.finditer(doc.read_text(encoding="utf-8")):
        file, name = match.groups()
        texts = [tests.get(file, "")] if file else list(tests.values())
        if not any(re.search(rf"^\s*def {name}\b", text, re.MULTILINE) for text in texts):
            missing.append(f"{file or ''}::{name}")
    assert missing == [], f"{doc.name} cites tests that do not exist"


def test_the_readme_lists_every_command():
    from tipcgen.cli.app import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `tipcgen ([a-z-]+)", readme, re.MULTILINE))
    commands = {c.name or c.callback.__name__ for c in app.registered_commands if not c.hidden}
    commands |= {g.name for g in app.registered_groups if g.name}
    assert commands - listed == set(), "add these commands to README.md's command table"
    assert listed - commands == set(), "README.md's command table lists commands that do not exist"


def test_no_module_outgrows_a_screen_or_two():
    """The house rule (docs/ARCHITECTURE.md): a module per job; past 400 lines a module is doing two."""
    long = {p.relative_to(ROOT).as_posix(): n for p in (ROOT / "tipcgen").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, "split these modules"


def test_the_checks_can_fail(tmp_path: Path):
    doc = tmp_path / "X.md"
    doc.write_text("see `tipcgen/no_such_module.py` and `test_cli.py::test_that_never_was`\n")
    assert [m.group(1) for m in _PATH.finditer(doc.read_text())] == ["tipcgen/no_such_module.py"]
    assert not (ROOT / "tipcgen/no_such_module.py").exists()
    assert _TEST.search(doc.read_text()).groups() == ("test_cli.py", "test_that_never_was")
