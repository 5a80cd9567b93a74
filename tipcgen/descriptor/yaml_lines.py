"""A descriptor's YAML read into plain Python values, with the line of every value.

Each value's path (``train.epochs``, ``data.setup[0][1]``) maps to its line, so that every
validation message can name file:line:field. Reading refuses what no descriptor holds (binary,
huge numbers, alias bombs) before validation sees it.
"""
from __future__ import annotations

import re
from typing import Any

import yaml

from tipcgen.core.errors import DescriptorError
from tipcgen.core.text import quoted

# A descriptor holds about 150 values (an imported config with long trailing sections, a few thousand);
# far more means an alias that repeats itself (a "billion laughs").
MAX_VALUES = 100_000
MAX_NUMBER_BITS = 256
# A key is echoed in a message only if it looks like a field name: the file may not be a descriptor at all.
_SHOWN_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,39}$")


def read(text: str, source: str) -> tuple[Any, dict[str, int]]:
    """The document as dicts, lists and scalars, and the line of every value by its path."""
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DescriptorError(source, "", f"is not valid YAML: {problem}", line,
                              hint="check indentation and quoting around that line") from None
    except RecursionError:
        raise DescriptorError(source, "", "nests too deeply to be a descriptor",
                              hint="a descriptor is a few levels of mappings and lists") from None
    except UnicodeEncodeError as exc:  # a lone surrogate: only a caller's str can hold one, never a UTF-8 file
        raise DescriptorError(source, "", f"is not valid Unicode text ({exc.reason} at character {exc.start})") from None
    lines: dict[str, int] = {}
    try:
        data = _to_python(node, "", lines, source) if node is not None else None
    except RecursionError:
        raise DescriptorError(source, "", "nests too deeply to be a descriptor (or a YAML alias contains itself)",
                              hint="write the values out instead of using &anchor / *alias") from None
    return data, lines


def _to_python(node: yaml.Node, path: str, lines: dict[str, int], source: str) -> Any:
    lines[path] = node.start_mark.line + 1
    if len(lines) > MAX_VALUES:
        raise DescriptorError(source, path, f"is value number {MAX_VALUES + 1}: far too many for a descriptor",
                              lines[path], "a YAML *alias probably repeats a large value; write the values out")
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or not key or not key.isprintable():
                raise DescriptorError(source, path or "(top level)", "has a key that is not a plain name",
                                      key_node.start_mark.line + 1)
            sub = f"{path}.{key}" if path else key
            if not path and not _SHOWN_KEY_RE.match(key):
                raise DescriptorError(source, "(top level)", "has a key that is not a descriptor field",
                                      key_node.start_mark.line + 1,
                                      "is this a descriptor (tipc.yaml)? Its top-level fields are listed in docs/DESCRIPTOR.md")
            if key in out:
                raise DescriptorError(source, sub, "is given twice", key_node.start_mark.line + 1)
            out[key] = _to_python(value_node, sub, lines, source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_to_python(item, f"{path}[{i}]", lines, source) for i, item in enumerate(node.value)]
    line = node.start_mark.line + 1
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    try:
        value = _SCALARS.construct_document(node)
    # PyYAML's scalar constructors fail with ValueError, IndexError, KeyError, ... on text such as `!!int ''`.
    except Exception:  # noqa: BLE001
        raise DescriptorError(source, path or "(top level)", f"cannot be read as {tag}: {describe(node.value)}", line,
                              "quote the value to keep it as text (and drop any !!tag)") from None
    if isinstance(value, bytes):
        raise DescriptorError(source, path or "(top level)", "is binary data (!!binary)", line, "write the value as text")
    if isinstance(value, int) and value.bit_length() > MAX_NUMBER_BITS:
        raise DescriptorError(source, path or "(top level)", f"is a number of {value.bit_length()} bits: too large for any setting",
                              line, "quote it if it is meant as text")
    return value


_SCALARS = yaml.SafeLoader("")  # constructs scalar nodes only; holds no document state between calls


def shown(value: Any) -> str:
    """A found value in an error message: as written when short (a list shows its items), else described."""
    text = repr(value)
    return text if len(text) < 80 else describe(value)


def describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {quoted(value)}" if len(value) < 60 else f"a text of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return "a mapping with keys " + ", ".join(quoted(str(key), 40) for key in list(value)[:5])
    return type(value).__name__

