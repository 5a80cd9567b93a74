"""Issue #59 item 1 through the real runner and ``tipcgen run`` (the stub chain, no paddle): the runner's
handshake (words.WAIT) makes it wait for tipcgen's records before a train, eval or export step starts and
after a training; the steps never hold the answer pipe; in the sandbox too; a runner run by hand never
waits. A later step that overwrites the trained checkpoint with committed weights and sets its time back
fails the export proof, naming the step it happened before; the honest stub chain still passes."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import chain_env, read_summary, tipcgen
from tipcgen.core import sandbox

MODE = "lite_train_lite_infer"
CONFIG = "test_tipc/configs/stub_model/train_infer_python.txt"
RUNNER = "test_tipc/test_train_inference_python.sh"
SAVE = "test_tipc/output/stub_model/lite_train_lite_infer/norm_train_gpus_-1_autocast_fp32"

# The train step notes what it was handed: the answer pipe's variable, its open descriptors, and the pipe the
# runner (the ancestor started with TIPC_ANSWER_FD=N) reads tipcgen's answers from; and it writes a handshake
# line of its own into the runner's output, whose answer the runner must read past (not its nonce).
_PEEK = """import json, os
def _peek():
    fds = {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")}
    pid, answer = os.getppid(), None
    while pid > 1 and answer is None:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(e.split(b"=", 1) for e in f.read().split(b"\\0") if b"=" in e)
        if b"TIPC_ANSWER_FD" in env:
            answer = os.readlink(f"/proc/{pid}/fd/{int(env[b'TIPC_ANSWER_FD'])}")
            with open(f"/proc/{pid}/fd/1", "w") as runner_out:  # a fake handshake in the runner's output
                runner_out.write("[tipc] WAIT 7 ended train fake\\n")
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    with open("peek.json", "w") as f:
        json.dump({"var": os.environ.get("TIPC_ANSWER_FD"), "fds": fds, "answer": answer}, f)
_peek()
"""
# eval, as a hostile contributor writes it: the committed weights over the trained checkpoint, its time set back.
_OVERWRITE = f'''import os, shutil
ckpt = "{SAVE}/checkpoint/model.pdparams"
stamp = os.stat(ckpt)
shutil.copyfile("weights/committed.pdparams", ckpt)
os.utime(ckpt, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
'''


def _hostile(repo: Path) -> None:
    (repo / "weights").mkdir()
    (repo / "weights/committed.pdparams").write_bytes(b"committed weights")
    eval_script = repo / "stub/stub_eval.py"
    eval_script.write_text(_OVERWRITE + eval_script.read_text())


def _steps(repo: Path) -> dict[str, dict]:
    return {s["name"]: s for s in read_summary(repo)["steps"]}


@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "sandbox"])
def test_the_runner_waits_for_the_record_and_no_step_holds_the_pipe(stub_repo: Path, sandboxed: bool):
    if sandboxed and not sandbox.available()[0]:
        pytest.skip(f"no sandbox here: {sandbox.available()[1]}")
    train = stub_repo / "stub/stub_train.py"
    train.write_text(_PEEK + train.read_text())
    proc = tipcgen("run", "--quiet", *(["--sandbox"] if sandboxed else []), cwd=stub_repo, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WAIT" not in proc.stdout  # the handshake is tipcgen's, not shown
    import json

    peek = json.loads((stub_repo / "peek.json").read_text())
    assert peek["var"] is None and peek["fds"]["0"] == "/dev/null"
    assert peek["answer"] is not None and peek["answer"].startswith("pipe:"), peek  # the runner holds it...
    assert peek["answer"] not in peek["fds"].values(), peek  # ...the step does not
    # The record was taken: an honest stand-in training, then the hostile eval in the same repository fails.
    _hostile(stub_repo)
    proc = tipcgen("run", "--quiet", *(["--sandbox"] if sandboxed else []), cwd=stub_repo, timeout=300)
    check = _steps(stub_repo)["export_params_gpus_-1"]
    assert proc.returncode == 1 and check["status"] == "failed", proc.stdout
    # Where the machine has the cores (nproc), the export runs beside the eval: the records are checked again as the
    # two end; one step at a time, before the export starts.
    when = ("while export norm_train_gpus_-1_autocast_fp32_nodes_1_export and eval "
            "norm_train_gpus_-1_autocast_fp32_nodes_1_eval ran side by side" if len(os.sched_getaffinity(0)) > 1 else
            "before export norm_train_gpus_-1_autocast_fp32_nodes_1_export started")
    assert check["reason"] == (f"checkpoint {SAVE}/checkpoint/model.pdparams changed after the training ended, {when} "
                               "(it now holds the bytes of weights/committed.pdparams, a weight file there before the "
                               "train step)")
    assert "FAILED" in proc.stdout


def test_a_runner_run_by_hand_never_waits(stub_repo: Path):
    """No tipcgen: no variable, or one naming a descriptor that is not open, or one open on what answers
    nothing (stdin, /dev/null): the runner goes through without a WAIT it would hang on."""
    tipcgen("run", "--quiet", cwd=stub_repo, timeout=300, check=True)  # prepare.sh's data, as a reviewer has it
    for value in (None, "9", "0", "x"):
        env = chain_env()
        env.pop("TIPC_ANSWER_FD", None)
        if value is not None:
            env["TIPC_ANSWER_FD"] = value
        proc = subprocess.run(["bash", RUNNER, CONFIG, MODE], cwd=stub_repo, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (value, proc.stdout[-2000:], proc.stderr[-2000:])
        assert ("WAIT" in proc.stdout) == (value == "0"), (value, proc.stdout[-2000:])
