"""Run a suite's chains as Ray tasks: Ray places them (num_cpus / num_gpus per chain), retries a task
whose worker died once (max_retries=1), and reports the rest; there is no scheduler of our own.

Each repository is shipped once as a tarball in Ray's object store (without outputs, as the local
working copies are); every task unpacks its own copy in a fresh temporary folder, runs the same
``suite.execute_chain`` as a local suite, and returns its run folder as a tarball. Not runtime_env
working_dir: Ray unpacks that once per node and lets every task on the node share it, so two chains
would write the same train_data/, output/ and log/ folders.
"""
from __future__ import annotations

import io
import os
import shutil
import socket
import tarfile
import tempfile
from dataclasses import asdict
from typing import Any
from pathlib import Path

from tipcgen.core.errors import TipcgenError
from tipcgen.format import chains as registry
from tipcgen.format.paths import OUTPUT, SUITE_RUNS, SUITE_WORK
from tipcgen.format.words import INTERRUPTED, LOST, PROGRESS
from tipcgen.results.summary import SUMMARY_JSON, load_summary
from tipcgen.run.guard import Interrupted
from tipcgen.suite.slots import Slot
from tipcgen.suite.suite import Chain, ChainResult, execute_chain, needs_trained_model, waves, working_copy

_LOOPBACK = ("127.", "localhost", "::1")


def pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        if not hasattr(tarfile, "data_filter"):
            raise TipcgenError("this Python's tarfile has no extraction filters",
                               "use Python 3.9.17, 3.10.12, 3.11.4 or later on the Ray workers")
        tar.extractall(dest, filter="data")  # no absolute paths, no links out of dest


def _chain_task(repo: bytes, chain: dict, threads: int, timeout: float | None, board, trained: bytes) -> dict:
    """One chain on a Ray worker: its own copy of the repository (with the model's basic run folders when it
    needs a trained model), `tipcgen run`, the run folder back."""
    import ray

    chain = Chain(**chain)
    node = socket.gethostname() + " " + ray.util.get_node_ip_address()
    # Waited for: a call still queued in this worker (the board actor may not be up yet) dies with it, and a
    # lost first start would hide Ray's retry of this chain (the count of starts is how the driver tells).
    ray.get(board.started.remote(chain.key, node))
    gpus = [str(int(g)) for g in ray.get_gpu_ids()]

    def on_line(line: str) -> None:
        if line.startswith(PROGRESS):
            board.line.remote(chain.key, line)

    with tempfile.TemporaryDirectory(prefix="tipcgen-chain-") as tmp:
        unpack(repo, Path(tmp) / "repo")
        if trained:
            unpack(trained, Path(tmp) / "repo" / OUTPUT / chain.model)
        result = execute_chain(chain, Path(tmp) / "repo", Path(tmp) / "out", Slot(threads=threads, gpus=gpus), timeout,
                               on_line=on_line)
        return {"verdict": result.verdict, "exit_code": result.exit_code, "seconds": result.seconds,
                "message": result.message, "node": node,
                "gpus": gpus, "out": pack(Path(tmp) / "out")}


class _Board:
    """What the tasks report while they run: each start (2 starts: Ray retried the chain after its worker
    was lost) and each step line, taken by the driver for the progress lines."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.events: list[tuple[str, str, str]] = []

    def started(self, key: str, node: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1
        self.events.append(("start", key, node))

    def line(self, key: str, text: str) -> None:
        self.events.append(("line", key, text))

    def take(self) -> list[tuple[str, str, str]]:
        events, self.events = self.events, []
        return events

    def get(self) -> dict[str, int]:
        return self.counts


def require() -> None:
    """Ray is installed (said before the suite writes anything)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        raise TipcgenError("--ray needs the ray package", 'pip install "tipcgen[suite]" (ray==2.60.0)') from exc


def connect(address: str | None, cpus: int) -> str | None:
    """Join the cluster at address, or start a local Ray on loopback (its temp folder is returned);
    never Ray's dashboard or usage report."""
    require()
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kwargs: dict = {"include_dashboard": False, "logging_level": "WARNING", "log_to_driver": False}
    temp_dir = None
    if address is None:
        # A private temp dir: Ray's default /tmp/ray is shared by every Ray on the machine. No token: a new
        # local Ray would write ~/.ray/auth_token, and every later `ray start --head` of this user would
        # turn on token authentication (nodes without the token cannot join). This one listens on 127.0.0.1.
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        kwargs.update(num_cpus=max(cpus, os.cpu_count() or 1), _node_ip_address="127.0.0.1",
                      _temp_dir=(temp_dir := tempfile.mkdtemp(prefix="tipcgen-ray-")))
    else:
        kwargs["address"] = address
        kwargs.pop("include_dashboard")
        if address.startswith(_LOOPBACK):
            # Ray would otherwise find this driver's address by a probe to 8.8.8.8, then the host name.
            kwargs["_node_ip_address"] = "127.0.0.1"
    try:
        ray.init(**kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise TipcgenError(f"cannot join the Ray cluster at {address or 'a new local Ray'}: {exc}",
                           "start one with: ray start --head --node-ip-address 127.0.0.1 (see docs/SUITE.md)") from exc
    return temp_dir


def run_ray(chains: list[Chain], out: Path, address: str | None, cpus: int, gpus: int, timeout: float | None,
            progress, notes: list[str]) -> list[ChainResult]:
    import ray

    temp_dir = connect(address, cpus)
    try:
        shipped: dict[str, Any] = {}
        for root in dict.fromkeys(c.root for c in chains):
            copy = working_copy(Path(root), out / SUITE_WORK / f"ship{len(shipped)}", exclude=out.resolve())
            shipped[root] = ray.put(pack(copy))
            shutil.rmtree(copy, ignore_errors=True)
        gpus = _feasible(ray, cpus, gpus, notes)
        board = ray.remote(num_cpus=0)(_Board).remote()
        task = ray.remote(max_retries=1, retry_exceptions=False)(_chain_task)
        results: dict[str, ChainResult] = {}
        pending: dict = {}
        try:
            for wave in waves(chains):
                pending = {}
                for chain in wave:
                    basic = out / SUITE_RUNS / chain.model / registry.BASIC
                    trained = pack(basic) if needs_trained_model(chain) and basic.is_dir() else b""
                    ref = task.options(num_cpus=cpus, num_gpus=gpus, name=f"tipc:{chain.key}").remote(
                        shipped[chain.root], asdict(chain), cpus, timeout, board, trained)
                    pending[ref] = chain
                by_key = {chain.key: chain for chain in wave}
                while pending:
                    done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                    for kind, key, text in ray.get(board.take.remote()):
                        if key in results:
                            continue  # a report that arrived after the result
                        if kind == "start":
                            progress.start(by_key[key], Slot(threads=cpus), where=f"; ray task on {text}")
                        else:
                            progress.line(by_key[key], text)
                    for ref in done:
                        chain = pending.pop(ref)
                        results[chain.key] = _collect(chain, ref, out, cpus)
                        progress.done(results[chain.key])
        except (KeyboardInterrupt, Interrupted):  # SIGINT, SIGTERM or SIGHUP (guard.StopSignals in cli/suite.py)
            for ref in pending:
                ray.cancel(ref, force=True)
            for chain in chains:
                results.setdefault(chain.key, ChainResult(chain, INTERRUPTED, slot=Slot(threads=cpus),
                                                          message="stopped: the suite was interrupted"))
            return [results[c.key] for c in chains]
        counts = ray.get(board.get.remote())
        for key, count in sorted(counts.items()):
            if count > 1:
                results[key].message = (results[key].message + "; " if results[key].message else "") + \
                    f"started {count} times: Ray retried it after its worker was lost"
                notes.append(f"{key}: Ray retried it after its worker was lost")
        return [results[c.key] for c in chains]
    finally:
        ray.shutdown()
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


def _feasible(ray, cpus: int, gpus: int, notes: list[str]) -> int:
    """The GPUs per chain the cluster can give (none when it has none, said in a note); a chain that fits
    no node is a mistake, not a task that waits for ever."""
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    if not any(n.get("CPU", 0) >= cpus for n in nodes):
        raise TipcgenError(f"no node of the Ray cluster has {cpus} CPU(s) for a chain",
                           "lower --cores-per-chain, or add a node with more CPUs")
    if gpus and not any(n.get("GPU", 0) >= gpus for n in nodes):
        notes.append("no node of the Ray cluster has " + (f"{gpus} GPUs" if gpus > 1 else "a GPU")
                     + ": chains run on CPU")
        return 0
    return gpus


def _collect(chain: Chain, ref, out: Path, cpus: int) -> ChainResult:
    import ray

    try:
        data = ray.get(ref)
    except ray.exceptions.RayError as exc:
        reason = str(exc).strip().splitlines()[0][:300]
        return ChainResult(chain, LOST, message=f"lost on Ray after a retry: {reason}", slot=Slot(threads=cpus))
    dest = out / SUITE_RUNS / chain.key
    shutil.rmtree(dest, ignore_errors=True)
    unpack(data.pop("out"), dest)
    result = ChainResult(chain, data["verdict"], data["exit_code"], data["seconds"], message=data["message"],
                         node=data["node"], slot=Slot(threads=cpus, gpus=data["gpus"]))
    result.log = str(dest / "suite.log")
    if (dest / SUMMARY_JSON).is_file():
        result.run_dir = str(dest)
        result.summary = load_summary(dest / SUMMARY_JSON)
    return result
