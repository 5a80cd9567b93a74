"""One reading of a config against its repository's runners, shared by ``lint`` and ``import``.

The runners are the specification (``format/runner_spec.py``): a config the basic runner would misread
but another runner of its folder reads as intended (PaddleScience's ``benchmark_train.sh``, which
splits its config into words) is that runner's config: no slot error, kept line by line on import. A
basic config whose chosen trainer line is null but which the basic runner trains through a ``${MODE}``
branch of its own lines (PaddleRec's ``benchmark_train`` branch: ``run_mode``, ``gpu_config`` after the
layout) is no error either. Everything else is read as before (family_pick, the layout families).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tipcgen.format import paths, runner_spec
from tipcgen.format.config import is_null

Specs = Sequence[runner_spec.Spec]
_BASIC = Path(paths.BASIC_RUNNER).name


def other_runner(text: str, specs: Specs) -> runner_spec.Spec | None:
    """The runner (not the basic one) that reads this config as intended, where the basic one does not."""
    basic = next((s for s in specs if s.name == _BASIC), None)
    if basic is not None and runner_spec.reads_as_intended(basic, text):
        return None
    # Its anchors past the first lines (model_name, python: every config has them where every runner reads them),
    # or its reads the config's layout line for line (runner_spec.layout_fit), nothing misread.
    return next((s for s in specs if s.name != _BASIC and (runner_spec.reads_as_intended(s, text, first=3) or (
        runner_spec.layout_fit(s, text) and not runner_spec.misreads(s, text)))), None)


def trained_in_mode(text: str, specs: Specs, layout_lines: int) -> tuple[str, tuple[runner_spec.Read, ...]] | None:
    """A ``${MODE}`` branch of the basic runner that reads lines after the layout (how it trains there),
    where the config holds at least two of them, each with a value (a later one it lacks reads empty,
    as in a branch that does not use it): ``(mode, reads)``."""
    basic = next((s for s in specs if s.name == _BASIC), None)
    if basic is None:
        return None
    items = runner_spec.elements(text, basic.split)
    for mode, reads in runner_spec.mode_reads(basic, layout_lines).items():
        values = [r for r in reads if r.parser != "key" and r.index < len(items)]
        if len({r.index for r in values}) >= 2 and all(
                ":" in items[r.index] and not is_null(items[r.index].split(":", 1)[1]) for r in values):
            return mode, reads
    return None


def describe(spec: runner_spec.Spec, text: str) -> str:
    held, _ = runner_spec.fit(spec, text)
    named = ", ".join(f"lines[{i}] {var}" for i, var in sorted({(r.index, r.var) for r in held}))
    if runner_spec.layout_fit(spec, text):
        lines = runner_spec.span(spec)
        named = f"it reads all {lines} lines, skipping only the headers and '##'" + (f"; {named}" if named else "")
    return named


_TIPC_PARSERS = ("key", "value", "params", "value_lite")  # func_parser_*: split on every ':'


def own_parsers(specs: Specs) -> frozenset[int]:
    """The lines the basic runner reads only with functions of its own (PaddleRS's ``parse_second_value`` of
    ``model_name:cd:bit``): what a second ':' means there is that function's, not func_parser_value's."""
    basic = basic_runner(specs)
    if basic is None:
        return frozenset()
    by_index: dict[int, set[str]] = {}
    for read in basic.reads:
        if read.load == 1:
            by_index.setdefault(read.index, set()).add(read.parser)
    return frozenset(i for i, parsers in by_index.items() if not parsers & set(_TIPC_PARSERS))


def basic_runner(specs: Specs) -> runner_spec.Spec | None:
    return next((s for s in specs if s.name == _BASIC), None)


def runner_misread(text: str, specs: Specs) -> tuple[runner_spec.Read, str] | None:
    """The first line the basic runner misreads (runner_spec.misreads), where it is the config's runner."""
    basic = basic_runner(specs)
    if basic is None or other_runner(text, specs) is not None:
        return None
    found = runner_spec.misreads(basic, text)
    return found[0] if found else None


def runner_layout(text: str, specs: Specs, layout_lines: int, in_family: bool = True) -> runner_spec.Spec | None:
    """The basic runner, where it reads more lines in every mode than the layout family has (or the config is
    in no family: a short layout of a reproduction repository) and reads this config as intended: the runner's
    own layout, which the family's slot table cannot check."""
    basic = basic_runner(specs)
    if basic is None or (in_family and runner_spec.main_span(basic) <= layout_lines):
        return None
    return basic if runner_spec.reads_as_intended(basic, text) else None


def misread_message(spec_name: str, read: runner_spec.Read, what: str) -> str:
    into = f" into {read.var}" if read.var else ""
    return (f"{spec_name} reads lines[{read.index}]{into}, but {what}: a line is missing or extra above it, so the "
            "runner reads it (and the lines after it) from a neighbour")
