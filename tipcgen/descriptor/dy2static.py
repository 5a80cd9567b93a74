"""The descriptor's ``dy2static`` section: the dygraph-to-static chain (``train_dy2static_python.txt``).

With the section, ``tipcgen init`` renders the model's dy2static config: its basic config's train block
under a ``base_train`` header (``format/dy2static.py``), or, where ``tipcgen import`` of a dy2static
config wrote them, its ``lines`` byte for byte. ``tolerance`` is how far the static training's loss may
be from the dygraph one's at any logged step (``check_dy2static.py``'s ``--atol``/``--rtol``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.fields import default
from tipcgen.descriptor.spec import Tolerance
from tipcgen.descriptor.validate_values import Checks
from tipcgen.descriptor.yaml_lines import shown
from tipcgen.format import dy2static
from tipcgen.format.chains import DY2STATIC
from tipcgen.format.config import TipcConfig

# A loss may differ by atol + rtol * |the dygraph loss| (the logs print 5-6 decimals: a rounding flip passes).
DEFAULT_TOLERANCE = Tolerance(**default("dy2static.tolerance"))


@dataclass(frozen=True)
class Dy2staticSpec:
    """The config's text where the descriptor gives it (None: rendered from the basic config), and the tolerance."""

    text: str | None = None
    tolerance: Tolerance = DEFAULT_TOLERANCE


def parse(value: Any, source: str, lines: dict[str, int]) -> Dy2staticSpec | None:
    """The ``dy2static`` section → a Dy2staticSpec; errors name the field and its line."""
    if value is None:
        return None

    def fail(path: str, message: str, hint: str) -> DescriptorError:
        return DescriptorError(source, path, message, lines.get(path) or lines.get(DY2STATIC), hint)

    text = None  # a mapping of known fields, lines a list of text: the model's (descriptor/structure.py)
    given = value.get("lines")
    if given is not None:
        if not given:
            raise fail("dy2static.lines", "expected a list of the config's lines, as written",
                       "tipcgen import of a train_dy2static_python.txt writes them")
        for i, line in enumerate(given):
            if "\n" in line or "\r" in line:
                raise fail(f"dy2static.lines[{i}]", f"expected one line of text, found {shown(line)}",
                           "a config line, e.g. \"gpu_list:0\" (\"\" for a blank line)")
        final = value.get("final_newline", True)
        text = "\n".join(given) + ("\n" if final else "")
        config = TipcConfig.parse(text)
        problem = dy2static.shift(config) if dy2static.is_dy2static(config) else (0, "its first line is no base_train or amp_train header")
        if problem is not None:
            raise fail("dy2static.lines", f"the config it renders is not a dy2static config: {problem[1]}",
                       "keep the header, model_name:, python:, gpu_list:, trainer:, to_static_train: and the ## lines "
                       "where PaddleClas's layout has them")
    elif "final_newline" in value:
        raise fail("dy2static.final_newline", "applies to dy2static.lines only", "drop it, or give the lines")
    tolerance = Checks(source, lines).tolerance(value.get("tolerance"), "dy2static.tolerance", DEFAULT_TOLERANCE)
    return Dy2staticSpec(text, tolerance)
