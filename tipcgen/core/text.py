"""Text from files and logs made safe to print on a terminal (one place for every command).

``terminal`` escapes a value; ``shown`` is what every command prints (the CLI's one echo, and the
suite's progress lines): the whole text escaped, then tipcgen's own colours and cursor moves put
back. Those are written with ``code``/``paint`` as markers that hold a key drawn afresh by each
process, so no file, log line or script output can spell one: a raw escape in printed text is always
someone else's, and shown as ``\\x1b``. ``quoted`` is how an error message quotes a value: one line,
shortened; ``article`` the ``a``/``an`` before a word a message names (``an unknown config``).
"""
from __future__ import annotations

import re
import secrets

# C0 controls but tab and newline, DEL, C1 controls (CSI/OSC introducers in 8-bit form), and the
# Unicode line/paragraph separators and bidi overrides that can forge or hide a line.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

# tipcgen's own terminal codes: the colours of an action word or a step mark, and the progress redraw.
_CODES = {"red": "\033[31m", "green": "\033[32m", "yellow": "\033[33m", "cyan": "\033[36m", "dim": "\033[2m",
          "reset": "\033[0m", "up": "\033[F", "clear": "\033[K"}
_KEY = secrets.token_hex(16)
_OWN = re.compile(f"\ue000{_KEY}([a-z]+)\ue001")
QUOTE_LIMIT = 80  # characters of a quoted value in a message; longer ones keep their head and say their length


def terminal(value: object, one_line: bool = True) -> str:
    """``value`` as text a terminal shows literally: escapes (ESC, OSC, BEL, CR, ...) as ``\\xNN`` /
    ``\\uNNNN``; with ``one_line`` a newline too, so a value cannot forge a line of output."""
    text = str(value)
    if one_line:
        text = text.replace("\n", "\\n")
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", text)


def code(name: str) -> str:
    """tipcgen's own terminal code ``name`` (a key of ``_CODES``), as the marker ``shown`` turns into it."""
    if name not in _CODES:
        raise KeyError(name)
    return f"\ue000{_KEY}{name}\ue001"


def paint(text: str, colour: str) -> str:
    """``text`` in ``colour`` once ``shown`` (the text itself is still escaped there)."""
    return f"{code(colour)}{text}{code('reset')}"


def shown(text: object) -> str:
    """What a command prints: ``text`` escaped (newlines and tabs kept), tipcgen's own codes restored."""
    return _OWN.sub(lambda m: _CODES.get(m.group(1), ""), terminal(text, one_line=False))


def plain(text: str) -> str:
    """``text`` without tipcgen's own codes (for a file or a test)."""
    return _OWN.sub("", text)


def json_text(data: object, indent: int | None = 2) -> str:
    """``json.dumps`` keeping non-ASCII text readable, with every character ``terminal`` would escape written
    as a JSON ``\\uNNNN`` escape instead (the same value; ``shown`` then leaves the text as it is)."""
    import json

    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(data, indent=indent, ensure_ascii=False))


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """A value as a message quotes it: ``repr`` on one line (escapes visible), at most ``limit``
    characters of it kept, with the full length said (a 5,000-character entry is not a 5,000-character line)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def article(word: str) -> str:
    """``a`` or ``an`` before a word (``an unknown``, ``an infer_python``, ``a kl_quant``)."""
    return "an" if word[:1].lower() in "aeiou" else "a"
