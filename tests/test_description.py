"""The one description of the chain (tipcgen/format/layout.py + tipcgen/format/chain.py): the templates, new,
lint and import read it, and renaming or adding a slot is one edit there (docs/CHAINS.md)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conftest import ROOT, STUB, make_stub_repo, tipcgen
from tipcgen.format import chain
from tipcgen.format import layout
from tipcgen.new import new

TEMPLATES = ROOT / "templates"


def test_every_slot_a_template_names_is_in_the_description():
    problems = [problem for path in sorted(TEMPLATES.rglob("*.j2"))
                for problem in chain.template_slot_problems(path.read_text(), str(path.relative_to(ROOT)))]
    assert problems == []


def test_the_template_check_catches_a_slot_the_description_lacks():
    text = 'a=$(slot_value {{ f.inference.cpu_threads }})\nb=$(slot_key cpu_thread_num)\nc=$(slot_value epoch)\n' \
           'd=$(slot_value {{ f.inference.threads }})\ne=$(slot_value "$name")\n'
    problems = chain.template_slot_problems(text, "t.j2")
    assert [p.split(": ", 1)[0] for p in problems] == ["t.j2:2", "t.j2:3", "t.j2:4"]
    assert "write {{ f.train.epochs }}" in problems[1]
    added = '# tipc_add_slots ARRAY SLOT[=VALUE] with each key\n    tipc_add_slots cmd {{ f.train.device }}="$d a" epoch="$e" \\\n' \
            '        {{ f.inference.threads }} {{ f.train.extra }}\n'
    assert [p.split(": ", 2)[1] for p in chain.template_slot_problems(added, "t.j2")] == [
        "slot 'epoch'", "f.inference.threads is no descriptor field of tipcgen/format/layout.py"]


def test_shape_views_and_the_trainer_table_come_from_the_rows():
    assert layout.PER_MODE_SLOTS == ("epoch", "train_batch_size")
    assert set(layout.INFER_VALUE_SHAPES) == {"enable_mkldnn", "cpu_threads", "infer_batch_size", "use_trt", "precision"}
    assert "infer_export" in layout.LIST_SLOTS and "infer_export" in layout.COMMAND_SLOTS
    assert layout.RUNNER_FILLED == (
        "train.output_dir", "export.output_dir", "export.weights", "inference.model_dir")
    assert chain.TRAINER_SLOTS == ("norm_train", "pact_train", "fpgm_train", "distill_train", "trainer_key1",
                                   "trainer_key2")
    assert [c["pattern"] for c in chain.trainer_cases()] == [
        "pact_train | quant_train", "fpgm_train", "distill_train", "to_static_train",
        '"$(slot_key trainer_key2)"', "*"]
    assert {fld: role for fld, (role, _) in new.CANDIDATES.items()}["train.pretrained"] == "train"
    assert {step for slot in layout.TRAIN_INFER_PYTHON for step in slot.steps} == set(chain.STEPS)


KV_SLOTS = [slot for slot in layout.TRAIN_INFER_PYTHON if slot.kind == "kv"]


def _renamed(slot: layout.Slot) -> str:
    """A new name that shares nothing with the old one (a substring match would not find it)."""
    return f"renamed_{slot.index}"


def _package_with_every_slot_renamed(dest: Path) -> Path:
    """A copy of the package where every kv slot is renamed: one edit each, the name of its row in layout.py."""
    shutil.copytree(ROOT / "tipcgen", dest / "tipcgen", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(TEMPLATES, dest / "templates")
    (dest / "sample_models").symlink_to(ROOT / "sample_models")
    description = dest / "tipcgen" / "format" / "layout.py"
    text = description.read_text()
    for slot in KV_SLOTS:
        text, edits = re.subn(rf'(_kv\({slot.index}, )"{slot.name}"', rf'\1"{_renamed(slot)}"', text)
        assert edits == 1, f"{slot.name}: its name is not one edit in layout.py"
    description.write_text(text)
    return dest


def _add_a_slot(pkg: Path) -> None:
    """One more row in layout.py: a slot the descriptor, the config and the runner then have."""
    description = pkg / "tipcgen" / "format" / "layout.py"
    text = description.read_text()
    assert text.count("\n)\n\nTRAIN_INFER_PYTHON_LINES") == 1
    description.write_text(text.replace("\n)\n\nTRAIN_INFER_PYTHON_LINES", '\n    _kv(51, "infer_warmup", "inference.warmup", '
                                        '"null", doc="warm-up runs", shape="flag"),\n)\n\nTRAIN_INFER_PYTHON_LINES'))
    # The shipped JSON Schema the validator checks by is generated from the model, which reads layout.py: regenerate it.
    tipcgen("schema", "-o", str(pkg / "tipcgen" / "tipc.schema.json"), "--force", cwd=pkg, env={"PYTHONPATH": str(pkg)},
            check=True)


def test_renaming_every_slot_and_adding_one_is_one_edit_each_in_the_description(tmp_path: Path):
    """On a copy of the package: rename all 45 kv slots and add one, then init, lint, import and run
    the stub chain. The slot name is internal: the rendered config is byte for byte the same, and
    the runner differs only in the names it looks slots up by (docs/CHAINS.md)."""
    pkg = _package_with_every_slot_renamed(tmp_path / "pkg")
    env = {"PYTHONPATH": str(pkg)}
    back = {_renamed(slot): slot.name for slot in KV_SLOTS}
    assert len(back) == 45

    sample = tmp_path / "sample"
    tipcgen("init", "bert-sst2", "--output", str(sample), cwd=tmp_path, env=env, check=True)
    for path in sorted((ROOT / "test_tipc").rglob("*")):
        if path.is_file() and path.suffix in (".txt", ".sh", ".md", ".py", ".json"):
            rel = path.relative_to(ROOT)
            text = (sample / rel).read_text()
            assert re.sub(r"\brenamed_\d+\b", lambda m: back[m.group(0)], text) == path.read_text(), rel
    tables = (sample / "test_tipc" / "tipc_layouts.json").read_text()
    assert '"renamed_42": 42' in tables and '"cpu_threads"' not in tables

    tutorial = tmp_path / "tutorial"  # the 32-line layout: import, then init renders the same config
    shutil.copytree(ROOT / "tests" / "fixtures" / "tutorial", tutorial)
    tutorial_config = "test_tipc/configs/tutorial_model/train_infer_python.txt"
    tipcgen("import", tutorial_config, "-o", "tipc.yaml", cwd=tutorial, env=env, check=True)
    tipcgen("init", "tipc.yaml", "--force", cwd=tutorial, env=env, check=True)
    assert (tutorial / tutorial_config).read_bytes() == (ROOT / "tests" / "fixtures" / "tutorial" / tutorial_config).read_bytes()

    _add_a_slot(pkg)
    repo = make_stub_repo(tmp_path / "repo", init=False)  # init below, by the changed package
    yaml_text = (STUB / "tipc.yaml").read_text().replace(
        "  benchmark: {key: --benchmark, value: true}\n",
        "  benchmark: {key: --benchmark, value: true}\n  warmup: {key: --warmup, value: 2}\n")
    (repo / "stub" / "tipc.yaml").write_text(yaml_text)
    tipcgen("init", "stub/tipc.yaml", "--output", ".", cwd=repo, env=env, check=True)
    config = repo / "test_tipc" / "configs" / "stub_model" / "train_infer_python.txt"
    lines = config.read_text().splitlines()
    assert lines[51] == "--warmup:2" and lines[42] == "--cpu_threads:1"
    assert '"infer_warmup": 51' in (repo / "test_tipc" / "tipc_layouts.json").read_text()
    lint = tipcgen("lint", str(config), cwd=repo, env=env)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    imported = tipcgen("import", str(config), cwd=repo, env=env, check=True).stdout
    assert "warmup: {key: --warmup, value: 2}" in imported and "cpu_threads: {key: --cpu_threads, value: 1}" in imported
    argv = tmp_path / "argv.jsonl"
    proc = tipcgen("run", "--mode", "lite_train_lite_infer", "--quiet", cwd=repo, env={**env, "STUB_ARGV": str(argv)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    calls = [json.loads(line) for line in argv.read_text().splitlines()]
    infer = [call for call in calls if call[0] == "infer"]
    assert len(infer) == 2 and all("--cpu_threads=1" in call for call in infer)
    assert {call[0] for call in calls} >= {"train", "eval", "export", "infer"}


def test_the_descriptor_docs_slot_table_is_rendered_from_the_description():
    docs = (ROOT / "docs" / "DESCRIPTOR.md").read_text()
    start = docs.index("tests/test_description.py keeps it equal -->\n") + len("tests/test_description.py keeps it equal -->\n")
    assert docs[start:docs.index("<!-- end of the generated slot table -->")] == chain.slot_table(), \
        "regenerate the table: python -c 'from tipcgen.format import chain; print(chain.slot_table())'"
