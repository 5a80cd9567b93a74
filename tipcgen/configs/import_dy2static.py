"""``tipcgen import`` and ``tipcgen lint`` of a dygraph-to-static config (``train_dy2static_python.txt``, PaddleClas).

A dy2static config is a model's second config beside its basic one (``format/dy2static.py``), so its
import is a section to add to that model's ``tipc.yaml``: ``dy2static.lines``, every line as written
(blank ones too), which ``tipcgen init`` writes back byte for byte. Its runner reads the first 22
non-blank lines by position, so lint reports what breaks that: a missing or extra line (``slot-shift``,
error), a null to_static switch (``null-value``, error). A dy2static config of another suite's layout
(PaddleNLP's, PaddleSeg's, PaddleVideo's runners read other lines) gets one warning, and import refuses it.
"""
from __future__ import annotations

from collections.abc import Callable

from tipcgen.core.errors import ConfigImportError
from tipcgen.core.text import article
from tipcgen.descriptor import writer
from tipcgen.format import dy2static, layout
from tipcgen.format.config import TipcConfig, is_null

Add = Callable[[int, str, str, str], None]  # (logical index, rule, severity, message)
_OTHER = ("a dy2static config of another layout than PaddleClas's (PaddleNLP, PaddleSeg and PaddleVideo "
          "runners read other lines): tipcgen reads and runs PaddleClas's")


def is_dy2static(text: str) -> bool:
    """The text is a dy2static config (another kind goes to ``importer``)."""
    return dy2static.is_dy2static(TipcConfig.parse(text))


def runs_here(text: str) -> bool:
    """A dy2static config in PaddleClas's layout: the one tipcgen's dy2static chain renders and runs (another
    suite's dy2static layout is kept line by line: configs/import_kept.py)."""
    config = TipcConfig.parse(text)
    return dy2static.is_dy2static(config) and _clas(config)


def _clas(config: TipcConfig) -> bool:
    """PaddleClas's layout, unless the line where it has its closing ``##`` (idx 21) is a shell command, as in
    PaddleNLP's, PaddleSeg's and PaddleVideo's (``echo "No Custom Cmd"``, ``sed -i ...``): those runners run it."""
    logical = config.logical_lines()
    if len(logical) < dy2static.LINES:
        return True  # too short for either: the anchors say what is missing
    line = logical[dy2static.LINES - 1]
    return not (line.kind in ("text", "kv") and " " in line.key.strip() and not line.key.startswith("-"))


def lint(config: TipcConfig, add: Add) -> None:
    """Report the findings of one dy2static config through ``add``."""
    if not _clas(config):
        add(0, "unknown-layout", "warning", f"{_OTHER}; tipcgen cannot check its slots")
        return
    problem = dy2static.shift(config)
    if problem is not None:
        add(problem[0], "slot-shift", "error", f"{problem[1]}: a line above it is missing or extra, so the runner "
            "would read every later value from its neighbour")
        return
    index = layout.SLOT_BY_FIELD["train.to_static"].index
    if is_null(config.logical_lines()[index].value):
        add(index, "null-value", "error", f"{dy2static.TO_STATIC_TRAINER} is null: the static training would run the "
            "dygraph command again, and the chain would compare a training with itself")


def import_dy2static(text: str, source: str) -> str:
    """The ``dy2static:`` section (YAML, with a comment saying where it goes) for a dy2static config text."""
    config = TipcConfig.parse(text)
    if not dy2static.is_dy2static(config):
        raise ConfigImportError(source, None, f"is {article(config.kind)} {config.kind} config, not a dy2static config",
                                "import train_dy2static_python.txt files whose first line is a base_train header")
    if not _clas(config):
        raise ConfigImportError(source, 1, f"is {_OTHER}", "import PaddleClas's train_dy2static_python.txt files")
    problem = dy2static.shift(config)
    if problem is not None:
        physical = config.physical_index(problem[0])
        raise ConfigImportError(source, physical + 1 if physical is not None else len(config.lines), problem[1],
                                f"run `tipcgen lint {source}`, fix the line and import again")
    for number, line in enumerate(config.lines, start=1):
        bad = next((ch for ch in line.text if not ch.isprintable()), None)
        if bad is not None:
            raise ConfigImportError(source, number, f"contains the control character {bad!r}",
                                    "a config line is single-line printable text; remove it")
    out = [f"# The dy2static section imported from {source} by `tipcgen import`: add it to the model's tipc.yaml",
           "# (`tipcgen import` of its train_infer_python.txt writes the rest); `tipcgen init` then writes",
           "# test_tipc/configs/<model_name>/train_dy2static_python.txt byte for byte (docs/CHAINS.md).",
           "dy2static:",
           *writer.commented("  lines:", f"the runner reads the first {dy2static.LINES} non-blank lines"),
           *(f"    - {writer.token(line.text, writer.TEXT_TYPES, False) if line.text else chr(34) * 2}" for line in config.lines)]
    if not config.final_newline:
        out.append("  final_newline: false")
    return "\n".join(out) + "\n"
