"""The guard at the edge of a Summary: a summary.json (or an alignment report) read back is checked
field by field, for `tipcgen report` and `tipcgen golden`, which read a summary.json that anyone could have
edited or truncated. Standard library only.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from tipcgen.core import inputs
from tipcgen.core.errors import InputError, SummaryFileError
from tipcgen.format.paths import STEP_FIELDS, SUMMARY_JSON
from tipcgen.format.words import FAILED, PASSED, SKIPPED, SPEED
from tipcgen.results import summary_fields as shapes

MAX_SUMMARY_BYTES = 64 << 20
STATUSES = (PASSED, FAILED, SKIPPED)
_MAX_SECONDS = 1e9  # about 30 years: anything larger is not a time a run took
_MAX_EXIT = 1 << 31
_TEXT_FIELDS = ("model", "mode", "config")
_STEP_TEXT = ("log", "reason", "note", "command")
_MAX_NAME = 4096  # a step name, kind or status: a path component or two, never longer


def confined(rel: str) -> bool:
    """A path a summary may name (a step's log, or its name as a folder under the run folder): relative,
    no '..' component, no NUL, no drive letter, so joining it to its folder never leaves that folder."""
    parts = rel.replace("\\", "/").split("/")
    return not (rel.startswith(("/", "\\")) or "\0" in rel or ".." in parts or re.match(r"^[A-Za-z]:", rel))


def inside(base: Path, rel: str) -> Path | None:
    """base/rel when it is a regular file that resolves (links followed) inside base; else None.
    Every reader of a file a summary names (report, accept, golden) opens it only through here."""
    if not rel or not confined(rel):
        return None
    try:
        path = inputs.within(base / rel, base)  # no link on the way out of base, or to nothing
        return path if path.is_file() else None
    except (InputError, OSError, ValueError):
        return None


def read_summary_data(path: Any) -> dict:
    """A summary.json parsed and checked; SummaryFileError (exit 2) for anything tipcgen run never writes."""
    import json

    source = str(path)
    raw = inputs.read_bytes(path, SUMMARY_JSON, MAX_SUMMARY_BYTES)  # a regular file (a FIFO never blocks), bounded
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SummaryFileError(source, "", f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, and ints past Python's digit limit
        where = f" (line {exc.lineno}, column {exc.colno})" if hasattr(exc, "lineno") else ""
        raise SummaryFileError(source, "", f"is not valid JSON{where}: {getattr(exc, 'msg', 'a number too long')}") \
            from None
    except RecursionError:
        raise SummaryFileError(source, "", "is not valid JSON: nested too deeply") from None
    check_summary_data(data, source)
    return data


def check_summary_data(data: Any, source: str) -> None:
    """Raise SummaryFileError naming the first field of a parsed summary.json that tipcgen run never writes."""
    if not isinstance(data, dict):
        raise SummaryFileError(source, "", f"expected a JSON object at the top, found {shapes.kind(data)}")
    for key in _TEXT_FIELDS:
        if key not in data:
            raise SummaryFileError(source, key, "is missing")
        _text(data[key], source, key)
    if "chain" in data:
        _text(data["chain"], source, "chain")
    for key in (*_TEXT_FIELDS, "chain"):
        if len(data.get(key, "")) > _MAX_NAME:
            raise SummaryFileError(source, key, f"is {len(data[key])} characters long (at most {_MAX_NAME})")
    if not confined(data["config"]):  # accept reads <repository>/<config>
        raise SummaryFileError(source, "config", "must be a path inside the repository (test_tipc/configs/...)")
    if "steps" not in data:
        raise SummaryFileError(source, "steps", "is missing")
    if not isinstance(data["steps"], list):
        raise SummaryFileError(source, "steps", f"expected a list of steps, found {shapes.kind(data['steps'])}")
    if len(data["steps"]) > shapes.MAX_ITEMS:
        raise SummaryFileError(source, "steps", f"has {len(data['steps'])} steps (at most {shapes.MAX_ITEMS})")
    for number, step in enumerate(data["steps"]):
        _check_step(step, source, f"steps[{number}]")
    if "wall_seconds" in data:
        _seconds(data["wall_seconds"], source, "wall_seconds")
    if data.get("runner_exit_code") is not None:
        _exit_code(data["runner_exit_code"], source, "runner_exit_code")
    if "interrupted" in data and not isinstance(data["interrupted"], bool):
        raise SummaryFileError(source, "interrupted", f"expected true or false, found {shapes.kind(data['interrupted'])}")
    _texts(data.get("problems", []), source, "problems")
    if "interrupted_by" in data:  # SIGINT, SIGTERM, SIGHUP or "": which signal stopped tipcgen run
        _text(data["interrupted_by"], source, "interrupted_by")
    _texts(data.get("required_kinds", []), source, "required_kinds")
    environment = data.get("environment", {})
    if not isinstance(environment, dict):
        raise SummaryFileError(source, "environment", f"expected a mapping, found {shapes.kind(environment)}")
    for key, value in environment.items():
        _text(value, source, f"environment.{shapes.plain(key)}")
    shapes.check(data, shapes.DERIVED, source, "")  # notes, provenance, ok, exit_code and the counts
    if data.get("target"):  # {} when the run had no paper target
        shapes.check(data["target"], shapes.TARGET, source, "target")
    elif "target" in data and data["target"] != {}:
        raise SummaryFileError(source, "target", f"expected a mapping, found {shapes.kind(data['target'])}")


def _check_step(step: Any, source: str, where: str) -> None:
    if not isinstance(step, dict):
        raise SummaryFileError(source, where, f"expected a mapping, found {shapes.kind(step)}")
    for key in ("kind", "name", "status"):
        if key not in step:
            raise SummaryFileError(source, f"{where}.{key}", "is missing")
        _text(step[key], source, f"{where}.{key}")
        if len(step[key]) > _MAX_NAME:
            raise SummaryFileError(source, f"{where}.{key}", f"is {len(step[key])} characters long (at most {_MAX_NAME})")
    if step["status"] not in STATUSES:
        raise SummaryFileError(source, f"{where}.status", f"expected one of {', '.join(STATUSES)}")
    for key in _STEP_TEXT:
        if key in step:
            _text(step[key], source, f"{where}.{key}")
    for key in STEP_FIELDS:  # a step's configuration: a text, or null where it does not apply
        if step.get(key) is not None:
            _text(step[key], source, f"{where}.{key}")
    if not confined(step.get("log") or ""):
        raise SummaryFileError(source, f"{where}.log", "must be a path inside the repository (tipcgen run "
                               "writes ./test_tipc/output/...): a summary never makes tipcgen read other files")
    for key in ("training", "precision"):  # golden names its result files by them: one plain name each
        value = step.get(key)
        if value is not None and (re.search(r"[/\\\0]", value) or value in (".", "..")):
            raise SummaryFileError(source, f"{where}.{key}", "must be a plain name (no '/', no '..'): golden "
                                   "names files by it")
    if not confined(step["name"]):  # report and accept read <run folder>/<name>/train.log
        raise SummaryFileError(source, f"{where}.name", "must name a folder inside the run folder (no '..', "
                               "no absolute path): a summary never makes tipcgen read other files")
    for key in _STEP_TEXT:
        if key in step:
            shapes.check(step[key], shapes.TEXT, source, f"{where}.{key}")  # and not longer than a text can be
    speed = step.get("speed", {})
    shapes.check(speed, shapes.SPEED_STEP if step["kind"] == SPEED and speed else shapes.SPEED,
                  source, f"{where}.speed")
    if step.get("exit_code") is not None:
        _exit_code(step["exit_code"], source, f"{where}.exit_code")
    if "seconds" in step:
        _seconds(step["seconds"], source, f"{where}.seconds")
    _texts(step.get("tail", []), source, f"{where}.tail")
    metrics = step.get("metrics", {})
    if not isinstance(metrics, dict):
        raise SummaryFileError(source, f"{where}.metrics", f"expected a mapping, found {shapes.kind(metrics)}")
    for key, value in metrics.items():
        _number(value, source, f"{where}.metrics.{shapes.plain(key)}", finite=False)
    _check_result(step.get("check", {}), source, f"{where}.check")


def _check_result(check: Any, source: str, where: str) -> None:
    """The fields of a result check that the report formats as numbers."""
    if not isinstance(check, dict):
        raise SummaryFileError(source, where, f"expected a mapping, found {shapes.kind(check)}")
    for key in ("atol", "rtol"):
        if check.get(key) is not None:
            _number(check[key], source, f"{where}.{key}")
    for key in ("failures", "logs"):
        if check.get(key) is not None and not _is_int(check[key]):
            raise SummaryFileError(source, f"{where}.{key}", f"expected a whole number, found {shapes.kind(check[key])}")
    for key in ("max_abs", "max_rel"):
        values = check.get(key, {})
        if not isinstance(values, dict):
            raise SummaryFileError(source, f"{where}.{key}", f"expected a mapping, found {shapes.kind(values)}")
        for name, value in values.items():
            if value is not None or key == "max_abs":
                _number(value, source, f"{where}.{key}.{shapes.plain(name)}", finite=False)
    if check.get("max_abs") and (check.get("atol") is None or check.get("rtol") is None):
        raise SummaryFileError(source, where, "has max_abs but no atol and rtol")
    latency = check.get("latency_ms", {})  # check_inference.py: configuration -> {mean_ms, p50_ms, runs}
    if not isinstance(latency, dict):
        raise SummaryFileError(source, f"{where}.latency_ms", f"expected a mapping, found {shapes.kind(latency)}")
    for name, figures in latency.items():
        if not isinstance(figures, dict):
            raise SummaryFileError(source, f"{where}.latency_ms.{shapes.plain(name)}", f"expected a mapping, found {shapes.kind(figures)}")
        for key in ("mean_ms", "p50_ms", "runs"):
            _number(figures.get(key), source, f"{where}.latency_ms.{shapes.plain(name)}.{key}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any, source: str, where: str) -> None:
    if not isinstance(value, str):
        raise SummaryFileError(source, where, f"expected a text, found {shapes.kind(value)}")


def _texts(value: Any, source: str, where: str) -> None:
    if not isinstance(value, list):
        raise SummaryFileError(source, where, f"expected a list of texts, found {shapes.kind(value)}")
    if len(value) > shapes.MAX_ITEMS:
        raise SummaryFileError(source, where, f"has {len(value)} entries (at most {shapes.MAX_ITEMS})")
    for number, item in enumerate(value):
        _text(item, source, f"{where}[{number}]")


def _number(value: Any, source: str, where: str, finite: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SummaryFileError(source, where, f"expected a number, found {shapes.kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise SummaryFileError(source, where, "is a number too large for any measurement") from None
    if finite and not math.isfinite(number):
        raise SummaryFileError(source, where, f"expected a finite number, found {number}")
    return number


def _seconds(value: Any, source: str, where: str) -> None:
    number = _number(value, source, where)
    if not 0 <= number <= _MAX_SECONDS:
        raise SummaryFileError(source, where, f"expected seconds between 0 and {_MAX_SECONDS:g}")


def _exit_code(value: Any, source: str, where: str) -> None:
    if not _is_int(value) or not -_MAX_EXIT < value < _MAX_EXIT:
        raise SummaryFileError(source, where, f"expected an exit code (a whole number), found {shapes.kind(value)}")


def check_alignment_data(data: Any, source: str) -> None:
    """The fields of an `align report --json` file that `tipcgen report --align` shows."""
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise SummaryFileError(source, "", "not an alignment report (no rows)")
    if not isinstance(data.get("passed"), bool):
        raise SummaryFileError(source, "passed", f"expected true or false, found {shapes.kind(data.get('passed'))}")
    for key in ("pass", "fail", "missing"):
        if not _is_int(data.get(key)):
            raise SummaryFileError(source, key, f"expected a whole number, found {shapes.kind(data.get(key))}")
    _text(data.get("folder"), source, "folder")
    for number, row in enumerate(data["rows"]):
        where = f"rows[{number}]"
        if not isinstance(row, dict):
            raise SummaryFileError(source, where, f"expected a mapping, found {shapes.kind(row)}")
        for key in ("checkpoint", "status", "detail"):
            _text(row.get(key), source, f"{where}.{key}")
        if row.get("threshold") is not None:
            _number(row["threshold"], source, f"{where}.threshold")
        if row.get("worst") is not None and not isinstance(row["worst"], str):
            _number(row["worst"], source, f"{where}.worst", finite=False)
