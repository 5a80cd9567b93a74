"""Lint rules for the PTQ configs (``train_ptq_infer_python.txt``: layouts ``ptq``, ``ptq_video``, ``kl_quant``).

Their runners read every line by position (``format/compression.py``), so what breaks them is
what breaks the basic chain: a missing or extra line (``slot-shift``, error), a renamed anchor
key with the lines around it in place (``anchor-key``, warning), a ``null`` where the runner
needs a value (``null-value``, error: ``python:null`` runs ``null``, a null calibration script
quantizes nothing), an inference device the runner does not know (``infer-device``, error), and
in the keyless inference block of ``kl_quant`` a value of the wrong shape (``slot-shift``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from tipcgen.core.text import quoted
from tipcgen.format import compression, layout_check
from tipcgen.format.config import Line, TipcConfig, is_null, split_list

Add = Callable[[int, str, str, str], None]  # (logical index, rule, severity, message)
_NEEDS_VALUE = ("model_name", "python", "trainer", "ptq_train", "inference", "infer_model")
_INFER_DEVICES = ("True", "False", "gpu", "cpu")


def lint(config: TipcConfig, add: Add) -> None:
    """Report the findings of one ``ptq`` or ``kl_quant`` config through ``add``."""
    name = compression.layout_of(config)
    if name is None:
        return
    logical = config.logical_lines()
    if not _anchors(logical, name, add):
        return  # after a shift every slot holds its neighbour's line: the value rules are only noise
    slots = {slot.name: slot for slot in compression.LAYOUTS[name] if slot.kind == "kv"}
    for slot_name, slot in slots.items():
        line = logical[slot.index]
        if slot.value is not None and not layout_check.shape_ok(line.value, slot.value[1]):
            add(slot.index, "slot-shift", "error",
                f"idx {slot.index} ({slot_name}) should hold {slot.value[0]} but holds {quoted(line.text.strip())}: a line "
                "is missing or extra in the inference block, so every later flag is read from its neighbour")
            return
    for slot_name in _NEEDS_VALUE:
        slot = slots.get(slot_name)
        if slot is not None and (is_null(logical[slot.index].value) or logical[slot.index].value.strip() == "None"):
            add(slot.index, "null-value", "error",
                f"{logical[slot.index].key}: has no value (null): the PTQ runner cannot run without it")
    device = logical[slots["infer_use_gpu"].index]
    bad = [item for item in split_list(device.value) if item not in _INFER_DEVICES]  # `cpu ` matches nothing
    if bad and not is_null(device.value):
        add(slots["infer_use_gpu"].index, "infer-device", "error",
            f"inference device {quoted(bad[0])} is none of True/False/gpu/cpu: the runner prints 'Does not support "
            "hardware' and skips those inference cases without a failure line")


def _anchors(logical: Sequence[Line], name: str, add: Add) -> bool:
    """Report the first anchor out of place (``slot-shift``) or renamed in place (``anchor-key``);
    ``True`` when no line is shifted."""
    table = compression.LAYOUTS[name]
    anchors = compression.anchors(name)
    for position, anchor in enumerate(anchors):
        if anchor.index >= len(logical):
            add(len(logical) - 1, "slot-shift", "error",
                f"the file ends after idx {len(logical) - 1} ({len(logical)} of the {len(table)} lines of the "
                f"{name} layout): a line is missing, or the file was cut short")
            return False
        line = logical[anchor.index]
        if layout_check.holds(line, anchor):
            continue
        shift = layout_check.find_shift(logical, anchors[position:])
        if shift is not None:
            moved, offset = shift
            count = abs(offset)
            cause = f"{count} line{'s' if count > 1 else ''} {'missing' if offset < 0 else 'extra'} above it"
            add(anchor.index, "slot-shift", "error",
                f"idx {anchor.index} should hold {layout_check.describe(anchor)} but holds {quoted(line.text.strip())}; "
                f"{layout_check.describe(moved)} sits at idx {moved.index + offset} instead of {moved.index} ({cause}): "
                f"the {name} runner reads every later line from its neighbour")
            return False
        add(anchor.index, "anchor-key", "warning",
            f"idx {anchor.index} should hold {layout_check.describe(anchor)} but holds {quoted(line.text.strip())}; the "
            "lines around it are in place, so only the key differs")
    if len(logical) < len(table):
        add(len(logical) - 1, "slot-shift", "error",
            f"the file ends after idx {len(logical) - 1} ({len(logical)} of the {len(table)} lines of the {name} "
            "layout): a line is missing, or the file was cut short")
        return False
    return True
