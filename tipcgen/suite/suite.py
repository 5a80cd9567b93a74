"""Run many TIPC chains in one go: plan (configs × modes × chains), a lint gate, one working copy per chain.

Each chain is a ``tipcgen run`` subprocess in its own copy of its repository (without outputs), so its
verdict is that of a separate ``tipcgen run`` by construction, and no two chains share train_data/,
output/, log/ or test_tipc/output/. The chain's run folder comes back under the suite's output folder.
Local parallelism is a thread pool over subprocesses; Ray (tipcgen.suite_ray) runs the same
``execute_chain`` inside a Ray task.
"""
from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import signal
import stat
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from tipcgen.configs import lint
from tipcgen.core import process, writes
from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import terminal
from tipcgen.format import chains as registry
from tipcgen.format.paths import CONFIGS, OUTPUT, STATE, SUITE_RUNS, SUITE_WORK, SUMMARY_JSON, TEST_TIPC, run_rel
from tipcgen.format.words import ERROR, FAILED, INTERRUPTED, PASSED, TIMEOUT, WHOLE_INFER
from tipcgen.results.summary import Summary, load_summary
from tipcgen.run.guard import Interrupted
from tipcgen.run.request import RunRequest
from tipcgen.suite.slots import Slot



def chain_of_name() -> dict[str, str]:
    """The chain each config file name is run as (the chain registry's chains that suite plans)."""
    return {chain.config: chain.name for chain in registry.suite_chains()}


def always_training() -> tuple[str, ...]:
    """The chains whose runner trains in every mode: not planned in whole_infer (their runner refuses it)."""
    return tuple(chain.name for chain in registry.suite_chains() if chain.always_trains)


# What the TIPC scripts write in the repository root: never copied into a chain's working copy.
OUTPUTS = (OUTPUT, "train_data", "output", "log", ".git", ".venv", STATE, ".pytest_cache",
           ".hypothesis")
_GRACE_SECONDS = 10
_RUNNING: set[process.Running] = set()  # the chains this process runs now, for Ctrl-C
_LOCK = threading.Lock()


@dataclass
class Chain:
    """One planned chain: a config of a repository, run in one mode."""

    root: str
    config: str  # relative to root
    chain: str
    mode: str
    model: str

    @property
    def key(self) -> str:
        return f"{self.model}/{self.chain}/{self.mode}"


@dataclass
class Refused:
    config: str
    reasons: list[str]


@dataclass
class ChainResult:
    chain: Chain
    verdict: str  # passed | failed | error | timeout | lost | interrupted
    exit_code: int | None = None
    seconds: float = 0.0
    run_dir: str = ""
    log: str = ""
    message: str = ""
    node: str = ""
    slot: Slot = field(default_factory=Slot)
    summary: Summary | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["chain"] = {**asdict(self.chain), "key": self.chain.key}
        data["summary"] = self.summary.to_dict() if self.summary else None
        return data


def find_configs(paths: Iterable[str], root: Path) -> list[Path]:
    """Config files from files, folders (searched for *.txt; a repository root: its test_tipc/configs) and globs."""
    found: list[Path] = []
    for item in paths:
        matches = sorted(Path(p) for p in glob.glob(item, recursive=True)) if glob.has_magic(item) else [Path(item)]
        if not matches or not all(m.exists() for m in matches):
            raise TipcgenError(f"{item}: no such file or folder", "pass config files, folders that hold them, or a glob")
        for match in matches:
            if match.is_dir():
                configs = match / CONFIGS
                found.extend(sorted((configs if configs.is_dir() else match).rglob("*.txt")))
            else:
                found.append(match)
    if not paths:
        configs = root / CONFIGS
        if not configs.is_dir():
            raise TipcgenError(f"no test_tipc/configs under {root.resolve()}",
                               "render one with tipcgen init, or name config files, folders or globs")
        found = sorted(configs.rglob("*.txt"))
    return list(dict.fromkeys(p.resolve() for p in found))


def repo_root_of(config: Path, default: Path) -> Path:
    """The repository a config belongs to: the folder holding the test_tipc/ it lies in, else --root."""
    for parent in config.parents:
        if parent.name == TEST_TIPC:
            return parent.parent
    return default.resolve()


def _model_name(text: str, config: Path) -> str:
    match = re.search(r"^model_name:(.*)$", text, re.M)
    return match.group(1).strip() if match and match.group(1).strip() else config.parent.name


def plan(paths: Iterable[str], root: Path, modes: list[str], chains: list[str]) -> tuple[list[Chain], list[Refused]]:
    """The chains to run and the configs refused (lint errors with file:line, or no runner for them)."""
    planned: list[Chain] = []
    refused: list[Refused] = []
    seen: dict[str, str] = {}
    for config in find_configs(list(paths), root):
        repo = repo_root_of(config, root)
        shown = os.path.relpath(config)
        text = config.read_bytes().decode("utf-8", errors="surrogateescape")
        has_repo = (repo / TEST_TIPC).is_dir()
        findings = lint.lint_text(text, shown, repo_root=repo if has_repo else None)
        reasons = [f"{f.path}:{f.line}: {f.rule} {f.message}" for f in findings if f.severity == ERROR]
        # ../shared/tipc-corpus flattens paths with "__": its basic configs end in __train_infer_python.txt.
        chain = chain_of_name().get(config.name.split("__")[-1])
        if chain is None:
            reasons.append(f"{shown}: tipcgen runs no chain for this file name (it runs "
                           + ", ".join(chain_of_name()) + ")")
        elif not has_repo:
            reasons.append(f"{shown}: not inside a repository's test_tipc/ folder, and {root}/test_tipc is missing")
        elif not config.is_relative_to(repo):
            reasons.append(f"{shown}: lies outside the repository {repo} that runs it (each chain runs in a copy "
                           "of it): put the config under its test_tipc/configs/<model>/")
        if chain is not None and chain not in chains:
            continue
        model = _model_name(text, config)
        modes_here = [m for m in modes if not (chain in always_training() and m == WHOLE_INFER)]
        for mode in modes_here:
            key = f"{model}/{chain}/{mode}"
            if not reasons and key in seen:
                reasons.append(f"{shown}: model_name {model} is also the model of {seen[key]}: run folders would clash")
            seen.setdefault(key, shown)
        if reasons:
            refused.append(Refused(shown, reasons))
            continue
        planned.extend(Chain(str(repo), str(config.relative_to(repo)), chain, mode, model) for mode in modes_here)
    return planned, refused


def _ignore_outputs(root: Path, extra: Path | None) -> Callable[[str, list[str]], set[str]]:
    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        rel = here.relative_to(root).as_posix()
        skip = {n for n in names if n == "__pycache__" or (f"{rel}/{n}" if rel != "." else n) in OUTPUTS}
        if extra is not None:
            skip |= {n for n in names if (here / n).resolve() == extra}
        return skip
    return ignore


def working_copy(root: Path, dest: Path, exclude: Path | None = None) -> Path:
    """A copy of the repository without what chains write (links stay links, so big data is not copied)."""
    shutil.copytree(root, dest, symlinks=True, ignore=_ignore_outputs(root.resolve(), exclude))
    return dest


def _run_dir(chain: Chain) -> str:
    return run_rel(chain.model, chain.mode, chain.chain)


def run_request(chain: Chain, sandbox: bool = False) -> RunRequest:
    """The request of one chain's `tipcgen run`, in its working copy (the current folder of that run)."""
    return RunRequest(mode=chain.mode, root=Path("."), config=chain.config, chain=chain.chain, sandbox=sandbox,
                      quiet=True)


def execute_chain(chain: Chain, workdir: Path, dest: Path, slot: Slot, timeout: float | None,
                  on_line: Callable[[str], None] = lambda line: None, sandbox: bool = False) -> ChainResult:
    """`tipcgen run` of one chain in workdir (a working copy), asked by run_request; its run folder and log
    go to dest."""
    cmd = [sys.executable, "-m", "tipcgen", "run", *run_request(chain, sandbox).args()]
    # The suite shows each chain's progress and heartbeat itself: the chain's own run says neither.
    env = slot.env(dict(os.environ, NO_COLOR="1", PYTHONUNBUFFERED="1", TIPCGEN_HEARTBEAT="0"))
    dest.mkdir(parents=True, exist_ok=True)
    log_path = dest / "suite.log"
    started = time.monotonic()
    verdict = ""
    tail: list[str] = []
    rc: int | None = None
    with _new_log(log_path) as log:
        def seen(line: str) -> None:
            nonlocal tail
            log.write(line + "\n")
            tail = (tail + [line])[-12:]
            on_line(line)

        running = process.start(process.Request(cmd, cwd=workdir, env=env, on_line=seen, timeout=timeout or None,
                                                grace=_GRACE_SECONDS, cpus=tuple(slot.cores or ()),
                                                death_signal=signal.SIGKILL, output_cap=1 << 16))
        with _LOCK:
            _RUNNING.add(running)
        try:
            outcome = running.finish()
            rc = outcome.exit_code
            if outcome.timed_out:
                verdict = TIMEOUT
        except KeyboardInterrupt:
            running.signal_group(signal.SIGINT)
            rc, verdict = running.finish().exit_code, INTERRUPTED
        finally:
            with _LOCK:
                _RUNNING.discard(running)
    if rc == 130 and not verdict:
        verdict = INTERRUPTED
    result = ChainResult(chain, verdict, rc, round(time.monotonic() - started, 3), log=str(log_path), slot=slot)
    run_dir = workdir / _run_dir(chain)
    if run_dir.is_dir():
        try:  # a link stays a link, never followed; a FIFO, device or socket a step left is not copied
            shutil.copytree(run_dir, dest, symlinks=True, dirs_exist_ok=True, ignore=_not_plain)
            result.run_dir = str(dest)
        except (shutil.Error, OSError) as exc:
            result.verdict, result.message = ERROR, terminal(f"the run folder could not be copied: {exc}")[:300]
    if (dest / SUMMARY_JSON).is_file() and result.run_dir:
        try:
            result.summary = load_summary(dest / SUMMARY_JSON)  # the one validated reader (summary_check)
        except TipcgenError as exc:
            result.verdict, result.message = ERROR, terminal(exc.message)[:300]
    if not result.verdict:
        if rc == 2 or result.summary is None:
            result.verdict = ERROR
        else:
            result.verdict = PASSED if rc == 0 and result.summary.ok else FAILED
    if result.verdict != PASSED and not result.message:
        result.message = {"timeout": f"killed after the chain time limit of {timeout:g} s"}.get(
            result.verdict, " | ".join(line for line in tail[-3:] if line.strip()))
    return result


def _not_plain(folder: str, names: list[str]) -> list[str]:
    """copytree's ignore: the names in folder that are not a regular file, a folder or a link (a FIFO would block
    the copy, a device would be read without end, a socket fails it)."""
    out = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            out.append(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            out.append(name)
    return out


def _new_log(path: Path):
    """The chain's suite.log, created exclusively in the runs folder the suite owns (a link there, which
    nothing but the suite could have put, is removed, never written through), for streaming the output."""
    if path.is_symlink():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    return os.fdopen(fd, "w", encoding="utf-8")


def not_started(chains: list[Chain]) -> list[ChainResult]:
    """The results of a suite stopped before its chains ran."""
    return [ChainResult(chain, INTERRUPTED, message="not started: the suite was interrupted") for chain in chains]


def needs_trained_model(chain: Chain) -> bool:
    """paddle2onnx converts, and whole_infer infers, a model the basic chain trained: they run after it."""
    record = registry.by_name().get(chain.chain)
    return (record is not None and record.after_basic) or chain.mode == WHOLE_INFER


def seed_trained_runs(chain: Chain, runs: Path, work: Path) -> None:
    """Put this suite's basic run folders of the chain's model where prepare.sh looks for a trained model,
    as in a repository where the basic chain ran first."""
    basic = runs / chain.model / registry.BASIC
    if basic.is_dir() and "TIPC_MODEL_DIR" not in os.environ:
        for run in basic.iterdir():
            shutil.copytree(run, work / OUTPUT / chain.model / run.name, symlinks=True,
                            dirs_exist_ok=True)


def waves(chains: list[Chain]) -> list[list[Chain]]:
    """The chains that train first, then those that need a trained model (see needs_trained_model)."""
    return [[c for c in chains if not needs_trained_model(c)], [c for c in chains if needs_trained_model(c)]]


def run_local(chains: list[Chain], out: Path, slot_list: list[Slot], timeout: float | None, progress,
              keep_work: bool = False, sandbox: bool = False) -> list[ChainResult]:
    """Run chains side by side, one per slot, wave after wave; results in plan order. sandbox: each chain's
    `tipcgen run --sandbox`."""
    import queue
    from concurrent.futures import ThreadPoolExecutor

    free: queue.Queue = queue.Queue()
    for slot in slot_list:
        free.put(slot)
    stopping = threading.Event()

    def one(chain: Chain) -> ChainResult:
        slot = free.get()
        work = out / SUITE_WORK / chain.key.replace("/", "__")
        try:
            if stopping.is_set():
                return not_started([chain])[0]
            writes.remove_tree(out, work, "the chain's working copy")
            working_copy(Path(chain.root), work, exclude=out.resolve())
            if needs_trained_model(chain):
                seed_trained_runs(chain, out / SUITE_RUNS, work)
            if stopping.is_set():  # the signal came while the copy was made
                return not_started([chain])[0]
            progress.start(chain, slot, run_dir=work / _run_dir(chain))
            result = execute_chain(chain, work, out / SUITE_RUNS / chain.key, slot, timeout,
                                   on_line=lambda line: progress.line(chain, line), sandbox=sandbox)
            progress.done(result)
            return result
        finally:
            if not keep_work:
                with contextlib.suppress(TipcgenError):
                    writes.remove_tree(out, work, "the chain's working copy")
            free.put(slot)

    results: dict[str, ChainResult] = {}
    with ThreadPoolExecutor(max_workers=len(slot_list)) as pool:
        for wave in waves(chains):
            futures = {chain.key: pool.submit(one, chain) for chain in wave}
            try:
                results.update((key, future.result()) for key, future in futures.items())
            except (KeyboardInterrupt, Interrupted):
                # SIGINT, SIGTERM or SIGHUP reach this thread only (each chain has its own session): SIGINT
                # goes on to every chain, whose tipcgen run stops its step and still writes its summary.
                # Later signals are only kept (guard.StopSignals), so this wait is not cut short.
                stopping.set()
                with _LOCK:
                    running = list(_RUNNING)
                for proc in running:
                    proc.signal_group(signal.SIGINT)
                results.update((key, future.result()) for key, future in futures.items())
    if not keep_work:
        try:
            (out / SUITE_WORK).rmdir()  # empty by now: each chain removed its copy
        except OSError:
            pass
    return [results[chain.key] for chain in chains]
