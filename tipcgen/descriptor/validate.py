"""The descriptor validator: YAML values (with their lines) → a Descriptor, or one DescriptorError.

The structure (types, allowed values, unknown and missing fields, ranges, patterns) is the model's, checked first
against its JSON Schema by ``structure.py``; what follows here are the rules a schema cannot state and the
Descriptor built: the slot lines (``layout.py``) here, the groups (data, checks, ...) in ``validate_fields.py``,
the text rules in ``validate_values.py``: the Validator holds one of each (composition, no class chain).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.core.text import quoted
from tipcgen.descriptor import benchmark as benchmark_spec
from tipcgen.descriptor import kept as kept_spec
from tipcgen.descriptor import dy2static as dy2static_spec
from tipcgen.descriptor import fleet as fleet_spec
from tipcgen.descriptor import ptq as ptq_spec
from tipcgen.descriptor import structure
from tipcgen.descriptor import target as target_spec
from tipcgen.descriptor.fields import FIELD_DEFAULTS, REQUIRED, default
from tipcgen.descriptor.schema import (
    FIXED_KEY_FIELDS,
    GPU_ENTRY_RE,
    KEY_RE,
    MODEL_NAME_HINT,
    PYTHON_RE,
    SECTION_FIELDS,
    is_model_name,
)
from tipcgen.descriptor.spec import Descriptor, SlotValue
from tipcgen.descriptor.validate_fields import Groups
from tipcgen.descriptor.validate_values import Checks
from tipcgen.format import chain, chains, dy2static, layout, layout_check


class Validator:
    """One descriptor file's values → a Descriptor: the slots here, the groups by `Groups`, single values by
    `Checks` (composed, one of each per file)."""

    def __init__(self, source: str, lines: dict[str, int]) -> None:
        self.values = Checks(source, lines)
        self.groups = Groups(self.values)

    def slot_value(self, value: Any, path: str, slot: layout.Slot) -> str:
        """scalar | list (|-joined, for list slots) | mapping of mode → value (for per-mode slots)."""
        return self._slot_text(value, path, slot)

    def _infer_shapes(self, slots: dict[str, SlotValue], table: tuple[layout.Slot, ...]) -> None:
        """Inference values of another shape (``--run_mode:paddle``) are passed to the script as they
        are; only values that lint would read as a shifted inference block are refused."""
        values = {slot.index: slots[slot.name].value for slot in table if slot.kind == "kv"}
        bad, offset = layout_check.infer_shapes(values.get, table)
        if offset is not None:
            slot = bad[0]
            raise self.values.fail(slot.field, f"{quoted(slots[slot.name].value)} and the next inference values fit their "
                            f"neighbours' shapes: lint would read a shifted inference block",
                            f"this inference line takes {slot.value[0]} (a list of them joined by | for a matrix)")

    def _slot_text(self, value: Any, path: str, slot: layout.Slot) -> str:
        """A line's value as the config writes it; its shape (a list only on a loop line, modes only on a per-mode
        line, no empty list, no unknown mode) is the model's, checked by `structure` before."""
        if isinstance(value, list):
            parts = []
            for i, item in enumerate(value):
                part = self.values.scalar_text(item, f"{path}[{i}]")
                if "|" in part:
                    raise self.values.fail(f"{path}[{i}]", f"{quoted(part)} contains '|'", "one value per list item")
                parts.append(part)
            return "|".join(parts)
        if isinstance(value, dict):
            parts = []
            for mode, item in value.items():
                part = self.values.scalar_text(item, f"{path}.{mode}")
                if "|" in part or "=" in part:
                    raise self.values.fail(f"{path}.{mode}", f"{quoted(part)} contains '|' or '='", "give one plain value per mode")
                parts.append(f"{mode}={part}")
            return "|".join(parts)
        return self.values.scalar_text(value, path)

    def slot(self, slot: layout.Slot, value: Any, path: str) -> SlotValue:
        default_key = slot.key
        if isinstance(value, dict) and "key" in value and set(value) <= {"key", "value"}:
            key_raw = value["key"]
            key = "null" if key_raw is None else self.values.text(key_raw, f"{path}.key", what="flag name")
            if not KEY_RE.match(key):
                raise self.values.fail(f"{path}.key", f"{quoted(key)} is not a usable flag name",
                                "a flag name has no ':' or '|', one space between words (as in '-o Global.epochs'), "
                                "and no '=' in its last word (the runner appends =VALUE to it)")
            if "value" not in value:
                return SlotValue(key, None)  # the line is the key alone
            text = self.slot_value(value.get("value"), f"{path}.value", slot)
            return SlotValue(key, text)
        if value is None:
            return SlotValue(default_key or "null", "null")
        return SlotValue(str(default_key), self.slot_value(value, path, slot))

    def descriptor(self, data: Any, base_dir: Path) -> Descriptor:
        if data is None:
            raise DescriptorError(self.values.source, "", "is empty", hint="start from a sample: tipcgen init bert-sst2 writes one")
        if not isinstance(data, dict):  # not a descriptor at all: say so without quoting it
            raise DescriptorError(self.values.source, "", f"is not a descriptor: a YAML mapping of fields was expected, "
                                  f"found {'a list' if isinstance(data, list) else 'a single value'}",
                                  self.values.lines.get(""), "pass a tipc.yaml (docs/DESCRIPTOR.md), e.g. tipcgen init bert-sst2")
        # Types, allowed values, unknown and missing fields, ranges and patterns: the model's, by its JSON Schema.
        structure.check(data, self.values.source, self.values.lines)
        for required in REQUIRED:  # present (the schema says so), but a slot's null would render `key:null`
            if data[required] is None:
                raise DescriptorError(self.values.source, required, "is null", self.values.lines.get(required),
                                      hint=f"give '{required}:' a value (see docs/DESCRIPTOR.md)")
        sections = {name: data[name] for name in SECTION_FIELDS if data.get(name) is not None}
        layout_name = data.get("layout", default("layout"))
        own = {slot.name: slot for slot in layout.slots_of(layout_name)}
        slots: dict[str, SlotValue] = {}
        for slot in layout.TRAIN_INFER_PYTHON:
            if slot.kind != "kv":
                continue
            head, _, tail = slot.field.partition(".")
            given = sections.get(head, {}) if tail else data
            if slot.name not in own and given.get(tail or head) is not None:
                raise self.values.fail(slot.field, f"has no line in the {layout_name} layout",
                                f"leave {slot.field} out, or render the standard layout (layout: standard)")
            slot = own.get(slot.name, slot)  # the tutorial's own default keys (train_model:)
            raw = given.get(tail or head, FIELD_DEFAULTS.get(slot.field))
            slots[slot.name] = self.slot(slot, raw, slot.field)  # a fixed key (model_name, python, ...) is the schema's
        self._required_values(slots)
        self._infer_shapes(slots, layout.slots_of(layout_name))
        model_name = self._model_name(slots[chain.name_of("model_name")].value)
        self._python(slots[chain.name_of("python")].value)
        machines = self._gpu_list(slots)
        data_spec = self.groups.data(data.get("data"))
        sections = self.groups.sections(data.get("sections"))
        bench = benchmark_spec.parse(data.get("benchmark"), self.values.source, self.values.lines)
        if bench is not None and any(name == benchmark_spec.SECTION for name, _ in sections):
            raise self.values.fail("benchmark", f"and sections both give a {benchmark_spec.SECTION} section",
                            f"keep one: the benchmark field, or the sections entry named {benchmark_spec.SECTION}")
        return Descriptor(
            source=self.values.source,
            base_dir=base_dir,
            model_name=model_name,
            slots=slots,
            sections=sections,
            section_headers=self.groups.section_headers(data.get("sections")),
            data=data_spec,
            step_timeout=self.groups.run(data.get("run")),
            checks=self.groups.checks(data.get("checks")),
            paddle2onnx=self.groups.paddle2onnx(data.get(chains.PADDLE2ONNX), data_spec),
            align_thresholds=self.groups.align(data.get("align")),
            target=target_spec.parse(data.get("target"), self.values.source, self.values.lines),
            benchmark=bench,
            description="" if data.get("description") in (None, "") else self.values.text(data["description"], "description"),
            layout=layout_name,
            env=self.groups.env(data.get("env")),
            text=self.groups.text(data.get("text")),
            ptq=ptq_spec.parse(data.get(chains.PTQ), self.values.source, self.values.lines),
            kept=kept_spec.parse(data.get("kept"), self.values.source, self.values.lines),
            dy2static=self._dy2static(data.get(chains.DY2STATIC), slots, layout_name),
            fleet=fleet_spec.parse(data.get(chains.FLEET), self.values.source, self.values.lines, machines),
        )

    def _dy2static(self, value: Any, slots: dict[str, SlotValue], layout_name: str) -> Any:
        """The dy2static section; rendered from the basic config, that config must give the static training."""
        spec = dy2static_spec.parse(value, self.values.source, self.values.lines)
        if spec is None or spec.text is not None:
            return spec
        if layout_name != "standard":
            raise self.values.fail(chains.DY2STATIC, f"renders from the standard layout's train block, not the {layout_name} layout's",
                            "give the config's lines (dy2static.lines: tipcgen import writes them), or use layout: standard")
        given = slots[chain.name_of("train.to_static")]
        if given.key != dy2static.TO_STATIC_TRAINER or given.value is None or given.value.strip() in ("", "null"):
            raise self.values.fail("train.to_static", f"must be the static training's switch, keyed {dy2static.TO_STATIC_TRAINER}, "
                            "for the dy2static chain", f"train.to_static: {{key: {dy2static.TO_STATIC_TRAINER}, value: "
                            "--to_static=True}} (what the train command gets to train through paddle.jit.to_static)")
        return spec

    def _required_values(self, slots: dict[str, SlotValue]) -> None:
        """A slot the runner cannot do without must not render as null: it would run `null`, or train nothing."""
        for field_name in FIXED_KEY_FIELDS:
            given = slots[chain.name_of(field_name)]
            if given.value is None or given.value.strip() in ("", "null", "None"):
                default = f", or leave it out (default: {FIELD_DEFAULTS[field_name]})" if field_name in FIELD_DEFAULTS else ""
                raise self.values.fail(field_name, "needs a value: a null or empty one would render "
                                f"{given.key}:null, which the runner cannot use",
                                f"write {field_name}: VALUE{default} (see docs/DESCRIPTOR.md)")
        for trainer in slots[chain.name_of("train.trainer")].value.split("|"):
            slot = next((layout.SLOT_BY_NAME[n] for n in chain.TRAINER_SLOTS if slots[n].key == trainer.strip()), None)
            if slot is not None and (slots[slot.name].value or "null").strip() in ("", "null", "None"):
                raise self.values.fail(slot.field, f"is null, but train.trainer chooses {quoted(trainer.strip())}: it would train nothing",
                                f"give {slot.field} the train command (e.g. tools/train.py -c config.yml), "
                                "or choose another train.trainer")

    def _model_name(self, name: str) -> str:
        if not is_model_name(name):
            raise self.values.fail("model_name", f"{quoted(name)} cannot name a folder", MODEL_NAME_HINT)
        return name

    def _python(self, python: str) -> None:
        if not PYTHON_RE.match(python):
            raise self.values.fail("python", f"{quoted(python)} is not an interpreter name",
                            "use a command such as python or python3, or a path without spaces")

    def _gpu_list(self, slots: dict[str, SlotValue]) -> str | None:
        """Checks the gpu_list entries; returns the first naming machines by address (the fleet chain renders it)."""
        gpus = slots[chain.name_of("gpu_list")].value.split("|")
        machines = None
        for entry in gpus:
            if not GPU_ENTRY_RE.match(entry):
                raise self.values.fail("gpu_list", f"entry {quoted(entry)} is not a device entry",
                                "use -1 (CPU), 0 (one GPU), 0,1 (one machine, several GPUs), or machines and their devices, "
                                f"ips;devices, as the fleet chain runs them: fleet: {{gpu_list: '{fleet_spec.DEFAULT_GPU_LIST}'}}")
            if fleet_spec.names_addresses(entry):
                problem = fleet_spec.machines_problem(entry)
                if problem:
                    raise self.values.fail("gpu_list", f"entry {quoted(entry)} names machines the fleet chain cannot run: {problem}",
                                    f"name each machine once, by its IPv4 address, as the fleet: section takes them: "
                                    f"fleet: {{gpu_list: '{fleet_spec.DEFAULT_GPU_LIST}'}}")
                machines = machines or entry
        device = slots[chain.name_of("train.device")]
        devices = (device.value or "").split("|")
        # Paired by position; extra values are never read (upstream configs have them), missing ones drop the flag.
        if device.key != "null" and 1 < len(devices) < len(gpus):
            raise self.values.fail("train.device", f"has {len(devices)} values for {len(gpus)} gpu_list entries",
                            "give one value per gpu_list entry (they are paired by position), or a single value")
        return machines

