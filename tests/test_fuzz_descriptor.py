"""Property: no descriptor, however malformed, gets past ``tipcgen init`` as a traceback.

Thousands of generated descriptors (the bert-sst2 sample with fields replaced, deleted or added at
any depth; raw text and bytes; YAML that is not a mapping) either load, and then render a config
with the 51-line layout intact, or raise one ``DescriptorError`` that names the file and the field.
A few of the nastiest go through the real CLI. Hostile values that load stay data in prepare.sh.
"""
from __future__ import annotations

import copy
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from tipcgen import descriptor
from tipcgen.format import layout, paths
from tipcgen.configs import lint
from tipcgen.render import repository
from tipcgen.descriptor import fields as schema
from tipcgen.format.config import TipcConfig
from tipcgen.core.errors import DescriptorError

from conftest import ROOT, STUB, fuzz_examples, tipcgen

SAMPLE = ROOT / "sample_models" / "bert-sst2" / "tipc.yaml"
SAMPLE_DOC = yaml.safe_load(SAMPLE.read_text())
SOURCE = "fuzz/tipc.yaml"
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
# Errors about the document as a whole; every other error names a field.
DOCUMENT_ERRORS = ("is not valid YAML", "is empty", "nests too deeply", "is not UTF-8", "is not valid Unicode",
                   "is not a descriptor", "has a NUL byte", "is UTF-16 text", "is UTF-32 text")
LAYOUT_RULES = {"slot-shift", "anchor-key", "fullwidth-punct", "crlf", "trailing-space", "whitespace-line"}

NASTY_TEXT = [
    "", " ", "x ", " x", "null", "~", "True", "no", "0", "-1", "0,1", "1|2", "a:b", "a=b", "a,b",
    "1，2", "a：b", "a｜b", "（x）", "x；y", "a\u3000b", "a\tb", "a\nb", "a\rb", "\x00", "\x1b[31m", "\u2028",
    "\ufeff", "é", "模型", "$(touch pwned)", "`touch pwned`", "; rm -rf x", "a b'c\"d", "\\", "*", "~/x",
    "../x", "/etc/passwd", "a/b", "..", ".", "-rf", "--flag", "x.py", "x.py --a=$(touch pwned)",
    "{{ 7*7 }}", "{% raw %}", "%s%n", "x" * 5000,
]
SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2**300, max_value=2**300), st.integers(min_value=-3, max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NASTY_TEXT), st.text(max_size=40), st.text(alphabet="ab-_.|=:, \t", max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.sampled_from(["key", "value", "lite", "x"]), st.text(max_size=8)),
                                            inner, max_size=4)),
    max_leaves=8,
)
# Values that often pass the validator, so that loading descriptors get rendered and checked too.
PLAUSIBLE = st.one_of(
    st.from_regex(r"\A[A-Za-z0-9_./=,-]{1,16}\Z"), st.integers(min_value=0, max_value=64), st.booleans(),
    st.sampled_from(["$(touch pwned)", "`touch pwned` x", "a b'c\"d", "x;y", "*", "--f=1", "é 模型", "%s", "{{ x }}"]),
)
MODEL_NAMES = st.one_of(
    st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,20}\Z"),
    st.sampled_from(["a/b", "../evil", "..", ".hidden", "a b", "a;rm -rf x", "$(touch pwned)", "a\nb", "a，b",
                     "模型", "-rf", "a..b", "x" * 300]),
    st.text(max_size=20),
)


# ---------------------------------------------------------------- strategies

def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into the document (mapping keys and list indices), the root included."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, prefix + (i,))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for step in path[:-1]:
        doc = doc[step]
    return doc


@st.composite
def mutated_samples(draw) -> Any:
    """The sample with 1-3 edits: replace any value, delete a field, add an unknown key, rename the model."""
    doc = copy.deepcopy(SAMPLE_DOC)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(doc)
        kind = draw(st.sampled_from(["replace", "plausible", "plausible", "delete", "add", "model_name", "empty"]))
        if kind == "plausible":
            paths = [path for path in paths if path and not isinstance(_parent(doc, path)[path[-1]], (dict, list))] or [()]
        path = draw(st.sampled_from(paths))
        if kind == "plausible" and path:
            _parent(doc, path)[path[-1]] = draw(PLAUSIBLE)
        elif kind == "model_name":
            doc["model_name"] = draw(MODEL_NAMES)
        elif kind == "add":
            target = _parent(doc, path)[path[-1]] if path else doc
            if isinstance(target, dict):
                name = draw(st.one_of(st.text(max_size=12), st.sampled_from(["chekpoint", "nrom", "key", "<<"])))
                target[name] = draw(VALUES)
            elif isinstance(target, list):
                target.append(draw(VALUES))
        elif not path:
            doc = draw(VALUES) if kind == "replace" else doc
        elif kind == "replace":
            _parent(doc, path)[path[-1]] = draw(VALUES)
        elif kind == "empty":
            _parent(doc, path)[path[-1]] = draw(st.sampled_from([[], {}, "", None]))
        else:
            del _parent(doc, path)[path[-1]]
        if not isinstance(doc, dict):
            break
    return doc


def dump(doc: Any, flow: bool | None, unicode: bool) -> str:
    return yaml.dump(doc, Dumper=DUMPER, default_flow_style=flow, allow_unicode=unicode, sort_keys=False)


YAML_TOKENS = st.sampled_from([
    "model_name: ", "train:", "  norm: ", "gpu_list: ", "inference:", "  script: ", "data:", "  files:",
    "\n", "\n  ", "\n    ", "\t", " ", "- ", ": ", "? ", "&a ", "*a", "&b [*b]", "<<: *a", "!!python/object:os.system ",
    "!!python/name:os.system ''", "!!int ", "!!float ", "!!binary ", "!!timestamp ", "!!set ", "!!omap ", "!mine ",
    "[", "]", "{", "}", ",", "'", '"', "'x'", '"\\ud800"', '"\\x00"', "|", ">", "#", "%YAML 1.1\n", "---\n", "...\n",
    "，", "：", "｜", "$(touch pwned)", "0x1F", "1e999", ".nan", "~", "null", "yes", "1" * 40, "\ufeff", "\r\n",
    "x", "bert_sst2", "-1", "0,1",
])


# ---------------------------------------------------------------- the property

def _count(outcome: str) -> None:
    """Tally outcomes for `pytest --hypothesis-show-statistics` (how many descriptors got as far as rendering)."""
    if currently_in_test_context():
        event(outcome)


def assert_clear(exc: DescriptorError, source: str) -> None:
    message = str(exc)
    head, _, hint = message.partition("\n  hint: ")
    assert message.startswith(source), message
    assert "\n" not in head and "\n" not in hint, message
    assert "Traceback" not in message and "<class" not in message and " object at 0x" not in message, message
    assert len(head) < 400, f"{len(head)} characters: {head[:200]}"
    if not any(words in head for words in DOCUMENT_ERRORS):
        assert exc.field and f": {exc.field}: " in head, message


def assert_loads_or_clear_error(text: str, source: str = SOURCE) -> descriptor.Descriptor | None:
    try:
        desc = descriptor.load_text(text, source=source)
    except DescriptorError as exc:
        assert_clear(exc, source)
        head = exc.field.split(".")[0].split("[")[0]
        _count(f"rejected: {head if head in schema.TOP_FIELDS else 'document' if not head else 'other'}")
        return None
    _count("loaded and rendered")
    assert_renders(desc)
    try:
        assert_renders(desc.for_cpu_only())
    except DescriptorError as exc:
        assert_clear(exc, source)
    return desc


def assert_renders(desc: descriptor.Descriptor) -> None:
    files = repository.render_files(desc)
    text = files[paths.config_rel(desc.model_name)]
    logical = TipcConfig.parse(text).logical_lines()
    sections = [line for name, lines in desc.sections for line in ([layout.header_line(name)] if name else []) + list(lines)]
    tail = [line.text for line in logical[layout.TRAIN_INFER_PYTHON_LINES:]]
    assert tail[:len(sections)] == sections, "the trailing sections follow the 51 lines, unchanged"
    for slot, line in zip(layout.TRAIN_INFER_PYTHON, logical):
        if slot.kind == "header":
            assert line.header_name == slot.key
        elif slot.kind == "sep":
            assert line.text == "##"
        else:
            value = desc.slots[slot.name]
            assert (line.key, line.value) == (value.key, value.value), (slot.name, line.text)
    broken = [f for f in lint.lint_text(text, "c.txt") if f.rule in LAYOUT_RULES and f.severity == "error"]
    assert broken == [], broken
    assert not Path(paths.config_rel(desc.model_name)).is_absolute() and ".." not in desc.model_name


@settings(max_examples=fuzz_examples(2400), deadline=None, suppress_health_check=SLOW_OK)
@given(doc=mutated_samples(), flow=st.sampled_from([None, True, False]), unicode=st.booleans())
def test_mutated_samples_load_or_fail_clearly(doc, flow, unicode):
    assert_loads_or_clear_error(dump(doc, flow, unicode))


@settings(max_examples=fuzz_examples(800), deadline=None, suppress_health_check=SLOW_OK)
@given(text=st.one_of(st.lists(YAML_TOKENS, max_size=30).map("".join), st.text(max_size=200),
                      st.text(st.characters(exclude_categories=()), max_size=20)))  # lone surrogates too
def test_random_yaml_text_fails_clearly(text):
    assert_loads_or_clear_error(text)


@settings(max_examples=fuzz_examples(400), deadline=None, suppress_health_check=SLOW_OK)
@given(doc=st.one_of(VALUES, st.lists(st.just(SAMPLE_DOC), min_size=1, max_size=2)), flow=st.booleans())
def test_yaml_that_is_not_a_descriptor_fails_clearly(doc, flow):
    assert_loads_or_clear_error(dump(doc, flow, True))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=fuzz_examples(400), deadline=None, suppress_health_check=SLOW_OK)
@given(raw=st.one_of(st.binary(max_size=300), st.lists(YAML_TOKENS, max_size=20).map(lambda t: "".join(t).encode())
                     .flatmap(lambda b: st.sampled_from([b, b"\xff" + b, b + b"\xc3", "é".encode("latin-1") + b]))))
def test_random_bytes_from_a_file_fail_clearly(scratch, raw):
    path = scratch / "tipc.yaml"
    path.write_bytes(raw)
    try:
        descriptor.load(path)
    except DescriptorError as exc:
        assert_clear(exc, str(path))


# ---------------------------------------------------------------- known crashes, kept as examples

NESTED = "a: " + "[" * 3000 + "]" * 3000
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n" for prev, name in zip("abcdef", "bcdefg"))


@pytest.mark.parametrize("text, words", [
    ("a: &x [*x]\n", "a YAML alias contains itself"),
    (NESTED, "nest"),  # "nests too deeply" (SafeLoader) or "exceeded maximum nesting depth" (libyaml)
    (LAUGHS, "far too many for a descriptor"),
    ("a: !!int abc\n", "cannot be read as !!int"),
    ("a: !!bool maybe\n", "cannot be read as !!bool"),
    ("a: !!timestamp x\n", "cannot be read as !!timestamp"),
    ("a: " + "1" * 5000 + "\n", "cannot be read as !!int: a text of 5000 characters"),
    ("a: !!python/name:os.system ''\n", "cannot be read as !!python/name:os.system"),
    ('"a\\x01b": 1\n', "has a key that is not a plain name"),
    ("a: \ud800\n", "is not valid Unicode text"),
    ('"a\\nb": 1\n', "has a key that is not a plain name"),
    (SAMPLE.read_text().replace("step_timeout: 600", "step_timeout: 0x" + "f" * 4000), "16000 bits: too large"),
])
def test_documents_that_used_to_crash(text, words):
    with pytest.raises(DescriptorError) as info:
        descriptor.load_text(text, source=SOURCE)
    assert words in str(info.value)
    assert_clear(info.value, SOURCE)


@pytest.mark.parametrize("edit, field, words", [
    (lambda d: d.update(train=None), "train", "is null"),
    (lambda d: d.update(inference=None), "inference", "is null"),
    (lambda d: d.update(model_name=None), "model_name", "is null"),
    (lambda d: d.update(schema_version=True), "schema_version", "expected 1"),
    (lambda d: d.update(python={"key": "py", "value": "python"}), "python.key", "fixed key"),
    (lambda d: d.update(model_name={"key": "name", "value": "m"}), "model_name.key", "fixed key"),
    (lambda d: d["data"]["files"]["dev.tsv"].update(md5="2b070f88622773268a9bb41c6e941e60\n"),
     "data.files.dev.tsv.md5", "32 lower-case hex digits"),
    (lambda d: d.update(description=b"bytes"), "description", "binary data"),
])
def test_values_that_used_to_load_or_crash(edit, field, words):
    doc = copy.deepcopy(SAMPLE_DOC)
    edit(doc)
    with pytest.raises(DescriptorError) as info:
        descriptor.load_text(yaml.dump(doc, Dumper=yaml.SafeDumper), source=SOURCE)
    assert f": {field}: " in str(info.value) and words in str(info.value), str(info.value)
    assert_clear(info.value, SOURCE)


# ---------------------------------------------------------------- through the real CLI

CLI_CASES = {
    "recursive-alias": "model_name: &x [*x]\n",
    "python-tag": "!!python/object/apply:os.system ['touch pwned']\n",
    "tabs": SAMPLE.read_text().replace("  norm:", "\tnorm:"),
    "full-width-colon": SAMPLE.read_text().replace("model_name: bert_sst2", "model_name：bert_sst2"),
    "model-name-path": SAMPLE.read_text().replace("model_name: bert_sst2", "model_name: ../../etc"),
    "shell-in-model-name": SAMPLE.read_text().replace("model_name: bert_sst2", "model_name: '$(touch pwned)'"),
    "control-character-key": '"a\\x1bb": 1\n',
    "surrogate-escape": '"\\udcff": 1\n',
    "not-a-mapping": "- 1\n- 2\n",
}


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_cli_rejects_nasty_descriptors_without_traceback(tmp_path: Path, name: str):
    bad = tmp_path / "bad.yaml"
    bad.write_text(CLI_CASES[name], encoding="utf-8")
    out = tmp_path / "out"
    proc = tipcgen("init", str(bad), "--output", str(out), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"error: {bad}") and proc.stderr.count("\n") <= 2, proc.stderr
    assert not out.exists() and not list(tmp_path.rglob("pwned*"))


# ---------------------------------------------------------------- hostile values that load stay data

HOSTILE = "$(touch pwned1)`touch pwned2`;touch pwned3"


def test_hostile_data_values_are_quoted_in_prepare_sh(tmp_path: Path):
    doc = yaml.safe_load((STUB / "tipc.yaml").read_text())
    doc["data"] = {
        "dir": f"./data/{HOSTILE}",
        "files": {"train.tsv": {"role": "train", "lite": f"stub/{HOSTILE}.tsv", "whole": f"{HOSTILE}/train.tsv"}},
        "setup": [[f"stub/setup_{HOSTILE}.py", HOSTILE, "--out", f"x {HOSTILE}"]],
    }
    desc = descriptor.load_text(yaml.safe_dump(doc), source="hostile.yaml", base_dir=STUB)
    repo = tmp_path / "repo"
    (repo / "stub").mkdir(parents=True)
    for script in STUB.glob("*.py"):
        (repo / "stub" / script.name).write_text(script.read_text())
    (repo / "stub" / f"{HOSTILE}.tsv").write_text("label\ttext\n1\tgood\n")
    (repo / "stub" / f"setup_{HOSTILE}.py").write_text(
        "import os, sys\nprint('setup argv', sys.argv[1:])\nsys.exit(1 if os.environ.get('SETUP_FAILS') else 0)\n")
    repository.write_tree(repository.render_files(desc), repo)
    prepare = repo / "test_tipc" / "prepare.sh"
    assert subprocess.run(["bash", "-n", str(prepare)], capture_output=True).returncode == 0
    config = paths.config_rel("stub_model")
    env = dict(os.environ, TIPC_DATA_DIR="")
    lite = subprocess.run(["bash", "test_tipc/prepare.sh", config, "lite_train_lite_infer"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=60)
    assert lite.returncode == 0, lite.stdout + lite.stderr
    assert (repo / "data" / HOSTILE / "train.tsv").read_text().startswith("label")
    assert f"setup argv ['{HOSTILE}', '--out', 'x {HOSTILE}']" in lite.stdout
    # a failing setup stops with a message that names the script: as data.
    failed = subprocess.run(["bash", "test_tipc/prepare.sh", config, "lite_train_lite_infer"], cwd=repo,
                            env=dict(env, SETUP_FAILS="1"), capture_output=True, text=True, timeout=60)
    assert failed.returncode == 2 and "data setup failed" in failed.stderr, failed.stdout + failed.stderr
    # whole data with the folder unset stops with a message that names the file: still as data.
    whole = subprocess.run(["bash", "test_tipc/prepare.sh", config, "whole_train_whole_infer"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=60)
    assert whole.returncode == 2 and "tipc error: " in whole.stderr, whole.stdout + whole.stderr
    assert not list(tmp_path.rglob("pwned*")) and not list(Path.cwd().glob("pwned*")), "a value ran as a command"


def test_generated_numbers_stay_finite():
    """Floats such as nan/inf that a descriptor may carry render as text, never as a crash."""
    doc = copy.deepcopy(SAMPLE_DOC)
    doc["train"]["extra"] = {"key": "--scale", "value": math.inf}
    doc["eval"]["extra"] = {"key": "--scale", "value": -0.0}
    desc = assert_loads_or_clear_error(dump(doc, None, True))
    assert desc is not None and (desc.slots["train_param"].value, desc.slots["eval_param"].value) == ("inf", "-0.0")


def test_an_inference_value_of_another_shape_is_passed_but_a_shifted_looking_block_is_refused():
    """One odd value (cpu_threads inf, use_trt 0, a suite's own --run_mode:paddle) goes to the script as
    it is: it loads, and lint only warns. Values that all fit their neighbours' shapes would read as a
    shifted inference block (lint's slot-shift): the descriptor refuses them first."""
    for name, value in (("cpu_threads", [math.inf, 2]), ("use_tensorrt", 0), ("enable_mkldnn", ["yes"]),
                        ("precision", ["paddle", "trt_fp32", "trt_fp16", "trt_int8"])):
        doc = copy.deepcopy(SAMPLE_DOC)
        doc["inference"][name] = {"key": doc["inference"][name]["key"], "value": value}
        desc = descriptor.load_text(dump(doc, None, True), source=SOURCE)
        rules = {(f.rule, f.severity) for f in lint.lint_text(repository.render_config(desc), "c.txt")}
        assert ("infer-value-shape", "warning") in rules and not any(sev == "error" for _, sev in rules), name
    doc = copy.deepcopy(SAMPLE_DOC)
    for name, value in (("use_gpu", [True, False]), ("enable_mkldnn", 1), ("batch_size", False)):
        doc["inference"][name] = {"key": doc["inference"][name]["key"], "value": value}
    with pytest.raises(DescriptorError) as err:
        descriptor.load_text(dump(doc, None, True), source=SOURCE)
    assert err.value.field == "inference.enable_mkldnn" and "shifted inference block" in err.value.message
