"""tipcgen import: configs become descriptors that render back byte for byte; clear refusals.

The corpus sweep (tests/corpus_sweep.py, shared with the lint and layout tests) imports every
basic-chain config of ../shared/tipc-corpus and tipc-corpus-2 (read in place), renders the
descriptor and compares the bytes: the fields hold the normalised lines, ``text:`` the spelling.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tipcgen import descriptor
from tipcgen.format import layout
from tipcgen.render import repository
from tipcgen.core.errors import InputError, TipcgenError
from tipcgen.configs import lint
from tipcgen.configs.importer import ConfigImportError, import_config, import_descriptor, import_file
from layout_text import round_trip, sample_config_text as config_text, sample_slots
import corpus_sweep

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "tipc-corpus"
SHIFTED = "PaddleOCR/test_tipc__configs__ch_PP-OCRv4_server_rec_ampO2_ultra__train_infer_python.txt"
CLAS_RESNET = "PaddleClas/test_tipc__configs__ResNet__ResNet50_vd_train_infer_python.txt"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
ENV = repository.environment()
BERT_SST2 = sample_slots()


# ---------------------------------------------------------------- the corpus

@needs_corpus
def test_every_basic_config_of_both_corpus_folders_comes_back_byte_for_byte(corpus_entries) -> None:
    """import → init over ../shared/tipc-corpus and tipc-corpus-2 (the shared sweep): every basic-chain
    config but the shifted OCR one renders back byte for byte (docs/LAYOUTS.md has the counts)."""
    basic = [entry for entry in corpus_entries if entry.basic]
    not_back = {entry.name: entry.outcome for entry in basic if entry.outcome != "byte"}
    assert not_back.keys() == {corpus_sweep.SHIFTED}, "\n".join(f"{n}: {o}" for n, o in sorted(not_back.items()))
    assert "1 line missing after idx 14 (the last anchor in place)" in not_back[corpus_sweep.SHIFTED]  # lint's message
    per_suite = Counter(entry.suite for entry in basic)
    assert per_suite == {"PaddleClas": 491, "PaddleOCR": 86, "PaddleNLP": 29, "insightface": 1, "models": 4,
                         "PaddleSeg": 53, "PaddleVideo": 28, "PaddleGAN": 16}


@needs_corpus
def test_import_config_text_loads_as_import_descriptor_says() -> None:
    text = (CORPUS / CLAS_RESNET).read_text()
    document, desc = import_descriptor(text, CLAS_RESNET)
    assert document == import_config(text, CLAS_RESNET)
    assert descriptor.load_text(document, source="t.yaml").slots == desc.slots
    assert round_trip(text) == text


@needs_corpus
def test_normalisations_are_listed_in_the_header_comment() -> None:
    document = import_file(CORPUS / CLAS_RESNET)
    assert f"imported from {CORPUS / CLAS_RESNET}" in document
    assert "tipcgen init <this file>" in document
    assert "  - name: null\n    lines:\n      - null:null" in document  # the filler before the first header
    assert "27/27 '=' padding: line 27\n" in document  # the layout's own header
    # trailing section headers come back as written, one '=' short or long included
    assert "    header: ===========================train_benchmark_params==========================\n" in document


@needs_corpus
def test_a_shifted_file_is_refused_naming_the_shift() -> None:
    with pytest.raises(ConfigImportError) as caught:
        import_file(CORPUS / SHIFTED)
    message = str(caught.value)
    # lint's one message (one reading, one verdict)
    lint_message = next(f.message for f in lint.lint_text((CORPUS / SHIFTED).read_text(), "c") if f.rule == "slot-shift")
    assert f"{CORPUS / SHIFTED}:17: {lint_message}" in message
    assert "'fpgm_train:' sits at idx 16 instead of 17: 1 line missing after idx 14" in message
    assert "tipcgen lint" in message


# ---------------------------------------------------------------- without the corpus

def test_the_bert_sst2_config_round_trips() -> None:
    config = repository.render_config(descriptor.load("bert-sst2"), ENV)
    document = import_config(config, "test_tipc/configs/bert_sst2/train_infer_python.txt")
    assert round_trip(config) == config
    assert "# Normalised" not in document
    for natural in ("gpu_list: [0, -1]", "checkpoint: checkpoint", "quant: False",
                    "use_gpu: {key: --use_gpu, value: [True, False]}",
                    "epochs: {key: --epochs, value: {lite_train_lite_infer: 10, lite_train_whole_infer: 10, "
                    "whole_train_whole_infer: 1}}"):
        assert f"\n{natural}" in document or f"\n  {natural}" in document, natural
    assert "pact:" not in document  # a slot holding its default null line is left out


@pytest.mark.parametrize("value", ["true", "TRUE", "yes", "on", "1.0", "1e-4", "1.0e-4", "0.0001", "010", "0x1F",
                                   "1_000", "1:30", "2021-01-01", "~", "Null", ".inf", "'q'", "a #b", "[1,2]",
                                   "{a: 1}", "*ref", "&ref", "!tag", "@x", "%x", "-", "- x", "? x", "x: y", "0,1"])
def test_scalars_render_back_as_written(value: str) -> None:
    text = config_text(
        train_use_gpu=("--device", f"{value}|{value}"),   # a list item
        epoch=("--epochs", f"lite_train_lite_infer={value}|whole_train_whole_infer=1"),  # a per-mode value
        save_model=(value.split(":")[0] or "k", value),     # a plain slot value (and a key)
        train_model_name=("train_model_name", value),        # a value under its default key
    )
    assert round_trip(text) == text


@pytest.mark.parametrize("slot, value", [
    ("epoch", "lite_train_infer=1|whole_train_infer=2"),                        # legacy modes
    ("epoch", "lite_train_lite_infer=1|lite_train_lite_infer=2"),                # a repeated mode
    ("epoch", "lite_train_lite_infer=a=b"),                                      # '=' inside a value
    ("infer_use_gpu", "True||False"),                                            # an empty item
    ("infer_use_gpu", "True|"),                                                  # a trailing '|'
    ("infer_use_gpu", "True |False"),                                            # space inside an item
])
def test_values_without_a_structured_form_are_kept_as_text(slot: str, value: str) -> None:
    text = config_text(**{slot: (BERT_SST2[slot][0], value)})
    assert f"value: {value}" in import_config(text, "t.txt")
    assert round_trip(text) == text


def test_a_comma_entry_stays_a_string() -> None:
    text = config_text(gpu_list=("gpu_list", "0|0,1"), train_model_name=("train_model_name", "0,1"))
    document = import_config(text, "t.txt")
    assert "\ngpu_list: [0, '0,1']" in document and "\n  checkpoint: 0,1" in document
    assert round_trip(text) == text


def test_whitespace_is_normalised_in_the_fields_and_kept_in_text() -> None:
    text = config_text(norm_train=("norm_train", "train.py ")).replace("python:python\n", "python:python \t\n")
    document = import_config(text, "t.txt")
    assert "#   whitespace around a key or value removed: lines 3, 16" in document
    assert "\npython: python\n" in document and "    15: 'norm_train:train.py '" in document
    assert round_trip(text) == text  # text: gives the spelling back
    # a field that changes the line wins over the kept spelling
    changed = document.replace("  norm: train.py ", "  norm: train2.py", 1)
    rendered = repository.render_config(descriptor.load_text(changed, source="t.yaml"), ENV)
    assert "\nnorm_train:train2.py\n" in rendered and "python:python \t\n" in rendered


def test_a_separator_in_a_value_slot_comes_back_as_it_was() -> None:
    text = config_text(inference_dir=("##", None))
    assert "\n##\n" in text
    assert "inference_dir: {key: '##'}" in import_config(text, "t.txt")
    assert round_trip(text) == text


def test_a_line_after_idx_50_outside_any_section_is_kept() -> None:
    text = config_text() + "extra:1\n"
    assert round_trip(text) == text


@pytest.mark.parametrize("text, kind", [
    ("===========================serving_params===========================\nmodel_name:m\n", "serving"),
    ("===========================paddle2onnx_params===========================\nmodel_name:m\n", "paddle2onnx"),
])
def test_other_kinds_are_refused(text: str, kind: str) -> None:
    with pytest.raises(ConfigImportError) as caught:
        import_config(text, "serving.txt")
    assert str(caught.value).startswith(f"serving.txt: is a {kind} config: its lines are no basic-chain fields")


@pytest.mark.parametrize("kind, said", [("unknown", "an unknown"), ("infer_python", "an infer_python"),
                                        ("kl_quant", "a kl_quant"), ("serving", "a serving")])
def test_the_refusal_says_a_or_an(kind: str, said: str) -> None:
    from tipcgen.core.text import article
    assert f"{article(kind)} {kind}" == said


def test_an_empty_or_short_file_is_refused() -> None:
    with pytest.raises(ConfigImportError, match="is empty"):
        import_config("", "e.txt")
    cut = "\n".join(config_text().splitlines()[:30]) + "\n"
    with pytest.raises(ConfigImportError, match=r"the file ends after idx 29 inside a section \(30 of 51 lines\)"):
        import_config(cut, "s.txt")


@pytest.mark.parametrize("count", [22, 26])
def test_a_train_only_or_train_eval_file_keeps_its_length(count: int) -> None:
    """Upstream's train-only (22 lines) and train+eval (26 lines) configs: the runner reads the later
    lines as empty; import keeps the length (text.line_count) and init writes it back as it was."""
    short = "\n".join(config_text().splitlines()[:count]) + "\n"
    assert f"\n  line_count: {count}\n" in import_config(short, "s.txt")
    assert round_trip(short) == short


def test_a_missing_line_is_refused_as_a_shift() -> None:
    lines = config_text().splitlines()
    del lines[layout.SLOT_BY_NAME["pact_train"].index]
    with pytest.raises(ConfigImportError) as caught:
        import_config("\n".join(lines) + "\n", "t.txt")
    assert str(caught.value).startswith("t.txt:17: idx 16 should hold 'pact_train:'")
    assert "1 line missing after idx 14 (the last anchor in place), every later slot is read 1 line early" in str(caught.value)


@pytest.mark.parametrize("pairs, message", [
    ({"norm_train": ("norm_train", "a，b")}, r"^t\.txt:16: train\.norm: 'a，b' contains the full-width"),
        ({"gpu_list": ("gpu_list", "0|-1|0,1"), "train_use_gpu": ("--device", "gpu|cpu")},
         r"^t\.txt:5: train\.device: has 2 values for 3 gpu_list"),
    ({"model_name": ("model_name", "a/b")}, r"^t\.txt:2: model_name: 'a/b' cannot name a folder"),
    ({"epoch": ("--my  epochs", "1")}, r"^t\.txt:7: train\.epochs\.key: '--my  epochs' is not a usable flag name"),
    ({"norm_train": ("norm_train", "train.py\x01")}, r"^t\.txt:16: contains the control character '\\x01'"),
])
def test_refused_values_name_the_config_line(pairs: dict, message: str) -> None:
    with pytest.raises(ConfigImportError, match=message):
        import_config(config_text(**pairs), "t.txt")


def test_import_file_reports_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TipcgenError, match="cannot read the config .*missing.txt: No such file"):
        import_file(tmp_path / "missing.txt")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(config_text().replace("bert_sst2", "caf\xe9").encode("latin-1"))
    with pytest.raises(InputError, match=r"is not UTF-8 text \(byte \d+, line 2"):
        import_file(latin1)
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + config_text().encode())
    assert "27/27 '=' padding: line 1" in import_file(bom)
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(config_text().replace("\n", "\r\n").encode())
    assert round_trip(crlf.read_bytes().decode()) == config_text()
    assert "whitespace around a key or value removed" in import_file(crlf)


def test_the_fast_plain_scalar_path_agrees_with_yaml():
    """`descriptor_writer.token` skips the YAML parse for text that is surely a plain string (32k-line imports stay linear);
    it must quote exactly what a parse would: checked on corpus values and random indicator soup."""
    import random

    import yaml

    from tipcgen.descriptor import writer

    def parsed(text: str, flow: bool) -> str:
        try:
            loaded = yaml.safe_load(f"[{text}]" if flow else f"k: {text}")
        except (yaml.YAMLError, ValueError):
            loaded = None
        ok = (isinstance(loaded, list) and len(loaded) == 1) if flow else (isinstance(loaded, dict) and list(loaded) == ["k"])
        value = (loaded[0] if flow else loaded["k"]) if ok else None
        if ok and isinstance(value, writer.VALUE_TYPES) and writer.rendered(value) == text:
            return text
        return "'" + text.replace("'", "''") + "'"

    rnd = random.Random(12)
    values = sorted({line.partition(":")[2].strip() for path in sorted(CORPUS.rglob("*.txt"))[::20]
                     for line in path.read_text().splitlines()} - {""})
    soup = " -?:#,[]{}!&*|>'\"%@`=~.<019abyTFn_/\\+()^;$"
    texts = rnd.sample(values, min(600, len(values))) + ["".join(rnd.choice(soup) for _ in range(rnd.randint(1, 6)))
                                                        for _ in range(900)]
    for text in texts:
        for flow in (True, False):
            assert writer.token.__wrapped__(text, writer.VALUE_TYPES, flow) == parsed(text, flow), (text, flow)
