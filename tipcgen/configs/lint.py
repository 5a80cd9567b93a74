"""Lint TIPC config text for what silently breaks the upstream bash runners (SPEC §1.1, §8, §10).

An error means an upstream runner would run the wrong thing or skip steps without saying so;
a warning means the file works upstream but is fragile or non-portable. ``lint`` exits 1 on
any error. Slot rules run on basic-chain files in every layout family (docs/LAYOUTS.md: the
51-line one, PaddleSeg's, the 32-line tutorial one, ..., each by its own slot table, picked from
the repository's runner or the headers); byte-level rules run on every file.

| rule | severity | what it catches |
|---|---|---|
| ``slot-shift`` | error | a missing or extra line moves every later slot (see below) |
| ``anchor-key`` | warning | an anchor slot holds another key, but the lines around it are in place |
| ``short-file`` | warning | the file ends after idx 21 or 25 (train-only, train+eval): later slots read empty |
| ``colon-in-value`` | warning | a 2nd ``:``; OCR/Clas/NLP ``func_parser_value`` keeps only what precedes it |
| ``device-list-length`` | warning | idx 4 has several values, but not one per ``gpu_list`` entry |
| ``unknown-mode`` | error | idx 6/8 name a mode no runner selects (warning: a legacy name) |
| ``python-version`` | warning | ``python:`` pins a minor version (``python3.7``) |
| ``missing-script`` | error | a command slot's ``.py`` script is missing under ``repo_root`` (given only) |
| ``unknown-flag`` | error | ``lint --root``: a key the runner passes that its script's ``--help`` lacks and the script refuses or drops (``parse_known_args``, ``script_rest``; ``flag_check``) |
| ``flags-unchecked`` | warning | ``lint --root``: a script whose flags cannot be read (no argparse, a failing ``--help``), or a key its ``--help`` lacks that the script hands on to other code (``parse_known_args``) |
| ``infer-device`` | error | an idx-40 value other than True/False/gpu/cpu (or ``null``) |
| ``model-name`` | error | a ``model_name`` ``run`` refuses (``descriptor.schema.is_model_name``, init's rule too; warning when only the part after a 2nd ``:`` is at fault) |
| ``null-value`` | error | ``model_name``, ``python``, ``gpu_list``, ``trainer`` or a chosen trainer's command is ``null``/``None``/empty |
| ``trailing-space`` | error | whitespace around ``:`` or after a list value (warning elsewhere) |
| ``crlf`` | error | CRLF line endings |
| ``fullwidth-punct`` | error | full-width ``: | , = ;`` (U+FF1A, FF5C, FF0C, FF1D, FF1B) or U+3000 |
| ``whitespace-line`` | warning | a line of only spaces: it looks blank, but bash counts it |
| ``bom`` | warning | a UTF-8 byte-order mark, glued to the first key |
| ``empty-file`` | warning | no lines at all |
| ``conflict-marker`` | error | a ``<<<<<<<``/``=======``/``>>>>>>>`` line (``tipcgen update --conflict markers``) |
| ``infer-value-shape`` | warning | an idx 41-45 value of another shape that no shift explains: passed to the script as it is |
| ``unknown-layout`` | warning | a ``train_params`` file in no layout family (docs/LAYOUTS.md): its slots are not checked |
| ``runner-layout`` | info | the basic runner reads more lines than any family has, and reads this file as intended |
| ``unused-shift`` | warning | a shift only among lines the runner never uses for this config (their uses need a null ``${X}`` not null) |
| ``other-runner`` | warning | another runner of its folder reads the file as intended (``configs/reading.py``), the basic one would not |
| ``family`` | info | (``tipcgen lint`` only) the layout family the file is read in, and how it was picked |
| ``unused-silence`` | warning | (``tipcgen lint`` only) a line of ``.tipcgen-lint`` that silenced no finding (``lint_silence.py``; ruff's unused-noqa) |
| ``not-position-checked`` | info | (``tipcgen lint`` only) a kind of config (paddle2onnx, serving, cpp, lite, infer_python, ...) whose lines' positions tipcgen has no table for: a deleted or added line is not found; only the byte-level rules ran |

Why these severities (what the upstream runners do):

* ``slot-shift``: the runner reads every later slot from its neighbour and skips export and
  inference without a failure line (SPEC §8.1). Found by anchor keys 1-3 lines early or late,
  a trailing section starting inside idx 40-50, a file ending inside a section, or idx 41-45
  values of the wrong shape that all fit one line early or late from the first odd one on (the
  keyless inference block: on/off, counts, precision). After a shift the slot-value rules are not run: every value
  they would read is a neighbour's. The anchors are the layout family's (``families.py``): picked
  from the repository's runner (the ``lines[N]`` it reads) where there is one, else from the headers.
* ``infer-value-shape``: a suite's runner passes the value to its script as it is (PaddleDetection's
  ``--run_mode:paddle|trt_fp32|trt_fp16|trt_int8`` at idx 45), so one odd value is no error.
* ``unknown-layout``: a layout tipcgen has no table for; the message names what differs from the
  nearest family. A warning: its own runner may run it as intended.
* ``anchor-key``: the runners read values by position, never keys, so a renamed key in place
  (OCR ``det_r18_ct``'s idx 16-17) runs fine.
* ``colon-in-value``: hundreds of working Clas files carry ``pretrained_model_url:https://…``;
  Det's parser keeps the whole remainder. Non-portable, not broken.
* ``device-list-length``: the idx-4 list pairs with ``gpu_list`` by position; extra values
  are ignored and missing ones drop the device flag (the script default applies). A single
  value is the upstream norm (495 corpus files pair ``0|0,1`` with one value).
* ``unknown-mode``: ``func_parser_params`` returns "" for a mode it does not find, so a typo
  silently drops the flag for the intended mode (e.g. trains with the script's default epochs).
* ``infer-device`` / ``trailing-space`` on list slots: ``cpu `` or ``cuda`` fall through to
  "Does not support hardware" and every inference case is skipped (SPEC §10.1); a trailing
  space in a looped value also splits the log path. In a command or a plain flag value the
  space is harmless after ``eval``; in other kinds a list/flag line only gets a warning.
* ``null-value``: ``trainer:null`` (or ``norm_train:null`` under ``trainer:norm_train``) trains
  nothing, and the chain still ends without a failure line; ``python:null`` runs ``null``.
* ``crlf``: ``-1\r`` is 3 characters, so the runner takes the multi-GPU branch (SPEC §10.2).
* ``fullwidth-punct``: the runners split only on ASCII ``:`` and ``|`` (PaddleGAN PR #637).

Corpus calibration (tests/test_lint.py, tests/test_layouts.py): over both corpus folders no error
but ``slot-shift`` on ``ch_PP-OCRv4_server_rec_ampO2_ultra``. The figures per rule are in the report.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tipcgen.configs import family_pick, import_dy2static, lint_compression, reading
from tipcgen.configs.lint_runners import RunnerRules
from tipcgen.configs.family_pick import Runner
from tipcgen.configs.lint_slots import SlotRules
from tipcgen.core import inputs
from tipcgen.core.text import json_text, quoted
from tipcgen.format import compression, families, layout, runner_spec
from tipcgen.format.chains import DY2STATIC
from tipcgen.format.config import Line, TipcConfig, family_of
from tipcgen.format.layout_check import Anchor, anchors_of, describe, find_shift, holds, infer_shapes

if TYPE_CHECKING:
    from tipcgen.configs.flag_check import Memo

# Full-width colon, vertical line, comma, equals sign, semicolon and the ideographic space.
_FULLWIDTH = {"\uff1a": ":", "\uff5c": "|", "\uff0c": ",", "\uff1d": "=", "\uff1b": ";", "\u3000": " "}
_PINNED_PYTHON = re.compile(r"^python\d+\.\d+$")
_CONFLICT_MARKER = re.compile(r"^(<{7,}|>{7,}|\|{7,})( |$)|^={7,}$")  # git merge-file --marker-size >= 7

@dataclass(frozen=True)
class Finding:
    """One problem: ``line`` is the 1-based physical line an editor shows."""

    path: str
    line: int
    rule: str
    severity: str
    message: str


# A train-only file ends after the idx-21 `##`, a train+eval file after the idx-25 `##`.
_SECTION_ENDS = (layout.SLOT_BY_NAME["sep_trainer"].index + 1, layout.SLOT_BY_NAME["sep_eval"].index + 1)


class _Linter:
    """Collects the findings for one file; ``line_of`` maps logical indices to editor lines."""

    def __init__(self, text: str, path: str, repo_root: Path | None, runner: Runner | None = None,
                 specs: reading.Specs = ()) -> None:
        self.text = text
        self.specs = specs
        self.path = path
        self.repo_root = repo_root
        self.config = TipcConfig.parse(text)
        self.logical = self.config.logical_lines()
        self.numbers = [number for number, line in enumerate(self.config.lines) if line.text]
        self.kind = self.config.kind
        self.pick = family_of(self.config, *(runner or (None, "")))
        self.table = layout.LAYOUTS[self.pick.family.name if self.pick else layout.LAYOUT_OF_KIND.get(self.kind, "standard")]
        self.slot_index = {slot.name: slot.index for slot in self.table if slot.kind == "kv"}
        self.findings: list[Finding] = []

    def add(self, line: int, rule: str, severity: str, message: str) -> None:
        self.findings.append(Finding(self.path, line, rule, severity, message))

    def line_of(self, index: int) -> int:
        return self.numbers[index] + 1 if index < len(self.numbers) else len(self.config.lines)

    def run(self) -> list[Finding]:
        self.byte_rules()
        if self.kind in layout.LAYOUT_OF_KIND:
            if self.pick is None and not self.nearest_shift():
                self.add(1, "unknown-layout", "warning",
                         f"{families.no_family_message(self.logical, self.kind)}; tipcgen cannot check its slots")
            else:  # a family's table, or (a shift) the nearest family's, whose anchors then find the shift
                self.anchor_rules(anchors_of(self.table), len(self.table))
                if not any(finding.rule == "slot-shift" for finding in self.findings):
                    self.inference_block()  # the tutorial layout has no keyless inference block
                if not any(finding.rule == "slot-shift" for finding in self.findings):
                    SlotRules(self).run()  # after a shift every slot holds its neighbour's line: only noise
            RunnerRules(self).run()
        elif self.kind in compression.KINDS:  # the PTQ configs: their own layouts and rules
            lint_compression.lint(self.config, lambda index, *finding: self.add(self.line_of(index), *finding))
            RunnerRules(self).other_kind()  # a layout of its own runner (PaddleDetection's 20-line PTQ)
        elif self.kind == DY2STATIC:  # PaddleClas's train_dy2static_python.txt
            import_dy2static.lint(self.config, lambda index, *finding: self.add(self.line_of(index), *finding))
        return sorted(self.findings, key=lambda f: (f.line, f.rule))

    def nearest_shift(self) -> bool:
        """In no family: read it against the nearest family when a 1-3 line shift explains the difference."""
        family, missed = families.nearest(self.logical, self.kind)
        if not families.is_shift(missed):
            return False
        self.table = family.table
        self.slot_index = {slot.name: slot.index for slot in self.table if slot.kind == "kv"}
        return True

    # -- every file -------------------------------------------------------------------------
    def byte_rules(self) -> None:
        lines = self.config.lines
        if not self.logical:
            self.add(1, "empty-file", "warning", "the file has no lines: the runner has nothing to read")
            return
        if lines[0].text.startswith("\ufeff"):
            self.add(1, "bom", "warning",
                     "UTF-8 byte-order mark: bash keeps it, glued to the first key; save without BOM")
        crlf = [number for number, line in enumerate(lines) if line.text.endswith("\r")]
        if crlf:
            self.add(crlf[0] + 1, "crlf", "error",
                     f"CRLF line endings ({len(crlf)} lines): bash keeps the \\r in every value; save with LF")
        for number, line in enumerate(lines):
            self.line_rules(number + 1, line)

    def line_rules(self, number: int, line: Line) -> None:
        text = line.text
        if text and not text.strip():
            self.add(number, "whitespace-line", "warning",
                     "a line of only whitespace looks blank but the runner counts it; delete it")
            return
        if _CONFLICT_MARKER.match(text):
            self.add(number, "conflict-marker", "error",
                     f"merge conflict marker {text.strip()[:7]!r}: keep one side and delete the marker lines")
            return
        if not text.isascii():
            for char, ascii_char in _FULLWIDTH.items():
                if char in text and line.header_name is None:
                    self.add(number, "fullwidth-punct", "error",
                             f"full-width {char!r} (U+{ord(char):04X}): the runner splits only on ASCII; "
                             f"use {ascii_char!r}")
        value = line.value
        if value is None or line.header_name is not None:
            return
        if ":" in value:
            self.add(number, "colon-in-value", "warning",
                     f"the value holds a second ':'; OCR/Clas/NLP runners read only {quoted(line.bash_value)}")
        if line.key == "python" and _PINNED_PYTHON.match(value.strip()):
            self.add(number, "python-version", "warning",
                     f"'python:{value.strip()}' pins a minor version; 'python' uses whatever interpreter is active")
        unix_value = value.removesuffix("\r")
        if (self.kind != "train_infer_python" and unix_value != unix_value.rstrip()
                and ("|" in value or line.key.startswith("-"))):
            self.add(number, "trailing-space", "warning",
                     "trailing whitespace becomes part of the value (the last list item, or the flag)")

    # -- layout anchors -----------------------------------------------------------------------
    def anchor_rules(self, anchors: Sequence[Anchor], expected_lines: int) -> None:
        """Report the first anchor that sits elsewhere (a shift) or the first renamed anchor key."""
        last_ok = 0
        for position, anchor in enumerate(anchors):
            if anchor.index >= len(self.logical):
                self.short_file(expected_lines)
                return
            line = self.logical[anchor.index]
            if holds(line, anchor):
                last_ok = anchor.index
                continue
            shift = find_shift(self.logical, anchors[position:])
            if shift is not None:
                self.report_shift(anchor, line, last_ok, *shift)
                return
            self.add(self.line_of(anchor.index), "anchor-key", "warning",
                     f"idx {anchor.index} should hold {describe(anchor)} but holds {_show_line(line)}; "
                     "the lines around it are in place, so only the key differs")
        body_start = max(anchor.index for anchor in anchors if anchor.kind == "header") + 1
        if not self.header_inside_layout(body_start, expected_lines) and len(self.logical) < expected_lines:
            self.short_file(expected_lines)

    def report_shift(self, anchor: Anchor, line: Line, last_ok: int, moved: Anchor, offset: int) -> None:
        count, plural = abs(offset), "s" if abs(offset) > 1 else ""
        where = f"after idx {last_ok} (the last anchor in place)"
        cause = f"{count} line{plural} missing {where}" if offset < 0 else f"{count} extra line{plural} {where}"
        effect = f"every later slot is read {count} line{plural} {'early' if offset < 0 else 'late'}"
        self.add(self.line_of(anchor.index), "slot-shift", "error",
                 f"idx {anchor.index} should hold {describe(anchor)} but holds {_show_line(line)}; "
                 f"{describe(moved)} sits at idx {moved.index + offset} instead of {moved.index}: {cause}, {effect}")

    def header_inside_layout(self, body_start: int, expected_lines: int) -> bool:
        """Trailing sections are found by name, but one starting inside the last block means
        lines are missing there, where few anchors would notice."""
        for index in range(body_start, min(expected_lines, len(self.logical))):
            name = self.logical[index].header_name
            if name is not None:
                missing = expected_lines - index
                self.add(self.line_of(index), "slot-shift", "error",
                         f"section {quoted(name)} starts at idx {index}, inside the layout (which ends at idx "
                         f"{expected_lines - 1}): {missing} line{'s' if missing > 1 else ''} missing "
                         f"between idx {body_start - 1} and idx {index}")
                return True
        return False

    def short_file(self, expected_lines: int) -> None:
        count = len(self.logical)
        if expected_lines == layout.TRAIN_INFER_PYTHON_LINES and count in _SECTION_ENDS:
            self.add(self.line_of(count - 1), "short-file", "warning",
                     f"the file ends after idx {count - 1} ({count} of {expected_lines} lines): "
                     "the runner reads every later slot as empty (train-only or train+eval config)")
            return
        self.add(self.line_of(count - 1), "slot-shift", "error",
                 f"the file ends after idx {count - 1} inside a section ({count} of {expected_lines} lines): "
                 "a line is missing, or the file was cut short")

    def inference_block(self) -> None:
        """A missing or extra line among idx 40-50, where no key anchors the layout: values of another
        shape that a shift explains (layout_check.infer_shapes). Any other odd value is passed to the
        script as it is (a suite's own values, such as --run_mode:paddle): a warning."""
        def value_at(index: int) -> str | None:
            return self.logical[index].value if index < len(self.logical) else None

        bad, offset = infer_shapes(value_at, self.table)
        if offset is not None:
            index = bad[0].index
            self.add(self.line_of(index), "slot-shift", "error",
                     f"idx {index} ({bad[0].name}) should hold {bad[0].value[0]} but holds "
                     f"{quoted(self.logical[index].text.strip())}, and every value from there on fits its slot one line "
                     f"{'later' if offset < 0 else 'earlier'}: a line is {'missing' if offset < 0 else 'extra'} in the "
                     "inference block (idx 40-50), so every later flag is read from its neighbour")
            return
        for slot in bad:
            if slot.index < len(self.logical):
                self.add(self.line_of(slot.index), "infer-value-shape", "warning",
                         f"idx {slot.index} ({slot.name}) holds {quoted(self.logical[slot.index].text.strip())}, not "
                         f"{slot.value[0]}: the runner passes it to the inference script as it is; check that the "
                         "script takes it")

def _flag_findings(root: Path, text: str, path: str, unsandboxed: bool = False, family: str | None = None,
                   reads: frozenset[int] | None = None, memo: Memo | None = None) -> list[Finding]:
    """configs/flag_check.py's problems as findings: unknown-flag (error), flags-unchecked (warning); only the
    keys the config's own runner passes (its family, the lines its runner reads)."""
    from tipcgen.configs import flag_check

    return [Finding(path, p.line, "unknown-flag" if p.severity == "error" else "flags-unchecked",
                    "error" if p.severity == "error" else "warning", p.message + (f"; {p.fix}" if p.fix else ""))
            for p in flag_check.check_config(root, text, dict(os.environ), unsandboxed, family, reads, memo)]


def _show_line(line: Line) -> str:
    if line.header_name is not None:
        return f"the {line.header_name} header"
    return f"'{line.key}:'" if line.value is not None else repr(line.text)


def lint_text(text: str, path: str, repo_root: str | Path | None = None, runner: Runner | None = None,
              specs: reading.Specs = ()) -> list[Finding]:
    """Every finding for one config text, in line order; ``runner`` (its reads and its name) picks
    the layout family as the suite's own runner reads it; ``specs``: every runner of its folder read as
    data (family_pick.runner_specs), which decide where an error stands (configs/reading.py)."""
    return _Linter(text, path, Path(repo_root) if repo_root is not None else None, runner, specs).run()


def config_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files lint reads: each path, and every ``*.txt`` below a folder."""
    files: list[Path] = []
    for path in map(Path, paths):
        files.extend(sorted(path.rglob("*.txt")) if path.is_dir() else [path])
    return files


def lint_report(paths: Iterable[str | Path], repo_root: str | Path | None = None,
                check_flags: bool = False, unsandboxed: bool = False) -> list[Finding]:
    """Lint files, and every ``*.txt`` below a directory; for each basic-chain config also an ``info`` finding
    (rule ``family``) that names the layout family it was read in and how it was picked (what ``tipcgen lint`` shows);
    check_flags (``lint --root``): each script's --help against the keys the runner passes it, in the sandbox
    (unsandboxed: also without one, ``--trust-repo``)."""
    root = Path(repo_root) if repo_root is not None else None
    findings: list[Finding] = []
    cache: dict = {}
    said: set[str] = set()  # a flags-unchecked cause (a missing interpreter or module, a script's failing --help) once
    from tipcgen.configs import flag_check

    memo = flag_check.Memo()  # each script probed once over the repository
    for file in config_files(paths):
        runner = family_pick.read_runner(file, root, cache)
        text = inputs.read_text(file, "config")
        linter = _Linter(text, str(file), root, runner, family_pick.runner_specs(file, root, cache))
        found = linter.run()
        if linter.pick is not None:
            findings.append(Finding(str(file), 1, "family", "info", linter.pick.describe()))
        elif not position_checked(linter.kind):
            findings.append(Finding(str(file), 1, "not-position-checked", "info",
                                    f"a {linter.kind} config: tipcgen has no layout table for this kind, so a deleted "
                                    "or added line is not found (its runner reads the lines by position); only the "
                                    "byte-level rules (line endings, spaces, punctuation, markers) ran"))
        if check_flags and root is not None and not has_errors(found) and linter.kind in layout.LAYOUT_OF_KIND:
            basic = reading.basic_runner(linter.specs)
            reads = runner_spec.passing(basic, text) if basic is not None else None
            flags = _flag_findings(root, text, str(file), unsandboxed, linter.pick.family.name if linter.pick else None,
                                   reads, memo)
            kept = []
            for f in flags:  # a flags-unchecked cause once per repository
                if f.rule == "flags-unchecked" and flag_check.cause(f.message) in said:
                    continue
                said.update([flag_check.cause(f.message)] if f.rule == "flags-unchecked" else [])
                kept.append(f)
            flags = kept
            found = sorted(found + flags, key=lambda f: (f.line, f.rule))
        findings.extend(found)
    return findings


def position_checked(kind: str) -> bool:
    """Whether lint checks the lines' positions of a config of this kind (a layout table of its own)."""
    return kind in layout.LAYOUT_OF_KIND or kind in compression.KINDS or kind in (DY2STATIC, "empty")


# Every rule lint can report (the module docstring's table), for --select and --ignore.
RULES = tuple(re.findall(r"^\| ``([a-z0-9-]+)`` \|", __doc__ or "", re.MULTILINE))


def check_rules(names: Iterable[str], option: str) -> set[str]:
    """--select/--ignore's rule names (each may be a comma-separated list), every one a rule lint knows."""
    from tipcgen.core.errors import TipcgenError

    wanted = {name.strip() for value in names for name in value.split(",") if name.strip()}
    unknown = sorted(wanted - set(RULES))
    if unknown:
        raise TipcgenError(f"{option} {', '.join(unknown)}: no such lint rule",
                           "the rules: " + ", ".join(sorted(RULES)))
    return wanted


def chosen(findings: Iterable[Finding], select: set[str], ignore: set[str]) -> list[Finding]:
    """The findings of the selected rules (all without --select) less the ignored ones."""
    return [f for f in findings if (not select or f.rule in select) and f.rule not in ignore]


def statistics(findings: Iterable[Finding]) -> list[tuple[int, str, str]]:
    """(count, rule, severity) per rule, the most frequent first (--statistics)."""
    from collections import Counter

    counts = Counter((f.rule, f.severity) for f in findings)
    return sorted(((n, rule, severity) for (rule, severity), n in counts.items()), key=lambda row: (-row[0], row[1]))


def refusals(path: str | Path, repo_root: str | Path | None = None) -> list[Finding]:
    """The lint errors of one config file: what ``tipcgen run`` refuses to run and ``tipcgen doctor``
    fails. Raises ``InputError`` (exit 2) for a file that is not readable UTF-8 text."""
    return errors_of(inputs.read_text(path, "config"), str(path), repo_root)


def errors_of(text: str, path: str, repo_root: str | Path | None = None) -> list[Finding]:
    """The error findings (not warnings) of a config text; ``path`` names it in the findings."""
    return [finding for finding in lint_text(text, path, repo_root) if finding.severity == "error"]


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(finding.severity == "error" for finding in findings)


def format_finding(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}: {finding.severity} {finding.rule} {finding.message}"


def findings_to_json(findings: Iterable[Finding]) -> str:
    """A JSON list of ``{path, line, rule, severity, message}`` objects."""
    return json_text([asdict(finding) for finding in findings])  # printable as it is (core.text.shown)
