"""Shared fixtures: paths, the stub project, and running the CLI as a user does (a real process).

Markers (docs/PERFORMANCE.md, "The test suite"): a test is `paddle` when it needs the paddle stack and `chain` when it runs
the real bert-sst2 chain. They are applied by what a test uses, so new test files need no list:
- a module that sets `pytestmark = pytest.mark.paddle` (whole file), or a test decorated with it;
- a test that uses a fixture of PADDLE_FIXTURES (e.g. `sample_lite_run`), wherever it lives.
Without paddle installed, every `paddle` test is skipped with the install hint, never failed, and
`python -m pytest -m "not paddle"` runs the rest (the stub chains need bash and Python only:
TIPC_NO_PADDLE=1 below).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "tipc-corpus"
SST2 = SHARED / "data" / "sst2"
STUB = ROOT / "tests" / "fixtures" / "stub"
HAS_PADDLE = importlib.util.find_spec("paddle") is not None
# Fixtures that need the paddle stack, and the markers a test using one gets.
PADDLE_FIXTURES = {"sample_lite_run": ("paddle", "chain")}
# The stub and toy chains need no paddle: every `tipcgen run` of the tests skips the preflight's
# paddle probe (docs/CHAINS.md), so they run where paddle is missing. A test of the probe itself
# passes TIPC_NO_PADDLE="" (test_broken_steps.py); the paddle chains fail on their own without it.
os.environ.setdefault("TIPC_NO_PADDLE", "1")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="paddle is not installed here (pip install -e '.[paddle]')")
    for item in items:
        for fixture, marks in PADDLE_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                for mark in marks:
                    if item.get_closest_marker(mark) is None:
                        item.add_marker(mark)
        if not HAS_PADDLE and item.get_closest_marker("paddle") is not None:
            item.add_marker(skip)


def chain_env(**extra: str) -> dict:
    """The environment of a chain: the interpreter running the tests (the one with paddle) first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "NO_COLOR": "1", "PATH": path, **extra}


def tipcgen(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600,
            check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m tipcgen ARGS` in a real subprocess; returns the completed process (text)."""
    full_env = chain_env(**(env or {}))
    proc = subprocess.run([sys.executable, "-m", "tipcgen", *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"tipcgen {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def stub_repo(tmp_path: Path) -> Path:
    """A repository with the stub model scripts and its rendered test_tipc/."""
    shutil.copytree(STUB, tmp_path / "stub")
    tipcgen("init", str(STUB / "tipc.yaml"), "--output", str(tmp_path), check=True)
    return tmp_path


def read_records(repo: Path, model: str, mode: str) -> list[dict]:
    import json

    path = repo / "test_tipc" / "output" / model / mode / "steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def sample_lite_run(tmp_path_factory) -> Path:
    """`tipcgen init bert-sst2` in an empty folder and one lite chain run there, once per session.
    Tests that change the folder work on a copy."""
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("sample_lite_run")
    tipcgen("init", "bert-sst2", "--output", str(repo), check=True)
    proc = tipcgen("run", "--mode", "lite_train_lite_infer", "--quiet", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    return repo
