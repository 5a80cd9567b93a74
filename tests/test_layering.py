"""The import graph of tipcgen/ against the layer table of docs/ARCHITECTURE.md (read from the doc:
the table is the one statement of the layering). Static: the modules are parsed, never imported."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "tipcgen"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
# The rules within a layer (docs/ARCHITECTURE.md, "Rules within a layer").
FORBIDDEN = {
    **{m: {"render", "update", "new", "templating"} for m in ("results", "report_bench", "report_logs", "accept_repo")},
    **{m: {"results", "report_bench", "report_logs", "accept_repo", "run", "submission_run"}
       for m in ("render", "update", "new")},
    "run": {"render", "lint"},
}


def layers() -> dict[str, int]:
    out = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        row = re.match(r"^\| (\d) \| [^|]+ \| (.+) \|$", line)
        if row:
            for name in re.findall(r"`([A-Za-z_]+)`", row.group(2)):
                assert name not in out, f"{name} is placed twice in docs/ARCHITECTURE.md"
                out[name] = int(row.group(1))
    return out


def imports(path: Path, modules: set[str]) -> set[str]:
    """The tipcgen modules a file imports at run time, at the top or inside a function (relative or absolute)."""
    found, tree = set(), ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for n in ast.walk(block)}  # `if TYPE_CHECKING:` imports run only for type checkers
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 or (node.module or "").split(".")[0] == "tipcgen":
                module = (node.module or "").removeprefix("tipcgen").lstrip(".")
                names = [module.split(".")[0]] if module else [alias.name for alias in node.names]
                found.update(n for n in names if n in modules)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("tipcgen.")
                         and a.name.split(".")[1] in modules)
    return found - {path.stem}


def graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return {name: imports(PACKAGE / f"{name}.py", modules) for name in modules}


def test_every_module_has_a_layer_and_every_layer_row_a_module():
    table, modules = layers(), set(graph())
    assert len(table) > 40, "the layer table of docs/ARCHITECTURE.md was not found"
    assert modules - set(table) == set(), "place these modules in docs/ARCHITECTURE.md's layer table"
    assert set(table) - modules == set(), "the layer table names modules that do not exist"


def test_no_import_against_the_layers():
    table, wrong = layers(), []
    for module, deps in sorted(graph().items()):
        for dep in sorted(deps):
            if table[dep] > table[module]:
                wrong.append(f"{module} (layer {table[module]}) imports {dep} (layer {table[dep]})")
            if dep in FORBIDDEN.get(module, ()):
                wrong.append(f"{module} imports {dep}, which docs/ARCHITECTURE.md's rules forbid")
    assert wrong == []


def test_no_import_cycle():
    edges, seen, stack, cycles = graph(), set(), [], []

    def visit(node: str) -> None:
        if node in stack:
            cycles.append(stack[stack.index(node):] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        stack.append(node)
        for dep in sorted(edges[node]):
            visit(dep)
        stack.pop()

    for module in sorted(edges):
        visit(module)
    assert cycles == []


def test_the_checker_sees_a_wrong_import(tmp_path: Path):
    """The test can fail: an import of a higher layer, written the ways the package writes imports, is seen."""
    modules = set(graph())
    for text in ("from .cli import app\n", "from tipcgen import report\n", "def f():\n    from . import run\n"):
        (tmp_path / "results.py").write_text(text)
        assert imports(tmp_path / "results.py", modules) & {"cli", "report", "run"}, text
