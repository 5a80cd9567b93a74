"""Lint findings silenced on purpose, one line each, in a ``.tipcgen-lint`` file beside the configs (issue #57).

A config cannot hold its own silence: the runners read every line by position, and a trailing ``# noqa`` would
become part of the value the script gets. So the silences live in a file of their own, as ruff's
``per-file-ignores`` and shellcheck's ``.shellcheckrc`` do, found as they are: the nearest ``.tipcgen-lint`` in the
config's folder or a folder above it (``test_tipc/.tipcgen-lint`` covers every config of the repository). One
silence a line, ``#`` starting a comment (the reason, kept with it)::

    configs/resnet50/train_infer_python.txt:14 colon-in-value    # a URL: our runner reads the whole value
    configs/*/train_infer_python.txt:pretrained_model_url colon-in-value
    configs/old/model_linux_gpu_normal_normal_paddle2onnx_python_linux_cpu.txt not-position-checked

The first word is a config, relative to the file's folder (a glob: ``*`` any characters, ``?`` one), and after a
``:`` either the line an editor shows (``:14``) or the key that starts the line (``:--epochs``, ``:python``: every
line with that key, which stays right when lines move); without one, the whole file. Then one rule or several,
comma-separated, each a rule lint knows. A line that cannot be read so is one error naming the file and the line
(exit 2). A silence that silenced nothing this time is itself a finding, ``unused-silence`` (ruff's unused-noqa):
the line it named moved, or the problem is gone. Only silences of the configs this lint read are judged.
"""
from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tipcgen.configs.lint import RULES, Finding
from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import quoted
from tipcgen.format.paths import LINT_SILENCES

MAX_BYTES = 1 << 20  # a file of silences: a few hundred lines at most
FORMAT = "PATH[:LINE|:KEY] RULE[,RULE...]  [# why]"


@dataclass(frozen=True)
class Silence:
    source: Path  # the .tipcgen-lint file
    number: int  # its line
    pattern: str  # a config glob, relative to the source's folder
    where: str  # "" (the whole file), a line number, or a key
    rules: tuple[str, ...]

    @property
    def shown(self) -> str:
        return self.pattern + (f":{self.where}" if self.where else "")


@dataclass
class Outcome:
    """What the silences did to a lint's findings."""

    kept: list[Finding] = field(default_factory=list)  # the findings no silence named
    silenced: list[Finding] = field(default_factory=list)  # those one did
    unused: list[Finding] = field(default_factory=list)  # an unused-silence finding per silence that silenced nothing
    sources: list[Path] = field(default_factory=list)  # the .tipcgen-lint files read


def find_file(config: Path) -> Path | None:
    """The nearest .tipcgen-lint at or above the config's folder (read as a regular file, a link to one as it: a
    folder, FIFO or device there is exit 2), named relative to the current folder where it lies in it, as the
    configs are."""
    folder = Path(os.path.abspath(config)).parent
    for candidate in (folder, *folder.parents):
        path = candidate / LINT_SILENCES
        if os.path.lexists(path):
            rel = os.path.relpath(path)
            return Path(rel) if not rel.startswith(".." + os.sep) else path
    return None


def read(path: Path) -> list[Silence]:
    """The silences of one file; a line that is not one (or names a rule lint does not know) is one error, exit 2."""
    known = set(RULES)
    text = inputs.read_text(path, "lint silences file", MAX_BYTES)  # a regular file, UTF-8, no NUL: else exit 2
    silences = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        if len(words) != 2:
            raise TipcgenError(f"{path}:{number}: {quoted(raw.strip()[:120])} is not a silence",
                               f"write one a line: {FORMAT} (a rule list has no spaces)")
        target, names = words
        pattern, _, where = target.partition(":")
        pattern = pattern.removeprefix("./")
        if not pattern or (where == "" and target.endswith(":")):
            raise TipcgenError(f"{path}:{number}: {quoted(target)} names no config",
                               f"write the config's path, relative to {path.parent}: {FORMAT}")
        if where.isdigit() and int(where) < 1:
            raise TipcgenError(f"{path}:{number}: {quoted(target)}: a config has no line {where}",
                               "count lines from 1, as an editor shows them")
        chosen = tuple(name for name in names.split(",") if name)
        unknown = sorted(set(chosen) - known)
        if unknown or not chosen:
            raise TipcgenError(f"{path}:{number}: {', '.join(unknown) or quoted(names)}: no such lint rule",
                               "the rules: " + ", ".join(sorted(known)))
        silences.append(Silence(path, number, pattern, where, chosen))
    return silences


def _relative(config: str, source: Path) -> str | None:
    """The config's path relative to the silences file's folder, as the file writes it; None when outside it."""
    rel = os.path.relpath(os.path.abspath(config), os.path.abspath(source.parent))
    return None if rel == ".." or rel.startswith(".." + os.sep) else Path(rel).as_posix()


def _key(lines: list[str], number: int) -> str:
    """The key that starts a config's line (what precedes its first ':'), BOM and spaces left out."""
    if not 1 <= number <= len(lines):
        return ""
    return lines[number - 1].lstrip("\ufeff").split(":", 1)[0].strip()


def apply(findings: Iterable[Finding], configs: Iterable[Path | str]) -> Outcome:
    """Split the findings into those kept and those a silence names; each silence of a linted config that named
    none is an ``unused-silence`` finding at its own line. ``configs``: the files this lint read."""
    findings, names = list(findings), [str(c) for c in configs]
    sources: dict[Path, list[Silence]] = {}
    file_of: dict[str, Path | None] = {}
    for config in names:
        source = find_file(Path(config))
        file_of[config] = source
        if source is not None and source not in sources:
            sources[source] = read(source)
    outcome = Outcome(sources=list(sources))
    lines: dict[str, list[str]] = {}
    used: set[Silence] = set()

    def config_lines(config: str) -> list[str]:
        if config not in lines:
            try:
                lines[config] = inputs.read_text(config, "config").splitlines()
            except TipcgenError:
                lines[config] = []
        return lines[config]

    for finding in findings:
        path = str(finding.path)
        source = file_of[path] if path in file_of else find_file(Path(path))
        hit = None
        rel = _relative(finding.path, source) if source is not None else None
        for silence in sources.get(source, []) if source is not None else []:
            if rel is None or finding.rule not in silence.rules or not fnmatch.fnmatchcase(rel, silence.pattern):
                continue
            if silence.where and (str(finding.line) != silence.where if silence.where.isdigit()
                                  else _key(config_lines(finding.path), finding.line) != silence.where):
                continue
            hit = silence
            break
        if hit is None:
            outcome.kept.append(finding)
        else:
            used.add(hit)
            outcome.silenced.append(finding)
    for source, silences in sources.items():
        linted = [rel for config, found in file_of.items() if found == source
                  for rel in [_relative(config, source)] if rel is not None]
        for silence in silences:
            if silence in used or not any(fnmatch.fnmatchcase(rel, silence.pattern) for rel in linted):
                continue
            outcome.unused.append(Finding(str(source), silence.number, "unused-silence", "warning",
                                          f"{silence.shown} {','.join(silence.rules)} silenced nothing: no such finding "
                                          "is there now (the problem is gone, or the line moved: a key, "
                                          f"{silence.pattern}:KEY, follows it); remove or fix this line"))
    return outcome
