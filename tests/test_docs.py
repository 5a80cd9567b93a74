"""The docs' claims kept true after a change (#29: docs that match the code): every file path a doc names
exists, every test a doc cites by name exists, the README's command table lists every command once, in
`tipcgen --help`'s order, naming only options it has, and every module says its one job and is named in its
package's row of docs/ARCHITECTURE.md (which names no module that is gone). docs/PERFORMANCE.md is a dated log of
measurements: what it says of files that are gone was true when it was written, so its paths are not checked."""
from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

from conftest import ROOT, nodes, parsed

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CHECKED = [doc for doc in DOCS if doc.name != "PERFORMANCE.md"]
_PATH = re.compile(r"(?<![\w/.])((?:tipcgen|tests|templates|bench|sample_models|docs)/[A-Za-z0-9_./*<>-]+)")
# Paths that are right though not in this tree: inside test_tipc/ (ACCEPTANCE lists the tree a reviewer checks,
# relative to it) and inside the installed wheel (the package keeps sample_models/ there).
ELSEWHERE = {("ACCEPTANCE.md", "docs/test_train_inference_python.md"), ("RELIABILITY.md", "tipcgen/sample_models/")}
_TEST = re.compile(r"(test_\w+\.py)?::(test_\w+)")


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


def test_the_readme_table_lists_each_command_once_in_help_order_with_options_it_has():
    """One row per command, in the order `tipcgen --help` lists them (cli.app.ORDER), and every option a row
    names is one of that command's options (or of one of its subcommands: `align`)."""
    from typer.main import get_command

    from tipcgen.cli.app import ORDER, app

    group = get_command(app)
    rows = re.findall(r"^\| (`tipcgen ([a-z-]+).*?)(?<!\\)\| ", (ROOT / "README.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert [name for _, name in rows] == list(ORDER), "one row per command, in the order of tipcgen --help"
    drift = []
    for cell, name in rows:
        command = group.commands[name]
        options = {opt for c in (command, *getattr(command, "commands", {}).values())
                   for param in c.params for opt in (*param.opts, *param.secondary_opts)}
        drift += [f"{name} {opt}" for opt in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", cell) if opt not in options]
    assert drift == [], "README.md's command table names options the commands do not have"


def _package_rows() -> dict[str, str]:
    """The job column of each package's row in docs/ARCHITECTURE.md's table."""
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| \d+ \| `([a-z_]+)/` \| (.+) \|$", doc, re.MULTILINE)}


def test_every_module_says_its_one_job_and_its_package_names_it():
    """The house rule (shared/design/STYLE.md): a module has one job, split by cohesion, not by a line count. What a
    reviewer checks: the module's docstring opens by naming that job, and its package's row of ARCHITECTURE.md
    names the module (`name`, or a family `name*`), so one table says where each job lives."""
    rows, silent, unnamed = _package_rows(), [], []
    for path in sorted((ROOT / "tipcgen").rglob("*.py")):
        rel = path.relative_to(ROOT / "tipcgen")
        doc = ast.get_docstring(parsed(path)) or ""
        if not doc.split("\n", 1)[0].strip():
            silent.append(rel.as_posix())
        if len(rel.parts) > 1 and path.name != "__init__.py":
            named = re.findall(r"`([a-z_0-9]+\*?)`", rows.get(rel.parts[0], ""))
            if not any(fnmatch.fnmatch(path.stem, name) for name in named):
                unnamed.append(rel.as_posix())
    assert silent == [], "open these modules with a docstring that names their one job"
    assert unnamed == [], "name these modules (and their job) in their package's row of docs/ARCHITECTURE.md"


def _names_in_code(files: list[Path]) -> set[str]:
    """Every name the code of FILES defines or uses: functions, classes, variables, attributes, keywords,
    imported names, and word-like strings (a template's context key, a command's name)."""
    names: set[str] = set()
    for path in files:
        for node in nodes(path):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.update((node.asname or node.name).split("."), node.name.split("."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[a-z_]+", node.value):
                names.add(node.value)
    return names


def test_every_name_a_package_row_gives_is_still_in_its_package():
    """The other way round: a row of docs/ARCHITECTURE.md names no module that is gone. Each name it puts in
    backticks is a module of the package (or a family `name*`), or a name the package's code defines or uses
    (`write_tree`, `RunRequest`); another package's module is written with its folder (`repro/align`)."""
    stale = []
    for package, job in _package_rows().items():
        files = sorted((ROOT / "tipcgen" / package).rglob("*.py"))
        modules, names = {p.stem for p in files}, _names_in_code(files)
        stale += [f"{package}/: {name}" for name in re.findall(r"`([a-z_0-9]+\*?)`", job)
                  if not any(fnmatch.fnmatch(m, name) for m in modules) and name not in names]
    assert stale == [], "docs/ARCHITECTURE.md's package rows name modules that no longer exist there"


def test_the_checks_can_fail(tmp_path: Path):
    doc = tmp_path / "X.md"
    doc.write_text("see `tipcgen/no_such_module.py` and `test_cli.py::test_that_never_was`\n")
    assert [m.group(1) for m in _PATH.finditer(doc.read_text())] == ["tipcgen/no_such_module.py"]
    assert not (ROOT / "tipcgen/no_such_module.py").exists()
    assert _TEST.search(doc.read_text()).groups() == ("test_cli.py", "test_that_never_was")


def _full_tests() -> set[str]:
    """file::test of every test decorated @pytest.mark.full (read from the sources: no collection)."""
    found = set()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in nodes(path):
            if isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "pytest.mark.full" for d in node.decorator_list):
                found.add(f"{path.name}::{node.name}")
    return found


def test_the_full_runs_tests_are_the_ones_performance_md_lists():
    """docs/PERFORMANCE.md's table of the full run names every `full` test, and no other, with what every run keeps."""
    text = (ROOT / "docs" / "PERFORMANCE.md").read_text(encoding="utf-8")
    section = text.split("### Two runs of the suite", 1)[1].split("\n#", 1)[0]
    listed = set(re.findall(r"^\| `(test_\w+\.py::test_\w+)` \|", section, re.MULTILINE))
    assert listed == _full_tests() and len(listed) >= 1, "update the table in docs/PERFORMANCE.md, Two runs of the suite"


@pytest.mark.parametrize("whole_suite, full_env, markexpr, left_out", [
    (True, False, "", True), (True, True, "", False), (True, False, "full", False), (True, False, "not ray", True),
    (False, False, "", False)])
def test_a_whole_suite_run_leaves_the_full_tests_out_unless_asked(monkeypatch, whole_suite, full_env, markexpr, left_out):
    import types

    import conftest

    monkeypatch.setattr(conftest, "FULL_RUN", full_env)
    source = pytest.Config.ArgsSource.TESTPATHS if whole_suite else pytest.Config.ArgsSource.ARGS
    config = types.SimpleNamespace(args_source=source, option=types.SimpleNamespace(markexpr=markexpr))
    assert conftest._leaves_out_full(config) is left_out
    worker = types.SimpleNamespace(workerinput={"tipcgen_leave_full": left_out})  # a worker does as it is told
    assert conftest._leaves_out_full(worker) is left_out
