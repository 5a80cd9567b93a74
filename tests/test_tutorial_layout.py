"""The 32-line tutorial layout (PaddlePaddle/models tutorials/mobilenetv3_prod/Step6) is first-class:
linted by the same rules as the 51-line one, imported losslessly, rendered from `layout: tutorial`,
run by the generated runner, and passing under the template's own runner (tests/tutorial_runner.py)."""
from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import tipcgen
from grid import perturbed_weight_fails, run_grid
from layout_text import round_trip
from tutorial_runner import run_tutorial

from tipcgen import descriptor
from tipcgen.configs import importer
from tipcgen.format import layout
from tipcgen.configs import lint
from tipcgen.render import repository
from tipcgen.format.config import TipcConfig
from tipcgen.core.errors import DescriptorError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "tutorial"
CONFIG = "test_tipc/configs/tutorial_model/train_infer_python.txt"
CORPUS = ROOT.parent / "shared" / "tipc-corpus"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
STEP6 = "tutorials__mobilenetv3_prod__Step6__test_tipc__configs__mobilenet_v3_small__{}.txt"
TUTORIAL_FILES = ("train_infer_python", "train_fleet_infer_python", "train_pact_infer_python",
                  "win_train_infer_python", "train_amp_infer_python")


@needs_corpus
@pytest.mark.parametrize("name", TUTORIAL_FILES)
def test_the_template_configs_lint_clean_and_come_back(name: str) -> None:
    text = (CORPUS / "models" / STEP6.format(name)).read_text()
    assert TipcConfig.parse(text).kind == "tutorial_32"
    assert not lint.has_errors(lint.lint_text(text, name))
    document = importer.import_config(text, name)
    assert "\nlayout: tutorial " in document
    if name == "train_amp_infer_python":  # its idx-14 separator is a single '#': '##' in the fields, kept in text:
        assert "separator rewritten as '##'" in document and "    14: '#'" in document
    assert round_trip(text) == text  # byte for byte (no final newline, as upstream wrote them)


def _step6() -> str:
    return (FIXTURE / CONFIG).read_text()


def test_lint_applies_the_slot_rules_to_the_tutorial_layout(tmp_path: Path) -> None:
    repo = tmp_path / "repo"  # lint --root probes the scripts and caches their --help under the root's .tipcgen/
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__", ".tipcgen"))
    text = (_step6().replace("lite_train_lite_infer=2", "lite_train_lite_infr=2")
            .replace("--use-gpu:False", "--use-gpu:cuda").replace("norm_train:train.py", "norm_train:missing.py"))
    findings = lint.lint_text(text, "c.txt", repo)
    got = {(f.line, f.rule) for f in findings if f.severity == "error"}
    assert got == {(8, "unknown-mode"), (14, "missing-script"), (28, "infer-device")}
    shifted = text.replace("##\ntrainer:", "trainer:", 1)  # one line missing above the trainer line
    assert [f.rule for f in lint.lint_text(shifted, "c.txt") if f.severity == "error"] == ["slot-shift"]
    assert not lint.has_errors(lint.lint_text(_step6(), "c.txt", repo))
    assert not (FIXTURE / ".tipcgen").exists(), "a test wrote into the source tree"


@pytest.mark.parametrize("layout_config", ["tutorial", "standard"])
def test_a_trailing_header_one_equals_longer_comes_back_byte_identical(layout_config: str) -> None:
    base = _step6() if layout_config == "tutorial" else (ROOT / "test_tipc/configs/bert_sst2/train_infer_python.txt").read_text()
    text = (base + "=" * 27 + "train_benchmark_params" + "=" * 28 + "\nbatch_size:2\n"
            + "====infer_benchmark_params===\nrandom_infer_input:[{float32,[3,224,224]}]\n")
    assert round_trip(text) == text


def test_a_tutorial_descriptor_refuses_a_field_the_layout_has_no_line_for() -> None:
    document = importer.import_config(_step6(), "c.txt")
    with pytest.raises(DescriptorError, match="inference.enable_mkldnn: has no line in the tutorial layout"):
        descriptor.load_text(document.replace("\ninference:\n", "\ninference:\n  enable_mkldnn: {key: --m, value: True}\n"),
                             source="t.yaml")
    with pytest.raises(DescriptorError, match="layout"):
        descriptor.load_text(document.replace("layout: tutorial", "layout: short"), source="t.yaml")
    assert descriptor.load_text(document, source="t.yaml").layout == "tutorial"
    assert len(layout.TUTORIAL_32) == 32


# What a user names by hand after `tipcgen import` (the 32-line config cannot say it): the lite data
# (Step6's test_images/lite_data.tar, unpacked to ./lite_data), the paddle2onnx chain, golden results
# and the output's name.
BY_HAND = """
data:
  dir: .
  files:
    lite_data: {role: train, lite: test_images/lite_data.tar, whole: lite_data}
  trained_model: ./output/tutorial_model_infer

paddle2onnx:
  save_file: ./output/tutorial_model_onnx/model.onnx
  inference: deploy/inference_python/infer.py
  onnx_flag: null

checks:
  golden: golden
  outputs: [logits]
"""


@pytest.fixture(scope="module")
def tutorial_repo(tmp_path_factory) -> Path:
    """The fixture project after `tipcgen import` of its own 32-line config, its data named by hand, and
    `tipcgen init`."""
    repo = tmp_path_factory.mktemp("tutorial") / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    tipcgen("import", CONFIG, "-o", "tipc.yaml", cwd=repo, check=True)
    (repo / "tipc.yaml").write_text((repo / "tipc.yaml").read_text() + BY_HAND)
    tipcgen("init", "tipc.yaml", "--force", cwd=repo, check=True)  # replaces the project's own runner files
    return repo


def test_init_keeps_the_tutorial_config_byte_identical(tutorial_repo: Path) -> None:
    """Every line comes back; the checks add a trailing result_check_params section, which the template's
    runner never reads (it reads the first 32 lines)."""
    shipped = (FIXTURE / CONFIG).read_text()
    rendered = (tutorial_repo / CONFIG).read_text()
    assert rendered.startswith(shipped)
    assert rendered[len(shipped):].startswith("=" * 27 + "result_check_params" + "=" * 27 + "\n")
    assert "layout: tutorial" in (tutorial_repo / "tipc.yaml").read_text()


@pytest.mark.paddle
@pytest.mark.chain
@pytest.mark.full  # the grid again (two_io's in every run); the tutorial's lite chain: the zoo's, its own runner: the submission tests
def test_import_of_the_tutorial_project_passes_the_grid(tutorial_repo: Path, tmp_path: Path) -> None:
    """The four modes and the paddle2onnx chain under the generated runner; lite_train_lite_infer and
    whole_infer under the template's own runner; a perturbed exported weight failing naming the output."""
    pytest.importorskip("paddle")
    pytest.importorskip("paddle2onnx")
    pytest.importorskip("onnxruntime")
    whole = tmp_path / "whole"
    with tarfile.open(FIXTURE / "test_images/lite_data.tar") as tar:
        tar.extractall(whole, filter="data")  # the whole data set: the same tree, in $TIPC_DATA_DIR/lite_data
    # The layout lists one CPU configuration: the basic chains' check records outputs (golden results
    # compare them); the paddle2onnx chain compares ONNX Runtime with Paddle Inference.
    # One configuration: checked one sample at a time. Its data is one tree, read by training and inference alike.
    run_grid(tutorial_repo, "tutorial_model", {"logits"}, whole, whole_infer_data=False)
    out = tutorial_repo / "test_tipc/output/tutorial_model/lite_train_lite_infer"
    passed = [(s["kind"], s["name"].split("_gpus")[0]) for s in json.loads((out / "summary.json").read_text())["steps"]
              if s["status"] == "passed"]
    # the result check, then the run's own: the export holds the trained parameters (issue #28)
    assert passed == [("prepare", "prepare"), ("train", "norm_train"), ("eval", "norm_train"), ("export", "norm_train"),
                      ("infer", "python_infer_cpu"), ("check", "fixed_inputs"), ("check", "export_params")]
    commands = (out / "results_python.log").read_text()
    assert "--output-dir=./test_tipc/output/" in commands and "use-gpu=" not in commands.replace("--use-gpu=", "")
    assert "--data-path=" not in commands  # the template's runner never passes line 11 to train: neither does ours
    # whole_infer (infer_export: null) infers on idx 19's folder, which prepare.sh links to the latest train run
    results = (tutorial_repo / "test_tipc/output/tutorial_model/whole_infer/results_python.log").read_text()
    assert "--model-dir=./output/tutorial_model_infer/ " in results

    status = run_tutorial(tutorial_repo, CONFIG, "lite_train_lite_infer")
    assert len(status) == 4, status  # train, eval, export, one inference case
    assert all("Run successfully" in line for line in status), status
    assert "--pretrained=./log/tutorial_model/lite_train_lite_infer/norm_train_gpus_-1/latest.pdparams" in status[1]
    assert "--img-path" not in status[3]  # the template never passes data to inference after training
    status = run_tutorial(tutorial_repo, CONFIG, "whole_infer")
    assert len(status) == 1 and "Run successfully" in status[0], status
    assert "--model-dir=./output/tutorial_model_infer/" in status[0]

    # whole_infer links idx 19's folder to the newest train run: whole_train_whole_infer's
    exported = tutorial_repo / "test_tipc/output/tutorial_model/whole_train_whole_infer/norm_train_gpus_-1_autocast_null"
    assert f"-> ./{exported.relative_to(tutorial_repo)}/ (trained model)" in (out.parent / "whole_infer/prepare.log").read_text()
    exported = exported / "inference.pdiparams"
    text = perturbed_weight_fails(tutorial_repo, "tutorial_model", "tipc.yaml", exported, whole)
    assert "output 'logits' differs by up to" in text


def test_init_refuses_to_break_the_other_scripts_of_an_existing_test_tipc(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    tipcgen("import", CONFIG, "-o", "tipc.yaml", cwd=repo, check=True)
    before = {p: p.read_bytes() for p in (repo / "test_tipc").rglob("*") if p.is_file()}
    proc = tipcgen("init", "tipc.yaml", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "nothing was written" in proc.stderr
    # tipcgen's common_func.sh keeps upstream's helpers: the serving script loses none of its functions,
    # but its prepare mode is one the generated prepare.sh does not take.
    assert "calls func_parser_value()" not in proc.stderr and "calls status_check()" not in proc.stderr
    assert "uses prepare mode 'serving_infer', which the current test_tipc/prepare.sh accepts" in proc.stderr
    assert "it would replace test_tipc/common_func.sh: the generated runner's shell helpers" in proc.stderr
    assert {p: p.read_bytes() for p in (repo / "test_tipc").rglob("*") if p.is_file()} == before
    assert not (repo / ".tipcgen-answers.yml").exists()
    forced = tipcgen("init", "tipc.yaml", "--force", cwd=repo)
    assert forced.returncode == 0, forced.stderr
    assert "replaces test_tipc/prepare.sh: prepares the data of the descriptor" in forced.stderr
    assert "warning: test_tipc/test_serving_infer_python.sh:11 uses prepare mode 'serving_infer'" in forced.stderr
    assert "calls func_parser_value()" not in forced.stderr
    backups = list((repo / ".tipcgen" / "backup").rglob("common_func.sh"))
    assert [b.read_bytes() for b in backups] == [before[repo / "test_tipc/common_func.sh"]]


@pytest.fixture
def submission_repo(tmp_path: Path) -> Path:
    """The fixture project after `tipcgen init --submission`: its own runner, common_func.sh and prepare.sh kept."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    tipcgen("import", CONFIG, "-o", "tipc.yaml", cwd=repo, check=True)
    tipcgen("init", "tipc.yaml", "--submission", cwd=repo, check=True)
    return repo


RUNNER_ENV = {"TUTORIAL_RUNNER": str(ROOT / "tests" / "tutorial_runner.py")}


@pytest.mark.paddle
@pytest.mark.chain
def test_submission_mode_keeps_the_runner_and_run_drives_it(submission_repo: Path) -> None:
    for kept in ("test_train_inference_python.sh", "common_func.sh", "prepare.sh", "test_serving_infer_python.sh"):
        assert (submission_repo / "test_tipc" / kept).read_bytes() == (FIXTURE / "test_tipc" / kept).read_bytes()
    assert (submission_repo / "test_tipc/docs/test_train_inference_python.md").is_file()
    proc = tipcgen("run", "-q", cwd=submission_repo, env=RUNNER_ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = submission_repo / "test_tipc/output/tutorial_model/lite_train_lite_infer"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ok"] is True and (out / "junit.xml").is_file()
    assert [(s["kind"], s["status"]) for s in summary["steps"]] == [
        ("prepare", "passed"), ("train", "passed"), ("eval", "passed"), ("export", "passed"), ("infer", "passed"),
        ("check", "passed")], [(s["kind"], s["name"], s["status"]) for s in summary["steps"]]
    assert summary["steps"][5]["name"] == "export_params_train"  # the kept runner's export, checked like tipcgen's
    assert summary["steps"][4]["log"] == "log/tutorial_model/lite_train_lite_infer/norm_train_python_infer_cpu_batchsize_1.log"
    assert any("exit status is that of its last command" in note for note in summary["notes"])
    assert summary["steps"][1]["note"].startswith("no log of its own under this runner")
    assert "NOTE  the repository's runner drove this chain: its exit status is that of its last command" in proc.stdout
    # update re-renders only what the submission writes itself
    updated = tipcgen("update", cwd=submission_repo)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert (submission_repo / "test_tipc/common_func.sh").read_bytes() == (FIXTURE / "test_tipc/common_func.sh").read_bytes()
    # a second run reads only its own status lines (the template appends to results_python.log)
    (submission_repo / "images/demo.npy").unlink()
    failed = tipcgen("run", "-q", cwd=submission_repo, env=RUNNER_ENV)
    assert failed.returncode == 1
    summary = json.loads((out / "summary.json").read_text())
    assert [s["status"] for s in summary["steps"]] == ["passed", "passed", "passed", "passed", "failed", "passed"]


@pytest.mark.paddle
@pytest.mark.chain
def test_an_edited_runner_in_submission_mode_fails_the_run_naming_it(submission_repo: Path) -> None:
    runner = submission_repo / "test_tipc/test_train_inference_python.sh"
    runner.write_text(runner.read_text() + "# tuned by hand\n")
    proc = tipcgen("run", "-q", cwd=submission_repo, env=RUNNER_ENV)
    assert proc.returncode == 1
    summary = json.loads((submission_repo / "test_tipc/output/tutorial_model/lite_train_lite_infer/summary.json").read_text())
    assert summary["ok"] is False
    assert summary["problems"] == ["test_tipc/test_train_inference_python.sh changed since tipcgen init --submission "
                                   "recorded it: a submission keeps the template's runner and common_func.sh unchanged (无需改动)"]


@needs_corpus
def test_every_corpus_trailing_header_comes_back_as_written() -> None:
    """Figure in docs/DESCRIPTOR.md: 442 corpus configs have trailing sections, every one with a header
    padded other than 27/27; all that import (441) render their trailing headers back byte for byte."""
    with_sections = same = 0
    for path in sorted(CORPUS.rglob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        config = TipcConfig.parse(text)
        if config.kind not in layout.LAYOUT_OF_KIND:
            continue
        skip = len(layout.LAYOUTS[layout.LAYOUT_OF_KIND[config.kind]])
        headers = [line.text.strip() for line in config.logical_lines()[skip:] if line.header_name]
        if not headers:
            continue
        with_sections += 1
        try:
            document = importer.import_config(text, str(path))
        except importer.ConfigImportError:
            continue
        rendered = TipcConfig.parse(repository.render_config(descriptor.load_text(document, source="t.yaml")))
        same += [line.text for line in rendered.logical_lines()[skip:] if line.header_name] == headers
    assert (with_sections, same) == (442, 441)
