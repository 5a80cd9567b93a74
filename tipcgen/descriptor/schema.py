"""The descriptor schema: every field ``tipc.yaml`` accepts, what it means and what value it takes.

This is the one schema. The validator (``validate*.py``) takes its field names from here, the
JSON Schema shipped as ``tipcgen/tipc.schema.json`` (for editors with a YAML language server)
is generated from it, and so is the "Every field" table of docs/DESCRIPTOR.md. The slot fields
(one per config line) come from ``layout.py``. The JSON Schema checks shapes and names; the
validator's checks of values (no full-width punctuation, device entries, paths inside the
repository...) stay in Python, where they name file:line:field.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tipcgen.format import compression, layout, words
from tipcgen.format.chains import DY2STATIC, FLEET, PADDLE2ONNX, PTQ
from tipcgen.format.words import DEFAULT_STEP_TIMEOUT

SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "tipc.schema.json"  # tipcgen/tipc.schema.json
MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # the generated runner checks TIPC_MODEL by it too
MODEL_NAME_HINT = "use letters, digits, '_', '-' and '.', starting with a letter or digit (no '/', '..' or spaces)"
PYTHON_RE = re.compile(r"^[A-Za-z0-9_./+-]+$")
# -1, a device, devices, or machines;devices (upstream's multi-machine form: a machine's device is -1 for a CPU process).
GPU_ENTRY_RE = re.compile(r"^(-1|[0-9]+(,[0-9]+)*|[A-Za-z0-9_.,-]+;(-1|[0-9]+)(,(-1|[0-9]+))*)$")


def is_model_name(name: str) -> bool:
    """The one rule for a model_name (init, lint and the runner that run starts): it names the folder
    test_tipc/output/<model_name>/, so MODEL_NAME_RE on the whole text and no '..'."""
    return MODEL_NAME_RE.fullmatch(name) is not None and ".." not in name


# A flag name: words split by one space; the runner appends `=VALUE` to the last word, so only the
# words before it may hold `=` (PaddleVideo's `-o model_name=X -o DATASET.train.file_path`).
KEY_RE = re.compile(r"^(?:[^\s:|]+ )*[^\s:|=]+$")
DATA_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
INPUTS_PATH_RE = re.compile(r"^[A-Za-z0-9_./-]+\.npz$")  # one config value: no space, '|', ':' or '='
MD5_RE = re.compile(r"^[0-9a-f]{32}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
WHOLE_ENV_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Full-width and other look-alike punctuation that TIPC parsers split on wrongly (PaddleGAN #637).
BAD_PUNCTUATION = "，：｜；（）＝　、"
MAX_STEP_TIMEOUT = 24 * 3600
# Slot fields whose key the generated runner checks before it reads anything: only their value is the user's.
FIXED_KEY_FIELDS = ("model_name", "python", "gpu_list", "train.trainer")
# Left out, these fields take a documented default (docs/DESCRIPTOR.md); written as null they are an error.
FIELD_DEFAULTS = {"python": "python", "train.trainer": "norm_train"}
# The train slots a trainer name selects (by their key, as the runner does).
# What the runner needs to own itself: a descriptor's env: may not change them.
RESERVED_ENV = {"PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "BASH_ENV", "ENV", "IFS", "HOME"}
# Python variables that only tune a run; every other PYTHON* one can load or run code (PYTHONHOME,
# PYTHONSTARTUP, PYTHONBREAKPOINT, PYTHONWARNINGS importing a category, PYTHONUSERBASE, ...).
SAFE_PYTHON_ENV = {"PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8",
                   "PYTHONFAULTHANDLER", "PYTHONOPTIMIZE"}
# The classes of variable a descriptor's env: may not set, each with why (a deny-list by class, not by name).
DENIED_ENV = (
    (re.compile(r"^(LD|DYLD)_"), "the dynamic loader loads or audits the libraries it names (LD_AUDIT, LD_PRELOAD, ...)"),
    (re.compile(r"^PYTHON"), "Python reads it at start-up to find or run code (PYTHONHOME, PYTHONSTARTUP, PYTHONPATH, ...)"),
    (re.compile(r"^(BASH_ENV|ENV|BASH_FUNC_.*|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|IFS|CDPATH|GLOBIGNORE)$"),
     "bash reads it at start-up or while it runs the scripts"),
    (re.compile(r"^(PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|NODE_OPTIONS|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS)$"),
     "another interpreter runs the code it names"),
    (re.compile(r"^(GCONV_PATH|GLIBC_TUNABLES|LOCPATH|NLSPATH|HOSTALIASES|MALLOC_.*|OPENSSL_CONF|OPENSSL_ENGINES)$"),
     "the C library or OpenSSL loads modules or files it names"),
    (re.compile(r"^(PATH|HOME|TMPDIR|SHELL)$"), "the runner and tipcgen find their programs and files with it"),
    (re.compile(r"^TIPC_"), "the generated runner and tipcgen run set TIPC_* variables themselves (TIPC_RUN_ID, ...)"),
)


def env_refusal(name: str) -> str | None:
    """Why the descriptor's env: may not set this variable, or None when it may."""
    if name in SAFE_PYTHON_ENV:
        return None
    for pattern, reason in DENIED_ENV:
        if pattern.match(name):
            return reason
    return "it is reserved" if name in RESERVED_ENV else None
ROLES = ("train", "infer")
ALIGN_CHECKPOINTS = ("forward", "metric", "loss", "backward", "train")
SECTION_FIELDS = ("train", "eval", "export", "whole_infer", "inference")  # the groups of slot fields
REQUIRED = ("model_name", "gpu_list", "train", "inference")


@dataclass(frozen=True)
class Field:
    """One field: its path (``<name>`` a name the user chooses), its meaning (Markdown, one line of
    docs/DESCRIPTOR.md), and the JSON Schema of its value (``None``: a mapping of the fields below it)."""

    path: str
    doc: str
    json: dict[str, Any] | None = None
    required: tuple[str, ...] = ()  # the fields below it that must be given


_TEXT = {"type": "string", "minLength": 1}
_SCALAR = {"type": ["string", "number", "boolean", "null"]}
_NUMBER = {"type": "number", "minimum": 0}
_TOLERANCE = {"type": ["object", "null"], "properties": {"atol": _NUMBER, "rtol": _NUMBER}, "additionalProperties": False}
_PATH = {"type": ["string", "null"], "minLength": 1, "not": {"pattern": r"^/|(^|/)\.\.(/|$)"}}


def _slot_json(slot: layout.Slot) -> dict[str, Any]:
    """A config line's value: scalar, list (loop lines), mode → value (per-mode lines), or {key, value}."""
    shapes: list[dict[str, Any]] = [_SCALAR]
    if slot.name in layout.LIST_SLOTS:
        shapes.append({"type": "array", "minItems": 1, "items": _SCALAR})
    if slot.name in layout.PER_MODE_SLOTS:
        shapes.append({"type": "object", "minProperties": 1, "additionalProperties": _SCALAR,
                       "propertyNames": {"enum": [*words.MODES, *words.KNOWN_EXTRA_MODES]}})
    value = shapes[0] if len(shapes) == 1 else {"anyOf": shapes}
    keyed = {"type": "object", "properties": {"key": {"type": ["string", "null"]}, "value": value},
             "required": ["key"], "additionalProperties": False}
    if slot.field in FIXED_KEY_FIELDS:  # the runner checks the key: {key, value} only with the fixed one
        return {"anyOf": [*shapes, {**keyed, "properties": {"key": {"const": slot.key}, "value": value}}]}
    if slot.key is None:  # the key is the script's flag name: only {key, value} (or null) says it
        return {"anyOf": [{"type": "null"}, keyed]}
    return {"anyOf": [*shapes, keyed]}


def _slot_fields() -> list[Field]:
    out = []
    for slot in layout.TRAIN_INFER_PYTHON:
        if slot.kind != "kv":
            continue
        default = f" (default `{FIELD_DEFAULTS[slot.field]}`)" if slot.field in FIELD_DEFAULTS else ""
        out.append(Field(slot.field, f"config line {slot.index} (`{slot.name}`){default}: see the slot table",
                         _slot_json(slot)))
    return out


_SLOTS = _slot_fields()
_TOP_SLOTS = {f.path: f for f in _SLOTS if "." not in f.path}

FIELDS: tuple[Field, ...] = (
    Field("train", "the train lines (slot fields)", required=("norm",)),
    Field("eval", "the eval lines (slot fields)"),
    Field("export", "the export lines (slot fields)"),
    Field("whole_infer", "the whole_infer lines (slot fields)"),
    Field("inference", "the inference lines (slot fields)", required=("script",)),
    Field("schema_version", f"`{SCHEMA_VERSION}` (the default); any other number is refused", {"const": SCHEMA_VERSION}),
    Field("description", "one line shown in test_tipc/README.md", {"type": ["string", "number", "null"]}),
    *_TOP_SLOTS.values(),
    Field("layout", "the layout family the config is written in ([LAYOUTS.md](LAYOUTS.md)): `standard` (the 51-line "
          "layout, default), `tutorial` (the models-repo 32-line layout; `layout:` above), `paddleseg`, "
          "`paddlevideo`, `paddledetection` or `paddlegan`", {"enum": list(layout.LAYOUTS)}),
    Field("text", "the config's lines as written where they differ from tipcgen's spelling (`tipcgen import` keeps "
          "them, so `init` gives the file back byte for byte; a line a field changes is written afresh)"),
    Field("text.lines", "logical line index (0-based, as the runner counts) to the line as written",
          {"type": ["object", "null"], "propertyNames": {"pattern": r"^[0-9]+$"},
           "additionalProperties": {"type": "string", "minLength": 1}}),
    Field("text.blank_lines", "1-based numbers of the blank lines of the file",
          {"type": ["array", "null"], "items": {"type": "integer", "minimum": 1}}),
    Field("text.final_newline", "`false`: the file does not end with a newline (default `true`)", {"type": "boolean"}),
    Field("text.line_count", "the file stops after this many lines, right after a section's `##` (a train-only or "
          "train+eval config: the runner reads the later lines as empty)", {"type": ["integer", "null"], "minimum": 1}),
    Field("sections", "trailing config sections after line 50: a list of `{name, lines}` (and `header`, a header "
          "written other than 27/27)",
          {"type": ["array", "null"], "items": {
              "type": "object", "additionalProperties": False,
              "properties": {"name": {"type": ["string", "null"]}, "header": {"type": ["string", "null"]},
                             "lines": {"type": ["array", "null"], "items": {"type": ["string", "number"]}}}}}),
    Field("benchmark", "the benchmark_train chain's cases (`benchmark:` above)", required=("batch_size",)),
    Field("benchmark.batch_size", "one case per batch size: a whole number > 0 or a list of them",
          {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}}]}),
    Field("benchmark.fp_items", "`fp32` and/or `fp16` (default both; fp16 trains with AMP)",
          {"anyOf": [{"enum": ["fp32", "fp16"]}, {"type": "array", "minItems": 1, "items": {"enum": ["fp32", "fp16"]}}]}),
    Field("benchmark.epoch", "epochs per case (default 1)", {"type": "integer", "minimum": 1}),
    Field("benchmark.profiler_options", "one word without spaces, `:` or `|` (default null): adds a profiling run "
          "per N1C1 case", {"type": ["string", "null"], "pattern": r"^[^\s|:]+$"}),
    Field("benchmark.flags", "environment variables each case exports: a mapping of name to value",
          {"type": ["object", "null"], "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
           "additionalProperties": {"type": ["string", "number", "boolean"]}}),
    Field("benchmark.device_num", "`N<machines>C<devices>` entries (default `[N1C1, N1C2]`)",
          {"anyOf": [{"type": "string", "pattern": r"^N[1-9][0-9]*C[1-9][0-9]*$"},
                     {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": r"^N[1-9][0-9]*C[1-9][0-9]*$"}}]}),
    Field("env", "variables the export and inference steps run with (`env:` below)"),
    Field("env.<NAME>", "one variable: a name of letters, digits and `_` (not `PATH`, `PYTHONPATH`, `LD_*`, `HOME`), "
          "a one-line value", {"type": ["string", "number", "boolean"]}),
    Field("data", "what prepare.sh puts in place (`data:` above)"),
    Field("data.dir", "the folder prepare.sh fills (default `./train_data`), relative, inside the repository", _PATH),
    Field("data.whole_env", "the variable naming the whole data folder (default `TIPC_DATA_DIR`)",
          {"type": "string", "pattern": WHOLE_ENV_RE.pattern}),
    Field("data.files", "a mapping of name in `data.dir` to its sources"),
    Field("data.files.<name>", "one file: where its lite and whole copies come from"),
    Field("data.files.<name>.role", "`train` (default) or `infer`: which modes read the whole copy", {"enum": list(ROLES)}),
    Field("data.files.<name>.lite", "the lite copy in the repository: a file, a folder, or a `.tar`/`.tar.gz`/`.tgz`/"
          "`.zip` archive", _PATH),
    Field("data.files.<name>.whole", "a file or folder inside the whole data folder, linked in place", _PATH),
    Field("data.files.<name>.md5", "md5 of the whole file (32 hex digits), checked before it is linked",
          {"type": ["string", "null"], "pattern": MD5_RE.pattern}),
    Field("data.files.<name>.rows", "its data rows, shown when the md5 differs", {"type": ["integer", "null"], "minimum": 0}),
    Field("data.setup", "python scripts prepare.sh runs after the files are in place: a list of `[script.py, args...]`",
          {"type": ["array", "null"], "items": {"type": "array", "minItems": 1,
                                                "items": {"type": ["string", "number"]}}}),
    Field("data.trained_model", "whole_infer and paddle2onnx: the folder prepare.sh links to `$TIPC_MODEL_DIR` or the "
          "latest train run", _PATH),
    Field("data.whole_from_lite", "`true`: `whole_train_whole_infer` trains on the lite data on purpose (default "
          "`false`: refused)", {"type": "boolean"}),
    Field("run", "limits (`run:` below)"),
    Field("run.step_timeout", f"seconds before a step is killed (default {DEFAULT_STEP_TIMEOUT})",
          {"type": "integer", "minimum": 1, "maximum": MAX_STEP_TIMEOUT}),
    Field("checks", "result checks of every inference case ([CHAINS.md](CHAINS.md))"),
    Field("checks.reference", "the file the export step writes the dygraph model's results to (a plain file name)",
          {"type": ["string", "null"], "pattern": DATA_NAME_RE.pattern}),
    Field("checks.reference_tolerance", "`{atol, rtol}` for inference against that reference (default 1e-5, 1e-4)", _TOLERANCE),
    Field("checks.golden", "a folder next to the descriptor with committed results (`tipcgen golden` writes them)", _PATH),
    Field("checks.golden_tolerance", "`{atol, rtol}` against the golden results (default 1e-3, 1e-3)", _TOLERANCE),
    Field("checks.fixed_inputs", "the chain's own fixed-input check of the exported model: a `.npz` of inputs to feed "
          "(read without unpickling), or `false` to turn the check off (default: inputs built from the model's input "
          "spec, seed 0)", {"anyOf": [{"type": "string", "pattern": INPUTS_PATH_RE.pattern}, {"enum": [False, None]}]}),
    Field("checks.outputs", "the exported model's outputs named by position, e.g. `[logits, probs]` (config "
          "`output_names:logits\\|probs` in `result_check_params`): the fixed-input checks, their results files and "
          "golden results use these names, so a failure reads `output 'probs' differs by up to ...`. Without it outputs "
          "keep the program's names; Paddle 3's `fetch_name_N` are shown as `output N (fetch_name_N)`",
          {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string", "pattern": DATA_NAME_RE.pattern}}),
    Field("checks.own_weights", "steps that load their own weights on purpose: `[eval]`, `[export]`, `[infer]` or several. "
          "Without it, `tipcgen run` refuses an eval or export that gets no trained checkpoint (a null key) and an "
          "inference that gets no model folder, since they would use whatever the script loads by default",
          {"type": ["array", "null"], "uniqueItems": True, "items": {"enum": list(words.OWN_WEIGHTS_KINDS)}}),
    Field("checks.onnx_tolerance", "`{atol, rtol}` for ONNX Runtime against Paddle Inference (default 1e-5, 1e-4)", _TOLERANCE),
    Field(PADDLE2ONNX, "the paddle2onnx chain (`tipcgen run --chain paddle2onnx`)", required=("inference",)),
    Field("paddle2onnx.model_dir", "the exported model folder (default `data.trained_model`)", _PATH),
    Field("paddle2onnx.save_file", "the `.onnx` file to write, relative", {"type": "string", "pattern": r"\.onnx$"}),
    Field("paddle2onnx.opset_version", "ONNX opset, 7 to 21 (default 11)", {"type": "integer", "minimum": 7, "maximum": 21}),
    Field("paddle2onnx.inference", "the script that runs the `.onnx` model", _TEXT),
    Field("paddle2onnx.onnx_flag", "the flag that switches that script to ONNX Runtime (default `--use_onnx`); `null`: "
          "the script has none, the chain's own check runs the ONNX model. `tipcgen new` writes the section when there is an "
          "inference script and a `data.trained_model`, and this field only where the default does not apply", {"type": ["string", "null"]}),
    Field(PTQ, "the post-training quantization config, `train_ptq_infer_python.txt` ([QUANTIZATION.md](QUANTIZATION.md); "
          "`tipcgen import` of a PTQ config writes it)", required=("layout", "lines")),
    Field("ptq.layout", "`ptq` (20 lines: models tutorial, PaddleSeg), `ptq_video` (24: PaddleVideo) or `kl_quant` "
          "(20: PaddleOCR)", {"enum": list(compression.LAYOUTS)}),
    Field("ptq.header", "the first line as written, where it is not the layout's own header", _TEXT),
    Field("ptq.lines", "each line of the layout by its name (the upstream runner's variable), as written: "
          "`batch_num: \"--batch_num:1\"`", {"type": "object", "additionalProperties": {"type": "string"}}),
    Field("ptq.trailing", "lines after the layout, which the runner does not read", {"type": "array", "items": {"type": "string"}}),
    Field("ptq.final_newline", "`false`: the file ends without a newline (default `true`)", {"type": "boolean"}),
    Field("ptq.eval_data", "a labelled `.npz` (arrays `x` and `label`, read without unpickling) in the repository: the "
          "PTQ chain's check reports the float and int8 models' accuracy on it and fails when int8 loses more than "
          "`ptq.accuracy_drop`; not a config line", {"type": "string", "pattern": INPUTS_PATH_RE.pattern}),
    Field("ptq.accuracy_drop", "the accuracy the int8 model may lose on `ptq.eval_data` (default 0.05)",
          {"type": "number", "minimum": 0, "maximum": 1}),
    Field("ptq.tolerance", "`{atol, rtol}` for the int8 model's outputs against the float model's on fixed inputs: "
          "it fails above atol + rtol times the float outputs' largest magnitude (default atol 0, rtol 0.2); not a config line", _TOLERANCE),
    Field("kept", "configs of kinds tipcgen does not generate from fields (C++ inference, serving, paddle2onnx, Lite, "
          "KL quantization, dy2static, pipeline, a layout of no family), each kept line by line and written back "
          "byte for byte at `test_tipc/configs/<file>` (`tipcgen import` writes it; [LAYOUTS.md](LAYOUTS.md))",
          {"type": ["array", "null"], "items": {
              "type": "object", "additionalProperties": False, "required": ["file", "lines"],
              "properties": {"file": {"type": "string", "pattern": r"^[A-Za-z0-9_.+@=-]+(/[A-Za-z0-9_.+@=-]+)*\.txt$"},
                             "kind": {"type": "string"},
                             "lines": {"type": ["array", "null"], "items": {"type": "string"}},
                             "final_newline": {"type": "boolean"}}}}),
    Field(DY2STATIC, "the dygraph-to-static chain, `train_dy2static_python.txt` ([CHAINS.md](CHAINS.md#the-dy2static-chain)): "
          "`{}` renders it from the train block (needs `train.to_static` keyed `to_static_train`)"),
    Field("dy2static.lines", "the config's lines as written (`tipcgen import` of a dy2static config writes them; `\"\"` "
          "for a blank line)", {"type": "array", "items": {"type": "string"}}),
    Field("dy2static.final_newline", "`false`: the file ends without a newline (default `true`)", {"type": "boolean"}),
    Field("dy2static.tolerance", "`{atol, rtol}`: how far the static training's loss may be from the dygraph one's at "
          "each logged step (default atol 1e-5, rtol 1e-5); not a config line", _TOLERANCE),
    Field(FLEET, "the multi-machine chain, `train_linux_gpu_fleet_normal_infer_python_linux_gpu_cpu.txt` "
          "([CHAINS.md](CHAINS.md#the-fleet-chain-multi-machine-on-one-host)): the basic config with a gpu_list naming machines"),
    Field("fleet.gpu_list", "the machines and each one's devices, upstream's `ips;devices` (default: the descriptor's own "
          "`gpu_list` entry naming machines, else `127.0.0.2,127.0.0.3;-1,-1`: two machines, two CPU processes each); other "
          "addresses are simulated on loopback ones. A `gpu_list` entry naming machines by address renders the fleet chain "
          "without the section", {"type": "string"}),
    Field("fleet.tolerance", "`{atol, rtol}`: how far rank 0's parameters, and the mean of the ranks' losses at each logged "
          "step, may be from a one-process run's (default atol 1e-5, rtol 1e-5); not a config line", _TOLERANCE),
    Field("align", "`tipcgen align` report settings"),
    Field("align.thresholds", "per checkpoint (`forward`, `metric`, `loss`, `backward`, `train`): the largest "
          "difference that passes", {"type": ["object", "null"], "additionalProperties": False,
                                     "properties": {name: _NUMBER for name in ALIGN_CHECKPOINTS}}),
    Field("target", "the paper's figures (`target:` below)", required=("metrics",)),
    Field("target.metrics", "metric name to the paper's value",
          {"type": "object", "minProperties": 1, "additionalProperties": {"type": "number"}}),
    Field("target.tolerance", "how far below the figure still counts (default 0.02)", _NUMBER),
    Field("target.relative", "tolerance as a fraction of the figure (default `true`)", {"type": "boolean"}),
    Field("target.lower_is_better", "metrics where lower is better (default: those named loss)",
          {"type": "array", "items": {"type": "string"}}),
    *[f for f in _SLOTS if "." in f.path],
)
_BY_PATH = {f.path: f for f in FIELDS}


def children(path: str) -> set[str]:
    """The names of the fields right below ``path`` (``""``: the top level)."""
    prefix = f"{path}." if path else ""
    return {f.path[len(prefix):] for f in FIELDS
            if f.path.startswith(prefix) and "." not in f.path[len(prefix):]}


TOP_FIELDS = children("")
TEXT_FIELDS = children("text")
CHECK_FIELDS = children("checks")
PADDLE2ONNX_FIELDS = children(PADDLE2ONNX)
DATA_FIELDS = children("data")
DATA_FILE_FIELDS = children("data.files.<name>")
RUN_FIELDS = children("run")
TARGET_FIELDS = children("target")
BENCHMARK_FIELDS = children("benchmark")
PTQ_FIELDS = children(PTQ)
KEPT_FIELDS = frozenset({"file", "kind", "lines", "final_newline"})
DY2STATIC_FIELDS = children(DY2STATIC)
FLEET_FIELDS = children(FLEET)


def _node(path: str) -> dict[str, Any]:
    field = _BY_PATH.get(path)
    doc = re.sub(r"`|\[([^]]*)\]\([^)]*\)", lambda m: m.group(1) or "", field.doc) if field else ""
    if field is not None and field.json is not None:
        return {"description": doc, **field.json}
    names = children(path)
    free = [n for n in names if n.startswith("<")]
    node: dict[str, Any] = {"type": ["object", "null"]} if path else {"type": "object"}
    if doc:
        node["description"] = doc
    node["properties"] = {n: _node(f"{path}.{n}" if path else n) for n in sorted(names) if n not in free}
    node["additionalProperties"] = _node(f"{path}.{free[0]}") if free else False
    required = field.required if field else REQUIRED
    if required:
        node["required"] = list(required)
    return node


def json_schema() -> dict[str, Any]:
    """The descriptor's JSON Schema (draft-07, which YAML language servers read)."""
    return {"$schema": "http://json-schema.org/draft-07/schema#",
            "title": "tipcgen model descriptor (tipc.yaml)",
            "description": "Generated by `tipcgen schema` from tipcgen/descriptor/schema.py; see docs/DESCRIPTOR.md.",
            **_node("")}


def json_text() -> str:
    """The JSON Schema as the text shipped in ``tipcgen/tipc.schema.json``."""
    return json.dumps(json_schema(), indent=1, ensure_ascii=False) + "\n"


def field_table() -> str:
    """docs/DESCRIPTOR.md's "Every field" table."""
    rows = ["| field | meaning |", "| --- | --- |"]
    rows += [f"| `{f.path}` | {f.doc} |" for f in FIELDS]
    return "\n".join(rows) + "\n"
