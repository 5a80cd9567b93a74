"""User-facing errors: each says what went wrong, where, and how to fix it."""
from __future__ import annotations


class TipcgenError(Exception):
    """A mistake the user can fix. The CLI prints it without a traceback and exits 2."""

    exit_code = 2

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class DescriptorError(TipcgenError):
    """A descriptor that cannot be loaded: names the file, the field and the line."""

    def __init__(self, source: str, field: str, message: str, line: int | None = None, hint: str = "") -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}", hint)
        self.source = source
        self.field = field
        self.line = line


class RenderConflictError(TipcgenError):
    """init would overwrite files that differ from what it renders."""


class RunError(TipcgenError):
    """A chain that cannot start (missing config, unknown mode, missing data)."""
