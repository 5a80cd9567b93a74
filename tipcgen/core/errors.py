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
        field = _short(field, 120)  # a field path holds the file's keys: `text.lines.<5000 digits>`
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}", hint)
        self.source = source
        self.field = field
        self.line = line


class ConfigImportError(TipcgenError):
    """A config that cannot become a descriptor (tipcgen import): names the file, the line and the reason."""

    def __init__(self, source: str, line: int | None, message: str, hint: str = "") -> None:
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}", hint)


class SummaryFileError(TipcgenError):
    """A summary.json that is not what tipcgen run writes."""

    HINT = ("this summary.json was not written by tipcgen run, or was edited or cut short: "
            "run the chain again (tipcgen run --mode MODE) to rewrite it")

    def __init__(self, source: str, where: str, problem: str) -> None:
        super().__init__(f"{source}: {where}: {problem}" if where else f"{source}: {problem}", self.HINT)


class AlignFileError(TipcgenError):
    """A reprod_log checkpoint file that cannot be read as a dict of arrays (tipcgen align)."""


class ArchiveLimit(TipcgenError):
    """A lite_data archive that cannot be listed within accept's budget (time, size, members), or that is
    both a zip and a tar; accept reports it as a failed item."""


class CheckpointError(TipcgenError):
    """A weights file that cannot be read safely (unknown format, or a pickle that would run code)."""


class ConvertError(TipcgenError):
    """A conversion rule file, a target or an option that cannot be used (tipcgen align convert)."""


class LinkRefused(TipcgenError):
    """A symbolic link where tipcgen would write or delete, from the root the command owns down (core/writes.py)."""


class RenderConflictError(TipcgenError):
    """init would overwrite files that differ from what it renders."""


class RunError(TipcgenError):
    """A chain that cannot start (missing config, unknown mode, missing data)."""


class ScriptError(RunError):
    """A generated script that refused to start (exit 2). The scripts say why on stderr in the lines
    tipc_steps.sh.j2's tipc_die writes, ``tipc error: WHAT`` and ``  hint: HOW``; this class is the
    one place that reads them back."""

    ERROR_PREFIX = "tipc error: "
    HINT_PREFIX = "  hint: "

    @classmethod
    def is_own_line(cls, line: str) -> bool:
        """A line of such an explanation (the CLI shows the error once, as this exception)."""
        return line.startswith((cls.ERROR_PREFIX, cls.HINT_PREFIX))

    @classmethod
    def from_lines(cls, lines: list[str]) -> "ScriptError":
        """The script's last error and hint; without one, its last lines."""
        errors = [line.removeprefix(cls.ERROR_PREFIX) for line in lines if line.startswith(cls.ERROR_PREFIX)]
        hints = [line.strip().removeprefix("hint: ") for line in lines if line.strip().startswith("hint: ")]
        message = errors[-1] if errors else " | ".join(lines[-3:]) or "the script stopped with exit code 2"
        return cls(message, hints[-1] if hints else "")


class InputError(TipcgenError):
    """A file given to tipcgen that it cannot read as the text it expects (not its contents' fault alone:
    a folder, a FIFO, a binary or non-UTF-8 file, one too large). Never quotes the file's contents."""


# What to do about an operating-system error on a path the user gave (errno name → hint).
_OS_HINTS = {
    "ENOENT": "check the path",
    "ENOTDIR": "a part of the path is a file, not a folder: check the path",
    "EISDIR": "give a file, not a folder",
    "EACCES": "check the permissions, or choose a path you can read and write",
    "EPERM": "check the permissions, or choose a path you can read and write",
    "EROFS": "the file system is read-only: choose another path",
    "ENAMETOOLONG": "the path or one of its names is too long for the file system: use a shorter path",
    "ELOOP": "the path goes through a symbolic link loop: fix or remove the link",
    "ENOSPC": "the disk is full: free some space",
    "EEXIST": "a file is in the way: move it or choose another path",
    "EXDEV": "choose an output folder on the same file system",
}


def os_error(exc: OSError, doing: str = "cannot use") -> TipcgenError:
    """An OSError on a user's path as a one-line error: the path, the reason, and a hint by errno."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    where = exc.filename if exc.filename is not None else "a path"
    target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
    reason = exc.strerror or type(exc).__name__
    return TipcgenError(f"{doing} {_short(str(where))}{_short(str(target))}: {reason}",
                        _OS_HINTS.get(name, "check the path and its permissions"))


def _short(path: str, limit: int = 160) -> str:
    """An over-long path shortened for a message (its head and tail stay recognisable)."""
    return path if len(path) <= limit else f"{path[:60]}...{path[-60:]} ({len(path)} characters)"


class NotSandboxed(TipcgenError):
    """No sandbox here, and the command may not run the repository's code outside one (a probe's --help)."""


class ExportFormatError(CheckpointError):
    """An exported ``.pdiparams`` is not a combined-params file repro/pdiparams.py reads (the export check then
    reads it with paddle)."""
