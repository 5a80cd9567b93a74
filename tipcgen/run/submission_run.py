"""Submission mode at run time: drive the repository's own runner and read the status lines it writes.

The render-time half (which files a submission keeps, the record of their sha256) is submission.py.
Run as a reviewer would: prepare.sh, then the runner even when prepare failed (that step is reported
failed), both with the descriptor's ``env:``. The status lines are read from the results_python.log
the runner names (its ``LOG_PATH``/``status_log`` assignments, read as text), the usual places
(``./log/<model>/<mode>/``, ``./test_tipc/output/<model>[/<mode>]/``), else any results_python.log in the
tree that grew during the run, else the lines the runner printed. What such a runner cannot tell is
said in the summary's notes: its exit status is its last command's, and a step's status is only its
status line (train, eval and export keep no log of their own).
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Callable

from tipcgen.configs.submission import edited
from tipcgen.core import inputs, process
from tipcgen.core.errors import TipcgenError
from tipcgen.core import writes
from tipcgen.core.writes import write_file
from tipcgen.format import layout, paths
from tipcgen.format.config import TipcConfig
from tipcgen.format.paths import JUNIT_XML, OUTPUT, PREPARE_LOG, PREPARE_SH, RESULTS_LOG, STATE, SUMMARY_JSON
from tipcgen.format.words import EVAL, EXPORT, FAILED, INFER, OTHER, PASSED, PREPARE, TRAIN
from tipcgen.results.results import Step, Summary, environment_info, required_kinds, write_json
from tipcgen.results.summary_text import write_junit

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STATUS = re.compile(r"Run (successfully|failed) with command - (.*)$")
_REDIRECT = re.compile(r">\s*(\S+)\s+2>&1")
NOTES = (
    "the repository's runner drove this chain: its exit status is that of its last command and tells nothing "
    "about the steps before it; the steps and their status come from its results_python.log",
    "train, eval and export keep no log of their own under this runner: their status is their status line",
)


def _slot_values(text: str) -> dict[str, str]:
    config = TipcConfig.parse(text)
    table = layout.LAYOUTS[layout.LAYOUT_OF_KIND.get(config.kind, "standard")]
    logical = config.logical_lines()
    return {slot.field: (logical[slot.index].value or "").strip() for slot in table
            if slot.kind == "kv" and slot.index < len(logical)}


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
            with path.open("rb") as handle:
                handle.seek(offset)
                out.append((path, handle.read().decode("utf-8", errors="replace").splitlines()))
    return out


def descriptor_env(loaded: tuple[Any, dict[str, Any]]) -> tuple[dict[str, str], str | None]:
    """The env: of the descriptor init rendered from (the run's provenance.load_descriptor: the descriptor
    or None, and its record), and a note when it could not be read."""
    desc, info = loaded
    if desc is None:
        return {}, info.get("note")
    return dict(desc.env), None


def run(mode: str, root: Path, config_path: Path, run_dir: Path, on_line: Callable[[str], None],
        loaded: tuple[Any, dict[str, Any]], sandbox: Any = None) -> Summary:
    """Drive the repository's prepare.sh (if any) and runner, as a reviewer would (the runner runs even when
    prepare fails); the summary from the status lines they write during the run. loaded: the descriptor
    run_chain loaded (or None) and its record, for its env:. sandbox: run --sandbox's core/sandbox.Spec."""
    text = (root / config_path).read_text(encoding="utf-8", errors="replace")
    values = _slot_values(text)
    model = values.get("model_name", "")
    null_kinds = {kind for kind, fld in ((EVAL, "eval.script"), (INFER, "inference.script"))
                  if values.get(fld, "null") in ("", "null")}
    summary = Summary(model=model, mode=mode, config=str(config_path), environment=environment_info(),
                      required_kinds=required_kinds("basic", mode, null_kinds))
    summary.notes = list(NOTES)
    for rel in edited(root):
        summary.problems.append(f"{rel} changed since tipcgen init --submission recorded it: a submission keeps "
                                "the template's runner and common_func.sh unchanged (无需改动)")
    if not (root / paths.SUBMISSION_RECORD).is_file():
        summary.notes.append(f"{paths.BASIC_RUNNER} is not tipcgen's, and no init --submission recorded it: edits cannot be told")
    extra_env, env_note = descriptor_env(loaded)
    if env_note:
        summary.notes.append(f"the descriptor's env: was not applied ({env_note})")
    elif extra_env:
        summary.notes.append("prepare.sh and the runner ran with the descriptor's env: "
                             + ", ".join(f"{k}={v}" for k, v in extra_env.items()))
    logs = _results_logs(root, model, mode)
    before = _sizes_of_all_results_logs(root)
    started = time.perf_counter()
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra_env)
    printed: list[str] = []

    def stream(cmd: list[str], keep: list[str] | None = None) -> int:
        def seen(line: str) -> None:
            on_line(line)
            if keep is not None:
                keep.append(line + "\n")
            elif _STATUS.search(_ANSI.sub("", line)):
                printed.append(line)

        outcome = process.run(process.Request(cmd, cwd=root, env=env, on_line=seen, output_cap=1 << 16,
                                              sandbox=sandbox, grace=1.0))
        return -1 if outcome.exit_code is None else outcome.exit_code

    steps: list[Step] = []
    if (root / PREPARE_SH).is_file():
        t0, output = time.perf_counter(), []
        code = stream(["bash", PREPARE_SH, str(config_path), mode], output)
        writes.make_dirs(root, run_dir, "the run folder")
        write_file(run_dir / PREPARE_LOG, "".join(output[-_PREPARE_LINES:]), within=root)
        steps.append(Step(kind=PREPARE, name="prepare", status=PASSED if code == 0 else FAILED, exit_code=code,
                          seconds=round(time.perf_counter() - t0, 3), command=f"bash {PREPARE_SH} {config_path} {mode}",
                          log=(run_dir / PREPARE_LOG).relative_to(root).as_posix()))
        if code != 0:
            steps[-1].note = f"prepare.sh exited {code}; the runner ran anyway, as a reviewer would run it"
    summary.runner_exit_code = stream(["bash", paths.BASIC_RUNNER, str(config_path), mode])
    grown = _grown(before, logs) or _grown(before, sorted(_sizes_of_all_results_logs(root)))
    for path, lines in grown:
        steps += read_status_lines(lines, values, root)
        summary.notes.append(f"status lines read from {path.relative_to(root)}")
    if not grown and printed:
        steps += read_status_lines(printed, values, root)
        summary.notes.append("no results_python.log grew during the run: the status lines are those the runner printed")
    if not any(s.kind != PREPARE for s in steps):
        summary.problems.append("the runner wrote no status line to its output or to any results_python.log (looked at "
                                + ", ".join(str(p.relative_to(root)) for p in logs) + " and the whole tree)")
    summary.steps = steps
    missing = summary.missing_kinds()
    if missing:
        summary.problems.append(f"no {', no '.join(missing)} step passed, but {mode} needs {', '.join(summary.required_kinds)}")
    summary.wall_seconds = round(time.perf_counter() - started, 3)
    writes.make_dirs(root, run_dir, "the run folder")
    write_json(summary, run_dir / SUMMARY_JSON)
    write_junit(summary, run_dir / JUNIT_XML)
    return summary
