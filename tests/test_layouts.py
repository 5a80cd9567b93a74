"""Layout families (#27): every suite's layout is known, picked from the suite's own runner or the headers.

The rule: a config that its own suite's runner runs as intended gets no lint error and no import
refusal; the one shifted OCR config is still caught. The corpus figures come from the shared sweep
(tests/corpus_sweep.py) over ../shared/tipc-corpus and tipc-corpus-2, read in place.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tipcgen import descriptor
from tipcgen.configs import lint
from tipcgen.configs.importer import ConfigImportError, import_config, import_file
from tipcgen.format import families, layout
from tipcgen.format.config import TipcConfig, family_of
from tipcgen.render import repository
import corpus_sweep
from conftest import tipcgen
from layout_text import config_text

ROOT = Path(__file__).resolve().parents[1]
needs_corpus = pytest.mark.skipif(not corpus_sweep.available(), reason="corpus folders not found in ../shared")
SEG = "PaddleSeg/test_tipc__configs__bisenetv1__train_infer_python.txt"
VIDEO = "PaddleVideo/test_tipc__configs__PP-TSM__train_infer_python.txt"


def standard_lines() -> list[str]:
    """A 51-line config in the standard family (the test projects' flags)."""
    pairs = {slot.name: (slot.key or f"--{slot.name}", "null") for slot in layout.TRAIN_INFER_PYTHON if slot.kind == "kv"}
    pairs.update({"model_name": ("model_name", "m"), "python": ("python", "python"), "gpu_list": ("gpu_list", "-1"),
                  "trainer": ("trainer", "norm_train"), "norm_train": ("norm_train", "train.py"),
                  "norm_export": ("norm_export", "export.py"), "inference": ("inference", "infer.py"),
                  "infer_use_gpu": ("--use_gpu", "True|False"), "enable_mkldnn": ("--enable_mkldnn", "False"),
                  "cpu_threads": ("--cpu_threads", "1|6"), "infer_batch_size": ("--batch_size", "1"),
                  "use_trt": ("--use_tensorrt", "False"), "precision": ("--precision", "fp32")})
    return config_text(pairs).splitlines()


def text_of(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def runner_text(reads: dict[int, tuple[str, ...]], span: int = 51) -> str:
    """A runner that reads its config the way upstream runners do (lines[N] by func_parser_*)."""
    out = ["#!/bin/bash", "source test_tipc/common_func.sh", "FILENAME=$1",
           f"dataline=$(awk 'NR==1, NR=={span}{{print}}'  $FILENAME)", "IFS=$'\\n'", "lines=(${dataline})"]
    for index, parsers in sorted(reads.items()):
        out += [f'v{index}_{parser}=$(func_parser_{parser} "${{lines[{index}]}}")' for parser in parsers]
    out += ['if [ ${MODE} = "klquant_whole_infer" ]; then', '    x=$(func_parser_key "${lines[3]}")', "fi"]
    return "\n".join(out) + "\n"


# What the 51-line runners read (PaddleOCR's, PaddleSeg's): idx 11 by value, idx 27, 28 and 46 by key only.
STANDARD_READS = {**{i: ("key", "value") for i in range(1, 51) if i not in (13, 21, 22, 25, 26)},
                  11: ("value",), 27: ("key",), 28: ("key",), 46: ("key",)}
VIDEO_READS = {**STANDARD_READS, 11: ("key", "value"), 46: ("key", "value")}
DETECTION_READS = {**STANDARD_READS, 27: ("key", "value"), 28: ("key", "value")}
GAN_READS = {**STANDARD_READS, 28: ("value",)}


def config_in_repo(tmp_path: Path, config: str, runner: str | None) -> Path:
    folder = tmp_path / "test_tipc" / "configs" / "m"
    folder.mkdir(parents=True)
    (folder / "train_infer_python.txt").write_text(config)
    if runner is not None:
        (tmp_path / "test_tipc" / "test_train_inference_python.sh").write_text(runner)
    return folder / "train_infer_python.txt"


# ---------------------------------------------------------------- the corpus (one shared sweep)

@needs_corpus
def test_lint_over_both_corpus_folders_errors_only_on_the_shifted_ocr_config(corpus_entries) -> None:
    erring = {e.name: [f.message for f in e.findings if f.severity == "error"] for e in corpus_entries
              if lint.has_errors(e.findings)}
    assert list(erring) == [corpus_sweep.SHIFTED], erring
    assert "'fpgm_train:' sits at idx 16 instead of 17: 1 line missing" in erring[corpus_sweep.SHIFTED][0]
    assert len(corpus_entries) == 909 + 199


@needs_corpus
def test_every_basic_config_is_in_a_family_and_comes_back_byte_for_byte_per_suite(corpus_entries) -> None:
    basic = [e for e in corpus_entries if e.basic]
    families_of = Counter((e.suite, e.family) for e in basic)
    assert families_of == {
        ("PaddleClas", "standard"): 491, ("PaddleOCR", "standard"): 85, ("PaddleOCR", None): 1,
        ("PaddleNLP", "standard"): 29, ("insightface", "standard"): 1, ("models", "tutorial"): 4,
        ("PaddleSeg", "paddleseg"): 53, ("PaddleVideo", "standard"): 28, ("PaddleGAN", "paddlegan"): 16,
    }
    for suite in {e.suite for e in basic}:
        mine = [e for e in basic if e.suite == suite and e.name != corpus_sweep.SHIFTED]
        assert all(e.outcome == "byte" for e in mine), [(e.name, e.outcome) for e in mine if e.outcome != "byte"]


@needs_corpus
def test_docs_layouts_holds_the_sweep_tables(corpus_entries) -> None:
    text = (ROOT / "docs" / "LAYOUTS.md").read_text()
    assert corpus_sweep.family_table() in text, "paste the output of: python tests/corpus_sweep.py"
    assert corpus_sweep.table(corpus_entries) in text, "paste the output of: python tests/corpus_sweep.py"


# ---------------------------------------------------------------- picking the family

def test_the_runner_picks_the_family_and_lint_and_import_say_so(tmp_path: Path) -> None:
    """A PaddleVideo-style runner (lines[11] and lines[19] by key, lines[46] by value) makes a 51-line
    config paddlevideo; without a runner the headers say standard."""
    config = config_in_repo(tmp_path, text_of(standard_lines()), runner_text(VIDEO_READS))
    proc = tipcgen("lint", str(config), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "info family layout family paddlevideo (" in proc.stdout
    assert "reads lines[11] by func_parser_key, lines[19] by func_parser_key, lines[46] by func_parser_value" in proc.stdout
    found = json.loads(tipcgen("lint", "--format", "json", str(config), check=True).stdout)
    assert [(f["rule"], f["severity"]) for f in found] == [("family", "info")]
    document = import_file(config)
    assert "\nlayout: paddlevideo " in document and "# layout family paddlevideo (" in document
    assert repository.render_config(descriptor.load_text(document, source="t.yaml")) == config.read_text()
    (tmp_path / "test_tipc" / "test_train_inference_python.sh").write_text(runner_text(STANDARD_READS))
    assert "\nlayout:" not in import_file(config)
    assert "# layout family standard (" in import_file(config)
    assert "layout family standard (from the headers)" in import_config(config.read_text(), "c.txt")


def test_a_detection_runner_takes_its_run_modes_and_a_gan_runner_needs_gans_layout(tmp_path: Path) -> None:
    """PaddleDetection's runner reads idx 27 and 28 by value (as PaddleGAN's reads idx 28): a config with
    Detection's `--run_mode` values at idx 45 is paddledetection, lints clean and comes back byte for
    byte; the GAN marks alone do not make a file without GAN's `##` at idx 4 paddlegan."""
    lines = standard_lines()
    lines[45] = "--run_mode:paddle|trt_fp32|trt_fp16|trt_int8"
    config = config_in_repo(tmp_path / "det", text_of(lines), runner_text(DETECTION_READS))
    assert not lint.has_errors(lint.lint_report([config]))
    document = import_file(config)
    assert "\nlayout: paddledetection " in document
    assert repository.render_config(descriptor.load_text(document, source="t.yaml")) == config.read_text()
    gan = config_in_repo(tmp_path / "gan", text_of(standard_lines()), runner_text(GAN_READS))
    assert "# layout family standard (" in import_file(gan)
    lines = standard_lines()
    lines[4] = "##"
    gan.write_text(text_of(lines))
    assert "\nlayout: paddlegan " in import_file(gan)


def test_runner_reads_stop_at_the_klquant_block() -> None:
    reads = families.runner_reads(runner_text({1: ("value",), 6: ("params",)}, span=51))
    assert reads.reads == {(1, "value"), (6, "params")} and reads.span == 51
    tutorial = 'epoch_num=$(func_parser_params "${lines[5]}" "${MODE}")\nb=$(func_parser_value "${lines[31]}")\n'
    assert families.runner_reads(tutorial).reads == {(5, "params"), (31, "value")}  # the models template's form
    assert families.runner_reads("#!/bin/bash\ntipc_check_layout\n") is None  # tipcgen's own runner reads no lines[N]


@needs_corpus
def test_a_paddleseg_config_lints_clean_and_renders_back_from_layout_paddleseg(tmp_path: Path) -> None:
    text = (corpus_sweep.CORPORA[1] / SEG).read_text()
    config = config_in_repo(tmp_path, text, runner_text(STANDARD_READS))
    assert not lint.has_errors(lint.lint_report([config]))
    document = import_file(config)
    assert "\nlayout: paddleseg " in document
    assert "headers sit where paddleseg has them" in document
    desc = descriptor.load_text(document, source="t.yaml")
    assert repository.render_config(desc) == text
    assert desc.slot_of("export.inference_dir").value == "null"  # paddleseg has no such line: idx 35 is a header


@needs_corpus
def test_a_paddlevideo_key_with_words_and_equals_is_a_flag_name() -> None:
    """PaddleVideo's TokenShift passes `-o model_name=X -o DATASET.train.file_path=...` as one key."""
    text = (corpus_sweep.CORPORA[1] / "PaddleVideo/test_tipc__configs__TokenShift__train_amp_infer_python.txt").read_text()
    desc = descriptor.load_text(import_config(text, "t.txt"), source="t.yaml")
    assert desc.slot_of("train.extra").key.startswith("-o model_name=TokenShiftVisionTransformer -o ")
    assert repository.render_config(desc) == text


# ---------------------------------------------------------------- what is not in a family

def test_a_config_in_no_family_gets_one_message_naming_what_differs_never_a_shift() -> None:
    lines = standard_lines()
    lines[26] = layout.header_line("model_params")  # a layout tipcgen has no table for
    lines[30] = layout.header_line("infer_params")
    text = text_of(lines)
    assert family_of(TipcConfig.parse(text)) is None
    findings = lint.lint_text(text, "c.txt")
    assert [(f.rule, f.severity) for f in findings if f.severity != "info"] == [("unknown-layout", "warning")]
    message = findings[0].message
    assert "is in no known layout family (docs/LAYOUTS.md): the nearest is standard" in message
    assert "idx 26 is the model_params header where standard has the infer_params header" in message
    with pytest.raises(ConfigImportError) as caught:
        import_config(text, "c.txt")
    assert "is in no known layout family" in str(caught.value) and "slot shift" not in str(caught.value)


def test_the_shifted_ocr_file_is_still_a_shift() -> None:
    lines = standard_lines()
    del lines[layout.SLOT_BY_NAME["pact_train"].index]
    findings = [f for f in lint.lint_text(text_of(lines), "c.txt") if f.severity == "error"]
    assert [f.rule for f in findings] == ["slot-shift"]
    with pytest.raises(ConfigImportError) as caught:  # lint's one message
        import_config(text_of(lines), "c.txt")
    assert str(caught.value).startswith(f"c.txt:{findings[0].line}: {findings[0].message}")


@pytest.mark.parametrize("index", [41, 42, 43, 44])
def test_a_shift_lint_finds_in_the_inference_block_is_an_import_refusal_too(index: int) -> None:
    """The 54-line detection case of #36: lint called it shifted while import took every inference field
    from its neighbour; one reading now, one verdict, one message."""
    lines = standard_lines()
    del lines[index]
    lines.insert(50, "null:null")
    shift = next(f for f in lint.lint_text(text_of(lines), "c.txt") if f.rule == "slot-shift")
    with pytest.raises(ConfigImportError) as caught:
        import_config(text_of(lines), "c.txt")
    assert str(caught.value).startswith(f"c.txt:{shift.line}: {shift.message}")


# ---------------------------------------------------------------- the inference block's value shapes

def test_a_suites_own_inference_values_are_passed_through_not_refused() -> None:
    """A held-back suite's `--run_mode:paddle|trt_fp32|trt_fp16|trt_int8` at idx 45: a warning, and
    import -> init gives the file back."""
    lines = standard_lines()
    lines[45] = "--run_mode:paddle|trt_fp32|trt_fp16|trt_int8"
    text = text_of(lines)
    findings = lint.lint_text(text, "c.txt")
    assert [(f.rule, f.severity, f.line) for f in findings if f.rule == "infer-value-shape"] == \
        [("infer-value-shape", "warning", 46)]
    assert not lint.has_errors(findings)
    assert repository.render_config(descriptor.load_text(import_config(text, "c.txt"), source="t.yaml")) == text


@pytest.mark.parametrize("index", [41, 42, 43, 44])
def test_a_line_missing_in_the_inference_block_is_still_a_shift(index: int) -> None:
    lines = standard_lines()
    del lines[index]
    lines.insert(50, "null:null")  # keep 51 lines: only the values tell
    errors = [f for f in lint.lint_text(text_of(lines), "c.txt") if f.severity == "error"]
    assert [f.rule for f in errors] == ["slot-shift"], errors
    assert "missing in the inference block" in errors[0].message


@pytest.mark.parametrize("at, line", [(44, "--foo:bar"), (43, "--cpu_threads:1|6")])
def test_an_extra_line_in_the_inference_block_is_still_a_shift(at: int, line: str) -> None:
    """One odd value is a shift when every value from it on fits one line later (the runner's own
    check, tests/test_integrity_runs.py, sees the same)."""
    lines = standard_lines()
    lines.insert(at, line)
    errors = [f for f in lint.lint_text(text_of(lines), "c.txt") if f.severity == "error"]
    assert [f.rule for f in errors] == ["slot-shift"] and "extra in the inference block" in errors[0].message


@needs_corpus
def test_a_32_line_runner_picks_the_tutorial_family(tmp_path: Path) -> None:
    name = "models/tutorials__mobilenetv3_prod__Step6__test_tipc__configs__mobilenet_v3_small__train_infer_python.txt"
    text = (corpus_sweep.CORPORA[0] / name).read_text()
    runner = runner_text({i: ("key", "value") for i in range(1, 32) if i not in (11, 14, 15, 17, 18, 22, 25)}, span=32)
    config = config_in_repo(tmp_path, text, runner)
    picked = [f.message for f in lint.lint_report([config]) if f.rule == "family"]
    assert picked == [f"layout family tutorial ({tmp_path / 'test_tipc/test_train_inference_python.sh'} reads lines[0..31])"]
    assert repository.render_config(descriptor.load_text(import_file(config), source="t.yaml")) == text


@needs_corpus
def test_import_then_init_writes_the_paddleseg_config_back_byte_for_byte(tmp_path: Path) -> None:
    """As a user does it: `tipcgen import` then `tipcgen init`, and the config init writes is the file."""
    source = corpus_sweep.CORPORA[1] / SEG
    out = tipcgen("import", str(source), "-o", str(tmp_path / "tipc.yaml"), check=True).stdout
    assert "layout family paddleseg (from the headers: export_params at idx 26, infer_params at idx 35)" in out
    tipcgen("init", str(tmp_path / "tipc.yaml"), "--output", str(tmp_path / "repo"), check=True)
    written = tmp_path / "repo" / "test_tipc" / "configs" / "bisenetv1" / "train_infer_python.txt"
    assert written.read_bytes() == source.read_bytes()


def test_a_kept_length_cuts_the_layout_only() -> None:
    """text.line_count stops the layout's lines; what the descriptor adds after the layout stays."""
    from tipcgen.format.text_style import TextStyle, apply

    assert apply("h\na:1\n##\nb:2\nextra:3\n", TextStyle(line_count=3), layout_lines=4) == "h\na:1\n##\nextra:3\n"
    assert apply("h\na:1\n", TextStyle(lines=((1, "a:1 "),), final_newline=False)) == "h\na:1 "
    assert apply("h\na:2\n", TextStyle(lines=((1, "a:1 "),))) == "h\na:2\n"  # a changed line is written afresh


def test_each_family_says_which_step_gets_which_line() -> None:
    """Same lines, other runner semantics: the family's table says what its runner passes where."""
    from tipcgen.format import chain

    def names(step: str, family: str) -> set[str]:
        return {slot.name for slot in chain.slots_of_step(step, family)}

    assert "train_infer_data" in names("train", "paddlevideo") and "train_infer_data" not in names("train", "standard")
    assert "train_use_gpu" in names("train", "standard") and "train_use_gpu" not in names("train", "paddlegan")
    assert "pact_train" not in names("train", "paddlegan")
    filled = {name: {s.index for s in layout.LAYOUTS[name] if s.filled} for name in ("standard", "paddledetection")}
    assert {27, 28} <= filled["standard"] and not {27, 28} & filled["paddledetection"]
    assert all(len(layout.LAYOUTS[f.name]) == f.lines for f in families.FAMILIES)
