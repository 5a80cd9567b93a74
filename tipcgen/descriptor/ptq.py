"""The descriptor's ``ptq`` section: the post-training quantization config, line by line.

``tipcgen import`` of a ``train_ptq_infer_python.txt`` writes it; ``tipcgen init`` renders it back
byte for byte (``format/compression.py`` holds the layouts). Each line is named after the
variable its suite's runner reads it into and kept as written, so nothing is normalised.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.fields import default
from tipcgen.descriptor.spec import Tolerance
from tipcgen.descriptor.validate_values import Checks
from tipcgen.descriptor.yaml_lines import shown
from tipcgen.format import compression
from tipcgen.format.chains import PTQ
from tipcgen.format.layout import header_line

DEFAULT_ACCURACY_DROP = default("ptq.accuracy_drop")
# The int8 outputs may differ from the float ones by atol + rtol * the float outputs' largest magnitude
# (check_quant.py's own defaults: the runner passes a tolerance only where it differs).
DEFAULT_TOLERANCE = Tolerance(**default("ptq.tolerance"))


@dataclass(frozen=True)
class PtqSpec:
    """The PTQ config (its lines) and what the chain's check reads besides it."""

    config: compression.CompressionConfig
    eval_data: str | None = None  # a labelled .npz in the repository: accuracy of float and int8
    accuracy_drop: float = DEFAULT_ACCURACY_DROP
    tolerance: Tolerance = DEFAULT_TOLERANCE  # int8 against float on fixed inputs (check_quant.py's --atol, --rtol)


def parse(value: Any, source: str, lines: dict[str, int]) -> PtqSpec | None:
    """The ``ptq`` section → a PtqSpec; errors name the field and its line."""
    if value is None:
        return None

    def fail(path: str, message: str, hint: str) -> DescriptorError:
        return DescriptorError(source, path, message, lines.get(path) or lines.get(PTQ), hint)

    name = value["layout"]  # its fields, their types, the layout's name: the model's (descriptor/structure.py)
    table = compression.LAYOUTS[name]
    given = value["lines"]
    kv = [slot.name for slot in table if slot.kind == "kv"]
    named = kv + [slot.name for slot in table[1:] if slot.kind != "kv"]  # a header or ## written otherwise
    for key in given:
        if key not in named:
            raise fail(f"ptq.lines.{key}", f"is no line of the {name} layout", "its lines: " + ", ".join(named))
    missing = [key for key in kv if key not in given]
    if missing:
        raise fail("ptq.lines", f"has no {missing[0]} line", f"give every line of the {name} layout: " + ", ".join(kv))
    texts = {key: _line(text, f"ptq.lines.{key}", fail) for key, text in given.items()}
    trailing = value.get("trailing") or []
    header = value.get("header", header_line(compression.HEADERS[name][0]))
    config = compression.CompressionConfig(
        name, _line(header, "ptq.header", fail), texts,
        tuple(_line(text, f"ptq.trailing[{i}]", fail) for i, text in enumerate(trailing)),
        value.get("final_newline", True) is not False)
    try:
        if compression.read_config(config.render()).layout != name:
            raise ValueError(f"its lines read as the {compression.read_config(config.render()).layout} layout")
    except ValueError as exc:  # a line that moved a header, ## or keyed line out of its place
        raise fail("ptq.lines", f"the config it renders is not a {name} config: {exc}",
                   "keep model_name:, python:, trainer:, inference: and the ## lines where the layout has them") from None
    eval_data = value.get("eval_data")
    if eval_data is not None and (eval_data.startswith("/") or ".." in eval_data.split("/")):
        raise fail("ptq.eval_data", f"expected a relative .npz path in the repository, found {shown(eval_data)}",
                   "e.g. lite_data/eval.npz, holding arrays x (the model's input) and label")
    drop = value.get("accuracy_drop", DEFAULT_ACCURACY_DROP)
    tolerance = Checks(source, lines).tolerance(value.get("tolerance"), "ptq.tolerance", DEFAULT_TOLERANCE)
    return PtqSpec(config, eval_data, float(drop), tolerance)


def _line(text: Any, path: str, fail) -> str:
    if not isinstance(text, str) or not text or "\n" in text or "\r" in text:
        raise fail(path, f"expected one line of text, found {shown(text)}", "a config line, e.g. \"--batch_num:1\"")
    return text
