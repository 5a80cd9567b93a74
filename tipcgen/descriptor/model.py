"""The descriptor's one typed model (pydantic v2): each field's type, default, allowed values and one-line doc.

Derived from it, never written twice: the JSON Schema ``tipcgen schema`` prints and ``tipcgen/tipc.schema.json``
holds (``json_text``), docs/DESCRIPTOR.md's "Every field" table (``field_table``), and, read back from that
shipped file by ``fields.py`` so that loading a descriptor never builds these classes, the field names the
validator accepts in each group, the required ones and the defaults it fills in. The slot fields (one per config
line) are built from ``layout.py``. A field's ``description`` is its Markdown doc; the JSON Schema gets it as plain
text, and a ``title`` in lower case (``a tolerance: a number ≥ 0``) is what a refusal says it expects. Loading a
descriptor checks it against that shipped schema first (``structure.py``), so the validator's structure is this
model's; what a type cannot say (no full-width punctuation, device entries, a flag name read from a script...) is
checked after by ``validate*.py``. tests/test_schema.py holds the model, the schema and the loader to accept and
refuse the same mutated descriptors.
"""
# No `from __future__ import annotations`: pydantic reads these annotations as the objects they are.
import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from tipcgen.descriptor.schema import (
    DATA_NAME_RE,
    FIXED_KEY_FIELDS,
    INPUTS_PATH_RE,
    MAX_STEP_TIMEOUT,
    MAX_TEXT_LINE,
    MD5_RE,
    SCHEMA_VERSION,
    SECTION_FIELDS,
    WHOLE_ENV_RE,
)
from tipcgen.format import compression, layout, words
from tipcgen.format.chains import DY2STATIC, FLEET, PADDLE2ONNX, PTQ
from tipcgen.format.words import DEFAULT_STEP_TIMEOUT

# Marks in the schema this module walks, dropped from the shipped one: a group of fields, the name a mapping's keys go by.
_GROUP, _KEY = "x-tipcgen-group", "x-tipcgen-key"
# What a refusal says a value must be, where the type's own words would not do: the shipped schema's "title" (pydantic
# keeps a title only on a field, so a type carries it under this mark).
_TITLE = "x-tipcgen-title"
_OUTSIDE_PATH = r"^/|(^|/)\.\.(/|$)"


@dataclass(frozen=True)
class _Json:
    """JSON Schema keywords added to a type's own: what a Python check says, or the name a mapping's keys
    go by in the docs (``_KEY``: ``data.files.<name>``)."""

    extra: str  # JSON text (a type's metadata is hashed)

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        schema.update(json.loads(self.extra))
        return schema


def _json(**extra: Any) -> _Json:
    return _Json(json.dumps(extra))


def _relative(text: str) -> str:
    if re.search(_OUTSIDE_PATH, text):
        raise ValueError("must be a relative path inside the repository (or data folder)")
    return text


# Every mapping of the model: no field but its own, no conversions (a true is no 1, a 1 no "1"). A value (a
# tolerance, a `{key, value}` line) has no rows of its own in the docs' table; a group's fields each have one.
_VALUE = ConfigDict(extra="forbid", strict=True, frozen=True)
_GROUP_OF_FIELDS = ConfigDict(extra="forbid", strict=True, frozen=True, json_schema_extra={_GROUP: True})


Scalar = Union[str, float, bool, None]


def _no_boolean(value: Any) -> Any:
    if isinstance(value, bool):  # a Literal[1] takes True (True == 1); the JSON Schema's const 1 does not
        raise ValueError("a number, not a boolean")
    return value


_ABSENT = SkipJsonSchema[None]


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("null: leave the field out instead")
    return value


def _left_out(kind: Any) -> Any:
    """``kind``, or left out (then None, its default): written as null it is refused, by the model and the schema."""
    return Annotated[Union[kind, _ABSENT], AfterValidator(_not_null)]
Text = Annotated[str, Field(min_length=1)]
# Where a field takes text, a YAML number is read as its text (`description: 2021`, `key: 20`, a folder `3`): people
# write them so. A boolean or null never is (`description: false` is refused, naming the field).
Words = Union[Text, float]
NonNegative = Annotated[float, Field(ge=0, lt=1e6)]  # a tolerance, a threshold: far below a million
RelPath = Union[Annotated[str, Field(min_length=1), AfterValidator(_relative), _json(**{"not": {"pattern": _OUTSIDE_PATH}})],
                float]
InputsPath = Annotated[str, Field(pattern=INPUTS_PATH_RE.pattern)]
Mode = Annotated[Literal[tuple([*words.MODES, *words.KNOWN_EXTRA_MODES])], _json(description="a TIPC mode")]


def _some(item: Any) -> Any:
    """A non-empty list of ``item``."""
    return Annotated[list[item], Field(min_length=1)]


_A_TOLERANCE = "a tolerance: a number ≥ 0, such as 1.0e-5"


class Tolerance(BaseModel):
    model_config = _VALUE
    atol: _left_out(NonNegative) = Field(None, title=_A_TOLERANCE)
    rtol: _left_out(NonNegative) = Field(None, title=_A_TOLERANCE)


def _tolerance(doc: str, atol: float, rtol: float) -> Any:
    return Field({"atol": atol, "rtol": rtol}, description=doc)


# -- the slot fields: one per config line (layout.py), in the groups train, eval, export, whole_infer, inference
def _slot_type(slot: layout.Slot) -> Any:
    """A config line's value: scalar, list (loop lines), mode → value (per-mode lines), or {key, value}."""
    shapes: list[Any] = [Scalar]
    if slot.name in layout.LIST_SLOTS:
        shapes.append(_some(Scalar))
    if slot.name in layout.PER_MODE_SLOTS:
        shapes.append(Annotated[dict[Mode, Scalar], Field(min_length=1)])
    value = Union[tuple(shapes)]
    fixed = slot.field in FIXED_KEY_FIELDS  # the runner checks the key: {key, value} only with the fixed one
    words = _json(**{_TITLE: f"the fixed key {slot.key}"}, description=f"the runner checks this line's key: write "
                  f"{slot.field}: VALUE")
    key: Any = Annotated[Literal[slot.key], words] if fixed else Optional[Union[str, float]]
    keyed = create_model(f"Line_{slot.name}", __config__=_VALUE, key=(key, ...), value=(value, None))
    if slot.key is None and not fixed:  # the key is the script's flag name: only {key, value} (or null) says it
        return Optional[Annotated[keyed, _json(**{_TITLE: "a mapping {key: FLAG, value: VALUE}"})]]
    return Union[tuple([*shapes, keyed])]


_SLOT_DEFAULTS = {"python": "python", "train.trainer": "norm_train"}  # left out, these take a default; null is an error
_REQUIRED_SLOTS = ("model_name", "gpu_list", "train.norm", "inference.script")


def _slot_field(field: str, slot: layout.Slot) -> tuple[Any, Any]:
    default = _SLOT_DEFAULTS.get(field)
    shown = f" (default `{default}`)" if default is not None else ""
    keyed = ", keyed by the script's flag: `{key: --flag, value: VALUE}`" if slot.key is None and \
        field not in FIXED_KEY_FIELDS else ""
    doc = f"config line {slot.index} (`{slot.name}`){shown}{keyed}: see the slot table"
    return _slot_type(slot), Field(... if field in _REQUIRED_SLOTS else default, description=doc)


_KV = [(slot.field, slot) for slot in layout.TRAIN_INFER_PYTHON if slot.kind == "kv" and slot.field]
_TOP_SLOT = {field: _slot_field(field, slot) for field, slot in _KV if "." not in field}


def _lines_group(name: str) -> Any:
    fields = {field.partition(".")[2]: _slot_field(field, slot) for field, slot in _KV if field.partition(".")[0] == name}
    return create_model(f"{name.title()}Lines", __config__=_GROUP_OF_FIELDS, __doc__=f"the {name} lines", **fields)


TrainLines, EvalLines, ExportLines, WholeInferLines, InferenceLines = (_lines_group(n) for n in SECTION_FIELDS)


# -- the groups below the top level
class TextFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    lines: Optional[Annotated[dict[Union[Annotated[int, Field(ge=0)], Annotated[str, Field(pattern=r"^[0-9]+$")]], Text],
                              _json(propertyNames={"pattern": r"^[0-9]+$", "description": "a line index"})]] = Field(
        None, description="logical line index (0-based, as the runner counts) to the line as written")
    blank_lines: Optional[list[Annotated[int, Field(ge=1, le=MAX_TEXT_LINE)]]] = Field(
        None, description="1-based numbers of the blank lines of the file")
    final_newline: bool = Field(True, description="`false`: the file does not end with a newline (default `true`)")
    line_count: Optional[Annotated[int, Field(ge=1, le=MAX_TEXT_LINE)]] = Field(
        None, description="the file stops after this many lines, right after a section's `##` (a train-only or "
        "train+eval config: the runner reads the later lines as empty)")


class SectionEntry(BaseModel):
    model_config = _VALUE
    name: Optional[Words] = None
    header: Optional[Words] = None
    lines: Optional[list[Union[str, float]]] = None


_DEVICE_NUM = Annotated[str, Field(pattern=r"^N[1-9][0-9]*C[1-9][0-9]*$")]
_DEVICE_NUMS = Annotated[list[_DEVICE_NUM], Field(min_length=1)]
_FP_ITEM = Literal["fp32", "fp16"]
_FP_ITEMS = Annotated[list[_FP_ITEM], Field(min_length=1)]
_POSITIVE = Annotated[int, Field(ge=1, le=999_999)]
_POSITIVES = Annotated[list[_POSITIVE], Field(min_length=1)]


class BenchmarkFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    batch_size: Union[_POSITIVE, _POSITIVES] = Field(
        description="one case per batch size: a whole number > 0 or a list of them")
    fp_items: Union[_FP_ITEM, _FP_ITEMS] = Field(
        ["fp32", "fp16"], description="`fp32` and/or `fp16` (default both; fp16 trains with AMP)")
    epoch: _POSITIVE = Field(1, description="epochs per case (default 1)")
    profiler_options: Optional[Annotated[str, Field(pattern=r"^[^\s|:]+$")]] = Field(
        None, description="one word without spaces, `:` or `|` (default null): adds a profiling run per N1C1 case")
    flags: Optional[Annotated[dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")], Union[str, float, bool]],
                              _json(propertyNames={"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$",
                                                    "description": "a variable name"})]] = Field(
        None, description="environment variables each case exports: a mapping of name to value")
    device_num: Union[_DEVICE_NUM, _DEVICE_NUMS] = Field(
        ["N1C1", "N1C2"], description="`N<machines>C<devices>` entries (default `[N1C1, N1C2]`)")


class DataFile(BaseModel):
    model_config = _GROUP_OF_FIELDS
    role: Literal["train", "infer"] = Field(
        "train", description="`train` (default) or `infer`: which modes read the whole copy")
    lite: _left_out(RelPath) = Field(None, description="the lite copy in the repository: a file, a folder, or a "
                                    "`.tar`/`.tar.gz`/`.tgz`/`.zip` archive")
    whole: _left_out(RelPath) = Field(None, description="a file or folder inside the whole data folder, linked in place")
    md5: Optional[Annotated[str, Field(pattern=MD5_RE.pattern), _json(**{_TITLE: "32 lower-case hex digits"})]] = Field(
        None, description="md5 of the whole file (32 hex digits), checked before it is linked")
    rows: Optional[Annotated[int, Field(ge=0)]] = Field(None, description="its data rows, shown when the md5 differs")


class DataFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    dir: _left_out(RelPath) = Field(
        "./train_data", description="the folder prepare.sh fills (default `./train_data`), relative, inside the repository")
    whole_env: Annotated[str, Field(pattern=WHOLE_ENV_RE.pattern)] = Field(
        "TIPC_DATA_DIR", description="the variable naming the whole data folder (default `TIPC_DATA_DIR`)")
    files: Optional[dict[str, Annotated[DataFile, _json(
        **{_KEY: "<name>"}, description="one file: where its lite and whole copies come from")]]] = Field(
        None, description="a mapping of name in `data.dir` to its sources")
    setup: Optional[list[Annotated[list[Union[str, float]], Field(min_length=1)]]] = Field(
        None, description="python scripts prepare.sh runs after the files are in place: a list of `[script.py, args...]`")
    trained_model: _left_out(RelPath) = Field(
        None, description="whole_infer and paddle2onnx: the folder prepare.sh links to `$TIPC_MODEL_DIR` or the latest "
        "train run")
    whole_from_lite: bool = Field(False, description="`true`: `whole_train_whole_infer` trains on the lite data on "
                                  "purpose (default `false`: refused)")


class RunFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    step_timeout: Annotated[int, Field(ge=1, le=MAX_STEP_TIMEOUT)] = Field(
        DEFAULT_STEP_TIMEOUT, title=f"whole seconds between 1 and {MAX_STEP_TIMEOUT}",
        description=f"seconds before a step is killed (default {DEFAULT_STEP_TIMEOUT})")


_DATA_NAME = Union[Annotated[str, Field(pattern=DATA_NAME_RE.pattern), _json(**{_TITLE: "a plain file name"})], float]
_OUTPUT_NAME = Union[Annotated[str, Field(pattern=DATA_NAME_RE.pattern), _json(
    **{_TITLE: "an output name: letters, digits, '_', '-' and '.'"})], float]


class ChecksFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    reference: Optional[_DATA_NAME] = Field(
        None, description="the file the export step writes the dygraph model's results to (a plain file name)")
    reference_tolerance: Optional[Tolerance] = _tolerance(
        "`{atol, rtol}` for inference against that reference (default 1e-5, 1e-4)", 1e-5, 1e-4)
    golden: _left_out(RelPath) = Field(
        None, description="a folder next to the descriptor with committed results (`tipcgen golden` writes them)")
    golden_tolerance: Optional[Tolerance] = _tolerance(
        "`{atol, rtol}` against the golden results (default 1e-3, 1e-3)", 1e-3, 1e-3)
    fixed_inputs: Union[InputsPath, Literal[False], None] = Field(
        None, description="the chain's own fixed-input check of the exported model: a `.npz` of inputs to feed (read "
        "without unpickling), or `false` to turn the check off (default: inputs built from the model's input spec, "
        "seed 0)")
    outputs: Annotated[list[_OUTPUT_NAME], Field(min_length=1), _json(uniqueItems=True)] = Field(
        None, description="the exported model's outputs named by position, e.g. `[logits, probs]` (config "
        "`output_names:logits\\|probs` in `result_check_params`): the fixed-input checks, their results files and golden "
        "results use these names, so a failure reads `output 'probs' differs by up to ...`. Without it outputs keep the "
        "program's names; Paddle 3's `fetch_name_N` are shown as `output N (fetch_name_N)`")
    own_weights: Optional[Annotated[list[Literal[tuple(words.OWN_WEIGHTS_KINDS)]], _json(uniqueItems=True)]] = Field(
        None, description="steps that load their own weights on purpose: `[eval]`, `[export]`, `[infer]` or several. "
        "Without it, `tipcgen run` refuses an eval or export that gets no trained checkpoint (a null key) and an "
        "inference that gets no model folder, since they would use whatever the script loads by default")
    onnx_tolerance: Optional[Tolerance] = _tolerance(
        "`{atol, rtol}` for ONNX Runtime against Paddle Inference (default 1e-5, 1e-4)", 1e-5, 1e-4)


class Paddle2OnnxFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    model_dir: _left_out(RelPath) = Field(None, description="the exported model folder (default `data.trained_model`)")
    save_file: _left_out(Annotated[str, Field(pattern=r"\.onnx$")]) = Field(None, description="the `.onnx` file to write, relative")
    opset_version: Annotated[int, Field(ge=7, le=21)] = Field(11, description="ONNX opset, 7 to 21 (default 11)")
    inference: Words = Field(description="the script that runs the `.onnx` model")
    onnx_flag: Optional[Words] = Field(
        "--use_onnx", description="the flag that switches that script to ONNX Runtime (default `--use_onnx`); `null`: "
        "the script has none, the chain's own check runs the ONNX model. `tipcgen new` writes the section when there is "
        "an inference script and a `data.trained_model`, and this field only where the default does not apply")


class PtqFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    layout: Literal[tuple(compression.LAYOUTS)] = Field(
        description="`ptq` (20 lines: models tutorial, PaddleSeg), `ptq_video` (24: PaddleVideo) or `kl_quant` "
        "(20: PaddleOCR)")
    header: _left_out(Text) = Field(None, description="the first line as written, where it is not the layout's own header")
    lines: Annotated[dict[str, str], _json(additionalProperties={"type": "string", _TITLE: "one line of text"})] = Field(
        description="each line of the layout by its name (the upstream runner's variable), as written: "
        "`batch_num: \"--batch_num:1\"`")
    trailing: _left_out(list[str]) = Field(None, description="lines after the layout, which the runner does not read")
    final_newline: bool = Field(True, description="`false`: the file ends without a newline (default `true`)")
    eval_data: _left_out(InputsPath) = Field(
        None, description="a labelled `.npz` (arrays `x` and `label`, read without unpickling) in the repository: the "
        "PTQ chain's check reports the float and int8 models' accuracy on it and fails when int8 loses more than "
        "`ptq.accuracy_drop`; not a config line")
    accuracy_drop: Annotated[float, Field(ge=0, le=1)] = Field(
        0.05, description="the accuracy the int8 model may lose on `ptq.eval_data` (default 0.05)")
    tolerance: Optional[Tolerance] = _tolerance(
        "`{atol, rtol}` for the int8 model's outputs against the float model's on fixed inputs: it fails above atol + "
        "rtol times the float outputs' largest magnitude (default atol 0, rtol 0.2); not a config line", 0.0, 0.2)


class KeptEntry(BaseModel):
    model_config = _VALUE
    file: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+@=-]+(/[A-Za-z0-9_.+@=-]+)*\.txt$"),
                    _json(**{_TITLE: "a .txt path below test_tipc/configs/, MODEL/NAME.txt"})]
    kind: str = ""
    lines: Optional[list[str]]
    final_newline: bool = True


class Dy2staticFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    lines: _left_out(list[str]) = Field(None, description="the config's lines as written (`tipcgen import` of a dy2static config "
                             "writes them; `\"\"` for a blank line)")
    final_newline: bool = Field(True, description="`false`: the file ends without a newline (default `true`)")
    tolerance: Optional[Tolerance] = _tolerance(
        "`{atol, rtol}`: how far the static training's loss may be from the dygraph one's at each logged step (default "
        "atol 1e-5, rtol 1e-5); not a config line", 1e-5, 1e-5)


class FleetFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    gpu_list: str = Field(
        "127.0.0.2,127.0.0.3;-1,-1", description="the machines and each one's devices, upstream's `ips;devices` "
        "(default: the descriptor's own `gpu_list` entry naming machines, else `127.0.0.2,127.0.0.3;-1,-1`: two "
        "machines, two CPU processes each); other addresses are simulated on loopback ones. A `gpu_list` entry naming "
        "machines by address renders the fleet chain without the section")
    tolerance: Optional[Tolerance] = _tolerance(
        "`{atol, rtol}`: how far rank 0's parameters, and the mean of the ranks' losses at each logged step, may be from "
        "a one-process run's (default atol 1e-5, rtol 1e-5); not a config line", 1e-5, 1e-5)


ALIGN_CHECKPOINTS = ("forward", "metric", "loss", "backward", "train")


class AlignFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    thresholds: Optional[dict[Annotated[Literal[ALIGN_CHECKPOINTS], _json(description="a checkpoint of tipcgen align")],
                              NonNegative]] = Field(
        None, description="per checkpoint (`forward`, `metric`, `loss`, `backward`, `train`): the largest difference "
        "that passes")


class TargetFields(BaseModel):
    model_config = _GROUP_OF_FIELDS
    metrics: Annotated[dict[str, float], Field(min_length=1)] = Field(description="metric name to the paper's value")
    tolerance: NonNegative = Field(0.02, description="how far below the figure still counts (default 0.02)")
    relative: bool = Field(True, description="tolerance as a fraction of the figure (default `true`)")
    lower_is_better: list[str] = Field(
        ["loss"], description="metrics where lower is better (default: those named loss)")


_TOP = {
    "train": (TrainLines, Field(description="the train lines (slot fields)")),
    "eval": (Optional[EvalLines], Field(None, description="the eval lines (slot fields)")),
    "export": (Optional[ExportLines], Field(None, description="the export lines (slot fields)")),
    "whole_infer": (Optional[WholeInferLines], Field(None, description="the whole_infer lines (slot fields)")),
    "inference": (InferenceLines, Field(description="the inference lines (slot fields)")),
    "schema_version": (Annotated[Literal[SCHEMA_VERSION], BeforeValidator(_no_boolean)], Field(
        SCHEMA_VERSION, description=f"`{SCHEMA_VERSION}` (the default); any other number is refused")),
    "description": (Union[str, float, None], Field(None, description="one line shown in test_tipc/README.md")),
    **_TOP_SLOT,
    "layout": (Literal[tuple(layout.LAYOUTS)], Field(
        "standard", description="the layout family the config is written in ([LAYOUTS.md](LAYOUTS.md)): `standard` (the "
        "51-line layout, default), `tutorial` (the models-repo 32-line layout; `layout:` above), `paddleseg`, "
        "`paddlevideo`, `paddledetection` or `paddlegan`")),
    "text": (Optional[TextFields], Field(
        None, description="the config's lines as written where they differ from tipcgen's spelling (`tipcgen import` "
        "keeps them, so `init` gives the file back byte for byte; a line a field changes is written afresh)")),
    "sections": (Optional[list[SectionEntry]], Field(
        None, description="trailing config sections after line 50: a list of `{name, lines}` (and `header`, a header "
        "written other than 27/27)")),
    "benchmark": (Optional[BenchmarkFields], Field(
        None, description="the benchmark_train chain's cases (`benchmark:` above)")),
    "env": (Optional[dict[str, Annotated[Union[str, float, bool], _json(
        **{_KEY: "<NAME>"}, description="one variable: a name of letters, digits and `_` (not `PATH`, `PYTHONPATH`, `LD_*`, "
        "`HOME`), a one-line value")]]], Field(
        None, description="variables the export and inference steps run with (`env:` below)")),
    "data": (Optional[DataFields], Field(None, description="what prepare.sh puts in place (`data:` above)")),
    "run": (Optional[RunFields], Field(None, description="limits (`run:` below)")),
    "checks": (Optional[ChecksFields], Field(
        None, description="result checks of every inference case ([CHAINS.md](CHAINS.md))")),
    PADDLE2ONNX: (Optional[Paddle2OnnxFields], Field(
        None, description="the paddle2onnx chain (`tipcgen run --chain paddle2onnx`)")),
    PTQ: (Optional[PtqFields], Field(
        None, description="the post-training quantization config, `train_ptq_infer_python.txt` "
        "([QUANTIZATION.md](QUANTIZATION.md); `tipcgen import` of a PTQ config writes it)")),
    "kept": (Optional[list[KeptEntry]], Field(
        None, description="configs of kinds tipcgen does not generate from fields (C++ inference, serving, paddle2onnx, "
        "Lite, KL quantization, dy2static, pipeline, a layout of no family), each kept line by line and written back "
        "byte for byte at `test_tipc/configs/<file>` (`tipcgen import` writes it; [LAYOUTS.md](LAYOUTS.md))")),
    DY2STATIC: (Optional[Dy2staticFields], Field(
        None, description="the dygraph-to-static chain, `train_dy2static_python.txt` "
        "([CHAINS.md](CHAINS.md#the-dy2static-chain)): `{}` renders it from the train block (needs `train.to_static` "
        "keyed `to_static_train`)")),
    FLEET: (Optional[FleetFields], Field(
        None, description="the multi-machine chain, `train_linux_gpu_fleet_normal_infer_python_linux_gpu_cpu.txt` "
        "([CHAINS.md](CHAINS.md#the-fleet-chain-multi-machine-on-one-host)): the basic config with a gpu_list naming "
        "machines")),
    "align": (Optional[AlignFields], Field(None, description="`tipcgen align` report settings")),
    "target": (Optional[TargetFields], Field(None, description="the paper's figures (`target:` below)")),
}
TipcYaml = create_model("TipcYaml", __config__=_GROUP_OF_FIELDS, __doc__="tipcgen model descriptor (tipc.yaml)", **_TOP)


# -- what is derived from the model
def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with every ``$ref`` replaced by what it names (its own keys win): one plain draft-07 tree."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return {k: (v if k in ("default", "const", "enum") else _inline(v, defs)) for k, v in node.items() if k != "$defs"}


def _raw() -> dict[str, Any]:
    schema = TipcYaml.model_json_schema()
    return _inline(schema, schema.get("$defs", {}))


def _object(node: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The object a node takes (a group or a mapping), looking past ``anyOf [X, null]``."""
    if node.get("type") == "object":
        return node
    objects = [n for n in node.get("anyOf", ()) if n.get("type") == "object"]
    return objects[0] if len(objects) == 1 else None


def _rows(node: dict[str, Any], path: str = "") -> list[tuple[str, str, dict[str, Any]]]:
    """(path, doc, node) for every field below ``node``, depth first, as declared."""
    out = []
    obj = _object(node) or {}
    for name, child in obj.get("properties", {}).items() if obj.get(_GROUP) else ():
        sub = f"{path}.{name}" if path else name
        out.append((sub, child.get("description", ""), child))
        out += _rows(child, sub)
    extra = obj.get("additionalProperties")
    if isinstance(extra, dict) and _KEY in extra:  # a mapping of names the user chooses
        sub = f"{path}.{extra[_KEY]}"
        out.append((sub, extra.get("description", ""), extra))
        out += _rows(extra, sub)
    return out


def _fields() -> list[tuple[str, str]]:
    """Every field's path and doc: the groups' own fields first, then the slot fields of train, eval, ... (the
    slot table of docs/DESCRIPTOR.md has them too)."""
    rows = [(path, doc) for path, doc, _ in _rows(_raw())]
    return sorted(rows, key=lambda row: "." in row[0] and row[0].split(".")[0] in SECTION_FIELDS)


def children(path: str) -> set[str]:
    """The names of the fields right below ``path`` (``""``: the top level), by the model itself (the validator
    reads them from the shipped JSON Schema: fields.py; tests/test_schema.py holds the two equal)."""
    prefix = f"{path}." if path else ""
    return {p[len(prefix):] for p, _ in _fields() if p.startswith(prefix) and "." not in p[len(prefix):]}


def _plain(doc: str) -> str:
    """A Markdown doc as the JSON Schema's description: no backticks, links as their text."""
    return re.sub(r"`|\[([^]]*)\]\([^)]*\)", lambda m: m.group(1) or "", doc)


def _shipped(node: Any) -> Any:
    if isinstance(node, list):
        return [_shipped(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        # pydantic's own titles ("Atol") are dropped; one of ours, a phrase in lower case, is what a message expects
        if (key == "title" and not value[:1].islower()) or key in (_GROUP, _KEY) or (key == "default" and value is None):
            continue
        if key == _TITLE:
            out["title"] = value
        elif key in ("properties", "$defs"):
            out[key] = {name: _shipped(sub) for name, sub in value.items()}
        elif key == "description":
            out[key] = _plain(value)
        elif key in ("default", "const", "enum"):
            out[key] = value
        else:
            out[key] = _shipped(value)
    return out


def json_schema() -> dict[str, Any]:
    """The descriptor's JSON Schema (draft-07, which YAML language servers read)."""
    return {"$schema": "http://json-schema.org/draft-07/schema#",
            "title": "tipcgen model descriptor (tipc.yaml)",
            **_shipped(_raw()),
            "description": "Generated by `tipcgen schema` from tipcgen/descriptor/model.py; see docs/DESCRIPTOR.md."}


def json_text() -> str:
    """The JSON Schema as the text shipped in ``tipcgen/tipc.schema.json``."""
    return json.dumps(json_schema(), indent=1, ensure_ascii=False) + "\n"


def field_table() -> str:
    """docs/DESCRIPTOR.md's "Every field" table."""
    rows = ["| field | meaning |", "| --- | --- |"]
    rows += [f"| `{path}` | {doc} |" for path, doc in _fields()]
    return "\n".join(rows) + "\n"
