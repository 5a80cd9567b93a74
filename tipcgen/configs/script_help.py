"""A script's argparse-style ``--help``: run it (``python SCRIPT --help``, with a timeout) and read its flags.

``tipcgen new`` maps the flags found here to TIPC slots; ``configs/flag_check`` checks a config's keys against them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tipcgen.core.errors import TipcgenError

PROBE_TIMEOUT = 60
SCRIPT_OPTION = {"train": "--train", "eval": "--eval", "export": "--export", "infer": "--infer"}


@dataclass(frozen=True)
class Flag:
    """One option of a script's --help: its names, whether it takes a value, its choices."""

    names: tuple[str, ...]  # as written: ('-c', '--config')
    takes_value: bool
    choices: tuple[str, ...] = ()
    help: str = ""
    required: bool = False

    @property
    def name(self) -> str:
        longs = [n for n in self.names if n.startswith("--")]
        return (longs or list(self.names))[0]


@dataclass
class Script:
    """A script given for a role: its path, the fixed arguments after it, and its probed flags."""

    role: str
    path: str  # relative to the repository root
    args: tuple[str, ...] = ()
    flags: list[Flag] = field(default_factory=list)

    @property
    def command(self) -> str:
        return " ".join([self.path, *self.args])

    def find(self, names: tuple[str, ...]) -> Flag | None:
        """The first of names (best first) the script has, spelt any way: --batch_size, --batch-size,
        --batchSize, --batchsize are one name."""
        by_name = {loose(n): flag for flag in self.flags for n in flag.names}
        return next((by_name[loose(n)] for n in names if loose(n) in by_name), None)

    def accepts(self, key: str) -> bool:
        return any(norm(key) == norm(n) for flag in self.flags for n in flag.names)

    def given(self, flag: Flag) -> bool:
        """The fixed arguments already set this flag (``--config x`` or ``--config=x``)."""
        return any(arg.split("=", 1)[0] in flag.names for arg in self.args)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def norm(name: str) -> str:
    """A flag name without its dashes, in snake case: --batch-size, --batchSize → batch_size."""
    return _CAMEL.sub("_", name.lstrip("-")).replace("-", "_").lower()


def loose(name: str) -> str:
    """A flag name as ``find`` compares it: also without underscores (--logdir is --log_dir)."""
    return norm(name).replace("_", "")


# ---------------------------------------------------------------- probing

_OPTION_LINE = re.compile(r"^\s{1,12}-")  # deeper lines are help text (argparse indents it by 24)
_CHOICES = re.compile(r"^\{(.*)\}$")


def parse_help(text: str) -> list[Flag]:
    """The flags of an argparse-style --help text (options, their metavars and choices, required ones)."""
    required = _required_in_usage(text)
    flags: list[Flag] = []
    current: list[str] | None = None  # [option spec, help text]
    for line in text.splitlines():
        if _OPTION_LINE.match(line):
            if current:
                flags.append(_flag(current[0], current[1], required))
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            current = [parts[0], parts[1] if len(parts) > 1 else ""]
        elif current and line.strip() and line.startswith(" " * 6):
            current[1] = (current[1] + " " + line.strip()).strip()
        elif current:
            flags.append(_flag(current[0], current[1], required))
            current = None
    if current:
        flags.append(_flag(current[0], current[1], required))
    return [f for f in flags if f.name not in ("-h", "--help")]


def _flag(spec: str, help: str, required: set[str]) -> Flag:
    names, metavars = [], []
    for part in spec.split(", "):
        words = part.strip().split(None, 1)
        if not words or not words[0].startswith("-"):
            continue
        name, _, inline = words[0].partition("=")
        names.append(name)
        metavar = inline or (words[1] if len(words) > 1 else "")
        if metavar:
            metavars.append(metavar)
    choices: tuple[str, ...] = ()
    if metavars:
        found = _CHOICES.match(metavars[0].split()[0])
        if found:
            choices = tuple(c.strip() for c in found.group(1).split(","))
    return Flag(tuple(names), bool(metavars), choices, help, any(n in required for n in names))


def _required_in_usage(text: str) -> set[str]:
    """Options outside [...] in the usage line: the ones argparse requires."""
    usage = []
    for line in text.splitlines():
        if line.lower().startswith("usage:"):
            usage.append(line[6:])
        elif usage and line.strip() and line.startswith(" "):
            usage.append(line)
        elif usage:
            break
    depth, out, word = 0, set(), ""
    for ch in " ".join(usage) + " ":
        if ch.isspace() or ch in "[]()|":
            if depth == 0 and word.startswith("-"):
                out.add(word)
            word = ""
            depth += (ch == "[") - (ch == "]")
        else:
            word += ch
    return out


def probe(script: Script, root: Path, python: str, timeout: float = PROBE_TIMEOUT) -> list[Flag]:
    """``python SCRIPT --help`` in root → its flags; a script whose --help fails is an error."""
    interpreter = shutil.which(python) or (sys.executable if python in ("python", "python3") else None)
    if interpreter is None:
        where = "is not an executable file" if os.sep in python else "is not on PATH"
        raise TipcgenError(f"--python '{python}' {where}, so {script.path} --help cannot be probed",
                           "pass --python with an interpreter that has the model's packages (e.g. --python python3)")
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", COLUMNS="200")
    try:
        proc = subprocess.run([interpreter, script.path, "--help"], cwd=root, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=timeout)
    except OSError as exc:  # not a program (Exec format error), a missing #! interpreter, ...
        raise TipcgenError(f"--python '{python}' cannot run {script.path} --help: {exc.strerror or exc}",
                           "pass --python with a working Python interpreter (e.g. --python python3)") from None
    except subprocess.TimeoutExpired:
        raise TipcgenError(f"{script.path} --help did not finish in {timeout:g} s",
                           "a script should parse its arguments before loading models or data; "
                           "raise the limit with --probe-timeout") from None
    flags = parse_help(proc.stdout)
    if proc.returncode != 0 or not flags and "usage:" not in proc.stdout.lower():
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise TipcgenError(f"`{python} {script.path} --help` exited {proc.returncode}: {tail or 'no output'}",
                           f"make `{python} {script.path} --help` work from {root} (it must not need a GPU or data), "
                           f"or check {SCRIPT_OPTION[script.role]}")
    return flags
