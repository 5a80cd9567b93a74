"""The descriptor: the sample loads; every kind of mistake gets one clear message and exit code 2."""
from __future__ import annotations

from pathlib import Path

import pytest

from tipcgen import descriptor
from tipcgen.core.errors import DescriptorError

from conftest import ROOT, tipcgen

SAMPLE = ROOT / "sample_models" / "bert-sst2" / "tipc.yaml"


def sample_text() -> str:
    return SAMPLE.read_text()


def load(text: str):
    return descriptor.load_text(text, source="t.yaml")


def test_sample_loads_with_every_slot():
    desc = descriptor.load("bert-sst2")
    assert desc.model_name == "bert_sst2"
    assert desc.slots["epoch"].line == "--epochs:lite_train_lite_infer=10|lite_train_whole_infer=10|whole_train_whole_infer=1"
    assert desc.slots["infer_use_gpu"].line == "--use_gpu:True|False"
    assert desc.slots["trainer_key1"].line == "to_static_train:--to_static=True"  # the dy2static chain's switch
    assert desc.slots["eval"].line == "eval:sample_models/bert-sst2/eval.py"
    assert desc.data and [f.name for f in desc.data.files] == ["train.tsv", "dev.tsv", "infer.tsv"]


def test_cpu_only_keeps_the_cpu_entries_paired():
    desc = descriptor.load("bert-sst2").for_cpu_only()
    assert desc.slots["gpu_list"].value == "-1"
    assert desc.slots["train_use_gpu"].value == "cpu"
    assert desc.slots["infer_use_gpu"].value == "False"


@pytest.mark.parametrize("edit, field, words", [
    (lambda t: t.replace("model_name: bert_sst2\n", ""), "model_name", "is missing"),
    (lambda t: t.replace("python: python", "python: [a, b]"), "python", "expected a single value"),
    (lambda t: t.replace("  checkpoint: checkpoint", "  checkpoint: checkpoint\n  chekpoint: x"), "train.chekpoint",
     "unknown field"),
    (lambda t: t.replace("model_name: bert_sst2", "model_name: ../evil"), "model_name", "cannot name a folder"),
    (lambda t: t.replace("model_name: bert_sst2", "model_name: 'a b;rm'"), "model_name", "cannot name a folder"),
    (lambda t: t.replace("value: fp32}\n  epochs", "value: fp32 }\n  epochs").replace("fp32 }", "'fp32 '}"),
     "train.autocast.value", "trailing spaces"),
    (lambda t: t.replace("cpu_threads: {key: --cpu_threads, value: [1, 2]}", "cpu_threads: {key: --cpu_threads, value: '1，2'}"),
     "inference.cpu_threads.value", "full-width"),
    (lambda t: t.replace("lite_train_lite_infer: 10,", "lite_train_lite_infr: 10,"), "train.epochs.value.lite_train_lite_infr",
     "not a TIPC mode"),
    (lambda t: t.replace('gpu_list: ["0", "-1"]', 'gpu_list: ["0", "-1", "0,1"]'), "train.device", "3 gpu_list entries"),
    (lambda t: t.replace('gpu_list: ["0", "-1"]', 'gpu_list: ["gpu0"]'), "gpu_list", "not a device entry"),
    (lambda t: t.replace("step_timeout: 600", "step_timeout: -5"), "run.step_timeout", "whole seconds"),
    (lambda t: t.replace("device: {key: --device, value: [gpu, cpu]}", "device: gpu"), "train.device",
     "expected a mapping {key: FLAG, value: VALUE}"),
    (lambda t: t.replace("{key: --epochs", "{key: '--ep:ochs'") if "{key: --epochs" in t else
     t.replace("key: --epochs", "key: '--ep:ochs'"), "train.epochs.key", "not a usable flag name"),
])
def test_mistakes_name_the_field(edit, field, words):
    text = edit(sample_text())
    assert text != sample_text(), "the edit did not apply"
    with pytest.raises(DescriptorError) as info:
        load(text)
    message = str(info.value)
    assert f": {field}:" in message, message
    assert words in message, message
    assert "t.yaml:" in message


def test_error_names_the_line():
    text = sample_text().replace("  checkpoint: checkpoint", "  checkpoint: checkpoint\n  chekpoint: x")
    with pytest.raises(DescriptorError) as info:
        load(text)
    line = text.splitlines().index("  chekpoint: x") + 1
    assert info.value.line == line
    assert "did you mean 'checkpoint'" in str(info.value)


@pytest.mark.parametrize("text, words", [
    ("", "is empty"),
    ("model_name: [unclosed", "not valid YAML"),
    ("- a\n- b\n", "is not a descriptor: a YAML mapping of fields was expected, found a list"),
    ("model_name: a\nmodel_name: b\n", "given twice"),
])
def test_malformed_documents(text, words):
    with pytest.raises(DescriptorError) as info:
        load(text)
    assert words in str(info.value)


def test_cli_bad_descriptor_exits_2_without_traceback(tmp_path: Path):
    bad = tmp_path / "tipc.yaml"
    bad.write_text(sample_text().replace("python: python", "python: {a: 1}"))
    proc = tipcgen("init", str(bad), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "python: expected a single value" in proc.stderr
    assert not (tmp_path / "out").exists(), "nothing may be written for a bad descriptor"


@pytest.mark.parametrize("target, words", [
    ("bert-sst3", "did you mean 'bert-sst2'"),
    ("missing/tipc.yaml", "no such descriptor file"),
])
def test_cli_unknown_sample_or_missing_file(tmp_path: Path, target, words):
    proc = tipcgen("init", target, "--output", str(tmp_path))
    assert proc.returncode == 2
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr
