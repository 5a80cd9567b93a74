"""The terminal a command draws on: whether it is one, whether it gets colour, and rich's Console over it.

Colour follows ``--color auto|always|never``; ``auto`` follows the conventions a CI log or a user sets:
``FORCE_COLOR`` (non-empty) gives colour without a terminal (https://force-color.org), ``NO_COLOR``
(non-empty) takes it away (https://no-color.org), and otherwise colour goes with a terminal. A live
display (a redrawn line) needs a real terminal whatever the colour: a CI log with ``FORCE_COLOR`` gets
coloured lines, never cursor moves. Everything drawn here is text a command first passed through
``core.text.shown`` (escapes of a log or a script shown as ``\\x1b``, tipcgen's own colours kept), read back
into rich by ``line``: no markup, no emoji codes, no highlighting is ever interpreted.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, TextIO

from tipcgen.core.text import shown

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

COLORS = ("auto", "always", "never")  # --color's choices


def is_tty(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default stdout) is a terminal: the one condition of a live, redrawn display."""
    stream = stream if stream is not None else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def wants_color(choice: str = "auto", stream: TextIO | None = None, environ: dict | None = None) -> bool:
    """Whether a command colours what it writes to ``stream``: see the module docstring."""
    if choice not in COLORS:
        raise ValueError(choice)
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("FORCE_COLOR", "") != "":
        return True
    if env.get("NO_COLOR", "") != "":
        return False
    return is_tty(stream)


def make(stream: TextIO | None = None, choice: str = "auto", tty: bool | None = None) -> Console:
    """rich's Console over ``stream`` (default stdout): a terminal only where the stream is one (rich would take
    FORCE_COLOR for one, and redraw into a CI log), coloured as ``wants_color`` says; markup, emoji and
    highlighting off; long lines left to the terminal to wrap (``soft_wrap``), never cut by rich. ``tty``: the
    stream is a terminal (or not) whatever it says (a test's)."""
    from rich.console import Console

    stream = stream if stream is not None else sys.stdout
    color = wants_color(choice, stream)
    tty = is_tty(stream) if tty is None else tty
    return Console(file=stream, force_terminal=tty, color_system="standard" if color else None,
                   no_color=not color, markup=False, emoji=False, highlight=False, soft_wrap=True,
                   force_interactive=tty and os.environ.get("TERM", "").lower() not in ("dumb", "unknown"))


def line(text: object) -> Text:
    """``text`` as rich Text: escaped by ``shown`` (tipcgen's own colours kept), then read back by rich."""
    from rich.text import Text

    return Text.from_ansi(shown(text), no_wrap=True, overflow="ellipsis")
