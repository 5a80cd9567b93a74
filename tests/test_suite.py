"""`tipcgen suite`: many chains in one command, each in its own working copy, with the verdicts of separate
`tipcgen run` calls; the lint gate over the PaddleOCR corpus; a Ray cluster on loopback that loses a worker."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT, STUB, make_stub_repo, tipcgen

MODE = "lite_train_lite_infer"
VARIANT = ROOT / "tests" / "fixtures" / "stub_variant" / "tipc.yaml"
OUTPUTS = ("test_tipc/output", "train_data", "output", "log")


def _stub_repo(dest: Path, descriptor: Path) -> Path:
    return make_stub_repo(dest, descriptor)


@pytest.fixture(scope="session")
def stubs(tmp_path_factory) -> Path:
    """Two stub models, each its own repository: zoo/stub (stub_model) and zoo/variant (stub_variant)."""
    zoo = tmp_path_factory.mktemp("zoo")
    _stub_repo(zoo / "stub", STUB / "tipc.yaml")
    _stub_repo(zoo / "variant", VARIANT)
    return zoo


def _steps(summary: dict) -> list[tuple[str, str, str]]:
    return [(s["kind"], s["name"], s["status"]) for s in summary["steps"]]


def _separate(repo: Path, scratch: Path, chains: tuple[str, ...] = ("basic",)) -> dict:
    """Separate `tipcgen run` calls (one per chain, in order) in a fresh copy of the repository: their
    summary.json by chain; the first chain's also under its model's name."""
    copy = scratch / repo.name
    shutil.copytree(repo, copy)
    out = {}
    for chain in chains:
        proc = tipcgen("run", "--mode", MODE, "--chain", chain, "--quiet", cwd=copy)
        model = next((copy / "test_tipc" / "output").iterdir())
        run_dir = model / MODE if chain == "basic" else model / chain / MODE
        out[chain] = json.loads((run_dir / "summary.json").read_text())
        assert out[chain]["exit_code"] == proc.returncode
    return {**out["basic"], **{"by_chain": out}}


@pytest.fixture(scope="session")
def separate_stubs(stubs, tmp_path_factory) -> dict[str, dict]:
    scratch = tmp_path_factory.mktemp("separate")
    return {s["model"]: s for s in (_separate(stubs / name, scratch) for name in ("stub", "variant"))}


@pytest.mark.full  # suite over real chains: the zoo's imgcls and tutorial chains in every run (chains/test_repository_lite.py)
def test_three_models_in_one_command_have_the_verdicts_of_separate_runs(stubs, separate_stubs, sample_lite_run,
                                                                        sample_p2o_run, tmp_path):
    """bert-sst2 (basic and paddle2onnx) and two stub models in one suite: each chain's verdict and steps
    equal those of a separate `tipcgen run` of the same chain: for bert, the session's lite and
    paddle2onnx runs of the same rendered sample (conftest.py)."""
    zoo = tmp_path / "zoo"
    shutil.copytree(stubs, zoo)
    tipcgen("init", "bert-sst2", "--output", str(zoo / "bert"), check=True)
    (zoo / "stub" / "output").mkdir()
    (zoo / "stub" / "output" / "stale.txt").write_text("left by an earlier run: never copied\n")
    proc = tipcgen("suite", "bert", "stub", "variant", "--jobs", "2", "--chain", "basic", "--chain", "paddle2onnx",
                   "-o", str(tmp_path / "out"), cwd=zoo)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    suite = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert [c["chain"]["key"] for c in suite["chains"]] == [
        f"bert_sst2/paddle2onnx/{MODE}", *(f"{m}/basic/{MODE}" for m in ("bert_sst2", "stub_model", "stub_variant"))]
    bert_out = "test_tipc/output/bert_sst2"
    p2o_repo, p2o_proc, _ = sample_p2o_run
    bert = {"basic": json.loads((sample_lite_run / bert_out / MODE / "summary.json").read_text()),
            "paddle2onnx": json.loads((p2o_repo / bert_out / "paddle2onnx" / MODE / "summary.json").read_text())}
    assert bert["paddle2onnx"]["exit_code"] == p2o_proc.returncode
    separate = {**separate_stubs, "bert_sst2": {**bert["basic"], "by_chain": bert}}
    for chain in suite["chains"]:
        alone = separate[chain["chain"]["model"]]
        alone = alone["by_chain"][chain["chain"]["chain"]] if "by_chain" in alone else alone
        assert chain["verdict"] == ("passed" if alone["ok"] else "failed")
        assert _steps(chain["summary"]) == _steps(alone), chain["chain"]["key"]
        assert Path(chain["run_dir"], "summary.json").is_file()
    # Each chain ran in its own copy: the repositories themselves hold no output of the suite.
    for repo in ("bert", "stub", "variant"):
        assert not any((zoo / repo / name).exists() for name in OUTPUTS if name != "output"), repo
    assert sorted(p.name for p in (zoo / "stub" / "output").iterdir()) == ["stale.txt"]
    # Two jobs on this machine: disjoint cores, the thread variables set per chain, no GPU said once.
    cores = [tuple(c["slot"]["cores"]) for c in suite["chains"]]
    assert all(cores) and (len(os.sched_getaffinity(0)) < 2 or len(set(cores)) == 2)
    assert any("no GPU found" in note for note in suite["notes"])
    junit = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    assert [s.get("name") for s in junit] == ["tipc.bert_sst2", "tipc.stub_model", "tipc.stub_variant"]
    # Progress in a CI log: plain lines, a start and a count per chain.
    assert proc.stdout.count("[suite] start ") == 4
    assert "[suite] PASS stub_variant/basic/lite_train_lite_infer" in proc.stdout
    # paddle2onnx converts the model the basic chain trained: it starts after that chain, and last.
    assert proc.stdout.rindex("[suite] start ") == proc.stdout.index(f"[suite] start bert_sst2/paddle2onnx/{MODE}")
    assert f"[suite] PASS bert_sst2/paddle2onnx/{MODE} in" in proc.stdout
    assert "(4/4 done, 0 failed, 0 remaining)" in proc.stdout


def test_a_failed_chain_fails_the_suite_and_the_others_are_kept(stubs, tmp_path):
    bad = tmp_path / "bad"
    _stub_repo(bad, STUB / "tipc.yaml")
    config = bad / "test_tipc" / "configs" / "stub_model" / "train_infer_python.txt"
    config.write_text(config.read_text().replace("model_name:stub_model", "model_name:stub_crlf").replace("\n", "\r\n"))
    proc = tipcgen("suite", str(stubs / "stub"), str(stubs / "variant"), str(bad), "-o", str(tmp_path / "out"),
                   env={"STUB_FAIL": "eval"})
    assert proc.returncode == 1, proc.stderr
    suite = json.loads((tmp_path / "out" / "suite.json").read_text())
    verdicts = {c["chain"]["model"]: c["verdict"] for c in suite["chains"]}
    assert verdicts == {"stub_model": "failed", "stub_variant": "passed"}  # the variant has no eval step
    assert [r["config"] for r in suite["refused"]] == [os.path.relpath(config, ROOT)]
    assert any(":1: crlf" in reason for reason in suite["refused"][0]["reasons"])
    assert "REFUSED  " in proc.stdout and "FAIL     stub_model" in proc.stdout
    relayed = [line.split(": ", 1)[1].split()[1] for line in proc.stdout.splitlines()
               if line.startswith("[suite] ") and ": [tipc] " in line]
    assert {"RUN", "PASS", "FAIL"} <= set(relayed), proc.stdout  # a step's start as well as its end
    junit = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    assert [s.get("name") for s in junit] == ["tipc.stub_model", "tipc.stub_variant", "tipc.refused"]
    assert junit[0].get("failures") == "1"


@pytest.mark.waits
def test_a_chain_over_its_time_limit_is_killed_and_reported(stubs, tmp_path):
    started = time.monotonic()
    proc = tipcgen("suite", str(stubs / "stub"), "--timeout", "3", cwd=tmp_path, env={"STUB_HANG": "train"})
    assert time.monotonic() - started < 60
    assert proc.returncode == 1
    assert not (tmp_path / "test_tipc").exists()  # the default output folder outside a repository: ./tipc-suite
    chain = json.loads((tmp_path / "tipc-suite" / "suite.json").read_text())["chains"][0]
    assert chain["verdict"] == "timeout" and "time limit of 3 s" in chain["message"]
    assert "TIMEOUT" in proc.stdout


def test_user_mistakes_exit_2_without_a_traceback(stubs):
    for args, words in ((["--mode", "lite"], "unknown mode 'lite'"), (["no/such/dir"], "no/such/dir: no such file"),
                        (["--chain", "cpp"], "unknown chain 'cpp'")):
        proc = tipcgen("suite", *args, "--lint-only", cwd=stubs / "stub")
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_lint_gate_names_each_refused_paddleocr_config(tmp_path):
    configs = sorted((CORPUS / "PaddleOCR").glob("*.txt"))
    if len(configs) != 207:
        pytest.skip(f"the PaddleOCR corpus is not here ({len(configs)} configs)")
    started = time.monotonic()
    proc = tipcgen("suite", str(CORPUS / "PaddleOCR"), "--lint-only", "--chain", "basic", "--chain", "paddle2onnx",
                   cwd=tmp_path)
    seconds = time.monotonic() - started
    assert proc.returncode == 1
    refused = [line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("REFUSED ")]
    # The 12 fleet configs are a chain's (--chain fleet) not asked for here: left out, not refused.
    fleet = [c for c in configs if c.name.endswith("__train_linux_gpu_fleet_normal_infer_python_linux_gpu_cpu.txt")]
    assert len(fleet) == 12
    assert sorted(Path(p).name for p in refused) == [c.name for c in configs if c not in fleet]
    assert "ch_PP-OCRv4_server_rec_ampO2_ultra__train_infer_python.txt:17: slot-shift" in proc.stdout
    print(f"lint gate over {len(configs)} configs: {seconds:.2f} s (process included)")
    # From a repository: loose configs would run against it, but they lie outside it (its copies lack them).
    proc = tipcgen("suite", str(CORPUS / "PaddleOCR"), "--lint-only", "--chain", "basic", "--chain", "paddle2onnx",
                   cwd=ROOT)
    assert proc.returncode == 1 and proc.stdout.count("REFUSED ") == 207 - 12, proc.stderr
    assert "lies outside the repository" in proc.stdout


_KILLER = """
import os, signal, sys, time

def kill_worker(marker):
    deadline = time.time() + 120
    while not os.path.exists(marker) and time.time() < deadline:
        time.sleep(0.1)
    pid = int(open(marker).read())
    while pid > 1:
        name = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")[0].decode()
        if name.startswith("ray::"):
            os.kill(pid, signal.SIGKILL)
            print(f"killed Ray worker {pid} ({name})", flush=True)
            return
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])

marker, times = sys.argv[1], int(sys.argv[2])
for attempt in range(times):
    kill_worker(marker)
    if attempt + 1 < times:
        os.remove(marker)  # the retry hangs again
"""


@pytest.mark.chain
@pytest.mark.ray
def test_ray_cluster_on_loopback_retries_a_lost_worker_once(stubs, separate_stubs, tmp_path):
    """A head and a second node (ray start), and the suite as a client, all in a network namespace of this
    test with only 127.0.0.1 (and a PID namespace, so every Ray process ends with it). stub_model's eval step
    hangs and the test kills the Ray worker running it: once (Ray retries, the chain passes, the verdicts
    equal separate runs), then twice (reported lost, the variant's result kept)."""
    pytest.importorskip("ray")
    ray = Path(sys.executable).parent / "ray"
    if not (shutil.which("unshare") and shutil.which("ip") and ray.exists()):
        pytest.skip("needs unshare and ip (util-linux, iproute2) and ray's command line")
    if subprocess.run(["unshare", "-n", "-p", "-f", "--mount-proc", "true"], capture_output=True).returncode:
        pytest.skip("unshare -n -p needs root (or user namespaces)")
    (tmp_path / "killer.py").write_text(_KILLER)
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay under 107 characters
    marker = tmp_path / "hung.pid"
    suite = f"{sys.executable} -m tipcgen suite {stubs}/stub {stubs}/variant --address 127.0.0.1:6390"
    script = textwrap.dedent(f"""\
        set -u
        ip link set lo up
        export RAY_USAGE_STATS_ENABLED=0 PYTHONPATH={ROOT} STUB_HANG_ONCE=eval:{marker}
        # Not the shared ~/.ray: a token found there turns on token authentication for the head only.
        export HOME={tmp_path}/home RAY_AUTH_MODE=disabled
        export TMPDIR={tmp_path}/tmp  # the copies of killed tasks stay behind: here, not in /tmp
        # No log monitor: it streams the workers' logs to drivers, and tipcgen's driver takes none (log_to_driver
        # off; progress comes through its own actor). Each node's monitor polled its logs: 4 s of CPU here.
        node="--node-ip-address 127.0.0.1 --num-cpus 1 --temp-dir {ray_tmp} --include-log-monitor=false"
        # Ray gives a starting node 30 s to register, fixed in its code: a loaded machine can miss that, so the
        # cluster is started anew up to three times (an event with a generous ceiling, not one wall bound).
        for attempt in 1 2 3; do
            if {ray} start --head --port 6390 $node --include-dashboard=false --disable-usage-stats >> {tmp_path}/head.log 2>&1 &&
                    {ray} start --address 127.0.0.1:6390 $node >> {tmp_path}/node.log 2>&1; then
                started=$attempt; break
            fi
            {ray} stop --force > /dev/null 2>&1
        done
        [[ -n ${{started:-}} ]] || exit 3
        {sys.executable} {tmp_path}/killer.py {marker} 1 &
        {suite} -o {tmp_path}/once
        echo "suite exit code $?"
        rm {marker}
        {sys.executable} {tmp_path}/killer.py {marker} 2 &
        {suite} -o {tmp_path}/twice
        echo "suite exit code $?"
        """)
    try:
        proc = subprocess.run(["unshare", "-n", "-p", "-f", "--mount-proc", "bash", "-c", script], text=True,
                              capture_output=True, timeout=900, env={**os.environ, "NO_COLOR": "1"})
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    out = proc.stdout + proc.stderr
    assert proc.stdout.count("killed Ray worker") == 3, out[-4000:]
    assert "suite exit code 0\n" in proc.stdout and "suite exit code 1\n" in proc.stdout, out[-4000:]
    # Live progress from the workers: each start (twice for the retried chain) and each step line.
    first_run = proc.stdout.split("suite exit code")[0]
    assert first_run.count("[suite] start stub_model/basic/") == 2, first_run
    assert f"[suite] stub_variant/basic/{MODE}: [tipc] PASS train" in first_run
    once = json.loads((tmp_path / "once" / "suite.json").read_text())
    assert once["engine"] == "ray"
    for chain in once["chains"]:
        alone = separate_stubs[chain["chain"]["model"]]
        assert chain["verdict"] == "passed" and _steps(chain["summary"]) == _steps(alone)
        assert chain["node"].endswith(" 127.0.0.1")
        assert Path(chain["run_dir"], "steps.jsonl").is_file()  # the run folder came back
    assert [c["chain"]["model"] for c in once["chains"] if "Ray retried it" in c["message"]] == ["stub_model"]
    twice = {c["chain"]["model"]: c for c in json.loads((tmp_path / "twice" / "suite.json").read_text())["chains"]}
    assert twice["stub_model"]["verdict"] == "lost" and "lost on Ray after a retry" in twice["stub_model"]["message"]
    assert twice["stub_variant"]["verdict"] == "passed"
    assert _steps(twice["stub_variant"]["summary"]) == _steps(separate_stubs["stub_variant"])


def test_ctrl_c_stops_every_chain_and_still_writes_the_summary(stubs, tmp_path):
    from conftest import chain_env, default_signals

    proc = subprocess.Popen([sys.executable, "-m", "tipcgen", "suite", str(stubs / "stub"), str(stubs / "variant"),
                             "--jobs", "2", "-o", str(tmp_path / "out")], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            # a relative file: each chain's train step writes its pid in its own work copy, then hangs
                            env=chain_env(STUB_HANG_ONCE="train:train.pid"), preexec_fn=default_signals)
    assert proc.stdout is not None
    training = set()  # wait for the event, not a time: both chains are in their hanging train step
    for line in proc.stdout:
        key, _, rest = line.removeprefix("[suite] ").partition(": ")
        if rest.startswith("[tipc] RUN  train"):
            training.add(key)
        if len(training) == 2:
            break
    assert len(training) == 2, "both chains reach their train step"
    ceiling = time.monotonic() + 120  # a ceiling, not a bound: both steps are in their hang once their pids are written
    while len(list((tmp_path / "out").rglob("train.pid"))) < 2 and proc.poll() is None and time.monotonic() < ceiling:
        time.sleep(0.02)
    assert len(list((tmp_path / "out").rglob("train.pid"))) == 2, "both train steps reach their hang"
    proc.send_signal(2)
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 130, out
    suite = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert {c["verdict"] for c in suite["chains"]} == {"interrupted"}
    assert "INTERRUPTED" in out and "Traceback" not in out


def test_progress_on_a_terminal_keeps_a_row_per_running_chain_and_events_above(monkeypatch, tmp_path):
    """The live table's rows (what rich redraws: tests/test_watch.py drives a real suite under a pty) hold each
    running chain, its running step and its log's last line; the events are lines above it."""
    import io

    from tipcgen.suite.slots import Slot
    from tipcgen.suite.suite import Chain, ChainResult
    from tipcgen.suite.report import Progress

    monkeypatch.setenv("TIPCGEN_HEARTBEAT", "0")
    stream = io.StringIO()
    progress = Progress(2, stream, tty=True, color="never")
    a, b = (Chain("/r", "c.txt", "basic", MODE, model) for model in ("m1", "m2"))
    progress.start(a, Slot([0]), run_dir=tmp_path)
    progress.start(b, Slot([1]))
    progress.line(a, "[tipc] RUN  train t1")
    (tmp_path / "t1.log").write_text("loss \x1b[31m0.5\n")
    rows = progress.rows()
    assert rows[0][:2] == (f"m1/basic/{MODE}", "train t1") and rows[0][3] == "loss \\x1b[31m0.5"
    assert rows[1][:2] == (f"m2/basic/{MODE}", "starting")
    progress.done(ChainResult(b, "failed", 1, 2.0, message="eval failed"))
    assert [row[0] for row in progress.rows()] == [f"m1/basic/{MODE}"]
    progress.close()
    out = stream.getvalue()
    assert f"[suite] FAIL m2/basic/{MODE} in 2.0 s: eval failed (1/2 done, 1 failed, 1 remaining)" in out
    assert out.rstrip().endswith("[suite] 1/2 done, 1 failed, 1 remaining")


def test_slots_give_each_job_its_own_cores_and_gpus():
    """GPU sets are planned from the ids nvidia-smi would list: no GPU here, so the ids are given."""
    from tipcgen.core.errors import TipcgenError
    from tipcgen.suite.slots import Slot, slots

    cores = sorted(os.sched_getaffinity(0))
    two = slots(2, 1, ["0", "1", "2", "3"], 2, share_gpus=False)
    assert [s.gpus for s in two] == [["0", "1"], ["2", "3"]]
    assert [s.cores for s in two] == [[cores[0]], [cores[1 % len(cores)]]]
    assert [s.gpus for s in slots(2, 1, ["0"], 1, share_gpus=True)] == [["0"], ["0"]]
    assert [s.gpus for s in slots(2, 1, [], 1, share_gpus=False)] == [[], []]
    with pytest.raises(TipcgenError, match="needs 2 GPUs; this machine has 1"):
        slots(2, 1, ["0"], 1, share_gpus=False)
    env = Slot([0, 1], ["3"]).env({"PATH": "/bin"})
    assert (env["OMP_NUM_THREADS"], env["CPU_NUM"], env["CUDA_VISIBLE_DEVICES"]) == ("2", "2", "3")
    assert "CUDA_VISIBLE_DEVICES" not in Slot([0]).env({})
