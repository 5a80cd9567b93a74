"""Unit tests for the lossless config model (synthetic text; the corpus tests are in test_corpus.py)."""
from __future__ import annotations

import pytest

from tipcgen.format import layout
from tipcgen.format.config import Line, TipcConfig, is_null, parse_per_mode, slot_pairs, split_list
from layout_text import build, trailing_sections

# The BERT-SST2 config that passed under the upstream runner (SPEC §10), as slot pairs.
SST2_PAIRS = {
    "model_name": ("model_name", "bert_sst2"),
    "python": ("python", "python"),
    "gpu_list": ("gpu_list", "-1"),
    "train_use_gpu": ("--device", "cpu"),
    "autocast": ("auto_cast", "fp32"),
    "epoch": ("--epochs", "lite_train_lite_infer=1|lite_train_whole_infer=1|whole_train_whole_infer=3"),
    "save_model": ("--output_dir", "./output/"),
    "train_batch_size": ("--batch_size", "lite_train_lite_infer=8|lite_train_whole_infer=8|whole_train_whole_infer=64"),
    "norm_train": ("norm_train", "train.py"),
    "eval": ("eval", "eval.py"),
    "norm_export": ("norm_export", "export_model.py"),
    "inference": ("inference", "infer.py"),
    "infer_use_gpu": ("--device", "cpu"),
    "enable_mkldnn": ("--enable_mkldnn", "False|True"),
    "infer_batch_size": ("--batch_size", "1|2"),
    "infer_model_dir": ("--model_dir", ""),
    "benchmark": ("--benchmark", "True"),
}
TRAILING = [("infer_benchmark_params", ["random_infer_input:[{int64,[64]}]"])]


@pytest.mark.parametrize("text", [
    "", "\n", "a:b", "a:b\n", "a:b\n\n", "\n\na:b  \n", "===x=== \r\nk:v\r\n", "k:v\n\n\nk2:v2",
])
def test_parse_render_is_identity(text: str) -> None:
    assert TipcConfig.parse(text).render() == text


def test_empty_text_has_no_lines() -> None:
    config = TipcConfig.parse("")
    assert config.lines == () and not config.final_newline and config.kind == "empty"


def test_line_kinds() -> None:
    assert Line("").kind == "blank"
    assert Line("   ").kind == "blank"
    assert Line("===========================train_params===========================").kind == "header"
    assert Line("=========================== base_train ===========================").kind == "header"
    assert Line("===========================eval_params=========================== ").kind == "header"
    assert Line("##").kind == "sep"
    assert Line("#").kind == "sep"
    assert Line("null:null").kind == "kv"
    assert Line("# model load config").kind == "text"


def test_line_key_value_keeps_the_whole_remainder() -> None:
    line = Line("pretrained_model_url:https://host/p.pdparams ")
    assert line.key == "pretrained_model_url"
    assert line.value == "https://host/p.pdparams "
    assert line.bash_value == "https"
    assert Line("-o Global.device:gpu").key == "-o Global.device"
    assert Line("--model_dir:").value == ""
    assert Line("--model_dir:").bash_value == ""


def test_line_without_colon() -> None:
    line = Line(" ## ")
    assert line.key == "##" and line.value is None and line.bash_value == ""
    header = Line("=========================== base_train ===========================")
    assert header.header_name == "base_train" and header.value is None
    assert Line("a:b").header_name is None


def test_logical_lines_drop_only_empty_lines() -> None:
    config = TipcConfig.parse("a:1\n\nb:2\n   \nc:3")
    assert [line.text for line in config.logical_lines()] == ["a:1", "b:2", "   ", "c:3"]
    assert config.physical_index(2) == 3


def test_sections_and_queries() -> None:
    config = TipcConfig.parse("lead:0\n===a===\nk:1\nk:2\n=== b ===\nk:3\n")
    sections = config.sections()
    summary = [(s.name, s.header_line_index, len(s.lines)) for s in sections]
    assert summary == [(None, None, 1), ("a", 1, 2), ("b", 4, 1)]
    assert config.section("b").get("k") == "3"
    assert config.section("missing") is None
    assert config.get("k") == "1"
    assert config.values("k") == ["1", "2", "3"]
    assert config.get("absent") is None


def test_split_list_follows_bash() -> None:
    assert split_list("0|0,1") == ["0", "0,1"]
    assert split_list("True") == ["True"]
    assert split_list("a||b") == ["a", "", "b"]
    assert split_list("a|") == ["a"]
    assert split_list("") == [] and split_list(None) == []


def test_parse_per_mode() -> None:
    value = "lite_train_lite_infer=1|whole_train_whole_infer=300"
    assert parse_per_mode(value) == {"lite_train_lite_infer": "1", "whole_train_whole_infer": "300"}
    assert parse_per_mode("8") == {}
    assert parse_per_mode("a=1|junk|a=2|x y=3") == {"a": "1"}
    assert parse_per_mode("m=k=v") == {"m": "k=v"}


@pytest.mark.parametrize("value", [None, "", " ", "null", " null "])
def test_is_null(value: str | None) -> None:
    assert is_null(value)


@pytest.mark.parametrize("value", ["0", "None", "nullx", "False"])
def test_is_not_null(value: str) -> None:
    assert not is_null(value)


def test_build_gives_the_51_line_layout() -> None:
    config = build(SST2_PAIRS, TRAILING)
    logical = config.logical_lines()
    assert len(logical) == layout.TRAIN_INFER_PYTHON_LINES + 2
    assert [i for i, line in enumerate(logical[:51]) if line.kind == "header"] == [0, 22, 26]
    assert [i for i, line in enumerate(logical[:51]) if line.kind == "sep"] == [13, 21, 25]
    assert logical[0].text == layout.header_line("train_params")
    assert config.kind == "train_infer_python"
    assert config.model_name == "bert_sst2" and config.python == "python" and config.get("gpu_list") == "-1"
    assert config.slot("infer_use_gpu").text == "--device:cpu"
    assert config.slot("train_param").text == "null:null"
    assert config.slot("train_model_name").text == "train_model_name:null"
    assert config.section("infer_benchmark_params").get("random_infer_input") == "[{int64,[64]}]"
    assert config.render().endswith("random_infer_input:[{int64,[64]}]\n")


def test_build_without_trailing_is_exactly_51_lines() -> None:
    config = build(SST2_PAIRS)
    assert len(config.lines) == len(config.logical_lines()) == 51


def test_slot_pairs_invert_build() -> None:
    config = build(SST2_PAIRS, TRAILING)
    pairs = slot_pairs(config)
    assert pairs["epoch"] == SST2_PAIRS["epoch"]
    assert trailing_sections(config) == [("infer_benchmark_params", ["random_infer_input:[{int64,[64]}]"])]
    assert build(pairs, trailing_sections(config)).render() == config.render()


def test_key_alone_and_untitled_trailing_lines() -> None:
    pairs = dict(SST2_PAIRS, inference_dir=("##", None))
    config = build(pairs, [(None, ["null:null"]), ("train_benchmark_params", ["batch_size:8"])])
    assert config.slot("inference_dir").text == "##"
    assert slot_pairs(config)["inference_dir"] == ("##", None)
    assert trailing_sections(config) == [(None, ["null:null"]), ("train_benchmark_params", ["batch_size:8"])]


@pytest.mark.parametrize("pairs", [
    {"not_a_slot": ("k", "v")},
    {"eval_params": ("k", "v")},
    {"eval": ("eval", "a\nb")},
])
def test_build_rejects_bad_input(pairs: dict) -> None:
    with pytest.raises(ValueError):
        build(pairs)


def test_slot_pairs_rejects_a_shifted_file() -> None:
    logical = build(SST2_PAIRS, TRAILING).render().splitlines()
    del logical[16]
    with pytest.raises(ValueError, match="idx 21"):
        slot_pairs(TipcConfig.from_lines(logical))


def test_slot_beyond_the_end_is_none() -> None:
    config = TipcConfig.parse(layout.header_line("train_params") + "\nmodel_name:m\n")
    assert config.slot("model_name").value == "m"
    assert config.slot("infer_param") is None
