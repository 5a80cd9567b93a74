"""The descriptor's fields as the validator reads them: names, required ones, defaults, allowed values.

All of it is read from the JSON Schema shipped as ``tipcgen/tipc.schema.json``, which ``model.py`` (the one typed
model) generates and tests/test_schema.py keeps equal to a fresh generation; so loading a descriptor (init,
lint, run) reads one JSON file and never imports pydantic (which costs about a quarter of a second at start-up).
The slot fields (one per config line) are layout.py's, as the model's are: a slot added there is a field once
``tipcgen schema -o tipcgen/tipc.schema.json --force`` regenerates the shipped file (tests/test_schema.py says so).
"""
from __future__ import annotations

import json
from typing import Any

from tipcgen.descriptor.schema import SCHEMA_FILE
from tipcgen.format import layout

_SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def _object(node: dict[str, Any]) -> dict[str, Any]:
    """The object (or list) a node takes, looking past ``anyOf [X, null]``."""
    if node.get("type") in ("object", "array"):
        return node
    found = [n for n in node.get("anyOf", ()) if n.get("type") in ("object", "array")]
    return found[0] if len(found) == 1 else {}


_SLOT_FIELDS = [slot.field for slot in layout.TRAIN_INFER_PYTHON if slot.kind == "kv" and slot.field]


def node(path: str) -> dict[str, Any]:
    """The schema of a field: ``data.files.<name>.role`` (``<...>``: a name the user chooses; ``[]``: a list's item)."""
    here = _SCHEMA
    for part in path.split(".") if path else ():
        obj = _object(here)
        if part == "[]":
            here = obj.get("items", {})
        elif part.startswith("<"):
            here = obj.get("additionalProperties", {})
        else:
            here = obj.get("properties", {}).get(part, {})
    return here


def children(path: str) -> frozenset[str]:
    """The names of the fields right below ``path`` (``""``: the top level)."""
    prefix = f"{path}." if path else ""
    slots = {f[len(prefix):] for f in _SLOT_FIELDS if f.startswith(prefix) and "." not in f[len(prefix):]}
    return frozenset(_object(node(path)).get("properties", {})) | slots


def default(path: str) -> Any:
    """The default the model gives a field (a fresh copy; None where it has none): ``default("run.step_timeout")``."""
    return json.loads(json.dumps(node(path).get("default")))


def _enum(schema: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(schema.get("enum") or next(n["enum"] for n in schema.get("anyOf", ()) if "enum" in n))


REQUIRED: tuple[str, ...] = tuple(_SCHEMA["required"])
TOP_FIELDS = children("")  # the groups' own field names are structure.py's to check, from the schema itself
KEPT_FIELDS = children("kept.[]")
SECTION_ENTRY_FIELDS = children("sections.[]")
ROLES = _enum(node("data.files.<name>.role"))
ALIGN_CHECKPOINTS = _enum(_object(node("align.thresholds"))["propertyNames"])
# The slot fields that take a default when left out (python, train.trainer); written as null they are an error.
FIELD_DEFAULTS = {field: default(field) for field in _SLOT_FIELDS if default(field) is not None}
