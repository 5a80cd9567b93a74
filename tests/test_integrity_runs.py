"""Issue 12, the runner's part: a shifted or conflicted config never runs, runs never mix, and a
verdict is only PASSED when the steps it claims ran. Real scripts, real processes (the stub model).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import STUB, tipcgen

MODE = "lite_train_lite_infer"
CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"
RUNNER = "test_tipc/test_train_inference_python.sh"


@pytest.fixture(scope="module")
def layout_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rendered stub repository for the layout cases: none of them runs a step."""
    repo = tmp_path_factory.mktemp("layout")
    shutil.copytree(STUB, repo / "stub")
    tipcgen("init", str(STUB / "tipc.yaml"), "--output", str(repo), check=True)
    return repo


def _insert(lines: list[str], at: int, *new: str) -> list[str]:
    return lines[:at] + list(new) + lines[at:]


# Each case: how the config is broken, and the editor line the runner must name. Line 44 is
# --batch_size:1 (idx 43), inside the keyless inference block (idx 40-50) where no key anchors.
BROKEN = {
    "conflict-markers": (lambda ls: ls[:43] + ["<<<<<<< ours", ls[43], "=======", "--batch_size:2", ">>>>>>> theirs"]
                         + ls[44:], 44, "merge conflict marker"),
    "extra-line-in-inference-block": (lambda ls: _insert(ls, 44, "--foo:bar"), 45, "expected key '--use_tensorrt'"),
    "duplicated-line-in-inference-block": (lambda ls: _insert(ls, 43, ls[42]), 44, "expected key '--batch_size'"),
    "missing-line-in-inference-block": (lambda ls: ls[:44] + ls[45:], None, "51"),
    "tab-after-key": (lambda ls: [line.replace("--epochs:", "--epochs\t:") for line in ls], 7, "whitespace around ':'"),
    "fullwidth-colon": (lambda ls: [line.replace("--cpu_threads:", "--cpu_threads\uff1a") for line in ls], 43,
                        "full-width"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_layout_is_refused_by_the_runner_and_by_run(layout_repo: Path, case: str):
    change, line, words = BROKEN[case]
    original = (layout_repo / CONFIG).read_text(encoding="utf-8").splitlines()
    name = f"test_tipc/configs/stub_model/{case}.txt"
    (layout_repo / name).write_text("\n".join(change(original)) + "\n", encoding="utf-8")
    direct = subprocess.run(["bash", RUNNER, name, MODE], cwd=layout_repo, capture_output=True, text=True,
                            timeout=60)
    assert direct.returncode == 2, direct.stdout + direct.stderr
    assert words in direct.stderr and (line is None or f"{name}:{line}:" in direct.stderr), direct.stderr
    assert "[tipc] RUN" not in direct.stdout
    proc = tipcgen("run", "--mode", MODE, "--config", name, cwd=layout_repo, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "lint error" in proc.stderr and f"{name}:" in proc.stderr and "Traceback" not in proc.stderr
    assert "[tipc] RUN" not in proc.stdout and not (layout_repo / "test_tipc/output").exists()
    lint = tipcgen("lint", name, cwd=layout_repo, timeout=60)
    assert lint.returncode == 1 and "error" in lint.stdout, "lint must see what run refuses"


def test_the_paddle2onnx_runner_refuses_conflict_markers(tmp_path: Path):
    repo = tmp_path / "repo"
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    config = next((repo / "test_tipc/configs").glob("*/*paddle2onnx*.txt"))
    text = config.read_text().replace("--use_onnx:True\n", "<<<<<<< ours\n--use_onnx:True\n=======\n"
                                      "--use_onnx:False\n>>>>>>> theirs\n")
    config.write_text(text)
    direct = subprocess.run(["bash", "test_tipc/test_paddle2onnx.sh", str(config.relative_to(repo)), MODE], cwd=repo,
                            capture_output=True, text=True, timeout=60)
    assert direct.returncode == 2 and "merge conflict marker" in direct.stderr, direct.stderr
