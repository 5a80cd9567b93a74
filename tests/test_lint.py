"""Lint rules: one synthetic failing case per rule, then the calibration against the real corpus."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from tipcgen.format import layout
from tipcgen.format.config import TipcConfig
from tipcgen.configs.lint import Finding, findings_to_json, format_finding, has_errors, lint_report, lint_text
from layout_text import build

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "tipc-corpus"
SHIFTED = "PaddleOCR/test_tipc__configs__ch_PP-OCRv4_server_rec_ampO2_ultra__train_infer_python.txt"

# A clean 51-line config (the BERT-SST2 one that passed under the upstream runner, SPEC §10).
PAIRS = {
    "model_name": ("model_name", "bert_sst2"),
    "python": ("python", "python"),
    "gpu_list": ("gpu_list", "0|0,1"),
    "train_use_gpu": ("--device", "gpu"),
    "autocast": ("auto_cast", "fp32"),
    "epoch": ("--epochs", "lite_train_lite_infer=1|whole_train_whole_infer=3"),
    "save_model": ("--output_dir", "./output/"),
    "train_batch_size": ("--batch_size", "lite_train_lite_infer=8|whole_train_whole_infer=64"),
    "train_model_name": ("train_model_name", "checkpoint"),
    "train_infer_data": ("train_infer_img_dir", "./data/lite.tsv"),
    "trainer": ("trainer", "norm_train"),
    "norm_train": ("norm_train", "train.py --seed 1"),
    "eval": ("eval", "eval.py"),
    "save_infer": ("--output_path", "./output/"),
    "export_weight": ("--params_path", ""),
    "norm_export": ("norm_export", "export_model.py"),
    "infer_quant": ("infer_quant", "False"),
    "inference": ("inference", "infer.py"),
    "infer_use_gpu": ("--device", "cpu|gpu"),
    "enable_mkldnn": ("--enable_mkldnn", "False|True"),
    "cpu_threads": ("--cpu_threads", "1|2"),
    "infer_batch_size": ("--batch_size", "1|2"),
    "use_trt": ("--use_tensorrt", "False"),
    "precision": ("--precision", "fp32"),
    "infer_model_dir": ("--model_dir", ""),
    "infer_data": ("--data_file", "./data/lite.tsv"),
    "benchmark": ("--benchmark", "True"),
}
TRAILING = [("infer_benchmark_params", ["random_infer_input:[{int64,[64]}]"])]


def clean_lines() -> list[str]:
    return build(PAIRS, TRAILING).render().splitlines()


def text_of(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def with_slot(name: str, text: str) -> str:
    lines = clean_lines()
    lines[layout.SLOT_BY_NAME[name].index] = text
    return text_of(lines)


def rules(findings: list[Finding]) -> set[tuple[str, str]]:
    return {(f.rule, f.severity) for f in findings}


def test_the_clean_config_has_no_findings() -> None:
    assert lint_text(text_of(clean_lines()), "c.txt") == []


def test_missing_line_is_a_shift_error_at_the_first_failing_anchor() -> None:
    lines = clean_lines()
    del lines[layout.SLOT_BY_NAME["pact_train"].index]
    [finding] = lint_text(text_of(lines), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("slot-shift", "error", 17)
    assert "1 line missing" in finding.message and "read 1 line early" in finding.message


def test_extra_line_is_a_shift_error() -> None:
    lines = clean_lines()
    lines.insert(6, "--lr:0.1")
    [finding] = lint_text(text_of(lines), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("slot-shift", "error", 14)
    assert "1 extra line after idx 3" in finding.message


def test_missing_line_in_the_inference_block_is_caught_by_the_trailing_header() -> None:
    lines = clean_lines()
    del lines[layout.SLOT_BY_NAME["use_trt"].index]
    [finding] = lint_text(text_of(lines), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("slot-shift", "error", 51)
    assert "infer_benchmark_params" in finding.message


def test_file_cut_inside_a_section_is_a_shift_error() -> None:
    findings = lint_text(text_of(clean_lines()[:45]), "c.txt")
    assert rules(findings) == {("slot-shift", "error")}


def test_blank_lines_do_not_shift() -> None:
    lines = clean_lines()
    lines.insert(10, "")
    assert lint_text(text_of(lines), "c.txt") == []


def test_whitespace_only_line_shifts_and_warns() -> None:
    lines = clean_lines()
    lines.insert(10, "   ")
    assert rules(lint_text(text_of(lines), "c.txt")) == {("whitespace-line", "warning"), ("slot-shift", "error")}


def test_renamed_anchor_key_is_a_warning() -> None:
    findings = lint_text(with_slot("pact_train", "quant_export:null"), "c.txt")
    assert rules(findings) == {("anchor-key", "warning")}
    assert findings[0].line == 17


def test_null_filler_keeps_the_anchor() -> None:
    assert lint_text(with_slot("eval", "null:null"), "c.txt") == []


def test_train_only_file_is_a_short_file_warning() -> None:
    for count in (22, 26):
        findings = lint_text(text_of(clean_lines()[:count]), "c.txt")
        assert rules(findings) == {("short-file", "warning")}


def test_second_colon_warns_with_what_bash_reads() -> None:
    [finding] = lint_text(with_slot("inference_dir", "pretrained_model_url:https://host/m.pdparams"), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("colon-in-value", "warning", 36)
    assert "'https'" in finding.message


def test_device_list_length() -> None:
    [finding] = lint_text(with_slot("train_use_gpu", "--device:gpu|gpu|gpu"), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("device-list-length", "warning", 5)
    assert lint_text(with_slot("train_use_gpu", "--device:gpu|gpu"), "c.txt") == []
    assert lint_text(with_slot("train_use_gpu", "--device:gpu"), "c.txt") == []


def test_unknown_mode_is_an_error_and_a_legacy_mode_a_warning() -> None:
    typo = lint_text(with_slot("epoch", "--epochs:lite_train_lite_infr=1|whole_train_whole_infer=3"), "c.txt")
    assert [(f.rule, f.severity, f.line) for f in typo] == [("unknown-mode", "error", 7)]
    legacy = lint_text(with_slot("train_batch_size", "--batch_size:lite_train_infer=8"), "c.txt")
    assert [(f.rule, f.severity) for f in legacy] == [("unknown-mode", "warning")]
    assert "lite_train_lite_infer" in legacy[0].message
    assert lint_text(with_slot("epoch", "--epochs:whole_train_lite_infer=1"), "c.txt") == []


def test_pinned_python_warns() -> None:
    [finding] = lint_text(with_slot("python", "python:python3.7"), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("python-version", "warning", 3)


def test_missing_scripts_need_a_repo_root(tmp_path: Path) -> None:
    text = text_of(clean_lines())
    (tmp_path / "train.py").write_text("")
    findings = lint_text(text, "c.txt", repo_root=tmp_path)
    assert {(f.rule, f.severity) for f in findings} == {("missing-script", "error")}
    assert sorted(f.message.split("'")[1] for f in findings) == ["eval.py", "export_model.py", "infer.py"]
    for script in ("eval.py", "export_model.py", "infer.py"):
        (tmp_path / script).write_text("")
    assert lint_text(text, "c.txt", repo_root=tmp_path) == []
    assert lint_text(text, "c.txt") == []


def test_unknown_inference_device_is_an_error() -> None:
    [finding] = lint_text(with_slot("infer_use_gpu", "--device:cpu|cuda"), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("infer-device", "error", 41)
    assert lint_text(with_slot("infer_use_gpu", "null:null"), "c.txt") == []


def test_trailing_space_on_a_list_slot_is_an_error() -> None:
    [finding] = lint_text(with_slot("infer_use_gpu", "--device:cpu "), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("trailing-space", "error", 41)
    [spaced_key] = lint_text(with_slot("infer_use_gpu", "--device :cpu"), "c.txt")
    assert (spaced_key.rule, spaced_key.severity) == ("trailing-space", "error")


def test_trailing_space_elsewhere_is_a_warning_or_nothing() -> None:
    assert rules(lint_text(with_slot("infer_data", "--data_file:./data/lite.tsv "), "c.txt")) == {
        ("trailing-space", "warning")}
    assert lint_text(with_slot("norm_export", "norm_export:export_model.py "), "c.txt") == []
    header = layout.header_line("eval_params") + " "
    assert lint_text(with_slot("eval_params", header), "c.txt") == []
    serving = "===serving_params===\nop.devices:gpu|null \nweb_service:web.py --config=c.yml \n"
    assert [(f.rule, f.severity, f.line) for f in lint_text(serving, "s.txt")] == [("trailing-space", "warning", 2)]


def test_crlf_is_one_error_per_file() -> None:
    findings = lint_text(text_of(clean_lines()).replace("\n", "\r\n"), "c.txt")
    assert [(f.rule, f.severity, f.line) for f in findings] == [("crlf", "error", 1)]
    assert "53 lines" in findings[0].message


def test_fullwidth_punctuation_is_an_error() -> None:
    [finding] = lint_text(with_slot("gpu_list", "gpu_list:0\uff5c0,1"), "c.txt")
    assert (finding.rule, finding.severity, finding.line) == ("fullwidth-punct", "error", 4)
    assert "U+FF5C" in finding.message
    assert rules(lint_text("===serving_params===\nport\uff1a9993\n", "s.txt")) == {("fullwidth-punct", "error")}


def test_bom_warns_but_keeps_the_kind() -> None:
    findings = lint_text("\ufeff" + text_of(clean_lines()), "c.txt")
    assert [(f.rule, f.severity, f.line) for f in findings] == [("bom", "warning", 1)]
    assert TipcConfig.parse("\ufeff" + text_of(clean_lines())).kind == "train_infer_python"


def test_empty_file_warns() -> None:
    assert [(f.rule, f.severity) for f in lint_text("", "e.txt")] == [("empty-file", "warning")]


def test_tutorial_32_gets_its_own_anchors_and_the_same_slot_rules() -> None:
    tutorial = [
        layout.header_line("train_params"), "model_name:m", "python:python", "gpu_list:0", "use-gpu:True",
        "--epochs:lite_train_lite_infer=1", "--output-dir:", "--batch-size:lite_train_lite_infer=2",
        "--pretrained:null", "train_model_name:latest.pdparams", "--data-path:./lite_data", "##",
        "trainer:norm_train", "norm_train:train.py", "##",
        layout.header_line("eval_params"), "eval:train.py --test-only",
        "##", layout.header_line("infer_params"), "--save-inference-dir:", "--pretrained:", "norm_export:export.py",
        "##", "train_model:", "infer_export:", "##", "inference:infer.py", "--use-gpu:True|False",
        "--batch-size:1", "--model-dir:", "--img-path:", "--benchmark:True",
    ]
    assert TipcConfig.from_lines(tutorial).kind == "tutorial_32"
    assert lint_text(text_of(tutorial), "t.txt") == []
    del tutorial[12]
    assert rules(lint_text(text_of(tutorial), "t.txt")) == {("slot-shift", "error")}


def test_output_formats(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "a.txt").write_text(with_slot("python", "python:python3.7"))
    (tmp_path / "configs" / "b.txt").write_bytes(b"")
    findings = [f for f in lint_report([tmp_path / "configs"]) if f.severity != "info"]  # info: the family it was read in
    assert [f.rule for f in findings] == ["python-version", "empty-file"]
    assert not has_errors(findings)
    assert format_finding(findings[0]) == (
        f"{tmp_path / 'configs' / 'a.txt'}:3: warning python-version "
        "'python:python3.7' pins a minor version; 'python' uses whatever interpreter is active"
    )
    data = json.loads(findings_to_json(findings))
    assert data[0] == {"path": str(tmp_path / "configs" / "a.txt"), "line": 3, "rule": "python-version",
                       "severity": "warning", "message": findings[0].message}
    assert json.loads(findings_to_json([])) == []


# -- the real corpus ----------------------------------------------------------------------------
corpus_only = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")


@pytest.fixture
def corpus_findings(corpus_entries) -> dict[str, list[Finding]]:
    """lint_text of every file of ../shared/tipc-corpus, by its path there: the shared sweep's (conftest's
    corpus_entries), which lints each file as this would."""
    return {entry.name: list(entry.findings) for entry in corpus_entries if entry.corpus == CORPUS.name}


@corpus_only
def test_the_shifted_ocr_file_is_an_error_naming_the_line(corpus_findings: dict[str, list[Finding]]) -> None:
    errors = [f for f in corpus_findings[SHIFTED] if f.severity == "error"]
    assert [(f.rule, f.line) for f in errors] == [("slot-shift", 17)]
    assert "'fpgm_train:' sits at idx 16 instead of 17: 1 line missing" in errors[0].message


@corpus_only
def test_no_error_on_any_conforming_51_line_file(corpus_findings: dict[str, list[Finding]]) -> None:
    checked = 0
    for name, findings in corpus_findings.items():
        config = TipcConfig.read(CORPUS / name)
        if config.kind != "train_infer_python" or len(config.logical_lines()) < 51 or name == SHIFTED:
            continue
        checked += 1
        assert not has_errors(findings), [format_finding(f) for f in findings]
    assert checked == 646


@corpus_only
def test_only_the_shifted_file_has_an_error(corpus_findings: dict[str, list[Finding]]) -> None:
    assert [name for name, findings in corpus_findings.items() if has_errors(findings)] == [SHIFTED]


@corpus_only
def test_corpus_figures_per_rule(corpus_findings: dict[str, list[Finding]]) -> None:
    """How many files each rule fires on; a change here means a rule's behaviour changed."""
    files: dict[tuple[str, str], set[str]] = defaultdict(set)
    for name, findings in corpus_findings.items():
        for finding in findings:
            files[finding.rule, finding.severity].add(name)
    assert {key: len(names) for key, names in files.items()} == {
        ("colon-in-value", "warning"): 599,
        ("python-version", "warning"): 801,
        ("device-list-length", "warning"): 12,
        ("anchor-key", "warning"): 6,  # 3 in the 51-line layout, 3 tutorial files that rename norm_train
        ("short-file", "warning"): 4,
        ("empty-file", "warning"): 2,
        ("slot-shift", "error"): 1,
        ("unknown-layout", "warning"): 2,  # PaddleNLP's two dy2static configs: not PaddleClas's layout
    }
