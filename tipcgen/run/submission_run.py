"""Submission mode at run time: drive the repository's own runner and read its results_python.log.

The render-time half (which files a submission keeps, the record of their sha256) is submission.py.
What such a runner cannot tell is said in the summary's notes: its exit status is its last command's,
and a step's status is only its status line (train, eval and export keep no log of their own).
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Callable

from tipcgen.configs.submission import RECORD, RUNNER, edited
from tipcgen.format import layout
from tipcgen.format.config import TipcConfig
from tipcgen.format.paths import JUNIT_XML, RESULTS_LOG, SUMMARY_JSON
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
    kinds = [("eval", values.get("eval.script", "")), ("infer", values.get("inference.script", ""))]
    kinds += [("train", values.get(fld, "")) for fld in ("train.norm", "train.pact", "train.fpgm", "train.distill")]
    kinds += [("export", values.get(fld, "")) for fld in ("export.norm", "whole_infer.export", "export.quant")]
    found = [(len(script), kind) for kind, script in kinds
             if script and script != "null" and (rest == script or rest.startswith(script + " "))]
    return max(found)[1] if found else "other"


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
        kind = _classify(command, values)
        log = _REDIRECT.search(command)
        seen[kind] = seen.get(kind, 0) + 1
        name = Path(log.group(1)).stem if log else kind if seen[kind] == 1 else f"{kind}_{seen[kind]}"
        step = Step(kind=kind, name=name, status="passed" if match.group(1) == "successfully" else "failed",
                    command=command)
        if log and (root / log.group(1)).is_file():
            step.log = os.path.normpath(log.group(1))
        else:
            step.note = "no log of its own under this runner: the status line is all it tells"
        steps.append(step)
    return steps


def _results_logs(root: Path, model: str, mode: str) -> list[Path]:
    """Where runners write results_python.log: the template's ./log/, OCR's ./test_tipc/output/."""
    return [root / "log" / model / mode / RESULTS_LOG, root / "test_tipc" / "output" / model / mode / RESULTS_LOG]


def run(mode: str, root: Path, config_path: Path, run_dir: Path, on_line: Callable[[str], None]) -> Summary:
    """Drive the repository's prepare.sh (if any) and runner; the summary from the new status lines."""
    text = (root / config_path).read_text(encoding="utf-8", errors="replace")
    values = _slot_values(text)
    model = values.get("model_name", "")
    null_kinds = {kind for kind, fld in (("eval", "eval.script"), ("infer", "inference.script"))
                  if values.get(fld, "null") in ("", "null")}
    summary = Summary(model=model, mode=mode, config=str(config_path), environment=environment_info(),
                      required_kinds=required_kinds("basic", mode, null_kinds))
    summary.notes = list(NOTES)
    for rel in edited(root):
        summary.problems.append(f"{rel} changed since tipcgen init --submission recorded it: a submission keeps "
                                "the template's runner and common_func.sh unchanged (无需改动)")
    if not (root / RECORD).is_file():
        summary.notes.append(f"{RUNNER} is not tipcgen's, and no init --submission recorded it: edits cannot be told")
    logs = _results_logs(root, model, mode)
    offsets = {path: path.stat().st_size if path.is_file() else 0 for path in logs}
    started = time.perf_counter()
    env = dict(os.environ, PYTHONUNBUFFERED="1")

    def stream(cmd: list[str]) -> int:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace")
        assert proc.stdout is not None
        for line in proc.stdout:
            on_line(line.rstrip("\n"))
        return proc.wait()

    steps: list[Step] = []
    prepare_ok = True
    if (root / "test_tipc/prepare.sh").is_file():
        t0 = time.perf_counter()
        code = stream(["bash", "test_tipc/prepare.sh", str(config_path), mode])
        prepare_ok = code == 0
        steps.append(Step(kind="prepare", name="prepare", status="passed" if prepare_ok else "failed", exit_code=code,
                          seconds=round(time.perf_counter() - t0, 3), command=f"bash test_tipc/prepare.sh {config_path} {mode}"))
    if prepare_ok:
        summary.runner_exit_code = stream(["bash", RUNNER, str(config_path), mode])
        for path in logs:
            if path.is_file() and path.stat().st_size > offsets[path]:
                with path.open("rb") as handle:
                    handle.seek(offsets[path])
                    new = handle.read().decode("utf-8", errors="replace").splitlines()
                steps += read_status_lines(new, values, root)
                summary.notes.append(f"status lines read from {path.relative_to(root)}")
        if len(steps) == (1 if steps and steps[0].kind == "prepare" else 0):
            summary.problems.append("the runner wrote no status line to any of: "
                                    + ", ".join(str(p.relative_to(root)) for p in logs))
        missing = [kind for kind in summary.required_kinds if kind not in {s.kind for s in steps if s.status == "passed"}]
        if missing:
            summary.problems.append(f"no {', no '.join(missing)} step passed, but {mode} needs {', '.join(summary.required_kinds)}")
    summary.steps = steps
    summary.wall_seconds = round(time.perf_counter() - started, 3)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(summary, run_dir / SUMMARY_JSON)
    write_junit(summary, run_dir / JUNIT_XML)
    return summary

