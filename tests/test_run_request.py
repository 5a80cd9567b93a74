"""RunRequest: what `tipcgen run` and `tipcgen suite` ask of a run, as one value (issue 37 item 1).

The CLI builds it from `tipcgen run`'s options; suite starts each chain as `tipcgen run` with the arguments
of its own request: parsed back by the real CLI, they make the same request (the pipeline is stopped at its
door, so nothing runs)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tipcgen.core.errors import RunError
from tipcgen.run import pipeline
from tipcgen.run.request import NO_PROOFS, RunRequest
from tipcgen.suite.suite import Chain, run_request

from conftest import tipcgen


@pytest.fixture
def asked(monkeypatch) -> list:
    """The requests `tipcgen run` hands the pipeline (and the proofs with them); the run refused at once."""
    seen: list = []

    def door(request, proofs=NO_PROOFS):
        seen.append((request, proofs))
        raise RunError("stopped at the door", "a test")

    monkeypatch.setattr(pipeline, "run", door)
    return seen


def cli_request(asked: list, *args: str, cwd: Path | None = None) -> RunRequest:
    proc = tipcgen("run", *args, cwd=cwd)
    assert proc.returncode == 2 and "stopped at the door" in proc.stderr, proc.stderr
    return asked[-1][0]


def test_the_cli_builds_one_request_of_every_option(asked: list, tmp_path: Path) -> None:
    request = cli_request(asked, "--mode", "whole_infer", "--config", "c.txt", "--data-dir", "d", "--model-dir", "m",
                          "--step-timeout", "7", "--root", str(tmp_path), "-q", "--chain", "basic", "--python", "py3",
                          "--max-checkpoint-bytes", "99", "--sandbox")
    assert request == RunRequest(mode="whole_infer", root=tmp_path, config="c.txt", chain="basic", data_dir="d",
                                 model_dir="m", step_timeout=7, python="py3", sandbox=True, max_checkpoint_bytes=99,
                                 quiet=True)
    assert request.on_line is not None  # the CLI's printer
    proofs = asked[-1][1]
    assert callable(proofs.refuse) and callable(proofs.check_exports)  # handed in as one object, not lambdas


def test_the_defaults_are_the_cli_defaults(asked: list) -> None:
    assert cli_request(asked) == RunRequest()


@pytest.mark.parametrize("request_", [
    RunRequest(),
    RunRequest(mode="whole_infer", config="test_tipc/configs/m/train_infer_python.txt", chain="paddle2onnx",
               data_dir="/d", model_dir="/m", step_timeout=3, python="python3.10", sandbox=True,
               max_checkpoint_bytes=1 << 30, quiet=True),
])
def test_args_parse_back_into_the_same_request(asked: list, request_: RunRequest) -> None:
    assert cli_request(asked, *request_.args()) == request_


def test_suite_asks_each_chain_what_tipcgen_run_would_be_asked(asked: list) -> None:
    chain = Chain(root="/repo", config="test_tipc/configs/m/train_infer_python.txt", chain="basic",
                  mode="lite_train_lite_infer", model="m")
    for sandbox in (False, True):
        request = run_request(chain, sandbox)
        assert request == RunRequest(mode=chain.mode, root=Path("."), config=chain.config, chain="basic",
                                     sandbox=sandbox, quiet=True)
        assert cli_request(asked, *request.args()) == request
