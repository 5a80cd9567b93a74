"""The validator's checks of one value that its JSON Schema does not state: text (spaces, full-width punctuation,
control characters), a relative path, a tolerance read with its defaults.

Every failure is a DescriptorError that names the file, the line and the field (``Checks.fail``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.core.text import quoted
from tipcgen.descriptor.schema import BAD_PUNCTUATION
from tipcgen.descriptor.spec import Tolerance
from tipcgen.descriptor.yaml_lines import describe


def config_text(value: Any) -> str:
    """A loaded scalar as the descriptor writes it into the config (null, True/False, the text)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


class Checks:
    """The checks of single values, for one descriptor file (its name and the line of every field)."""

    def __init__(self, source: str, lines: dict[str, int]) -> None:
        self.source = source
        self.lines = lines

    def fail(self, path: str, message: str, hint: str = "") -> DescriptorError:
        line = self.lines.get(path)
        while line is None and path:
            path_up = path.rsplit(".", 1)[0] if "." in path else ""
            line = self.lines.get(path_up)
            if path_up == path:
                break
            path = path_up
        return DescriptorError(self.source, path, message, line, hint)

    def err(self, path: str, found: Any, expected: str, hint: str = "") -> DescriptorError:
        line = self.lines.get(path)
        return DescriptorError(self.source, path, f"expected {expected}, found {describe(found)}", line, hint)

    # -- the rules of text a schema does not state
    def text(self, value: Any, path: str, *, what: str = "text") -> str:
        if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
            raise self.err(path, value, what)
        text = str(value)
        if not text.strip():
            raise self.err(path, value, f"non-empty {what}")
        if text != text.strip():
            raise self.fail(path, f"{quoted(text)} has leading or trailing spaces",
                            "remove them: upstream runners keep trailing spaces as part of the value")
        for ch in text:
            if ch in BAD_PUNCTUATION:
                raise self.fail(path, f"{quoted(text)} contains the full-width character {quoted(ch)}",
                                "use the ASCII character instead: TIPC parsers split on ASCII , : | ; only")
            if not ch.isprintable():
                raise self.fail(path, f"{quoted(text)} contains a control character {quoted(ch)}",
                                "values are single-line printable text")
        return text

    def scalar_text(self, value: Any, path: str) -> str:
        if value is None or isinstance(value, bool):
            return config_text(value)
        if isinstance(value, (dict, list)):
            raise self.err(path, value, "a single value")
        if value == "":
            return ""  # upstream configs leave some values empty (`Global.checkpoints:`)
        return self.text(value, path, what="value")

    def rel(self, value: Any, path: str) -> str | None:
        if value is None:
            return None
        text = self.text(value, path, what="relative path")
        if text.startswith("/") or ".." in Path(text).parts:
            raise self.fail(path, f"{quoted(text)} must be a relative path inside the repository (or data folder)", "")
        return text

    def tolerance(self, value: Any, path: str, default: Tolerance) -> Tolerance:
        """``{atol, rtol}`` (each a number ≥ 0 by the schema), the default's for what is left out."""
        if value is None:
            return default
        return Tolerance(**{name: float(value.get(name, getattr(default, name))) for name in ("atol", "rtol")})
