"""Run a chain exactly as a reviewer does: ``bash test_tipc/prepare.sh`` then the runner.

Both scripts run as subprocesses from the repository root; their output is streamed line by
line to a callback (progress), and the summary is read from what the runner leaves on disk.
There is no private execution path. ``run(request, proofs)`` is the one pipeline (prepare → runner →
records → proofs → outputs) for tipcgen's runner and a kept one (init --submission, run/submission_run.py):
what differs between them is a ``Driver`` (``TipcgenRunner`` here, ``submission_run.KeptRunner``), which the
pipeline asks and never looks behind.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from tipcgen.configs import existing, flag_check, legacy_format, script_reading, submission
from tipcgen.configs.locate import find_config
from tipcgen.core import inputs, process
from tipcgen.core.errors import RunError, ScriptError, TipcgenError
from tipcgen.core import writes
from tipcgen.core.sandbox import Spec
from tipcgen.core.writes import write_file
from tipcgen.core.text import quoted
from tipcgen.descriptor.schema import MAX_STEP_TIMEOUT, MODEL_NAME_HINT, is_model_name
from tipcgen.format import chains, layout, paths, words
from tipcgen.format.chain import slots_of_step
from tipcgen.format.config import TipcConfig, model_name_in
from tipcgen.format.paths import JUNIT_XML, PREPARE_LOG, PREPARE_SH, RECORDS, RESULT_LOGS, RUNNERS, SUMMARY_JSON
from tipcgen.format.words import CHECK, EVAL, EXPORT, FAILED, INFER, INTERRUPTED, PADDLE_PIN, PASSED, PREPARE, TRAIN
from tipcgen.results.summary import (
    Step,
    Summary,
    check_status_lines,
    environment_info,
    log_tail,
    read_records,
    required_kinds,
    write_json,
)
from tipcgen.results import explain
from tipcgen.results import target_check, unchecked
from tipcgen.run import guard as run_guard
from tipcgen.run import provenance, sandboxed, seeds, submission_run, tracked
from tipcgen.run.request import NO_PROOFS, Proofs, Records, RunRequest

# benchmark_train is its own mode (upstream's); --mode then names the data prepare.sh readies.
BENCHMARK_DATA_MODES = (words.LITE_TRAIN_LITE_INFER, words.WHOLE_TRAIN_WHOLE_INFER)
# Seconds a script may print nothing beyond the step time limit before the run takes it as stuck: every step of
# tipcgen's runner is bounded, and the runner prints a line as each starts and ends, so a longer silence is the
# runner's own machinery hung (a wait on a child that never ends), never a step at work.
SILENCE_MARGIN = 300


def silence_limit(request: RunRequest, env: dict[str, str], root: Path, unbounded: bool) -> int | None:
    """The longest silence of prepare.sh or the runner before the run stops them as stuck: the step time limit
    the runner applies (--step-timeout, else TIPC_STEP_TIMEOUT from the environment, else the largest of the
    models' limits test_tipc/tipc_layouts.json holds) plus SILENCE_MARGIN. None for an unbounded runner (a
    kept one, Driver.bounded) without --step-timeout: its steps have no limit, and a whole training may print
    nothing for hours."""
    if request.step_timeout is not None:
        return request.step_timeout + SILENCE_MARGIN
    if unbounded:
        return None
    given = inputs.whole_number(env.get("TIPC_STEP_TIMEOUT", ""), MAX_STEP_TIMEOUT)  # _prepare refused any other
    if given:
        return given + SILENCE_MARGIN
    timeouts = (own.get("timeout") for own in existing.rendered_settings(root).values())
    limits = (n for n in timeouts if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_STEP_TIMEOUT)
    return max([words.DEFAULT_STEP_TIMEOUT, *limits]) + SILENCE_MARGIN


def check_mode(mode: str) -> str:
    if mode in words.MODES:
        return mode
    if mode in words.LEGACY_MODES:
        raise RunError(f"mode '{mode}' is a legacy name from the first TIPC version",
                       f"use {words.LEGACY_MODES[mode]} (modes: {', '.join(words.MODES)})")
    raise RunError(f"unknown mode '{mode}'", "use one of: " + ", ".join(words.MODES))


def _start_layout_check(config_path: Path, root: Path, chain: str, env: dict[str, str], mode: str,
                        sandbox: Spec | None = None) -> process.Running:
    """The runner's own layout checks (the keys it was rendered with, which lint cannot know), no step:
    one bash start (~30 ms), run beside the probes so a bad config still fails before prepare.sh."""
    return process.start(process.Request(["bash", RUNNERS[chain], str(config_path), mode], cwd=root,
                                         env=dict(env, TIPC_CHECK_ONLY="1"), stdout="discard", stderr="separate",
                                         timeout=120, sandbox=sandbox))


def _layout_check_result(check: process.Running) -> None:
    outcome = check.finish()
    if outcome.timed_out:
        return  # the runner itself checks again when it starts
    if outcome.exit_code == 2:
        raise ScriptError.from_lines(outcome.errors.splitlines())


def preflight(root: Path, config_path: Path, chain: str, env: dict[str, str], mode: str,
              data_dir: str | None, desc: Any, desc_info: dict[str, Any],
              sandbox: Spec | None = None) -> tuple[str, dict, bytes | None]:
    """What would make every step fail, said once before any step runs (tipcgen doctor says more),
    and the run's provenance. The runner's layout check, the interpreter probe (paddle found, versions)
    and git start together, beside the data hashing here: the wall time is the longest of them, not the
    sum. desc, desc_info: the descriptor the run loaded (or None) and its hashes (provenance.load_descriptor).

    Returns the chain's interpreter (its full path), the provenance record and the git probe's answer
    (``git status --porcelain=v2 -z``; None without one): the run's first tracked-files snapshot."""
    text = (root / config_path).read_text(encoding="utf-8", errors="replace")
    python, found = flag_check.interpreter(text, env)
    refused = flag_check.not_python(text, env, found, str(config_path))  # python:make never runs (issue #59)
    if refused:
        raise RunError(refused, flag_check.NOT_PYTHON_FIX)
    check = _start_layout_check(config_path, root, chain, env, mode, sandbox)
    probes = provenance.Probes(root, found, env, sandbox=sandbox)
    try:
        record = provenance.collect(root, root / config_path, probes, env, data_dir, desc, desc_info)
        _layout_check_result(check)
        if found is None:
            raise RunError(f"the chain's interpreter '{python}' (TIPC_PYTHON, else the config's python: line) is not on PATH",
                           "pass --python python3 (the interpreter with the model's packages) for this run, "
                           "or write python:python in the config")
        # TIPC_NO_PADDLE=1: the chain's scripts need no paddle (a stand-in model, tests).
        if env.get("TIPC_NO_PADDLE") != "1" and record["versions"].get("paddle_found") is False:
            raise RunError(f"paddle is not installed for {found}",
                           f"pip install {PADDLE_PIN} (or pip install -e \".[paddle]\" for the tested stack); "
                           "tipcgen doctor checks the rest")
        status = probes.git_status()
    finally:
        probes.close()
        check.kill()
        check.finish()
    return found, record, status


def model_name_of(config_path: Path) -> str:
    model = model_name_in(config_path.read_text(encoding="utf-8", errors="replace"))
    if model is None:
        raise RunError(f"{config_path} has no model_name: line", "check it with tipcgen lint")
    if not is_model_name(model):  # the rule lint and init apply; the runner checks it again
        raise RunError(f"{config_path}: model_name {quoted(model)} cannot name the run's folder", MODEL_NAME_HINT)
    return model


class _Chain:
    """One run of prepare.sh and the runner (core/process.py: each in its own session, streamed, its group
    ended with it, in the sandbox with ``run --sandbox``), stoppable as a whole."""

    def __init__(self, root: Path, env: dict[str, str], on_line: Callable[[str], None],
                 sandbox: Spec | None = None, silence: int | None = None,
                 on_wait: Callable[[str, str, str], None] | None = None) -> None:
        self.root, self.env, self.on_line, self.sandbox, self.silence = root, env, on_line, sandbox, silence
        self.on_wait = on_wait  # the runner's handshake (words.WAIT): what tipcgen records while it waits
        self.proc: process.Running | None = None
        self.stuck: str | None = None  # why the last script streamed was stopped for its silence (run.silence_limit)
        self.keep: deque | None = None
        self.stopping = False
        self.answer: int | None = None  # the write end of the runner's answer pipe, while it runs
        self.starts: list[tuple[float, str, str]] = []  # (time, kind, name) of each `[tipc] RUN` line

    def _line(self, line: str) -> None:
        handshake = words.handshake_of(line)
        if handshake is not None and self.answer is not None:
            self._answer(*handshake)
            return
        if self.keep is not None:
            self.keep.append(line)
        if self.stopping:
            return  # after an interrupt the lines are kept, not shown
        fields = line.split()
        if words.progress_mark(line) == words.STARTED and len(fields) >= 4:
            self.starts.append((time.time(), fields[2], fields[3]))
        self.on_line(line)

    def _answer(self, nonce: str, when: str, kind: str, name: str) -> None:
        """The runner waits: record what its handshake asks for (unless stopping), then let it go on (the line
        NONCE: the runner reads past any other)."""
        try:
            if not self.stopping and self.on_wait is not None:
                self.on_wait(when, kind, name)
        finally:
            try:
                answer = self.answer  # None: closed by stop(), the runner reads its end and goes on
                if answer is not None:
                    os.write(answer, f"{nonce}\n".encode())
            except OSError:
                pass  # the runner is gone

    def _close_answer(self) -> None:
        if self.answer is not None:
            os.close(self.answer)
            self.answer = None

    def stream(self, cmd: list[str], keep: deque, answer: bool = False) -> int:
        """Run cmd to its end, passing each output line to on_line; its exit code (-N: killed by signal N). A
        script silent for longer than ``silence`` is stopped with every process of the run (``stuck`` says so).
        answer: hand it the read end of a pipe (words.ANSWER_FD_VAR; no other process gets it) on which each of
        its handshakes is answered once ``on_wait`` returns."""
        self.keep, self.stuck = keep, None
        env = self.env
        fds: tuple[int, ...] = ()
        if answer:
            read, self.answer = os.pipe()
            env, fds = dict(self.env, **{words.ANSWER_FD_VAR: str(read)}), (read,)
        try:
            self.proc = process.start(process.Request(cmd, cwd=self.root, env=env, on_line=self._line,
                                                      output_cap=1 << 16, sandbox=self.sandbox, grace=1.0,
                                                      silence=self.silence, pass_fds=fds))
        except BaseException:
            self._close_answer()
            raise
        finally:
            for fd in fds:
                os.close(fd)
        try:
            outcome = self.proc.finish()
        finally:
            self._close_answer()
        if outcome.silent:
            self.stuck = (f"{cmd[1].rsplit('/', 1)[-1]} printed nothing for {self.silence} s, longer than a step may "
                          f"run (the step time limit + {SILENCE_MARGIN} s): it was stopped as stuck")
            run_guard.stop_run_processes(self.env[run_guard.RUN_ID_VAR], grace=1.0)
        return -1 if outcome.exit_code is None else outcome.exit_code

    def stop(self, keep: deque) -> int | None:
        """After an interrupt: let the script finish its records for a short grace, then stop every
        process of the run; the script's exit code, if it had started."""
        if self.proc is None:
            return None
        self.keep, self.stopping = keep, True
        self._close_answer()  # a runner waiting for an answer reads the pipe's end and goes on to its records
        outcome = self.proc.finish(until=time.monotonic() + run_guard.GRACE_SECONDS)
        run_guard.stop_run_processes(self.env[run_guard.RUN_ID_VAR], grace=1.0)
        return outcome.exit_code


class Driver(Protocol):
    """What differs between the runners a run drives, and only that: tipcgen's (``TipcgenRunner``) and the
    repository's own, kept by init --submission (``submission_run.KeptRunner``). The pipeline runs prepare.sh
    (where there is one), then the runner, for either; it asks the driver and never which one it is."""

    kept: bool  # the repository's own runner (RunContext.kept: the summary and the CLI say so)
    gated: bool  # the runner runs only after a prepare.sh that passed (a kept one runs whatever prepare did)
    handshake: bool  # the runner answers `[tipc] WAIT` lines (words.WAIT); else the weights are recorded before it
    bounded: bool  # every step of the runner has a time limit without --step-timeout (run.silence_limit)
    refuses: bool  # its scripts exit 2 when they refuse to start: the run says why, as a ScriptError (exit 2)
    moves_aside: bool  # the last run's folder is moved aside (keep_previous); a kept runner keeps it, as upstream's

    def scripts(self, chain: str) -> tuple[str, ...]:
        """The scripts that must be there before anything runs, in the order they run."""
        ...

    def check_options(self, request: RunRequest) -> None:
        """Refuse, by name, an option that cannot apply to this runner."""
        ...

    def environment(self, env: dict[str, str], desc: Any, desc_info: dict[str, Any]) -> None:
        """The scripts' environment, before the request's options are set in it."""
        ...

    def check_environment(self, request: RunRequest, env: dict[str, str]) -> None:
        """Refuse an environment that would make every step fail, the request's options set in it."""
        ...

    def start(self, ctx: RunContext, model: str, desc_info: dict[str, Any],
              notes: list[str]) -> tuple[Summary, str | None, dict[str, str], bytes | None]:
        """Before any script: the summary the run starts from (notes: the config's, from Proofs.refuse), the chain's
        interpreter, the interpreter shim (names -> the one to run) and the first git status (None: take one)."""
        ...

    def ready(self, ctx: RunContext) -> None:
        """What is measured once the run folder is locked, before any script starts."""
        ...

    def write_shim(self, ctx: RunContext, folder: Path) -> None:
        """Write the interpreter shim (ctx.shim) into folder and put it first on the scripts' PATH."""
        ...

    def line(self, line: str) -> None:
        """Each output line of the scripts, as it comes."""
        ...

    def judge_prepare(self, prepare: Step, lines: Iterable[str]) -> None:
        """prepare.sh's step once it ended (its status from the exit code), from its output."""
        ...

    def runner_starts(self, wait: Callable[[str, str, str], None]) -> None:
        """Just before the runner starts; wait: the records a handshake takes (words.WAIT_START, kind, name)."""
        ...

    def records(self, ctx: RunContext, summary: Summary, prepare: Step | None) -> tuple[list[Step], list[str], list[str]]:
        """The runner's steps, the notes on where they were read and the problems its records show."""
        ...

    def proof_notes(self, steps: list[Step]) -> list[str]:
        """What the proofs could not check on these steps (said beside the proofs' own notes)."""
        ...

    def shim_notes(self, ctx: RunContext, folder: Path) -> list[str]:
        """What the interpreter shim did."""
        ...

    def finish(self, ctx: RunContext, summary: Summary, prepare: Step | None, steps: list[Step],
               runner_out: list[str], stuck: bool) -> None:
        """The problems of the run's end (the runner's exit, a mode's required steps that did not pass) and the
        target check; steps: the runner's, without the proofs; stuck: the runner was stopped for its silence."""
        ...


class TipcgenRunner:
    """tipcgen's runner: prepare.sh must pass before it; it answers each handshake; every step is bounded; its
    records are the run folder's steps.jsonl and status log."""

    kept, gated, handshake, bounded, refuses, moves_aside = False, True, True, True, True, True

    def scripts(self, chain: str) -> tuple[str, ...]:
        return PREPARE_SH, RUNNERS[chain]

    def check_options(self, request: RunRequest) -> None:
        return None

    def environment(self, env: dict[str, str], desc: Any, desc_info: dict[str, Any]) -> None:
        env.setdefault("GLOG_minloglevel", "2")

    def check_environment(self, request: RunRequest, env: dict[str, str]) -> None:
        if request.step_timeout is None and env.get("TIPC_STEP_TIMEOUT") and not inputs.whole_number(
                env["TIPC_STEP_TIMEOUT"], MAX_STEP_TIMEOUT):
            # tipcgen's runner hands it to `timeout` (empty: unset): 0 would lift every limit, other text fail every step
            raise RunError(f"TIPC_STEP_TIMEOUT={quoted(env['TIPC_STEP_TIMEOUT'][:40])} in the environment is not a step time limit",
                           f"unset it, or pass --step-timeout SECONDS (whole seconds between 1 and {MAX_STEP_TIMEOUT})")

    def start(self, ctx: RunContext, model: str, desc_info: dict[str, Any],
              notes: list[str]) -> tuple[Summary, str | None, dict[str, str], bytes | None]:
        found, record, status = preflight(ctx.root, ctx.config_path, ctx.chain, ctx.env, ctx.mode, ctx.env.get("TIPC_DATA_DIR"),
                                          ctx.desc, desc_info, ctx.sandbox)
        null_kinds = _null_kinds(ctx.text) if chains.honours_null_kinds(ctx.chain) else set()
        summary = Summary(model=model, mode=ctx.mode, config=str(ctx.config_path), chain=ctx.chain,
                          environment=environment_info(), required_kinds=required_kinds(ctx.chain, ctx.mode, null_kinds),
                          provenance=record, notes=list(notes))
        return summary, found, {}, status

    def ready(self, ctx: RunContext) -> None:
        return None

    def write_shim(self, ctx: RunContext, folder: Path) -> None:
        return None

    def line(self, line: str) -> None:
        return None

    def judge_prepare(self, prepare: Step, lines: Iterable[str]) -> None:
        return None  # its exit code is its verdict: tipcgen's prepare.sh stops at the first command that fails

    def runner_starts(self, wait: Callable[[str, str, str], None]) -> None:
        return None  # it waits for tipcgen at each step (the handshake)

    def records(self, ctx: RunContext, summary: Summary, prepare: Step | None) -> tuple[list[Step], list[str], list[str]]:
        passed = prepare is not None and prepare.status == PASSED
        steps, problems = read_records(ctx.run_dir, ctx.root) if passed else ([], [])
        return steps, [], problems + check_status_lines(ctx.run_dir, steps, RESULT_LOGS[summary.chain])

    def proof_notes(self, steps: list[Step]) -> list[str]:
        return []

    def shim_notes(self, ctx: RunContext, folder: Path) -> list[str]:
        return []

    def finish(self, ctx: RunContext, summary: Summary, prepare: Step | None, steps: list[Step],
               runner_out: list[str], stuck: bool) -> None:
        code, missing = summary.runner_exit_code, summary.missing_kinds()
        # stuck: its problem line says why the runner stopped: not again here
        if prepare is not None and prepare.status == PASSED and not summary.interrupted and not steps and not stuck:
            summary.problems.append("the runner stopped before any step: " + " | ".join(runner_out[-5:]))
        if code is not None and code not in (0, 1, 130) and steps and not stuck:
            summary.problems.append(f"the runner stopped with {exit_text(code)}: " + " | ".join(runner_out[-3:]))
        if code == 0 and missing and not summary.interrupted:
            summary.problems.append(f"no {', no '.join(missing)} step passed, but {summary.mode} needs "
                                    f"{', '.join(summary.required_kinds)} (check the trainer list, gpu_list and the device values)")
        summary.target = target_check.against_target(ctx.desc, summary.mode, summary.chain,
                                                     [(s.name, s.metrics) for s in steps if s.kind == EVAL and s.status == PASSED])


def driver_of(root: Path, chain: str) -> Driver:
    """The runner's driver: the repository's own where init --submission kept it (the basic chain), else tipcgen's."""
    if chain == chains.BASIC and submission.is_submission(root):
        return submission_run.KeptRunner()
    return TipcgenRunner()


@dataclass(frozen=True)
class RunContext:
    """One run's fixed facts, handed down as one value: the request, the repository, the config (its path
    and text), the chain and mode (prepare.sh's mode may differ: benchmark_train), the run folder, the steps'
    environment, the descriptor (loaded once, by _prepare), the runner's driver (tipcgen's or the repository's
    own: init --submission) and the chain's interpreter."""

    request: RunRequest
    root: Path
    config_path: Path
    text: str
    chain: str
    mode: str
    prepare_mode: str
    run_dir: Path
    env: dict[str, str]
    desc: Any
    driver: Driver  # what differs between tipcgen's runner and a kept one (Driver)
    python: str | None = None  # the chain's interpreter (its full path), for the proofs
    sandbox: Spec | None = None  # run --sandbox: the chain's sandbox (run/sandboxed.py)
    shim: dict[str, str] = field(default_factory=dict)  # a kept runner's interpreter names -> the one to run
    git_status: bytes | None = None  # the preflight's git probe: the first tracked-files snapshot (None: take one)

    @property
    def on_line(self) -> Callable[[str], None]:
        return self.request.line

    @property
    def kept(self) -> bool:
        """The repository's own runner drives the chain (run/submission_run.py)."""
        return self.driver.kept


def _null_kinds(text: str) -> set[str]:
    """The step kinds a basic config turns off: a null eval or inference command, or no export at all."""
    lines = TipcConfig.parse(text).logical_lines()

    def is_null(name: str) -> bool:
        index = layout.SLOT_BY_NAME[name].index
        value = (lines[index].value or "").strip() if index < len(lines) else ""
        return value in ("", "null")

    # A step kind is off when every command the description gives its step is null.
    return {kind for kind in (EVAL, EXPORT, INFER)
            if all(is_null(slot.name) for slot in slots_of_step(kind) if slot.shape == "command")}


def run(request: RunRequest, proofs: Proofs = NO_PROOFS) -> Summary:
    """The one pipeline of a run, for tipcgen's runner and a kept one (init --submission) alike: prepare
    (every refusal, the environment, the preflight) → the scripts (prepare.sh, the runner) → their records →
    the proofs (``proofs.check_exports``, the tracked files) → the outputs (summary.json, junit.xml); under the
    run folder's lock, with SIGINT/SIGTERM/SIGHUP turned into an interrupted summary. proofs: the checks that
    live above run/ (the CLI hands in configs/preflight.refuse and repro/export_check.check_exports)."""
    ctx, summary = _prepare(request, proofs)
    if request.on_run_dir is not None:
        request.on_run_dir(ctx.run_dir)
    with run_guard.run_lock(ctx.run_dir, ctx.env[run_guard.RUN_ID_VAR], ctx.on_line), \
            run_guard.StopSignals() as signals, run_guard.Leftovers(ctx.env[run_guard.RUN_ID_VAR]) as leftovers:
        if ctx.driver.moves_aside:  # a kept runner keeps its folder as upstream's do (mkdir -p, its log appended)
            summary.previous = keep_previous(ctx.root, ctx.run_dir)
        pipeline = _Pipeline(ctx, summary, proofs, signals)
        pipeline.leftovers = leftovers  # a step's daemon ends before the records are read (issue #59 item 4)
        return pipeline.run()


def keep_previous(root: Path, run_dir: Path) -> str:
    """The last run of this folder moved aside to <run folder>.previous (paths.PREVIOUS; an older one replaced),
    without its weight files, under the run lock and before prepare.sh starts: its summary, junit.xml, report and
    logs survive this run whatever becomes of it (a failed prepare, a Ctrl-C), and no checkpoint of it is left to
    pass for this run's training (repro/record.py leaves test_tipc/output's untracked files out of the weights
    before a training: an honest seeded training may write the very same bytes) or to be taken as the newest train
    run (prepare.sh). The runner does the same (tipc_preflight.py's keep_previous) when it is run by hand; under tipcgen run the
    folder is gone by then. The folder moved aside, relative to root; empty when there was no run folder."""
    previous = paths.previous_dir(run_dir)
    if not writes.move_aside(root, run_dir, previous, paths.is_weight_file, "the previous run's folder"):
        return ""
    return previous.relative_to(root).as_posix()


def _prepare(request: RunRequest, proofs: Proofs) -> tuple[RunContext, Summary]:
    """Everything before a script starts: the request checked (each option that cannot apply refused by
    name), the config found, the descriptor loaded once, the environment, the config's refusals and the driver's
    start (tipcgen's runner: the preflight); the summary the run starts from. Writes nothing."""
    mode, chain = check_mode(request.mode), request.chain
    if chain not in RUNNERS:
        raise RunError(f"unknown chain '{chain}'", "use one of: " + ", ".join(RUNNERS))
    prepare_mode = mode
    if chain == words.BENCHMARK_TRAIN:
        if mode not in BENCHMARK_DATA_MODES:
            raise RunError(f"--mode {mode} readies no training data for benchmark_train",
                           "use --mode " + " or --mode ".join(BENCHMARK_DATA_MODES) + " (the data the cases train on)")
        mode = words.BENCHMARK_TRAIN
    root = request.root.resolve()
    config_path = find_config(request.config, root, chain)
    model = model_name_of(root / config_path)
    run_dir = paths.run_dir(root, model, mode, chain)
    # Before anything runs (prepare.sh and the runner write into test_tipc/output themselves): no link on the
    # way to the run folder, from the repository root down.
    writes.check_no_links(root, run_dir, "the run folder", inside=True)
    desc, desc_info = provenance.load_descriptor(root, model)
    driver = driver_of(root, chain)
    _check_options(request)
    driver.check_options(request)
    for script in driver.scripts(chain):
        if not (root / script).is_file():
            if script == RUNNERS[words.BENCHMARK_TRAIN]:
                raise RunError(f"{script} is missing under {root}: the descriptor has no benchmark section",
                               "add benchmark: {batch_size: [8], epoch: 4} to the descriptor (docs/DESCRIPTOR.md), "
                               "then tipcgen update (or init --force)")
            raise RunError(f"{script} is missing under {root}", "render it with tipcgen init, and run from the repository root")
    if shutil.which("bash") is None:
        raise RunError("bash is not installed", "the TIPC scripts are bash scripts: install bash")
    text = (root / config_path).read_text(encoding="utf-8", errors="replace")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    driver.environment(env, desc, desc_info)
    if request.python is not None:
        env["TIPC_PYTHON"] = request.python
    if request.data_dir is not None:
        env["TIPC_DATA_DIR"] = str(Path(request.data_dir).resolve())
    if request.model_dir is not None:
        env["TIPC_MODEL_DIR"] = str(Path(request.model_dir).resolve())
    if request.step_timeout is not None:
        env["TIPC_STEP_TIMEOUT"] = str(request.step_timeout)
    driver.check_environment(request, env)
    spec = (sandboxed.spec(root, run_dir, env, shutil.which(env.get("TIPC_PYTHON", "python"), path=env.get("PATH")))
            if request.sandbox else None)
    notes = proofs.refuse(root, config_path, env, desc) or []
    ctx = RunContext(request, root, config_path, text, chain, mode, prepare_mode, run_dir, env, desc, driver, sandbox=spec)
    summary, found, shim, status = driver.start(ctx, model, desc_info, notes)
    env[run_guard.RUN_ID_VAR] = uuid.uuid4().hex
    return dataclasses.replace(ctx, python=found, shim=shim, git_status=status), summary


def _check_options(request: RunRequest) -> None:
    """Each option that names a folder names one (an option that cannot apply to the runner: Driver.check_options)."""
    if request.data_dir is not None and not Path(request.data_dir).is_dir():
        raise RunError(f"--data-dir {request.data_dir} is not a folder", "name the folder that holds the whole data set")
    if request.model_dir is not None and not Path(request.model_dir).is_dir():
        raise RunError(f"--model-dir {request.model_dir} is not a folder", "name a train output folder (it holds the checkpoint)")


class _Pipeline:
    """One run's stages after _prepare, on one context: the scripts, their records, the proofs, the outputs."""

    leftovers: run_guard.Leftovers | None = None  # what the scripts left running, ended before the records

    def __init__(self, ctx: RunContext, summary: Summary, proofs: Proofs, signals: run_guard.StopSignals) -> None:
        self.ctx, self.summary, self.proofs, self.signals = ctx, summary, proofs, signals
        self.problems = list(summary.problems)  # those known before the scripts (a kept runner's edited files)
        self.prepare_cmd = ["bash", PREPARE_SH, str(ctx.config_path), ctx.prepare_mode]
        self.runner_cmd = ["bash", RUNNERS[ctx.chain], str(ctx.config_path), ctx.mode]
        self.driver = ctx.driver
        self.prepare: Step | None = None  # a kept runner may come without prepare.sh
        if PREPARE_SH in self.driver.scripts(ctx.chain) or (ctx.root / PREPARE_SH).is_file():
            self.prepare = Step(kind=PREPARE, name="prepare", status=FAILED, log="", command=" ".join(self.prepare_cmd))
        self.prepare_done = False
        self.prepare_stuck: str | None = None  # why prepare.sh was stopped for its silence
        self.runner_stuck = False  # the runner was (its problem line says so)
        self.prepare_out: deque = process.LineTail(200_000, 16 << 20)  # prepare.sh's output (its last 16 MB): prepare.log
        self.runner_out: deque = deque(maxlen=50)  # the runner's last lines
        self.driver.ready(ctx)
        self.parts: list[tuple[str, dict[str, str] | None]] = []  # git status before and after each part
        self._recorder: Records | None = None  # made beside prepare.sh (_prime) or at the first handshake
        self._recorder_lock = threading.Lock()
        self.untracked: list[set[str] | None] = []  # the untracked files before and after the runner's steps
        self.work = _Chain(ctx.root, ctx.env, self._line, ctx.sandbox,
                           silence_limit(ctx.request, ctx.env, ctx.root, not self.driver.bounded), self._wait)
        self.shim_dir = ctx.root / paths.SHIM_DIR / ctx.env[run_guard.RUN_ID_VAR]
        self.started = time.perf_counter()

    def _line(self, line: str) -> None:
        self.driver.line(line)
        self.ctx.on_line(line)

    @property
    def records(self) -> Records:
        """This run's records (Proofs.recorder), made when first needed (by the thread that primes them, or the
        first handshake)."""
        with self._recorder_lock:
            if self._recorder is None:
                ctx = self.ctx
                self._recorder = self.proofs.recorder(ctx.root, ctx.run_dir, ctx.request.max_checkpoint_bytes,
                                                     self.driver.handshake, ctx.env)
            return self._recorder

    def _prime(self) -> None:
        try:
            self.records.prime()
        except Exception:  # noqa: BLE001 - a cache only: the handshake reads again, and says what fails
            pass

    def _wait(self, when: str, kind: str, name: str) -> None:
        """The runner's handshake: the records taken while it waits (a step about to start, a training ended:
        its output folder from the record the runner has just written). A record that cannot be taken is a
        problem of the run (the proofs then hold no record of that training, and fail)."""
        try:
            if when == words.WAIT_BESIDE:
                self.records.beside(kind, name)
            if when in (words.WAIT_START, words.WAIT_BESIDE):
                self.records.started(kind, name)
            else:
                self.records.ended(kind, name, last_model_dir(self.ctx.run_dir, kind, name))
        except run_guard.Interrupted:
            raise  # a stop signal: the run stops (never a record's failure)
        except Exception as exc:  # noqa: BLE001 - said as the run's problem, the proof then fails
            self.problems.append(f"tipcgen could not record what {kind} {name} wrote ({type(exc).__name__}: {exc})")

    def run(self) -> Summary:
        ctx, summary = self.ctx, self.summary
        try:
            try:
                self._scripts()
            except run_guard.Interrupted as exc:
                self._interrupted(exc.signum)
            if self.leftovers is not None:
                self.leftovers.end()
            if self.signals.received is not None and not summary.interrupted:  # it came as the scripts ended
                summary.interrupted, summary.interrupted_by = True, signal.Signals(self.signals.received).name
            self._outputs(proofs=not summary.interrupted)
        finally:
            if ctx.shim:
                writes.remove_tree(ctx.root, self.shim_dir, "the run's interpreter shim")
        if self.driver.refuses and not summary.interrupted:  # tipcgen's scripts exit 2 when they refuse to start
            prepare = self.prepare
            stopped = (self.prepare_out if prepare is not None and prepare.exit_code == 2 else
                       self.runner_out if summary.runner_exit_code == 2 and not summary.steps[1:] else None)
            if stopped is not None:
                raise ScriptError.from_lines(list(stopped))
        return summary

    def _scripts(self) -> None:
        """prepare.sh, then the runner (after a prepare that passed, where the driver is gated: tipcgen's; a kept
        one whatever prepare did, as a reviewer would run it). git status is read before and after each part
        (run/tracked.py)."""
        ctx, prepare, root = self.ctx, self.prepare, self.ctx.root
        # What the proofs and the outputs import (numpy, jinja: ~0.4 s) loads while the scripts run, not after them.
        threading.Thread(target=_load_after_parts, args=(self.proofs,), name="tipcgen-load", daemon=True).start()
        # The repository's weight files, read once beside prepare.sh: the first training's handshake rereads only changes.
        threading.Thread(target=self._prime, name="tipcgen-prime", daemon=True).start()
        self.driver.write_shim(ctx, self.shim_dir)
        # git status, to find tracked files a part changed; the first is the preflight's git probe's answer
        self.parts = [("before the run", tracked.from_status(root, ctx.git_status) if ctx.git_status is not None
                       else tracked.snapshot(root))]
        if self.summary.previous and self.parts[0][1] is not None:  # the preflight's git status came before the move
            self.parts.append((f"moving the last run aside (to {self.summary.previous})", tracked.snapshot(root)))
        if prepare is not None:
            prepare.exit_code = self.work.stream(self.prepare_cmd, self.prepare_out)
            prepare.seconds = round(time.perf_counter() - self.started, 3)
            self.prepare_done = True
            self.prepare_stuck = self.work.stuck
            if self.parts[0][1] is not None:  # one git status: the tracked files prepare changed, the untracked after it
                state, files = tracked.snapshot_and_untracked(root)
                self.parts.append((PREPARE_SH.rsplit("/", 1)[-1], state))
                self.untracked.append(files)
            prepare.status = PASSED if prepare.exit_code == 0 else FAILED
            self.driver.judge_prepare(prepare, self.prepare_out)
        if self._runner_runs():
            self.driver.runner_starts(self._wait)
            if self.parts[0][1] is not None and not self.untracked:  # no prepare.sh (a kept runner): untracked now
                self.untracked.append(tracked.snapshot_and_untracked(root)[1])
            self.summary.runner_exit_code = self.work.stream(self.runner_cmd, self.runner_out,
                                                            answer=self.driver.handshake)
            if self.work.stuck is not None:
                self.runner_stuck = True
                self.problems.append(self.work.stuck)
            if self.parts[0][1] is not None:  # what the steps left untracked is said (results/unchecked)
                state, files = tracked.snapshot_and_untracked(root)
                self.parts.append(("the runner's steps", state))
                self.untracked.append(files)
        self.signals.armed = False

    def _runner_runs(self) -> bool:
        """The runner runs (ran) after this prepare: always where the driver is not gated or there is no prepare.sh."""
        return self.prepare is None or self.prepare.status == PASSED or not self.driver.gated

    def _interrupted(self, signum: int) -> None:
        """A stop signal while a script ran: the summary first (a CI cancel may KILL us soon), then every process
        of the run stopped, then (in run) the final summary."""
        summary, env, prepare = self.summary, self.ctx.env, self.prepare
        self.signals.armed = False
        summary.interrupted, summary.interrupted_by = True, signal.Signals(signum).name
        run_guard.signal_run_processes(env[run_guard.RUN_ID_VAR], signal.SIGTERM)
        if prepare is not None and not self.prepare_done:
            prepare.seconds = round(time.perf_counter() - self.started, 3)
        self._outputs(proofs=False)
        runner_started = self.work.proc is not None and RUNNERS[self.ctx.chain] in self.work.proc.args
        code = self.work.stop(self.runner_out if runner_started else self.prepare_out)
        if runner_started:
            summary.runner_exit_code = code
        elif prepare is not None and not self.prepare_done:
            prepare.exit_code = code

    def _records(self) -> tuple[list[Step], list[str]]:
        """The runner's steps and the problems its records show (Driver.records: tipcgen's steps.jsonl and status
        log, or a kept runner's status lines); the notes on where they were read join the summary's."""
        steps, notes, problems = self.driver.records(self.ctx, self.summary, self.prepare)
        self.summary.notes.extend(note for note in notes if note not in self.summary.notes)
        return steps, problems

    def _proofs(self, steps: list[Step]) -> tuple[list[Step], list[str]]:
        """The check steps of a run that ended without an interrupt: the proofs handed in (the export's
        parameters, where the runner ran; a kept runner's outputs where its commands name them), then the
        tracked files."""
        ctx = self.ctx
        extra: list[Step] = []
        notes: list[str] = []
        if self._runner_runs():
            extra, notes = self.proofs.check_exports(ctx.root, steps, ctx.text, ctx.python, ctx.env, self.records,
                                                     ctx.request.max_checkpoint_bytes)
            notes = [*notes, *self.driver.proof_notes(steps)]
        step = tracked.check_step(self.parts, ctx.root, steps, self.work.starts)
        return [*extra, *([step] if step is not None else [])], notes

    def _outputs(self, proofs: bool) -> None:
        """Build the summary from what the scripts left on disk (and the proofs, when asked: only once the
        run has ended without an interrupt), and write prepare.log, summary.json and junit.xml."""
        ctx, summary, prepare = self.ctx, self.summary, self.prepare
        root, run_dir = ctx.root, ctx.run_dir
        if prepare is not None and prepare.status != PASSED:
            if not self._runner_runs():  # no runner ran: an older run's files must not be read
                writes.remove_tree(root, run_dir, "the run folder")
            if not prepare.reason:  # a kept runner's judge_prepare names a failure its log shows
                # gated: no runner ran, so an interrupt stopped prepare.sh; else only one before it finished did
                stopped = summary.interrupted if self.driver.gated else not self.prepare_done
                prepare.reason = INTERRUPTED if stopped else self.prepare_stuck or exit_text(prepare.exit_code)
            if prepare.reason == INTERRUPTED:  # cut short by the stop signal, as a runner's step (summary.read_records)
                prepare.status = INTERRUPTED
            prepare.tail = list(self.prepare_out)[-20:]
        writes.make_dirs(root, run_dir, "the run folder")
        if prepare is not None:
            write_file(run_dir / PREPARE_LOG, "\n".join(self.prepare_out) + "\n", within=root)
            prepare.log = str((run_dir / PREPARE_LOG).relative_to(root))
        steps, problems = self._records()
        summary.problems = self.problems + problems
        if proofs:
            extra, notes = self._proofs(steps)
            steps = [*steps, *extra]
            summary.notes.extend(note for note in notes if note not in summary.notes)
        summary.steps = [*([prepare] if prepare is not None else []), *steps]
        if proofs:
            summary.notes.extend(note for note in self._unchecked() if note not in summary.notes)
        summary.problems.extend(f"{step.kind} {step.name} did not run ({step.reason or step.status}): a PASSED verdict "
                                "needs this proof" for step in summary.unproven())
        _explain_failures(summary, ctx)
        _note_seeds(summary, root)
        if ctx.sandbox is not None:
            sandboxed.explain_network(summary, root)
        summary.notes.extend(note for note in self.driver.shim_notes(ctx, self.shim_dir) if note not in summary.notes)
        self.driver.finish(ctx, summary, prepare, steps, list(self.runner_out), self.runner_stuck)
        summary.wall_seconds = round(time.perf_counter() - self.started, 3)
        write_json(summary, run_dir / SUMMARY_JSON)
        from tipcgen.results.summary_text import write_junit  # loaded beside the scripts (_scripts)

        write_junit(summary, run_dir / JUNIT_XML)

    def _unchecked(self) -> list[str]:
        """What the run did not check (results/unchecked): no eval, a check that compared nothing, files the
        runner's steps left untracked, a committed model file the inference script names."""
        ctx, summary = self.ctx, self.summary
        notes = unchecked.summary_notes(summary)
        if len(self.untracked) == 2 and None not in self.untracked:
            before, after = self.untracked
            notes.append(unchecked.left_behind(sorted(after - before)))  # type: ignore[operator]
        if ctx.desc is not None and self.parts and self.parts[0][1] is not None and any(
                s.kind == INFER and s.status == PASSED for s in summary.steps):
            try:
                script = legacy_format.script_of(ctx.desc.slot_of("inference.script").value)
            except KeyError:
                script = None
            notes.append(unchecked.committed_reads(_committed_reads(ctx.root, script)))
        return [note for note in notes if note]


def last_model_dir(run_dir: Path, kind: str, name: str) -> str | None:
    """The output folder (model_dir) of the runner's last record of step KIND NAME (the record it wrote just
    before its handshake): in the run folder's steps.jsonl, else in one a folder below (the dy2static chain's
    trainings run the basic runner there); None where there is none."""
    for path in [run_dir / RECORDS, *sorted(run_dir.glob(f"*/{RECORDS}"))]:
        try:  # a regular file inside the run folder, its last MiB (core/inputs.py: no FIFO, device or link out)
            lines = inputs.tail(path, "step records", 1 << 20, run_dir).decode("utf-8", errors="replace").splitlines()
        except (TipcgenError, OSError):
            continue
        for line in reversed(lines):
            try:
                raw = json.loads(line)
            except ValueError:
                continue
            if isinstance(raw, dict) and raw.get("kind") == kind and raw.get("name") == name:
                value = raw.get("model_dir")
                return value if isinstance(value, str) and value else None
    return None


def _committed_reads(root: Path, script: str | None) -> list[tuple[str, str]]:
    """The committed model files ``script`` names by a literal path (relative to the root or to the script)."""
    if not script or not (root / script).is_file():
        return []
    try:  # a regular file inside the repository (core/inputs.py)
        text = inputs.read_text(inputs.within(root / script, root), script)
    except (TipcgenError, ValueError):
        return []
    found: dict[str, str] = {}
    for literal, line in script_reading.model_file_literals(text):
        for base in (Path("."), Path(script).parent):
            rel = os.path.normpath(base / literal)
            if not rel.startswith(".."):
                found.setdefault(rel, f"{script}:{line}")
    tracked_paths = tracked.committed(root, sorted(found))
    return [(path, where) for path, where in found.items() if path in tracked_paths]


def _load_after_parts(proofs: Proofs) -> None:
    """Import the modules the end of a run needs (the proofs' and the summary writer's), in a thread beside the
    scripts; an import that fails here fails again, with its traceback, where the module is used."""
    try:
        proofs.load()
        from tipcgen.results import summary_text  # noqa: F401
    except Exception:  # noqa: BLE001 - said where the module is imported for use
        pass


def _explain_failures(summary: Summary, ctx: RunContext) -> None:
    """One line under each failed step: its log's tail matched against what tipcgen knows (results/explain.py)."""
    failed = [s for s in summary.steps if s.status == FAILED and not s.hint]
    if not failed:
        return
    known = explain.known_of(ctx.desc, ctx.root, frozenset(s.kind for s in summary.steps if s.status == FAILED))
    for step in failed:
        lines = (list(step.tail) if step.kind == PREPARE or not step.log
                 else log_tail(ctx.root / step.log, explain.TAIL_LINES, ctx.root))
        step.hint = explain.explain([*lines, step.reason], step.kind, known, step.command)


def _note_seeds(summary: Summary, root: Path) -> None:
    """The seeds the training logs print join the provenance; a golden check that fails after an unseeded
    training says the difference may be the randomness, not the model."""
    if "seeds" in summary.provenance:
        summary.provenance["seeds"].update(seeds.log_seeds(root, [s.log for s in summary.steps if s.kind == TRAIN and s.log]))
    if seeds.seeded(summary.provenance) is False:
        for step in summary.steps:
            if step.kind == CHECK and step.check.reference == chains.GOLDEN and step.status == FAILED and seeds.UNSEEDED not in (step.note or ""):
                step.note = f"{step.note}; {seeds.UNSEEDED}" if step.note else seeds.UNSEEDED


def exit_text(code: int | None) -> str:
    """A script's exit as what it was: `exit code 241`, or `killed by signal SIGKILL` (Popen's -N)."""
    if code is None:
        return "no exit code (it did not start)"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
