"""Text from logs and summaries made safe for the report's documents: Markdown that renders it as
text (never as markup, links or HTML), and HTML wrap points. Jinja filters for templates/report/."""
from __future__ import annotations

import re

from tipcgen.core.text import terminal

# Characters that can start markup anywhere; '_' only where it can open emphasis (not inside a word);
# '#', '-', '+' only at the start, where they make a heading or a list.
_MD_SPECIAL = re.compile(r"[\\`*\[\]<>&|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|^[#+-]")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")  # `1. x` at the start would make an ordered list
_BACKTICKS = re.compile(r"`+")


def plot_text(value: object) -> str:
    """Text from a summary or a log as a picture's label or title shows it literally: control characters
    escaped (core.text.terminal: a NUL has no glyph) and every '$' escaped, so matplotlib never reads it as
    mathtext (`$\\undefined$` would raise while the PNG is drawn)."""
    return terminal(value, one_line=False).replace("$", r"\$")


def plot_name(name: str, width: int = 84) -> str:
    """A name (a step's, a model's) as a picture shows it: on one line, shortened in the middle to at most width
    characters, as plot text (plot_text). A title or label never runs past the picture's edge."""
    name = terminal(name, one_line=True)
    name = name if len(name) <= width else name[: width // 2 - 1] + "…" + name[-(width // 2 - 1):]
    return plot_text(name)


def md_text(value: object) -> str:
    """Log text as Markdown text (a table cell, a list item): one line, every character that could
    start markup (emphasis, links, HTML, code, a table cell) backslash-escaped."""
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(), " ".join(str(value).splitlines()))
    return _ORDERED.sub(r"\1\\\2", text)


def md_cell(value: object, empty: str = "-") -> str:
    """A table cell from a field that may be absent (an AutoLog figure a log did not print): `empty`
    for none, else the value as md_text. Every such field from a log or summary goes through here."""
    import jinja2

    if isinstance(value, jinja2.Undefined) or value is None or value == "":
        return empty
    return md_text(value)


def fence(value: object) -> str:
    """A backtick fence longer than any backtick run in the text it encloses (at least three)."""
    longest = max((len(run) for run in _BACKTICKS.findall(str(value))), default=0)
    return "`" * max(3, longest + 1)


def md_code(value: object, cell: bool = False) -> str:
    """Text as an inline code span that no backtick inside can close early; in a table cell, '|' escaped."""
    text = " ".join(str(value).splitlines())
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if cell else span


def wbr(value: object):
    """HTML: let long step names wrap after each '_' instead of mid-word."""
    from markupsafe import Markup, escape

    return Markup(str(escape(value)).replace("_", "_<wbr>"))
