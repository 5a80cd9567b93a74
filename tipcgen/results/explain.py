"""A failed step's log → one line saying why, and the ``tipc.yaml`` field to edit.

``RULES`` is the table: each rule has the log patterns that recognise a failure (a missing file, a
download attempted offline, a DataLoader worker crash, an argparse refusal, a checkpoint the training did
not write, the file size limit, a step timeout, paddle.fluid, Paddle 3's export and predictor traps, a bare
assert on a flag) and the function that writes the hint from what tipcgen knows: the descriptor's keys
(which field passes which flag) and env:, the scripts' source, read with ``ast`` (``configs/script_reading``:
a flag's default, a download switch, the flag whose block prepares a data file, the flag that gates saving),
the failed step's command (what it passed: no `--workers 0` advice to a step that passes 0), what the
training left in its output folder, and which kinds failed in the run. A rule whose explanation finds that
it does not apply returns '' and the next rule is tried: a hint that does not apply is worse than none.
Only the log's tail is read (``summary.log_tail``: at most 64 KiB); the runner's reason for the step is its
last line (a ``last_only`` rule reads nothing else). The first rule that answers wins; a failure no rule
knows gets no hint.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from tipcgen.configs import script_reading
from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.configs.script_reading import Reading
from tipcgen.format import layout
from tipcgen.format.words import EVAL, EXPORT, INFER, PREPARE, TRAIN

TAIL_LINES = 200
MAX_HINT = 400
# The descriptor field holding each step kind's script command (its fixed arguments go there).
SCRIPT_FIELD: dict[str, str] = {TRAIN: "train.norm", EVAL: "eval.script", EXPORT: "export.norm", INFER: "inference.script"}
_LOADER_FLAGS = ("num_workers", "workers", "num_worker", "n_workers", "n_cpu", "threads", "num_threads")


@dataclass
class Known:
    """What tipcgen knows about the chain: its descriptor file, every script's reading, the keys' fields."""

    descriptor: str = "tipc.yaml"
    scripts: dict[str, str] = field(default_factory=dict)  # step kind → script path
    readings: dict[str, Reading] = field(default_factory=dict)  # step kind → the script's reading
    keys: dict[tuple[str, str], str] = field(default_factory=dict)  # (step kind, flag) → descriptor field
    checkpoint: str | None = None  # train.checkpoint: what eval and export load
    root: Path | None = None  # the repository root: the scripts' source lines, the train step's output folder
    env: dict[str, str] = field(default_factory=dict)  # the descriptor's env: (export and inference get it)
    failed: frozenset[str] = frozenset()  # the step kinds with a failed step in this run
    command: str = ""  # the failed step's command line (explain() sets it, per step)


@dataclass(frozen=True)
class Rule:
    """A failure tipcgen can name: its log patterns (any may match) and how it is explained."""

    name: str
    patterns: tuple[re.Pattern, ...]
    explain: Callable[[re.Match, str, Known, list[str]], str]  # (match, step kind, what is known, the log tail)
    kinds: tuple[str, ...] = ()  # the step kinds it applies to (empty: every kind)
    last_only: bool = False  # matched on the last line only: the runner's reason for the step, never the log


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


def _passed(known: Known, flag: str) -> str | None:
    """The value the failed step's command passes for ``flag`` ('' for a bare switch); None: not passed."""
    try:
        words = shlex.split(known.command)
    except ValueError:
        words = known.command.split()
    found = None
    for i, word in enumerate(words):
        if word == flag:
            nxt = words[i + 1] if i + 1 < len(words) else ""
            found = "" if nxt.startswith("-") and not re.match(r"^-\d", nxt) else nxt
        elif word.startswith(flag + "="):
            found = word.split("=", 1)[1]
    return found


def _short(text: str, size: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 3] + "..."


def _source_at(known: Known, kind: str, pattern: str) -> str:
    """`infer.py:41`: the first line of the step's script whose code (not a comment) matches ``pattern``."""
    script = known.scripts.get(kind)
    if not script or known.root is None:
        return ""
    try:  # a regular file inside the repository, bounded (core/inputs.py)
        raw = inputs.read_bytes(known.root / script, "script", 2 << 20, head=True, folder=known.root)
    except (TipcgenError, ValueError, OSError):
        return ""
    regex = re.compile(pattern)
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.lstrip().startswith("#") and regex.search(line):
            return f"{script}:{number}"
    return ""


def _index(match: re.Match, lines: list[str]) -> int:
    """Where the matched line is in the tail (its last occurrence)."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i] is match.string or lines[i] == match.string:
            return i
    return len(lines) - 1


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')


def _frame_before(index: int, lines: list[str]) -> tuple[str, str] | None:
    """The last traceback frame (file, line) above ``index``: where the error was raised."""
    for i in range(index, -1, -1):
        found = _FRAME.match(lines[i])
        if found:
            return found.group(1), found.group(2)
    return None


def _where(frame: tuple[str, str] | None, known: Known) -> str:
    if frame is None:
        return ""
    path, line = frame
    if "site-packages" in path or "dist-packages" in path:
        package = re.split(r"[/\\](?:site|dist)-packages[/\\]", path)[-1].split("/")[0]
        return f"the installed package {package} ({Path(path).name}:{line})"
    if known.root is not None:
        try:
            path = str(Path(path).resolve().relative_to(known.root.resolve()))
        except (ValueError, OSError):
            pass
    return f"{path}:{line}"


_EPOCH = re.compile(r"\bepoch(?:_id)?\b\s*[:=#\[(]?\s*\[?(\d+)(?:\s*(?:/|of)\s*(\d+))?", re.IGNORECASE)
_ITER = re.compile(r"\b(?:iter(?:ation)?s?|step|batch(?:_id)?)\b\s*[:=#\[(]?\s*(\d+)(?:\s*(?:/|of)\s*(\d+))?", re.IGNORECASE)


_SETTINGS = re.compile(r"Namespace\(|\bargs\b|\bconfig\b|\{'|\": ", re.IGNORECASE)  # a print of the settings


def _last_seen(pattern: re.Pattern, lines: list[str]) -> str:
    for line in reversed(lines):
        found = pattern.search(line) if not _SETTINGS.search(line) else None
        if found:
            return found.group(1) + (f"/{found.group(2)}" if found.group(2) else "")
    return ""


def _timeout(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    """The runner's `timeout after N s`: what ran, and how far it got (its last line, the epochs and iterations seen)."""
    limit = match.group(1)
    log = [line.strip() for line in lines[:-1] if line.strip()]
    ran = f"`{_short(known.command)}`" if known.command else _script_of(kind, known)
    if not log:
        seen = "it printed nothing before it was stopped (stuck before its first line: loading data or a model?)"
    else:
        progress = [f"{what} {value}" for what, value in (("epoch", _last_seen(_EPOCH, log)), ("iteration", _last_seen(_ITER, log)))
                    if value]
        seen = (f"last seen: {', '.join(progress)}; " if progress else "no epoch or iteration in its log; ") + \
            f"its last line: '{_short(log[-1], 90)}'"
    shorter = " or train fewer epochs (train.epochs)" if kind == TRAIN else ""
    return (f"{kind} was stopped at the step time limit ({limit} s) running {ran}; {seen}: raise run.step_timeout in "
            f"{known.descriptor} (or --step-timeout SECONDS){shorter}")


def _fluid(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    where = _where(_frame_before(_index(match, lines), lines), known) or _script_of(kind, known)
    return (f"{where} imports paddle.fluid, which Paddle 3 removed: port that import to Paddle's 2.x API (fluid.dygraph → "
            "paddle.nn, fluid.layers → paddle and paddle.nn.functional, fluid.io → paddle.io), or run the chain with a "
            "Paddle 2.x (python: in the descriptor); no other field changes this")


def _boolean(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    flag = match.group(1).split("/")[-1]
    value = _passed(known, flag)
    fld = _field_of(kind, flag, known)
    where = f"the value of {fld}" if fld else f"its value in {SCRIPT_FIELD.get(kind, 'the script command')}"
    got = f", not {value!r}" if value is not None else ""
    return (f"{_script_of(kind, known)} wants a boolean for {flag} (true/false, yes/no or 1/0{got}): change {where} in "
            f"{known.descriptor}")


def _pir_export(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    """paddle.jit.save under FLAGS_enable_pir_api=0 on Paddle 3: the old program IR cannot trace this model."""
    command_env = re.search(r"\bFLAGS_enable_pir_api=['\"]?(0|false)\b", known.command, re.IGNORECASE)
    if known.env.get("FLAGS_enable_pir_api", "").lower() not in ("0", "false") and not command_env:
        return ""
    infer = known.scripts.get(INFER)
    at = _source_at(known, INFER, r"\.pdmodel\b") if infer else ""
    then = (f"; then make {infer} load inference.json{f' ({at})' if at else ''} instead of inference.pdmodel"
            if infer else "")
    return (f"the export failed under FLAGS_enable_pir_api=0 ({match.group(1)}() got {match.group(2)}): Paddle 3's old "
            f"program IR cannot export this model (PIR, the default, exports it or says why): remove FLAGS_enable_pir_api from env: in "
            f"{known.descriptor} (export then writes inference.json){then}")


def _memory_optim(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    at = _source_at(known, INFER, r"enable_memory_optim\s*\(")
    return (f"the predictor's memory optimisation (memory_optimize_pass) fails on Paddle 3's PIR model (inference.json), "
            f"known on 3.3: remove config.enable_memory_optim() from {_script_of(kind, known)}"
            + (f" ({at})" if at else "") + ", or call it only for a .pdmodel model")


def _mkldnn_key(known: Known) -> str:
    return next((flag for (kind, flag), fld in known.keys.items() if kind == INFER and fld == "inference.enable_mkldnn"),
                "--enable_mkldnn")


def _onednn(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    flag = _mkldnn_key(known)
    value = _passed(known, flag)
    script = _script_of(kind, known)
    at = _source_at(known, INFER, r"enable_mkldnn\s*\(")
    reading = known.readings.get(kind)
    arg = reading.arg(flag) if reading is not None else None
    if value is not None and script_reading.truthy(value) is False:
        parse = (f"; and its type=bool reads '{value}' as True: give {flag} a str2bool type" if arg is not None
                 and arg.type == "bool" else "")
        return (f"oneDNN ran although {flag} {value} was passed: Paddle 3.3's CPU predictor turns oneDNN on by default, "
                f"so {script} must call config.disable_mkldnn() when {flag} is false"
                + (f" (its enable_mkldnn() call: {at})" if at else "") + parse)
    return (f"the predictor failed in oneDNN (mkldnn), which fails with PIR models on Paddle 3.3's CPU (known upstream): set "
            f"inference.enable_mkldnn to False in {known.descriptor}, and make {script} call config.disable_mkldnn() "
            "when it is false (3.3 turns oneDNN on by default)")


def _assertion(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    """A bare ``assert args.val_dir ...`` that failed: the flag it checks, and whether the step passed it."""
    index = _index(match, lines)
    source = next((lines[i].strip() for i in range(index - 1, max(index - 4, -1), -1)
                   if lines[i].strip().startswith("assert")), "")
    reading = known.readings.get(kind)
    if not source or reading is None:
        return ""
    named = re.findall(r"\b[A-Za-z_]\w*\.(\w+)", source)
    arg = next((a for name in named for a in reading.args if a.dest == name), None)
    if arg is None:
        return ""
    frame = _where(_frame_before(index, lines), known)
    check = f"`{_short(source, 70)}`" + (f" ({frame})" if frame else "")
    value = _passed(known, arg.name)
    if value is None:
        return (f"{_script_of(kind, known)}'s check {check} failed: the step does not pass {arg.name} (default "
                f"{arg.default!r}): " + _edit(kind, f"{arg.name} VALUE", known))
    fld = _field_of(kind, arg.name, known)
    where = f"the value of {fld}" if fld else f"its value in {SCRIPT_FIELD.get(kind, 'the script command')}"
    return f"{_script_of(kind, known)}'s check {check} failed on {arg.name} {_short(value, 60)}: change {where} in {known.descriptor}"



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
        value = _passed(known, arg.name)
        if value is not None and value.strip() in ("0", "0.0"):
            return ""  # it already loads in the main process: the advice would be no fix (the next rule may know)
        return ("a DataLoader worker crashed (shared memory, or a library that is not fork-safe): "
                + _edit(kind, f"{arg.name} 0", known) + " to load data in the main process")
    where = _literal_workers(reading)
    at = f" ({where})" if where else ""
    return (f"a DataLoader worker crashed (shared memory, or a library that is not fork-safe): {script} sets "
            f"num_workers in its code{at} and no flag changes it; set num_workers=0 there, or add a flag for it "
            f"and pass it in {SCRIPT_FIELD.get(kind, 'the script command')}")


def _literal_workers(reading: Reading | None) -> str:
    return reading.workers if reading is not None and reading.workers else ""


# A URL as logs print it: never an ANSI escape, a bracket or a quote that follows it (wget, curl, tqdm, colour codes)
_URL = re.compile(r"https?://[^\s'\"()<>\[\]{}|\\^`\x00-\x1f\x7f]+")


def _url_text(url: str, size: int = 90) -> str:
    """A URL shown whole, or as scheme://host/.../file when long: never cut inside a name."""
    url = url.rstrip(".,;:!?*")
    if len(url) <= size:
        return url
    head, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    name = path.rsplit("/", 1)[-1].split("?", 1)[0][-60:]
    return f"{head}://{host}/.../{name}" if name else f"{head}://{host}/..."


def _network(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    reading = known.readings.get(kind)
    urls = [u for line in lines for u in _URL.findall(line)]
    found = _URL.search(match.string)
    what = _url_text(found.group(0) if found else urls[-1]) if (found or urls) else _short(match.group(0).strip(), 80)
    if kind == PREPARE:
        return (f"prepare.sh tried to download ({what}), offline: ship that file as lite data (data.files in "
                f"{known.descriptor}), or download it once and pass its folder as the whole data (tipcgen run --data-dir DIR)")
    for arg in (reading.args if reading else ()):
        off = script_reading.download_off(arg)
        if off is not None:
            return f"the step tried to download ({what}), offline: {arg.name} turns that off; " + _edit(kind, off, known)
    pretrained = _from_pretrained(kind, known, lines)
    if pretrained:
        return f"the step tried to download ({what}), offline: {pretrained}"
    return (f"the step tried to download ({what}), offline, and no flag of {_script_of(kind, known)} turns it off: ship "
            f"the file (data.files in {known.descriptor}) and point the script at it")


_FROM_PRETRAINED = re.compile(r"\.from_pretrained\(\s*(?:['\"]([^'\"]+)['\"]|([\w.]+))")


def _from_pretrained(kind: str, known: Known, lines: list[str]) -> str:
    """A traceback through ``X.from_pretrained(name)``: the weights are fetched by name; offline, a local folder."""
    for index in range(len(lines) - 1, -1, -1):
        found = _FROM_PRETRAINED.search(lines[index])
        if not found:
            continue
        frame = _where(_frame_before(index, lines), known)
        at = f" ({frame})" if frame else ""
        name, expr = found.group(1), found.group(2) or ""
        reading = known.readings.get(kind)
        arg = next((a for a in (reading.args if reading else ()) if expr.split(".")[-1] == a.dest), None)
        saved = f"weights/{Path(name or (arg.default if arg and isinstance(arg.default, str) else 'model')).name}"
        how = (_edit(kind, f"{arg.name} {saved}", known) if arg is not None
               else f"put that path where from_pretrained names {name or expr}{at}")
        return (f"from_pretrained({name or expr}){at} downloads the weights; download them once with network "
                f"(save_pretrained('{saved}')), ship the folder (data.files in {known.descriptor}) and pass its path: "
                + how + " (from_pretrained reads a local folder)")
    return ""


def _not_written(match: re.Match, kind: str, known: Known) -> str | None:
    """eval/export/infer could not open what train should have saved (the checkpoint, the export)."""
    name = Path(match.group(1).strip().strip("'\"")).name
    checkpoint = Path(known.checkpoint or "").name
    if kind == TRAIN or not name or not (name == checkpoint or name.endswith((".pdparams", ".pdopt", ".pdmodel", ".pdiparams",
                                                                              ".pth", ".pd", ".ckpt"))
                                         or (kind == INFER and name.startswith("inference."))):
        return None
    folder = _folder(match.group(1).strip().strip("'\""), known)
    if kind == INFER:
        if name.endswith(".pdmodel"):
            legacy = _pdmodel_only(match.group(1).strip().strip("'\""), name, folder, known)
            if legacy:
                return legacy
        if EXPORT in known.failed:
            return f"the export step failed, so there is no {name}: fix the export first (its hint above)"
        return (f"the exported model {name} was not written: check the export step's log, and export.output_dir in "
                f"{known.descriptor}")
    if TRAIN in known.failed:
        return f"the train step failed, so it saved no {name}: fix the training first (its hint above)"
    if folder is not None and (folder / name).is_file():
        return ""  # the training wrote it: not what failed (the next rule may know)
    return _unsaved(name, folder, known)


def _no_checkpoint(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    """tipcgen's check after a training that passed (repro/export_check): it wrote no checkpoint eval and export load."""
    path = match.group(1) or match.group(2)
    folder = _folder(path, known) if match.group(1) else _folder(str(Path(path) / "x"), known)
    return _unsaved(Path(path).name if match.group(1) else "a .pdparams", folder, known)


def _misspelt(flag: str, reading: Reading, known: Known) -> str | None:
    """A word of the failed command that is close to ``flag`` but no flag of the script (a misspelling a
    parse_known_args script lets through), or None."""
    import difflib

    try:
        words = shlex.split(known.command)
    except ValueError:
        return None
    takes = {n for a in reading.args for n in a.names}
    for word in words:
        given = word.split("=", 1)[0]
        if given.startswith("--") and given not in takes and not flag.startswith(given) and \
                difflib.SequenceMatcher(None, given, flag).ratio() >= 0.8:
            return given
    return None


def _unsaved(name: str, folder: Path | None, known: Known) -> str:
    """Why the training saved no ``name`` in ``folder``: another name saved there, a flag that gates saving, or nothing."""
    saved = _checkpoints(folder)
    if saved and name not in {Path(s).name for s in saved}:
        return (f"the train step saved {', '.join(saved[:3])} in its output folder, not {name}: set train.checkpoint in "
                f"{known.descriptor} to the one eval and export should load (now {known.checkpoint or 'empty'})")
    train = known.readings.get(TRAIN)
    gate = next((g for g in (train.gates if train else ()) if g.what in ("saving", "evaluation")), None)
    if gate is not None:
        arg = next((a for a in train.args if a.dest == gate.dest), None)
        if arg is not None:
            value = f"{arg.name} True" if arg.switch and arg.action != "store_true" else arg.name if arg.action == "store_true" else f"{arg.name} 1"
            misspelt = _misspelt(arg.name, train, known) if train is not None else None
            return (f"the train step wrote no {name}: {_script_of(TRAIN, known)} saves only when {arg.name} says so "
                    f"({gate.where}); " + (f"the command passes {misspelt}, which {_script_of(TRAIN, known)} does not "
                                           f"take (parse_known_args lets it through): spell it {arg.name} in "
                                           f"{SCRIPT_FIELD[TRAIN]} in {known.descriptor}" if misspelt else
                                           _edit(TRAIN, value, known)))
    fixed = train.intervals[0] if train is not None and train.intervals else ""
    if fixed:
        return (f"the train step wrote no {name}: {_script_of(TRAIN, known)} saves only at a fixed interval ({fixed}), "
                "which this run's epochs or iterations may not reach: train for that many (train.epochs in "
                f"{known.descriptor}), or make the interval a flag (or save at the last epoch too)")
    if folder is not None and folder.is_dir():
        return (f"the train step saved no checkpoint in its output folder ({_short(_rel(folder, known), 80)}): "
                f"{_script_of(TRAIN, known)} saves elsewhere (a save-dir flag no field passes: train.output_dir's key) "
                f"or not in this run (an epoch interval longer than train.epochs, a condition); make it save "
                f"{name} there")
    return (f"the train step wrote no {name}: check train.checkpoint in {known.descriptor} (what the training saves in "
            f"its output folder; it is {known.checkpoint or 'empty'})")


def _folder(path: str, known: Known) -> Path | None:
    """The folder the missing file should be in, when it is inside the repository (None: unknown)."""
    if known.root is None or not path:
        return None
    folder = (known.root / path).parent
    try:
        folder.resolve().relative_to(known.root.resolve())
    except (ValueError, OSError):
        return None
    return folder


def _rel(folder: Path, known: Known) -> str:
    try:
        return str(folder.relative_to(known.root)) if known.root is not None else str(folder)
    except ValueError:
        return str(folder)


def _checkpoints(folder: Path | None, limit: int = 400) -> list[str]:
    """The parameter files a training left in its output folder (two levels down, bounded), sorted."""
    if folder is None or not folder.is_dir():
        return []
    found, seen = [], 0
    for depth in ("*", "*/*"):
        for path in folder.glob(depth):
            seen += 1
            if seen > limit:
                break
            if path.suffix in (".pdparams", ".pdparam", ".pth", ".pt", ".ckpt") and not path.is_symlink() and path.is_file():
                found.append(str(path.relative_to(folder)))
    return sorted(found)


def _pdmodel_only(path: str, name: str, folder: Path | None, known: Known) -> str:
    """An inference that loads inference.pdmodel where Paddle 3's export wrote inference.json (PIR)."""
    if known.env.get("FLAGS_enable_pir_api", "").lower() in ("0", "false"):
        return ""
    json_file = folder / (Path(name).stem + ".json") if folder is not None else None
    if json_file is None or not json_file.is_file():
        return ""
    at = _source_at(known, INFER, r"\.pdmodel\b")
    return (f"the export wrote {json_file.name} (Paddle 3's PIR format), and {_script_of(INFER, known)} loads {name}: "
            f"make it load {json_file.name} when there is no .pdmodel" + (f" ({at})" if at else "")
            + f"; env: {{FLAGS_enable_pir_api: '0'}} in {known.descriptor} instead only if the export works under it "
            "(tipcgen doctor)")


def _missing_file(match: re.Match, kind: str, known: Known, lines: list[str]) -> str:
    path = match.group(1).strip().strip("'\"")
    not_written = _not_written(match, kind, known)
    if not_written is not None:
        return not_written  # '' when the training did write it: this file is not what failed
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
    Rule("timeout", _c(r"^timeout after (\d+) s$"), _timeout, last_only=True),
    Rule("no checkpoint", _c(r"it wrote no (?:checkpoint (\S+)|\.pdparams into (\S+)) \(train_model_name"), _no_checkpoint,
         kinds=(TRAIN,), last_only=True),
    Rule("size limit", _c(r"File size limit exceeded", r"\bSIGXFSZ\b", r"\[Errno 27\] File too large"), _size_limit),
    Rule("script missing", _c(r"can't open file '([^']+)': \[Errno 2\]"), _script_missing),
    Rule("unrecognized arguments", _c(r"error: unrecognized arguments: (.+)$"), _unrecognized),
    Rule("required arguments", _c(r"error: the following arguments are required: (.+)$"), _required),
    Rule("invalid argument", _c(r"error: argument ([-\w/]+): (invalid .+)$"), _invalid),
    Rule("boolean value", _c(r"error: argument ([-\w/]+): Boolean value expected"), _boolean),
    Rule("paddle.fluid", _c(r"No module named ['\"]paddle\.fluid\b", r"module ['\"]paddle['\"] has no attribute ['\"]fluid['\"]",
                            r"cannot import name ['\"]fluid['\"] from ['\"]paddle['\"]",
                            r"cannot import name .+ from ['\"]paddle\.fluid\b"), _fluid),
    Rule("PIR export", _c(r"\b(\w+)\(\): argument .*must be Value, but got (Variable|None)\b"), _pir_export,
         kinds=(EXPORT,)),
    Rule("memory optimisation", _c(r"Not find predictor_id.*memory_optimize_pass",
                                   r"memory_optimize_pass.*(Error|NotFound|not find|failed)"), _memory_optim, kinds=(INFER,)),
    Rule("oneDNN", _c(r"ConvertPirAttribute2RuntimeAttribute", r"(Error|Unimplemented|NotFound).*\b(onednn|mkldnn)\b",
                      r"\b(onednn|mkldnn)\b.*(Error|Unimplemented|NotFound|not supported)"), _onednn, kinds=(INFER,)),
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
                            r"The ``path`` \(([^)]+)\) to load model not exists",
                            r"\(NotFound\) Cannot open file ([^\s,]+), please confirm"), _missing_file),
    Rule("assertion", _c(r"^AssertionError\b"), _assertion),
)


def explain(lines: list[str], kind: str, known: Known, command: str = "") -> str:
    """The one-line hint for a failed step whose log ends with ``lines`` (the runner's reason last) and which ran
    ``command``; '' when no rule knows the failure."""
    if command:
        known = replace(known, command=command)
    for rule in RULES:
        if rule.kinds and kind not in rule.kinds:
            continue
        for pattern in rule.patterns:
            found = None
            for found in _by_line(pattern, lines[-1:] if rule.last_only else lines[-TAIL_LINES:]):
                pass  # the last occurrence: the error the step died of
            if found is None:
                continue
            hint = rule.explain(found, kind, known, lines[-TAIL_LINES:])
            if hint:
                hint = hint.replace("{field}", f"{SCRIPT_FIELD.get(kind, 'the script command')} in {known.descriptor}")
                return " ".join(_CONTROL.sub("", hint).split())[:MAX_HINT]
    return ""


_CONTROL = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # colour codes, control characters


def _by_line(pattern: re.Pattern, lines: list[str]):
    for line in lines:
        match = pattern.search(line)
        if match:
            yield match


# ---------------------------------------------------------------- what tipcgen knows

def known_of(desc: Any, root: Path, failed: frozenset[str] = frozenset()) -> Known:
    """The chain's scripts, their readings and the keys' fields, from a loaded descriptor (None: what the run
    alone tells); ``failed``: the step kinds with a failed step."""
    if desc is None:
        return Known(root=root, failed=failed)
    known = Known(descriptor=Path(getattr(desc, "source", "") or "tipc.yaml").name or "tipc.yaml", root=root,
                  env=dict(getattr(desc, "env", ()) or ()), failed=failed)
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
