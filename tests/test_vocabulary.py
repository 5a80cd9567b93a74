"""Each word of the vocabulary said once (tipcgen/format/words.py, #29 item 2): a step's status and a chain's
verdict are never spelt as a literal anywhere else in the package or the templates. Field names of JSON
records ({"passed": ...}, data["passed"], .get("passed")) are names, not statuses, and are not checked; the
shipped scripts import nothing from tipcgen, and repro/ speaks of an alignment's pass and fail, its own words."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import ROOT
from tipcgen.format import words

PACKAGE = ROOT / "tipcgen"
WORDS = set(words.STATUSES) | {words.CHAIN_PASSED, words.CHAIN_FAILED, words.CHAIN_INTERRUPTED, words.CHAIN_UNCHECKED}
EXEMPT = ("format/words.py", "render/shipped/", "repro/")
_RUNNER_WORD = re.compile(r"(?:status=|= |tipc_record \S+ \S+ )(passed|failed|skipped)\b")
_QUOTED = re.compile(r"""(?<!attr\()['"](passed|failed|skipped)['"]""")  # selectattr("passed"): an attribute


def literals(path: Path) -> list[str]:
    """Status or verdict words written as string literals, other than a record's field names and docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Dict) and any(key is node for key in parent.keys):
            continue  # {"passed": ...}: a field name
        if isinstance(parent, ast.Subscript) or isinstance(parent, (ast.Expr, ast.JoinedStr)):
            continue  # data["passed"], a docstring, a piece of an f-string
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "get":
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id.endswith("Error"):
            continue  # SummaryFileError(source, "passed", ...): the field an error names
        found.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno}: {node.value!r}")
    return found


def test_no_status_or_verdict_literal_in_the_package():
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             if not path.relative_to(PACKAGE).as_posix().startswith(EXEMPT) for hit in literals(path)]
    assert found == [], "use the names of tipcgen/format/words.py"


@pytest.mark.parametrize("template", sorted((ROOT / "templates").rglob("*.j2")), ids=lambda p: p.name)
def test_no_status_literal_in_a_template(template: Path):
    text = template.read_text(encoding="utf-8")
    assert _QUOTED.findall(text) == [] and _RUNNER_WORD.findall(text) == [], "write {{ status.passed }} and the like"


def test_the_checker_sees_a_literal(tmp_path: Path):
    sample = PACKAGE / "results" / "_vocabulary_probe.py"
    try:
        sample.write_text('STATUS = {"passed": 1}\nok = step.status == "failed"\nx = data["skipped"]\n')
        assert literals(sample) == ["results/_vocabulary_probe.py:2: 'failed'"]
    finally:
        sample.unlink()
    assert _RUNNER_WORD.findall('        status=passed\n    tipc_record "$1" "$2" skipped null') == ["passed", "skipped"]


def test_the_templates_write_the_words_python_reads():
    from tipcgen.render import templating

    env = templating.environment()
    rendered = env.from_string("{{ status.passed }} {{ status.failed }} {{ status.skipped }} {{ verdicts.passed }}").render()
    assert rendered.split() == [words.PASSED, words.FAILED, words.SKIPPED, words.CHAIN_PASSED]


def test_the_paddle_pin_is_the_packages():
    """doctor's and run's install hint name the paddle pyproject's paddle extra installs."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"{words.PADDLE_PIN}"' in text


def test_defaults_and_section_names_are_spelt_once():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(EXEMPT):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and (node.value == words.DEFAULT_STEP_TIMEOUT and type(node.value) is int
                                                   or isinstance(node.value, str) and words.PADDLE_PIN in node.value):
                found.append(f"{rel}:{node.lineno}")
    templates = [p.name for p in (ROOT / "templates").rglob("*.j2")
                 if re.search(r"\b(result_check_params|paddle2onnx_params)\b|:-600\}", p.read_text(encoding="utf-8"))]
    assert found == [] and templates == [], (found, templates)
