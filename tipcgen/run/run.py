"""Run a chain exactly as a reviewer does: ``bash test_tipc/prepare.sh`` then the runner.

Both scripts run as subprocesses from the repository root; their output is streamed line by
line to a callback (progress), and the summary is read from what the runner leaves on disk.
There is no private execution path.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
import uuid
from collections import deque
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable

from tipcgen.configs import flag_check, submission
from tipcgen.configs.locate import find_config
from tipcgen.core import process
from tipcgen.core.errors import RunError, ScriptError
from tipcgen.core import writes
from tipcgen.core.sandbox import Spec
from tipcgen.core.writes import write_file
from tipcgen.core.text import quoted
from tipcgen.descriptor.schema import MODEL_NAME_HINT, is_model_name
from tipcgen.format import layout, paths, words
from tipcgen.format.chain import slots_of_step
from tipcgen.format.config import TipcConfig, model_name_in
from tipcgen.format.paths import JUNIT_XML, PREPARE_LOG, PREPARE_SH, RESULT_LOGS, RUNNERS, SUMMARY_JSON
from tipcgen.format.words import CHECK, EVAL, EXPORT, FAILED, INFER, PADDLE_PIN, PASSED, PREPARE, TRAIN
from tipcgen.results.results import (
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
from tipcgen.results.summary_text import write_junit
from tipcgen.results import target_check
from tipcgen.run import guard as run_guard
from tipcgen.run import provenance, sandboxed, seeds, submission_run, tracked

# benchmark_train is its own mode (upstream's); --mode then names the data prepare.sh readies.
BENCHMARK_DATA_MODES = (words.LITE_TRAIN_LITE_INFER, words.WHOLE_TRAIN_WHOLE_INFER)


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
    sum. desc, desc_info: the descriptor run_chain loaded (or None) and its hashes (provenance.load_descriptor).

    Returns the chain's interpreter (its full path), the provenance record and the git probe's answer
    (``git status --porcelain=v2 -z``; None without one): the run's first tracked-files snapshot."""
    text = (root / config_path).read_text(encoding="utf-8", errors="replace")
    python, found = flag_check.interpreter(text, env)
    check = _start_layout_check(config_path, root, chain, env, mode, sandbox)
    probes = provenance.Probes(root, found, env)
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
                 sandbox: Spec | None = None) -> None:
        self.root, self.env, self.on_line, self.sandbox = root, env, on_line, sandbox
        self.proc: process.Running | None = None
        self.keep: deque | None = None
        self.stopping = False
        self.starts: list[tuple[float, str, str]] = []  # (time, kind, name) of each `[tipc] RUN` line

    def _line(self, line: str) -> None:
        if self.keep is not None:
            self.keep.append(line)
        if self.stopping:
            return  # after an interrupt the lines are kept, not shown
        if words.progress_mark(line) == words.STARTED and len(line.split()) >= 4:
            self.starts.append((time.time(), *line.split()[2:4]))
        self.on_line(line)

    def stream(self, cmd: list[str], keep: deque) -> int:
        """Run cmd to its end, passing each output line to on_line; its exit code (-N: killed by signal N)."""
        self.keep = keep
        self.proc = process.start(process.Request(cmd, cwd=self.root, env=self.env, on_line=self._line,
                                                  output_cap=1 << 16, sandbox=self.sandbox, grace=1.0))
        code = self.proc.finish().exit_code
        return -1 if code is None else code

    def stop(self, keep: deque) -> int | None:
        """After an interrupt: let the script finish its records for a short grace, then stop every
        process of the run; the script's exit code, if it had started."""
        if self.proc is None:
            return None
        self.keep, self.stopping = keep, True
        outcome = self.proc.finish(until=time.monotonic() + run_guard.GRACE_SECONDS)
        run_guard.stop_run_processes(self.env[run_guard.RUN_ID_VAR], grace=1.0)
        return outcome.exit_code


@dataclass(frozen=True)
class RunContext:
    """One run's fixed facts, handed down as one value: the repository, the config, the chain and mode
    (prepare.sh's mode may differ: benchmark_train), the run folder, the steps' environment, the
    descriptor (loaded once, by run_chain) and where progress lines go."""

    root: Path
    config_path: Path
    chain: str
    mode: str
    prepare_mode: str
    run_dir: Path
    env: dict[str, str]
    desc: Any
    on_line: Callable[[str], None]
    sandbox: Spec | None = None  # run --sandbox: the chain's sandbox (run/sandboxed.py)
    git_status: bytes | None = None  # the preflight's git probe: the first tracked-files snapshot (None: take one)


@dataclass
class _Outputs:
    """What the scripts printed (prepare.sh's whole output for prepare.log, the runner's last lines) and the
    prepare step being built; `started` times the whole run."""

    prepare: Step
    started: float
    prepare_out: deque = field(default_factory=lambda: deque(maxlen=200_000))
    runner_out: deque = field(default_factory=lambda: deque(maxlen=50))


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


def run_chain(mode: str, root: Path, config: str | None = None, data_dir: str | None = None,
              step_timeout: int | None = None, chain: str = "basic", model_dir: str | None = None,
              on_line: Callable[[str], None] = lambda line: None,
              check_config: Callable[..., list[str] | None] = lambda root, config_path, env, desc: None,
              python: str | None = None,
              check_run: Callable[..., tuple[list[Step], list[str]]] = lambda *args, **kwargs: ([], []),
              sandbox: bool = False) -> Summary:
    """check_config(root, config path relative to it, the run's environment, the descriptor) refuses a
    config before anything starts, and returns notes the summary records (the CLI passes preflight.refuse:
    config-level checks live above this module). The descriptor is loaded once, here, and handed down.
    python: the interpreter for this run (TIPC_PYTHON), whatever the config's python: line says. check_run(root, steps, config text, interpreter, env,
    starts=[(time, kind, name) of each step's start]) gives the check steps and notes of a finished run (the CLI passes repro.export_check.check_run: it reads
    checkpoints with repro's safe reader, which sits above this module). sandbox: prepare.sh and the runner
    run in the sandbox (run/sandboxed.py; a RunError where none can be had)."""
    check_mode(mode)
    if chain not in RUNNERS:
        raise RunError(f"unknown chain '{chain}'", "use one of: " + ", ".join(RUNNERS))
    prepare_mode = mode
    if chain == "benchmark_train":
        if mode not in BENCHMARK_DATA_MODES:
            raise RunError(f"--mode {mode} readies no training data for benchmark_train",
                           "use --mode " + " or --mode ".join(BENCHMARK_DATA_MODES) + " (the data the cases train on)")
        mode = words.BENCHMARK_TRAIN
    root = root.resolve()
    config_path = find_config(config, root, chain)
    model = model_name_of(root / config_path)
    # Before anything runs (prepare.sh and the runner write into test_tipc/output themselves): no link on the
    # way to the run folder, from the repository root down.
    writes.check_no_links(root, paths.run_dir(root, model, mode, chain), "the run folder", inside=True)
    desc, desc_info = provenance.load_descriptor(root, model)
    if chain == "basic" and submission.is_submission(root):  # the repository's own runner (init --submission)
        check_config(root, config_path, dict(os.environ, **({"TIPC_PYTHON": python} if python else {})), desc)
        run_dir = paths.run_dir(root, model, mode, chain)
        spec = sandboxed.spec(root, run_dir, dict(os.environ), shutil.which(python or "python")) if sandbox else None
        return submission_run.run(mode, root, config_path, run_dir, on_line, (desc, desc_info), sandbox=spec)
    if data_dir is not None and not Path(data_dir).is_dir():
        raise RunError(f"--data-dir {data_dir} is not a folder", "name the folder that holds the whole data set")
    for script in (PREPARE_SH, RUNNERS[chain]):
        if not (root / script).is_file():
            if script == RUNNERS["benchmark_train"]:
                raise RunError(f"{script} is missing under {root}: the descriptor has no benchmark section",
                               "add benchmark: {batch_size: [8], epoch: 4} to the descriptor (docs/DESCRIPTOR.md), "
                               "then tipcgen update (or init --force)")
            raise RunError(f"{script} is missing under {root}", "render it with tipcgen init, and run from the repository root")
    if shutil.which("bash") is None:
        raise RunError("bash is not installed", "the TIPC scripts are bash scripts: install bash")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("GLOG_minloglevel", "2")
    if python is not None:
        env["TIPC_PYTHON"] = python
    if data_dir is not None:
        env["TIPC_DATA_DIR"] = str(Path(data_dir).resolve())
    if model_dir is not None:
        if not Path(model_dir).is_dir():
            raise RunError(f"--model-dir {model_dir} is not a folder", "name a train output folder (it holds the checkpoint)")
        env["TIPC_MODEL_DIR"] = str(Path(model_dir).resolve())
    if step_timeout is not None:
        env["TIPC_STEP_TIMEOUT"] = str(step_timeout)

    spec = (sandboxed.spec(root, paths.run_dir(root, model, mode, chain), env,
                           shutil.which(env.get("TIPC_PYTHON", "python"), path=env.get("PATH"))) if sandbox else None)
    notes = check_config(root, config_path, env, desc) or []
    found, record, status = preflight(root, config_path, chain, env, mode, env.get("TIPC_DATA_DIR"), desc, desc_info, spec)
    run_dir = paths.run_dir(root, model, mode, chain)
    text = (root / config_path).read_text(encoding="utf-8", errors="replace")
    summary = Summary(model=model, mode=mode, config=str(config_path), chain=chain, environment=environment_info(),
                      required_kinds=required_kinds(chain, mode, _null_kinds(text) if chain in ("basic", "fleet") else set()),
                      provenance=record, notes=list(notes))
    env[run_guard.RUN_ID_VAR] = uuid.uuid4().hex
    context = RunContext(root, config_path, chain, mode, prepare_mode, run_dir, env, desc, on_line, spec, status)
    with run_guard.run_lock(run_dir, env[run_guard.RUN_ID_VAR], on_line), run_guard.StopSignals() as signals:
        return _run(summary, context, signals,
                    lambda steps, starts: check_run(root, steps, text, found, env, starts=starts))


def _run(summary: Summary, ctx: RunContext, signals: run_guard.StopSignals,
         check_run: Callable[[list[Step], list], tuple[list[Step], list[str]]]) -> Summary:
    root, env = ctx.root, ctx.env
    # git status, to find tracked files a part changed; the first is the preflight's git probe's answer
    parts = [("before the run", tracked.from_status(root, ctx.git_status) if ctx.git_status is not None
              else tracked.snapshot(root))]
    prepare_cmd = ["bash", PREPARE_SH, str(ctx.config_path), ctx.prepare_mode]
    out = _Outputs(Step(kind=PREPARE, name="prepare", status=FAILED, log="", command=" ".join(prepare_cmd)),
                   time.perf_counter())
    prepare, prepare_out, runner_out, t0 = out.prepare, out.prepare_out, out.runner_out, out.started
    work = _Chain(root, env, ctx.on_line, ctx.sandbox)
    try:
        prepare.exit_code = work.stream(prepare_cmd, prepare_out)
        prepare.seconds = round(time.perf_counter() - t0, 3)
        if parts[0][1] is not None:
            parts.append((PREPARE_SH.rsplit("/", 1)[-1], tracked.snapshot(root)))
        if prepare.exit_code == 0:
            prepare.status = PASSED
            summary.runner_exit_code = work.stream(["bash", RUNNERS[ctx.chain], str(ctx.config_path), ctx.mode], runner_out)
            if parts[0][1] is not None:
                parts.append(("the runner's steps", tracked.snapshot(root)))
        signals.armed = False
    except run_guard.Interrupted as exc:
        signals.armed = False
        summary.interrupted, summary.interrupted_by = True, signal.Signals(exc.signum).name
        run_guard.signal_run_processes(env[run_guard.RUN_ID_VAR], signal.SIGTERM)
        if prepare.status == FAILED:
            prepare.seconds = round(time.perf_counter() - t0, 3)
        # The summary first (a CI cancel may KILL us soon), then stop every process, then the final one.
        _finish(summary, ctx, out)
        runner_started = work.proc is not None and RUNNERS[ctx.chain] in work.proc.args
        code = work.stop(runner_out if runner_started else prepare_out)
        if runner_started:
            summary.runner_exit_code = code
        elif prepare.status == FAILED:
            prepare.exit_code = code

    def checks(steps: list[Step]) -> tuple[list[Step], list[str]]:
        extra, notes = check_run(steps, list(work.starts)) if prepare.status == PASSED else ([], [])
        step = tracked.check_step(parts, root, steps, work.starts)
        return [*extra, *([step] if step is not None else [])], notes

    _finish(summary, ctx, out, checks)
    if signals.received is not None and not summary.interrupted:  # it came as the scripts ended
        summary.interrupted, summary.interrupted_by = True, signal.Signals(signals.received).name
        _finish(summary, ctx, out)
    stopped = prepare_out if prepare.exit_code == 2 else runner_out if summary.runner_exit_code == 2 and not summary.steps[1:] else None
    if stopped is not None and not summary.interrupted:
        raise ScriptError.from_lines(list(stopped))
    return summary


def _finish(summary: Summary, ctx: RunContext, out: _Outputs,
            checks: Callable[[list[Step]], tuple[list[Step], list[str]]] | None = None) -> None:
    """Build the summary from what the scripts left on disk, and write summary.json and junit.xml.
    checks (the run's own checks after the scripts: the export's parameters, tracked files) runs
    only once the run has ended without an interrupt."""
    prepare, prepare_out, runner_out, root, run_dir = out.prepare, out.prepare_out, out.runner_out, ctx.root, ctx.run_dir
    if prepare.status != PASSED:
        writes.remove_tree(root, run_dir, "the run folder")  # no runner ran: an older run's files must not be read
        prepare.reason = "interrupted" if summary.interrupted else exit_text(prepare.exit_code)
        prepare.tail = list(prepare_out)[-20:]
    writes.make_dirs(root, run_dir, "the run folder")
    write_file(run_dir / PREPARE_LOG, "\n".join(prepare_out) + "\n", within=root)
    prepare.log = str((run_dir / PREPARE_LOG).relative_to(root))
    steps, problems = read_records(run_dir, root) if prepare.status == PASSED else ([], [])
    summary.problems = problems + check_status_lines(run_dir, steps, RESULT_LOGS[summary.chain])
    if checks is not None and not summary.interrupted:
        extra, notes = checks(steps)
        steps = [*steps, *extra]
        summary.notes.extend(note for note in notes if note not in summary.notes)
    summary.steps = [prepare, *steps]
    summary.problems.extend(f"{step.kind} {step.name} did not run ({step.reason or step.status}): a PASSED verdict "
                            "needs this proof" for step in summary.unproven())
    _explain_failures(summary, ctx)
    _note_seeds(summary, root)
    if ctx.sandbox is not None:
        sandboxed.explain_network(summary, root)
    code = summary.runner_exit_code
    if prepare.status == PASSED and not summary.interrupted and not steps:
        summary.problems.append("the runner stopped before any step: " + " | ".join(list(runner_out)[-5:]))
    if code is not None and code not in (0, 1, 130) and steps:
        summary.problems.append(f"the runner stopped with {exit_text(code)}: " + " | ".join(list(runner_out)[-3:]))
    missing = summary.missing_kinds()
    if code == 0 and missing and not summary.interrupted:
        summary.problems.append(f"no {', no '.join(missing)} step passed, but {summary.mode} needs "
                                f"{', '.join(summary.required_kinds)} (check the trainer list, gpu_list and the device values)")
    summary.target = target_check.check_run(ctx.desc, summary.mode, summary.chain,
                                      [(s.name, s.metrics) for s in steps if s.kind == EVAL and s.status == PASSED])
    summary.wall_seconds = round(time.perf_counter() - out.started, 3)
    write_json(summary, run_dir / SUMMARY_JSON)
    write_junit(summary, run_dir / JUNIT_XML)


def _explain_failures(summary: Summary, ctx: RunContext) -> None:
    """One line under each failed step: its log's tail matched against what tipcgen knows (results/explain.py)."""
    failed = [s for s in summary.steps if s.status == FAILED and not s.hint and s.reason != "interrupted"]
    if not failed:
        return
    known = explain.known_of(ctx.desc, ctx.root)
    for step in failed:
        lines = list(step.tail) if step.kind == PREPARE else log_tail(ctx.root / step.log, explain.TAIL_LINES) if step.log else []
        step.hint = explain.explain([*lines, step.reason], step.kind, known)


def _note_seeds(summary: Summary, root: Path) -> None:
    """The seeds the training logs print join the provenance; a golden check that fails after an unseeded
    training says the difference may be the randomness, not the model."""
    if "seeds" in summary.provenance:
        summary.provenance["seeds"].update(seeds.log_seeds(root, [s.log for s in summary.steps if s.kind == TRAIN and s.log]))
    if seeds.seeded(summary.provenance) is False:
        for step in summary.steps:
            if step.kind == CHECK and step.reference == "golden" and step.status == FAILED and seeds.UNSEEDED not in (step.note or ""):
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
