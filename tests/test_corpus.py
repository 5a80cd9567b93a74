"""The config model against the 909 real configs in ../shared/tipc-corpus (read in place)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tipcgen.format import layout
from tipcgen.format.config import TipcConfig, parse_per_mode, slot_pairs
from layout_text import build, trailing_sections

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "tipc-corpus"
SHIFTED = "PaddleOCR/test_tipc__configs__ch_PP-OCRv4_server_rec_ampO2_ultra__train_infer_python.txt"
OCR_DET = "PaddleOCR/test_tipc__configs__ch_ppocr_mobile_v2_0_det__train_infer_python.txt"
CLAS_RESNET = "PaddleClas/test_tipc__configs__ResNet__ResNet50_vd_train_infer_python.txt"

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")


@pytest.fixture(scope="module")
def corpus() -> dict[str, bytes]:
    return {str(path.relative_to(CORPUS)): path.read_bytes() for path in sorted(CORPUS.rglob("*.txt"))}


@pytest.fixture(scope="module")
def configs(corpus: dict[str, bytes]) -> dict[str, TipcConfig]:
    return {name: TipcConfig.parse(raw.decode("utf-8", errors="surrogateescape")) for name, raw in corpus.items()}


def test_corpus_is_complete(corpus: dict[str, bytes]) -> None:
    assert len(corpus) == 909


def test_every_file_round_trips_byte_identically(corpus: dict[str, bytes], configs: dict[str, TipcConfig]) -> None:
    failures = [name for name, raw in corpus.items()
                if configs[name].render().encode("utf-8", errors="surrogateescape") != raw]
    assert failures == []


def test_read_round_trips(corpus: dict[str, bytes]) -> None:
    name = SHIFTED
    assert TipcConfig.read(CORPUS / name).render().encode() == corpus[name]


def test_the_quirks_are_present(corpus: dict[str, bytes], configs: dict[str, TipcConfig]) -> None:
    """The round trip above only proves something if the quirks from corpus-stats.md are there."""
    assert sum(not c.final_newline for c in configs.values() if c.lines) == 212
    assert sum(any(line.text != line.text.rstrip() for line in c.lines) for c in configs.values()) == 487
    assert sum(any(not line.text for line in c.lines[:-1]) for c in configs.values()) == 1  # a blank line inside
    assert sum(bool(c.lines) and not c.lines[-1].text for c in configs.values()) == 3  # ends with "\n\n"
    assert sum(raw == b"" for raw in corpus.values()) == 2


def test_kind_counts(configs: dict[str, TipcConfig]) -> None:
    kinds = Counter(config.kind for config in configs.values())
    assert kinds == {
        "train_infer_python": 651, "serving": 105, "cpp": 58, "paddle2onnx": 34, "lite": 24, "kl_quant": 12,
        "dy2static": 11, "infer_python": 5, "tutorial_32": 5, "empty": 2, "ptq": 1, "unknown": 1,
    }


def test_every_long_train_params_file_is_train_infer_python(configs: dict[str, TipcConfig]) -> None:
    long_train = [c for c in configs.values()
                  if c.logical_lines() and c.logical_lines()[0].header_name == "train_params"
                  and len(c.logical_lines()) >= layout.TRAIN_INFER_PYTHON_LINES]
    assert len(long_train) == 647
    assert all(c.kind == "train_infer_python" for c in long_train)


def test_header_less_clas_lite_files_are_lite(configs: dict[str, TipcConfig]) -> None:
    lite = [name for name, c in configs.items() if c.lines and c.lines[0].text.startswith("runtime_device:")]
    assert len(lite) == 12
    assert all(configs[name].kind == "lite" for name in lite)


def test_queries_on_an_ocr_file(configs: dict[str, TipcConfig]) -> None:
    config = configs[OCR_DET]
    assert config.model_name == "ch_ppocr_mobile_v2_0_det"
    assert config.python == "python3.7"
    assert config.slot("gpu_list").value == "0|0,1"
    assert config.slot("train_use_gpu").key == "Global.use_gpu"
    epoch = config.slot("epoch").value
    assert parse_per_mode(epoch) == {"lite_train_lite_infer": "100", "whole_train_whole_infer": "50"}
    assert "whole_infer" not in parse_per_mode(epoch)
    assert config.slot("norm_export").value.startswith("tools/export_model.py")
    assert config.slot("inference").value == "tools/infer/predict_det.py"
    assert config.slot("infer_use_gpu").text == "--use_gpu:True|False"
    assert config.section("eval_params").header_line_index == 22


def test_queries_on_a_clas_file(configs: dict[str, TipcConfig]) -> None:
    config = configs[CLAS_RESNET]
    assert config.kind == "train_infer_python"
    assert config.model_name == "ResNet50_vd"
    assert config.slot("train_use_gpu").text == "-o Global.device:gpu"
    assert parse_per_mode(config.slot("epoch").value)["lite_train_lite_infer"] == "2"
    assert config.slot("train_batch_size").value == "8"
    assert config.slot("trainer_key1").text == "to_static_train:-o Global.to_static=True"
    url = config.slot("inference_dir")
    assert url.key == "pretrained_model_url" and url.value.startswith("https://") and url.bash_value == "https"
    assert config.slot("precision").key == "-o Global.use_fp16"
    benchmark = config.section("train_benchmark_params")
    assert benchmark.get("model_type") == "norm_train|to_static_train"
    assert config.section("infer_benchmark_params").get("random_infer_input") == "[{float32,[3,224,224]}]"


def test_the_shifted_ocr_file_reads_early(configs: dict[str, TipcConfig]) -> None:
    config = configs[SHIFTED]
    assert config.kind == "train_infer_python"
    assert config.slot("pact_train").key == "fpgm_train"
    assert config.slot("norm_export").text == "quant_export:"
    with pytest.raises(ValueError):
        slot_pairs(config)


def test_import_and_build_round_trip_the_conforming_files(configs: dict[str, TipcConfig]) -> None:
    """slot_pairs + trailing_sections -> build gives the same logical lines, headers aside
    (tipcgen writes 27 `=` on both sides and drops the spaces some headers carry)."""
    checked, mismatched = 0, []
    for name, config in configs.items():
        logical = config.logical_lines()
        if config.kind != "train_infer_python" or len(logical) < layout.TRAIN_INFER_PYTHON_LINES or name == SHIFTED:
            continue
        rebuilt = build(slot_pairs(config), trailing_sections(config)).logical_lines()
        same = len(rebuilt) == len(logical) and all(
            a.header_name == b.header_name if a.header_name else a.text == b.text for a, b in zip(logical, rebuilt)
        )
        checked += 1
        if not same:
            mismatched.append(name)
    assert mismatched == []
    assert checked == 646
