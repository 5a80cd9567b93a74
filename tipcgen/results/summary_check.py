"""The guard at the edge of a Summary: a summary.json read back is validated against the published schema
(tipcgen/summary.schema.json, with `jsonschema`), then the rules a schema cannot say are checked here: a step's
name and log, and the config, stay inside their folders; the files a summary names are opened only through
`inside` (bounded, links refused). For `report`, `golden`, `accept` and `suite`, which read a summary.json that
anyone could have edited or truncated. Also the alignment report `report --align` reads.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from tipcgen.core import inputs
from tipcgen.core.errors import InputError, SummaryFileError
from tipcgen.format.paths import SUMMARY_JSON

MAX_SUMMARY_BYTES = 64 << 20
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "summary.schema.json"
_TYPE_NAMES = {"string": "a text", "boolean": "true or false", "integer": "a whole number", "number": "a number",
               "array": "a list", "object": "a mapping", "null": "null"}


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


def kind(value: Any) -> str:
    """What was found, named without echoing the value itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    names = {str: "a text", int: "a whole number", float: "a number", list: "a list", dict: "a mapping"}
    return names.get(type(value), type(value).__name__)


def plain(key: Any) -> str:
    """A mapping key as it appears in a field path: escaped, at most 40 characters."""
    text = repr(str(key))[1:-1]
    return text if len(text) <= 40 else text[:40] + "..."


def read_summary_data(path: Any) -> dict:
    """A summary.json parsed and checked; SummaryFileError (exit 2) for anything tipcgen run never writes."""
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
    digest = hashlib.sha256(raw).digest()
    if digest not in _PASSED:  # the check is a function of the bytes: the same file passes once per process
        check_summary_data(data, source)
        _PASSED[digest] = None
        while len(_PASSED) > PASSED_KEPT:
            del _PASSED[next(iter(_PASSED))]
    return data


# The digests (sha256) of the summary.json texts that passed check_summary_data in this process, oldest first:
# report, accept and golden each read a run's summary more than once, and its schema check costs ~25 ms.
_PASSED: dict[bytes, None] = {}
PASSED_KEPT = 64


@lru_cache(maxsize=1)
def _validator():
    """The Draft 2020-12 validator of summary.schema.json: a whole number is an int (never 2.0, never true), and
    format `finite` is asserted (a number neither infinite nor NaN; a schema's minimum cannot refuse NaN)."""
    import jsonschema  # a dependency; imported when a summary is first read (about 0.1 s)

    def finite(value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True  # `type` says what else is wrong
        try:
            return math.isfinite(value)
        except OverflowError:
            return False

    formats = jsonschema.FormatChecker(formats=())
    formats.checks("finite")(finite)
    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine("integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool))
    cls = jsonschema.validators.extend(base, type_checker=types)
    return cls(_compiled(json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))), format_checker=formats)


def _compiled(schema: dict) -> dict:
    """The published schema in an equivalent form that validates ~40% faster (a summary's check: ~8 ms -> ~4.6 ms,
    paid by every reader of a new summary.json): each `{"$ref": "#/$defs/x"}` alone in its mapping is replaced by
    the definition itself (jsonschema resolves a reference on every use), and an `anyOf` of bare types by one
    `type` list (one keyword instead of two branches). Errors name the same field and the same types (`_wants`
    reads a type list as the anyOf's branches); `$defs` stays, for `_wants`. The schema has no recursive
    definition (a summary is a fixed tree)."""
    defs = schema.get("$defs", {})

    def walk(node: Any, seen: tuple = ()) -> Any:
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if len(node) == 1 and isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            if ref in seen:
                return node  # a recursive definition stays a reference
            return walk(defs[ref[8:]], (*seen, ref))
        branches = node.get("anyOf")
        if len(node) == 1 and isinstance(branches, list) and branches and all(
                isinstance(b, dict) and set(b) == {"type"} and isinstance(b["type"], str) for b in branches):
            return {"type": [b["type"] for b in branches]}
        return {key: (value if key == "$defs" else walk(value, seen)) for key, value in node.items()}

    return walk(schema)


def check_summary_data(data: Any, source: str) -> None:
    """Raise SummaryFileError naming the first field of a parsed summary.json that tipcgen run never writes:
    the schema first, then the confinement of the paths it names."""
    if not isinstance(data, dict):
        raise SummaryFileError(source, "", f"expected a JSON object at the top, found {kind(data)}")
    try:
        error = next(iter(sorted(_validator().iter_errors(data), key=_order)), None)
    except RecursionError:
        raise SummaryFileError(source, "", "is nested too deeply") from None
    if error is not None:
        raise SummaryFileError(source, *_described(error))
    if not confined(data["config"]):  # accept reads <repository>/<config>
        raise SummaryFileError(source, "config", "must be a path inside the repository (test_tipc/configs/...)")
    for number, step in enumerate(data["steps"]):
        where = f"steps[{number}]"
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


def _order(error) -> tuple:
    """The error to report first: the one earliest in the document, then the most specific."""
    return (tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path),
            -len(error.context or ()))


def _field(path) -> str:
    where = ""
    for part in path:
        where += f"[{part}]" if isinstance(part, int) else (f".{plain(part)}" if where else plain(part))
    return where


def _wants(schema: Any) -> list[str]:
    """What a (sub)schema accepts, in words."""
    if not isinstance(schema, dict):
        return []
    if "title" in schema:  # a named definition: "a finite number"
        return [schema["title"]]
    if "$ref" in schema:
        return _wants(_validator().schema["$defs"].get(schema["$ref"].rsplit("/", 1)[-1]))
    if "anyOf" in schema:
        return [want for sub in schema["anyOf"] for want in _wants(sub)]
    kinds = schema.get("type", [])
    return [_TYPE_NAMES.get(k, k) for k in ([kinds] if isinstance(kinds, str) else kinds)]


def _described(error) -> tuple[str, str]:
    """(field, problem) of a jsonschema error, in the words of the rest of tipcgen, never echoing a value."""
    while error.validator == "anyOf" and any(e.validator != "type" for e in error.context or ()):
        error = next(e for e in error.context if e.validator != "type")  # a branch of the right type: its detail
    path, value, rule, limit = list(error.absolute_path), error.instance, error.validator, error.validator_value
    if rule == "required":
        missing = next(key for key in limit if key not in value)
        return _field([*path, missing]), "is missing"
    if rule in ("type", "anyOf", "not"):
        wants = list(dict.fromkeys(_wants(error.schema)))
        return _field(path), f"expected {' or '.join(wants) or 'something else'}, found {kind(value)}"
    if rule == "format":
        return _field(path), f"expected a finite number, found {value}"
    if rule == "enum":
        return _field(path), f"expected one of {', '.join(map(str, limit))}"
    if rule == "maxLength":
        return _field(path), f"is a text of {len(value)} characters (at most {limit})"
    if rule in ("maxItems", "maxProperties"):
        return _field(path), f"has {len(value)} entries (at most {limit})"
    if rule in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bounds = error.schema
        low = bounds.get("minimum", bounds.get("exclusiveMinimum"))
        high = bounds.get("maximum", bounds.get("exclusiveMaximum"))
        if high == sys.float_info.max:
            return _field(path), "is a number too large for any measurement"
        return _field(path), f"is a number outside {low:g} .. {high:g}"
    return _field(path), f"does not fit {SCHEMA_FILE.name} ({rule})"


def check_alignment_data(data: Any, source: str) -> None:
    """The fields of an `align report --json` file that `tipcgen report --align` shows."""
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise SummaryFileError(source, "", "not an alignment report (no rows)")
    if not isinstance(data.get("passed"), bool):
        raise SummaryFileError(source, "passed", f"expected true or false, found {kind(data.get('passed'))}")
    for key in ("pass", "fail", "missing"):
        if not _is_int(data.get(key)):
            raise SummaryFileError(source, key, f"expected a whole number, found {kind(data.get(key))}")
    _text(data.get("folder"), source, "folder")
    for number, row in enumerate(data["rows"]):
        where = f"rows[{number}]"
        if not isinstance(row, dict):
            raise SummaryFileError(source, where, f"expected a mapping, found {kind(row)}")
        for key in ("checkpoint", "status", "detail"):
            _text(row.get(key), source, f"{where}.{key}")
        if row.get("threshold") is not None:
            _number(row["threshold"], source, f"{where}.threshold")
        if row.get("worst") is not None and not isinstance(row["worst"], str):
            _number(row["worst"], source, f"{where}.worst", finite=False)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any, source: str, where: str) -> None:
    if not isinstance(value, str):
        raise SummaryFileError(source, where, f"expected a text, found {kind(value)}")


def _number(value: Any, source: str, where: str, finite: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SummaryFileError(source, where, f"expected a number, found {kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise SummaryFileError(source, where, "is a number too large for any measurement") from None
    if finite and not math.isfinite(number):
        raise SummaryFileError(source, where, f"expected a finite number, found {number}")
    return number
