"""A failed step's log → one line saying why, and the ``tipc.yaml`` field to edit.

``RULES`` is the table: each rule has the log patterns that recognise a failure (a missing file, a
download attempted offline, a DataLoader worker crash, an argparse refusal, a checkpoint the training did
not write, the file size limit) and the function that writes the hint from what tipcgen knows: the
descriptor's keys (which field passes which flag) and the scripts' source, read with ``ast``
(``configs/script_reading``: a flag's default, a download switch, the flag whose block prepares a data
file, the flag that gates saving). Only the log's tail is read (``results.log_tail``: at most 64 KiB).
The first rule that matches wins; a failure no rule knows gets no hint.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tipcgen.configs import script_reading
from tipcgen.configs.script_reading import Reading
from tipcgen.format import layout
from tipcgen.format.words import EVAL, EXPORT, INFER, TRAIN

TAIL_LINES = 200
MAX_HINT = 400
# The descriptor field holding each step kind's script command (its fixed arguments go there).
SCRIPT_FIELD = {TRAIN: "train.norm", EVAL: "eval.script", EXPORT: "export.norm", INFER: "inference.script"}
_LOADER_FLAGS = ("num_workers", "workers", "num_worker", "n_workers", "n_cpu", "threads", "num_threads")


@dataclass
class Known:
    """What tipcgen knows about the chain: its descriptor file, every script's reading, the keys' fields."""

    descriptor: str = "tipc.yaml"
    scripts: dict[str, str] = field(default_factory=dict)  # step kind → script path
    readings: dict[str, Reading] = field(default_factory=dict)  # step kind → the script's reading
    keys: dict[tuple[str, str], str] = field(default_factory=dict)  # (step kind, flag) → descriptor field
    checkpoint: str | None = None  # train.checkpoint: what eval and export load


@dataclass(frozen=True)
class Rule:
    """A failure tipcgen can name: its log patterns (any may match) and how it is explained."""

    name: str
    patterns: tuple[re.Pattern, ...]
    explain: Callable[[re.Match, str, Known, list[str]], str]  # (match, step kind, what is known, the log tail)
    kinds: tuple[str, ...] = ()  # the step kinds it applies to (empty: every kind)


def _c(*patterns: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


# ---------------------------------------------------------------- the explanations

def _script_of(kind: str, known: Known) -> str:
    return known.scripts.get(kind) or f"the {kind} script"


def _edit(kind: str, words: str, known: Known) -> str:
    field_ = SCRIPT_FIELD.get(kind)
    return f"add `{words}` to {field_} in {known.descriptor}" if field_ else f"pass `{words}` to {_script_of(kind, known)}"


def _field_of(kind: str, flag: str, known: Known) -> str | None:
    return known.keys.get((kind, flag)) or known.keys.get((kind, flag.split("=", 1)[0]))


def _size_limit(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    if any("log over" in line for line in lines[-3:]):  # the runner's log cap, not the shell's limit
        return ("the step's log reached TIPC_MAX_LOG_MB (the cap is on the log only): raise TIPC_MAX_LOG_MB, or make "
                f"{_script_of(kind, known)} print less")
    return (f"a file {_script_of(kind, known)} wrote reached the file-size limit of the shell that started the run "
            "(ulimit -f): raise it (ulimit -f unlimited) and run again")


def _unrecognized(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    words = match.group(1).split()
    flags = [w for w in words if w.startswith("-")] or words[:1]
    script = _script_of(kind, known)
    for flag in flags:
        fld = _field_of(kind, flag, known)
        if fld is not None:
            near = _nearest(flag, known.readings.get(kind))
            instead = f" (its nearest flag: {near})" if near else ""
            return (f"{script} does not accept {flag.split('=', 1)[0]}, the key of {fld}: set {fld}'s key in "
                    f"{known.descriptor} to a flag the script has{instead}, or null to pass nothing")
    shown = " ".join(words)[:80]
    return (f"{script} does not accept {shown}: remove it from {SCRIPT_FIELD.get(kind, 'the script command')} in "
            f"{known.descriptor}, or give the script that flag")


def _required(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    flags = [w.strip(",") for w in match.group(1).split() if w.startswith("-")]
    shown = ", ".join(flags) or match.group(1).strip()[:60]
    return (f"{_script_of(kind, known)} requires {shown}, which no field passes: "
            + _edit(kind, f"{flags[0] if flags else shown} VALUE", known) + ", or map it to a field (tipcgen new --flag)")


def _invalid(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    flag, problem = match.group(1).split("/")[-1], match.group(2).strip()
    fld = _field_of(kind, flag, known)
    where = f"the value of {fld} in {known.descriptor}" if fld else (
        f"its value in {SCRIPT_FIELD.get(kind, 'the script command')} in {known.descriptor}")
    return f"{_script_of(kind, known)} refuses {flag}: {problem[:120]}; change {where}"


def _nearest(flag: str, reading: Reading | None) -> str | None:
    return script_reading.nearest_flag(flag, [a.name for a in reading.args]) if reading is not None else None


def _worker_crash(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    reading = known.readings.get(kind)
    script = _script_of(kind, known)
    arg = next((a for a in (reading.args if reading else ()) for name in _LOADER_FLAGS
                if a.dest.lower() == name), None)
    if arg is not None:
        return ("a DataLoader worker crashed (shared memory, or a library that is not fork-safe): "
                + _edit(kind, f"{arg.name} 0", known) + " to load data in the main process")
    where = _literal_workers(reading)
    at = f" ({where})" if where else ""
    return (f"a DataLoader worker crashed (shared memory, or a library that is not fork-safe): {script} sets "
            f"num_workers in its code{at} and no flag changes it; set num_workers=0 there, or add a flag for it "
            f"and pass it in {SCRIPT_FIELD.get(kind, 'the script command')}")


def _literal_workers(reading: Reading | None) -> str:
    return reading.workers if reading is not None and reading.workers else ""


def _network(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    reading = known.readings.get(kind)
    urls = [u for line in lines for u in re.findall(r"https?://[^\s'\")>]+", line)]
    url = re.search(r"https?://[^\s'\")>]+", match.string) or (re.match(r".+", urls[-1]) if urls else None)
    what = (url.group(0) if url else match.group(0).strip())[:80]
    for arg in (reading.args if reading else ()):
        off = script_reading.download_off(arg)
        if off is not None:
            return f"the step tried to download ({what}), offline: {arg.name} turns that off; " + _edit(kind, off, known)
    return (f"the step tried to download ({what}), offline, and no flag of {_script_of(kind, known)} turns it off: ship "
            f"the file (data.files in {known.descriptor}) and point the script at it")


def _not_written(match: re.Match, kind: str, known: Known) -> str | None:
    """eval/export/infer could not open what train should have saved (the checkpoint, the export)."""
    name = Path(match.group(1).strip().strip("'\"")).name
    checkpoint = Path(known.checkpoint or "").name
    if kind == TRAIN or not name or not (name == checkpoint or name.endswith((".pdparams", ".pdopt", ".pdmodel", ".pdiparams"))
                                         or (kind == INFER and name.startswith("inference."))):
        return None
    if kind == INFER:
        return (f"the exported model {name} was not written: check the export step's log, and export.output_dir in "
                f"{known.descriptor}")
    train = known.readings.get(TRAIN)
    gate = next((g for g in (train.gates if train else ()) if g.what in ("saving", "evaluation")), None)
    if gate is not None:
        arg = next((a for a in train.args if a.dest == gate.dest), None)
        if arg is not None:
            value = f"{arg.name} True" if arg.switch and arg.action != "store_true" else arg.name if arg.action == "store_true" else f"{arg.name} 1"
            return (f"the train step wrote no {name}: {_script_of(TRAIN, known)} saves only when {arg.name} says so "
                    f"({gate.where}); " + _edit(TRAIN, value, known))
    return (f"the train step wrote no {name}: check train.checkpoint in {known.descriptor} (what the training saves in "
            f"its output folder; it is {known.checkpoint or 'empty'})")


def _missing_file(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    path = match.group(1).strip().strip("'\"")
    not_written = _not_written(match, kind, known)
    if not_written:
        return not_written
    name = Path(path).name
    reading = known.readings.get(kind)
    script = _script_of(kind, known)
    for arg in (reading.args if reading else ()):
        default = arg.default if isinstance(arg.default, str) else ""
        if default and Path(default).name == name:
            fld = _field_of(kind, arg.name, known)
            if fld:
                return f"{path} is missing: {arg.name} ({fld}) names it; set {fld}'s value in {known.descriptor} to a file that exists"
            prep = _preparing(reading)
            if prep:
                return f"{path} is missing (the default of {arg.name}); {prep}"
            return (f"{path} is missing, the default of {script}'s {arg.name}: "
                    + _edit(kind, f"{arg.name} PATH", known) + ", or ship the file (data.files)")
    prep = _preparing(reading)
    if prep:
        return f"{path} is missing; {prep}"
    return (f"{path} is missing: ship it as lite data (data.files in {known.descriptor}) or make it in data.setup, "
            f"or pass the path to {script} in {SCRIPT_FIELD.get(kind, 'its command')}")


def _preparing(reading: Reading | None) -> str:
    """The flag whose block prepares data: `--preprocess makes it (train.py:40); add ...`."""
    if reading is None:
        return ""
    for gate in reading.gates:
        if gate.what != "data preparation":
            continue
        arg = next((a for a in reading.args if a.dest == gate.dest), None)
        if arg is not None:
            return (f"{arg.name} makes it ({', '.join(gate.calls)} at {gate.where}): add `"
                    + (arg.name if arg.action == "store_true" else f"{arg.name} True") + "` to {field}")
    return ""


def _script_missing(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    return (f"python cannot open {match.group(1)}: {SCRIPT_FIELD.get(kind, 'the script command')} in {known.descriptor} "
            "names a script that is not there (paths are relative to the repository root)")


# The table, in the order rules are tried: a definite refusal before what it may cause.
RULES: tuple[Rule, ...] = (
    Rule("size limit", _c(r"File size limit exceeded", r"\bSIGXFSZ\b", r"\[Errno 27\] File too large"), _size_limit),
    Rule("script missing", _c(r"can't open file '([^']+)': \[Errno 2\]"), _script_missing),
    Rule("unrecognized arguments", _c(r"error: unrecognized arguments: (.+)$"), _unrecognized),
    Rule("required arguments", _c(r"error: the following arguments are required: (.+)$"), _required),
    Rule("invalid argument", _c(r"error: argument ([-\w/]+): (invalid .+)$"), _invalid),
    Rule("worker crash", _c(r"DataLoader worker \(pid\(?s?\)? ?[\d, ]*\)? exited unexpectedly", r"DataLoader reader thread",
                            r"DataLoader \d+ workers? exit(ed)? unexpectedly", r"segmentation fault encountered in DataLoader",
                            r"\bBus error\b", r"insufficient shared memory", r"/dev/shm", r"SIGSEGV.*worker",
                            r"worker.*(Segmentation fault|SIGSEGV|killed by signal)"), _worker_crash),
    # an error of the network, not a download's progress line (a download that worked may precede another failure)
    Rule("network", _c(r"Max retries exceeded with url", r"Temporary failure in name resolution", r"Name or service not known",
                       r"Failed to establish a new connection", r"urlopen error", r"\bConnectionError\b",
                       r"Network is unreachable", r"Could not resolve host", r"Connection (refused|timed out)",
                       r"(huggingface\.co|bcebos\.com).*(Error|refused|timed out)"), _network),
    Rule("missing file", _c(r"No such file or directory: '([^']+)'", r"No such file or directory: \"([^\"]+)\"",
                            r"FileNotFoundError: (?:\[Errno 2\] )?(?:.*?)['\"]?([\w./-]+\.\w+)['\"]?(?: not found| does not exist|$)",
                            r"(?:file|path) ([\w./-]+\.\w+) (?:not found|does not exist)",
                            r"Unable to (?:open|synchronously open) file \(.*name = '([^']+)'",
                            r"The ``path`` \(([^)]+)\) to load model not exists"), _missing_file),
)


def explain(lines: list[str], kind: str, known: Known) -> str:
    """The one-line hint for a failed step whose log ends with ``lines``; '' when no rule knows the failure."""
    for rule in RULES:
        if rule.kinds and kind not in rule.kinds:
            continue
        for pattern in rule.patterns:
            found = None
            for found in _by_line(pattern, lines[-TAIL_LINES:]):
                pass  # the last occurrence: the error the step died of
            if found is None:
                continue
            hint = rule.explain(found, kind, known, lines[-TAIL_LINES:])
            if hint:
                hint = hint.replace("{field}", f"{SCRIPT_FIELD.get(kind, 'the script command')} in {known.descriptor}")
                return " ".join(hint.split())[:MAX_HINT]
    return ""


def _by_line(pattern: re.Pattern, lines: list[str]):
    for line in lines:
        match = pattern.search(line)
        if match:
            yield match


# ---------------------------------------------------------------- what tipcgen knows

def known_of(desc: Any, root: Path) -> Known:
    """The chain's scripts, their readings and the keys' fields, from a loaded descriptor (None: nothing known)."""
    if desc is None:
        return Known()
    known = Known(descriptor=Path(getattr(desc, "source", "") or "tipc.yaml").name or "tipc.yaml")
    for kind, fld in SCRIPT_FIELD.items():
        try:
            value = desc.slot_of(fld).value or ""
            words = shlex.split(value)
        except (KeyError, ValueError):
            continue
        script = next((w for w in words if w.endswith(".py")), None)
        if script is None or not (root / script).is_file():
            continue
        known.scripts[kind] = script
        known.readings[kind] = script_reading.read_script(root, script)
    for name, slot in desc.slots.items():
        info = layout.SLOT_BY_NAME.get(name)
        if info is None or not info.field or not slot.key or not slot.key.startswith("-"):
            continue
        for step in info.steps:
            kind = INFER if step == "whole_infer" else step
            known.keys.setdefault((kind, slot.key.split()[0]), info.field)
        if info.field == "train.pretrained":  # the runner passes the checkpoint to eval with this key
            known.keys.setdefault((EVAL, slot.key.split()[0]), info.field)
    try:
        known.checkpoint = desc.slot_of("train.checkpoint").value
    except KeyError:
        known.checkpoint = None
    return known
