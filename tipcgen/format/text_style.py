"""A config's text as written, where it differs from tipcgen's spelling: kept by import, applied by init.

tipcgen writes a config line one way (``key:value`` without surrounding whitespace, headers with 27
``=`` on both sides, ``##`` separators, one final newline, no blank lines). Real configs differ in ways
the runners read the same (``infer_params`` with 26 ``=`` on the right in 521 corpus files, a command
ending in ``-o ``, no final newline). The descriptor's ``text:`` keeps those spellings so that
``import`` → ``init`` gives the file back byte for byte. A kept line replaces the rendered one only
while both say the same thing (``canonical``): once a descriptor field changes that line, the new
line is written the canonical way. A byte-order mark and CRLF endings are not kept (lint reports them).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tipcgen.format import layout
from tipcgen.format.config import Line, TipcConfig


@dataclass(frozen=True)
class TextStyle:
    """lines: ``(logical index, text as written)``. blank_lines: the 1-based physical numbers of
    blank lines. final_newline: whether the file ends with a newline. line_count: the file stops
    after this many (logical) lines: a train-only or train+eval config, whose later lines the
    runner reads as empty (``None``: the whole layout)."""

    lines: tuple[tuple[int, str], ...] = ()
    blank_lines: tuple[int, ...] = ()
    final_newline: bool = True
    line_count: int | None = None

    def __bool__(self) -> bool:
        return bool(self.lines or self.blank_lines or not self.final_newline or self.line_count is not None)


def canonical(text: str) -> str:
    """What a line says, whatever its spelling: header by name, ``##``, ``key:value`` stripped."""
    line = Line(text.removesuffix("\r").lstrip("\ufeff"))
    if line.header_name is not None:
        return layout.header_line(line.header_name)
    if line.kind == "sep":
        return "##"
    if line.value is not None:
        return f"{line.key.strip()}:{line.value.strip()}"
    return line.text.strip()


def style_of(config: TipcConfig, layout_lines: int = 0) -> TextStyle:
    """The spellings of a config that differ from tipcgen's (a header's own padding included);
    a file of fewer than ``layout_lines`` lines keeps its length."""
    lines = []
    for index, line in enumerate(config.logical_lines()):
        written = line.text.removesuffix("\r").lstrip("\ufeff")
        if written != canonical(written):
            lines.append((index, written))
    blanks = tuple(number for number, line in enumerate(config.lines, start=1) if not line.text)
    count = len(config.logical_lines())
    return TextStyle(tuple(lines), blanks, config.final_newline or not config.lines,
                     count if count < layout_lines else None)


def apply(text: str, style: TextStyle | None, layout_lines: int = 0) -> str:
    """The rendered config ``text`` with the kept spellings, blank lines and final newline; a kept
    ``line_count`` drops the layout's lines from there up to ``layout_lines`` (what the descriptor
    adds after the layout, such as checks, stays)."""
    if not style:
        return text
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    if style.line_count is not None:
        lines = lines[: style.line_count] + lines[max(layout_lines, style.line_count):]
    for index, written in style.lines:
        if index < len(lines) and canonical(lines[index]) == canonical(written):
            lines[index] = written
    for number in sorted(style.blank_lines):
        if number - 1 <= len(lines):
            lines.insert(number - 1, "")
    return "\n".join(lines) + ("\n" if style.final_newline else "")


def from_fields(lines: Sequence[tuple[int, str]], blank_lines: Sequence[int], final_newline: bool,
                line_count: int | None = None) -> TextStyle:
    return TextStyle(tuple(sorted(lines)), tuple(sorted(set(blank_lines))), final_newline, line_count)


def section_ends(table: Sequence[layout.Slot]) -> tuple[int, ...]:
    """The line counts at which a file of this layout may stop: right after a ``##`` that closes a
    section (22 and 26 in the 51-line layout: a train-only and a train+eval config)."""
    return tuple(slot.index + 1 for slot, after in zip(table, table[1:])
                 if slot.kind == "sep" and after.kind == "header")


def padded(config: TipcConfig, table: Sequence[layout.Slot]) -> TipcConfig:
    """A short config with the lines it stops before, as tipcgen writes them (``KEY:null``)."""
    logical = [line.text for line in config.logical_lines()]
    for slot in table[len(logical):]:
        logical.append(layout.header_line(slot.key) if slot.kind == "header" else "##" if slot.kind == "sep"
                       else f"{slot.key or 'null'}:null")
    return TipcConfig.from_lines(logical)
