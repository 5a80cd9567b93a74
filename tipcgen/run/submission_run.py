"""Submission mode at run time: drive the repository's own runner and read the status lines it writes.

The render-time half (which files a submission keeps, the record of their sha256) is submission.py.
Run as a reviewer would: prepare.sh, then the runner even when prepare failed (that step is reported
failed), both with the descriptor's ``env:``. The status lines are read from the results_python.log
the runner names (its ``LOG_PATH``/``status_log`` assignments, read as text), the usual places
(``./log/<model>/<mode>/``, ``./test_tipc/output/<model>[/<mode>]/``), else any results_python.log in the
tree that grew during the run, else the lines the runner printed. What such a runner cannot tell is
said in the summary's notes: its exit status is its last command's, and a step's status is only its
status line (train, eval and export keep no log of their own). ``KeptRunner`` is this runner's driver
(pipeline.Driver): what the one pipeline of run/pipeline.py asks of it where tipcgen's runner differs.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from tipcgen.configs import flag_check
from tipcgen.configs.submission import edited
from tipcgen.core import inputs
from tipcgen.core.errors import RunError, TipcgenError
from tipcgen.core import writes
from tipcgen.core.writes import write_file
from tipcgen.format import layout, paths
from tipcgen.format.chains import BASIC
from tipcgen.format.config import TipcConfig
from tipcgen.format.paths import OUTPUT, RESULTS_LOG, RUNNERS, STATE
from tipcgen.format.words import EVAL, EXPORT, FAILED, INFER, OTHER, PASSED, SKIPPED, TRAIN, WAIT_START
from tipcgen.results.summary import Step, Summary, environment_info, required_kinds
from tipcgen.run import provenance

if TYPE_CHECKING:  # the types of the driver's arguments (run/pipeline.py imports this module)
    from tipcgen.run.request import RunRequest
    from tipcgen.run.pipeline import RunContext

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STATUS = re.compile(r"Run (successfully|failed) with command - (.*)$")
_REDIRECT = re.compile(r">\s*(\S+)\s+2>&1")
NOTES = (
    "the repository's runner drove this chain: its exit status is that of its last command and tells nothing "
    "about the steps before it; the steps and their status come from its results_python.log",
    "train, eval and export keep no log of their own under this runner: their status is their status line",
)


def slot_values(text: str) -> dict[str, str]:
    config = TipcConfig.parse(text)
    table = layout.LAYOUTS[layout.LAYOUT_OF_KIND.get(config.kind, "standard")]
    logical = config.logical_lines()
    slots = [slot for slot in table if slot.kind == "kv" and slot.index < len(logical)]
    # each slot's value under its field, and its key under "<field>:key" (the flag the runner passes)
    return {**{slot.field: (logical[slot.index].value or "").strip() for slot in slots},
            **{f"{slot.field}:key": logical[slot.index].key.strip() for slot in slots}}


def _classify(command: str, values: dict[str, str]) -> str:
    """The step kind of a command: the config command it runs (the longest that matches)."""
    words = command.split(maxsplit=1)
    rest = words[1] if len(words) > 1 else ""
    kinds = [(EVAL, values.get("eval.script", "")), (INFER, values.get("inference.script", ""))]
    kinds += [(TRAIN, values.get(fld, "")) for fld in ("train.norm", "train.pact", "train.fpgm", "train.distill")]
    kinds += [(EXPORT, values.get(fld, "")) for fld in ("export.norm", "whole_infer.export", "export.quant")]
    found = [(len(script), kind) for kind, script in kinds
             if script and script != "null" and (rest == script or rest.startswith(script + " "))]
    return max(found)[1] if found else OTHER


def read_status_lines(lines: list[str], values: dict[str, str], root: Path) -> list[Step]:
    """The steps of a foreign runner's status lines (its only record): the kind from the config command the line
    ran, the name from the log it redirected to, else the kind and its ordinal (`eval`, `eval_2`); nothing is
    read out of a folder or step name."""
    steps: list[Step] = []
    seen: dict[str, int] = {}
    for raw in lines:
        match = _STATUS.search(_ANSI.sub("", raw).strip())
        if not match:
            continue
        _, _, command = match.group(2).partition(" - ") if " - " in match.group(2) else ("", "", match.group(2))
        command = command.rstrip().removesuffix("!").rstrip()
        # PaddleOCR's status_check appends " - <the step's log path>" after the command
        head, sep, tail = command.rpartition(" - ")
        trailing = tail.strip() if sep and " " not in tail.strip() and ("/" in tail or tail.strip().endswith(".log")) else None
        if trailing is not None:
            command = head.rstrip()
        kind = _classify(command, values)
        redirect = _REDIRECT.search(command)
        log = redirect.group(1) if redirect else trailing
        seen[kind] = seen.get(kind, 0) + 1
        name = Path(log).stem if log else kind if seen[kind] == 1 else f"{kind}_{seen[kind]}"
        step = Step(kind=kind, name=name, status=PASSED if match.group(1) == "successfully" else FAILED,
                    command=command)
        if log and (root / log).is_file():
            step.log = os.path.normpath(log)
        else:
            step.note = "no log of its own under this runner: the status line is all it tells"
        steps.append(step)
    return steps


# `LOG_PATH="./test_tipc/output/${model_name}"`, `status_log="${LOG_PATH}/results_python.log"`: where a runner logs
_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=[\"']?([^\"'\s;#]*)[\"']?\s*(?:#.*)?$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_SKIP_DIRS = {".git", STATE, "node_modules", "__pycache__"}
_PREPARE_LINES = 20_000  # the last lines of prepare.sh's output kept in prepare.log
_WALK_LIMIT = 200_000  # entries looked at when searching the tree for results_python.log
_GROWN_BYTES = 16 << 20  # of a status log's new part, the last this many bytes are read (its status lines end it)


def _results_logs(root: Path, model: str, mode: str) -> list[Path]:
    """Where runners write results_python.log: the paths the runner itself names (its assignments read as text,
    ``${model_name}`` and ``${MODE}`` filled in), then the template's ./log/ and OCR's ./test_tipc/output/."""
    found: list[Path] = []
    try:
        text = inputs.read_bytes(root / paths.BASIC_RUNNER, "runner", 1 << 20).decode("utf-8", errors="replace")
    except TipcgenError:
        text = ""
    known = {"model_name": model, "MODE": mode}
    for line in text.splitlines():
        match = _ASSIGN.match(line)
        if not match:
            continue
        name, value = match.groups()
        value = _VAR.sub(lambda m: known.get(m.group(1) or m.group(2), "$?"), value)
        if "$" in value or "`" in value:
            continue  # a value the runner computes (from the config, in a loop): not guessed here
        if name not in ("model_name", "MODE"):
            known[name] = value
        if value.endswith(RESULTS_LOG):
            found.append(root / os.path.normpath(value))
    found += [root / "log" / model / mode / RESULTS_LOG, root / OUTPUT / model / mode / RESULTS_LOG,
              root / OUTPUT / model / RESULTS_LOG]
    return list(dict.fromkeys(found))


def _sizes_of_all_results_logs(root: Path) -> dict[Path, int]:
    """Every results_python.log in the tree (hidden folders and .git skipped) and its size."""
    out: dict[Path, int] = {}
    seen = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        seen += len(dirs) + len(names)
        if RESULTS_LOG in names:
            path = Path(folder) / RESULTS_LOG
            out[path] = path.stat().st_size
        if seen > _WALK_LIMIT:
            break
    return out


def _grown(before: dict[Path, int], paths: list[Path]) -> list[tuple[Path, list[str]]]:
    """(path, its new lines) of every path that grew since `before` (a file that did not exist counts from 0)."""
    out = []
    for path in paths:
        offset = before.get(path, 0)
        if path.is_file() and path.stat().st_size > offset:
            try:  # a regular file (a FIFO never waits), at most its last _GROWN_BYTES: a 400 MB log is not kept
                with inputs.open_binary(path, "status log") as handle:
                    size = handle.seek(0, 2)
                    handle.seek(max(offset, size - _GROWN_BYTES))
                    out.append((path, handle.read(_GROWN_BYTES).decode("utf-8", errors="replace").splitlines()))
            except (OSError, TipcgenError):
                continue
    return out


def descriptor_env(loaded: tuple[Any, dict[str, Any]]) -> tuple[dict[str, str], str | None]:
    """The env: of the descriptor init rendered from (the run's provenance.load_descriptor: the descriptor
    or None, and its record), and a note when it could not be read."""
    desc, info = loaded
    if desc is None:
        return {}, info.get("note")
    return dict(desc.env), None


def kept_summary(mode: str, root: Path, config_path: Path, values: dict[str, str], loaded: tuple[Any, dict[str, Any]],
                 extra_env: dict[str, str]) -> Summary:
    """The summary a kept runner's run starts from: what such a runner cannot tell (NOTES), the kept files
    edited since init --submission recorded them, and the descriptor's env: it runs with."""
    null_kinds: set[str] = {kind for kind, fld in ((EVAL, "eval.script"), (INFER, "inference.script"))
                  if values.get(fld, "null") in ("", "null")}
    summary = Summary(model=values.get("model_name", ""), mode=mode, config=str(config_path),
                      environment=environment_info(), required_kinds=required_kinds(BASIC, mode, null_kinds))
    summary.notes = list(NOTES)
    for rel in edited(root):
        summary.problems.append(f"{rel} changed since tipcgen init --submission recorded it: a submission keeps "
                                "the template's runner and common_func.sh unchanged (无需改动)")
    if not (root / paths.SUBMISSION_RECORD).is_file():
        summary.notes.append(f"{paths.BASIC_RUNNER} is not tipcgen's, and no init --submission recorded it: edits cannot be told")
    _, env_note = descriptor_env(loaded)
    if env_note:
        summary.notes.append(f"the descriptor's env: was not applied ({env_note})")
    elif extra_env:
        summary.notes.append("prepare.sh and the runner ran with the descriptor's env: "
                             + ", ".join(f"{k}={v}" for k, v in extra_env.items()))
    return summary


class KeptRun:
    """A kept runner's records: the results_python.log files it may write, measured before the run (only
    what grows during it counts), and the status lines it printed (read when no log grew)."""

    def __init__(self, root: Path, mode: str, values: dict[str, str]) -> None:
        self.root, self.values = root, values
        self.logs = _results_logs(root, values.get("model_name", ""), mode)
        self.before = _sizes_of_all_results_logs(root)
        self.printed: list[str] = []
        self.runner_started: float | None = None  # set by the pipeline as the runner starts
        self.segment: deque = deque(maxlen=SEGMENT_LINES)  # the runner's output since its last status line
        self.outputs: list[list[str]] = []  # before each printed status line: its step's output, where printed

    def line(self, line: str) -> None:
        if self.runner_started is None:
            return  # prepare.sh's output: its own step's log
        if _STATUS.search(_ANSI.sub("", line)):
            self.printed.append(line)
            self.outputs.append(list(self.segment))
            self.segment.clear()
        else:
            self.segment.append(line)

    def records(self) -> tuple[list[Step], list[str], list[str]]:
        """The steps of the status lines written during the run, the notes on where they were read, the problems."""
        root, steps, notes, problems = self.root, [], [], []
        grown = _grown(self.before, self.logs) or _grown(self.before, sorted(_sizes_of_all_results_logs(root)))
        for path, lines in grown:
            steps += read_status_lines(lines, self.values, root)
            notes.append(f"status lines read from {path.relative_to(root)}")
        if not grown and self.printed:
            steps += read_status_lines(self.printed, self.values, root)
            notes.append("no results_python.log grew during the run: the status lines are those the runner printed")
        annotate(steps, self.values, root)
        explain_failed(steps, self.outputs if len(self.outputs) == len(steps) else [], root)
        if not steps:
            problems.append("the runner wrote no status line to its output or to any results_python.log (looked at "
                            + ", ".join(str(p.relative_to(root)) for p in self.logs) + " and the whole tree)")
        return steps, notes, problems


SEGMENT_LINES = 200
TAIL = 20
# The line a failed step's output names its failure with: a Python exception, argparse's error, a shell's.
_CAUSE = re.compile(r"^(?:[\w.]+(?:Error|Exception|Exit|Interrupt)\b(?::.*)?|.*\berror: .+|.*: command not found"
                    r"|Killed|Segmentation fault.*|.*No such file or directory.*)$")


def explain_failed(steps: list[Step], outputs: list[list[str]], root: Path) -> None:
    """A kept runner's failed step as tipcgen's runner gives it: the last lines of its output (its own log, else
    what the runner printed before its status line: ``outputs``, one list per step, or none) under it, and the
    cause, the line its output names the failure with (else what its status line alone says). The hint is
    written from those lines as for any step (pipeline._explain_failures)."""
    from tipcgen.results.summary import log_tail

    for index, step in enumerate(steps):
        if step.status != FAILED:
            continue
        lines = log_tail(root / step.log, SEGMENT_LINES, root) if step.log else outputs[index] if outputs else []
        lines = [_ANSI.sub("", line).rstrip() for line in lines]
        if not step.tail:
            step.tail = [line for line in lines if line.strip()][-TAIL:]
        if not step.reason:
            cause = next((line.strip() for line in reversed(lines) if _CAUSE.match(line.strip())), "")
            last = next((line.strip() for line in reversed(lines) if line.strip()), "")
            step.reason = (f"its output ends in: {cause[:200]}" if cause else
                           f"its status line says it failed; its last line: {last[:200]}" if last else
                           "its status line says it failed (the runner records no exit code, and it printed nothing "
                           "for this step)")


def _passed(command: str, key: str) -> str | None:
    """The value a status line's command passes as ``key=value`` (upstream's func_set_params), or None."""
    if not key or key == "null":
        return None
    found = None
    for word in command.split():
        if word.startswith(key + "="):
            found = word[len(key) + 1:]
    return found


def _inside_path(value: str | None, root: Path) -> str | None:
    """A path a command passes, relative to the repository and inside it, or None."""
    if not value:
        return None
    path = Path(os.path.normpath(value))
    if path.is_absolute():
        if not path.is_relative_to(root):
            return None
        path = path.relative_to(root)
    return None if path.parts[:1] == ("..",) or str(path) == "." else path.as_posix()


def annotate(steps: list[Step], values: dict[str, str], root: Path) -> None:
    """Where a kept runner's steps wrote and read models, from their status lines' commands (the config's
    keys as ``key=value``): a training's output folder (train.output_dir), the export's (export.output_dir),
    an inference's model folder (inference.model_dir); each eval, export and inference belongs to the
    training before it. What the export check (Proofs.check_exports) needs to find the kept runner's outputs."""
    keys: dict[str, str] = {TRAIN: values.get("train.output_dir:key", ""), EXPORT: values.get("export.output_dir:key", ""),
            INFER: values.get("inference.model_dir:key", "")}
    training = None
    for step in steps:
        if step.kind == TRAIN:
            training = step.name
        if step.kind in (TRAIN, EVAL, EXPORT, INFER):
            step.training.name = training
        if step.kind in keys:
            step.case.model_dir = _inside_path(_passed(step.command, keys[step.kind]), root)


# What a prepare.sh's output holds when something in it failed though the script went on (upstream's prepare.sh
# runs each command whatever the last one did, and exits 0): pip's and wget's errors, a Python traceback, a
# missing command or file, tar giving up.
_PREPARE_FAILURES = re.compile(
    r"^ERROR(?::| \d+:)|^E: |Traceback \(most recent call last\)|: command not found|No such file or directory"
    r"|unable to resolve host|^tar: .*(?:Error|error)|^gzip: .*not in gzip format|: Permission denied"
    r"|^Segmentation fault|^Killed$")


def prepare_failures(lines: list[str]) -> list[str]:
    """The lines of a prepare.sh's output that show a failure inside it, whatever it exited with."""
    return [line for line in (_ANSI.sub("", raw).strip() for raw in lines) if _PREPARE_FAILURES.search(line)]


def judge_prepare(step: Step, lines: list[str]) -> None:
    """prepare.sh's step from its exit code and its output: a log that shows a failure fails it (an upstream
    prepare.sh exits 0 after a failed pip install or download), naming the first such line."""
    found = prepare_failures(lines)
    if step.exit_code != 0:
        step.note = f"prepare.sh exited {step.exit_code}; the runner ran anyway, as a reviewer would run it"
    if found:
        step.status = FAILED
        step.reason = (f"its output shows a failure though prepare.sh exited {step.exit_code}: {found[0][:200]}"
                       + (f" (and {len(found) - 1} more such line(s) in the log)" if len(found) > 1 else ""))
        if step.exit_code == 0:
            step.note = "upstream prepare.sh scripts exit 0 whatever their commands did: its log is what tells"


_GPU_VALUE = re.compile(r"^(?:true|gpu|gpu:\d+|1)$", re.I)
# A step the runner names after a GPU entry of gpu_list (`norm_train_gpus_0_autocast_null`, `gpus_0,1`), not -1.
# upstream's inference logs: `python_infer_gpu_usetrt_False_precision_fp32_batchsize_1`.
_GPU_NAME = re.compile(r"(?:^|[_/])gpus?_(\d+(?:,\d+)*)(?=_|$|\.log)|(?:^|_)infer_gpu(?=_|$|\.log)")


def cpu_build(versions: dict[str, Any]) -> bool:
    """The chain's paddle is a CPU build (its version file's cuda_version is False, or the CPU dist)."""
    return str(versions.get("paddle_cuda_version")) == "False" or versions.get("paddle_dist") == "paddlepaddle"


def gpu_case(step: Step, keys: set[str]) -> bool:
    """A kept runner's GPU case: a GPU value for the inference use_gpu or a train device key in its command, or
    a name (its log's) after a GPU entry of gpu_list."""
    words = step.command.split()
    if any(word.partition("=")[0] in keys and _GPU_VALUE.match(word.partition("=")[2]) for word in words):
        return True
    return bool(_GPU_NAME.search(step.name) or _GPU_NAME.search(Path(step.log).name if step.log else ""))


def unverified_gpu_cases(steps: list[Step], values: dict[str, str], device: dict[str, Any],
                         versions: dict[str, Any] | None = None) -> int:
    """On a machine with no GPU, or with a CPU build of paddle, a kept runner's GPU case (``gpu_case``) is not
    verified here: paddle runs it on the CPU, or the runner prints success for a case that never ran on a GPU.
    It is SKIPPED, with the reason, never PASSED; how many were."""
    cpu_paddle = cpu_build(versions or {})
    if device.get("gpus") and not cpu_paddle:
        return 0
    why = ("a GPU case run by a CPU build of paddle (" + str((versions or {}).get("paddle_dist") or "no CUDA") + ")"
           if cpu_paddle and device.get("gpus") else
           "a GPU case on a machine with no GPU (" + (device.get("note") or "nvidia-smi lists none") + ")")
    keys = {values.get(f"{fld}:key", "") for fld in ("inference.use_gpu", "train.device")} - {"", "null"}
    count = 0
    for step in steps:
        if step.status != PASSED or not gpu_case(step, keys):
            continue
        step.status, step.case.device = SKIPPED, "gpu"
        step.reason = why + ": it ran on the CPU, not verified as a GPU case here; run it where a GPU and a GPU build of paddle are"
        count += 1
    return count


_SHIM_NAME = re.compile(r"^python[0-9.]*$")
SHIM_SCRIPT = "#!/bin/sh\n# tipcgen run: this run's interpreter for a kept runner (a shim first on PATH)\nexec {limit}{target} \"$@\"\n"


def shim_plan(values: dict[str, str], env: dict[str, str], python: str | None,
              step_timeout: int | None) -> dict[str, str]:
    """The interpreter names a kept runner may call (its config's python: value, python3, python) and the full
    path each is to run: with --python, the chosen interpreter for all of them (a runner that hard-codes
    python3.7 runs it); with only --step-timeout, each name's own (so the limit wraps it). Nothing otherwise."""
    if python is None and step_timeout is None:
        return {}
    names = [n for n in dict.fromkeys((values.get("python", ""), "python3", "python")) if _SHIM_NAME.match(n)]
    path = env.get("PATH", os.defpath)
    chosen = shutil.which(python, path=path) if python is not None else None
    out = {}
    for name in names:
        target = chosen or (None if python is not None else shutil.which(name, path=path))
        if target is not None:
            out[name] = os.path.abspath(target)
    return out


def write_shim(root: Path, folder: Path, plan: dict[str, str], step_timeout: int | None) -> None:
    """The shim folder: one executable per name of the plan, running its interpreter (under ``timeout`` with
    --step-timeout: each python command the runner starts is a step of it)."""
    limit = f"timeout -k 10 {int(step_timeout)} " if step_timeout is not None and shutil.which("timeout") else ""
    writes.make_dirs(root, folder, "the run's interpreter shim")
    for name, target in plan.items():
        write_file(folder / name, SHIM_SCRIPT.format(limit=limit, target=shlex.quote(target)), mode=0o755, within=root)


def shim_notes(plan: dict[str, str], folder: str, python: str | None, step_timeout: int | None,
               config_python: str) -> list[str]:
    notes = []
    if python is not None:
        target = next(iter(plan.values()), python)
        notes.append(f"--python: {', '.join(plan)} ran {target} for the kept runner (a shim folder, {folder}, first "
                     f"on PATH; its config says python:{config_python}, left as it is)")
    if step_timeout is not None:
        notes.append(f"--step-timeout: each {' / '.join(plan) or 'python'} command the kept runner started was limited "
                     f"to {step_timeout} s (the shim runs it under timeout); a command it runs otherwise is not")
    return notes


class KeptRunner:
    """A kept runner (init --submission) as the run's driver (pipeline.Driver): it runs whatever prepare.sh did, as a
    reviewer would run it; it has no handshake (the weights are recorded just before it starts); its steps have
    no time limit but --step-timeout's (the interpreter shim's); its records are its status lines."""

    kept, gated, handshake, bounded, refuses, moves_aside = True, False, False, False, False, False

    def __init__(self) -> None:
        self.values: dict[str, str] = {}  # the config's values (slot_values), read by start
        self.run: KeptRun | None = None  # its records, measured by ready

    def scripts(self, chain: str) -> tuple[str, ...]:
        return (RUNNERS[chain],)  # prepare.sh is run where there is one

    def check_options(self, request: RunRequest) -> None:
        if request.model_dir is not None:
            raise RunError("--model-dir cannot apply to the repository's own runner (init --submission): it takes the "
                           "models of whole_infer from its config, not from TIPC_MODEL_DIR",
                           "name the models in the descriptor's whole_infer.models and run tipcgen init --submission "
                           "again, or leave out --model-dir")

    def environment(self, env: dict[str, str], desc: Any, desc_info: dict[str, Any]) -> None:
        env.update(descriptor_env((desc, desc_info))[0])

    def check_environment(self, request: RunRequest, env: dict[str, str]) -> None:
        return None  # TIPC_STEP_TIMEOUT is tipcgen's runner's; a kept one reads what it reads

    def start(self, ctx: RunContext, model: str, desc_info: dict[str, Any],
              notes: list[str]) -> tuple[Summary, str | None, dict[str, str], bytes | None]:
        self.values = values = slot_values(ctx.text)
        loaded = (ctx.desc, desc_info)
        summary = kept_summary(ctx.mode, ctx.root, ctx.config_path, values, loaded, descriptor_env(loaded)[0])
        summary.notes.extend(notes)
        shim = shim_plan(values, ctx.env, ctx.request.python, ctx.request.step_timeout)
        if ctx.request.data_dir is not None:
            summary.notes.append(f"--data-dir: the kept runner and its prepare.sh ran with TIPC_DATA_DIR={ctx.env['TIPC_DATA_DIR']}; "
                                 "whether they read it is theirs to say (tipcgen's runner does)")
        found = shim.get(values.get("python", "")) or flag_check.interpreter(ctx.text, ctx.env)[1]
        return summary, found, shim, None

    def ready(self, ctx: RunContext) -> None:
        self.run = KeptRun(ctx.root, ctx.mode, self.values)

    def write_shim(self, ctx: RunContext, folder: Path) -> None:
        if ctx.shim:
            write_shim(ctx.root, folder, ctx.shim, ctx.request.step_timeout)
            ctx.env["PATH"] = os.pathsep.join([str(folder), ctx.env.get("PATH", os.defpath)])

    def line(self, line: str) -> None:
        if self.run is not None:
            self.run.line(line)

    def judge_prepare(self, prepare: Step, lines: Iterable[str]) -> None:
        judge_prepare(prepare, list(lines))

    def runner_starts(self, wait: Callable[[str, str, str], None]) -> None:
        if self.run is not None:
            self.run.runner_started = time.time()
        wait(WAIT_START, TRAIN, "*")  # no handshake: the weights there before it starts

    def records(self, ctx: RunContext, summary: Summary, prepare: Step | None) -> tuple[list[Step], list[str], list[str]]:
        """Its status lines' steps (a GPU case on a machine with none: not verified), whatever prepare did."""
        if self.run is None:
            return [], [], []
        steps, notes, problems = self.run.records()
        device = summary.provenance.get("device") or provenance.device_info(ctx.env)
        unverified_gpu_cases(steps, self.values, device, summary.provenance.get("versions") or {})
        return steps, notes, problems

    def proof_notes(self, steps: list[Step]) -> list[str]:
        # its outputs are found where its commands name them (annotate)
        if any(s.kind == EXPORT and s.status == PASSED and not s.case.model_dir for s in steps):
            return ["an export's parameters were not compared with the trained checkpoint: its status "
                    "line's command does not name its output folder (export.output_dir's key)"]
        return []

    def shim_notes(self, ctx: RunContext, folder: Path) -> list[str]:
        if not ctx.shim:
            return []
        return shim_notes(ctx.shim, str(folder.relative_to(ctx.root)), ctx.request.python, ctx.request.step_timeout,
                          self.values.get("python", ""))

    def finish(self, ctx: RunContext, summary: Summary, prepare: Step | None, steps: list[Step],
               runner_out: list[str], stuck: bool) -> None:
        """Its exit status tells nothing (NOTES): only the mode's required steps that no status line passed."""
        missing = summary.missing_kinds()
        if missing:
            summary.problems.append(f"no {', no '.join(missing)} step passed, but {summary.mode} needs "
                                    f"{', '.join(summary.required_kinds)}")
