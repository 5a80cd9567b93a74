"""The one layout checker: is each anchor of a layout at its index, and if not, where is it?

lint reports what it finds (rule ``slot-shift``, ``anchor-key``); import and the config model
refuse a file whose headers and ``##`` lines are out of place. The generated runner checks the
same anchors before any step (test_tipc/tipc_preflight.py, from the tables of ``families.runner_tables``).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tipcgen.format import layout

if TYPE_CHECKING:  # the config model imports this module; lines are only read here
    from tipcgen.format.config import Line

# How far from its index an anchor is looked for: a shift of 1-3 lines, the nearest first.
SHIFT_WINDOW = (-1, 1, -2, 2, -3, 3)


@dataclass(frozen=True)
class Anchor:
    index: int
    names: tuple[str, ...]
    kind: str  # header, sep or kv


def _anchor(slot: layout.Slot) -> Anchor:
    return Anchor(slot.index, slot.anchors or (slot.key or slot.name,), slot.kind)


# Every anchor of the 51-line layout (headers, '##', keyed lines).
TRAIN_ANCHORS = tuple(_anchor(slot) for slot in layout.ANCHOR_SLOTS)
# The 32-line layout: its headers, its '##' lines and its keyed lines (train_model: may be renamed).
TUTORIAL_ANCHORS = tuple(
    _anchor(slot) for slot in layout.TUTORIAL_32
    if slot.kind != "kv" or slot.anchors or slot.field in ("train.norm", "whole_infer.export")
)


def structure(table: Sequence[layout.Slot]) -> tuple[Anchor, ...]:
    """The headers and ``##`` lines of a layout: where they sit decides which slot a line is."""
    return tuple(_anchor(slot) for slot in table if slot.kind != "kv")


def holds(line: Line, anchor: Anchor) -> bool:
    """The line has the anchor's key, or (for a kv slot) the ``null`` filler that keeps its place."""
    if anchor.kind == "header":
        return line.header_name in anchor.names
    if anchor.kind == "sep":
        return line.kind == "sep"
    return line.header_name is None and (line.key in anchor.names or line.key == "null")


def holds_strictly(line: Line, anchor: Anchor) -> bool:
    """Like ``holds`` without the ``null`` filler: a filler elsewhere is no evidence of a shift."""
    return holds(line, anchor) and not (anchor.kind == "kv" and line.key == "null")


def offset_of(logical: Sequence[Line], anchor: Anchor) -> int | None:
    """How many lines from its index the anchor sits (within ``SHIFT_WINDOW``), or ``None``."""
    for offset in SHIFT_WINDOW:
        index = anchor.index + offset
        if 0 <= index < len(logical) and holds_strictly(logical[index], anchor):
            return offset
    return None


def find_shift(logical: Sequence[Line], anchors: Sequence[Anchor]) -> tuple[Anchor, int] | None:
    """From the first failing anchor on, find an anchor that sits 1-3 lines away from its
    index; stop at the first anchor that holds its own place (then nothing shifted)."""
    for anchor in anchors:
        if anchor.index < len(logical) and holds(logical[anchor.index], anchor):
            return None
        offset = offset_of(logical, anchor)
        if offset is not None:
            return anchor, offset
    return None


def first_misplaced(logical: Sequence[Line], table: Sequence[layout.Slot]) -> tuple[Anchor, int | None] | None:
    """The first header or ``##`` of the layout that is not at its index (within the file), and
    how far away it sits (``None``: not nearby); ``None`` when every one is in place."""
    for anchor in structure(table):
        if anchor.index < len(logical) and not holds(logical[anchor.index], anchor):
            return anchor, offset_of(logical, anchor)
    return None


def describe(anchor: Anchor) -> str:
    if anchor.kind == "header":
        return f"the {anchor.names[0]} header"
    if anchor.kind == "sep":
        return "'##'"
    return " or ".join(f"'{name}:'" for name in anchor.names)


def anchors_of(table: Sequence[layout.Slot]) -> tuple[Anchor, ...]:
    """Every anchor of a layout family's table (headers, ``##``, keyed lines), as lint checks them."""
    if table is layout.TUTORIAL_32:
        return TUTORIAL_ANCHORS
    return tuple(_anchor(slot) for slot in table if slot.anchors)


def shape_ok(value: str | None, pattern: re.Pattern[str]) -> bool:
    """Every ``|`` item of a value is ``null`` or fits the pattern (an empty value fits nothing)."""
    if value is None or not value.strip():
        return False
    items = value.split("|")
    items = items[:-1] if items[-1] == "" else items
    return all(item.strip() == "null" or pattern.match(item.strip()) for item in items)


def infer_shapes(value_at: Callable[[int], str | None], table: Sequence[layout.Slot]
                 ) -> tuple[list[layout.Slot], int | None]:
    """The keyless inference block (idx 41-45: on/off, counts, precision): the slots whose value has
    another shape, and the offset of a shift that explains them (``None``: no shift does).

    A suite's runner passes these values to its script as they are (PaddleDetection's
    ``--run_mode:paddle|trt_fp32`` at idx 45), so another shape is no error by itself. Only when the
    first odd line is the missing one (every later slot read one line early fits, with values that
    are more than `null`) or an extra one (it and every later slot read one line late fit) is it a shift. ``value_at(i)`` is idx i's value (``None``:
    no such line, or no ``:``).
    """
    shaped = [slot for slot in table if slot.value is not None]
    bad = [slot for slot in shaped if not shape_ok(value_at(slot.index), slot.value[1])]
    if not bad:
        return bad, None
    start = bad[0].index
    # missing at `start`: every later slot sits one line early; extra at `start`: from it on, one late
    for offset, moved in ((-1, [s for s in shaped if s.index > start]), (1, [s for s in shaped if s.index >= start])):
        if moved and all(_fits(value_at(slot.index + offset), slot) for slot in moved):
            return bad, offset
    return bad, None


def _fits(value: str | None, slot: layout.Slot) -> bool:
    """Evidence for a shift: the value has the slot's shape, and is more than a `null` filler."""
    return shape_ok(value, slot.value[1]) and any(item.strip() not in ("", "null") for item in value.split("|"))
