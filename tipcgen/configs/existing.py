"""Living in an existing test_tipc/: what `init` would replace, why, and what that would break.

A repository that already has a test_tipc/ (the models tutorial template, a PaddleOCR tree) has
other scripts there (serving, C++, Lite, paddle2onnx runners) that source its ``common_func.sh``
and call ``prepare.sh`` with their own modes. Before writing, ``init`` lists every existing file it
would replace and why, and finds every such script that would lose a function it calls or a
prepare mode it uses; it refuses then, unless ``--force`` (which keeps a backup).
Standard library only; the files are read as text and never run.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.format import chains, paths, words

_WHY = {
    paths.COMMON_FUNC: "the generated runner's shell helpers (it replaces the functions defined there)",
    paths.STEPS_SH: "the generated runners' checks and step functions",
    paths.PREPARE_SH: "prepares the data of the descriptor for the four basic modes only",
    paths.BASIC_RUNNER: "the generated runner of the basic chain",
    paths.RUNNERS[chains.PADDLE2ONNX]: "the generated runner of the paddle2onnx chain",
    paths.RUNNERS[chains.DY2STATIC]: "the generated runner of the dy2static chain (it never edits the config, as upstream's does)",
    paths.RUNNERS[chains.FLEET]: "the generated runner of the fleet chain (the machines simulated on this host)",
    paths.README: "the generated overview of test_tipc/",
    paths.CHAIN_DOC: "the generated chain documentation",
}
# `function name() {`, `function name {` or `name() {`
_FUNC_DEF = re.compile(r"^\s*(?:function\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(\s*\))?|([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*\))\s*\{?",
                       re.MULTILINE)
# `[ ${MODE} = "serving_infer" ]`, `[[ $MODE == klquant_whole_infer ]]`
_MODE_TEST = re.compile(r"\$\{?MODE\}?\"?\s*==?\s*[\"']?([A-Za-z][A-Za-z0-9_]*)")
_TEXT_SUFFIXES = (".sh", ".md", ".txt", ".py")
_PREPARE_NAME = paths.PREPARE_SH.rsplit("/", 1)[-1]  # how another script calls it
_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Replacement:
    """An existing file init would replace, and why."""

    path: str
    why: str


@dataclass(frozen=True)
class Breakage:
    """Another file that uses what a replacement takes away: ``what`` is a function or a mode."""

    path: str
    line: int
    what: str
    replaced: str

    def describe(self) -> str:
        if self.replaced == paths.COMMON_FUNC:
            return (f"{self.path}:{self.line} calls {self.what}(), which the current {paths.COMMON_FUNC} defines "
                    "and tipcgen's does not")
        return f"{self.path}:{self.line} uses prepare mode {self.what!r}, which the current {paths.PREPARE_SH} accepts and tipcgen's does not"


def defined_functions(text: str) -> set[str]:
    return {a or b for a, b in _FUNC_DEF.findall(text)} - {"if", "for", "while", "case"}


def prepare_modes(text: str) -> set[str]:
    return set(_MODE_TEST.findall(text))


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > _MAX_BYTES:
            return None
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def replacements(files: dict[str, str | bytes], out_dir: Path) -> list[Replacement]:
    """Every existing file under test_tipc/ that differs from what would be written."""
    out: list[Replacement] = []
    for rel, content in sorted(files.items()):
        if not rel.startswith(paths.TEST_TIPC + "/"):
            continue
        data = content.encode("utf-8") if isinstance(content, str) else content
        target = out_dir / rel
        if target.is_file() and not target.is_symlink() and target.read_bytes() != data:
            why = _WHY.get(rel) or ("rendered from the descriptor" if rel.startswith(paths.CONFIGS + "/") else "generated")
            out.append(Replacement(rel, why))
    return out


def breakages(files: dict[str, str | bytes], out_dir: Path) -> list[Breakage]:
    """What the other files of test_tipc/ would lose if common_func.sh and prepare.sh were replaced."""
    lost: dict[str, set[str]] = {}
    for rel, finder in ((paths.COMMON_FUNC, defined_functions), (paths.PREPARE_SH, prepare_modes)):
        old = _read(out_dir / rel)
        new = files.get(rel)
        if old is None or new is None:
            continue
        new_text = new.decode("utf-8", errors="replace") if isinstance(new, bytes) else new
        if old == new_text:
            continue
        have = finder(new_text) | (set(words.MODES) if rel == paths.PREPARE_SH else set())
        gone = finder(old) - have
        if gone:
            lost[rel] = gone
    if not lost:
        return []
    found: list[Breakage] = []
    folder = out_dir / paths.TEST_TIPC
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(out_dir).as_posix()
        if rel in files or rel.startswith(paths.OUTPUT + "/") or path.suffix not in _TEXT_SUFFIXES:
            continue
        text = _read(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            code = line.split("#", 1)[0] if path.suffix == ".sh" else line
            for name in sorted(lost.get(paths.COMMON_FUNC, ())):
                if path.suffix == ".sh" and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", code) \
                        and name not in defined_functions(line):
                    found.append(Breakage(rel, number, name, paths.COMMON_FUNC))
            for mode in sorted(lost.get(paths.PREPARE_SH, ())):
                if _PREPARE_NAME in line and re.search(rf"(?<![\w-]){re.escape(mode)}(?![\w-])", line):
                    found.append(Breakage(rel, number, mode, paths.PREPARE_SH))
    return found


def check(files: dict[str, str | bytes], out_dir: Path, force: bool) -> list[str]:
    """Before init writes: the lines that say what it replaces and why, and what that breaks.
    Raises ``RenderConflictError`` (nothing written) when replacing would break another file and
    ``force`` is not given; with ``force`` the breakages come back as warnings."""
    from tipcgen.core.errors import RenderConflictError

    replaced = replacements(files, out_dir)
    broken = breakages(files, out_dir)
    verb = "replaces" if force else "would replace"
    lines = [f"{verb} {item.path}: {item.why}" for item in replaced]
    if broken and not force:
        listing = "\n".join([*(f"  {item.describe()}" for item in broken),
                             *(f"  (it would replace {item.path}: {item.why})" for item in replaced)])
        raise RenderConflictError(
            f"replacing {', '.join(sorted({b.replaced for b in broken}))} in {out_dir} would break "
            f"{len({b.path for b in broken})} other file(s) of test_tipc/; nothing was written:\n{listing}",
            "keep the repository's own runner and common_func.sh with `tipcgen init --submission`, "
            "or replace them anyway with --force (the old files are kept under .tipcgen/backup/)")
    lines += [f"warning: {item.describe()} (replaced with --force; the old file is under .tipcgen/backup/)"
              for item in broken]
    return lines


def rendered_settings(root: Path) -> dict[str, dict]:
    """Each model's step settings as the repository's test_tipc/tipc_layouts.json holds them (the models whose
    settings are not the default: ``timeout``, the step time limit; ``env``, the env prefix of its export and
    inference steps); {} where there is none, or none readable."""
    try:
        tables = json.loads(inputs.read_bytes(root / paths.LAYOUTS_JSON, paths.LAYOUTS_JSON, limit=_MAX_BYTES * 16))
    except (TipcgenError, ValueError):
        return {}
    settings = tables.get("settings") if isinstance(tables, dict) else None
    return {name: own for name, own in settings.items() if isinstance(own, dict)} if isinstance(settings, dict) else {}
