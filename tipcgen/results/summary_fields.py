"""The shape of every summary.json field written after the first round (``provenance``, ``target``,
a step's ``speed``, ``notes``, the derived counts), as data, and the one checker that walks it.

``summary_check`` calls ``check(value, SHAPE, ...)`` for each; a value of the wrong type is one
SummaryFileError naming the field (``provenance.git.dirty: expected true, false or null, found a
text``), never a TypeError later in ``report`` or ``accept``. Standard library only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from tipcgen.core.errors import SummaryFileError

MAX_TEXT = 1 << 20  # one text field: a step's command or a log line is far shorter
MAX_ITEMS = 100_000  # one list or mapping


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


@dataclass(frozen=True)
class Leaf:
    """A scalar: ``test`` says whether a value fits, ``want`` how the message names it."""

    want: str
    test: Callable[[Any], bool]


@dataclass(frozen=True)
class Opt:
    inner: Any  # the shape, or null


@dataclass(frozen=True)
class Either:
    shapes: tuple  # the first that fits


@dataclass(frozen=True)
class ListOf:
    item: Any


@dataclass(frozen=True)
class MapOf:
    value: Any  # any text key


@dataclass(frozen=True)
class Record:
    """A mapping with known fields (all optional unless ``required``); other keys must fit ``extra``
    (None: any JSON value, never read)."""

    fields: dict
    required: tuple = ()
    extra: Any = None
    when: tuple = field(default=())  # (field, value, needed field): e.g. method sha256 needs sha256


def _finite(value: Any) -> bool:
    try:
        return _real(value) and math.isfinite(float(value))
    except OverflowError:
        return False


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TEXT = Leaf("a text", lambda v: isinstance(v, str))
BOOL = Leaf("true or false", lambda v: isinstance(v, bool))
INT = Leaf("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < 1 << 63)
NUMBER = Leaf("a finite number", _finite)
ANY_NUMBER = Leaf("a number", lambda v: _real(v) and (not isinstance(v, int) or abs(v) < 1 << 1023))
SCALAR = Opt(Either((TEXT, BOOL, ANY_NUMBER)))

PROVENANCE = Record({
    "descriptor": Record({"source": TEXT, "sha256": TEXT, "rendered_sha256": Opt(TEXT),
                          "changed_since_render": Opt(BOOL), "note": TEXT}, extra=SCALAR),
    "config_sha256": TEXT,
    "git": Record({"commit": Opt(TEXT), "dirty": Opt(BOOL), "changed_files": Opt(INT), "note": TEXT}, extra=SCALAR),
    "versions": MapOf(SCALAR),
    "device": Record({"cpu_count": Opt(INT), "cuda_visible_devices": Opt(TEXT), "gpus": ListOf(TEXT), "note": TEXT},
                     extra=SCALAR),
    "data": ListOf(Record({"path": TEXT, "method": TEXT, "sha256": TEXT, "size": Opt(INT), "files": INT,
                           "mtime": ANY_NUMBER, "note": TEXT}, required=("path", "method"), extra=SCALAR,
                          when=(("method", "sha256", "sha256"),))),
    "data_hashing": MapOf(SCALAR),
    "seeds": MapOf(SCALAR),
})

_METRIC = Record({"metric": TEXT, "paper": NUMBER, "measured": Opt(NUMBER), "bound": NUMBER,
                  "difference": Opt(NUMBER), "relative_difference": Opt(NUMBER), "reproduced": BOOL, "step": TEXT},
                 required=("metric", "paper", "measured", "bound", "reproduced"), extra=SCALAR)
TARGET = Record({"mode": TEXT, "reproduced": BOOL, "note": TEXT, "metrics": ListOf(_METRIC),
                 "target": Record({"metrics": MapOf(NUMBER), "tolerance": NUMBER, "relative": BOOL,
                                   "lower_is_better": ListOf(TEXT)}, extra=SCALAR)},
                required=("reproduced", "metrics"))  # a target without its verdict would pass silently

# An inference case's AutoLog figures (autolog.parse), or a speed step's (benchmark.speed_of_log).
SPEED = MapOf(Opt(Either((ANY_NUMBER, TEXT))))
SPEED_STEP = Record({"ips": ANY_NUMBER, "speed_unit": TEXT, "device_num": Opt(Either((TEXT, INT))),
                     "peak_memory_mb": Opt(ANY_NUMBER), "peak_memory_kind": Opt(TEXT)}, required=("ips",), extra=SCALAR)

# What Summary.to_dict adds; recomputed on reading, but a wrong type still says the file was edited.
DERIVED = Record({"ok": BOOL, "exit_code": INT, "passed": INT, "failed": INT, "skipped": INT,
                  "steps_seconds": ANY_NUMBER, "notes": ListOf(TEXT), "provenance": PROVENANCE})


def check(value: Any, shape: Any, source: str, where: str) -> None:
    """Raise SummaryFileError at the first part of value that does not fit shape (iterative: a deep
    value costs no recursion beyond the shape's own depth)."""
    if isinstance(shape, Leaf):
        if not shape.test(value):
            _fail(source, where, f"expected {shape.want}, found {kind(value)}")
        if isinstance(value, str) and len(value) > MAX_TEXT:
            _fail(source, where, f"is a text of {len(value)} characters (at most {MAX_TEXT})")
    elif isinstance(shape, Opt):
        if value is not None:
            check(value, shape.inner, source, where)
    elif isinstance(shape, Either):
        if not any(_fits(value, s) for s in shape.shapes):
            wants = " or ".join(_want(s) for s in shape.shapes)
            _fail(source, where, f"expected {wants}, found {kind(value)}")
    elif isinstance(shape, ListOf):
        if not isinstance(value, list):
            _fail(source, where, f"expected a list, found {kind(value)}")
        _count(value, source, where)
        for number, item in enumerate(value):
            check(item, shape.item, source, f"{where}[{number}]")
    elif isinstance(shape, MapOf):
        if not isinstance(value, dict):
            _fail(source, where, f"expected a mapping, found {kind(value)}")
        _count(value, source, where)
        for key, item in value.items():
            check(item, shape.value, source, _join(where, plain(key)))
    elif isinstance(shape, Record):
        _record(value, shape, source, where)


def _record(value: Any, shape: Record, source: str, where: str) -> None:
    if not isinstance(value, dict):
        _fail(source, where, f"expected a mapping, found {kind(value)}")
    _count(value, source, where)
    for key in shape.required:
        if key not in value:
            _fail(source, _join(where, key), "is missing")
    for key, item in value.items():
        inner = shape.fields.get(key, shape.extra)
        if inner is not None:
            check(item, inner, source, _join(where, plain(key)))
    for key, equals, needed in shape.when:
        if value.get(key) == equals and needed not in value:
            _fail(source, _join(where, needed), f"is missing (needed where {key} is {equals})")


def _fits(value: Any, shape: Any) -> bool:
    try:
        check(value, shape, "", "")
    except SummaryFileError:
        return False
    return True


def _want(shape: Any) -> str:
    return shape.want if isinstance(shape, Leaf) else "a list" if isinstance(shape, ListOf) else "a mapping"


def _count(value: Any, source: str, where: str) -> None:
    if len(value) > MAX_ITEMS:
        _fail(source, where, f"has {len(value)} entries (at most {MAX_ITEMS})")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _fail(source: str, where: str, problem: str) -> None:
    raise SummaryFileError(source, where, problem)
