"""What `tipcgen run` does before the first step: the lint gate above run/pipeline.py, one bounded probe of the
chain's interpreter that never imports paddle (docs/PERFORMANCE.md counts and times them)."""
from __future__ import annotations

import ast
import os
import re
import sys
import time
from pathlib import Path

import pytest

from tipcgen.configs import lint
from tipcgen.configs import preflight
from tipcgen.run import provenance
from tipcgen.core.errors import RunError

from conftest import read_summary, tipcgen

PACKAGE = Path(__file__).resolve().parents[1] / "tipcgen"


def _imported(module: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.update(f"{node.module or ''}.{alias.name}".strip(".") for alias in node.names)
            names.add(node.module or "")
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_run_does_not_import_lint():
    """ARCHITECTURE.md: run imports results; lint is config-level, called from preflight.py above it."""
    assert not any(name.split(".")[-1] == "lint" for name in _imported(PACKAGE / "run" / "pipeline.py")), _imported(PACKAGE / "run" / "pipeline.py")
    assert "lint" in {name.split(".")[-1] for name in _imported(PACKAGE / "configs" / "preflight.py")}


def test_run_and_doctor_refuse_a_config_with_the_same_lint_function(stub_repo: Path):
    tmp_path = stub_repo
    config = next((tmp_path / "test_tipc" / "configs").glob("*/train_infer_python.txt")).relative_to(tmp_path)
    preflight.refuse_lint_errors(tmp_path, config)  # a clean config passes
    text = (tmp_path / config).read_text()
    (tmp_path / config).write_text(text.replace("trainer:norm_train", "trainer:null"))
    refused = lint.refusals(tmp_path / config, repo_root=tmp_path)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("trainer:"))
    assert [(f.rule, f.line) for f in refused] == [("null-value", line)]
    with pytest.raises(RunError) as caught:
        preflight.refuse_lint_errors(tmp_path, config)
    assert caught.value.message.startswith(f"the config has 1 lint error(s): {config}:{line}: ")


def _answers_name(repo: Path, reference: str) -> None:
    answers = repo / ".tipcgen-answers.yml"
    answers.write_text(re.sub(r"(?m)^descriptor: .*$", f"descriptor: {reference}", answers.read_text()))


def test_one_run_loads_the_descriptor_once_and_hands_it_to_the_checks(stub_repo: Path, descriptor_loads: list):
    """issue #29: preflight.refuse (checks.own_weights), the provenance and the run's target check all use
    the one descriptor the run loads; none of them walks the answers file again."""
    proc = tipcgen("run", "--quiet", cwd=stub_repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [kind for kind, _ in descriptor_loads] == ["walk", "load"], descriptor_loads
    assert read_summary(stub_repo)["provenance"]["descriptor"]["changed_since_render"] is False
    # A config of a model the answers file does not record: the first model's descriptor, loaded once.
    config = next((stub_repo / "test_tipc/configs").glob("*/train_infer_python.txt"))
    config.write_text(config.read_text().replace("model_name:stub_model", "model_name:other_model"))
    descriptor_loads.clear()
    proc = tipcgen("run", "--quiet", cwd=stub_repo)
    assert proc.returncode == 2 and "is for model 'other_model'; this prepare.sh prepares stub_model" in proc.stderr
    assert [kind for kind, _ in descriptor_loads] == ["walk", "load"], descriptor_loads
    assert read_summary(stub_repo, "other_model")["provenance"]["descriptor"]["source"].endswith("stub/tipc.yaml")


@pytest.mark.parametrize("broken, note", [
    ("answers", "the descriptor could not be read: {repo}/.tipcgen-answers.yml: is not valid YAML (while parsing a flow node)"),
    ("descriptor", "the descriptor could not be read: {repo}/stub/tipc.yaml:2: model_nam: unknown field"),
])
def test_an_unreadable_descriptor_is_a_note_of_the_run_read_once(stub_repo: Path, descriptor_loads: list, broken, note):
    """The run goes on without the descriptor (no checks.own_weights, no target) and its provenance says why."""
    if broken == "answers":
        (stub_repo / ".tipcgen-answers.yml").write_text("x: [\n")
    else:
        _answers_name(stub_repo, "stub/tipc.yaml")
        desc = stub_repo / "stub/tipc.yaml"
        desc.write_text(desc.read_text().replace("model_name:", "model_nam:"))
    proc = tipcgen("run", "--quiet", cwd=stub_repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert read_summary(stub_repo)["provenance"]["descriptor"] == {"note": note.format(repo=stub_repo)}
    assert [kind for kind, _ in descriptor_loads if kind == "walk"] == ["walk"], descriptor_loads


def test_the_probe_reads_paddle_without_importing_it(tmp_path: Path):
    """One process answers the paddle check and the versions: dist-info, the version file, no import."""
    marker = tmp_path / "imported"
    package = tmp_path / "site" / "paddle"
    (package / "version").mkdir(parents=True)
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "version" / "__init__.py").write_text("full_version = '9.9.9'\ncuda_version = '12.3'\ncudnn_version = '9.0'\n")
    meta = tmp_path / "site" / "paddlepaddle_gpu-9.9.9.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: paddlepaddle-gpu\nVersion: 9.9.9\n\nVersion: 0\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    found = provenance.versions(sys.executable, env)
    assert found["paddle_found"] is True and found["paddle"] == "9.9.9" and found["paddle_dist"] == "paddlepaddle-gpu"
    assert found["paddle_cuda_version"] == "12.3" and found["paddle_cudnn_version"] == "9.0"
    assert found["python"] == sys.version.split()[0] and not marker.exists()


def test_a_probe_that_hangs_is_stopped_at_its_limit(tmp_path: Path, monkeypatch):
    hanging = tmp_path / "python"
    hanging.write_text("#!/bin/sh\nexec sleep 600\n")
    hanging.chmod(0o755)
    monkeypatch.setattr(provenance, "_PROBE_TIMEOUT", 0.5)
    probes = provenance.Probes(tmp_path, str(hanging), dict(os.environ))
    start = time.monotonic()
    assert probes.versions() == {"note": f"{hanging} could not report its versions"}
    probes.close()
    assert time.monotonic() - start < 120  # stopped, not waited for (a generous ceiling: a loaded machine is slow)
    assert all(proc.poll() is not None for proc in probes._procs.values())


def test_the_gpu_probe_reads_nvidia_smi_and_runs_beside_the_others(tmp_path: Path):
    """nvidia-smi (a stand-in here: this machine has none) starts with the interpreter probe and git."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\nsleep 0.3\necho 'NVIDIA H200, 550.54.15, 143771 MiB'\n")
    smi.chmod(0o755)
    env = dict(os.environ, PATH=f"{smi.parent}{os.pathsep}{os.environ['PATH']}", CUDA_VISIBLE_DEVICES="0")
    start = time.monotonic()
    probes = provenance.Probes(tmp_path, sys.executable, env)
    # all started at once, before any answer is read
    assert set(probes._procs) == ({"gpus", "versions"} if probes.git_missing else {"git", "gpus", "versions"})
    try:
        assert probes.device()["gpus"] == ["NVIDIA H200, 550.54.15, 143771 MiB"]
        assert probes.versions()["python"] == sys.version.split()[0]
        assert probes.git(tmp_path)["commit"] is None
    finally:
        probes.close()
    assert time.monotonic() - start < 120  # a ceiling only: that they run at once is the _procs check above
    assert provenance.device_info(env)["cuda_visible_devices"] == "0"
