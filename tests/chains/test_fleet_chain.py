"""The fleet chain for real on one CPU host (tests/fixtures/dy2static_mlp; docs/CHAINS.md, "The fleet chain").

`tipcgen run --chain fleet` trains the MLP on 2 simulated machines x 2 CPU processes (127.0.0.2, 127.0.0.3; gloo),
each machine its own `paddle.distributed.launch --ips=...` and its own train step; checks every rank and the mean of
the ranks' losses against a one-process run; rank 0's checkpoint goes on to eval, export and inference. A config
naming other machines (192.168.0.1,...) runs on loopback addresses only. A node that dies, a broken machine list and
a port that is taken fail naming the node. A training that logs on rank 0 only (as most do) passes on its checkpoint,
and ranks that each train alone (no gradient averaging) fail naming the parameter rank 0 ended elsewhere.
"""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, tipcgen
from tipcgen.format import paths

FIXTURE = ROOT / "tests" / "fixtures" / "dy2static_mlp"
MODE = "lite_train_lite_infer"
ENTRY = "127.0.0.2,127.0.0.3;-1,-1"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    pytest.importorskip("paddle")
    repo = tmp_path_factory.mktemp("fleet") / "repo"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    tipcgen("init", "tipc.yaml", cwd=repo, check=True)
    return repo


def config(repo: Path) -> Path:
    return repo / paths.config_rel("dy2static_mlp", "fleet")


def run(repo: Path, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    proc = tipcgen("run", "--chain", "fleet", "--mode", MODE, cwd=repo, env=env)
    summary = json.loads((repo / paths.run_rel("dy2static_mlp", MODE, "fleet") / "summary.json").read_text())
    return proc, summary


def edited(repo: Path, old: str, new: str):
    """The fleet config with one edit, as a reviewer's typo would make it (restored by the caller)."""
    text = config(repo).read_text()
    assert old in text
    config(repo).write_text(text.replace(old, new))
    return text


@pytest.fixture(scope="module")
def passing(repo):
    return run(repo)


def test_two_machines_of_two_processes_pass_and_rank_0_goes_on(passing, repo) -> None:
    proc, summary = passing
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert summary["ok"] and summary["chain"] == "fleet"
    steps = {s["name"]: s for s in summary["steps"]}
    prefix = f"norm_train_gpus_{ENTRY}_autocast_null_nodes_2"
    for k, host in enumerate(("127.0.0.2", "127.0.0.3")):
        node = steps[f"{prefix}_node_{k}"]
        assert (node["status"], node["device_num"]) == ("passed", "N2C2")
        assert "-m paddle.distributed.launch --ips=127.0.0.2\\,127.0.0.3" in node["command"]
        assert f"--host={host}" in node["command"] and "--nproc_per_node=2" in node["command"]
    check = steps[f"fleet_gpus_{ENTRY}"]
    assert (check["status"], check["reference"]) == ("passed", "single")
    assert check["check"]["max_abs"]["loss (mean over ranks vs one process)"] < 1e-5
    log = (repo / check["log"]).read_text()
    assert "node 0: ranks 0, 1 of world size 4 started" in log and "node 1: ranks 2, 3 of world size 4 started" in log
    # Both proofs, each naming what it compared: every rank logs (48 rows in global batches of 32: 2 steps a
    # epoch), and rank 0 saved the checkpoint.
    assert "losses: 4 logged steps, the mean over 4 ranks matches the one-process run" in log
    assert "checkpoints: rank 0's " in log and "/single/model.pdparams: 4 parameters equal within" in log
    assert "--batch_size=32" in steps[f"{prefix}_single"]["command"]  # 8 per process x 4
    for kind in ("eval", "export"):
        assert steps[f"{prefix}_nodes_2_{kind}"]["status"] == "passed"
    assert steps[f"export_params_gpus_{ENTRY}"]["status"] == "passed"  # the export holds rank 0's trained weights
    assert any(s["kind"] == "infer" and s["status"] == "passed" for s in summary["steps"])
    # The report draws each node's losses (its launcher log: local rank 0) and the one-process run's.
    run_dir = repo / paths.run_rel("dy2static_mlp", MODE, "fleet")
    tipcgen("report", str(run_dir), cwd=repo, check=True)
    section = (run_dir / paths.REPORT_MD).read_text().split("## Training loss", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{prefix}_{name}`" in section for name in ("node_0", "node_1", "single"))


def test_other_machines_run_on_loopback_addresses_and_a_dying_node_is_named(repo) -> None:
    original = edited(repo, f"gpu_list:{ENTRY}", "gpu_list:192.168.0.1,192.168.0.2;-1")
    text = original.replace(f"gpu_list:{ENTRY}", "gpu_list:192.168.0.1,192.168.0.2;-1")
    config(repo).write_text(text.replace("norm_train:train.py", "norm_train:train.py --crash_rank=1"))
    try:
        proc, summary = run(repo, env={"TIPC_FLEET_GRACE": "3"})
    finally:
        config(repo).write_text(original)
    assert proc.returncode == 1
    steps = {s["name"]: s for s in summary["steps"]}
    prefix = "norm_train_gpus_192.168.0.1,192.168.0.2;-1_autocast_null_nodes_2"
    dead, peer = steps[f"{prefix}_node_1"], steps[f"{prefix}_node_0"]
    assert dead["status"] == "failed" and dead["reason"].startswith("node 1 (127.0.0.3) failed: exit code")
    # Its peer ends when the dead node's connections close (or is stopped after the grace); which of two nodes that
    # end within a second of each other failed first is not claimed, so only its own failure is certain.
    assert peer["status"] == "failed" and peer["reason"].startswith("node 0 (127.0.0.2)"), peer["reason"]
    for node, host in ((peer, "127.0.0.2"), (dead, "127.0.0.3")):  # the addresses passed: loopback ones only
        assert "--ips=127.0.0.2\\,127.0.0.3 " in node["command"] and f"--host={host} " in node["command"]
        assert "--ips=192" not in node["command"] and "--host=192" not in node["command"]
    assert "standing for 192.168.0.1,192.168.0.2, never connected to" in dead["note"]


def test_a_broken_machine_list_fails_naming_the_node(repo) -> None:
    original = edited(repo, f"gpu_list:{ENTRY}", "gpu_list:127.0.0.2,,127.0.0.3;-1")
    try:
        proc, summary = run(repo)
    finally:
        config(repo).write_text(original)
    assert proc.returncode != 0
    failed = [s for s in summary["steps"] if s["status"] == "failed"]
    assert failed and "node 1: machine '' in gpu_list entry '127.0.0.2,,127.0.0.3;-1' is not an IPv4 address" in failed[0]["reason"]


def test_a_port_that_is_taken_fails_naming_the_node(repo) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.2", 0))
        held.listen()
        port = held.getsockname()[1]
        proc, summary = run(repo, env={"TIPC_FLEET_PORT": str(port), "TIPC_FLEET_GRACE": "3"})
    assert proc.returncode == 1
    steps = {s["name"]: s for s in summary["steps"] if s["kind"] == "train" and s["status"] == "failed"}
    node0 = steps[f"norm_train_gpus_{ENTRY}_autocast_null_nodes_2_node_0"]
    assert node0["reason"].startswith("node 0 (127.0.0.2) failed")


@pytest.mark.parametrize("flags, ok", [("--log_rank=0", True), ("--log_rank=0 --no_dp", False)])
def test_rank_0_logging_passes_on_its_checkpoint_and_ranks_that_train_alone_fail(repo, flags, ok) -> None:
    entry = "127.0.0.2;-1,-1"  # one machine of two processes: the cheapest fleet
    original = edited(repo, f"gpu_list:{ENTRY}", f"gpu_list:{entry}")
    text = original.replace(f"gpu_list:{ENTRY}", f"gpu_list:{entry}")
    config(repo).write_text(text.replace("norm_train:train.py", f"norm_train:train.py {flags}"))
    try:
        proc, summary = run(repo)
    finally:
        config(repo).write_text(original)
    check = {s["name"]: s for s in summary["steps"]}[f"fleet_gpus_{entry}"]
    log = (repo / check["log"]).read_text()
    assert "losses: not compared: rank(s) 1 logged no loss" in log
    if ok:
        assert proc.returncode == 0 and summary["ok"], proc.stdout + log
        assert "checkpoints: rank 0's " in log and "4 parameters equal within" in log
        assert check["check"]["max_abs"]["parameters (rank 0 vs one process)"] < 1e-5
    else:
        assert proc.returncode == 1 and check["status"] == "failed", log
        assert "of rank 0's checkpoint" in check["check"]["messages"][0]
        assert "are their gradients averaged" in check["check"]["messages"][0]
