"""The post-training quantization configs (``train_ptq_infer_python.txt``): their layouts, read losslessly.

Three fixed layouts, each read by position by its suite's ``test_ptq_inference_python.sh`` (the
slot names are that runner's variable names):

- ``ptq`` (20 lines; the models tutorial, PaddleSeg): ``ptq_params``, the calibration flags at
  idx 3-8, ``trainer`` and its command at idx 10-11, ``infer_params`` at idx 13, inference at 14-19;
- ``ptq_video`` (24 lines; PaddleVideo): the same with two more calibration flags (a config file
  and an annotation list) and two more inference flags (model and params file);
- ``kl_quant`` (20 lines; PaddleOCR): ``kl_quant_params`` (or ``train_params``), the export keys,
  whole_infer's model/export/quant lists and the inference block of the 51-line layout's idx 39-50.

PACT configs (``train_pact_infer_python.txt``) are basic-chain configs whose trainer is
``pact_train``: ``layout.py`` and the layout families describe them. ``CompressionConfig`` keeps every byte: lines as
written, the first header, lines after the layout, the final newline (docs/QUANTIZATION.md).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tipcgen.format import layout, layout_check
from tipcgen.format.chains import PTQ
from tipcgen.format.config import Line, TipcConfig


def _kv(index: int, name: str, key: str | None = None, doc: str = "", anchors: tuple[str, ...] = (),
        shape: str = "flag", value=None) -> layout.Slot:
    return layout.Slot(index, name, "kv", key=key, anchors=anchors, doc=doc, shape=shape, value=value)


def _head(name: str) -> tuple[layout.Slot, ...]:
    return (layout.Slot(0, name, "header", key=name, anchors=(name,)),
            _kv(1, "model_name", "model_name", "names the log folder", ("model_name",), "scalar"),
            _kv(2, "python", "python", "interpreter of every command", ("python",), "scalar"))


def _ptq(calibration: Sequence[tuple[str, str]], inference: Sequence[tuple[str, str]]) -> tuple[layout.Slot, ...]:
    """ptq_params, model_name, python, the calibration flags, ##, trainer + command, ##, infer_params,
    inference + its flags."""
    slots = list(_head("ptq_params"))
    slots += [_kv(3 + i, name, doc=doc) for i, (name, doc) in enumerate(calibration)]
    at = len(slots)
    slots += [layout.Slot(at, "sep_ptq", "sep", key="##", anchors=("##",)),
              _kv(at + 1, "trainer", "trainer", "the quantization step's name: the key of the next line", ("trainer",), "scalar"),
              _kv(at + 2, "ptq_train", None, "the calibration script (`PTQ:` or `ptq_train:`, as `trainer` names it)",
                  shape="command"),
              layout.Slot(at + 3, "sep_trainer", "sep", key="##", anchors=("##",)),
              layout.Slot(at + 4, "infer_params", "header", key="infer_params", anchors=("infer_params",)),
              _kv(at + 5, "inference", "inference", "the inference script", ("inference",), "command")]
    slots += [_kv(at + 6 + i, name, doc=doc, shape="list" if name in ("infer_use_gpu", "infer_batch_size") else "flag")
              for i, (name, doc) in enumerate(inference)]
    return tuple(slots)


_CALIBRATION = (("use_gpu", "calibration device flag"), ("model_path", "the float inference model"),
                ("output_dir", "where the int8 model is written"), ("data_dir", "calibration data"),
                ("batch_num", "calibration batches"), ("batch_size", "calibration batch size"))
_INFERENCE = (("infer_use_gpu", "device loop"), ("infer_batch_size", "batch-size loop"),
              ("infer_model_dir", "the int8 model (PaddleSeg: its deploy config)"), ("infer_data", "inference data"),
              ("benchmark", "benchmark flag"))
PTQ_20 = _ptq(_CALIBRATION, _INFERENCE)
PTQ_VIDEO_24 = _ptq(
    (("use_gpu", "calibration device flag"), ("quant_config", "the quantization config file"),
     ("model_path", "the float inference model"), ("output_dir", "where the int8 model is written"),
     ("data_dir", "calibration data"), ("data_anno", "calibration file list"), ("batch_num", "calibration batches"),
     ("batch_size", "calibration batch size")),
    (("infer_use_gpu", "device loop"), ("infer_config", "the inference config file"),
     ("infer_batch_size", "batch-size loop"), ("infer_model_file", "the int8 program"),
     ("infer_params_file", "the int8 parameters"), ("infer_data", "inference data"), ("benchmark", "benchmark flag")))
# OCR: the 51-line layout's export keys (idx 28, 27) and idx 36-50, after model_name and python: the same
# rows (keys, anchors, value shapes), found by descriptor field and named here (the names are this file's).
KL_QUANT_20 = (
    *_head("kl_quant_params"),
    *(replace(layout.SLOT_BY_FIELD[fld], index=i, name=name, field=None) for i, (name, fld) in enumerate((
        ("export_weight", "export.weights"), ("save_infer", "export.output_dir"), ("infer_model", "whole_infer.models"),
        ("infer_export", "whole_infer.export"), ("infer_quant", "whole_infer.quant"), ("inference", "inference.script"),
        ("infer_use_gpu", "inference.use_gpu"), ("enable_mkldnn", "inference.enable_mkldnn"),
        ("cpu_threads", "inference.cpu_threads"), ("infer_batch_size", "inference.batch_size"),
        ("use_trt", "inference.use_tensorrt"), ("precision", "inference.precision"),
        ("infer_model_dir", "inference.model_dir"), ("infer_data", "inference.data"), ("save_log", "inference.save_log"),
        ("benchmark", "inference.benchmark"), ("infer_param", "inference.extra")), start=3)),
)
LAYOUTS = {"ptq": PTQ_20, "ptq_video": PTQ_VIDEO_24, "kl_quant": KL_QUANT_20}
# The first headers a layout's file may carry (OCR's older KL configs open with `train_params`).
HEADERS = {"ptq": ("ptq_params",), "ptq_video": ("ptq_params",), "kl_quant": ("kl_quant_params", "train_params")}
KINDS = (PTQ, "kl_quant")  # config.KINDS of the files these layouts read


def layout_of(config: TipcConfig) -> str | None:
    """The compression layout of a ``ptq`` or ``kl_quant`` config (``None`` for other kinds and for OCR's
    older KL infer configs, which have no model_name line): the 24-line PaddleVideo layout where its
    ``trainer`` line sits at idx 12, else the 20-line one."""
    kind, logical = config.kind, config.logical_lines()
    if kind == "kl_quant":  # OCR's older 17-line infer configs (`*_KL__model_*.txt`) start at infer_model
        return "kl_quant" if len(logical) > 1 and logical[1].key == "model_name" else None
    if kind != PTQ:
        return None
    video = PTQ_VIDEO_24[next(i for i, s in enumerate(PTQ_VIDEO_24) if s.name == "trainer")].index
    return "ptq_video" if len(logical) > video and logical[video].key == "trainer" else "ptq"


def anchors(name: str) -> tuple[layout_check.Anchor, ...]:
    """The lines that place a layout: headers, ``##`` and the keyed lines (model_name, python, trainer, inference...)."""
    first = HEADERS[name]
    return tuple(layout_check.Anchor(slot.index, first if slot.index == 0 else (slot.anchors or (slot.key,)), slot.kind)
                 for slot in LAYOUTS[name] if slot.kind != "kv" or slot.anchors)


@dataclass(frozen=True)
class CompressionConfig:
    """A PTQ config as its layout's lines: ``lines`` maps each kv slot to its line text as written;
    ``header`` is the first line as written; ``trailing`` the lines after the layout."""

    layout: str
    header: str
    lines: dict[str, str]
    trailing: tuple[str, ...] = ()
    final_newline: bool = True

    def render(self) -> str:
        out = []
        for slot in LAYOUTS[self.layout]:
            if slot.index == 0:
                out.append(self.header)
            elif slot.kind == "header":
                out.append(self.lines.get(slot.name, layout.header_line(slot.key)))
            elif slot.kind == "sep":
                out.append(self.lines.get(slot.name, "##"))
            else:
                out.append(self.lines[slot.name])
        out += self.trailing
        return "\n".join(out) + ("\n" if self.final_newline else "")

    def value(self, name: str) -> str | None:
        """A slot's value (text after the first ``:``, stripped); ``None`` without a colon."""
        value = Line(self.lines[name]).value
        return None if value is None else value.strip()


def _canonical(slot: layout.Slot) -> str | None:
    """The text tipcgen writes for a header or ``##`` slot (``None`` for a kv slot: always kept)."""
    return {"header": layout.header_line(slot.key or ""), "sep": "##"}.get(slot.kind)


def misplaced(config: TipcConfig, name: str) -> tuple[layout_check.Anchor, int | None] | None:
    """The first anchor of the layout not at its index (with how far away it sits), or ``None``."""
    logical = config.logical_lines()
    for anchor in anchors(name):
        if anchor.index >= len(logical):
            return anchor, None
        if not layout_check.holds(logical[anchor.index], anchor):
            return anchor, layout_check.offset_of(logical, anchor)
    return None


def read_config(text: str) -> CompressionConfig:
    """The lines of a conforming PTQ config; ``ValueError`` for another kind or a misplaced anchor."""
    config = TipcConfig.parse(text)
    name = layout_of(config)
    if name is None:
        raise ValueError(f"not a PTQ config (kind {config.kind})")
    if any(not line.text for line in config.lines):
        raise ValueError("a blank line: the runner skips it, so the file cannot be kept byte for byte")
    found = misplaced(config, name)
    if found is not None:
        raise ValueError(f"idx {found[0].index} should hold {layout_check.describe(found[0])}")
    logical = config.logical_lines()
    table = LAYOUTS[name]
    lines = {slot.name: logical[slot.index].text for slot in table[1:]  # kv lines; others where not canonical
             if logical[slot.index].text != _canonical(slot)}
    return CompressionConfig(name, logical[0].text, lines, tuple(line.text for line in logical[len(table):]),
                             config.final_newline)
