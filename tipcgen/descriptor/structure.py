"""A descriptor's structure checked against the model's JSON Schema: one DescriptorError for the first problem.

The shipped ``tipcgen/tipc.schema.json`` (generated from ``model.py``) says every field's type, allowed values,
required fields, ranges and patterns; this module reads that file and refuses what it refuses, in the words of
every other descriptor message (``file:line: field: what``, the hint from the field's doc). It is no general JSON
Schema engine: it knows the draft-07 keywords the schema uses (``KEYWORDS``; tests/test_schema.py holds the
generated schema to them and this module's answers equal to ``jsonschema``'s on generated descriptors). Why not
``jsonschema`` or pydantic here: loading a descriptor (init, lint, run) would start about 45 ms slower
(docs/ARCHITECTURE.md, "The descriptor's validation"). What a schema cannot say (a model_name that names a folder,
full-width punctuation, the env deny-list, fields that depend on each other) is ``validate*.py``'s, after this.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.core.text import quoted
from tipcgen.descriptor.schema import SCHEMA_FILE
from tipcgen.descriptor.yaml_lines import describe

# The keywords this module reads; any other in the generated schema fails tests/test_schema.py.
KEYWORDS = frozenset({"$schema", "title", "description", "default", "type", "anyOf", "properties",
                      "additionalProperties", "patternProperties", "required", "propertyNames", "minProperties", "items",
                      "minItems", "uniqueItems", "minLength", "pattern", "not", "enum", "const", "minimum", "maximum",
                      "exclusiveMaximum"})
_SCALAR_TYPES = {"string", "number", "integer", "boolean", "null"}
_NO_NODE: dict[str, Any] = {}


@lru_cache(maxsize=1)
def shipped() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Problem:
    """Where a value breaks the schema, what it is, and the doc of the nearest field that has one (the hint)."""

    path: str
    message: str
    doc: str = ""
    at_key: bool = False  # a key's own line (an unknown field); else the nearest line up (a missing field's mapping)


def check(data: Any, source: str, lines: dict[str, int], schema: dict[str, Any] | None = None) -> None:
    """Raises one DescriptorError for the first part of ``data`` the schema refuses (fields in file order)."""
    problem = _check(data, schema or shipped(), "", "")
    if problem is not None:
        path, line = problem.path, lines.get(problem.path)
        if not problem.at_key:  # a missing field: the line of the mapping it belongs in
            up = path
            while line is None and up:
                shorter = re.sub(r"(^|\.)[^.\[]*$|\[[0-9]+\]$", "", up)
                up = shorter if shorter != up else ""
                line = lines.get(up)
        raise DescriptorError(source, path or "(top level)", problem.message, line, problem.doc) from None


def accepts(data: Any, schema: dict[str, Any] | None = None) -> bool:
    return _check(data, schema or shipped(), "", "") is None


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "unknown"


def _is(value: Any, kind: str) -> bool:
    found = json_type(value)
    return found == kind or (kind == "number" and found == "integer")


def _types(node: dict[str, Any]) -> set[str]:
    """The JSON types a node can take (every type where it says none)."""
    if "anyOf" in node:
        return set().union(*(_types(branch) for branch in node["anyOf"]))
    if "const" in node:
        return {json_type(node["const"])}
    if "enum" in node:
        return {json_type(item) for item in node["enum"]}
    kind = node.get("type")
    if kind is None:
        return {"string", "number", "integer", "boolean", "null", "array", "object"}
    return set(kind) if isinstance(kind, list) else {kind}


def _check(value: Any, node: dict[str, Any], path: str, doc: str) -> Problem | None:
    doc = _plain(node.get("description")) or doc
    if "anyOf" in node and (problem := _any_of(value, node, path, doc)) is not None:
        return problem
    if "const" in node and (value != node["const"] or json_type(value) != json_type(node["const"])):
        return Problem(path, _expected(node, value), doc)
    if "enum" in node and not any(value == item and json_type(value) == json_type(item) for item in node["enum"]):
        return Problem(path, _expected(node, value), _enum_hint(node, value, doc))
    kind = node.get("type")
    if kind is not None and not any(_is(value, k) for k in (kind if isinstance(kind, list) else [kind])):
        return Problem(path, _expected(node, value), doc)
    if isinstance(value, dict):
        return _object(value, node, path, doc)
    if isinstance(value, list):
        return _array(value, node, path, doc)
    if isinstance(value, str):
        return _string(value, node, path, doc)
    low, high, below = node.get("minimum"), node.get("maximum"), node.get("exclusiveMaximum")
    if json_type(value) in ("integer", "number") and ((low is not None and not value >= low)
                                                      or (high is not None and not value <= high)
                                                      or (below is not None and not value < below)):
        return Problem(path, _expected(node, value), doc)
    return None


def _any_of(value: Any, node: dict[str, Any], path: str, doc: str) -> Problem | None:
    """None when a branch passes; else the problem inside the branch of the value's own type (a mapping's
    unknown key, not "expected text or a mapping"), or what the branches take together."""
    problems = []
    for branch in node["anyOf"]:
        problem = _check(value, branch, path, doc)
        if problem is None:
            return None
        problems.append((branch, problem))
    takes_values = any(_types(branch) & (_SCALAR_TYPES - {"null"}) for branch in node["anyOf"])
    own = [problem for branch, problem in problems if any(_is(value, kind) for kind in _types(branch))
           and (not takes_values or _looks_like(value, branch))]
    if len(own) == 1 or (own and json_type(value) in ("object", "array")):
        return own[0]
    return Problem(path, _expected(node, value), doc)


@lru_cache(maxsize=None)
def _regex(pattern: str) -> re.Pattern[str]:
    """A schema pattern as JSON Schema (ECMA 262) and pydantic read it: ``$`` is the end of the text, never before
    a final line break as Python's ``$`` is (``md5: "<32 hex digits>\\n"`` is refused)."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


def _looks_like(value: Any, node: dict[str, Any]) -> bool:
    """Where a field takes a value or a mapping of named fields (a slot line: a value or ``{key, value}``), a
    mapping is read as those fields only when it has one of them: ``{a: 1}`` is a wrong value, not a
    ``{key, value}`` with an unknown field."""
    if isinstance(value, dict) and "anyOf" not in node and node.get("properties") and node.get("additionalProperties") is False:
        return bool(set(value) & set(node["properties"]))
    return True


def _object(value: dict[str, Any], node: dict[str, Any], path: str, doc: str) -> Problem | None:
    properties = node.get("properties", _NO_NODE)
    extra = node.get("additionalProperties", True)
    names, patterns = node.get("propertyNames"), node.get("patternProperties", _NO_NODE)
    for key in value:
        sub = f"{path}.{key}" if path else key
        if names is not None and not accepts(key, names):
            noun = _plain(names.get("description")) or "a name this mapping takes"
            hint = _enum_hint(names, key, "") if "enum" in names else ""
            return Problem(sub, f"is not {noun}", f"{hint} expected {_what(names)}".lstrip(), at_key=True)
        if key not in properties and extra is False and not any(_regex(p).search(key) for p in patterns):
            allowed = sorted(properties)
            close = difflib.get_close_matches(key, allowed, n=1)
            return Problem(sub, "unknown field", f"did you mean '{close[0]}'?" if close else
                           "allowed: " + ", ".join(allowed), at_key=True)
    for name in node.get("required", ()):
        sub = f"{path}.{name}" if path else name
        if name not in value:
            return Problem(sub, "is missing", _missing_hint(sub, properties.get(name, _NO_NODE)))
        if value[name] is None and _check(None, properties.get(name, _NO_NODE), sub, "") is not None:
            return Problem(sub, "is null", _missing_hint(sub, properties.get(name, _NO_NODE)), at_key=True)
    if len(value) < node.get("minProperties", 0):
        return Problem(path, _expected(node, value), doc)
    for key, item in value.items():
        sub = f"{path}.{key}" if path else key
        matched = [schema for pattern, schema in patterns.items() if _regex(pattern).search(key)]
        child = properties.get(key) or (matched[0] if matched else extra if isinstance(extra, dict) else None)
        if child is not None and (problem := _check(item, child, sub, doc if key not in properties else "")) is not None:
            return problem
    return None


def _array(value: list[Any], node: dict[str, Any], path: str, doc: str) -> Problem | None:
    if len(value) < node.get("minItems", 0):
        return Problem(path, _expected(node, value), doc)
    items = node.get("items")
    for i, item in enumerate(value):
        if isinstance(items, dict) and (problem := _check(item, items, f"{path}[{i}]", doc)) is not None:
            return problem
    if node.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if any(item == other and json_type(item) == json_type(other) for other in seen):
                return Problem(path, f"names {quoted(str(item))} twice", doc)
            seen.append(item)
    return None


def _string(value: str, node: dict[str, Any], path: str, doc: str) -> Problem | None:
    if len(value) < node.get("minLength", 0):
        return Problem(path, f"expected non-empty text, found {describe(value)}", doc)
    pattern = node.get("pattern")
    if pattern is not None and not _regex(pattern).search(value):
        what = node["title"] if isinstance(node.get("title"), str) else f"text of the form {pattern}"
        return Problem(path, f"expected {what}, found {describe(value)}", doc)
    outside = node.get("not", _NO_NODE).get("pattern")
    if outside is not None and _regex(outside).search(value):
        return Problem(path, f"{quoted(value)} must be a relative path inside the repository (or data folder)", doc)
    return None


# -- the words of a message
def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return "null" if value is None else str(value)


def _enum_hint(node: dict[str, Any], value: Any, doc: str) -> str:
    choices = [str(item) for item in node["enum"]]
    close = difflib.get_close_matches(value, choices, n=1) if isinstance(value, str) else []
    return f"did you mean '{close[0]}'? {doc}".rstrip() if close else doc


def _expected(node: dict[str, Any], value: Any) -> str:
    return f"expected {_what(node)}, found {describe(value)}"


def _join(words: list[str]) -> str:
    words = list(dict.fromkeys(w for w in words if w))
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _what(node: dict[str, Any]) -> str:
    """What a node takes, in words: ``a whole number from 1 to 86400``, ``train or infer``, ``a single value``."""
    if isinstance(node.get("title"), str):  # the model's own words for it
        return node["title"]
    if "const" in node:
        return _value(node["const"])
    if "enum" in node:
        items = [_value(item) for item in node["enum"]]
        return _join(items) if len(items) <= 2 else "one of " + ", ".join(items)
    if "anyOf" in node:
        branches = node["anyOf"]
        scalars = [b for b in branches if _types(b) <= _SCALAR_TYPES - {"null"}]
        if len(set().union(*map(_types, scalars)) - {"integer"}) >= 3 if scalars else False:
            branches = [{"anyOf": scalars}] + [b for b in branches if b not in scalars]
            words = ["a single value"] + [_what(b) for b in branches[1:] if b.get("type") != "null"]
        else:
            words = [_what(branch) for branch in branches if branch.get("type") != "null"]
        nullable = any(branch.get("type") == "null" for branch in branches)
        return _join(words) + (" (or null)" if nullable else "")
    kind = node.get("type")
    if isinstance(kind, list):
        return _join([_what({**node, "type": k}) for k in kind])
    low, high = node.get("minimum"), node.get("maximum", node.get("exclusiveMaximum"))
    if kind in ("integer", "number"):
        noun = "a whole number" if kind == "integer" else "a number"
        if low is not None and high is not None:
            return f"{noun} from {_value(low)} to {_value(high)}"
        return f"{noun} ≥ {_value(low)}" if low is not None else noun
    if kind == "string":
        return "non-empty text" if node.get("minLength") else "text"
    if kind == "boolean":
        return "true or false"
    if kind == "null":
        return "null"
    if kind == "array":
        item = node.get("items")
        inner = f" of {_plural(_what(item))}" if isinstance(item, dict) else ""
        return ("a non-empty list" if node.get("minItems") else "a list") + inner
    if kind == "object":
        names = list(node.get("properties", ()))
        if names:
            return "a mapping {" + ", ".join(names) + "}" if len(names) <= 5 else "a mapping of its fields"
        return "a non-empty mapping" if node.get("minProperties") else "a mapping"
    return "a value"


def _plural(words: str) -> str:
    return re.sub(r"^an? ", "", words) if words.startswith(("a ", "an ")) else words


def _missing_hint(path: str, node: dict[str, Any]) -> str:
    doc = _plain(node.get("description"))
    return f"give '{path}:' a value" + (f": {doc}" if doc else " (see docs/DESCRIPTOR.md)")


def _plain(doc: Any) -> str:
    return doc if isinstance(doc, str) else ""
