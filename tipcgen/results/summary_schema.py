"""summary.schema.json, the published JSON Schema of a summary.json (what Summary.to_dict writes), as data built
from the vocabulary (format/words.py) and, for a step, from summary.Step's fields. tipcgen/summary.schema.json is this, written by
`json_text()`; tests/test_schema.py keeps the file current, `results/summary_check.py` validates against the file.
Standard library only.
"""
from __future__ import annotations

import json
import sys

from tipcgen.format.words import SPEED, STATUSES
from tipcgen.results.summary import flat_fields

MAX_ITEMS = 100_000  # one list or mapping
MAXF = sys.float_info.max
TEXT = {"type": "string", "maxLength": 1 << 20}  # one text: a step's command or a log line is far shorter
NAME = {"type": "string", "maxLength": 4096}  # a step name, kind or status: a path component or two
BOOL = {"type": "boolean"}
INT = {"type": "integer", "minimum": -(1 << 63), "maximum": (1 << 63) - 1}
FINITE = {"$ref": "#/$defs/finite"}
ANY = {"$ref": "#/$defs/number"}


SCALAR = {"$ref": "#/$defs/scalar"}


def opt(s: dict) -> dict:
    return {"anyOf": [{"type": "null"}, s]}


def listof(s: dict) -> dict:
    return {"type": "array", "maxItems": MAX_ITEMS, "items": s}


def mapof(s: dict) -> dict:
    return {"type": "object", "maxProperties": MAX_ITEMS, "additionalProperties": s}


def record(props: dict, required: tuple = (), extra: dict | None = None, **more) -> dict:
    """A mapping with known fields (all optional unless required); other keys must fit extra (None: any value)."""
    r = {"type": "object", "maxProperties": MAX_ITEMS, "properties": props}
    if required:
        r["required"] = list(required)
    if extra is not None:
        r["additionalProperties"] = extra
    r.update(more)
    return r


EXIT = {"type": "integer", "exclusiveMinimum": -(1 << 31), "exclusiveMaximum": 1 << 31}
SECONDS = {"type": "number", "format": "finite", "minimum": 0, "maximum": 1e9}  # 1e9 s: about 30 years
TEXTS = listof({"type": "string"})

# A step's keys are summary.Step's flat record (summary.flat_fields: its fields and its sub-records'), each given
# the schema of its type; a key whose bound is tighter than its type's names its own. `speed` is the step's
# if/then/else below (a benchmark's speed record, else an inference's AutoLog figures).
_STEP_TYPES = {"str": TEXT, "str | None": opt({"type": "string"}), "int | None": opt(EXIT), "float": SECONDS,
               "Status": {"type": "string", "enum": list(STATUSES)}, "list[str]": TEXTS,
               "dict[str, float]": {"type": "object", "additionalProperties": ANY}, "dict": {"type": "object"}}
_STEP_KEYS = {"kind": NAME, "name": NAME, "exit_code": opt(EXIT), "check": {"$ref": "#/$defs/check"}}


def step_properties() -> dict:
    """The step's properties, derived from summary.Step (a type with no schema here is a KeyError: say it)."""
    props = {key: _STEP_KEYS.get(key) or _STEP_TYPES[annotation] for key, annotation, _ in flat_fields()}
    props.pop("speed")
    return props

DEFS = {
  "finite": {"title": "a finite number", "type": "number", "format": "finite",
             "description": "a number that is neither infinite nor NaN"},
  "number": {"title": "a number",
             "description": "any JSON number a float can hold (Infinity and NaN as Python's json writes them)",
             "anyOf": [{"type": "integer", "minimum": -MAXF, "maximum": MAXF},
                       {"type": "number", "not": {"type": "integer"}}]},
  "scalar": {"anyOf": [{"type": "null"}, TEXT, BOOL, ANY]},
  "provenance": record({
    "descriptor": record({"source": TEXT, "sha256": TEXT, "rendered_sha256": opt(TEXT),
                          "changed_since_render": opt(BOOL), "note": TEXT}, extra=SCALAR),
    "config_sha256": TEXT,
    "git": record({"commit": opt(TEXT), "dirty": opt(BOOL), "changed_files": opt(INT), "note": TEXT}, extra=SCALAR),
    "versions": mapof(SCALAR),
    "device": record({"cpu_count": opt(INT), "cuda_visible_devices": opt(TEXT), "gpus": listof(TEXT), "note": TEXT},
                     extra=SCALAR),
    "data": listof(record({"path": TEXT, "method": TEXT, "sha256": TEXT, "size": opt(INT), "files": INT,
                           "mtime": ANY, "note": TEXT}, required=("path", "method"), extra=SCALAR,
                          **{"if": {"properties": {"method": {"const": "sha256"}}, "required": ["method"]},
                             "then": {"required": ["sha256"]}})),
    "data_hashing": mapof(SCALAR),
    "seeds": mapof(SCALAR),
  }),
  "metric": record({"metric": TEXT, "paper": FINITE, "measured": opt(FINITE), "bound": FINITE,
                    "difference": opt(FINITE), "relative_difference": opt(FINITE), "reproduced": BOOL, "step": TEXT},
                   required=("metric", "paper", "measured", "bound", "reproduced"), extra=SCALAR),
  "target": record({"mode": TEXT, "reproduced": BOOL, "note": TEXT, "metrics": listof({"$ref": "#/$defs/metric"}),
                    "target": record({"metrics": mapof(FINITE), "tolerance": FINITE, "relative": BOOL,
                                      "lower_is_better": listof(TEXT)}, extra=SCALAR)},
                   required=("reproduced", "metrics")),
  "speed": mapof(opt({"anyOf": [ANY, TEXT]})),
  "speed_step": record({"ips": ANY, "speed_unit": TEXT, "device_num": opt({"anyOf": [TEXT, INT]}),
                        "peak_memory_mb": opt(ANY), "peak_memory_kind": opt(TEXT)}, required=("ips",), extra=SCALAR),
  "check": {
    "type": "object",
    "properties": {
      "atol": opt(FINITE), "rtol": opt(FINITE),
      "failures": opt({"type": "integer"}), "logs": opt({"type": "integer"}),
      "max_abs": {"type": "object", "additionalProperties": ANY},
      "max_rel": {"type": "object", "additionalProperties": opt(ANY)},
      "latency_ms": {"type": "object", "additionalProperties": {
          "type": "object", "required": ["mean_ms", "p50_ms", "runs"],
          "properties": {"mean_ms": FINITE, "p50_ms": FINITE, "runs": FINITE}}},
    },
    "if": {"properties": {"max_abs": {"minProperties": 1}}, "required": ["max_abs"]},
    "then": {"required": ["atol", "rtol"], "properties": {"atol": FINITE, "rtol": FINITE}},
  },
  "step": {
    "type": "object",
    "required": ["kind", "name", "status"],
    "properties": step_properties(),
    "if": {"properties": {"kind": {"const": SPEED}, "speed": {"minProperties": 1}}, "required": ["kind", "speed"]},
    "then": {"properties": {"speed": {"$ref": "#/$defs/speed_step"}}},
    "else": {"properties": {"speed": {"$ref": "#/$defs/speed"}}},
  },
}
SCHEMA = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://tipcgen.invalid/summary.schema.json",
  "title": "tipcgen run's summary.json",
  "description": ("What `tipcgen run` writes next to a chain's logs (Summary.to_dict): every field a reader "
                  "(report, golden, accept, suite) may rely on. tipcgen validates every summary.json it reads "
                  "against this schema (results/summary_check.py), then checks in code what a schema cannot say: "
                  "that a step's name and log and the config stay inside their folders. Format `finite`: a "
                  "number neither infinite nor NaN."),
  "type": "object",
  "required": ["model", "mode", "config", "steps"],
  "properties": {
    "model": NAME, "mode": NAME, "config": NAME, "chain": NAME,
    "steps": listof({"$ref": "#/$defs/step"}),
    "wall_seconds": SECONDS,
    "runner_exit_code": opt(EXIT),
    "interrupted": BOOL,
    "interrupted_by": {"type": "string",
                       "description": "SIGINT, SIGTERM, SIGHUP or empty: the signal that stopped tipcgen run"},
    "required_kinds": TEXTS,
    "problems": TEXTS,
    "environment": {"type": "object", "additionalProperties": {"type": "string"}},
    "provenance": {"$ref": "#/$defs/provenance"},
    "target": {"type": "object", "description": "{} when the run had no paper target",
               "if": {"minProperties": 1}, "then": {"$ref": "#/$defs/target"}},
    "notes": listof(TEXT),
    "previous": {"type": "string", "maxLength": 4096,
                 "description": "the folder the run before this one was moved aside to (its summary, junit.xml, "
                                "report and logs, no weight file), relative to the repository; empty when none"},
    "ok": BOOL, "exit_code": INT, "passed": INT, "failed": INT, "skipped": INT, "interrupted_steps": INT,
    "steps_seconds": ANY,
  },
  "$defs": DEFS,
}


def json_text() -> str:
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"
