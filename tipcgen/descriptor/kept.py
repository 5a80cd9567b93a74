"""The descriptor's ``kept`` section: configs of kinds tipcgen does not generate from fields, kept line by line.

A repository's ``test_tipc/configs/`` holds configs of many kinds besides the basic chain's
(C++ inference, serving, paddle2onnx, Lite, KL quantization, dy2static, pipeline, benchmark, a
layout no family of docs/LAYOUTS.md has). ``tipcgen import`` keeps each of them here, every line in
order as written (its keys, values, spacing, header padding and blank lines), and ``tipcgen init``
writes it back byte for byte at ``test_tipc/configs/<file>``. Nothing is normalised: the runner of
that kind reads the file as it was.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.format import paths

# A path below test_tipc/configs/: names of letters, digits, '_', '-', '.', '+', '@', '=', joined by '/'.
FILE_RE = re.compile(r"^(?!.*(^|/)\.\.?(/|$))[A-Za-z0-9_.+@=-]+(/[A-Za-z0-9_.+@=-]+)*$")
MAX_LINES = 10_000
_BREAKS = "\x85\u2028\u2029"  # line breaks to YAML


def keepable(ch: str) -> bool:
    """A character a kept line may hold: anything but control characters (a tab is fine), surrogates and the
    characters YAML reads as line breaks."""
    return ch == "\t" or (unicodedata.category(ch) not in ("Cc", "Cs") and ch not in _BREAKS)


@dataclass(frozen=True)
class KeptConfig:
    """One kept config: its path below test_tipc/configs/, its kind (from its first line), its lines."""

    file: str
    kind: str
    lines: tuple[str, ...]
    final_newline: bool = True

    @property
    def rel(self) -> str:
        return f"{paths.CONFIGS}/{self.file}"

    def render(self) -> str:
        if not self.lines:
            return ""
        return "\n".join(self.lines) + ("\n" if self.final_newline else "")


def parse(value: Any, source: str, lines: dict[str, int]) -> tuple[KeptConfig, ...]:
    """The ``kept`` section → KeptConfigs; errors name the field and its line."""
    if value is None:
        return ()

    def fail(path: str, message: str, hint: str) -> DescriptorError:
        return DescriptorError(source, path, message, lines.get(path) or lines.get("kept"), hint)

    out: list[KeptConfig] = []  # a list of mappings of known fields, their types: the model's (descriptor/structure.py)
    seen: set[str] = set()
    for i, item in enumerate(value):
        where = f"kept[{i}]"
        file = item.get("file")
        if not isinstance(file, str) or not FILE_RE.match(file) or not file.endswith(".txt"):
            raise fail(f"{where}.file", f"{file!r} is not a .txt path below test_tipc/configs/",
                       "write MODEL/NAME.txt: letters, digits, '_', '-', '.', joined by '/', no '..'")
        if file in seen:
            raise fail(f"{where}.file", f"{file} is kept twice", "keep each config once")
        seen.add(file)
        given = item.get("lines")
        if given is None:
            given = []
        if len(given) > MAX_LINES:
            raise fail(f"{where}.lines", "expected a list of lines", "each line of the config as written, in order")
        texts = []
        for j, text in enumerate(given):
            if not all(map(keepable, text)):
                raise fail(f"{where}.lines[{j}]", "expected one line of printable text",
                           "a config line as written, quoted: '--flag:value '")
            texts.append(text)
        final = item.get("final_newline", True)
        kind = item.get("kind", "")
        out.append(KeptConfig(file, kind if isinstance(kind, str) else "", tuple(texts), final))
    return tuple(out)
