"""Text from files and logs made safe to print on a terminal (one place for every command)."""
from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (CSI/OSC introducers in 8-bit form), and the
# Unicode line/paragraph separators and bidi overrides that can forge or hide a line.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def terminal(value: object, one_line: bool = True) -> str:
    """``value`` as text a terminal shows literally: escapes (ESC, OSC, BEL, CR, ...) as ``\\xNN`` /
    ``\\uNNNN``; with ``one_line`` a newline too, so a value cannot forge a line of output."""
    text = str(value)
    if one_line:
        text = text.replace("\n", "\\n")
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", text)
