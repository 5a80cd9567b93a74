"""The compression chains on two small CNNs (tests/fixtures/ptq_cnn: tipc.yaml, tipc_mobile.yaml; docs/QUANTIZATION.md).

PTQ: `tipcgen run --chain ptq` calibrates the float model on the lite data, runs the int8 model with
Paddle Inference on CPU and checks it against the float one on fixed inputs. PACT: the basic chain with
trainer pact_train trains quantization-aware, exports with quant_export and infers int8. GPU cases are
skipped with their reason on a CPU machine. One real run of each chain per project (10-40 s each on two
shared cores), one more PTQ run of the second project with a descriptor tolerance (ptq.tolerance) no int8
model meets, and one PTQ run of a kl_quant model that the second project's repository also holds (one runner,
each model's own settings: every run of the second project there is one of two models'). The calibration
algorithm is a flag of the project's post_quant.py that tipcgen passes as written: the fixtures name cheap ones
(abs_max, hist, avg); KL, pure Python in paddle, made a PTQ run of the CNN 67 s of CPU instead of 16 s
(docs/PERFORMANCE.md)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, tipcgen

pytestmark = [pytest.mark.paddle, pytest.mark.chain]
FIXTURE = ROOT / "tests" / "fixtures" / "ptq_cnn"
# The two test projects (bert-sst2's int8 does not run on this stack: docs/QUANTIZATION.md, finding 8):
# descriptor -> (model, PTQ algorithm). Paths below name the model; the run folders are per model.
PROJECTS = {"tipc.yaml": ("ptq_cnn", "abs_max"), "tipc_mobile.yaml": ("ptq_mobile", "hist")}
RUN = "test_tipc/output/{model}/ptq/whole_infer"
PACT_RUN = "test_tipc/output/{model}/lite_train_lite_infer"


# The mobile project's repository also holds a second PTQ model of another layout: ptq_cnn from tipc_kl.yaml
# (PaddleOCR's kl_quant layout) with ptq.tolerance rtol 0.3, initialised after ptq_mobile, so that every
# ptq_mobile run is one of a repository's two models (the one runner, each model's own settings); its PTQ
# chain runs once, for the kl_quant tests (two_ptq_models).
KL_MODEL = "ptq_cnn"


@pytest.fixture(scope="module", params=sorted(PROJECTS), ids=lambda name: PROJECTS[name][0])
def quant_repo(request, tmp_path_factory) -> Path:
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("quant") / "repo"
    shutil.copytree(FIXTURE, repo)
    tipcgen("init", request.param, cwd=repo, check=True)
    if request.param == "tipc_mobile.yaml":
        source = (FIXTURE / "tipc_kl.yaml").read_text()
        (repo / "tipc_kl_tol.yaml").write_text(source.replace("\nptq:\n", "\nptq:\n  tolerance: {rtol: 0.3}\n", 1))
        tipcgen("init", "tipc_kl_tol.yaml", cwd=repo, check=True)
    return repo


def model_of(repo: Path) -> str:
    """The project's model: init wrote its folder under test_tipc/configs (the mobile project's repository
    also has the kl_quant model's, ptq_cnn)."""
    folders = sorted(folder.name for folder in (repo / "test_tipc" / "configs").iterdir())
    return folders[0] if folders == [KL_MODEL] else next(name for name in folders if name != KL_MODEL)


def config_options(repo: Path, chain: str = "ptq") -> list[str]:
    """--config for a repository of two models (the mobile project's); none where the one config is the default."""
    if len(list((repo / "test_tipc" / "configs").iterdir())) == 1:
        return []
    name = "train_ptq_infer_python.txt" if chain == "ptq" else "train_infer_python.txt"
    return ["--config", f"test_tipc/configs/{model_of(repo)}/{name}"]


@pytest.fixture(scope="module")
def ptq_run(quant_repo: Path) -> tuple[Path, subprocess.CompletedProcess]:
    return quant_repo, tipcgen("run", "--chain", "ptq", "--mode", "whole_infer", *config_options(quant_repo), cwd=quant_repo)


@pytest.fixture(scope="module")
def two_ptq_models(ptq_run) -> tuple[Path, dict[str, subprocess.CompletedProcess]]:
    """The mobile project's repository, two PTQ models of different layouts (ptq_mobile: ptq layout, hist, the
    default tolerance; ptq_cnn: kl_quant layout, ptq.tolerance rtol 0.3), both initialised (the kl_quant one
    last), then each model's PTQ chain run through its own config: model -> the finished run (ptq_mobile's is
    the shared ptq_run). Tests that use it parametrize quant_repo to the mobile project."""
    repo, mobile = ptq_run
    assert model_of(repo) == "ptq_mobile", "two_ptq_models is the mobile project's repository"
    return repo, {"ptq_mobile": mobile,
                  KL_MODEL: tipcgen("run", "--chain", "ptq", "--mode", "whole_infer",
                                    "--config", f"test_tipc/configs/{KL_MODEL}/train_ptq_infer_python.txt", cwd=repo)}


def run_dir(repo: Path, run: str = RUN) -> Path:
    return repo / run.format(model=model_of(repo))


def records(repo: Path, run: str = RUN) -> dict[str, dict]:
    lines = (run_dir(repo, run) / "steps.jsonl").read_text().splitlines()
    return {record["name"]: record for record in map(json.loads, lines)}


def test_the_ptq_chain_passes_on_cpu(ptq_run) -> None:
    repo, proc = ptq_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED: 5 passed, 0 failed, 2 skipped" in proc.stdout
    summary = json.loads((run_dir(repo) / "summary.json").read_text())
    assert summary["required_kinds"] == ["quant", "infer", "check"]
    steps = records(repo)
    model, algo = next(project for project in PROJECTS.values() if project[0] == model_of(repo))
    assert steps["ptq_quant"]["status"] == "passed"
    assert "--batch_num=2" in steps["ptq_quant"]["command"] and f"--algo={algo}" in steps["ptq_quant"]["command"]
    assert (repo / f"{model}_int8" / "inference.pdmodel").is_file()
    for batch in (1, 4):
        cpu, gpu = steps[f"python_infer_cpu_int8_batchsize_{batch}"], steps[f"python_infer_gpu_int8_batchsize_{batch}"]
        assert (cpu["status"], cpu["precision"], cpu["batch_size"]) == ("passed", "int8", str(batch))
        assert gpu["status"] == "skipped" and "needs a CUDA device" in gpu["reason"]


def test_the_int8_model_is_checked_against_the_float_one(ptq_run) -> None:
    repo, _ = ptq_run
    check = records(repo)["ptq_int8_vs_float"]
    assert (check["status"], check["reference"]) == ("passed", "fixed")
    log = (repo / check["log"]).read_text()
    figures = json.loads(log.split("quant check: ", 1)[1].splitlines()[0])
    assert 0 < figures["max_diff"] <= figures["allowed"] == pytest.approx(0.2 * figures["float_abs_max"])
    assert figures["top1_agreement"] == 1.0 and figures["int8_ms"] > 0 and figures["float_ms"] > 0
    summary = json.loads((run_dir(repo) / "summary.json").read_text())  # the figures in the summary, and its text
    check_in_summary = next(step["check"] for step in summary["steps"] if step["name"] == "ptq_int8_vs_float")
    assert check_in_summary["max_diff"] == figures["max_diff"] and check_in_summary["top1_agreement"] == 1.0
    assert set(check_in_summary["latency_ms"]) == {"float (oneDNN fp32)", "int8 (oneDNN int8)"}
    assert f" int8 vs float {figures['max_diff']:.2g} (atol 0, rtol 0.2); latency " in ptq_run[1].stdout
    assert check_in_summary["accuracy"] == {"float": 1.0, "int8": 1.0, "delta": 0.0}  # ptq.eval_data, 24 images
    assert "; accuracy float 1, int8 1 (+0)" in ptq_run[1].stdout


def test_the_report_shows_int8_and_float_side_by_side(ptq_run) -> None:
    repo, _ = ptq_run
    proc = tipcgen("report", str(run_dir(repo)), "--format", "all", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    md = (run_dir(repo) / "report.md").read_text()
    section = md.split("## int8 against float", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if "ptq\\_int8\\_vs\\_float" in line or "ptq_int8_vs_float" in line)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "PASS" and cells[3] == "100%" and cells[6].endswith("x"), cells  # top-1 agreement, speed-up
    assert [c.lstrip("\\") for c in cells[7:]] == ["1.0000", "1.0000", "+0.0000"], cells  # both on ptq.eval_data (md escapes a leading +)
    assert "int8 against float" in (run_dir(repo) / "report.html").read_text()


def test_the_check_fails_an_int8_model_beyond_its_tolerance(ptq_run) -> None:
    """The same models with a tolerance no int8 model meets: the check exits 1, naming the difference."""
    repo, _ = ptq_run
    model = model_of(repo)
    proc = subprocess.run([sys.executable, "test_tipc/check_quant.py", f"--float_dir=./{model}_infer",
                           f"--int8_dir=./{model}_int8", "--rtol=0.0001"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 1 and "the int8 model differs from the float one by" in proc.stderr


def test_the_check_fails_an_accuracy_drop(ptq_run) -> None:
    """An untrained copy of the CNN in the int8 model's place: within a loose output tolerance, but its
    accuracy on the eval data falls far more than the allowed 0.05."""
    repo, _ = ptq_run
    untrained = ("from ptq_cnn import Net, paddle; paddle.seed(7); net = Net(); net.eval(); paddle.jit.save(net, "
                 "'untrained/inference', input_spec=[paddle.static.InputSpec([None, 3, 32, 32], 'float32', 'x')])")
    subprocess.run([sys.executable, "-c", untrained], cwd=repo, check=True, capture_output=True)
    proc = subprocess.run([sys.executable, "test_tipc/check_quant.py", f"--float_dir=./{model_of(repo)}_infer", "--int8_dir=./untrained",
                           "--rtol=1000", "--eval_data=lite_data/eval.npz"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 1 and "accuracy, more than 0.05" in proc.stderr
    assert "accuracy on lite_data/eval.npz: float 1.0000, int8 0." in proc.stdout


@pytest.mark.parametrize("quant_repo", ["tipc_mobile.yaml"], indirect=True, ids=["ptq_mobile"])  # one project, its shared run
def test_the_descriptor_tolerance_decides_the_check(ptq_run, tmp_path: Path) -> None:
    """ptq.tolerance {rtol: 0, atol: 0}, which no int8 model meets: the runner passes it to check_quant.py and
    the chain fails on that check, naming it. The shared run, with the default (rtol 0.2), passed it. The ptq
    layout's mobile project."""
    shared, default = ptq_run
    assert default.returncode == 0 and records(shared)["ptq_int8_vs_float"]["status"] == "passed"
    repo = tmp_path / "repo"
    shutil.copytree(shared, repo, symlinks=True)  # its float model and lite data already made
    source = (repo / "tipc_mobile.yaml").read_text()
    (repo / "tipc_mobile.yaml").write_text(source.replace("\nptq:\n", "\nptq:\n  tolerance: {rtol: 0, atol: 0}\n", 1))
    tipcgen("init", "tipc_mobile.yaml", "--force", cwd=repo, check=True)
    proc = tipcgen("run", "--chain", "ptq", "--mode", "whole_infer", *config_options(repo), cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED: 4 passed, 1 failed, 2 skipped" in proc.stdout and "ptq_int8_vs_float" in proc.stdout
    check = records(repo)["ptq_int8_vs_float"]
    assert check["status"] == "failed" and '"--rtol=0.0" "--atol=0.0"' not in check["command"]
    assert "--rtol=0.0 --atol=0.0" in check["command"]
    assert all(step["status"] != "failed" for name, step in records(repo).items() if name != "ptq_int8_vs_float")
    log = (repo / check["log"]).read_text()
    assert "the int8 model differs from the float one by" in log and "more than 0" in log
    summary = json.loads((run_dir(repo) / "summary.json").read_text())
    figures = next(step["check"] for step in summary["steps"] if step["name"] == "ptq_int8_vs_float")
    assert (figures["rtol"], figures["atol"], figures["allowed"]) == (0.0, 0.0, 0.0) and figures["max_diff"] > 0
    assert " int8 vs float " in proc.stdout and "(atol 0, rtol 0)" in proc.stdout


@pytest.mark.parametrize("quant_repo", ["tipc_mobile.yaml"], indirect=True, ids=["ptq_mobile"])  # its shared repository
def test_one_ptq_runner_runs_each_models_config_with_its_own_settings(two_ptq_models) -> None:
    """Two PTQ models of different layouts in one repository (ptq_mobile: ptq layout, hist, the default tolerance;
    ptq_cnn: kl_quant layout, ptq.tolerance rtol 0.3): the one runner passes each model's config with that
    model's layout and check settings."""
    repo, runs = two_ptq_models
    for model, check_name, rtol, steps_line in (("ptq_mobile", "ptq_int8_vs_float", 0.2, "PASSED: 5 passed, 0 failed, 2 skipped"),
                                                ("ptq_cnn", "ptq_int8_vs_float_model_0", 0.3, "PASSED: 5 passed, 0 failed, 1 skipped")):
        proc = runs[model]
        assert proc.returncode == 0 and steps_line in proc.stdout, proc.stdout + proc.stderr
        run = repo / RUN.format(model=model)
        steps = {r["name"]: r for r in map(json.loads, (run / "steps.jsonl").read_text().splitlines())}
        check = steps[check_name]
        assert check["status"] == "passed" and "--eval_data=lite_data/eval.npz --accuracy_drop=0.05" in check["command"]
        assert ("--rtol=0.3 --atol=0.0" in check["command"]) == (model == "ptq_cnn"), check["command"]
        summary = json.loads((run / "summary.json").read_text())
        figures = next(step["check"] for step in summary["steps"] if step["name"] == check_name)
        assert figures["rtol"] == rtol and figures["accuracy"]["int8"] == 1.0
        assert f"(atol 0, rtol {rtol})" in proc.stdout
    quant = {model: next(r["command"] for r in map(json.loads, (repo / RUN.format(model=model) / "steps.jsonl")
                                                   .read_text().splitlines()) if r["kind"] == "quant")
             for model in ("ptq_mobile", "ptq_cnn")}
    assert "--algo=hist" in quant["ptq_mobile"] and "--output_dir=./ptq_cnn_infer_klquant" in quant["ptq_cnn"]


def test_the_pact_chain_trains_exports_and_infers_int8(quant_repo: Path) -> None:
    repo = quant_repo
    proc = tipcgen("run", "--mode", "lite_train_lite_infer", *config_options(repo, "basic"), cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED: 7 passed, 0 failed, 1 skipped" in proc.stdout  # 6 steps and the export_params check
    assert "export_params_gpus_-1" in proc.stdout and "trained parameters found in the export" in proc.stdout
    steps = list(records(repo, PACT_RUN).values())
    train, evaluation, export = (next(s for s in steps if s["kind"] == kind) for kind in ("train", "eval", "export"))
    assert (train["trainer"], train["status"]) == ("pact_train", "passed") and "train.py --pact" in train["command"]
    assert evaluation["status"] == "passed" and "export_model.py --pact" in export["command"]
    assert float((repo / evaluation["log"]).read_text().split("accuracy: ")[1].split()[0]) >= 0.9  # QAT learned the lite set
    program = next(run_dir(repo, PACT_RUN).glob("*/inference.pdmodel"))  # the quant_export output, fake quantizers in it
    assert b"quantize_linear" in program.read_bytes() or b"fake_quantize" in program.read_bytes()
    infers = [s for s in steps if s["kind"] == "infer"]
    assert {(s["device"], s["precision"], s["status"]) for s in infers} == {("cpu", "int8", "passed"), ("gpu", "int8", "skipped")}


def test_the_ptq_video_layout_runs_too(tmp_path: Path) -> None:
    """PaddleVideo's 24-line layout: the runner reads its own positions (its ## and null:null fillers add no flag)."""
    pytest.importorskip("paddle")
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    tipcgen("init", "tipc_video.yaml", cwd=repo, check=True)
    proc = tipcgen("run", "--chain", "ptq", "--mode", "whole_infer", cwd=repo)
    assert proc.returncode == 0 and "PASSED: 5 passed, 0 failed, 2 skipped" in proc.stdout, proc.stdout + proc.stderr
    quant = records(repo)["ptq_quant"]["command"]
    assert "--algo=avg" in quant and "##" not in quant and "--batch_num=2" in quant


@pytest.mark.parametrize("quant_repo", ["tipc_mobile.yaml"], indirect=True, ids=["ptq_mobile"])  # its shared repository
def test_the_kl_quant_layout_runs_its_model_list(two_ptq_models) -> None:
    """PaddleOCR's kl_quant layout: per float model of infer_model, the infer_export command with the
    export_weight and save_infer keys (<model>_klquant), the CPU loops in int8 only, then the check. The
    kl_quant model's run of the two-model repository (tipc_kl.yaml with ptq.tolerance rtol 0.3), not a run of
    tipc_kl.yaml alone: the same steps, one calibration fewer."""
    repo, runs = two_ptq_models
    proc = runs["ptq_cnn"]
    assert proc.returncode == 0 and "PASSED: 5 passed, 0 failed, 1 skipped" in proc.stdout, proc.stdout + proc.stderr
    run = repo / RUN.format(model="ptq_cnn")  # two models here: the run folder by name
    steps = {r["name"]: r for r in map(json.loads, (run / "steps.jsonl").read_text().splitlines())}
    quant = steps["ptq_quant_model_0"]["command"]
    assert "--model_path=./ptq_cnn_infer" in quant and "--output_dir=./ptq_cnn_infer_klquant" in quant
    cpu = [s for s in steps.values() if s["kind"] == "infer" and s["device"] == "cpu"]
    assert sorted(s["threads"] for s in cpu) == ["1", "2"] and {s["precision"] for s in cpu} == {"int8"}
    assert all("--model-dir=./ptq_cnn_infer_klquant" in s["command"] and "--cpu_threads=" in s["command"] for s in cpu)
    summary = json.loads((run / "summary.json").read_text())
    check = next(step["check"] for step in summary["steps"] if step["name"] == "ptq_int8_vs_float_model_0")
    assert check["accuracy"]["int8"] == 1.0 and check["max_diff"] <= check["allowed"]
