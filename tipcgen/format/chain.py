"""The chain as data: which step receives which slot, and which trainer pairs with which export.

``layout.py`` holds the slot table (one row per line: index, name, key, descriptor field, value
shape, the steps that receive it, whether the runner fills it). This module holds what is about
the chain rather than a line: the trainer table, and the views the runner templates, ``new``,
lint and the docs read. Everything here refers to a slot by its descriptor field, never by its
name, so renaming a slot is one edit in ``layout.py`` (docs/CHAINS.md, "The description of the
chain").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace

from tipcgen.format import layout

STEPS = ("train", "eval", "export", "infer", "whole_infer")  # the values of a slot's `steps`


@dataclass(frozen=True)
class Trainer:
    """One trainer of the ``trainer`` loop (upstream's dispatch on the trainer name).

    match: the trainer values that choose it (``()``: the key of the ``key`` slot, chosen by the
    user; ``("*",)``: every other value). train: the fields whose values, joined by a space, make
    the train command. export: the field of the paired export command. key: the field whose key
    names the trainer in a config (lint and the descriptor check that its command is not null).
    """

    match: tuple[str, ...]
    train: tuple[str, ...]
    export: str
    key: str
    quant: bool = False


def _anchors(fld: str) -> tuple[str, ...]:
    return layout.SLOT_BY_FIELD[fld].anchors


# In the runner's order: the first match wins, the normal trainer takes every other value.
TRAINERS = (
    Trainer(_anchors("train.pact"), ("train.pact",), "export.quant", "train.pact", quant=True),
    Trainer(_anchors("train.fpgm"), ("train.fpgm",), "export.fpgm", "train.fpgm"),
    Trainer(_anchors("train.distill"), ("train.distill",), "export.distill", "train.distill"),
    Trainer(("to_static_train",), ("train.norm", "train.to_static"), "export.norm", "train.to_static"),
    Trainer((), ("train.custom",), "export.key2", "train.custom"),
    Trainer(("*",), ("train.norm",), "export.norm", "train.norm"),
)


def name_of(fld: str) -> str:
    """The slot name of a descriptor field (``inference.cpu_threads`` → its config slot)."""
    return layout.SLOT_BY_FIELD[fld].name


# The slots whose key names a trainer, in layout order (their commands must not be null when chosen).
TRAINER_SLOTS = tuple(sorted((name_of(t.key) for t in TRAINERS), key=lambda n: layout.SLOT_BY_NAME[n].index))


def slots_of_step(step: str, layout_name: str = "standard") -> tuple[layout.Slot, ...]:
    """The slots a step receives, in layout order, as the layout family's runner passes them."""
    if step not in STEPS:
        raise KeyError(f"{step}: not a step of the chain ({', '.join(STEPS)})")
    return tuple(slot for slot in layout.LAYOUTS[layout_name] if step in slot.steps)


def step_of_field(fld: str) -> str:
    """The first step that receives a field's slot (``new`` asks that step's script for its flag)."""
    steps = layout.SLOT_BY_FIELD[fld].steps
    if not steps:
        raise KeyError(f"{fld}: no step receives this slot")
    return steps[0]


def field_names() -> SimpleNamespace:
    """Slot names by descriptor field, as attributes: ``f.inference.cpu_threads`` in a template."""
    top: dict[str, object] = {}
    for slot in layout.TRAIN_INFER_PYTHON:
        if slot.field is None:
            continue
        head, _, tail = slot.field.partition(".")
        if tail:
            top.setdefault(head, {})[tail] = slot.name  # type: ignore[index]
        else:
            top[head] = slot.name
    return SimpleNamespace(**{k: SimpleNamespace(**v) if isinstance(v, dict) else v for k, v in top.items()})


def _case_pattern(trainer: Trainer) -> str:
    if not trainer.match:
        return f'"$(slot_key {name_of(trainer.key)})"'
    return " | ".join(trainer.match)


def _train_command(trainer: Trainer) -> str:
    words = [f"$(slot_value {name_of(fld)})" for fld in trainer.train]
    return words[0] if len(words) == 1 else '"' + " ".join(words) + '"'


def trainer_cases() -> list[dict[str, str]]:
    """The runner's ``case $trainer in`` arms, rendered from ``TRAINERS``."""
    return [{"pattern": _case_pattern(t), "train": _train_command(t), "export": name_of(t.export),
             "quant": "True" if t.quant else "False"} for t in TRAINERS]


def template_context() -> dict[str, object]:
    """What every runner template gets from the description."""
    return {"f": field_names(), "trainer_cases": trainer_cases()}


# `slot_value NAME`, `slot_key NAME` (and any other `slot_*` helper given a slot name) in a template.
# A `$name` argument is a bash variable, not a slot: the runner's own helpers pass those through.
SLOT_CALL = re.compile(r"\bslot_(?:value|key)\s+({{\s*f\.[\w.]+\s*}}|[A-Za-z_]\w*)")
# `tipc_add_slots ARRAY NAME[=VALUE]...` at the start of a line: each NAME (a line ending in `\` goes on).
ADD_SLOTS = re.compile(r"^[ \t]*tipc_add_slots[ \t]+\w+((?:[^\n]*\\\n)*[^\n]*)", re.MULTILINE)
SLOT_ARG = re.compile(r"(?:^|\s)({{\s*f\.[\w.]+\s*}}|[A-Za-z_]\w*)(?==|\s|$)")
FIELD_REF = re.compile(r"{{\s*f\.([A-Za-z_.]+)\s*}}")


def template_slot_problems(text: str, where: str) -> list[str]:
    """Every slot a template names that the description lacks, or names by its slot name
    (which a rename would break): a template names slots as ``{{ f.<descriptor field> }}``."""
    problems = []
    named = [(number, match.group(1)) for number, line in enumerate(text.splitlines(), start=1)
             for match in SLOT_CALL.finditer(line)]
    named += [(text.count("\n", 0, call.start()) + 1, match.group(1)) for call in ADD_SLOTS.finditer(text)
              for match in SLOT_ARG.finditer(call.group(1).replace("\\\n", " "))]
    for number, ref in sorted(named):
        field = FIELD_REF.fullmatch(ref)
        if field is None:
            hint = (f"write {{{{ f.{layout.SLOT_BY_NAME[ref].field} }}}}" if ref in layout.SLOT_BY_NAME
                    else "no such slot in tipcgen/format/layout.py")
            problems.append(f"{where}:{number}: slot {ref!r}: {hint}")
        elif field.group(1) not in layout.SLOT_BY_FIELD:
            problems.append(f"{where}:{number}: f.{field.group(1)} is no descriptor field of tipcgen/format/layout.py")
    return problems


def slot_table() -> str:
    """The slot-field table of docs/DESCRIPTOR.md, rendered from the description (a test keeps the
    docs equal to it: ``python -c 'from tipcgen.format import chain; print(chain.slot_table())'``)."""
    tutorial = {slot.name: slot.index for slot in layout.TUTORIAL_32}
    rows = ["| field | idx | tutorial idx | key written | shape | steps | meaning |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for slot in layout.TRAIN_INFER_PYTHON:
        if slot.kind != "kv":
            continue
        key = {None: "your flag", "null": "your key (`null` without one)"}.get(slot.key, f"`{slot.key}`")
        steps = ", ".join(slot.steps) or "-"
        meaning = slot.doc + (" (the runner fills the value)" if slot.filled and "fills" not in slot.doc else "")
        rows.append(f"| `{slot.field}` | {slot.index} | {tutorial.get(slot.name, '-')} | {key} | {slot.shape} "
                    f"| {steps} | {meaning} |")
    return "\n".join(rows) + "\n"
