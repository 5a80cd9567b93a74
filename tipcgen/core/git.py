"""Every git tipcgen runs, with a configuration no repository can extend (issue #59 item 3).

A repository's ``.git/config`` (committed in a shipped ``.git``, or written by a step of the run) may name
programs git runs by itself: ``core.fsmonitor`` (run by ``git status``), ``filter.<name>.clean`` (run on a
changed file), ``diff.<name>.textconv``, ``core.hooksPath``, ``core.pager``, ``core.sshCommand``, ... A git
started here therefore:

- reads no system or user configuration (``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``), and no
  ``GIT_*`` variable of the caller's environment (``GIT_DIR``, ``GIT_EXTERNAL_DIFF``, ...);
- gets command-scope overrides, which win over every file: each variable of ``NEUTRAL`` (fsmonitor, hooks,
  pager, ssh, editors, helpers, ...) turned off, and each command-running variable the repository's own
  configuration names (``filter.<name>.clean/smudge/process``, ``diff.<name>.textconv/command``,
  ``merge.<name>.driver``, any ``*.cmd``/``*.program``/``*.helper``: ``COMMAND_KEY``) emptied, with its
  filters not ``required``. Those names are read first with ``git config --get-regexp`` (reading
  configuration runs nothing). The overrides travel as ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_<n>``/
  ``GIT_CONFIG_VALUE_<n>`` (git 2.31+), so that a subsection name holding ``=`` cannot split a ``-c``;
- takes no optional lock (``--no-optional-locks``: ``git status`` leaves the index alone) and no pager;
- runs in core/sandbox.py's sandbox where one works (read-only, no network), the repository readable.

``run``/``start`` are the only way tipcgen starts git (tests/test_git.py greps the package for another).
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Mapping, Sequence

from tipcgen.core import inputs, process, sandbox
from tipcgen.core.errors import TipcgenError

# Variables that make git run a program, or reach out, turned off for every git tipcgen starts.
NEUTRAL: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"), ("core.hooksPath", os.devnull), ("core.pager", "cat"),
    ("core.sshCommand", ""), ("core.askPass", ""), ("core.editor", ""), ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""), ("core.untrackedCache", "false"), ("diff.external", ""),
    ("sequence.editor", ""), ("credential.helper", ""), ("gpg.program", ""), ("gpg.ssh.program", ""),
    ("gpg.x509.program", ""), ("uploadpack.packObjectsHook", ""), ("protocol.allow", "never"),
    ("submodule.recurse", "false"), ("status.submoduleSummary", "false"), ("core.quotePath", "false"),
)
# A variable of the repository's configuration whose value is a command (its last part, lower case).
_COMMAND_WORDS = ("clean|smudge|process|textconv|command|driver|cmd|program|helper|sshcommand|fsmonitor|hookspath|"
                  "pager|editor|askpass|gitproxy|receivepack|uploadpack|alternaterefscommand|packobjectshook|proxy|"
                  "external")
COMMAND_KEY = re.compile(rf"\.({_COMMAND_WORDS})$", re.IGNORECASE)
_TIMEOUT = 60


def found() -> str | None:
    """git's full path on PATH, or None where it is not installed."""
    return shutil.which("git")


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without any ``GIT_*`` variable, with the system and user configuration off."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(extra or {})
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0",
               GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", GIT_NO_REPLACE_OBJECTS="1")
    return env


def _repository_keys(git: str, cwd: Path | None, env: dict[str, str]) -> list[str]:
    """The command-running variables the repository's configuration (and what it includes) names."""
    argv = [git, *(["-C", str(cwd)] if cwd is not None else []), "--no-pager", "config", "--includes", "-z",
            "--name-only", "--get-regexp", rf"\.({_COMMAND_WORDS}|required)$"]
    outcome = process.run(process.Request(argv, env=env, timeout=_TIMEOUT, stderr="discard", output_cap=1 << 20))
    if outcome.exit_code != 0:
        return []  # 1: none named (or not a repository)
    return [key for key in outcome.data.decode("utf-8", "surrogateescape").split("\0") if key]


def overrides(keys: Sequence[str]) -> list[tuple[str, str]]:
    """NEUTRAL, then each command-running variable of ``keys`` (the repository's) emptied; a filter it names
    is made not required (a required filter with no command would fail git)."""
    out = list(NEUTRAL)
    for key in keys:
        if key.lower().startswith("filter.") and key.count(".") >= 2:
            name = key[len("filter."):key.rindex(".")]
            out += [(f"filter.{name}.{part}", "") for part in ("clean", "smudge", "process")]
            out.append((f"filter.{name}.required", "false"))
        if COMMAND_KEY.search(key):
            out.append((key, ""))
    return list(dict.fromkeys(out))


def _git_dirs(folder: Path) -> list[str]:
    """Where a linked work tree's ``.git`` file points (``gitdir: ...``) and that folder's ``commondir``: bound
    back into the sandbox when they lie under /tmp, which it empties. Read, bounded, never followed out."""
    out: list[str] = []
    try:
        text = inputs.read_bytes(folder / ".git", ".git file", 1 << 12).decode("utf-8", "replace")
    except TipcgenError:
        return out  # a folder (the usual case), or none
    if text.startswith("gitdir: "):
        gitdir = (folder / text[len("gitdir: "):].strip()).resolve()
        out.append(str(gitdir))
        try:
            common = inputs.read_bytes(gitdir / "commondir", "commondir", 1 << 12).decode("utf-8", "replace").strip()
            out.append(str((gitdir / common).resolve()))
        except TipcgenError:
            pass
    return out


def request(args: Sequence[str], cwd: str | Path | None = None, *, env: Mapping[str, str] | None = None,
            timeout: float = _TIMEOUT, stderr: str = "discard", output_cap: int = process.OUTPUT_CAP,
            writable: Sequence[str | Path] = (), readable: Sequence[str | Path] = ()) -> process.Request:
    """The process.Request of ``git --no-pager --no-optional-locks ARGS`` in ``cwd``: see the module docstring.
    ``writable``/``readable``: what the sandbox must let it write or see besides ``cwd`` (read)."""
    git = found() or "git"
    base = base_env(env)
    folder = Path(cwd) if cwd is not None else None
    pairs = overrides(_repository_keys(git, folder, base))
    base["GIT_CONFIG_COUNT"] = str(len(pairs))
    for index, (key, value) in enumerate(pairs):
        base[f"GIT_CONFIG_KEY_{index}"], base[f"GIT_CONFIG_VALUE_{index}"] = key, value
    spec = None
    if sandbox.available()[0]:
        seen = [str(p) for p in (*([folder, *_git_dirs(folder)] if folder is not None else []), *readable)]
        spec = sandbox.Spec(writable=tuple(str(p) for p in writable), readable=tuple(seen), env_keep=("GIT_*",))
    return process.Request([git, "--no-pager", "--no-optional-locks", *[str(a) for a in args]], cwd=cwd, env=base,
                           timeout=timeout, stderr=stderr, output_cap=output_cap, sandbox=spec)


def run(args: Sequence[str], cwd: str | Path | None = None, **options) -> process.Outcome:
    """git ARGS run to its end (see ``request``)."""
    return process.run(request(args, cwd, **options))


def start(args: Sequence[str], cwd: str | Path | None = None, **options) -> process.Running:
    """git ARGS started, read later (provenance's probe beside the others)."""
    return process.start(request(args, cwd, **options))
