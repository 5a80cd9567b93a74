"""lint's slot-value rules: what each line of a conforming config may hold (tipcgen/configs/lint.py).

`SlotRules(linter).run()`: the rules read the per-file linter's ``logical``, ``table``, ``slot_index`` and
``repo_root`` and report through its ``add`` and ``line_of`` (composition: the linter is given, not inherited);
rules and severities are in lint.py's table.
"""
from __future__ import annotations

from typing import Any

from tipcgen.core.text import quoted
from tipcgen.descriptor.schema import MODEL_NAME_HINT, is_model_name
from tipcgen.format import chain, layout, words
from tipcgen.format.config import Line, is_null, parse_per_mode, split_list

_INFER_DEVICES = ("True", "False", "gpu", "cpu")
_FLAG_NAMES = frozenset(s.name for s in layout.TRAIN_INFER_PYTHON if s.kind == "kv" and s.name not in layout.COMMAND_SLOTS)
_LIST_NAMES = frozenset((*layout.LIST_SLOTS, *layout.PER_MODE_SLOTS))
_KNOWN_MODES = frozenset((*words.MODES, *words.KNOWN_EXTRA_MODES))
# Slots the runner cannot do without: null there runs `null`, or trains nothing without a failure line.
_NEEDS_VALUE = tuple(map(chain.name_of, ("model_name", "python", "gpu_list", "train.trainer")))
_MODEL = chain.name_of("model_name")
_TRAINER, _GPUS, _DEVICES, _INFER_DEVICE = map(chain.name_of, ("train.trainer", "gpu_list", "train.device",
                                                               "inference.use_gpu"))


class SlotRules:
    """The slot-value rules of one file, run once the layout's anchors hold, reporting to its linter."""

    def __init__(self, linter: Any) -> None:
        self.linter = linter  # lint._Linter: logical, table, slot_index, repo_root; add, line_of

    @property
    def filled_indices(self) -> set[int]:
        return {slot.index for slot in self.linter.table if slot.kind == "kv" and slot.filled}

    # -- slot values ------------------------------------------------------------------
    def run(self) -> None:
        flags = {self.linter.slot_index[name] for name in _FLAG_NAMES if name in self.linter.slot_index}
        lists = {self.linter.slot_index[name] for name in _LIST_NAMES if name in self.linter.slot_index}
        for index, line in enumerate(self.linter.logical[: len(self.linter.table)]):
            self.slot_whitespace(index, line, flags, lists)
        self.device_list_length()
        self.per_mode_names()
        self.infer_device()
        self.null_values()
        self.model_name()
        if self.linter.repo_root is not None:
            self.missing_scripts()

    def slot_lines(self, name: str) -> tuple[int, Line] | None:
        index = self.linter.slot_index.get(name)
        if index is None or index >= len(self.linter.logical) or self.linter.logical[index].value is None:
            return None
        return index, self.linter.logical[index]

    def slot_whitespace(self, index: int, line: Line, flags: set[int], lists: set[int]) -> None:
        if index not in flags or line.value is None:
            return
        key, value = line.key, line.value.removesuffix("\r")  # a CRLF is reported once, by `crlf`
        if index in self.filled_indices:  # the runner fills the value: only the key is passed
            value = value.strip()
        if key != key.strip() or value != value.lstrip():
            self.linter.add(self.linter.line_of(index), "trailing-space", "error",
                     f"whitespace around ':' in {quoted(line.text.strip())}: the runner passes it into the flag")
        elif value != value.rstrip():
            in_list = index in lists
            effect = "last list item: comparisons fail and log paths split" if in_list else "flag value"
            self.linter.add(self.linter.line_of(index), "trailing-space", "error" if in_list else "warning",
                     f"trailing whitespace after {quoted(value.rstrip())} becomes part of the {effect}")

    def device_list_length(self) -> None:
        gpus, devices = self.slot_lines(_GPUS), self.slot_lines(_DEVICES)
        if gpus is None or devices is None:
            return
        gpu_items, device_items = split_list(gpus[1].value), split_list(devices[1].value)
        if len(device_items) > 1 and len(device_items) != len(gpu_items):
            effect = ("the extra values are ignored" if len(device_items) > len(gpu_items)
                      else "later gpu_list entries run without the device flag")
            self.linter.add(self.linter.line_of(devices[0]), "device-list-length", "warning",
                     f"{len(device_items)} train device values for {len(gpu_items)} gpu_list entries; they pair "
                     f"by position, so {effect}; give one value, or one per entry")

    def per_mode_names(self) -> None:
        for name in layout.PER_MODE_SLOTS:
            found = self.slot_lines(name)
            if found is None:
                continue
            for mode in parse_per_mode(found[1].value):
                if mode in _KNOWN_MODES:
                    continue
                if mode in words.LEGACY_MODES:
                    self.linter.add(self.linter.line_of(found[0]), "unknown-mode", "warning",
                             f"legacy mode name {quoted(mode)}: current runners call it {quoted(words.LEGACY_MODES[mode])}")
                else:
                    self.linter.add(self.linter.line_of(found[0]), "unknown-mode", "error",
                             f"unknown mode {quoted(mode)} (known: {', '.join(words.MODES)}): its value is never used, "
                             "and the intended mode runs without the flag")

    def infer_device(self) -> None:
        found = self.slot_lines(_INFER_DEVICE)
        if found is None or found[1].value.strip() == "null":
            return
        bad = [item for item in split_list(found[1].value) if item.strip() not in _INFER_DEVICES]
        if bad:
            self.linter.add(self.linter.line_of(found[0]), "infer-device", "error",
                     f"inference device {quoted(bad[0])} is none of True/False/gpu/cpu: the runner prints 'Does not "
                     "support hardware' and skips those inference cases without a failure line")

    def null_values(self) -> None:
        for name in _NEEDS_VALUE:
            found = self.slot_lines(name)
            if found is not None and _no_value(found[1].value):
                self.linter.add(self.linter.line_of(found[0]), "null-value", "error",
                         f"{found[1].key}: has no value (null): the runner "
                         + ("trains nothing, and reports no failure" if name == _TRAINER else "cannot run without it"))
        trainer = self.slot_lines(_TRAINER)
        for item in split_list(trainer[1].value) if trainer is not None and not _no_value(trainer[1].value) else ():
            commands = [self.linter.slot_index[name] for name in chain.TRAINER_SLOTS if name in self.linter.slot_index]
            index = next((i for i in commands if i < len(self.linter.logical) and self.linter.logical[i].key == item.strip()), None)
            if index is not None and _no_value(self.linter.logical[index].value):
                self.linter.add(self.linter.line_of(index), "null-value", "error",
                         f"trainer {quoted(item.strip())} is chosen, but its command line {item.strip()}: is null: "
                         "that trainer trains nothing, and reports no failure")

    def model_name(self) -> None:
        found = self.slot_lines(_MODEL)
        if found is None or _no_value(found[1].value):
            return  # null-value says so
        name, upstream = found[1].value.strip(), found[1].bash_value.strip()
        if is_model_name(name):
            return
        # An upstream runner reads only up to a second ':' (PaddleRS's `cd:bit` runs there as `cd`): a warning
        # then, as colon-in-value; tipcgen run and its runner read the whole value and refuse it either way.
        severity = "error" if not is_model_name(upstream) else "warning"
        self.linter.add(self.linter.line_of(found[0]), "model-name", severity,
                 f"model_name {quoted(name)} cannot name the folder test_tipc/output/<model_name>/: tipcgen run "
                 f"refuses it before any step runs; {MODEL_NAME_HINT}")

    def missing_scripts(self) -> None:
        assert self.linter.repo_root is not None
        for name in layout.COMMAND_SLOTS:
            found = self.slot_lines(name)
            if found is None:
                continue
            script = next((word for word in found[1].value.split() if word.endswith(".py")), None)
            if script is not None and not (self.linter.repo_root / script).is_file():
                self.linter.add(self.linter.line_of(found[0]), "missing-script", "error",
                         f"{name} runs {quoted(script)}, which does not exist under {self.linter.repo_root}")


def _no_value(value: str | None) -> bool:
    """``null``, empty, or Python's ``None`` (a descriptor or script that printed it): nothing to run."""
    return is_null(value) or value.strip() == "None"
