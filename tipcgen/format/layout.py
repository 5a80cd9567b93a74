"""The TIPC config layouts: what each line means and where it sits.

This is the one place that knows slot positions. Rendering (``init``), parsing, lint and
import all read these tables; nothing else may hard-code an index.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

@dataclass(frozen=True)
class Slot:
    """One line of a fixed layout.

    kind: ``header`` (``===name===``), ``sep`` (``##``) or ``kv`` (``key:value``).
    field: the descriptor path the slot is rendered from (``None`` for headers and separators).
    key: the key tipcgen writes by default; ``None`` means the key is a flag name the user
    chooses (``--epochs``, ``-o Global.epochs``), ``"null"`` when unused.
    anchors: keys a conforming file has here; a runner or linter checks them to detect a shift.
    shape: how the value is written: ``scalar``, ``list`` (``a|b``, the runner loops over it),
    ``per_mode`` (``mode=value|mode=value``), ``command`` (a script and fixed arguments),
    ``commands`` (a ``|`` list of commands) or ``flag`` (the key is a flag passed with the value).
    steps: the steps that receive the slot (``train``, ``eval``, ``export``, ``infer``, ``whole_infer``).
    filled: the runner fills the value (output dirs, weights, model dir); the config's value is unused.
    value: ``(what, pattern)`` every item of the value must match (the keyless inference block).
    """

    index: int
    name: str
    kind: str
    key: str | None = None
    field: str | None = None
    anchors: tuple[str, ...] = ()
    doc: str = ""
    shape: str = "scalar"
    steps: tuple[str, ...] = ()
    filled: bool = False
    value: tuple[str, re.Pattern[str]] | None = None


def _h(i: int, name: str) -> Slot:
    return Slot(i, name, "header", key=name, anchors=(name,))


def _s(i: int, name: str) -> Slot:
    return Slot(i, name, "sep", key="##", anchors=("##",))


def _kv(i: int, name: str, field: str, key: str | None = None, anchors: tuple[str, ...] = (), doc: str = "",
        shape: str = "scalar", steps: str = "", filled: bool = False,
        value: tuple[str, re.Pattern[str]] | None = None) -> Slot:
    return Slot(i, name, "kv", key=key, field=field, anchors=anchors, doc=doc, shape=shape,
                steps=tuple(steps.split()), filled=filled, value=value)


_ON_OFF = ("True/False", re.compile(r"^(True|False|true|false)$"))
_NUMBER = ("a number", re.compile(r"^[0-9]+$"))
_PRECISION = ("fp32/fp16/int8 or True/False", re.compile(r"^(fp32|fp16|int8|bf16|True|False|true|false)$"))


TRAIN_INFER_PYTHON: tuple[Slot, ...] = (
    _h(0, "train_params"),
    _kv(1, "model_name", "model_name", "model_name", ("model_name",), "names the log folder `test_tipc/output/<model_name>/`; letters, digits, `_ - .`"),
    _kv(2, "python", "python", "python", ("python",), "interpreter for every command (`python`, not `python3.7`)",
        steps="train eval export infer whole_infer"),
    _kv(3, "gpu_list", "gpu_list", "gpu_list", ("gpu_list",), "device loop: `-1` CPU, `0` one GPU, `0,1` several GPUs, `ip1,ip2;0,1` several machines",
        shape="list", steps="train eval infer"),
    _kv(4, "train_use_gpu", "train.device", doc="train device values, paired with `gpu_list` by position (or one value)",
        shape="list", steps="train eval"),
    _kv(5, "autocast", "train.autocast", doc="autocast loop: `null`, `fp32`, `amp`, `fp16`", shape="list", steps="train"),
    _kv(6, "epoch", "train.epochs", doc="per-mode epochs", shape="per_mode", steps="train"),
    _kv(7, "save_model", "train.output_dir", doc="output-dir flag; the runner fills the path (`<output>/<trainer>_gpus_<gpu>_autocast_<a>`)",
        shape="flag", steps="train", filled=True),
    _kv(8, "train_batch_size", "train.batch_size", doc="per-mode train batch size", shape="per_mode", steps="train"),
    _kv(9, "pretrain", "train.pretrained", doc="pretrained flag; its key also passes the checkpoint to eval",
        shape="flag", steps="train eval"),
    _kv(10, "train_model_name", "train.checkpoint", "train_model_name", doc="checkpoint name inside the output dir (`iter_*/model.pdparams`: the newest match, by number)",
        steps="eval export"),
    _kv(11, "train_infer_data", "train.infer_data", "train_infer_img_dir", doc="inference data after training (with `inference.data`'s key)",
        steps="infer"),
    _kv(12, "train_param", "train.extra", "null", doc="one more train flag", shape="flag", steps="train"),
    _s(13, "sep_train"),
    _kv(14, "trainer", "train.trainer", "trainer", ("trainer",), "trainer loop: `norm_train`, `pact_train`, `fpgm_train`, `distill_train`, `to_static_train`", shape="list", steps="train"),
    _kv(15, "norm_train", "train.norm", "norm_train", doc="normal train script and fixed args",
        shape="command", steps="train"),
    _kv(16, "pact_train", "train.pact", "pact_train", ("pact_train", "quant_train"), "PACT train command",
        shape="command", steps="train"),
    _kv(17, "fpgm_train", "train.fpgm", "fpgm_train", ("fpgm_train",), "FPGM train command",
        shape="command", steps="train"),
    _kv(18, "distill_train", "train.distill", "distill_train", ("distill_train",), "distillation train command",
        shape="command", steps="train"),
    _kv(19, "trainer_key1", "train.to_static", "null", doc="to_static suffix, appended to the normal train command", shape="flag", steps="train"),
    _kv(20, "trainer_key2", "train.custom", "null", doc="custom trainer: its key is the trainer name, its value the command", steps="train"),
    _s(21, "sep_trainer"),
    _h(22, "eval_params"),
    _kv(23, "eval", "eval.script", "eval", ("eval",), "eval command (`null` skips eval)", shape="command", steps="eval"),
    _kv(24, "eval_param", "eval.extra", "null", doc="one more eval flag", shape="flag", steps="eval"),
    _s(25, "sep_eval"),
    _h(26, "infer_params"),
    _kv(27, "save_infer", "export.output_dir", doc="export output-dir flag; the runner fills the path",
        shape="flag", steps="export", filled=True),
    _kv(28, "export_weight", "export.weights", doc="export weights flag; the runner fills the checkpoint",
        shape="flag", steps="export", filled=True),
    _kv(29, "norm_export", "export.norm", "norm_export", ("norm_export",), "export script",
        shape="command", steps="export"),
    _kv(30, "quant_export", "export.quant", "quant_export", doc="export for PACT", shape="command", steps="export"),
    _kv(31, "fpgm_export", "export.fpgm", "fpgm_export", doc="export for FPGM", shape="command", steps="export"),
    _kv(32, "distill_export", "export.distill", "distill_export", doc="export for distillation",
        shape="command", steps="export"),
    _kv(33, "export_key1", "export.key1", "export1", doc="extra export (Clas: kl_quant)"),
    _kv(34, "export_key2", "export.key2", "export2", doc="export paired with the custom trainer", steps="export"),
    _kv(35, "inference_dir", "export.inference_dir", "inference_dir", doc="subfolder of the exported model",
        steps="infer"),
    _kv(36, "infer_model", "whole_infer.models", "infer_model", doc="whole_infer: trained model dirs",
        shape="list", steps="whole_infer"),
    _kv(37, "infer_export", "whole_infer.export", "infer_export", doc="whole_infer: export command per model",
        shape="commands", steps="whole_infer"),
    _kv(38, "infer_quant", "whole_infer.quant", "infer_quant", ("infer_quant",), "whole_infer: quant flag per model",
        shape="list", steps="whole_infer"),
    _kv(39, "inference", "inference.script", "inference", ("inference",), "inference script",
        shape="command", steps="infer whole_infer"),
    _kv(40, "infer_use_gpu", "inference.use_gpu", doc="device loop: `True`/`gpu` and `False`/`cpu`",
        shape="list", steps="infer whole_infer"),
    _kv(41, "enable_mkldnn", "inference.enable_mkldnn", doc="CPU loop",
        shape="list", steps="infer whole_infer", value=_ON_OFF),
    _kv(42, "cpu_threads", "inference.cpu_threads", doc="CPU loop",
        shape="list", steps="infer whole_infer", value=_NUMBER),
    _kv(43, "infer_batch_size", "inference.batch_size", doc="batch-size loop",
        shape="list", steps="infer whole_infer", value=_NUMBER),
    _kv(44, "use_trt", "inference.use_tensorrt", doc="GPU loop",
        shape="list", steps="infer whole_infer", value=_ON_OFF),
    _kv(45, "precision", "inference.precision", doc="precision loop (`fp32`, `fp16`, `int8`)",
        shape="list", steps="infer whole_infer", value=_PRECISION),
    _kv(46, "infer_model_dir", "inference.model_dir", doc="model-dir flag; the runner fills the path",
        shape="flag", steps="infer whole_infer", filled=True),
    _kv(47, "infer_data", "inference.data", doc="data flag; its value is used by whole_infer",
        shape="flag", steps="infer whole_infer"),
    _kv(48, "save_log", "inference.save_log", doc="save-log flag (upstream runners do not pass it)", shape="flag"),
    _kv(49, "benchmark", "inference.benchmark", doc="benchmark flag", shape="flag", steps="infer whole_infer"),
    _kv(50, "infer_param", "inference.extra", doc="one more inference flag", shape="flag", steps="infer whole_infer"),
)

TRAIN_INFER_PYTHON_LINES = len(TRAIN_INFER_PYTHON)
SLOT_BY_NAME = {slot.name: slot for slot in TRAIN_INFER_PYTHON}
SLOT_BY_FIELD = {slot.field: slot for slot in TRAIN_INFER_PYTHON if slot.field}
ANCHOR_SLOTS = tuple(slot for slot in TRAIN_INFER_PYTHON if slot.anchors)
# The anchors the generated runner checks before it reads anything: the structure every upstream
# flavour shares (lint checks all of ANCHOR_SLOTS; a few real files rename pact_train or eval).
RUNNER_ANCHOR_INDICES = (0, 1, 2, 3, 13, 14, 21, 22, 25, 26, 39)

# Views of the table above (its `shape` column): nothing else lists slots by shape.
PER_MODE_SLOTS = tuple(s.name for s in TRAIN_INFER_PYTHON if s.shape == "per_mode")  # `mode=value|...`
LIST_SLOTS = tuple(s.name for s in TRAIN_INFER_PYTHON if s.shape in ("list", "commands"))  # `a|b`, looped
COMMAND_SLOTS = tuple(s.name for s in TRAIN_INFER_PYTHON if s.shape in ("command", "commands"))  # scripts
# Fields whose value the runner fills (output dirs, weights, model dir): the config's value is unused.
RUNNER_FILLED = tuple(s.field for s in TRAIN_INFER_PYTHON if s.filled)

# The compact 32-line layout of the paper-reproduction tutorials (SPEC 1.6; PaddlePaddle/models
# tutorials/mobilenetv3_prod/Step6). Its slots carry the 51-line slot names where they mean the same
# thing, so the descriptor, the generated runner and lint read either layout by name. Idx 10
# (`--data-path:`) is the 51-line `train_param` (an extra train flag); the template's runner reads
# but never passes it. Slots it has no line for (autocast, mkldnn, threads, TRT, precision, ...)
# read as `null` in the generated runner.
TUTORIAL_32: tuple[Slot, ...] = (  # the 51-line rows it shares, by descriptor field
    _h(0, "train_params"),
    *(replace(SLOT_BY_FIELD[fld], index=i) for i, fld in enumerate(
        ("model_name", "python", "gpu_list", "train.device", "train.epochs", "train.output_dir", "train.batch_size",
         "train.pretrained", "train.checkpoint", "train.extra"), start=1)),
    _s(11, "sep_train"),
    replace(SLOT_BY_FIELD["train.trainer"], index=12),
    replace(SLOT_BY_FIELD["train.norm"], index=13),
    _s(14, "sep_trainer"),
    _h(15, "eval_params"),
    replace(SLOT_BY_FIELD["eval.script"], index=16),
    _s(17, "sep_eval"),
    _h(18, "infer_params"),
    *(replace(SLOT_BY_FIELD[fld], index=i) for i, fld in enumerate(
        ("export.output_dir", "export.weights", "export.norm"), start=19)),
    _s(22, "sep_export"),
    replace(SLOT_BY_FIELD["whole_infer.models"], index=23, key="train_model", anchors=()),
    replace(SLOT_BY_FIELD["whole_infer.export"], index=24, anchors=()),
    _s(25, "sep_whole_infer"),
    *(replace(SLOT_BY_FIELD[fld], index=i) for i, fld in enumerate(
        ("inference.script", "inference.use_gpu", "inference.batch_size", "inference.model_dir", "inference.data",
         "inference.benchmark"), start=26)),
)
TUTORIAL_32_LINES = len(TUTORIAL_32)
TUTORIAL_32_ANCHORS = {0: "train_params", 1: "model_name", 2: "python", 3: "gpu_list", 12: "trainer", 15: "eval_params", 18: "infer_params", 26: "inference"}
# PaddleSeg's 51-line layout: its export lines stand under an `export_params` header (idx 26), and
# the `infer_params` header takes idx 35, the 51-line layout's `inference_dir` line (PaddleSeg's
# runner reads that header as inference_dir's value: empty). Every other line sits where the
# 51-line layout has it, and PaddleSeg's runner reads the same indices; it fills idx 50's value
# (a results path per inference case).
PADDLESEG_51: tuple[Slot, ...] = tuple(
    _h(26, "export_params") if slot.index == 26 else _h(35, "infer_params") if slot.index == 35
    else replace(slot, filled=True) if slot.index == 50 else slot
    for slot in TRAIN_INFER_PYTHON
)



def _as_read(changes: dict[int, dict]) -> tuple[Slot, ...]:
    """The 51-line table with the runner semantics of another suite (same lines, other steps)."""
    return tuple(replace(slot, **changes[slot.index]) if slot.index in changes else slot for slot in TRAIN_INFER_PYTHON)


# PaddleVideo, PaddleDetection and PaddleGAN write the 51 lines; their runners pass some of them to
# other steps (docs/LAYOUTS.md). Same keys and indices, so the same config text: only `steps`,
# `filled` and `doc` differ.
PADDLEVIDEO_51 = _as_read({
    11: dict(steps=("train",), shape="flag", doc="a second train flag (PaddleVideo's runner passes it to train)"),
    19: dict(doc="the amp trainer: its key is the trainer name, its command exports with norm_export"),
    46: dict(filled=False, doc="model file name, under the exported model dir"),
    50: dict(filled=False, doc="params file name, under the exported model dir"),
})
PADDLEDETECTION_51 = _as_read({
    27: dict(filled=False, doc="export output dir: whole_infer's export gets this value"),
    28: dict(filled=False, doc="export weights: whole_infer's export gets this value"),
    37: dict(doc="whole_infer: the infer modes to export (norm, pact, fpgm, distill, kl_quant)"),
    45: dict(doc="GPU run mode loop (paddle, trt_fp32, trt_fp16, trt_int8)"),
})
PADDLEGAN_51 = _as_read({
    4: dict(steps=(), doc="`##`: PaddleGAN's runner passes no train device"),
    **{i: dict(steps=(), doc="PaddleGAN's runner runs the norm trainer only") for i in (16, 17, 18)},
    28: dict(filled=False, doc="export weights file name, under the train output dir"),
})

# The descriptor's `layout:` values (the layout families, docs/LAYOUTS.md) and the slot table each renders.
LAYOUTS = {"standard": TRAIN_INFER_PYTHON, "tutorial": TUTORIAL_32, "paddleseg": PADDLESEG_51,
           "paddlevideo": PADDLEVIDEO_51, "paddledetection": PADDLEDETECTION_51, "paddlegan": PADDLEGAN_51}
LAYOUT_OF_KIND = {"train_infer_python": "standard", "tutorial_32": "tutorial"}
# What the generated runner checks first, per layout (the 32-line file is checked at every anchor).
RUNNER_ANCHORS = {
    **{name: tuple(slot for slot in table if slot.index in RUNNER_ANCHOR_INDICES)
       for name, table in LAYOUTS.items() if table is not TUTORIAL_32},
    "tutorial": tuple(slot for slot in TUTORIAL_32 if slot.index in TUTORIAL_32_ANCHORS),
}


# Lines a layout's own upstream runner reads but never passes to a script: the generated runner
# leaves them out too (the tutorial's `use-gpu:True|True` has no dashes: passed, it would be a
# stray positional argument).
RUNNER_UNPASSED = {**{name: frozenset() for name in LAYOUTS},
                   "tutorial": frozenset({SLOT_BY_FIELD["train.device"].name, SLOT_BY_FIELD["train.extra"].name})}


def slots_of(layout_name: str) -> tuple[Slot, ...]:
    """The slot table of a layout family (``standard``, ``tutorial``, ``paddleseg``, ...)."""
    return LAYOUTS[layout_name]


def slot_index(kind: str, name: str) -> int | None:
    """The index of a named slot in a config of this kind; ``None`` where the layout has no such line."""
    table = LAYOUTS[LAYOUT_OF_KIND.get(kind, "standard")]
    return next((slot.index for slot in table if slot.name == name), None)

HEADER_PAD = "=" * 27


def header_line(name: str) -> str:
    """The canonical header text tipcgen writes (27 `=` on both sides)."""
    return f"{HEADER_PAD}{name}{HEADER_PAD}"


# The keyless inference block (idx 40-50) has no anchor; these values have a fixed shape in every
# corpus file (the precision slot holds use_fp16's True/False in PaddleClas). lint reads a value of
# another shape as a missing or extra line; the descriptor refuses one, so init never renders it.
INFER_VALUE_SHAPES = {s.name: s.value for s in TRAIN_INFER_PYTHON if s.value is not None}

