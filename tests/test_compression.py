"""The compression configs (docs/QUANTIZATION.md): the corpus's 75 PTQ and PACT files lint without
false errors and come back byte for byte; a missing line, a null script or a bad device is an error.

Read in place from ../shared/tipc-corpus and ../shared/tipc-corpus-2 (41 files named
``train_ptq_infer_python.txt`` / ``train_pact_infer_python.txt`` and 34 PaddleClas
``<Model>_train_ptq|pact_infer_python.txt``).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import tipcgen
from tipcgen import descriptor
from tipcgen.configs.import_compression import import_ptq
from tipcgen.configs.importer import import_descriptor
from tipcgen.configs.lint import lint_text
from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor import ptq as ptq_spec
from tipcgen.render import repository, shipped
from tipcgen.format import compression, paths
from tipcgen.format.config import TipcConfig

SHARED = Path(__file__).resolve().parents[2] / "shared"
SUFFIXES = ("train_ptq_infer_python.txt", "train_pact_infer_python.txt")
FILES = sorted(p for corpus in ("tipc-corpus", "tipc-corpus-2") if (SHARED / corpus).is_dir()
               for p in (SHARED / corpus).rglob("*.txt") if p.name.endswith(SUFFIXES))
PTQ_FILES = [p for p in FILES if TipcConfig.read(p).kind in compression.KINDS]
needs_corpus = pytest.mark.skipif(len(FILES) != 75, reason=f"the two corpora not found under {SHARED}")
OCR_KL = "tipc-corpus/PaddleOCR/test_tipc__configs__ch_PP-OCRv3_det__train_ptq_infer_python.txt"
SEG_PTQ = "tipc-corpus-2/PaddleSeg/test_tipc__configs__fcn_hrnetw18__train_ptq_infer_python.txt"


def text(relpath: str) -> str:
    return (SHARED / relpath).read_bytes().decode()


def errors(config_text: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.rule, f.message) for f in lint_text(config_text, "c.txt") if f.severity == "error"]


def without_line(config_text: str, index: int) -> str:
    lines = config_text.split("\n")
    return "\n".join(lines[:index] + lines[index + 1:])


@needs_corpus
def test_the_corpus_counts_by_layout() -> None:
    """41 files named as the issue counts them, 34 PaddleClas ones; 21 PTQ configs in three layouts."""
    named = [p for p in FILES if p.name.split("__")[-1] in SUFFIXES]
    assert (len(FILES), len(named)) == (75, 41)
    layouts = Counter((p.parent.name, compression.layout_of(TipcConfig.read(p))) for p in PTQ_FILES)
    assert layouts == {("PaddleOCR", "kl_quant"): 10, ("PaddleSeg", "ptq"): 9, ("models", "ptq"): 1,
                       ("PaddleVideo", "ptq_video"): 1}


@needs_corpus
@pytest.mark.parametrize("path", PTQ_FILES, ids=lambda p: p.name.split("configs__")[-1])
def test_every_ptq_config_parses_and_renders_back_byte_for_byte(path: Path) -> None:
    original = path.read_bytes().decode()
    assert compression.read_config(original).render() == original


@needs_corpus
def test_lint_finds_no_error_in_any_compression_config() -> None:
    """The PTQ layouts by their own rules, the PACT configs (and PaddleClas's PTQ ones) in their layout
    family (PaddleSeg's PACT configs in the paddleseg family, docs/LAYOUTS.md)."""
    assert {p.name for p in FILES if errors(p.read_bytes().decode())} == set()


@needs_corpus
@pytest.mark.parametrize("index, where", [
    (3, "'infer_quant:' sits at idx 6 instead of 7"),  # an export key deleted: found by the next anchor
    (11, "idx 12 (infer_batch_size) should hold a number"),  # the keyless block: found by a value's shape
])
def test_a_deleted_kl_quant_line_is_a_shift(index: int, where: str) -> None:
    found = errors(without_line(text(OCR_KL), index))
    assert [rule for _, rule, _ in found] == ["slot-shift"] and where in found[0][2]


@needs_corpus
def test_lines_after_the_kl_quant_layout_are_not_read() -> None:
    assert errors(without_line(text(OCR_KL), 20)) == []  # OCR's extra null:null line


@needs_corpus
def test_a_deleted_calibration_line_and_a_cut_file_are_shifts() -> None:
    found = errors(without_line(text(SEG_PTQ), 4))
    assert [r for _, r, _ in found] == ["slot-shift"] and "'##' sits at idx 8 instead of 9" in found[0][2]
    found = errors(without_line(text(SEG_PTQ), 17))
    assert [r for _, r, _ in found] == ["slot-shift"] and "19 of the 20 lines of the ptq layout" in found[0][2]


@needs_corpus
def test_a_null_script_and_an_unknown_device_are_errors() -> None:
    broken = text(SEG_PTQ).replace("PTQ:deploy/slim/quant/ptq.py", "PTQ:null").replace("--device:cpu|gpu", "--device:cpu |gpu")
    assert [(line, rule) for line, rule, _ in errors(broken)] == [(12, "null-value"), (16, "infer-device")]


@needs_corpus
def test_a_parse_refuses_what_it_cannot_keep() -> None:
    with pytest.raises(ValueError, match="idx 9 should hold '##'"):
        compression.read_config(without_line(text(SEG_PTQ), 4))
    with pytest.raises(ValueError, match="blank line"):
        compression.read_config(text(SEG_PTQ).replace("##\n", "##\n\n", 1))
    with pytest.raises(ValueError, match="not a PTQ config"):
        compression.read_config(text("tipc-corpus/PaddleOCR/test_tipc__configs__ch_PP-OCRv3_det__train_pact_infer_python.txt"))


# ---------------------------------------------------------------- import → init

STUB_DESCRIPTOR = Path(__file__).resolve().parent / "fixtures" / "stub" / "tipc.yaml"


def with_ptq(section: str) -> str:
    """The stub descriptor with a ptq section added, as a user adds the imported one."""
    return STUB_DESCRIPTOR.read_text() + "\n" + section


@needs_corpus
@pytest.mark.parametrize("path", PTQ_FILES, ids=lambda p: p.name.split("configs__")[-1])
def test_every_ptq_config_imports_and_inits_back_byte_for_byte(path: Path) -> None:
    original = path.read_bytes().decode()
    desc = descriptor.load_text(with_ptq(import_ptq(original, path.name)), source="tipc.yaml")
    files = repository.render_files(desc)
    assert files[paths.config_rel("stub_model", "ptq")] == original
    without = repository.render_files(descriptor.load_text(STUB_DESCRIPTOR.read_text(), source="tipc.yaml"))
    assert files.keys() - without.keys() == {paths.config_rel("stub_model", "ptq"), "test_tipc/test_ptq_inference_python.sh",
                                             "test_tipc/check_quant.py"}  # the config and the chain's two scripts
    assert all(files[name] == text for name, text in without.items())  # nothing else changes


@needs_corpus
def test_the_cli_imports_a_ptq_config_and_init_writes_it_back(tmp_path: Path) -> None:
    section = tmp_path / "ptq.yaml"
    proc = tipcgen("import", str(SHARED / OCR_KL), "-o", str(section))
    # Not at configs/<model_name>/train_ptq_infer_python.txt: kept where it was, in a descriptor init renders alone.
    assert proc.returncode == 0 and "render it with: tipcgen init" in proc.stdout, proc.stdout
    tipcgen("init", str(section), "--root", str(tmp_path / "alone"), check=True)
    written = [p for p in (tmp_path / "alone/test_tipc/configs").rglob("*.txt") if "ptq" in p.name]
    assert [p.read_bytes() for p in written] == [(SHARED / OCR_KL).read_bytes()]
    assert tipcgen("lint", str(written[0])).returncode == 0
    # At configs/<model_name>/train_ptq_infer_python.txt: its ptq section, the PTQ chain tipcgen renders.
    canonical = tmp_path / "repo/test_tipc/configs/ch_PP-OCRv3_det_KL/train_ptq_infer_python.txt"
    canonical.parent.mkdir(parents=True)
    canonical.write_bytes((SHARED / OCR_KL).read_bytes())
    proc = tipcgen("import", str(canonical), "-o", str(tmp_path / "canonical.yaml"))
    assert proc.returncode == 0 and "its ptq section" in proc.stdout, proc.stdout
    tipcgen("init", str(tmp_path / "canonical.yaml"), "--root", str(tmp_path / "rendered"), check=True)
    assert (tmp_path / "rendered" / canonical.relative_to(tmp_path / "repo")).read_bytes() == canonical.read_bytes()
    assert (tmp_path / "rendered/test_tipc/test_ptq_inference_python.sh").is_file()


@needs_corpus
def test_a_shifted_ptq_config_is_refused_naming_the_line(tmp_path: Path) -> None:
    shifted = tmp_path / "train_ptq_infer_python.txt"
    shifted.write_text(without_line(text(SEG_PTQ), 4))
    proc = tipcgen("import", str(shifted))
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{shifted}:10: idx 9 should hold '##'" in proc.stderr and "Traceback" not in proc.stderr


@needs_corpus
@pytest.mark.parametrize("change, message", [
    (lambda s: s.replace("  layout: ptq ", "  layout: ptq_x "), "ptq.layout: expected one of ptq, ptq_video, kl_quant"),
    (lambda s: s.replace("    batch_num: --batch_num:1\n", ""), "ptq.lines: has no batch_num line"),
    (lambda s: s.replace("    trainer: trainer:PTQ", "    trainer: trainer:PTQ\n    epochs: --epochs:1"),
     "ptq.lines.epochs: is no line of the ptq layout"),
    (lambda s: s.replace("    inference: inference:", "    inference: infer:"), "is not a ptq config: idx 14 should hold 'inference:'"),
    (lambda s: s.replace("    python: python:python3.7", "    python: [python]"), "ptq.lines.python: expected one line of text"),
    (lambda s: s.replace("  lines:", "  eval_data: ../eval.npz\n  lines:"), "ptq.eval_data: expected a relative .npz path"),
    (lambda s: s.replace("  lines:", "  accuracy_drop: 2\n  lines:"), "ptq.accuracy_drop: expected a number from 0 to 1"),
])
def test_a_bad_ptq_section_names_the_field(change, message: str) -> None:
    section = import_ptq(text(SEG_PTQ), "seg.txt")
    with pytest.raises(DescriptorError, match=re.escape(message)):
        descriptor.load_text(with_ptq(change(section)), source="tipc.yaml")


@needs_corpus
def test_the_pact_and_clas_ptq_configs_import_and_init_back_byte_for_byte() -> None:
    """The 54 compression configs in the basic chain's layout families (PaddleClas PTQ and PACT, OCR,
    PaddleSeg and the tutorial's PACT) import as basic-chain descriptors and render back byte for byte."""
    basic = [p for p in FILES if p not in PTQ_FILES]
    assert len(basic) == 54
    for path in basic:
        original = path.read_bytes().decode()
        _, desc = import_descriptor(original, path.name)
        assert repository.render_config(desc) == original, path.name


# ---------------------------------------------------------------- ptq.tolerance: the int8-vs-float check's

PTQ_CNN = Path(__file__).resolve().parent / "fixtures" / "ptq_cnn"


def ptq_cnn(name: str = "tipc.yaml", tolerance: str | None = None) -> str:
    """A PTQ test project's descriptor, with ``tolerance:`` as the first line of its ptq section (line 40)."""
    source = (PTQ_CNN / name).read_text()
    return source if tolerance is None else source.replace("\nptq:\n", f"\nptq:\n  tolerance: {tolerance}\n", 1)


def check_args(desc) -> str:
    """The line of the runner's arm for the model that holds check_quant.py's flags ("" when it passes none)."""
    runner = repository.render_files(desc)["test_tipc/test_ptq_inference_python.sh"]
    arm = runner.split(f"\n        {desc.model_name})\n", 1)[1].split(";;", 1)[0]
    return next((line.strip() for line in arm.splitlines() if line.strip().startswith("check_args=(")), "")


def test_the_ptq_tolerance_defaults_to_the_checks_own() -> None:
    """Left out, ptq.tolerance is check_quant.py's default (rtol 0.2, atol 0) and the runner passes no flag for it."""
    desc = descriptor.load_text(ptq_cnn(), source="tipc.yaml")
    assert (desc.ptq.tolerance.rtol, desc.ptq.tolerance.atol) == (0.2, 0.0)
    assert "--rtol" not in check_args(desc) and "--atol" not in check_args(desc)
    source = shipped.source(paths.CHECK_QUANT)  # the defaults the runner leaves to the check
    assert 'add_argument("--rtol", type=float, default=0.2)' in source
    assert 'add_argument("--atol", type=float, default=0.0)' in source
    assert f'add_argument("--accuracy_drop", type=float, default={ptq_spec.DEFAULT_ACCURACY_DROP})' in source
    written = descriptor.load_text(ptq_cnn(tolerance="{rtol: 0.2, atol: 0}"), source="tipc.yaml")
    assert repository.render_files(written) == repository.render_files(desc)  # the default written out renders the same


@pytest.mark.parametrize("name, tolerance, rtol, atol", [
    ("tipc.yaml", "{rtol: 0, atol: 0}", 0.0, 0.0),
    ("tipc.yaml", "{rtol: 0.05}", 0.05, 0.0),
    ("tipc.yaml", "{atol: 1}", 0.2, 1.0),
    ("tipc_mobile.yaml", "{rtol: 1.0e-3, atol: 2.5}", 0.001, 2.5),
    ("tipc_kl.yaml", "{rtol: 0.1}", 0.1, 0.0),  # kl_quant's own runner
    ("tipc_video.yaml", "{rtol: 0.3, atol: 0.01}", 0.3, 0.01),
])
def test_a_ptq_tolerance_reaches_the_check(name: str, tolerance: str, rtol: float, atol: float) -> None:
    desc = descriptor.load_text(ptq_cnn(name, tolerance), source="tipc.yaml")
    assert (desc.ptq.tolerance.rtol, desc.ptq.tolerance.atol) == (rtol, atol)
    assert check_args(desc).endswith(f'"--rtol={rtol}" "--atol={atol}")')  # after eval_data's flags, if any
    config = repository.render_files(desc)[paths.config_rel(desc.model_name, "ptq")]
    assert config == repository.render_files(descriptor.load_text(ptq_cnn(name), source="tipc.yaml"))[
        paths.config_rel(desc.model_name, "ptq")]  # not a config line: the config stays as imported


@pytest.mark.parametrize("tolerance, field, found", [
    ("{rtol: -0.1}", "ptq.tolerance.rtol", "the number -0.1"),
    ("{atol: -1}", "ptq.tolerance.atol", "the number -1"),
    ("{rtol: .nan}", "ptq.tolerance.rtol", "the number nan"),
    ("{atol: .inf}", "ptq.tolerance.atol", "the number inf"),
    ("{rtol: '0.2'}", "ptq.tolerance.rtol", "the text '0.2'"),
    ("{rtol: true}", "ptq.tolerance.rtol", "the boolean True"),
])
def test_a_bad_ptq_tolerance_names_the_field_and_its_line(tolerance: str, field: str, found: str) -> None:
    with pytest.raises(DescriptorError, match=re.escape(f"tipc.yaml:40: {field}: expected a tolerance: a number ≥ 0")
                       + ".*" + re.escape(f"found {found}")):
        descriptor.load_text(ptq_cnn(tolerance=tolerance), source="tipc.yaml")


@pytest.mark.parametrize("tolerance, message", [
    ("{rtol: 0.1, btol: 0}", "tipc.yaml:40: ptq.tolerance.btol: unknown field"),
    ("[0.1, 0]", "tipc.yaml:40: ptq.tolerance: expected a mapping"),
    ("0.1", "tipc.yaml:40: ptq.tolerance: expected a mapping"),
])
def test_a_ptq_tolerance_is_a_mapping_of_atol_and_rtol(tolerance: str, message: str) -> None:
    with pytest.raises(DescriptorError, match=re.escape(message)):
        descriptor.load_text(ptq_cnn(tolerance=tolerance), source="tipc.yaml")


def test_init_refuses_a_bad_ptq_tolerance_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "tipc.yaml").write_text(ptq_cnn(tolerance="\n    rtol: -1\n    atol: 0"))
    proc = tipcgen("init", "tipc.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "tipc.yaml:41: ptq.tolerance.rtol: expected a tolerance: a number ≥ 0" in proc.stderr
    assert not (tmp_path / "test_tipc").exists()


# ---------------------------------------------------------------- one PTQ runner for a repository's models

# Every step "passes" (what the runner passed each step is in its record); the checks before any step are run.
STUB_PYTHON = '#!/bin/sh\ncase $3 in */tipc_preflight.py) exec python3 "$@" ;; esac\nexit 0\n'
KL_TOLERANCE = "{rtol: 0.3}"  # the kl_quant model's own check setting (ptq_mobile keeps the default)


def two_ptq_models(repo: Path) -> Path:
    """The test project with ptq_mobile (ptq layout) and ptq_cnn in the kl_quant layout with its own tolerance."""
    shutil.copytree(PTQ_CNN, repo)
    (repo / "tipc_kl_tol.yaml").write_text(ptq_cnn("tipc_kl.yaml", KL_TOLERANCE))
    return repo


def files_of(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}


def stub_run(repo: Path, config: str, model: str) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """The runner on ``config`` with a stub interpreter (no paddle): its exit and its step records by name."""
    stub = repo / "stub_python"
    stub.write_text(STUB_PYTHON)
    stub.chmod(0o755)
    env = {**os.environ, "TIPC_PYTHON": str(stub), "TIPC_GPU_COUNT": "0"}
    proc = subprocess.run(["bash", paths.RUNNERS["ptq"], config, "whole_infer"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    records = repo / "test_tipc" / "output" / model / "ptq" / "whole_infer" / "steps.jsonl"
    steps = [json.loads(line) for line in records.read_text().splitlines()] if records.is_file() else []
    return proc, {step["name"]: step for step in steps}


def test_one_ptq_runner_serves_every_model_with_its_own_layout_and_settings(tmp_path: Path) -> None:
    """Two PTQ models of different layouts in one repository: one runner holds both layouts' bodies and each
    model's check settings, picked by the config's model_name; a model no descriptor rendered gets the defaults
    (and a note), a layout no model here has is refused (exit 2). The order of init does not matter, and
    re-rendering one model leaves every file byte-identical."""
    repo = two_ptq_models(tmp_path / "repo")
    tipcgen("init", "tipc_mobile.yaml", "tipc_kl_tol.yaml", cwd=repo, check=True)
    runner = (repo / paths.RUNNERS["ptq"]).read_text()
    assert "ptq_chain_ptq() {" in runner and "ptq_chain_kl_quant() {" in runner and "ptq_chain_ptq_video" not in runner
    assert '        ptq_cnn)\n            check_args=(--eval_data=lite_data/eval.npz "--accuracy_drop=0.05" ' \
           '"--rtol=0.3" "--atol=0.0")\n' in runner
    assert '        ptq_mobile)\n            check_args=(--eval_data=lite_data/eval.npz "--accuracy_drop=0.05")\n' in runner

    other = two_ptq_models(tmp_path / "other")  # the other order, one model after the other
    for name in ("tipc_kl_tol.yaml", "tipc_mobile.yaml"):
        tipcgen("init", name, cwd=other, check=True)
    shared = (paths.RUNNERS["ptq"], paths.COMMON_FUNC, paths.STEPS_SH, paths.PREPARE_SH, paths.shipped_rel(paths.CHECK_QUANT))
    assert all((other / rel).read_bytes() == (repo / rel).read_bytes() for rel in shared)
    before = files_of(repo)
    for name in ("tipc_kl_tol.yaml", "tipc_mobile.yaml"):
        proc = tipcgen("init", name, cwd=repo, check=True)
        assert " 0 file(s) written" in proc.stdout and files_of(repo) == before, name

    for folder in ("ptq_mobile_int8", "ptq_cnn_infer_klquant", "other_int8"):  # the int8 models the stub "writes"
        (repo / folder).mkdir()
    proc, steps = stub_run(repo, paths.config_rel("ptq_mobile", "ptq"), "ptq_mobile")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = steps["ptq_int8_vs_float"]["command"]
    assert "--eval_data=lite_data/eval.npz --accuracy_drop=0.05" in check and "--rtol" not in check
    assert "--algo=hist" in steps["ptq_quant"]["command"]
    proc, steps = stub_run(repo, paths.config_rel("ptq_cnn", "ptq"), "ptq_cnn")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = steps["ptq_int8_vs_float_model_0"]["command"]
    assert "--eval_data=lite_data/eval.npz --accuracy_drop=0.05 --rtol=0.3 --atol=0.0" in check
    assert "--output_dir=./ptq_cnn_infer_klquant" in steps["ptq_quant_model_0"]["command"]

    mobile = (repo / paths.config_rel("ptq_mobile", "ptq")).read_text()
    (repo / "other.txt").write_text(mobile.replace("model_name:ptq_mobile", "model_name:other")
                                    .replace("./ptq_mobile_int8", "./other_int8"))
    proc, steps = stub_run(repo, "other.txt", "other")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = steps["ptq_int8_vs_float"]
    assert "--eval_data" not in check["command"] and "--rtol" not in check["command"]
    assert check["note"] == "no descriptor here rendered model other: its check ran with check_quant.py's defaults"

    video = repository.render_files(descriptor.load(PTQ_CNN / "tipc_video.yaml"))[paths.config_rel("ptq_cnn", "ptq")]
    (repo / "video.txt").write_text(video)
    proc, _ = stub_run(repo, "video.txt", "ptq_cnn")
    assert proc.returncode == 2 and "is a PTQ config of the ptq_video layout, which no model rendered here has " \
        "(this runner reads ptq, kl_quant)" in proc.stderr


def test_two_ptq_configs_of_one_model_name_are_refused(tmp_path: Path) -> None:
    """The runner picks a model's settings by its PTQ config's model_name: two models may not share one."""
    repo = two_ptq_models(tmp_path / "repo")
    (repo / "tipc_mobile2.yaml").write_text((repo / "tipc_mobile.yaml").read_text().replace(
        "model_name: ptq_mobile\n", "model_name: ptq_mobile2\n", 1))
    proc = tipcgen("init", "tipc_mobile.yaml", "tipc_mobile2.yaml", cwd=repo)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "its PTQ config's model_name ptq_mobile is also the model of" in proc.stderr
    assert not (repo / "test_tipc").exists()


def test_a_ptq_config_named_otherwise_keeps_its_models_step_timeout() -> None:
    """OCR's PTQ configs name the model `<model>_KL`: tipc_layouts.json's settings for that name hold the
    descriptor's step time limit, which tipc_start_run reads by the config's model_name."""
    source = ptq_cnn("tipc_kl.yaml").replace("    model_name: model_name:ptq_cnn\n", "    model_name: model_name:ptq_cnn_KL\n")
    desc = descriptor.load_text(source + "run:\n  step_timeout: 300\n", source="tipc.yaml")
    files = repository.render_files(desc)
    assert json.loads(files[paths.LAYOUTS_JSON])["settings"]["ptq_cnn_KL"]["timeout"] == 300
    assert "        ptq_cnn_KL)\n" in files[paths.RUNNERS["ptq"]]
