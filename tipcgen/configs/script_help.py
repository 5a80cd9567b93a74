"""A script's argparse-style ``--help``: run it (``python -- SCRIPT --help``, sandboxed, bounded) and read its flags.

``tipcgen new`` maps the flags found here to TIPC slots; ``configs/flag_check`` checks a config's keys against them.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tipcgen.core import inputs, process, sandbox
from tipcgen.core.errors import NotSandboxed, TipcgenError
from tipcgen.core.text import terminal

PROBE_TIMEOUT = 60
PROBE_OUTPUT = 4 << 20  # bytes of --help kept; a longer one is stopped there
PROBE_MEMORY = 8 << 30  # bytes of address space a probe may take (paddle's import takes ~0.7 GB)
TRUST_OPTION = "--trust-repo"  # lint, import, doctor: run the --help probes without a sandbox
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


def checked_script(root: Path, path: str) -> Path:
    """The script a probe runs: a ``.py`` regular file inside the repository (no link out of it), named by a
    relative path; anything else (an option-like word, a shell script, a link out) is refused."""
    where = Path(path)
    if not path.endswith(".py") or where.is_absolute() or ".." in where.parts or not path.strip():
        raise TipcgenError(f"{terminal(path)[:120]} is not a .py file inside the repository, so it is not probed",
                           "name the step's script by its path from the repository root (e.g. tools/train.py)")
    full = root / where
    try:
        inputs.within(full, root)
    except TipcgenError as exc:
        raise TipcgenError(f"{terminal(path)[:120]} is not probed: {exc.message}", exc.hint) from None
    if not full.is_file():
        raise TipcgenError(f"{terminal(path)[:120]} is not a regular file in the repository, so it is not probed",
                           "name the step's script by its path from the repository root")
    return full


def user_interpreter(python: str) -> str | None:
    """The full path of the user's interpreter (--python, TIPC_PYTHON or PATH's python), or None."""
    return shutil.which(python) or (sys.executable if python in ("python", "python3") else None)


def probe_spec(root: Path, interpreter: str, env: dict[str, str]) -> sandbox.Spec:
    """The probe's sandbox: nothing writable; what lies under /tmp (which the sandbox empties) and the
    probe needs to see is bound back read-only: the repository, the interpreter's prefix, PYTHONPATH."""
    seen = [str(root), str(Path(interpreter).parent.parent),
            *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return sandbox.Spec(readable=tuple(p for p in seen if os.path.realpath(p).startswith("/tmp")))


def _a_program(path: str) -> bool:
    """The file starts as a program the kernel runs itself: a ``#!`` script or an ELF binary."""
    return inputs.program_head(path).startswith((b"#!", b"\x7fELF"))


def probe(script: Script, root: Path, python: str, timeout: float = PROBE_TIMEOUT, *, unsandboxed: bool = True,
          timeout_option: str = "--probe-timeout") -> list[Flag]:
    """``python -- SCRIPT --help`` in root → its flags; a script whose --help fails is an error.

    The probe runs in the sandbox (core/sandbox.py: read-only filesystem, private /tmp, no network, its own
    pid namespace) where one can be had, with time, output and memory limits, its whole group killed at the
    end. Without a sandbox it runs only when ``unsandboxed`` (run, suite, new, or a reading command with
    --trust-repo); else ``NotSandboxed``. ``python`` is the user's interpreter, never one a config names;
    ``timeout_option`` is the option of the calling command that raises the time limit ("" when none)."""
    interpreter = user_interpreter(python)
    if interpreter is None:
        where = "is not an executable file" if os.sep in python else "is not on PATH"
        raise TipcgenError(f"--python '{python}' {where}, so {script.path} --help cannot be probed",
                           "pass --python with an interpreter that has the model's packages (e.g. --python python3)")
    checked_script(root, script.path)
    if not _a_program(interpreter):  # bwrap (like execvp) would hand a file of no known format to /bin/sh
        raise TipcgenError(f"--python '{python}' cannot run {script.path} --help: {interpreter} is not a program "
                           "(no #! line, not an executable binary)",
                           "pass --python with a working Python interpreter (e.g. --python python3)")
    boxed, why = sandbox.available()
    if not boxed and not unsandboxed:
        raise NotSandboxed(f"{script.path} --help was not run: no sandbox here ({why})",
                           f"{sandbox.INSTALL_HINT}, or pass {TRUST_OPTION} to run the repository's scripts unsandboxed")
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", COLUMNS="200")
    request = process.Request([interpreter, "--", script.path, "--help"], cwd=root, env=env, timeout=timeout,
                              output_cap=PROBE_OUTPUT, memory_cap=PROBE_MEMORY, stderr="separate", stop_at_cap=True,
                              sandbox=probe_spec(root, interpreter, env) if boxed else None)
    outcome = process.run(request)
    if outcome.exit_code is None:  # not a program (Exec format error), a missing #! interpreter, ...
        raise TipcgenError(f"--python '{python}' cannot run {script.path} --help: {outcome.error}",
                           "pass --python with a working Python interpreter (e.g. --python python3)")
    if outcome.timed_out:
        raise TipcgenError(f"{script.path} --help did not finish in {timeout:g} s",
                           "a script should parse its arguments before loading models or data"
                           + (f"; raise the limit with {timeout_option}" if timeout_option else ""))
    if outcome.truncated:
        raise TipcgenError(f"{script.path} --help printed more than {PROBE_OUTPUT >> 20} MiB, so it was stopped",
                           "a --help text is a few KB: check that the script parses its arguments first")
    stdout = outcome.output
    flags = parse_help(stdout)
    if outcome.exit_code != 0 or not flags and "usage:" not in stdout.lower():
        tail = terminal(" | ".join((outcome.errors or stdout).strip().splitlines()[-3:]))[:400]
        raise TipcgenError(f"`{python} {script.path} --help` exited {outcome.exit_code}: {tail or 'no output'}",
                           f"make `{python} {script.path} --help` work from {root} (it must not need a GPU or data), "
                           f"or check {SCRIPT_OPTION[script.role]}")
    return flags
