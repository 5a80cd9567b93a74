"""The lint rules that read a config as its repository's runners do (configs/reading.py, format/runner_spec.py).

An error stands only where the config's own runner misreads a line it reads: a config another runner of
its folder reads as intended (``other-runner``), one its runner trains in a ``${MODE}`` branch of its own
lines (``null-value`` warning), one in the runner's own longer layout (``runner-layout``, info) is no
slot error; a line the runner misreads is a ``slot-shift``. A config of another kind that another runner of its
folder reads line for line is that runner's (``other-runner``); a null trainer its own ``${MODE}`` never reads is
a warning. Run by lint's ``_Linter`` (``RunnerRules(linter).run()``).
"""
from __future__ import annotations

import re
from typing import Any

from tipcgen.configs import reading
from tipcgen.format import runner_spec

RUNNER_LAYOUT = "runner-layout"  # info: a layout of the repository's own runner, read as intended
TRAINED_IN_MODE = "MODE"  # the null-value warning of a config its runner trains in a ${MODE} branch


class RunnerRules:
    """The runner rules of one file, reporting to its linter (lint._Linter: text, specs, findings, logical, table,
    numbers; add(line, rule, severity, message), line_of(index))."""

    def __init__(self, linter: Any) -> None:
        self.linter = linter

    def run(self) -> None:
        """An error stands only where the config's own runner misreads a line it reads (configs/reading.py):
        a config another runner of its folder reads as intended, or one its runner trains in a ${MODE}
        branch of its own lines, is no slot error."""
        if not self.linter.specs:
            return
        self.runner_reading()
        self.unused_shift()
        own = reading.own_parsers(self.linter.specs)
        if own:  # a second ':' on a line the runner splits with its own function is that function's business
            lines = {self.linter.line_of(i) for i in own}
            self.linter.findings = [f for f in self.linter.findings if not (f.rule == "colon-in-value" and f.line in lines)]

    def _index(self, line: int) -> int | None:
        """The logical index of an editor line (None: a blank line, or past the end)."""
        return self.linter.numbers.index(line - 1) if line - 1 in self.linter.numbers else None

    def other_kind(self) -> None:
        """A config of another kind (PTQ, KL, ...) that a runner of its folder other than the basic one reads as
        intended (configs/reading.other_runner: PaddleDetection's 20-line PTQ layout, read by its
        test_ptq_inference_python.sh) is that runner's: tipcgen's own layout of the kind does not apply."""
        if not self.linter.specs:
            return
        other = reading.other_runner(self.linter.text, self.linter.specs)
        if other is None:
            return
        layout_rules = ("slot-shift", "unknown-layout", "anchor-key", "null-value", "infer-device")
        self.linter.findings = [f for f in self.linter.findings if f.rule not in layout_rules]
        self.linter.add(1, "other-runner", "warning",
                        f"read by {other.name} as intended ({reading.describe(other, self.linter.text)}), not in "
                        "tipcgen's layout of its kind: its slots are not checked against it; import keeps it line by line")

    def runner_reading(self) -> None:
        layout_rules = ("slot-shift", "unknown-layout")
        if any(f.rule in layout_rules for f in self.linter.findings):
            other = reading.other_runner(self.linter.text, self.linter.specs)
            if other is not None:
                self.linter.findings = [f for f in self.linter.findings if f.rule not in layout_rules]
                self.linter.add(1, "other-runner", "warning",
                         f"read by {other.name} as intended ({reading.describe(other, self.linter.text)} in place), not "
                         "by the basic runner's layout: its slots are not checked against it")
                return
        misread = reading.runner_misread(self.linter.text, self.linter.specs)
        if misread is not None:
            longer = runner_spec.main_span(reading.basic_runner(self.linter.specs)) > len(self.linter.table)
            if longer or not any(f.rule == "slot-shift" for f in self.linter.findings):  # the runner's layout: its message
                read, what = misread
                self.linter.findings = [f for f in self.linter.findings if f.rule not in layout_rules]
                self.linter.add(self.linter.line_of(min(read.index, len(self.linter.logical) - 1)), "slot-shift", "error",
                         reading.misread_message(reading.basic_runner(self.linter.specs).name, read, what))
            return
        own = reading.runner_layout(self.linter.text, self.linter.specs, len(self.linter.table),
                                    in_family=not any(f.rule == "unknown-layout" for f in self.linter.findings))
        if own is not None:  # the runner's own longer layout: the family's table would find shifts that are none,
            # except where the runner agrees with the family: a header or '##' of the family's table at a line the runner
            # skips, which the config holds elsewhere (a line missing or extra above it), is a shift for both
            skipped = {i for i in range(runner_spec.span(own)) if i not in {r.index for r in own.reads if r.load == 1}}
            agreed = [f for f in self.linter.findings if f.rule == "slot-shift" and self._index(f.line) in skipped
                      and self._index(f.line) < runner_spec.main_span(own)]
            self.linter.findings = [f for f in self.linter.findings if f in agreed or f.rule not in (
                *layout_rules, "infer-value-shape", "anchor-key")]
            if agreed:
                return
            self.linter.add(1, RUNNER_LAYOUT, "info",
                     f"in no built-in layout family; {own.name} reads it as intended "
                     f"({reading.describe(own, self.linter.text)} in place): import keeps it line by line")
            return
        self.untrained_mode()
        trainer = [f for f in self.linter.findings if f.rule == "null-value" and f.message.startswith("trainer ")]
        branch = reading.trained_in_mode(self.linter.text, self.linter.specs, len(self.linter.table)) if trainer else None
        if branch is not None:
            mode, reads = branch
            self.linter.findings = [f for f in self.linter.findings if f not in trainer]
            read = ", ".join(sorted({f"lines[{r.index}] {r.var}" for r in reads}))
            for f in trainer:
                command = re.search(r"command line (\S+): is null", f.message)
                self.linter.add(f.line, "null-value", "warning",
                         f"{command.group(1) if command else 'the trainer'}: is null: the runner trains this config "
                         f"only in its {TRAINED_IN_MODE}={mode} branch ({read}); the other modes train nothing")

    def untrained_mode(self) -> None:
        """A null trainer line that the config's own ${MODE} never reads (runner_spec.tied_mode: PaddleDetection's
        KL config runs in klquant_whole_infer, which trains nothing) is a warning, not an error."""
        basic = reading.basic_runner(self.linter.specs)
        index = self.linter.slot_index.get("trainer")
        null = [f for f in self.linter.findings if f.rule == "null-value" and f.severity == "error"
                and f.message.startswith("trainer:")]
        if basic is None or index is None or not null:
            return
        tied = runner_spec.tied_mode(basic, self.linter.text, index)
        if tied is None:
            return
        mode, var, value = tied
        for finding in null:
            self.linter.findings.remove(finding)
            self.linter.add(finding.line, "null-value", "warning",
                            f"trainer: is null: {basic.name} runs this config in its MODE={mode} branch ({var} is "
                            f"{value}), which never reads the trainer line; the other modes train nothing")

    def unused_shift(self) -> None:
        """A shift only among lines the runner never uses for this config (every use under an ``if [ ${X} !=
        "null" ]`` whose X, read above the shift, is null here: export and inference null) is a warning."""
        basic = reading.basic_runner(self.linter.specs)
        shifts = [f for f in self.linter.findings if f.rule == "slot-shift" and f.severity == "error"]
        if basic is None or not shifts:
            return
        unused = runner_spec.unused(basic, self.linter.text)
        guard_at = {r.var: r.index for r in basic.reads if r.load == 1}
        misread = reading.runner_misread(self.linter.text, self.linter.specs)  # where the runner's reading moves, if
        kept = []  # earlier than the finding: a guard read below it is read from a neighbour too
        for finding in shifts:
            start = self.linter.numbers.index(finding.line - 1) if finding.line - 1 in self.linter.numbers else len(self.linter.logical) - 1
            start = min(start, misread[0].index) if misread is not None else start
            after = sorted({r.index for r in basic.reads if r.load == 1 and r.index >= start})
            why = sorted(set().union(*(unused[i] for i in after if i in unused)))
            # Only a null guard says a line goes unused: a line this runner uses nowhere may be used by what it
            # sources (common_func.sh), so it never makes a shift harmless on its own.
            at = {w: (runner_spec.guard_index(basic, w) if runner_spec.MEMBER in w else guard_at.get(w)) for w in why}
            if why and all(i in unused for i in after) and all((i if i is not None else -1) < start for i in at.values()):
                kept.append((finding, _guards_words(why)))
        for finding, named in kept:
            self.linter.findings.remove(finding)
            self.linter.add(finding.line, "unused-shift", "warning",
                     f"{finding.message}; but {basic.name} never uses these lines for this config (it uses them only "
                     f"where {named}), so nothing is misread")


def _guards_words(guards: list[str]) -> str:
    """The guards in words: ``X and Y is not null``, and (member guards ``X=a|b``) ``, or where X is a or b``."""
    nulls = [g for g in guards if runner_spec.MEMBER not in g]
    parts = [f"{' and '.join(nulls)} is not null"] if nulls else []
    for guard in guards:
        if runner_spec.MEMBER in guard:
            var, values = guard.split(runner_spec.MEMBER, 1)
            parts.append(f"{var} is {' or '.join(values.split('|'))}")
    return ", or where ".join(parts)
