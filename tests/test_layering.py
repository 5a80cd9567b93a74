"""The import graph of tipcgen/ against the package table of docs/ARCHITECTURE.md (read from the doc:
the table is the one statement of the layering). Static: the modules are parsed, never imported."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT, nodes, parsed

PACKAGE = ROOT / "tipcgen"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
# The rules within the layering (docs/ARCHITECTURE.md, "Rules beside the table"): module -> modules it never imports.
_PURE_PARSERS = ("results.summary", "outputs.report_bench", "outputs.report_logs", "outputs.accept_repo")
FORBIDDEN = {
    **{m: {"render.repository", "render.update", "new.new", "render.templating"} for m in _PURE_PARSERS},
    "new.new": {"results.summary", *_PURE_PARSERS[1:], "run.pipeline", "run.submission_run"},
    "run.pipeline": {"render.repository", "configs.lint"},
}
# The package's root files: __init__ holds the version (a leaf anything may read), __main__ is `python -m tipcgen`.
ROOT_FILES = {"__init__", "__main__"}


def package_layers(doc: Path = DOC) -> dict[str, int]:
    out = {}
    for line in doc.read_text(encoding="utf-8").splitlines():
        row = re.match(r"^\| (\d+) \| `([a-z_]+)/` \| .+ \|$", line)
        if row:
            assert row.group(2) not in out, f"{row.group(2)} is placed twice in docs/ARCHITECTURE.md"
            out[row.group(2)] = int(row.group(1))
    return out


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """'pkg.module' (or 'pkg' for a package's __init__, or a root file's name) -> its file."""
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)] = path
    return out


def imports(path: Path, known: set[str], package: Path = PACKAGE) -> set[str]:
    """The tipcgen modules a file imports at run time, at the top or inside a function (relative or absolute)."""
    found = set()
    here = path.relative_to(package).parent.parts
    typing_only = {id(n) for block in nodes(path) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for n in ast.walk(block)}  # `if TYPE_CHECKING:` imports run only for type checkers
    for node in nodes(path):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[:len(here) - node.level + 1]) + ([node.module] if node.module else [])
            elif (node.module or "").split(".")[0] == "tipcgen":
                base = node.module.split(".")[1:]
            else:
                continue
            stem = ".".join(p for part in base for p in part.split("."))
            for alias in node.names:
                name = f"{stem}.{alias.name}".strip(".")
                found.add(name if name in known else stem or alias.name)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("tipcgen.") for a in node.names if a.name.startswith("tipcgen."))
    return {name for name in found if name in known} - {_name(path, package)}


def _name(path: Path, package: Path) -> str:
    parts = path.relative_to(package).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    found = modules(package)
    return {name: imports(path, set(found), package) for name, path in found.items()}


def _package(module: str) -> str:
    return module.split(".")[0]


def test_every_package_has_a_layer_and_every_row_a_package():
    table = package_layers()
    found = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert len(table) >= 10, "the package table of docs/ARCHITECTURE.md was not found"
    assert found - set(table) == set(), "place these packages in docs/ARCHITECTURE.md's table"
    assert set(table) - found == set(), "the table names packages that do not exist"
    loose = {p.stem for p in PACKAGE.glob("*.py")} - ROOT_FILES
    assert loose == set(), "every module belongs to a package (one folder per job)"


def test_no_import_against_the_layers():
    table, wrong = package_layers(), []
    for module, deps in sorted(graph().items()):
        if module in ROOT_FILES:
            continue
        for dep in sorted(deps):
            if dep == "__init__":
                continue  # tipcgen.__version__
            if dep in ROOT_FILES or table[_package(dep)] > table[_package(module)]:
                wrong.append(f"{module} ({_package(module)}/, layer {table[_package(module)]}) imports {dep}")
            if dep in FORBIDDEN.get(module, ()):
                wrong.append(f"{module} imports {dep}, which docs/ARCHITECTURE.md's rules forbid")
    assert wrong == []


def test_the_root_init_is_a_leaf():
    assert graph()["__init__"] == set()


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
    """The test can fail: an import of a higher layer, written the ways a module can write it, is seen."""
    pkg = tmp_path / "tipcgen"
    (pkg / "results").mkdir(parents=True)
    (pkg / "cli").mkdir()
    (pkg / "run").mkdir()
    for name in ("results/__init__.py", "cli/__init__.py", "cli/app.py", "run/__init__.py", "run/pipeline.py"):
        (pkg / name).write_text("")
    known = set(modules(pkg))
    for text, dep in (("from ..cli import app\n", "cli.app"), ("from tipcgen.cli import app\n", "cli.app"),
                      ("def f():\n    from tipcgen.run.pipeline import x\n", "run.pipeline"), ("import tipcgen.run.pipeline\n", "run.pipeline"),
                      ("from tipcgen import run\n", "run")):
        (pkg / "results" / "summary.py").write_text(text)
        assert dep in imports(pkg / "results" / "summary.py", known | {"results.summary"}, pkg), text


# A module-level name that only renames a name of another tipcgen module is a second spelling of it (#29:
# nothing re-exported for compatibility): its users import the first. paths.BACKUP is the one exception: the
# folder's name belongs with the other file names, and core/writes (below format/) needs it first.
ALIAS_ALLOWED = {"format.paths.BACKUP"}


def aliases(path: Path, package: Path = PACKAGE) -> list[str]:
    """Module-level `NAME = imported` or `NAME = module.NAME` where the right side comes from tipcgen."""
    tree = parsed(path)
    imported, modules_imported = set(), set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("tipcgen")):
            for alias in node.names:
                (modules_imported if alias.name.islower() else imported).add(alias.asname or alias.name)
    found = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value, name = node.value, f"{_name(path, package)}.{node.targets[0].id}"
        if isinstance(value, ast.Subscript):
            value = value.value  # NAME = OTHER["basic"] picks from another module's table: not an alias
            continue
        plain = isinstance(value, ast.Name) and value.id in imported
        dotted = isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in modules_imported
        if (plain or dotted) and name not in ALIAS_ALLOWED:
            found.append(f"{name} = {ast.unparse(value)}")
    return found


def test_no_module_renames_another_modules_name():
    assert [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in aliases(path)] == []


def test_the_alias_checker_sees_an_alias(tmp_path: Path):
    pkg = tmp_path / "tipcgen"
    (pkg / "configs").mkdir(parents=True)
    probe = pkg / "configs" / "probe.py"
    probe.write_text("from tipcgen.format import paths\nfrom tipcgen.format.paths import ANSWERS\n"
                     "RUNNER = paths.BASIC_RUNNER\nFILE = ANSWERS\nOWN = ANSWERS + '/x'\n")
    assert aliases(probe, pkg) == ["configs.probe.RUNNER = paths.BASIC_RUNNER", "configs.probe.FILE = ANSWERS"]


def test_no_class_extends_another_of_tipcgen_but_the_errors():
    """Composition, not class chains (#37 item 3): the validator holds its checks, the linter hands itself to its
    slot rules. The one hierarchy is the errors' (core/errors.py: what a user mistake is, for `except`)."""
    import ast

    classes = {node.name: path for path in (ROOT / "tipcgen").rglob("*.py")
               for node in nodes(path) if isinstance(node, ast.ClassDef)}
    chained = []
    for path in sorted((ROOT / "tipcgen").rglob("*.py")):
        for node in nodes(path):
            if isinstance(node, ast.ClassDef):
                own = [base for base in (ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases) if base in classes]
                if own and classes[own[0]].name != "errors.py":
                    chained.append(f"{path.relative_to(ROOT)}: {node.name}({', '.join(own)})")
    assert chained == [], "compose instead: hold the other object and call it"
