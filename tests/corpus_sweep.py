"""One sweep over both corpus folders (../shared/tipc-corpus and tipc-corpus-2, read in place):
for every file, its suite, kind, layout family, lint findings and, for a basic-chain config, whether
``import`` → ``init`` gives it back byte for byte. Computed once per test session (a few seconds).

``python tests/corpus_sweep.py`` prints the table of docs/LAYOUTS.md (a test keeps the two equal).
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tipcgen.configs import lint
from tipcgen.configs.importer import import_descriptor
from tipcgen.core.errors import TipcgenError
from tipcgen.format import families
from tipcgen.format.config import TipcConfig, family_of
from tipcgen.render import render

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPORA = (SHARED / "tipc-corpus", SHARED / "tipc-corpus-2")
SHIFTED = "PaddleOCR/test_tipc__configs__ch_PP-OCRv4_server_rec_ampO2_ultra__train_infer_python.txt"
# Issue #30 handles the quantisation configs; they are linted, not imported here.
QUANT_NAMES = ("train_ptq_infer_python", "train_pact_infer_python")


@dataclass(frozen=True)
class Entry:
    name: str  # <suite>/<file>, relative to its corpus folder
    suite: str
    kind: str
    family: str | None  # None: not a basic-chain config, or in no family
    findings: tuple[lint.Finding, ...]
    outcome: str | None  # basic configs: "byte" (byte for byte), "differs", or the refusal's first line

    @property
    def basic(self) -> bool:
        return self.outcome is not None


def _outcome(text: str, raw: bytes, name: str) -> str:
    try:
        _, desc = import_descriptor(text, name)
    except TipcgenError as exc:
        return str(exc).splitlines()[0]
    return "byte" if render.render_config(desc).encode("utf-8", errors="surrogateescape") == raw else "differs"


def _entry(root: Path, path: Path) -> Entry:
    name = str(path.relative_to(root))
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="surrogateescape")
    config = TipcConfig.parse(text)
    picked = family_of(config)
    basic = config.kind in ("train_infer_python", "tutorial_32") and not any(q in path.name for q in QUANT_NAMES)
    return Entry(name, name.split("/", 1)[0], config.kind, picked.family.name if picked else None,
                 tuple(lint.lint_text(text, name)), _outcome(text, raw, name) if basic else None)


@functools.lru_cache(maxsize=1)
def sweep() -> tuple[Entry, ...]:
    return tuple(_entry(root, path) for root in CORPORA for path in sorted(root.rglob("*.txt")))


def available() -> bool:
    return all(root.is_dir() for root in CORPORA)


def table(entries: tuple[Entry, ...]) -> str:
    """Basic configs per suite and family, and how many come back byte for byte."""
    counts: Counter[tuple[str, str]] = Counter()
    byte: Counter[tuple[str, str]] = Counter()
    for entry in entries:
        if entry.basic:
            key = (entry.suite, entry.family or "(none)")
            counts[key] += 1
            byte[key] += entry.outcome == "byte"
    rows = ["| suite | family | basic configs | import → init byte for byte |", "| --- | --- | --- | --- |"]
    for (suite, family), count in sorted(counts.items()):
        rows.append(f"| {suite} | {family} | {count} | {byte[suite, family]} ({100 * byte[suite, family] // count} %) |")
    total, same = sum(counts.values()), sum(byte.values())
    rows.append(f"| all | | {total} | {same} |")
    return "\n".join(rows) + "\n"


def family_table() -> str:
    """The families: name, suites, headers and ``##`` lines, what the suite's runner does differently."""
    rows = ["| family | suites | lines | headers and `##` (idx) | runner marks |", "| --- | --- | --- | --- | --- |"]
    for family in families.FAMILIES:
        marks = ", ".join(f"`lines[{i}]` by func_parser_{p}" for i, p in family.marks) or "-"
        rows.append(f"| `{family.name}` | {', '.join(family.suites)} | {family.lines} | "
                    f"{families.structure_text(family)} | {marks} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(family_table())
    print(table(sweep()), end="")
