"""The TIPC config layouts: what each line means and where it sits.

This is the one place that knows slot positions. Rendering (``init``), parsing, lint and
import all read these tables; nothing else may hard-code an index.
"""
from __future__ import annotations

import re

from dataclasses import dataclass, replace

MODES = (
    "lite_train_lite_infer",
    "lite_train_whole_infer",
    "whole_infer",
    "whole_train_whole_infer",
)
LEGACY_MODES = {
    "lite_train_infer": "lite_train_lite_infer",
    "whole_train_infer": "whole_train_whole_infer",
    "infer": "whole_infer",
}
# Modes that appear in real per-mode values although the basic runner has no branch for them.
KNOWN_EXTRA_MODES = ("whole_train_lite_infer", "klquant_whole_infer", "benchmark_train")


@dataclass(frozen=True)
class Slot:
    """One line of a fixed layout.

    kind: ``header`` (``===name===``), ``sep`` (``##``) or ``kv`` (``key:value``).
    field: the descriptor path the slot is rendered from (``None`` for headers and separators).
    key: the key tipcgen writes by default; ``None`` means the key is a flag name the user
    chooses (``--epochs``, ``-o Global.epochs``), ``"null"`` when unused.
    anchors: keys a conforming file has here; a runner or linter checks them to detect a shift.
    """

    index: int
    name: str
    kind: str
    key: str | None = None
    field: str | None = None
    anchors: tuple[str, ...] = ()
    doc: str = ""


def _h(i: int, name: str) -> Slot:
    return Slot(i, name, "header", key=name, anchors=(name,))


def _s(i: int, name: str) -> Slot:
    return Slot(i, name, "sep", key="##", anchors=("##",))


def _kv(i: int, name: str, field: str, key: str | None = None, anchors: tuple[str, ...] = (), doc: str = "") -> Slot:
    return Slot(i, name, "kv", key=key, field=field, anchors=anchors, doc=doc)


TRAIN_INFER_PYTHON: tuple[Slot, ...] = (
    _h(0, "train_params"),
    _kv(1, "model_name", "model_name", "model_name", ("model_name",), "model name; names the log folder"),
    _kv(2, "python", "python", "python", ("python",), "interpreter for every command"),
    _kv(3, "gpu_list", "gpu_list", "gpu_list", ("gpu_list",), "device loop: -1, 0, 0,1 or ip1,ip2;0,1"),
    _kv(4, "train_use_gpu", "train.device", doc="train device flag; values aligned with gpu_list"),
    _kv(5, "autocast", "train.autocast", doc="autocast loop: null, amp, fp16, fp32"),
    _kv(6, "epoch", "train.epochs", doc="per-mode epochs"),
    _kv(7, "save_model", "train.output_dir", doc="output-dir flag; the runner fills the path"),
    _kv(8, "train_batch_size", "train.batch_size", doc="per-mode train batch size"),
    _kv(9, "pretrain", "train.pretrained", doc="pretrained flag; its key also passes the checkpoint to eval"),
    _kv(10, "train_model_name", "train.checkpoint", "train_model_name", doc="checkpoint name inside the output dir"),
    _kv(11, "train_infer_data", "train.infer_data", "train_infer_img_dir", doc="inference data after training"),
    _kv(12, "train_param", "train.extra", "null", doc="extra train flag"),
    _s(13, "sep_train"),
    _kv(14, "trainer", "train.trainer", "trainer", ("trainer",), "trainer loop"),
    _kv(15, "norm_train", "train.norm", "norm_train", doc="normal train script and fixed args"),
    _kv(16, "pact_train", "train.pact", "pact_train", ("pact_train", "quant_train"), "PACT train command"),
    _kv(17, "fpgm_train", "train.fpgm", "fpgm_train", ("fpgm_train",), "FPGM train command"),
    _kv(18, "distill_train", "train.distill", "distill_train", ("distill_train",), "distillation train command"),
    _kv(19, "trainer_key1", "train.to_static", "null", doc="to_static trainer suffix"),
    _kv(20, "trainer_key2", "train.custom", "null", doc="custom trainer"),
    _s(21, "sep_trainer"),
    _h(22, "eval_params"),
    _kv(23, "eval", "eval.script", "eval", ("eval",), "eval script; null skips eval"),
    _kv(24, "eval_param", "eval.extra", "null", doc="extra eval flag"),
    _s(25, "sep_eval"),
    _h(26, "infer_params"),
    _kv(27, "save_infer", "export.output_dir", doc="export output-dir flag; the runner fills the path"),
    _kv(28, "export_weight", "export.weights", doc="export weights flag; the runner fills the checkpoint"),
    _kv(29, "norm_export", "export.norm", "norm_export", ("norm_export",), "export script"),
    _kv(30, "quant_export", "export.quant", "quant_export", doc="export for PACT"),
    _kv(31, "fpgm_export", "export.fpgm", "fpgm_export", doc="export for FPGM"),
    _kv(32, "distill_export", "export.distill", "distill_export", doc="export for distillation"),
    _kv(33, "export_key1", "export.key1", "export1", doc="extra export (Clas: kl_quant)"),
    _kv(34, "export_key2", "export.key2", "export2", doc="export paired with the custom trainer"),
    _kv(35, "inference_dir", "export.inference_dir", "inference_dir", doc="subfolder of the exported model"),
    _kv(36, "infer_model", "whole_infer.models", "infer_model", doc="whole_infer: trained model dirs"),
    _kv(37, "infer_export", "whole_infer.export", "infer_export", doc="whole_infer: export command per model"),
    _kv(38, "infer_quant", "whole_infer.quant", "infer_quant", ("infer_quant",), "whole_infer: quant flag per model"),
    _kv(39, "inference", "inference.script", "inference", ("inference",), "inference script"),
    _kv(40, "infer_use_gpu", "inference.use_gpu", doc="device loop: True/gpu and False/cpu"),
    _kv(41, "enable_mkldnn", "inference.enable_mkldnn", doc="CPU loop"),
    _kv(42, "cpu_threads", "inference.cpu_threads", doc="CPU loop"),
    _kv(43, "infer_batch_size", "inference.batch_size", doc="batch-size loop"),
    _kv(44, "use_trt", "inference.use_tensorrt", doc="GPU loop"),
    _kv(45, "precision", "inference.precision", doc="precision loop"),
    _kv(46, "infer_model_dir", "inference.model_dir", doc="model-dir flag; the runner fills the path"),
    _kv(47, "infer_data", "inference.data", doc="data flag; its value is used by whole_infer"),
    _kv(48, "save_log", "inference.save_log", doc="save-log flag (unused by upstream runners)"),
    _kv(49, "benchmark", "inference.benchmark", doc="benchmark flag"),
    _kv(50, "infer_param", "inference.extra", doc="extra inference flag"),
)

TRAIN_INFER_PYTHON_LINES = len(TRAIN_INFER_PYTHON)
SLOT_BY_NAME = {slot.name: slot for slot in TRAIN_INFER_PYTHON}
SLOT_BY_FIELD = {slot.field: slot for slot in TRAIN_INFER_PYTHON if slot.field}
ANCHOR_SLOTS = tuple(slot for slot in TRAIN_INFER_PYTHON if slot.anchors)
# The anchors the generated runner checks before it reads anything: the structure every upstream
# flavour shares (lint checks all of ANCHOR_SLOTS; a few real files rename pact_train or eval).
RUNNER_ANCHOR_INDICES = (0, 1, 2, 3, 13, 14, 21, 22, 25, 26, 39)

# Slots whose value is a `mode=value|mode=value` list in upstream configs.
PER_MODE_SLOTS = ("epoch", "train_batch_size")
# Slots whose value is a `|` list the runner loops over.
LIST_SLOTS = (
    "gpu_list", "train_use_gpu", "autocast", "trainer", "infer_model", "infer_export", "infer_quant",
    "infer_use_gpu", "enable_mkldnn", "cpu_threads", "infer_batch_size", "use_trt", "precision",
)
# Slots that hold a command (a script and fixed arguments).
COMMAND_SLOTS = (
    "norm_train", "pact_train", "fpgm_train", "distill_train", "eval",
    "norm_export", "quant_export", "fpgm_export", "distill_export", "infer_export", "inference",
)
# Trailing sections are found by name, never by position.
TRAILING_SECTIONS = (
    "train_benchmark_params",
    "infer_benchmark_params",
    "to_static_train_benchmark_params",
    "disable_train_benchmark",
    "disable_to_static_train_benchmark",
)

# The compact 32-line layout of the paper-reproduction tutorials (SPEC 1.6; PaddlePaddle/models
# tutorials/mobilenetv3_prod/Step6). Its slots carry the 51-line slot names where they mean the same
# thing, so the descriptor, the generated runner and lint read either layout by name. Idx 10
# (`--data-path:`) is the 51-line `train_param` (an extra train flag); the template's runner reads
# but never passes it. Slots it has no line for (autocast, mkldnn, threads, TRT, precision, ...)
# read as `null` in the generated runner.
TUTORIAL_32: tuple[Slot, ...] = (
    _h(0, "train_params"),
    *(replace(SLOT_BY_NAME[name], index=i) for i, name in enumerate(
        ("model_name", "python", "gpu_list", "train_use_gpu", "epoch", "save_model", "train_batch_size",
         "pretrain", "train_model_name", "train_param"), start=1)),
    _s(11, "sep_train"),
    replace(SLOT_BY_NAME["trainer"], index=12),
    replace(SLOT_BY_NAME["norm_train"], index=13),
    _s(14, "sep_trainer"),
    _h(15, "eval_params"),
    replace(SLOT_BY_NAME["eval"], index=16),
    _s(17, "sep_eval"),
    _h(18, "infer_params"),
    *(replace(SLOT_BY_NAME[name], index=i) for i, name in enumerate(
        ("save_infer", "export_weight", "norm_export"), start=19)),
    _s(22, "sep_export"),
    replace(SLOT_BY_NAME["infer_model"], index=23, key="train_model", anchors=()),
    replace(SLOT_BY_NAME["infer_export"], index=24, anchors=()),
    _s(25, "sep_whole_infer"),
    *(replace(SLOT_BY_NAME[name], index=i) for i, name in enumerate(
        ("inference", "infer_use_gpu", "infer_batch_size", "infer_model_dir", "infer_data", "benchmark"),
        start=26)),
)
TUTORIAL_32_LINES = len(TUTORIAL_32)
TUTORIAL_32_ANCHORS = {0: "train_params", 1: "model_name", 2: "python", 3: "gpu_list", 12: "trainer", 15: "eval_params", 18: "infer_params", 26: "inference"}
# The descriptor's `layout:` values, the slot table each renders, and the config kind it reads as.
LAYOUTS = {"standard": TRAIN_INFER_PYTHON, "tutorial": TUTORIAL_32}
LAYOUT_OF_KIND = {"train_infer_python": "standard", "tutorial_32": "tutorial"}
TUTORIAL_FIELDS = frozenset(slot.field for slot in TUTORIAL_32 if slot.field)
# What the generated runner checks first, per layout (the 32-line file is checked at every anchor).
RUNNER_ANCHORS = {
    "standard": tuple(slot for slot in TRAIN_INFER_PYTHON if slot.index in RUNNER_ANCHOR_INDICES),
    "tutorial": tuple(slot for slot in TUTORIAL_32 if slot.index in TUTORIAL_32_ANCHORS),
}


# Lines a layout's own upstream runner reads but never passes to a script: the generated runner
# leaves them out too (the tutorial's `use-gpu:True|True` has no dashes: passed, it would be a
# stray positional argument).
RUNNER_UNPASSED = {"standard": frozenset(), "tutorial": frozenset({"train_use_gpu"})}


def slots_of(layout_name: str) -> tuple[Slot, ...]:
    """The slot table of a layout (``standard`` or ``tutorial``)."""
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
INFER_VALUE_SHAPES = {
    "enable_mkldnn": ("True/False", re.compile(r"^(True|False|true|false)$")),
    "cpu_threads": ("a number", re.compile(r"^\d+$")),
    "infer_batch_size": ("a number", re.compile(r"^\d+$")),
    "use_trt": ("True/False", re.compile(r"^(True|False|true|false)$")),
    "precision": ("fp32/fp16/int8 or True/False", re.compile(r"^(fp32|fp16|int8|bf16|True|False|true|false)$")),
}
