"""The descriptor's model is one: the shipped JSON Schema and docs/DESCRIPTOR.md's field table are generated
from tipcgen/descriptor/model.py, and the model and the JSON Schema agree with the validator on real descriptors."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from conftest import CORPUS, ROOT, fuzz_examples, tipcgen
from test_fuzz_descriptor import dump, mutated_samples
from tipcgen import descriptor
from tipcgen.configs import importer
from tipcgen.descriptor import fields, model, structure
from tipcgen.descriptor.spec import Tolerance
from tipcgen.core.errors import DescriptorError

jsonschema = pytest.importorskip("jsonschema")  # in the test extra; the shipped-file checks below need it not

DESCRIPTORS = sorted([*ROOT.glob("sample_models/*/tipc.yaml"), *ROOT.glob("tests/fixtures/*/tipc.yaml")])
SAMPLE = yaml.safe_load((ROOT / "sample_models" / "bert-sst2" / "tipc.yaml").read_text())


def _validator():
    return jsonschema.Draft7Validator(json.loads(fields.SCHEMA_FILE.read_text()))


def test_the_shipped_json_schema_is_a_fresh_generation():
    assert fields.SCHEMA_FILE.read_text() == model.json_text(), "regenerate: python -m tipcgen schema -o tipcgen/tipc.model.json --force"
    jsonschema.Draft7Validator.check_schema(json.loads(model.json_text()))


def test_the_doc_field_table_is_generated_from_the_schema():
    text = (ROOT / "docs" / "DESCRIPTOR.md").read_text()
    section = text.split("## Every field", 1)[1].split("\n## ", 1)[0]
    table = section[section.index("| field | meaning |"):].rstrip("\n") + "\n"
    assert table == model.field_table(), "paste the output of: python -c 'from tipcgen.descriptor import model; " \
        "print(model.field_table(), end=\"\")' into docs/DESCRIPTOR.md's \"Every field\" section"


def test_the_cli_prints_and_writes_the_shipped_schema(tmp_path):
    assert tipcgen("schema", check=True).stdout == fields.SCHEMA_FILE.read_text()
    assert tipcgen("schema", "--path", check=True).stdout.strip() == str(fields.SCHEMA_FILE)
    out = tmp_path / "tipc.model.json"
    tipcgen("schema", "-o", str(out), check=True)
    assert out.read_text() == fields.SCHEMA_FILE.read_text()
    out.write_text("{}\n")  # the user's own file is replaced only with --force
    refused = tipcgen("schema", "-o", str(out))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and out.read_text() == "{}\n"


def test_the_json_schema_accepts_the_fixed_key_written_out():
    doc = {**SAMPLE, "python": {"key": "python", "value": "python3"}}
    descriptor.load_text(yaml.safe_dump(doc, sort_keys=False), source="ok.yaml", base_dir=ROOT)
    assert not list(_validator().iter_errors(doc))


@pytest.mark.parametrize("path", DESCRIPTORS, ids=lambda p: p.parent.name)
def test_the_json_schema_accepts_every_sample_and_fixture(path):
    descriptor.load(path)  # our validator accepts it ...
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _validator().iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []  # ... and so does the JSON Schema
    model.TipcYaml.model_validate(yaml.safe_load(path.read_text()))  # ... and the model it is generated from


@pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not found")
def test_the_json_schema_accepts_imported_corpus_configs():
    """Imported descriptors use every slot form (flag keys, lists, per-mode values, sections)."""
    validator, checked = _validator(), 0
    for path in sorted(CORPUS.rglob("*train_infer_python*.txt"))[::25]:
        try:
            text, _ = importer.import_descriptor(path.read_text(encoding="utf-8", errors="replace"), str(path))
        except Exception:  # noqa: BLE001 - a config import refuses is covered by test_import.py
            continue
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(text))]
        assert errors == [], path
        checked += 1
    assert checked >= 10


def _broken(change):
    doc = copy.deepcopy(SAMPLE)
    change(doc)
    return doc


BROKEN = {
    "unknown top field": lambda d: d.update(modle_name="x"),
    "unknown slot field": lambda d: d["train"].update(chekpoint="latest"),
    "missing model_name": lambda d: d.pop("model_name"),
    "missing train.norm": lambda d: d["train"].pop("norm"),
    "schema_version 2": lambda d: d.update(schema_version=2),
    "unknown layout": lambda d: d.update(layout="compact"),
    "list on a single-value line": lambda d: d["train"].update(checkpoint=["a", "b"]),
    "per-mode value on a list line": lambda d: d["inference"].update(precision={"key": "--p", "value": {"lite_train_lite_infer": 1}}),
    "unknown mode": lambda d: d["train"].update(epochs={"key": "--epochs", "value": {"lite_train_lite": 1}}),
    "a flag line without its key": lambda d: d["train"].update(epochs=2),
    "bad data role": lambda d: d["data"]["files"][next(iter(d["data"]["files"]))].update(role="eval"),
    "bad md5": lambda d: d["data"]["files"][next(iter(d["data"]["files"]))].update(md5="xyz"),
    "step_timeout 0": lambda d: d.update(run={"step_timeout": 0}),
    "opset 99": lambda d: d.update(paddle2onnx={"save_file": "m.onnx", "inference": "infer.py", "opset_version": 99,
                                                "model_dir": "out"}),
    "unknown check": lambda d: d.update(checks={"golden_tol": 1}),
    "target without metrics": lambda d: d.update(target={"tolerance": 0.1}),
    "another key on a fixed-key line": lambda d: d.update(python={"key": "interpreter", "value": "python3"}),
    "a boolean section line": lambda d: d.update(sections=[{"name": "extra", "lines": [True]}]),
    "benchmark fp_items": lambda d: d.update(benchmark={"batch_size": [8], "fp_items": ["bf16"]}),
    "a golden folder outside the repository": lambda d: d.update(checks={"golden": "../golden"}),
    "an absolute data folder": lambda d: d["data"].update(dir="/data"),
    "a lite copy above the repository": lambda d: d["data"]["files"][next(iter(d["data"]["files"]))].update(lite="a/../../b"),
    "a true step_timeout": lambda d: d.update(run={"step_timeout": True}),
    "a negative tolerance": lambda d: d.update(checks={"golden_tolerance": {"atol": -1}}),
    "an unknown tolerance field": lambda d: d.update(checks={"golden_tolerance": {"atl": 1}}),
    "a fixed_inputs that is no .npz": lambda d: d.update(checks={"fixed_inputs": "inputs.pkl"}),
    "own_weights of no step": lambda d: d.update(checks={"own_weights": ["train"]}),
    "an unknown align checkpoint": lambda d: d.update(align={"thresholds": {"forwards": 1}}),
    "ptq of no layout": lambda d: d.update(ptq={"layout": "int4", "lines": {}}),
    "kept that is no .txt": lambda d: d.update(kept=[{"file": "a.cfg", "lines": []}]),
    "a null train": lambda d: d.update(train=None),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_the_json_schema_rejects_what_the_validator_rejects(name):
    doc = _broken(BROKEN[name])
    with pytest.raises(DescriptorError):
        descriptor.load_text(yaml.safe_dump(doc, sort_keys=False), source="broken.yaml", base_dir=ROOT)
    assert list(_validator().iter_errors(doc)), f"the JSON Schema accepts: {name}"
    with pytest.raises(ValidationError):
        model.TipcYaml.model_validate(doc)


_PTQ_LINES = ("model_name", "python", "use_gpu", "model_path", "output_dir", "data_dir", "batch_num", "batch_size",
              "trainer", "ptq_train", "inference", "infer_use_gpu", "infer_batch_size", "infer_model_dir", "infer_data",
              "benchmark")


def test_the_validator_fills_in_the_model_defaults():
    """Left out, a field takes the model's default: the validator reads each from the model, never its own copy."""
    doc = {**SAMPLE, "run": {}, "checks": {}, "paddle2onnx": {"save_file": "m.onnx", "inference": "infer.py",
                                                                "model_dir": "out"},
           "data": {k: v for k, v in SAMPLE["data"].items() if k not in ("dir", "whole_env")},
           "target": {"metrics": {"acc": 0.9}}, "benchmark": {"batch_size": 8}, "dy2static": {},
           "ptq": {"layout": "ptq", "lines": {name: f"{name}:x" for name in _PTQ_LINES}}}
    doc.pop("python", None)
    doc["train"] = {k: v for k, v in SAMPLE["train"].items() if k != "trainer"}
    loaded = descriptor.load_text(yaml.safe_dump(doc, sort_keys=False), source="defaults.yaml", base_dir=ROOT)
    assert loaded.step_timeout == fields.default("run.step_timeout")
    assert (loaded.data.dir, loaded.data.whole_env, loaded.data.whole_from_lite) == (
        fields.default("data.dir"), fields.default("data.whole_env"), fields.default("data.whole_from_lite"))
    for name in ("reference_tolerance", "golden_tolerance", "onnx_tolerance"):
        assert getattr(loaded.checks, name) == Tolerance(**fields.default(f"checks.{name}"))
    assert (loaded.paddle2onnx.opset_version, loaded.paddle2onnx.onnx_flag) == (
        fields.default("paddle2onnx.opset_version"), fields.default("paddle2onnx.onnx_flag"))
    assert (loaded.target.tolerance, loaded.target.relative) == (fields.default("target.tolerance"),
                                                                  fields.default("target.relative"))
    assert (list(loaded.benchmark.fp_items), loaded.benchmark.epoch, list(loaded.benchmark.device_num)) == (
        fields.default("benchmark.fp_items"), fields.default("benchmark.epoch"), fields.default("benchmark.device_num"))
    assert loaded.dy2static.tolerance == Tolerance(**fields.default("dy2static.tolerance"))
    assert (loaded.ptq.accuracy_drop, loaded.ptq.tolerance) == (fields.default("ptq.accuracy_drop"),
                                                                Tolerance(**fields.default("ptq.tolerance")))
    for field, value in fields.FIELD_DEFAULTS.items():
        assert loaded.slot_of(field).value == value


def test_every_field_has_a_doc_and_the_validator_knows_every_group():
    """The table has no empty row, and each group the validator reads names exactly the model's fields."""
    rows = model.field_table().splitlines()[2:]
    assert rows and all(not row.endswith("|  |") for row in rows)
    assert fields.TOP_FIELDS >= set(fields.REQUIRED) and "schema_version" in fields.TOP_FIELDS
    assert fields.children("data.files.<name>") == {"role", "lite", "whole", "md5", "rows"}
    assert model.children("checks.reference_tolerance") == set()  # a value, not a group: no rows of its own
    groups = {path for path, _ in model._fields() if model.children(path)}
    assert {"data", "data.files.<name>", "checks", "ptq", "train"} <= groups
    for path in groups | {""}:  # what the validator reads from the shipped file is the model's (<NAME>: any name)
        assert fields.children(path) == {name for name in model.children(path) if not name.startswith("<")}, path
    assert fields.KEPT_FIELDS == set(model.KeptEntry.model_fields)
    assert fields.SECTION_ENTRY_FIELDS == set(model.SectionEntry.model_fields)
    assert fields.ALIGN_CHECKPOINTS == model.ALIGN_CHECKPOINTS and fields.ROLES == ("train", "infer")
    assert fields.REQUIRED == tuple(name for name, info in model.TipcYaml.model_fields.items() if info.is_required())


def test_loading_a_descriptor_imports_no_pydantic():
    """init, lint and run read the fields from the shipped JSON Schema: pydantic's import is only tipcgen schema's."""
    code = ("import sys; from tipcgen import descriptor; descriptor.load('bert-sst2'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout



# -- the validator's structure is the model's: the same descriptors accepted and refused
def _strict_jsonschema():
    """jsonschema with the model's own integers (pydantic's strict int: 3.0 is no whole number, true no number)."""
    types = jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    return jsonschema.validators.extend(jsonschema.Draft7Validator, type_checker=types)(
        json.loads(fields.SCHEMA_FILE.read_text()))


def _has_nan(value) -> bool:
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return isinstance(value, float) and value != value


def test_the_shipped_schema_uses_only_the_keywords_the_structure_check_reads():
    def keywords(node):
        if isinstance(node, list):
            return set().union(*map(keywords, node)) if node else set()
        if not isinstance(node, dict):
            return set()
        out = set(node)
        for key, value in node.items():
            if key in ("properties", "patternProperties"):
                out |= set().union(*map(keywords, value.values())) if value else set()
            elif key not in ("default", "const", "enum", "description", "title"):
                out |= keywords(value)
        return out
    assert keywords(json.loads(fields.SCHEMA_FILE.read_text())) <= structure.KEYWORDS


@settings(max_examples=fuzz_examples(600), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(doc=mutated_samples(), flow=st.sampled_from([None, True, False]))
def test_the_validator_the_schema_and_the_model_accept_the_same_descriptors(doc, flow):
    """On mutated samples: the structure check (the validator's first step), jsonschema on the shipped schema and
    the pydantic model accept and refuse the same documents, and the validator accepts none of those they refuse
    (it refuses more: what a schema cannot say, such as a model_name that names no folder)."""
    text = dump(doc, flow, True)
    doc = yaml.safe_load(text)
    try:
        model.TipcYaml.model_validate(doc)
        by_model = True
    except ValidationError:
        by_model = False
    assert structure.accepts(doc) == by_model, text
    if not _has_nan(doc):  # jsonschema's minimum lets NaN by (NaN < 0 is false); the model and the check do not
        assert (not list(_strict_jsonschema().iter_errors(doc))) == by_model, text
    try:
        descriptor.load_text(text, source="mutated.yaml", base_dir=ROOT)
    except DescriptorError:
        return
    assert by_model, text


@pytest.mark.parametrize("text, loads", [
    ("description: 2021", True), ("paddle2onnx: {save_file: m.onnx, inference: 28, model_dir: out}", True),
    ("checks: {golden: 3}", True),
    ("description: false", False), ("description: {}", False), ("description: []", False),
    ("checks: {golden: null}", False), ("checks: {golden_tolerance: {atol: null}}", False),
])
def test_a_number_is_text_where_text_is_expected_but_a_boolean_or_null_is_refused(text, loads):
    """People write `description: 2021`; `description: false` is a missing value: refused, naming the field."""
    field, _, value = text.partition(": ")
    doc = {**SAMPLE, field: yaml.safe_load(value)}
    source = yaml.safe_dump(doc, sort_keys=False)
    if loads:
        descriptor.load_text(source, source="t.yaml", base_dir=ROOT)
        model.TipcYaml.model_validate(doc)
        return
    with pytest.raises(DescriptorError) as info:
        descriptor.load_text(source, source="t.yaml", base_dir=ROOT)
    assert f": {field}" in str(info.value) and "expected" in str(info.value), str(info.value)
    with pytest.raises(ValidationError):
        model.TipcYaml.model_validate(doc)
