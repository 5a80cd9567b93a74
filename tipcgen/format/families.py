"""Layout families: which layout a basic-chain config is written in, and how its suite's runner reads it.

A family is a slot table of ``layout.py`` (which line holds which key or value) plus the runner
semantics of its suite: which ``lines[N]`` the suite's ``test_train_inference_python.sh`` reads, and
with which parser (``func_parser_key``, ``func_parser_value``, ``func_parser_params``). ``lint`` and
``import`` pick the family from the repository's own runner where there is one (``runner_reads``
parses the ``lines[N]`` it reads), else from the file's headers and ``##`` lines; they say which
they picked and why. A file in no family gets one message naming what differs from the nearest
family (``no_family_message``), never a slot-shift error read against the wrong table.
The table of families and their corpus counts is docs/LAYOUTS.md.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tipcgen.format import layout, layout_check, runner_spec

if TYPE_CHECKING:
    from tipcgen.format.config import Line


@dataclass(frozen=True)
class Family:
    """One layout family.

    name: the descriptor's ``layout:`` value. suites: the repositories that write it. marks: the
    ``(index, parser)`` reads by which a suite's runner tells this family apart from the 51-line one
    (``key`` for ``func_parser_key``, ``value``, ``params``). header_marks: lines of the file itself that
    tell it apart (``index -> header name``, or ``"##"``). passes: what the suite's runner does with
    the lines it reads differently from the 51-line runner, for the docs and the runner.
    """

    name: str
    suites: tuple[str, ...]
    doc: str
    short: str = ""
    marks: tuple[tuple[int, str], ...] = ()
    header_marks: tuple[tuple[int, str], ...] = ()
    passes: tuple[str, ...] = ()

    @property
    def table(self) -> tuple[layout.Slot, ...]:
        return layout.LAYOUTS[self.name]

    @property
    def lines(self) -> int:
        return len(self.table)


FAMILIES: tuple[Family, ...] = (
    Family("standard", ("PaddleOCR", "PaddleClas", "PaddleNLP", "insightface"),
           "the 51-line layout (SPEC 1.1): train_params, eval_params and infer_params headers at idx 0, 22, 26"),
    Family("paddleseg", ("PaddleSeg",),
           "51 lines; an export_params header at idx 26 and the infer_params header at idx 35",
           "PaddleSeg's 51 lines: export_params at idx 26",
           header_marks=((26, "export_params"), (35, "infer_params")),
           passes=("idx 35 is the infer_params header: the runner reads it as inference_dir (empty)",
                   "the runner passes `<model dir>/deploy.yaml` with idx 46's key",
                   "idx 50's key gets a results path the runner builds; idx 51 (beyond the 51 lines) reads empty")),
    Family("paddlevideo", ("PaddleVideo",),
           "the 51-line layout; its runner passes idx 11 to train as a flag and appends idx 46 and 50 to the model dir",
           "PaddleVideo's runner reads the 51 lines",
           marks=((11, "key"), (19, "key"), (46, "value")),
           passes=("idx 11 is a second train flag (train_param_key2), not train_infer_img_dir",
                   "idx 19 is the amp trainer (amp_key: its command, exported with norm_export)",
                   "idx 46's and idx 50's values are file names under the exported model dir",
                   "idx 6 and 8 are read whole (func_parser_value); whole_train modes drop them")),
    Family("paddledetection", ("PaddleDetection",),
           "the 51-line layout; its runner passes idx 27's and 28's values to export and loops over idx 37's infer modes",
           "PaddleDetection's runner reads the 51 lines",
           marks=((27, "value"), (28, "value")),
           passes=("idx 27's and 28's values (export dir, weights) are passed to whole_infer's export",
                   "idx 35 is the kl_quant export command; idx 37 lists infer modes (norm, pact, fpgm, distill, kl_quant)",
                   "idx 45 is the GPU run mode (paddle, trt_fp32, trt_fp16, trt_int8), passed with its key",
                   "train and export get `filename=<model_name>`; idx 12's flag goes last")),
    Family("paddlegan", ("PaddleGAN",),
           "the 51-line layout with `##` at idx 4 (no train device line); its runner only runs norm_train",
           "PaddleGAN's runner reads the 51 lines",
           marks=((28, "value"),), header_marks=((4, "##"),),
           passes=("idx 4 is `##`: no train device flag", "only the norm trainer runs (idx 15)",
                   "idx 27's key and idx 28's value are passed as `KEY PATH` to export",
                   "CPU inference passes only the device and the model dir")),
    Family("tutorial", ("models (tutorials/*/test_tipc)",),
           "the 32-line layout of the paper-reproduction tutorials (SPEC 1.6)",
           "the 32-line layout of the models tutorial template",
           header_marks=((15, "eval_params"), (18, "infer_params"))),
)
BY_NAME = {family.name: family for family in FAMILIES}


@dataclass(frozen=True)
class Pick:
    """The family a file is read in, and how it was picked (shown by lint and import)."""

    family: Family
    how: str

    def describe(self) -> str:
        return f"layout family {self.family.name} ({self.how})"


# `var=$(func_parser_value "${lines[12]}")`, `$(func_parser_params "${lines[5]}" "${MODE}")`: a runner's reads.
# ASCII digits only (bash reads no other); the index itself is read by runner_spec.index_of (bounded).
_READ = re.compile(r"\$\(\s*func_parser_(key|value|params|value_lite)\s+\"?\$\{lines\[([0-9]+)\]\}\"?[^)\n]*\)", re.ASCII)
_SPAN = re.compile(r"NR==1,\s*NR==([0-9]+)", re.ASCII)


@dataclass(frozen=True)
class RunnerReads:
    """What a runner reads: ``(index, parser)`` pairs, and how many lines it loads (``awk NR==1, NR==N``)."""

    reads: frozenset[tuple[int, str]]
    span: int | None

    @property
    def last(self) -> int:
        return max((index for index, _ in self.reads), default=-1)


def runner_reads(text: str) -> RunnerReads | None:
    """The basic-chain reads of a runner script, up to its klquant block (which re-reads lines[1..17]
    of another file); ``None`` when it reads no ``lines[N]`` (tipcgen's own runner, another chain)."""
    head = text.split("klquant_whole_infer\" ]; then", 1)[0]
    reads = frozenset((index, parser) for parser, digits in _READ.findall(head)
                      if (index := runner_spec.index_of(digits)) is not None)  # one bounded integer parser
    if not reads:
        return None
    span = _SPAN.search(head)
    return RunnerReads(reads, runner_spec.index_of(span.group(1)) if span else None)


def _mark_holds(logical: Sequence[Line], index: int, name: str) -> bool:
    if index >= len(logical):
        return False
    line = logical[index]
    return line.kind == "sep" if name == "##" else line.header_name == name


def _holds_marks(logical: Sequence[Line], family: Family) -> bool:
    return all(_mark_holds(logical, index, name) for index, name in family.header_marks)


def _structure_holds(logical: Sequence[Line], family: Family) -> bool:
    """Every header and ``##`` of the family's table that the file reaches sits at its index."""
    return layout_check.first_misplaced(logical, family.table) is None and _holds_marks(logical, family)


def _runner_family(reads: RunnerReads) -> Family | None:
    """The family whose marks the runner reads (all of them); ``None``: no family's marks."""
    for family in FAMILIES:
        if family.marks and all(mark in reads.reads for mark in family.marks):
            return family
    return None


def pick(logical: Sequence[Line], runner: RunnerReads | None = None, runner_name: str = "") -> Pick | None:
    """The family of a ``train_params`` file: from the runner's reads where given, else from the
    file's headers; ``None`` when the file is in no family (``nearest`` says what differs)."""
    if runner is not None:
        marked = _runner_family(runner)
        read = ", ".join(f"lines[{i}] by func_parser_{p}" for i, p in sorted(marked.marks)) if marked else ""
        if marked is not None and _structure_holds(logical, marked):
            return Pick(marked, f"{runner_name} reads {read}")
        tutorial_marks = {slot.index for slot in BY_NAME["tutorial"].table if slot.kind != "kv"}
        if runner.last < layout.TUTORIAL_32_LINES and runner.last >= 0:
            # a tutorial runner reads no header or '##' of the tutorial layout (one that does reads another layout)
            if _structure_holds(logical, BY_NAME["tutorial"]) and not {i for i, _ in runner.reads} & tutorial_marks:
                return Pick(BY_NAME["tutorial"], f"{runner_name} reads lines[0..{runner.last}]")
        else:
            for family in FAMILIES:
                if not family.marks and family.name != "tutorial" and _structure_holds(logical, family):
                    return Pick(family, f"{runner_name} reads lines[0..{runner.last}]; the headers sit where "
                                f"{family.name} has them")
    for family in sorted(FAMILIES, key=lambda f: -len(f.header_marks)):
        if _structure_holds(logical, family):
            how = "from the headers" + (": " + ", ".join(
                f"{name} at idx {index}" for index, name in family.header_marks) if family.header_marks else "")
            if runner is not None and runner.last >= 0:  # the runner was read, and fits no family: say so
                how += (f"; {runner_name or 'its runner'} reads lines[0..{runner.last}], which fits no family's "
                        "layout (its own layout: the runner's reads decide, lint says runner-layout where it "
                        "reads the file as intended)")
            return Pick(family, how)
    return None


def misses(logical: Sequence[Line], family: Family) -> list[tuple[layout_check.Anchor, int | None]]:
    """The headers and ``##`` of a family's table that are not at their index, with how far away they sit."""
    out = []
    for anchor in layout_check.structure(family.table):
        if anchor.index < len(logical) and not layout_check.holds(logical[anchor.index], anchor):
            out.append((anchor, layout_check.offset_of(logical, anchor)))
    for index, name in family.header_marks:
        if index < len(logical) and not _mark_holds(logical, index, name) and all(a.index != index for a, _ in out):
            anchor = layout_check.Anchor(index, (name,), "sep" if name == "##" else "header")
            out.append((anchor, layout_check.offset_of(logical, anchor)))
    return sorted(out, key=lambda item: item[0].index)


def candidates(kind: str) -> tuple[Family, ...]:
    """The families a config of this kind (``config.kind``: where its eval header sits) can be in."""
    tutorial = kind == "tutorial_32"
    return tuple(f for f in FAMILIES if (f.table is layout.TUTORIAL_32) == tutorial)


def nearest(logical: Sequence[Line], kind: str = "train_infer_python"
            ) -> tuple[Family, list[tuple[layout_check.Anchor, int | None]]]:
    """The family (of this kind) whose structure the file misses least (ties: the first)."""
    scored = [(len(misses(logical, family)), i, family) for i, family in enumerate(candidates(kind))]
    _, _, family = min(scored)
    return family, misses(logical, family)


def is_shift(found: list[tuple[layout_check.Anchor, int | None]]) -> bool:
    """The misses are one shift: the first misplaced header or ``##`` sits 1-3 lines away."""
    return bool(found) and found[0][1] is not None


def no_family_message(logical: Sequence[Line], kind: str = "train_infer_python") -> str:
    """What differs from the nearest family, for a file in none (one message, every difference named)."""
    family, found = nearest(logical, kind)
    shown = "; ".join(f"idx {anchor.index} is {_show(logical[anchor.index])} where {family.name} has "
                      f"{layout_check.describe(anchor)}" for anchor, _ in found[:4])
    more = f" (and {len(found) - 4} more)" if len(found) > 4 else ""
    return (f"is in no known layout family (docs/LAYOUTS.md): the nearest is {family.name} "
            f"({', '.join(family.suites)}), and {shown}{more}")


def _show(line: Line) -> str:
    if line.header_name is not None:
        return f"the {line.header_name} header"
    return "'##'" if line.kind == "sep" else repr(line.text.strip()[:40])


def structure_text(family: Family) -> str:
    """``train_params@0, ##@13, ...``: the headers and ``##`` of a family (docs/LAYOUTS.md)."""
    marks = dict(family.header_marks)
    items = [(a.index, a.names[0]) for a in layout_check.structure(family.table)]
    items += [(i, n) for i, n in marks.items() if all(i != j for j, _ in items)]
    return ", ".join(f"{name}@{index}" for index, name in sorted(items))


def runner_tables() -> list[dict]:
    """The layout tables of tipcgen's runner (test_tipc/tipc_layouts.json, which tipc_preflight.py checks a config
    with), the first the default: name, lines (the non-blank line count), anchors (index, ``key/key``), slots (name
    -> index) and value shapes (index, what, pattern). A family whose tables equal an earlier one's is only named on
    that one (``also``): the runner picks the first layout on a tie, so it could never be picked."""
    out: list[dict] = []
    for name, anchors in layout.RUNNER_ANCHORS.items():
        kv = [slot for slot in layout.slots_of(name) if slot.kind == "kv"]
        this = {"name": name, "lines": len(layout.slots_of(name)), "also": [],
                "anchors": [(slot.index, "/".join(slot.anchors)) for slot in anchors],
                "slots": {slot.name: slot.index for slot in kv if slot.name not in layout.RUNNER_UNPASSED[name]},
                "shapes": [(slot.index, slot.value[0], slot.value[1].pattern) for slot in kv if slot.value is not None]}
        same = next((seen for seen in out if all(seen[k] == this[k] for k in ("lines", "anchors", "slots", "shapes"))),
                    None)
        if same is not None:
            same["also"].append(name)
            continue
        out.append(this)
    return out
