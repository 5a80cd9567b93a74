"""`tipcgen run --sandbox` (run/sandboxed.py): the stub chain in bubblewrap, only the repository writable, no
network; a step that tries the network says the lite chain must be self-contained; no bwrap: exit 2."""
from __future__ import annotations

import json
from pathlib import Path


from conftest import needs_bwrap, tipcgen
from tipcgen.core import sandbox
from tipcgen.format.words import FAILED, PREPARE
from tipcgen.results.summary import Step, Summary
from tipcgen.run import sandboxed

SUMMARY = "test_tipc/output/stub_model/lite_train_lite_infer/summary.json"


def test_without_a_sandbox_run_sandbox_is_an_error_naming_the_install(stub_repo: Path):
    proc = tipcgen("run", "--quiet", "--sandbox", cwd=stub_repo, env={sandbox.OFF_VAR: "off"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--sandbox: no sandbox can be had here" in proc.stderr and "bubblewrap" in proc.stderr
    assert not (stub_repo / "test_tipc/output").exists()


@needs_bwrap
def test_the_chain_passes_in_the_sandbox_and_writes_nothing_outside(stub_repo: Path, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "argv.json"  # the stub appends its argv here when it can
    hidden = tipcgen("run", "--quiet", "--sandbox", cwd=stub_repo, env={"STUB_ARGV": str(outside)})
    assert hidden.returncode == 0 and not outside.exists()  # STUB_ARGV is not on the allow-list: no step sees it
    proc = tipcgen("run", "--quiet", "--sandbox", cwd=stub_repo,
                   env={"STUB_ARGV": str(outside), sandbox.ENV_VAR: "STUB_ARGV"})  # the user lets it through
    assert not outside.exists(), "a step wrote outside the repository"
    plain = tipcgen("run", "--quiet", cwd=stub_repo, env={"STUB_ARGV": str(outside)})
    assert plain.returncode == 0 and outside.exists()  # the same chain, unsandboxed, writes there
    clean = tipcgen("run", "--quiet", "--sandbox", cwd=stub_repo)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert json.loads((stub_repo / SUMMARY).read_text())["steps"][0]["status"] == "passed"
    assert proc.returncode != 0 or not outside.exists()


@needs_bwrap
def test_a_step_that_tries_the_network_says_the_chain_must_be_self_contained(stub_repo: Path):
    prepare = stub_repo / "test_tipc/prepare.sh"
    lines = prepare.read_text().splitlines()
    lines.insert(1, "python -c \"import socket; socket.create_connection(('example.com', 80), timeout=5)\" || exit 7")
    prepare.write_text("\n".join(lines) + "\n")
    proc = tipcgen("run", "--quiet", "--sandbox", cwd=stub_repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    step = json.loads((stub_repo / SUMMARY).read_text())["steps"][0]
    assert step["status"] == "failed" and sandboxed.NETWORK_NOTE in step["note"], step


def test_the_network_note_reads_the_log_and_the_tail(tmp_path: Path):
    (tmp_path / "train.log").write_text("...\nurllib3.exceptions.NewConnectionError: Failed to establish a new connection\n")
    summary = Summary(model="m", mode="lite_train_lite_infer", config="c.txt", steps=[
        Step(kind=PREPARE, name="prepare", status=FAILED, tail=["wget: unable to resolve host address 'x.org'"]),
        Step(kind="train", name="t", status=FAILED, log="train.log"),
        Step(kind="train", name="u", status=FAILED, tail=["CUDA error"])])
    sandboxed.explain_network(summary, tmp_path)
    assert [sandboxed.NETWORK_NOTE in (s.note or "") for s in summary.steps] == [True, True, False]


def test_without_a_sandbox_suite_sandbox_is_an_error_before_any_chain(stub_repo: Path):
    proc = tipcgen("suite", str(stub_repo), "--sandbox", cwd=stub_repo, env={sandbox.OFF_VAR: "off"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--sandbox: no sandbox can be had here" in proc.stderr and "bubblewrap" in proc.stderr
    assert not (stub_repo / "test_tipc/output").exists()
