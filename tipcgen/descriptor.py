"""The model descriptor (``tipc.yaml``): schema, loading and validation.

A descriptor says everything a TIPC chain needs. Its slot fields map one to one onto the
lines of ``train_infer_python.txt`` (see ``layout.py``); the rest describes data and limits.
Every error names the file, the line, the field, what was found and what is expected.
"""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from . import benchmark as benchmark_spec
from . import inputs, layout
from . import target as target_spec
from .config import Line as _ConfigLine
from .errors import DescriptorError, InputError

SCHEMA_VERSION = 1
MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
PYTHON_RE = re.compile(r"^[A-Za-z0-9_./+-]+$")
GPU_ENTRY_RE = re.compile(r"^(-1|\d+(,\d+)*|[A-Za-z0-9_.,-]+;\d+(,\d+)*)$")
KEY_RE = re.compile(r"^[^\s:|=]+( [^\s:|=]+)?$")
DATA_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
INPUTS_PATH_RE = re.compile(r"^[A-Za-z0-9_./-]+\.npz$")  # one config value: no space, '|', ':' or '='
MD5_RE = re.compile(r"^[0-9a-f]{32}$")
# Full-width and other look-alike punctuation that TIPC parsers split on wrongly (PaddleGAN #637).
BAD_PUNCTUATION = "，：｜；（）＝　、"
MAX_STEP_TIMEOUT = 24 * 3600
# A descriptor holds about 150 values (an imported config with long trailing sections, a few thousand);
# far more means an alias that repeats itself (a "billion laughs").
MAX_VALUES = 100_000
MAX_NUMBER_BITS = 256
# Slots whose key the generated runner checks before it reads anything: only their value is the user's.
FIXED_KEY_SLOTS = ("model_name", "python", "gpu_list", "trainer")
# Left out, these take a documented default (docs/DESCRIPTOR.md); written as null they are an error.
SLOT_DEFAULTS = {"python": "python", "trainer": "norm_train"}
# The train slots a trainer name selects (by their key, as the runner does).
TRAINER_SLOTS = ("norm_train", "pact_train", "fpgm_train", "distill_train", "trainer_key1", "trainer_key2")
# A key is echoed in a message only if it looks like a field name: the file may not be a descriptor at all.
_SHOWN_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,39}$")

SECTION_FIELDS = {
    "train", "eval", "export", "whole_infer", "inference",
}
TOP_FIELDS = {"schema_version", "description", "model_name", "python", "gpu_list", "sections", "data", "run",
              "checks", "paddle2onnx", "align", "target", "benchmark", "layout", "env"} | SECTION_FIELDS
ALIGN_CHECKPOINTS = ("forward", "metric", "loss", "backward", "train")
CHECK_FIELDS = {"reference", "reference_tolerance", "golden", "golden_tolerance", "onnx_tolerance", "fixed_inputs", "outputs"}
PADDLE2ONNX_FIELDS = {"model_dir", "save_file", "opset_version", "inference", "onnx_flag"}
DATA_FIELDS = {"dir", "whole_env", "files", "setup", "trained_model", "whole_from_lite"}
DATA_FILE_FIELDS = {"role", "lite", "whole", "md5", "rows"}
RUN_FIELDS = {"step_timeout"}
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What the runner needs to own itself: a descriptor's env: may not change them.
RESERVED_ENV = {"PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "BASH_ENV", "ENV", "IFS", "HOME"}
ROLES = ("train", "infer")


@dataclass(frozen=True)
class SlotValue:
    """The key and value text of one config line."""

    key: str
    value: str | None  # None: a line without ':' (such as `##`), as some upstream configs have

    @property
    def line(self) -> str:
        return self.key if self.value is None else f"{self.key}:{self.value}"


@dataclass(frozen=True)
class DataFile:
    """One file of the chain's data folder: lite copy shipped with the project, whole copy read in place."""

    name: str
    role: str
    lite: str | None
    whole: str | None
    md5: str | None
    rows: int | None


@dataclass(frozen=True)
class DataSpec:
    dir: str
    whole_env: str
    files: tuple[DataFile, ...]
    setup: tuple[tuple[str, ...], ...]
    trained_model: str | None = None  # whole_infer: the folder prepare.sh links to a trained model
    whole_from_lite: bool = False  # whole_train_whole_infer trains on the lite data on purpose


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class ChecksSpec:
    """Result checks: the dygraph reference the export step writes, and committed golden results."""

    reference: str | None
    reference_tolerance: Tolerance
    golden: str | None  # a folder next to the descriptor; init copies it to test_tipc/results/
    golden_tolerance: Tolerance
    onnx_tolerance: Tolerance
    # The chain's own check (check_inference.py): None builds inputs from the model's input spec,
    # "null" turns it off, else a .npz of named input arrays in the repository.
    fixed_inputs: str | None = None
    outputs: tuple[str, ...] = ()  # the exported model's outputs, named by position (else fetch_name_N)


@dataclass(frozen=True)
class Paddle2OnnxSpec:
    """The paddle2onnx chain: convert the exported model, run it with onnxruntime, compare."""

    model_dir: str
    save_file: str
    opset_version: int
    inference: str
    onnx_flag: str


@dataclass(frozen=True)
class Descriptor:
    """A validated descriptor: slot name → (key, value) text, plus data and run settings."""

    source: str
    base_dir: Path
    model_name: str
    slots: dict[str, SlotValue]
    sections: tuple[tuple[str | None, tuple[str, ...]], ...] = ()
    data: DataSpec | None = None
    step_timeout: int = 600
    description: str = ""
    checks: ChecksSpec | None = None
    paddle2onnx: Paddle2OnnxSpec | None = None
    align_thresholds: dict[str, float] = field(default_factory=dict)  # tipcgen align report
    target: Any = None  # tipcgen.target.Target: the paper's figures, checked on whole_train_whole_infer
    benchmark: Any = None  # tipcgen.benchmark.BenchmarkSpec: the benchmark_train chain's cases
    env: tuple[tuple[str, str], ...] = ()  # exported for the export and inference steps (env:)
    extra: dict[str, Any] = field(default_factory=dict)
    section_headers: tuple[str | None, ...] = ()  # a section's header as written, where not 27/27
    layout: str = "standard"  # the config layout: standard (51 lines) or tutorial (32 lines)

    def slot(self, name: str) -> SlotValue:
        return self.slots[name]

    def list_value(self, name: str) -> list[str]:
        return (self.slots[name].value or "").split("|")

    def for_cpu_only(self) -> "Descriptor":
        """The same chain with only the CPU entries of gpu_list and inference use_gpu."""
        gpus = self.list_value("gpu_list")
        if "-1" not in gpus:
            raise DescriptorError(self.source, "gpu_list", f"has no CPU entry (-1): {'|'.join(gpus)}",
                                  hint="add \"-1\" to gpu_list to render a config for --devices cpu")
        slots = dict(self.slots)
        device = self.list_value("train_use_gpu")
        keep = [i for i, g in enumerate(gpus) if g == "-1"]
        slots["gpu_list"] = replace(slots["gpu_list"], value="-1")
        if len(device) == len(gpus):
            slots["train_use_gpu"] = replace(slots["train_use_gpu"], value="|".join(device[i] for i in keep))
        use_gpu = [v for v in self.list_value("infer_use_gpu") if v.lower() in ("false", "cpu")]
        if not use_gpu:
            raise DescriptorError(self.source, "inference.use_gpu", "has no CPU value (False or cpu)",
                                  hint="add False (or cpu) to inference.use_gpu")
        slots["infer_use_gpu"] = replace(slots["infer_use_gpu"], value="|".join(use_gpu))
        return replace(self, slots=slots)


# ---------------------------------------------------------------- loading

def samples_dir() -> Path:
    """Where the built-in samples live: inside the wheel, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "sample_models", here.parent / "sample_models"):
        if candidate.is_dir():
            return candidate
    return here / "sample_models"


def sample_names() -> list[str]:
    root = samples_dir()
    return sorted(p.parent.name for p in root.glob("*/tipc.yaml")) if root.is_dir() else []


def resolve(target: str) -> Path:
    """A sample name or a path to a descriptor file → the descriptor path."""
    path = Path(target)
    named_file = path.suffix in (".yaml", ".yml") or "/" in target
    if os.path.lexists(target) and (named_file or not path.is_dir()):
        return path  # reading it says what is wrong, if anything (a folder, a FIFO, a link loop, no permission)
    if named_file:
        raise DescriptorError(target, "", "no such descriptor file",
                              hint="check the path, or name a built-in sample: " + ", ".join(sample_names()))
    sample = samples_dir() / target / "tipc.yaml"
    if sample.is_file():
        return sample
    close = difflib.get_close_matches(target, sample_names(), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise DescriptorError(target, "", "is neither a descriptor file nor a built-in sample",
                          hint=hint + "built-in samples: " + (", ".join(sample_names()) or "none") +
                          "; or pass path/to/tipc.yaml")


def load(target: str | Path) -> Descriptor:
    path = resolve(str(target))
    try:
        text = inputs.read_text(path, "descriptor")
    except InputError as exc:
        raise DescriptorError(str(path), "", exc.message.removeprefix(f"{path}: "), hint=exc.hint) from None
    return load_text(text, source=str(path), base_dir=path.parent)


def load_text(text: str, source: str = "<descriptor>", base_dir: Path | None = None) -> Descriptor:
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
    return _Validator(source, lines).descriptor(data, base_dir or Path("."))


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
        raise DescriptorError(source, path or "(top level)", f"cannot be read as {tag}: {_describe(node.value)}", line,
                              "quote the value to keep it as text (and drop any !!tag)") from None
    if isinstance(value, bytes):
        raise DescriptorError(source, path or "(top level)", "is binary data (!!binary)", line, "write the value as text")
    if isinstance(value, int) and value.bit_length() > MAX_NUMBER_BITS:
        raise DescriptorError(source, path or "(top level)", f"is a number of {value.bit_length()} bits: too large for any setting",
                              line, "quote it if it is meant as text")
    return value


_SCALARS = yaml.SafeLoader("")  # constructs scalar nodes only; holds no document state between calls


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}" if len(value) < 60 else f"a text of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return "a mapping with keys " + ", ".join(map(str, list(value)[:5]))
    return type(value).__name__


class _Validator:
    def __init__(self, source: str, lines: dict[str, int]) -> None:
        self.source = source
        self.lines = lines

    def fail(self, path: str, message: str, hint: str = "") -> DescriptorError:
        line = self.lines.get(path)
        while line is None and path:
            path_up = path.rsplit(".", 1)[0] if "." in path else ""
            line = self.lines.get(path_up)
            if path_up == path:
                break
            path = path_up
        return DescriptorError(self.source, path, message, line, hint)

    def _err(self, path: str, found: Any, expected: str, hint: str = "") -> DescriptorError:
        line = self.lines.get(path)
        return DescriptorError(self.source, path, f"expected {expected}, found {_describe(found)}", line, hint)

    # -- generic checks
    def mapping(self, value: Any, path: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict) and not path:  # not a descriptor at all: say so without quoting it
            raise DescriptorError(self.source, "", f"is not a descriptor: a YAML mapping of fields was expected, "
                                  f"found {'a list' if isinstance(value, list) else 'a single value'}",
                                  self.lines.get(""), "pass a tipc.yaml (docs/DESCRIPTOR.md), e.g. tipcgen init bert-sst2")
        if not isinstance(value, dict):
            raise self._err(path or "(top level)", value, "a mapping")
        for key in value:
            if key not in allowed:
                sub = f"{path}.{key}" if path else key
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                hint = f"did you mean '{close[0]}'?" if close else "allowed: " + ", ".join(sorted(allowed))
                raise DescriptorError(self.source, sub, "unknown field", self.lines.get(sub), hint)
        return value

    def text(self, value: Any, path: str, *, what: str = "text") -> str:
        if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
            raise self._err(path, value, what)
        text = str(value)
        if not text.strip():
            raise self._err(path, value, f"non-empty {what}")
        if text != text.strip():
            raise self.fail(path, f"{text!r} has leading or trailing spaces",
                            "remove them: upstream runners keep trailing spaces as part of the value")
        for ch in text:
            if ch in BAD_PUNCTUATION:
                raise self.fail(path, f"{text!r} contains the full-width character {ch!r}",
                                "use the ASCII character instead: TIPC parsers split on ASCII , : | ; only")
            if not ch.isprintable():
                raise self.fail(path, f"{text!r} contains a control character {ch!r}",
                                "values are single-line printable text")
        return text

    def scalar_text(self, value: Any, path: str) -> str:
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "True" if value else "False"
        if isinstance(value, (dict, list)):
            raise self._err(path, value, "a single value")
        if value == "":
            return ""  # upstream configs leave some values empty (`Global.checkpoints:`)
        return self.text(value, path, what="value")

    def slot_value(self, value: Any, path: str, slot: layout.Slot) -> str:
        """scalar | list (|-joined, for list slots) | mapping of mode → value (for per-mode slots)."""
        text = self._slot_text(value, path, slot)
        shape = layout.INFER_VALUE_SHAPES.get(slot.name)
        if shape is not None:
            bad = [item for item in text.split("|") if item != "null" and not shape[1].match(item)]
            if bad:
                raise self.fail(path, f"{bad[0]!r} is not {shape[0]}",
                                f"this inference line takes {shape[0]} (a list of them joined by | for a matrix)")
        return text

    def _slot_text(self, value: Any, path: str, slot: layout.Slot) -> str:
        if isinstance(value, list) and slot.name not in layout.LIST_SLOTS:
            raise self._err(path, value, "a single value", hint="this line is not a | list in TIPC")
        if isinstance(value, dict) and slot.name not in layout.PER_MODE_SLOTS:
            raise self._err(path, value, "a single value" + (" or a list" if slot.name in layout.LIST_SLOTS else ""),
                            hint="only epochs and batch_size take per-mode values")
        if isinstance(value, list):
            if not value:
                raise self._err(path, value, "a non-empty list")
            parts = []
            for i, item in enumerate(value):
                part = self.scalar_text(item, f"{path}[{i}]")
                if "|" in part:
                    raise self.fail(f"{path}[{i}]", f"{part!r} contains '|'", "one value per list item")
                parts.append(part)
            return "|".join(parts)
        if isinstance(value, dict):
            if not value:
                raise self._err(path, value, "a mapping of mode to value")
            parts = []
            for mode, item in value.items():
                if mode not in layout.MODES and mode not in layout.KNOWN_EXTRA_MODES:
                    close = difflib.get_close_matches(mode, layout.MODES, n=1)
                    hint = f"did you mean '{close[0]}'? " if close else ""
                    raise DescriptorError(self.source, f"{path}.{mode}", "is not a TIPC mode",
                                          self.lines.get(f"{path}.{mode}"),
                                          hint + "modes: " + ", ".join(layout.MODES))
                part = self.scalar_text(item, f"{path}.{mode}")
                if "|" in part or "=" in part:
                    raise self.fail(f"{path}.{mode}", f"{part!r} contains '|' or '='", "give one plain value per mode")
                parts.append(f"{mode}={part}")
            return "|".join(parts)
        return self.scalar_text(value, path)

    def slot(self, slot: layout.Slot, value: Any, path: str) -> SlotValue:
        default_key = slot.key
        if isinstance(value, dict) and "key" in value and set(value) <= {"key", "value"}:
            key_raw = value["key"]
            key = "null" if key_raw is None else self.text(key_raw, f"{path}.key", what="flag name")
            if not KEY_RE.match(key):
                raise self.fail(f"{path}.key", f"{key!r} is not a usable flag name",
                                "a flag name has no ':', '|', '=' and at most one inner space (as in '-o Global.epochs')")
            if "value" not in value:
                return SlotValue(key, None)  # the line is the key alone
            text = self.slot_value(value.get("value"), f"{path}.value", slot)
            return SlotValue(key, text)
        if value is None:
            return SlotValue(default_key or "null", "null")
        if default_key is None:
            raise self._err(path, value, "a mapping {key: FLAG, value: VALUE} (or null)",
                            hint=f"this line's key is the script's flag name, e.g. {path}: {{key: --flag, value: ...}}")
        return SlotValue(default_key, self.slot_value(value, path, slot))

    # -- the descriptor
    def descriptor(self, data: Any, base_dir: Path) -> Descriptor:
        if data is None:
            raise DescriptorError(self.source, "", "is empty", hint="start from a sample: tipcgen init bert-sst2 writes one")
        data = self.mapping(data, "", TOP_FIELDS)
        version = data.get("schema_version", SCHEMA_VERSION)
        if isinstance(version, bool) or version != SCHEMA_VERSION:
            raise self._err("schema_version", version, f"{SCHEMA_VERSION}")
        for required in ("model_name", "gpu_list", "train", "inference"):
            if data.get(required) is None:
                raise DescriptorError(self.source, required, "is missing" if required not in data else "is null",
                                      self.lines.get(required), hint=f"give '{required}:' a value (see docs/DESCRIPTOR.md)")
        sections = {name: self.mapping(data[name], name, self._section_fields(name))
                    for name in SECTION_FIELDS if name in data and data[name] is not None}
        if "norm" not in sections["train"]:
            raise DescriptorError(self.source, "train.norm", "is missing", self.lines.get("train"),
                                  hint="name the train script, e.g. train.norm: tools/train.py")
        if "script" not in sections["inference"]:
            raise DescriptorError(self.source, "inference.script", "is missing", self.lines.get("inference"),
                                  hint="name the inference script, or write inference.script: null")
        layout_name = self._layout(data.get("layout", "standard"))
        own = {slot.name: slot for slot in layout.slots_of(layout_name)}
        slots: dict[str, SlotValue] = {}
        for slot in layout.TRAIN_INFER_PYTHON:
            if slot.kind != "kv":
                continue
            head, _, tail = slot.field.partition(".")
            given = sections.get(head, {}) if tail else data
            if slot.name not in own and given.get(tail or head) is not None:
                raise self.fail(slot.field, f"has no line in the {layout_name} layout",
                                f"leave {slot.field} out, or render the standard layout (layout: standard)")
            slot = own.get(slot.name, slot)  # the tutorial's own default keys (train_model:)
            raw = given.get(tail or head, SLOT_DEFAULTS.get(slot.name))
            slots[slot.name] = self.slot(slot, raw, slot.field)
            if slot.name in FIXED_KEY_SLOTS and slots[slot.name].key != slot.key:
                raise self.fail(f"{slot.field}.key", f"{slots[slot.name].key!r} replaces the fixed key {slot.key!r}",
                                f"the runner checks this line's key: write {slot.field}: VALUE")
        self._required_values(slots)
        model_name = self._model_name(slots["model_name"].value)
        self._python(slots["python"].value)
        self._gpu_list(slots)
        data_spec = self._data(data.get("data"))
        sections = self._sections(data.get("sections"))
        bench = benchmark_spec.parse(data.get("benchmark"), self.source, self.lines)
        if bench is not None and any(name == benchmark_spec.SECTION for name, _ in sections):
            raise self.fail("benchmark", f"and sections both give a {benchmark_spec.SECTION} section",
                            f"keep one: the benchmark field, or the sections entry named {benchmark_spec.SECTION}")
        return Descriptor(
            source=self.source,
            base_dir=base_dir,
            model_name=model_name,
            slots=slots,
            sections=sections,
            section_headers=self.section_headers(data.get("sections")),
            data=data_spec,
            step_timeout=self._run(data.get("run")),
            checks=self._checks(data.get("checks")),
            paddle2onnx=self._paddle2onnx(data.get("paddle2onnx"), data_spec),
            align_thresholds=self._align(data.get("align")),
            target=target_spec.parse(data.get("target"), self.source, self.lines),
            benchmark=bench,
            description=self.text(data["description"], "description") if data.get("description") else "",
            layout=layout_name,
            env=self._env(data.get("env")),
        )

    def _layout(self, value: Any) -> str:
        if not isinstance(value, str) or value not in layout.LAYOUTS:
            raise self._err("layout", value, " or ".join(layout.LAYOUTS))
        return value


    def _env(self, value: Any) -> tuple[tuple[str, str], ...]:
        """env: {NAME: value}: variables the export and inference steps run with (e.g. FLAGS_enable_pir_api: "0")."""
        if value is None:
            return ()
        if not isinstance(value, dict):
            raise self._err("env", value, "a mapping of variable name to value, such as {FLAGS_enable_pir_api: \"0\"}")
        out = []
        for name, raw in value.items():
            path = f"env.{name}"
            if not ENV_NAME_RE.match(name) or name in RESERVED_ENV:
                raise self.fail(path, f"{name!r} is not a variable the steps may set",
                                "use a name of letters, digits and _ (not PATH, PYTHONPATH, LD_* or HOME)")
            if isinstance(raw, bool):
                raw = "1" if raw else "0"
            if isinstance(raw, (int, float)):
                raw = str(raw)
            out.append((name, self.text(raw, path, what="value")))
        return tuple(out)

    @staticmethod
    def _section_fields(name: str) -> set[str]:
        return {slot.field.split(".", 1)[1] for slot in layout.TRAIN_INFER_PYTHON
                if slot.field and slot.field.startswith(name + ".")}

    def _required_values(self, slots: dict[str, SlotValue]) -> None:
        """A slot the runner cannot do without must not render as null: it would run `null`, or train nothing."""
        for name in FIXED_KEY_SLOTS:
            field_name = layout.SLOT_BY_NAME[name].field
            if slots[name].value is None or slots[name].value.strip() in ("", "null", "None"):
                default = f", or leave it out (default: {SLOT_DEFAULTS[name]})" if name in SLOT_DEFAULTS else ""
                raise self.fail(field_name, "needs a value: a null or empty one would render "
                                f"{slots[name].key}:null, which the runner cannot use",
                                f"write {field_name}: VALUE{default} (see docs/DESCRIPTOR.md)")
        for trainer in slots["trainer"].value.split("|"):
            slot = next((layout.SLOT_BY_NAME[n] for n in TRAINER_SLOTS if slots[n].key == trainer.strip()), None)
            if slot is not None and (slots[slot.name].value or "null").strip() in ("", "null", "None"):
                raise self.fail(slot.field, f"is null, but train.trainer chooses {trainer.strip()!r}: it would train nothing",
                                f"give {slot.field} the train command (e.g. tools/train.py -c config.yml), "
                                "or choose another train.trainer")

    def _model_name(self, name: str) -> str:
        if not MODEL_NAME_RE.match(name) or ".." in name:
            raise self.fail("model_name", f"{name!r} cannot name a folder",
                            "use letters, digits, '_', '-' and '.', starting with a letter or digit (no '/', '..' or spaces)")
        return name

    def _python(self, python: str) -> None:
        if not PYTHON_RE.match(python):
            raise self.fail("python", f"{python!r} is not an interpreter name",
                            "use a command such as python or python3, or a path without spaces")

    def _gpu_list(self, slots: dict[str, SlotValue]) -> None:
        gpus = slots["gpu_list"].value.split("|")
        for entry in gpus:
            if not GPU_ENTRY_RE.match(entry):
                raise self.fail("gpu_list", f"entry {entry!r} is not a device entry",
                                "use -1 (CPU), 0 (one GPU), 0,1 (one machine, several GPUs) or ip1,ip2;0,1")
        devices = (slots["train_use_gpu"].value or "").split("|")
        # Paired by position; extra values are never read (upstream configs have them), missing ones drop the flag.
        if slots["train_use_gpu"].key != "null" and 1 < len(devices) < len(gpus):
            raise self.fail("train.device", f"has {len(devices)} values for {len(gpus)} gpu_list entries",
                            "give one value per gpu_list entry (they are paired by position), or a single value")

    def _sections(self, value: Any) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self._err("sections", value, "a list of {name: SECTION, lines: [...]}")
        out = []
        for i, item in enumerate(value):
            path = f"sections[{i}]"
            item = self.mapping(item, path, {"name", "lines", "header"})
            # name null: lines after idx 50 that stand before any header (upstream fillers)
            name = None if item.get("name") is None else self.text(item["name"], f"{path}.name", what="section name")
            self._section_header(item.get("header"), name, path)
            lines = item.get("lines") or []
            if not isinstance(lines, list):
                raise self._err(f"{path}.lines", lines, "a list of config lines")
            out.append((name, tuple(self.text(line, f"{path}.lines[{j}]", what="config line") for j, line in enumerate(lines))))
        return tuple(out)

    def _section_header(self, value: Any, name: str | None, path: str) -> None:
        """``header:`` keeps a section's header line as written (``====name===`` with its own padding)."""
        if value is None:
            return
        text = self.text(value, f"{path}.header", what="header line")
        if name is None or _ConfigLine(text).header_name != name:
            raise self.fail(f"{path}.header", f"{text!r} is not a header line of section {name!r}",
                            f"write it as ==={name}=== with any number of '=' on each side, or leave it out")

    def section_headers(self, value: Any) -> tuple[str | None, ...]:
        """The ``header:`` of every section (``None``: the canonical 27/27 padding)."""
        if not isinstance(value, list):
            return ()
        return tuple(item.get("header") if isinstance(item, dict) else None for item in value)

    def _data(self, value: Any) -> DataSpec | None:
        if value is None:
            return None
        value = self.mapping(value, "data", DATA_FIELDS)
        data_dir = self.text(value.get("dir", "./train_data"), "data.dir", what="folder")
        if data_dir.startswith("/") or ".." in Path(data_dir).parts:
            raise self.fail("data.dir", f"{data_dir!r} is outside the repository", "use a relative path such as ./train_data/<model>")
        env = self.text(value.get("whole_env", "TIPC_DATA_DIR"), "data.whole_env", what="variable name")
        if not re.match(r"^[A-Z_][A-Z0-9_]*$", env):
            raise self.fail("data.whole_env", f"{env!r} is not an environment variable name", "use upper case, digits and _")
        files_raw = value.get("files") or {}
        files_raw = self.mapping(files_raw, "data.files", set(files_raw) if isinstance(files_raw, dict) else set())
        files = []
        for name, spec in files_raw.items():
            path = f"data.files.{name}"
            if not DATA_NAME_RE.match(name):
                raise self.fail(path, f"{name!r} is not a plain file name", "no folders, spaces or shell characters")
            spec = self.mapping(spec, path, DATA_FILE_FIELDS)
            role = spec.get("role", "train")
            if role not in ROLES:
                raise self._err(f"{path}.role", role, "train or infer")
            lite = self._rel(spec.get("lite"), f"{path}.lite")
            whole = self._rel(spec.get("whole"), f"{path}.whole")
            md5 = spec.get("md5")
            if md5 is not None and not (isinstance(md5, str) and MD5_RE.fullmatch(md5)):
                raise self._err(f"{path}.md5", md5, "32 lower-case hex digits")
            rows = spec.get("rows")
            if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
                raise self._err(f"{path}.rows", rows, "a row count (whole number ≥ 0)")
            if lite is None and whole is None:
                raise self.fail(path, "names neither a lite nor a whole source", "give lite: and/or whole:")
            files.append(DataFile(name, role, lite, whole, md5, rows))
        setup_raw = value.get("setup") or []
        if not isinstance(setup_raw, list):
            raise self._err("data.setup", setup_raw, "a list of python script calls, each a list [script.py, args...]")
        setup = []
        for i, call in enumerate(setup_raw):
            if not isinstance(call, list) or not call:
                raise self._err(f"data.setup[{i}]", call, "a list [script.py, args...]")
            words = tuple(self.text(w, f"data.setup[{i}][{j}]", what="argument") for j, w in enumerate(call))
            if not words[0].endswith(".py"):
                raise self.fail(f"data.setup[{i}]", f"{words[0]!r} is not a python script", "setup runs python scripts only")
            setup.append(words)
        trained = self._rel(value.get("trained_model"), "data.trained_model")
        from_lite = value.get("whole_from_lite", False)
        if not isinstance(from_lite, bool):
            raise self._err("data.whole_from_lite", from_lite, "true or false")
        return DataSpec(data_dir, env, tuple(files), tuple(setup), trained, from_lite)

    def _rel(self, value: Any, path: str) -> str | None:
        if value is None:
            return None
        text = self.text(value, path, what="relative path")
        if text.startswith("/") or ".." in Path(text).parts:
            raise self.fail(path, f"{text!r} must be a relative path inside the repository (or data folder)", "")
        return text

    def _tolerance(self, value: Any, path: str, default: Tolerance) -> Tolerance:
        if value is None:
            return default
        value = self.mapping(value, path, {"atol", "rtol"})
        out = {}
        for name in ("atol", "rtol"):
            number = value.get(name, getattr(default, name))
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number < 1e6 \
                    or number != number:
                raise self._err(f"{path}.{name}", number, "a tolerance: a number ≥ 0, such as 1.0e-5")
            out[name] = float(number)
        return Tolerance(**out)

    def _checks(self, value: Any) -> ChecksSpec | None:
        if value is None:
            return None
        value = self.mapping(value, "checks", CHECK_FIELDS)
        reference = value.get("reference")
        if reference is not None:
            reference = self.text(reference, "checks.reference", what="file name")
            if not DATA_NAME_RE.match(reference):
                raise self.fail("checks.reference", f"{reference!r} is not a plain file name", "the export step writes it into its output folder")
        return ChecksSpec(
            reference=reference,
            reference_tolerance=self._tolerance(value.get("reference_tolerance"), "checks.reference_tolerance", Tolerance(1e-5, 1e-4)),
            golden=self._rel(value.get("golden"), "checks.golden"),
            golden_tolerance=self._tolerance(value.get("golden_tolerance"), "checks.golden_tolerance", Tolerance(1e-3, 1e-3)),
            onnx_tolerance=self._tolerance(value.get("onnx_tolerance"), "checks.onnx_tolerance", Tolerance(1e-5, 1e-4)),
            fixed_inputs=self._fixed_inputs(value),
            outputs=self._output_names(value.get("outputs")),
        )

    def _output_names(self, value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not value:
            raise self._err("checks.outputs", value, "a list of the exported model's output names, by position, "
                            "such as [logits, probs]")
        names = tuple(self.text(name, f"checks.outputs[{i}]", what="output name") for i, name in enumerate(value))
        bad = next((n for n in names if not DATA_NAME_RE.match(n)), None)
        if bad is not None or len(set(names)) != len(names):
            raise self.fail("checks.outputs", f"{bad!r} is not a usable output name" if bad else "names an output twice",
                            "distinct names of letters, digits, '_', '-' and '.', such as [logits, probs]")
        return names

    def _fixed_inputs(self, value: dict) -> str | None:
        if "fixed_inputs" not in value or value["fixed_inputs"] is None:
            return None
        if value["fixed_inputs"] is False:
            return "null"
        path = self._rel(value["fixed_inputs"], "checks.fixed_inputs")
        if not INPUTS_PATH_RE.match(path):
            raise self.fail("checks.fixed_inputs", f"{path!r} is not a .npz file path",
                            "name a .npz of input arrays (keys: the model's input names), or false to turn the check off")
        return path

    def _paddle2onnx(self, value: Any, data: DataSpec | None) -> Paddle2OnnxSpec | None:
        if value is None:
            return None
        value = self.mapping(value, "paddle2onnx", PADDLE2ONNX_FIELDS)
        model_dir = self._rel(value.get("model_dir"), "paddle2onnx.model_dir") or (data.trained_model if data else None)
        if model_dir is None:
            raise DescriptorError(self.source, "paddle2onnx.model_dir", "is missing", self.lines.get("paddle2onnx"),
                                  hint="name the exported model folder, or set data.trained_model")
        save_file = self._rel(value.get("save_file"), "paddle2onnx.save_file")
        if save_file is None or not save_file.endswith(".onnx"):
            raise self._err("paddle2onnx.save_file", value.get("save_file"), "a relative path ending in .onnx")
        opset = value.get("opset_version", 11)
        if isinstance(opset, bool) or not isinstance(opset, int) or not 7 <= opset <= 21:
            raise self._err("paddle2onnx.opset_version", opset, "an ONNX opset between 7 and 21")
        if "inference" not in value:
            raise DescriptorError(self.source, "paddle2onnx.inference", "is missing", self.lines.get("paddle2onnx"),
                                  hint="name the script that runs the .onnx model with onnxruntime")
        # onnx_flag: null: the script cannot run an ONNX model; the chain's own check (check_inference.py) does.
        flag = "null" if "onnx_flag" in value and value["onnx_flag"] is None else \
            self.text(value.get("onnx_flag", "--use_onnx"), "paddle2onnx.onnx_flag", what="flag name")
        if flag != "null" and not KEY_RE.match(flag):
            raise self.fail("paddle2onnx.onnx_flag", f"{flag!r} is not a usable flag name", "such as --use_onnx")
        return Paddle2OnnxSpec(model_dir, save_file, opset, self.text(value["inference"], "paddle2onnx.inference", what="command"), flag)

    def _align(self, value: Any) -> dict[str, float]:
        if value is None:
            return {}
        value = self.mapping(value, "align", {"thresholds"})
        thresholds = self.mapping(value.get("thresholds") or {}, "align.thresholds", set(ALIGN_CHECKPOINTS))
        out = {}
        for name, number in thresholds.items():
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number < 1e6:
                raise self._err(f"align.thresholds.{name}", number, "a threshold: a number ≥ 0, such as 1.0e-6")
            out[name] = float(number)
        return out

    def _run(self, value: Any) -> int:
        if value is None:
            return 600
        value = self.mapping(value, "run", RUN_FIELDS)
        timeout = value.get("step_timeout", 600)
        if isinstance(timeout, bool) or not isinstance(timeout, int) or not 0 < timeout <= MAX_STEP_TIMEOUT:
            raise self._err("run.step_timeout", timeout, f"whole seconds between 1 and {MAX_STEP_TIMEOUT}")
        return timeout
