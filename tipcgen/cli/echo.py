"""The one way a command prints: every line goes through ``core.text.shown``.

A config value, a script's ``--help``, a cache entry, a log line or a path may hold terminal escapes
(ESC, OSC, BEL, CR, C1 controls, bidi overrides); printed raw they could retitle the terminal, hide a
line or forge one. Every command prints through ``echo`` (tests/test_hostile_bounds.py checks that no
other module of the package calls ``typer.echo`` or ``print``), so they are shown as ``\\x1b`` text;
tipcgen's own colours (``core.text.paint``) survive.
"""
from __future__ import annotations

import typer

from tipcgen.core.text import shown


def echo(message: object = "", err: bool = False, nl: bool = True, color: bool | None = None) -> None:
    """``typer.echo`` of ``message`` made safe for a terminal. ``color``: True keeps tipcgen's colours where the
    stream is no terminal (--color always, FORCE_COLOR: core/console.py), which typer.echo would strip."""
    typer.echo(shown(message), err=err, nl=nl, color=color)
