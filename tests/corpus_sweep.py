"""One sweep over the corpus folders (../shared/tipc-corpus, tipc-corpus-2 and tipc-corpus-3, read in place):
for every file, its suite, kind, layout family, lint findings and whether ``import`` → ``init`` gives it
back byte for byte (the basic chain by its fields, a PTQ config by ``ptq:``, every other kind by ``kept:``).
tipc-corpus-3 holds each suite's runners: its configs are read as their own runner reads them.
Computed once per test session (``sweep``: the first two folders; ``sweep_all``: all three).

``python tests/corpus_sweep.py`` prints the tables of docs/LAYOUTS.md (a test keeps them equal).
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tipcgen import descriptor
from tipcgen.configs import family_pick, import_compression, import_kept, lint
from tipcgen.configs.importer import import_descriptor
from tipcgen.core.errors import TipcgenError
from tipcgen.format import families
from tipcgen.format.config import TipcConfig, family_of
from tipcgen.render import ptq_runner, repository
from tipcgen.render.templating import environment

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPORA = (SHARED / "tipc-corpus", SHARED / "tipc-corpus-2")
WITH_RUNNERS = SHARED / "tipc-corpus-3"  # each suite's test_tipc/ with its runners: configs under configs/
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
    route: str = ""  # how import takes it: fields, ptq or kept (import_kept.route)
    back: str = ""  # every file: "byte" when import → init gives it back byte for byte, else why not
    corpus: str = ""  # the corpus folder it is in (tipc-corpus, tipc-corpus-2, tipc-corpus-3)

    @property
    def basic(self) -> bool:
        return self.outcome is not None


def _outcome(text: str, raw: bytes, name: str) -> str:
    try:
        _, desc = import_descriptor(text, name)
    except TipcgenError as exc:
        return str(exc).splitlines()[0]
    return "byte" if repository.render_config(desc).encode("utf-8", errors="surrogateescape") == raw else "differs"


_PLACEHOLDER = "schema_version: 1\nmodel_name: m\ngpu_list: '-1'\ntrain:\n  norm: train.py\ninference:\n  script: null\n"


def _back(text: str, raw: bytes, path: Path, name: str, runner: family_pick.Runner | None,
          specs: tuple = ()) -> tuple[str, str]:
    """(route, outcome): how import takes the file, and whether init writes it back byte for byte."""
    try:
        how = import_kept.route(text, runner, specs, name)
        if how == import_kept.FIELDS:
            _, desc = import_descriptor(text, name, runner)
            written = repository.render_config(desc)
        elif how == import_kept.PTQ:
            section = import_compression.import_ptq(text, name)
            desc = descriptor.load_text(_PLACEHOLDER + section, source=name)
            written = next(iter(ptq_runner.ptq_files([desc], environment()).values()))
        else:
            file = import_kept.kept_file(path, text)
            desc = descriptor.load_text(_PLACEHOLDER + import_kept.import_kept(text, name, file), source=name)
            written = repository.kept_files([desc])[desc.kept[0].rel]
    except TipcgenError as exc:
        return "refused", str(exc).splitlines()[0]
    return how, "byte" if written.encode("utf-8", errors="surrogateescape") == raw else "differs"


def _entry(root: Path, path: Path, cache: dict | None = None) -> Entry:
    name = str(path.relative_to(root))
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="surrogateescape")
    config = TipcConfig.parse(text)
    runner = family_pick.read_runner(path, None, cache) if cache is not None else None
    specs = family_pick.runner_specs(path, None, cache) if cache is not None else ()
    picked = family_of(config, *(runner or (None, "")))
    basic = config.kind in ("train_infer_python", "tutorial_32") and not any(q in path.name for q in QUANT_NAMES)
    route, back = _back(text, raw, path, name, runner, specs)
    if basic and cache is None:
        # Taken by its fields without a runner, _back already computed _outcome's import and render (the same
        # call, the same comparison): its answer is the outcome (half the sweep's time went to the repeat).
        outcome = back if route == import_kept.FIELDS and runner is None else _outcome(text, raw, name)
    else:
        outcome = None
    return Entry(name, name.split("/", 1)[0], kind_of(config.kind, path.name), picked.family.name if picked else None,
                 tuple(lint.lint_text(text, name, runner=runner, specs=specs)), outcome, route, back, root.name)


# A train_params file's kind by its name (they share the basic layout): the siblings of the basic chain.
_NAMED_KINDS = (("_ptq", "ptq"), ("_pact", "pact"), ("_kl", "kl_quant"), ("_amp", "amp"), ("_fleet", "fleet"),
                ("benchmark", "benchmark"), ("to_static", "dy2static"), ("_npu", "npu/xpu"), ("_xpu", "npu/xpu"),
                ("_dcu", "npu/xpu"), ("_mlu", "npu/xpu"))


def kind_of(kind: str, file_name: str) -> str:
    """The kind a table row counts a file under: config.kind, a train_params file by its name."""
    if kind in ("train_infer_python", "tutorial_32"):
        return next((named for part, named in _NAMED_KINDS if part in file_name), "basic")
    return kind


@functools.lru_cache(maxsize=1)
def sweep() -> tuple[Entry, ...]:
    return tuple(_entry(root, path) for root in CORPORA for path in sorted(root.rglob("*.txt")))


@functools.lru_cache(maxsize=1)
def sweep_all() -> tuple[Entry, ...]:
    """``sweep`` plus tipc-corpus-3's configs, each read with its suite's runner."""
    cache: dict = {}
    with_runners = tuple(_entry(WITH_RUNNERS, path, cache) for path in sorted(WITH_RUNNERS.rglob("*.txt"))
                         if "configs" in path.relative_to(WITH_RUNNERS).parts)
    return sweep() + with_runners


def available() -> bool:
    return all(root.is_dir() for root in (*CORPORA, WITH_RUNNERS))


def kind_table(entries: tuple[Entry, ...]) -> str:
    """Every file per suite and kind: how many, how many import → init gives back byte for byte, lint errors."""
    counts: Counter[tuple[str, str]] = Counter()
    byte: Counter[tuple[str, str]] = Counter()
    errors: Counter[tuple[str, str]] = Counter()
    for entry in entries:
        key = (entry.suite, entry.kind)
        counts[key] += 1
        byte[key] += entry.back == "byte"
        errors[key] += lint.has_errors(entry.findings)
    rows = ["| suite | kind | files | import → init byte for byte | files with a lint error |",
            "| --- | --- | --- | --- | --- |"]
    for (suite, kind), count in sorted(counts.items()):
        rows.append(f"| {suite} | {kind} | {count} | {byte[suite, kind]} ({100 * byte[suite, kind] // count} %) | "
                    f"{errors[suite, kind]} |")
    per_kind: Counter[str] = Counter()
    per_kind_byte: Counter[str] = Counter()
    for (_, kind), count in counts.items():
        per_kind[kind] += count
        per_kind_byte[kind] += byte[_, kind]
    for kind in sorted(per_kind):
        rows.append(f"| all | {kind} | {per_kind[kind]} | {per_kind_byte[kind]} "
                    f"({100 * per_kind_byte[kind] // per_kind[kind]} %) | "
                    f"{sum(v for (_, k), v in errors.items() if k == kind)} |")
    total, same = sum(counts.values()), sum(byte.values())
    rows.append(f"| all | all | {total} | {same} ({100 * same // total} %) | {sum(errors.values())} |")
    return "\n".join(rows) + "\n"


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
    print(table(sweep()))
    print(kind_table(sweep_all()), end="")
