"""The descriptor schema is one: the shipped JSON Schema and docs/DESCRIPTOR.md's field table are
generated from tipcgen/descriptor/schema.py, and the JSON Schema agrees with the validator on real descriptors."""
from __future__ import annotations

import copy
import json

import pytest
import yaml

from conftest import CORPUS, ROOT, tipcgen
from tipcgen import descriptor
from tipcgen.configs import importer
from tipcgen.descriptor import schema
from tipcgen.core.errors import DescriptorError

jsonschema = pytest.importorskip("jsonschema")  # in the test extra; the shipped-file checks below need it not

DESCRIPTORS = sorted([*ROOT.glob("sample_models/*/tipc.yaml"), *ROOT.glob("tests/fixtures/*/tipc.yaml")])
SAMPLE = yaml.safe_load((ROOT / "sample_models" / "bert-sst2" / "tipc.yaml").read_text())


def _validator():
    return jsonschema.Draft7Validator(json.loads(schema.SCHEMA_FILE.read_text()))


def test_the_shipped_json_schema_is_a_fresh_generation():
    assert schema.SCHEMA_FILE.read_text() == schema.json_text(), "regenerate: python -m tipcgen schema -o tipcgen/tipc.schema.json --force"
    jsonschema.Draft7Validator.check_schema(json.loads(schema.json_text()))


def test_the_doc_field_table_is_generated_from_the_schema():
    text = (ROOT / "docs" / "DESCRIPTOR.md").read_text()
    section = text.split("## Every field", 1)[1].split("\n## ", 1)[0]
    table = section[section.index("| field | meaning |"):].rstrip("\n") + "\n"
    assert table == schema.field_table(), "paste the output of: python -c 'from tipcgen.descriptor import schema; " \
        "print(schema.field_table(), end=\"\")' into docs/DESCRIPTOR.md's \"Every field\" section"


def test_the_cli_prints_and_writes_the_shipped_schema(tmp_path):
    assert tipcgen("schema", check=True).stdout == schema.SCHEMA_FILE.read_text()
    assert tipcgen("schema", "--path", check=True).stdout.strip() == str(schema.SCHEMA_FILE)
    out = tmp_path / "tipc.schema.json"
    tipcgen("schema", "-o", str(out), check=True)
    assert out.read_text() == schema.SCHEMA_FILE.read_text()
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
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_the_json_schema_rejects_what_the_validator_rejects(name):
    doc = _broken(BROKEN[name])
    with pytest.raises(DescriptorError):
        descriptor.load_text(yaml.safe_dump(doc, sort_keys=False), source="broken.yaml", base_dir=ROOT)
    assert list(_validator().iter_errors(doc)), f"the JSON Schema accepts: {name}"

