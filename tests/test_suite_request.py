"""SuiteRequest: what `tipcgen suite` asks, as one value (issue 58 item 4), like `run`'s RunRequest.

The CLI builds it from `tipcgen suite`'s options and hands it to suite/run.py (stopped at its door here, so
nothing is planned or run); `checked()` refuses what cannot be with one message (exit 2 through the CLI)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tipcgen.core.errors import TipcgenError
from tipcgen.suite import owned
from tipcgen.suite import run as suite_run
from tipcgen.suite.request import SuiteRequest

from conftest import tipcgen


@pytest.fixture
def asked(monkeypatch) -> list:
    """The requests `tipcgen suite` hands the suite's run (its plan: the first thing it asks); refused at once."""
    seen: list = []

    def door(request):
        seen.append(request)
        raise TipcgenError("stopped at the door", "a test")

    monkeypatch.setattr(suite_run, "plan", door)
    return seen


def cli_request(asked: list, *args: str) -> SuiteRequest:
    proc = tipcgen("suite", *args)
    assert proc.returncode == 2 and "stopped at the door" in proc.stderr, proc.stderr
    return asked[-1]


def test_the_cli_builds_one_request_of_every_option(asked: list, tmp_path: Path) -> None:
    request = cli_request(asked, "a", "b/c.txt", "--mode", "whole_infer", "-m", "lite_train_lite_infer", "--chain",
                          "basic", "--chain", "paddle2onnx", "-j", "3", "--cores-per-chain", "2", "--gpus-per-chain",
                          "0", "--share-gpus", "--timeout", "90.5", "-o", str(tmp_path / "out"), "--root",
                          str(tmp_path), "--lint-only", "--ray", "--address", "127.0.0.1:6379", "--keep-work",
                          "--sandbox", "--color", "never")
    assert request == SuiteRequest(paths=("a", "b/c.txt"), modes=("whole_infer", "lite_train_lite_infer"),
                                   chains=("basic", "paddle2onnx"), jobs=3, cores_per_chain=2, gpus_per_chain=0,
                                   share_gpus=True, timeout=90.5, output=tmp_path / "out", root=tmp_path,
                                   lint_only=True, ray=True, address="127.0.0.1:6379", keep_work=True, sandbox=True,
                                   color="never")
    assert request.on_ray


def test_the_defaults_are_the_cli_defaults(asked: list, tmp_path: Path) -> None:
    request = cli_request(asked, "--root", str(tmp_path))
    assert request == SuiteRequest(root=tmp_path) and not request.on_ray


def test_address_alone_runs_on_ray() -> None:
    assert SuiteRequest(address="10.0.0.1:6379").on_ray and not SuiteRequest(address="").on_ray


@pytest.mark.parametrize("request_, said", [
    (SuiteRequest(timeout=0), "--timeout 0: expected a finite number of seconds above 0"),
    (SuiteRequest(timeout=math.nan), "--timeout nan: expected a finite number"),
    (SuiteRequest(jobs=0), "--jobs 0: expected 1 or more"),
    (SuiteRequest(modes=("lite_train_infer",)), "mode 'lite_train_infer' is a legacy name"),
    (SuiteRequest(modes=("fast",)), "unknown mode 'fast'"),
    (SuiteRequest(chains=("nope",)), "unknown chain 'nope'"),
])
def test_a_request_that_cannot_be_is_refused_by_name(request_: SuiteRequest, said: str, tmp_path: Path) -> None:
    with pytest.raises(TipcgenError) as caught:
        SuiteRequest(**{**request_.__dict__, "root": tmp_path}).checked()
    assert said in str(caught.value)


def test_a_missing_root_is_refused_and_a_good_request_gets_its_root(tmp_path: Path) -> None:
    with pytest.raises(TipcgenError, match="no such folder"):
        SuiteRequest(root=tmp_path / "gone").checked()
    assert SuiteRequest(root=tmp_path).checked() == SuiteRequest(root=tmp_path)


@settings(max_examples=200, deadline=None)
@given(timeout=st.floats(allow_nan=True, allow_infinity=True), jobs=st.integers(min_value=-5, max_value=10 ** 6))
def test_any_limit_is_taken_exactly_when_a_chain_can_wait_for_it(timeout: float, jobs: int) -> None:
    """--timeout finite, above 0 and at most owned.MAX_TIMEOUT, --jobs 1 or more: else one TipcgenError naming it."""
    request = SuiteRequest(timeout=timeout, jobs=jobs, root=Path("."))
    good_timeout = math.isfinite(timeout) and 0 < timeout <= owned.MAX_TIMEOUT
    if good_timeout and jobs >= 1:
        assert request.checked() == request
        return
    with pytest.raises(TipcgenError) as caught:
        request.checked()
    assert str(caught.value).startswith("--timeout" if not good_timeout else "--jobs")
