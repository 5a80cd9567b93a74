"""Descriptor YAML text, written the one way: ``tipcgen new`` and ``tipcgen import`` both write with these.

Every value is written so that loading it gives back the config text it stands for: a plain
scalar where YAML reads it back as itself, else quoted; lists and per-mode mappings in flow style
where they render back the same. ``rendered`` is the descriptor's own rule for a scalar's config
text (validate_values.config_text), so writer and validator cannot drift apart.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import yaml

from tipcgen.descriptor.validate_values import config_text as rendered
from tipcgen.format import layout, words

# Written even when they hold the default: the descriptor requires them.
REQUIRED_FIELDS = ("model_name", "python", "gpu_list", "train.trainer", "train.norm", "inference.script")
_KNOWN_MODES = (*words.MODES, *words.KNOWN_EXTRA_MODES)
COMMENT_COLUMN = 50
LINE_WIDTH = 110
# What the descriptor validator accepts where: slot values (scalar_text), keys, section text.
VALUE_TYPES = (str, bool, int, float, type(None))
KEY_TYPES = (str, type(None))
TEXT_TYPES = (str,)


def flow(value: Any) -> str:
    """A YAML flow node for a Python value (lists and mappings on one line)."""
    text = yaml.safe_dump([value], default_flow_style=True, width=10_000, sort_keys=False).strip()
    return text[1:-1]


def keyed(flag: str | None, value: Any) -> str:
    """A flag line's node, ``{key: FLAG, value: VALUE}``; ``null`` without a flag."""
    if flag is None:
        return "null"
    return "{key: " + flow(flag) + ", value: " + flow(value) + "}"


def slot_lines(table: tuple[layout.Slot, ...], pairs: dict[str, tuple[str, str | None]]
               ) -> tuple[list[str], list[layout.Slot]]:
    """The slot fields in layout order, grouped under their section, each with its slot's comment;
    and the slots written (a slot whose line is the default is left out)."""
    out: list[str] = []
    written = []
    current = ""
    for slot in table:
        if slot.kind != "kv":
            continue
        node = slot_node(slot, *pairs[slot.name])
        if node is None:
            continue
        section, _, field = slot.field.rpartition(".")
        if section != current:
            out += ["", f"{section}:"]
            current = section
        out += commented(f"{'  ' if section else ''}{field}: {node}", slot.doc)
        written.append(slot)
    return out, written


def commented(entry: str, comment: str) -> list[str]:
    """The entry with its comment aligned after it, or on the line above when that is too long."""
    line = f"{entry.ljust(COMMENT_COLUMN)}  # {comment}"
    if len(line) <= LINE_WIDTH:
        return [line]
    indent = entry[: len(entry) - len(entry.lstrip())]
    return [f"{indent}# {comment}", entry]


def slot_node(slot: layout.Slot, key: str, value: str | None) -> str | None:
    """The most natural YAML for one slot; ``None`` when leaving it out renders the same line."""
    if value is None:
        return f"{{key: {token(key, KEY_TYPES, True)}}}"  # a line without ':'
    if (key, value) == (slot.key or "null", "null") and slot.field not in REQUIRED_FIELDS:
        return None
    if key == slot.key:
        return value_node(slot, value, in_flow=False)
    return f"{{key: {token(key, KEY_TYPES, True)}, value: {value_node(slot, value, in_flow=True)}}}"


def value_node(slot: layout.Slot, value: str, in_flow: bool) -> str:
    """A per-mode flow mapping or a flow list where it renders back the same, else the text as is."""
    modes = per_mode(value) if slot.name in layout.PER_MODE_SLOTS else None
    if modes:
        return "{" + ", ".join(f"{mode}: {token(item, VALUE_TYPES, True)}" for mode, item in modes) + "}"
    items = value.split("|")
    if slot.name in layout.LIST_SLOTS and len(items) > 1 and all(item and item == item.strip() for item in items):
        return "[" + ", ".join(token(item, VALUE_TYPES, True) for item in items) + "]"
    return token(value, VALUE_TYPES, in_flow)


def per_mode(value: str) -> list[tuple[str, str]] | None:
    """``mode=value`` items with known, distinct modes and plain values; ``None`` otherwise."""
    pairs = [item.partition("=") for item in value.split("|")]
    modes = [mode for mode, _, _ in pairs]
    plain = all(equals and mode in _KNOWN_MODES and "=" not in item and item == item.strip()
                for mode, equals, item in pairs)
    return [(mode, item) for mode, _, item in pairs] if plain and len(set(modes)) == len(modes) else None


# A plain YAML scalar for sure: printable ASCII, no leading indicator (a '-', '?' or ':' only before
# a non-space), no ': ' or ' #', no ':' at the end, no surrounding spaces. Anything else takes the slow path.
_PLAIN_TEXT = re.compile(r"^(?:[A-Za-z0-9_.=+/$~()^;<\\]|[-?:][!-~])(?:[ -~](?<!: )(?<! #))*(?<![ :])\Z"
                         r"|^[A-Za-z0-9_.=+/$~()^;<\\]\Z")
_FLOW_INDICATORS = re.compile(r"[,\[\]{}?:#'\"]")  # PyYAML reads these differently in [flow]
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


@lru_cache(maxsize=4096)
def token(text: str, types: tuple[type, ...], in_flow: bool) -> str:
    """``text`` as a plain YAML scalar if it loads back as one of ``types`` and renders as
    ``text`` (``True``, ``1.0``, ``null``; ``0,1`` outside a flow list), else single-quoted."""
    if _PLAIN_TEXT.match(text) and not (in_flow and _FLOW_INDICATORS.search(text)) \
            and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG:
        return text  # plain text that YAML reads back as itself (every caller accepts str)
    try:
        loaded = yaml.safe_load(f"[{text}]" if in_flow else f"k: {text}")
    except (yaml.YAMLError, ValueError):  # ValueError: an int of more digits than Python converts
        loaded = None
    if in_flow and isinstance(loaded, list) and len(loaded) == 1:
        value, found = loaded[0], True
    elif not in_flow and isinstance(loaded, dict) and list(loaded) == ["k"]:
        value, found = loaded["k"], True
    else:
        value, found = None, False
    if found and isinstance(value, types) and rendered(value) == text:
        return text
    return "'" + text.replace("'", "''") + "'"
