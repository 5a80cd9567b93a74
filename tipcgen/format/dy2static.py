"""The dygraph-to-static configs (``train_dy2static_python.txt``, PaddleClas): their layout, read losslessly.

A dy2static config is the train block of the 51-line layout (idx 0-21: model_name ... the trainer
lines and ``##``) under a ``base_train`` header, optionally followed by an ``amp_train`` section of
the same 22 lines. PaddleClas's ``test_train_dy2static_python.sh`` keeps lines 1-22 only (``sed -i
'23,$d'``), sets the trainer line to ``norm_train``, then to ``to_static_train``, and runs the basic
runner on it twice; tipcgen's runner reads the same 22 lines by the same indices (``layout.py``'s
rows, the header excepted). Its eval, export and inference lines come from the model's basic
config beside it (``train_infer_python.txt``): upstream's chain compares the losses and stops there.
Pure: constants and text, no I/O.
"""
from __future__ import annotations

from tipcgen.format import layout
from tipcgen.format.chains import DY2STATIC
from tipcgen.format.config import TipcConfig

BASE, AMP = "base_train", "amp_train"  # the section headers (the first names the file's kind)
HEADER = f"=========================== {BASE} ==========================="  # PaddleClas's spelling
LINES = 22  # idx 0-21: the header and the 51-line layout's train block, read by the runner
TO_STATIC_TRAINER = "to_static_train"  # the trainer value (and idx 19's key) of the static training
DYGRAPH_TRAINER = "norm_train"


def slots() -> tuple[layout.Slot, ...]:
    """The rows the runner reads: the 51-line layout's idx 1-21 (same index, name and descriptor field)."""
    return tuple(slot for slot in layout.TRAIN_INFER_PYTHON if 0 < slot.index < LINES)


def anchors() -> tuple[tuple[int, tuple[str, ...]], ...]:
    """(index, the keys one of which the line must have) for every anchor of the 22 lines, the header first."""
    to_static = layout.SLOT_BY_FIELD["train.to_static"].index
    found = [(0, (BASE, AMP))] + [(slot.index, slot.anchors) for slot in slots() if slot.anchors]
    return tuple(sorted(found + [(to_static, (TO_STATIC_TRAINER,))]))


def is_dy2static(config: TipcConfig) -> bool:
    return config.kind == DY2STATIC


def shift(config: TipcConfig) -> tuple[int, str] | None:
    """The first anchor the config misses (its logical index and what was expected there), else None."""
    logical = config.logical_lines()
    for index, keys in anchors():
        line = logical[index] if index < len(logical) else None
        found = None if line is None else (line.header_name if line.kind == "header" else line.key)
        if found not in keys:
            shown = "the end of the file" if line is None else repr(line.text)
            return index, f"expected {' or '.join(repr(k) for k in keys)} on non-blank line {index + 1}, found {shown}"
    return None


def from_basic(basic_text: str) -> str:
    """The dy2static config of a model rendered from its basic config: the header, then its idx 1-21."""
    logical = TipcConfig.parse(basic_text).logical_lines()
    return "\n".join([HEADER, *(line.text for line in logical[1:LINES])]) + "\n"
