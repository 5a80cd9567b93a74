"""``tipcgen import`` of a PTQ config (``train_ptq_infer_python.txt``) → the descriptor's ``ptq`` section.

A PTQ config is a model's second config beside its basic one, so its import is a section to add to
that model's ``tipc.yaml`` (``tipcgen import`` of the basic config writes the rest). Every line is
kept as written, by its name in the layout (``format/compression.py``): ``tipcgen init`` writes the
file back byte for byte. A file that cannot be kept raises ``ConfigImportError`` (line and reason).
"""
from __future__ import annotations

from tipcgen.configs import lint_compression
from tipcgen.core.errors import ConfigImportError
from tipcgen.core.text import article
from tipcgen.descriptor import writer
from tipcgen.format import compression, layout
from tipcgen.format.config import TipcConfig



def is_ptq(text: str) -> bool:
    """The text is a PTQ config this module imports (another kind goes to ``importer``)."""
    return compression.layout_of(TipcConfig.parse(text)) is not None


def import_ptq(text: str, source: str) -> str:
    """The ``ptq:`` section (YAML, with a comment saying where it goes) for a PTQ config text."""
    config = TipcConfig.parse(text)
    name = compression.layout_of(config)
    if name is None:
        raise ConfigImportError(source, None, f"is {article(config.kind)} {config.kind} config, not a PTQ config",
                                "import train_ptq_infer_python.txt files of the ptq, ptq_video or kl_quant layout")
    shifts: list[tuple[int, str]] = []

    def found(index: int, rule: str, severity: str, message: str) -> None:
        if rule == "slot-shift":
            shifts.append((_editor_line(config, index), message))

    lint_compression.lint(config, found)
    if shifts:
        raise ConfigImportError(source, *shifts[0], f"run `tipcgen lint {source}`, fix the line and import again")
    for number, line in enumerate(config.lines, start=1):
        if not line.text:
            raise ConfigImportError(source, number, "is blank: the runner skips it, so the file cannot be kept byte "
                                    "for byte", "delete the blank line and import again")
        bad = next((ch for ch in line.text if not ch.isprintable()), None)
        if bad is not None:
            raise ConfigImportError(source, number, f"contains the control character {bad!r}",
                                    "a config line is single-line printable text; remove it")
    ptq = compression.read_config(text)
    return "\n".join(_yaml(ptq, source)) + "\n"


def _editor_line(config: TipcConfig, index: int) -> int:
    physical = config.physical_index(index)
    return physical + 1 if physical is not None else len(config.lines)


def _yaml(ptq: compression.CompressionConfig, source: str) -> list[str]:
    def text(value: str) -> str:
        return writer.token(value, writer.TEXT_TYPES, False)

    out = [f"# The ptq section imported from {source} by `tipcgen import`: add it to the model's tipc.yaml",
           "# (`tipcgen import` of its train_infer_python.txt writes the rest); `tipcgen init` then writes",
           "# test_tipc/configs/<model_name>/train_ptq_infer_python.txt byte for byte (docs/QUANTIZATION.md).",
           "ptq:",
           *writer.commented(f"  layout: {ptq.layout}", {"ptq": "20 lines: models tutorial, PaddleSeg",
                                                         "ptq_video": "24 lines: PaddleVideo",
                                                         "kl_quant": "20 lines: PaddleOCR"}[ptq.layout])]
    if ptq.header != layout.header_line(compression.HEADERS[ptq.layout][0]):
        out.append(f"  header: {text(ptq.header)}")
    out.append("  lines:")
    for slot in compression.LAYOUTS[ptq.layout]:
        if slot.name in ptq.lines:
            out.append(f"    {slot.name}: {text(ptq.lines[slot.name])}")
    if ptq.trailing:
        out += writer.commented("  trailing:", "after the layout: the runner does not read them")
        out += [f"    - {text(line)}" for line in ptq.trailing]
    if not ptq.final_newline:
        out.append("  final_newline: false")
    return out

