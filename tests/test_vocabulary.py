"""Each word of the vocabulary said once (tipcgen/format/words.py, #29 item 2): a step's status and a chain's
verdict are never spelt as a literal anywhere else in the package or the templates. Field names of JSON
records ({"passed": ...}, data["passed"], .get("passed")) are names, not statuses, and are not checked; the
shipped scripts import nothing from tipcgen, and repro/ speaks of an alignment's pass and fail, its own words."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, nodes, parents
from tipcgen.format import chains, paths, words

PACKAGE = ROOT / "tipcgen"
WORDS = set(words.STATUSES) | {words.CHAIN_PASSED, words.CHAIN_FAILED, words.CHAIN_INTERRUPTED, words.CHAIN_UNCHECKED}
EXEMPT = ("format/words.py", "render/shipped/", "repro/")
_RUNNER_WORD = re.compile(r"(?:status=|= |tipc_record \S+ \S+ )(passed|failed|skipped)\b")
_QUOTED = re.compile(r"""(?<!attr\()['"](passed|failed|skipped)['"]""")  # selectattr("passed"): an attribute


def strings(path: Path):
    """(node, parent) for each string constant of a module, docstrings and f-string pieces left out."""
    up = parents(path)
    for node in nodes(path):
        parent = up.get(id(node))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not isinstance(parent, (ast.Expr, ast.JoinedStr)):
            yield node, parent


def literals(path: Path, root: Path = PACKAGE) -> list[str]:
    """Status or verdict words written as string literals, other than a record's field names and docstrings
    (each named by its path under root)."""
    found = []
    for node, parent in strings(path):
        if node.value not in WORDS:
            continue
        if isinstance(parent, ast.Dict) and any(key is node for key in parent.keys):
            continue  # {"passed": ...}: a field name
        if isinstance(parent, ast.Subscript):
            continue  # data["passed"]
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "get":
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id.endswith("Error"):
            continue  # SummaryFileError(source, "passed", ...): the field an error names
        found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}: {node.value!r}")
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
    # In tmp_path, not in the package: another worker's test walks the package's files meanwhile.
    sample = tmp_path / "results" / "_vocabulary_probe.py"
    sample.parent.mkdir()
    sample.write_text('STATUS = {"passed": 1}\nok = step.status == "failed"\nx = data["skipped"]\n')
    assert literals(sample, tmp_path) == ["results/_vocabulary_probe.py:2: 'failed'"]
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
        for node in nodes(path):
            if isinstance(node, ast.Constant) and (node.value == words.DEFAULT_STEP_TIMEOUT and type(node.value) is int
                                                   or isinstance(node.value, str) and words.PADDLE_PIN in node.value):
                found.append(f"{rel}:{node.lineno}")
    templates = [p.name for p in (ROOT / "templates").rglob("*.j2")
                 if re.search(r"\b(result_check_params|paddle2onnx_params)\b|:-600\}", p.read_text(encoding="utf-8"))]
    assert found == [] and templates == [], (found, templates)


# A step's kind (#29 item 2): never a literal where the value is a step record's kind. The other meanings of
# "train", "eval", "export", "infer" (new/'s script roles, descriptor fields, a slot's `steps`, render context
# keys, an archive member's kind) are not compared with or assigned to a `.kind`, passed as `kind=`, iterated
# as `kind` or assigned to a `...kinds` collection, and are not checked.
KIND_WORDS = set(words.KINDS)
_RUNNER_DIR = ROOT / "templates" / "runner"  # the runner templates' kinds come with their rewrite
_TEMPLATE_KIND = re.compile(r"""(?:\.kind\s*[!=]=\s*|selectattr\(\s*["']kind["']\s*,\s*["']equalto["']\s*,\s*)["']([^"']+)["']""")


def _is_kind(node: ast.AST) -> bool:
    """`x.kind`, `x["kind"]`: a step record's kind."""
    return (isinstance(node, ast.Attribute) and node.attr == "kind"
            or isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "kind")


def _kind_constants(node: ast.AST | None, position: int | None = None) -> list[ast.Constant]:
    """The kind words a value is or holds (a collection's elements; with position, that element of each tuple)."""
    if isinstance(node, ast.Constant):
        return [node] if isinstance(node.value, str) and node.value in KIND_WORDS else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        if position is not None and all(isinstance(e, ast.Tuple) for e in node.elts):
            return [c for e in node.elts if position < len(e.elts) for c in _kind_constants(e.elts[position])]
        return [c for e in node.elts for c in _kind_constants(e)]
    if isinstance(node, ast.BinOp):
        return _kind_constants(node.left) + _kind_constants(node.right)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return _kind_constants(node.elt)
    if isinstance(node, ast.IfExp):
        return _kind_constants(node.body) + _kind_constants(node.orelse)
    return []


def _kind_position(target: ast.AST) -> int | None | bool:
    """Where a loop target binds `kind`: None for the whole item, the index in a tuple target, False if not."""
    if isinstance(target, ast.Name):
        return None if target.id == "kind" else False
    if isinstance(target, ast.Tuple):
        return next((i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == "kind"), False)
    return False


def kind_literals(path: Path, rel: str = "") -> list[str]:
    """Kind words written as literals where a step's kind is meant; rel: as path_literals."""
    found: list[ast.Constant] = []
    for node in nodes(path):
        if isinstance(node, ast.Compare) and any(_is_kind(n) for n in [node.left, *node.comparators]):
            found += [c for n in [node.left, *node.comparators] for c in _kind_constants(n)]
        elif isinstance(node, ast.Call):
            found += [c for k in node.keywords if k.arg == "kind" for c in _kind_constants(k.value)]
        elif isinstance(node, (ast.For, ast.comprehension)) and _kind_position(node.target) is not False:
            found += _kind_constants(node.iter, _kind_position(node.target))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_kind(t) or isinstance(t, ast.Name) and t.id.lower().endswith("kinds") for t in targets):
                found += _kind_constants(node.value, 0 if isinstance(node.value, (ast.List, ast.BinOp)) else None)
    rel = rel or path.relative_to(PACKAGE).as_posix()
    return [f"{rel}:{c.lineno}: {c.value!r}" for c in sorted(found, key=lambda c: (c.lineno, c.col_offset))]


def test_no_kind_literal_in_the_package():
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             if not path.relative_to(PACKAGE).as_posix().startswith(("format/words.py", "render/shipped/"))
             for hit in kind_literals(path)]
    assert found == [], "use the kinds of tipcgen/format/words.py (TRAIN, EVAL, ...)"


@pytest.mark.parametrize("template", sorted(p for p in (ROOT / "templates").rglob("*.j2") if _RUNNER_DIR not in p.parents),
                         ids=lambda p: p.name)
def test_no_kind_literal_in_a_template(template: Path):
    hits = [word for word in _TEMPLATE_KIND.findall(template.read_text(encoding="utf-8")) if word in KIND_WORDS]
    assert hits == [], "write {{ kind.infer }} and the like"


def test_the_checker_sees_a_kind_literal(tmp_path: Path):
    sample = tmp_path / "_kind_probe.py"  # outside the checkout, as test_the_checker_sees_a_file_name's
    sample.write_text('a = step.kind == "train"\nb = Step(kind="check", name="check")\nc = s["kind"] in ("eval", "x")\n'
                      'd = {k for k in ("infer",) if step.kind == k}\ne = [kind for kind in ("export", "a")]\n'
                      'null_kinds = {kind for kind, f in (("eval", "eval.script"),)}\nkinds = [("speed", "train")]\n'
                      'roles = ("train", "eval")\nx = slot.kind == "kv"\ny = {"train": 1}["train"]\nstep.kind = "prepare"\n')
    assert kind_literals(sample, "results/_kind_probe.py") == [
        "results/_kind_probe.py:1: 'train'", "results/_kind_probe.py:2: 'check'", "results/_kind_probe.py:3: 'eval'",
        "results/_kind_probe.py:5: 'export'", "results/_kind_probe.py:6: 'eval'", "results/_kind_probe.py:7: 'speed'",
        "results/_kind_probe.py:11: 'prepare'"]
    assert _TEMPLATE_KIND.findall('{% if step.kind == "check" %}{{ s | selectattr("kind", "equalto", "infer") }}') \
        == ["check", "infer"]


# Each generated file name (#29 item 2): tipcgen/format/paths.py spells it, and no other string constant of the
# package is that name, ends with "/<name>" or lies under test_tipc/ or .tipcgen/ (docstrings, and messages, which
# hold spaces, are not paths). core/writes.py spells the backup folder: it sits below format/, which imports it.
# format/chains.py spells each chain's config, runner and status log names (paths derives RUNNERS and its kin).
# A bare word ("runs", "work", "tipc-suite": a JSON field, a JUnit name) is checked only if it is test_tipc.
SPELT_BELOW = {"core/writes.py": {paths.BACKUP}}


def generated_names() -> set[str]:
    """Every name paths.py gives a generated file or folder, and the base names of the files among them."""
    values = [v for k, v in vars(paths).items() if k.isupper() and isinstance(v, str)]
    values += [v for k, v in vars(paths).items() if k.isupper() and isinstance(v, dict) for v in v.values()]
    names = {v for v in values if not any(c in v for c in "{ :") and ("." in v or "/" in v or v == paths.TEST_TIPC)}
    return names | {v.rsplit("/", 1)[-1] for v in names if "." in v.rsplit("/", 1)[-1]}


def path_literals(path: Path, names: set[str], rel: str = "") -> list[str]:
    """The generated names spelt in path's string constants; rel: its name under the package (by default where it is)."""
    rel = rel or path.relative_to(PACKAGE).as_posix()
    docstrings = {id(node.value) for node in nodes(path) if isinstance(node, ast.Expr)}
    under = (paths.TEST_TIPC + "/", paths.STATE + "/")
    found = []
    for node in nodes(path):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings \
                or any(c.isspace() for c in node.value) or node.value in SPELT_BELOW.get(rel, ()):
            continue
        name = node.value.strip("/")
        if name in names or name.startswith(under) or any(name.endswith("/" + n) for n in names):
            found.append((node.lineno, node.col_offset, f"{rel}:{node.lineno}: {node.value!r}"))
    return [hit for *_, hit in sorted(found)]


def test_no_generated_file_name_outside_paths():
    names = generated_names()
    assert {"test_tipc", "prepare.sh", "steps.jsonl", "summary.json", "suite.json", ".tipcgen-answers.yml"} <= names
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             if not path.relative_to(PACKAGE).as_posix().startswith(("format/paths.py", "format/chains.py", "render/shipped/"))
             for hit in path_literals(path, names)]
    assert found == [], "use the names of tipcgen/format/paths.py"


def test_the_checker_sees_a_file_name(tmp_path: Path):
    # written outside the checkout, read as a module of results/: a probe inside the package raced the walks of it
    # on the other workers (test_no_generated_file_name_outside_paths globbed it, then found it gone)
    sample = tmp_path / "_paths_probe.py"
    sample.write_text('"""Reads summary.json."""\na = run / "summary.json"\nb = "test_tipc/configs/"\nc = f"{m}/train_infer_python.txt"\n'
                      'd = "test_tipc/check_quant.py"\ne = ".tipcgen/x.json"\nf = "no summary.json here"\ng = {"runs": 1}\n')
    assert path_literals(sample, generated_names(), "results/_paths_probe.py") == [
        "results/_paths_probe.py:2: 'summary.json'", "results/_paths_probe.py:3: 'test_tipc/configs/'",
        "results/_paths_probe.py:4: '/train_infer_python.txt'", "results/_paths_probe.py:5: 'test_tipc/check_quant.py'",
        "results/_paths_probe.py:6: '.tipcgen/x.json'"]


# Mode names: the basic chain's modes, upstream's legacy names and the extra ones real configs name.
# "infer" (a legacy mode, and a step kind) and "whole_infer" (also the descriptor's section of the whole_infer
# lines) are checked only where compared with a mode; benchmark_train is also a chain's name.
_MODE_WORDS = (set(words.MODES) | set(words.LEGACY_MODES) | set(words.KNOWN_EXTRA_MODES)) - {
    "infer", words.WHOLE_INFER, words.BENCHMARK_TRAIN}


def mode_literals(path: Path, rel: str = "") -> list[str]:
    """Mode names written as string literals (docstrings and f-string pieces aside); rel: as path_literals."""
    rel = rel or path.relative_to(PACKAGE).as_posix()
    found = []
    for node, parent in strings(path):
        compared_with_mode = (isinstance(parent, ast.Compare) and "mode" in ast.unparse(parent).replace(node.value, ""))
        if node.value in _MODE_WORDS or (node.value == words.WHOLE_INFER and compared_with_mode):
            found.append(f"{rel}:{node.lineno}: {node.value!r}")
    return found


def test_no_mode_name_literal_in_the_package():
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             if not path.relative_to(PACKAGE).as_posix().startswith(("format/words.py", "render/shipped/"))
             for hit in mode_literals(path)]
    assert found == [], "use words.MODES and its names"


def test_the_mode_checker_sees_a_literal(tmp_path: Path):
    sample = tmp_path / "_mode_probe.py"  # outside the checkout, as test_the_checker_sees_a_file_name's
    sample.write_text('"""lite_train_lite_infer in a docstring."""\nA = ("lite_train_lite_infer",)\n'
                      'if mode == "whole_infer":\n    pass\nSECTION = "whole_infer"\n')
    assert mode_literals(sample, "results/_mode_probe.py") == ["results/_mode_probe.py:2: 'lite_train_lite_infer'",
                                                               "results/_mode_probe.py:3: 'whole_infer'"]


def test_the_progress_line_is_read_through_words():
    """tipcgen reads a runner's `[tipc] RUN|PASS|FAIL|SKIP` lines through words.progress_mark only."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(EXEMPT):
            continue
        found += [f"{rel}:{node.lineno}" for node, _ in strings(path) if node.value.startswith(words.PROGRESS.strip())]
    assert found == []
    assert [words.progress_mark(line) for line in ("[tipc] RUN train x", "[tipc] FAIL infer: value", "[tipc] m: 1 passed",
                                                   "tipc PASS x")] == [words.STARTED, "FAIL", None, None]


# The runner templates: a record's kind (tipc_step/tipc_skip/tipc_record's first argument), a mode the script
# branches on, the progress line and the model-name rule come from the render context, never a literal.
_RUNNER_KIND = re.compile(r"\btipc_(?:step|skip|record) ([a-z_+]+)\b")
_RUNNER_MODE = re.compile(r'"\$MODE" !?= ([a-z_]+)|^\s*([^()\n]+)\)(?: |$)', re.M)
_RUNNER_PROGRESS = re.compile(r"\[tipc\]")
_RUNNER_MODEL_RE = re.compile(r"\[A-Za-z0-9\]\[A-Za-z0-9_")
RUNNER_TEMPLATES = sorted(_RUNNER_DIR.glob("*.j2"))


def runner_literals(text: str) -> list[str]:
    modes = set(words.MODES) | {words.BENCHMARK_TRAIN}
    found = [f"kind {k}" for k in _RUNNER_KIND.findall(text) if k in words.KINDS]
    for single, arm in _RUNNER_MODE.findall(text):
        found += [f"mode {m}" for m in (single, *arm.split(" | ")) if m in modes]
    found += [f"mode {m}" for m in re.findall(r"TIPC_MODES=\(([a-z_]+)\)", text) if m in modes]
    found += ["progress [tipc]"] * len(_RUNNER_PROGRESS.findall(text)) + ["model-name rule"] * len(_RUNNER_MODEL_RE.findall(text))
    return found


@pytest.mark.parametrize("template", RUNNER_TEMPLATES, ids=lambda p: p.name)
def test_no_kind_mode_or_progress_literal_in_a_runner_template(template: Path):
    assert runner_literals(template.read_text(encoding="utf-8")) == [], \
        "write {{ kind.train }}, {{ mode.whole_infer }}, {{ progress.prefix }}{{ progress.passed }}, {{ model_name_re }}"


def test_the_runner_checker_sees_literals():
    text = ('tipc_skip train "$name" "x"\ntipc_step {{ kind.infer }} n\nif [ "$MODE" = whole_infer ]; then\n'
            '    whole_train_whole_infer) X=1 ;;\n    lite_train_whole_infer | {{ mode.whole_infer }}) X=2 ;;\n'
            "TIPC_MODES=(benchmark_train)\nprintf '[tipc] PASS %s'\n[[ $m =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]]\n")
    assert runner_literals(text) == ["kind train", "mode whole_infer", "mode whole_train_whole_infer",
                                     "mode lite_train_whole_infer", "mode benchmark_train", "progress [tipc]", "model-name rule"]


def test_the_runner_refuses_the_model_names_init_refuses():
    """The runner's model_name rule is the descriptor's (schema.MODEL_NAME_RE), rendered from it into the tables
    tipc_preflight.py checks it with (tests/test_runner_preflight.py holds the two to the same answers)."""
    import json

    from tipcgen.descriptor.schema import MODEL_NAME_RE

    tables = json.loads((ROOT / "test_tipc" / "tipc_layouts.json").read_text(encoding="utf-8"))
    assert tables["model_name_re"] == MODEL_NAME_RE.pattern


@pytest.mark.parametrize("member", [*words.Status, *words.Kind, *chains.ChainName, *chains.Reference], ids=str)
def test_a_typed_status_or_kind_is_its_word_wherever_it_is_written_or_looked_up(member):
    """Status, Kind, ChainName and Reference members are str-valued enums: every way a word reaches a file, a message or a lookup gives
    the plain word's bytes and answers (values on disk unchanged), and a pickled one comes back as itself."""
    import json
    import pickle

    from tipcgen.core.text import quoted
    from tipcgen.render.templating import environment

    word = member.value
    assert type(word) is str and member == word and hash(member) == hash(word)
    assert (str(member), repr(member), f"{member}", f"{member:>24}|", "%s %r" % (member, member)) == \
        (word, repr(word), word, f"{word:>24}|", "%s %r" % (word, word))
    assert json.dumps({member: [member]}) == json.dumps({word: [word]})
    assert {word: 1}[member] == 1 and {member: 1}[word] == 1
    assert word in (*words.STATUSES, *words.KINDS, *chains.names(), *(proof.reference for proof in chains.PROOFS))
    assert quoted(member) == quoted(word)
    template = environment().from_string("{{ w }} {{ w | upper }} {{ w | tojson }} {{ d[w] }}")
    assert template.render(w=member, d={word: "x"}) == template.render(w=word, d={word: "x"})
    assert pickle.loads(pickle.dumps(member)) is member
    assert type(member)(word) is member


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.sampled_from(["Passed", "PASSED", "pass", "", "train ", "eval+export", "infer\n", "Status.PASSED"]),
                 st.text(max_size=24)))
def test_a_word_outside_the_vocabulary_is_no_member(text):
    if text in {m.value for m in (*words.Status, *words.Kind)}:  # drawn by chance: a word, so a member
        assert text in words.STATUSES + words.KINDS
        return
    assert text not in words.STATUSES and text not in words.KINDS
    with pytest.raises(ValueError):
        words.Status(text)
    with pytest.raises(ValueError):
        words.Kind(text)
