"""What ``tipcgen new`` learns from the scripts' source (``configs/script_reading``, ``ast``, never run).

Flag choice: a flag the code never reads fills no slot, and a download switch (``--pretrained`` that
fetches a backbone) is never the checkpoint flag. Notes, each naming the ``tipc.yaml`` field to edit: a
switch that downloads at start-up, a data file the code reads that a preparation flag makes, a save or an
evaluation gated by a flag whose default skips it in a lite run, an architecture flag whose default differs
between train and eval/export/infer, and every slot left empty with the candidates seen.
"""
from __future__ import annotations

import contextlib
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from tipcgen.configs import legacy_format
from tipcgen.configs.script_help import Flag, Script, loose
from tipcgen.core.errors import TipcgenError
from tipcgen.new.fields import CANDIDATES, MODE_SWITCH
from tipcgen.configs.script_reading import Arg, Reading, data_file_name, download_off, download_switch, output_like, truthy

# The descriptor field that holds each role's script command (fixed arguments go there).
SCRIPT_FIELD = {"train": "train.norm", "eval": "eval.script", "export": "export.norm", "infer": "inference.script"}
_CHECKPOINT_FIELDS = ("train.pretrained", "export.weights")
# Fields where a flag the code never reads would make the step write or load nothing the chain expects.
_MUST_BE_READ = ("train.output_dir", "export.output_dir", "inference.model_dir", *_CHECKPOINT_FIELDS)
# Flags whose defaults may differ between scripts without building another model.
_NOT_ARCHITECTURE = re.compile(r"lr|learning_rate|epoch|batch|dir|path|file|seed|log|save|print|device|gpu|worker|"
                               r"cpu|thread|output|data|ckpt|checkpoint|weight|pretrain|resume|model_name|mode|step|"
                               r"iter|interval|eval|test|val|mkldnn|tensorrt|trt|precision|benchmark|amp|fp16|config|"
                               r"^c$|verbose|debug|port|rank|local|num_workers|shuffle", re.IGNORECASE)


@dataclass
class Choice:
    """What ``choose`` found for one field: the flag, the script it belongs to, the flags it passed over."""

    flag: Flag | None = None
    owner: Script | None = None
    passed_over: list[str] = field(default_factory=list)  # "--output (parsed, never read)"
    by_name: bool = False  # found by the fallback pattern, not a listed name: the notes say so
    also: list[str] = field(default_factory=list)  # other listed names the same script has: a question


def choose(fld: str, names: tuple[str, ...], scripts: list[Script], readings: dict[str, Reading]) -> Choice:
    """The first flag of names (best first), in the first script that has one; for an output, model or
    checkpoint field one the code reads, and never a download switch for a checkpoint field."""
    out = Choice()
    for script in scripts:
        reading = readings.get(script.path)
        for name in names:
            flag = script.find((name,))
            if flag is None or any(flag.name in seen for seen in out.passed_over):
                continue
            if fld in _MUST_BE_READ and reading is not None and reading.unused(flag.name):
                out.passed_over.append(f"{flag.name} in {script.path} (parsed, never read)")
                continue
            arg = reading.arg(flag.name) if reading is not None else None
            if fld in _CHECKPOINT_FIELDS and arg is not None and download_switch(arg):
                out.passed_over.append(f"{flag.name} in {script.path} (a download switch: {_said(arg)})")
                continue
            if fld in _DATA_FIELDS and (why := dataset_name(flag, arg)):
                out.passed_over.append(f"{flag.name} in {script.path} ({why})")
                continue
            out.flag, out.owner = flag, script
            if fld in _ASKED:
                out.also = _also(fld, names[names.index(name) + 1:], script, reading, flag)
            return out
    fallback = _FALLBACK.get(fld)
    if fallback is not None:  # no listed name: a flag whose name says it (--total_epochs), the code reading it
        for script in scripts:
            reading = readings.get(script.path)
            for flag in script.flags:
                arg = reading.arg(flag.name) if reading is not None else None
                if (flag.takes_value and re.search(fallback[0], loose(flag.name)) and not re.search(fallback[1], loose(flag.name))
                        and (reading is None or not reading.unused(flag.name)) and not (arg is not None and output_like(arg))):
                    out.flag, out.owner = flag, script
                    out.by_name = True
                    return out
    return out


_DATA_FIELDS = ("train.extra", "eval.extra", "inference.data")
# Fields where a second flag of the listed names in the same script makes the pick a question (two data
# folders, two checkpoint flags): said with the candidates, never a silent first-come choice.
_ASKED = (*_DATA_FIELDS, *_CHECKPOINT_FIELDS, "train.epochs", "train.output_dir")


def _also(fld: str, later: tuple[str, ...], script: Script, reading: Reading | None, chosen: Flag) -> list[str]:
    """The flags of the later listed names that the script also has and would be chosen for the field."""
    out = []
    for name in later:
        flag = script.find((name,))
        if flag is None or flag is chosen or flag.name in out or not flag.takes_value:
            continue
        arg = reading.arg(flag.name) if reading is not None else None
        if reading is not None and reading.unused(flag.name):
            continue
        if fld in _CHECKPOINT_FIELDS and arg is not None and download_switch(arg):
            continue
        if fld in _DATA_FIELDS and dataset_name(flag, arg):
            continue
        if fld == "train.epochs" and arg is not None and (not isinstance(arg.default, int) or isinstance(arg.default, bool)
                                                          or arg.default <= 0):
            continue  # --max_steps -1 (no limit): it does not count this training
        out.append(flag.name)
    return out
_PATH_HELP = re.compile(r"\b(path|dir|directory|folder|file|root|location)\b", re.IGNORECASE)
_DATASET_NAME = re.compile(r"\d|cifar|mnist|imagenet|mvtec|coco|voc|sst|glue|cola|mrpc|qnli|imdb|chnsenticorp|div2k|"
                           r"bsd|urban|icdar|totaltext|ctw|cub|flowers|stanford|cars|dogs|aircraft|celeba|ffhq", re.IGNORECASE)


def dataset_name(flag: Flag, arg: Arg | None) -> str:
    """Why a data flag takes a data-set *name* (``--data cifar10``, ``--dataset`` with choices), not a path; ""
    when it may take a path. A name given as the path makes the script look up no data set it knows."""
    if _PATH_HELP.search(flag.help):
        return ""
    if flag.choices:
        return f"a data-set name: choices {', '.join(flag.choices[:6])}"
    default = arg.default if arg is not None else None
    if (isinstance(default, str) and default and "/" not in default and "." not in default and "\\" not in default
            and _DATASET_NAME.search(default)):
        return f"a data-set name: default {default!r}"
    return ""


# Field → (a loose flag name that fits, one that does not): the fallback when no listed name is there.
_FALLBACK = {"train.epochs": (r"epoch", r"save|eval|test|interval|warmup|decay|start|log|val|freq|step|every"),
             "inference.data": (r"^(img|image|input|data|infer|test|src|source|file|picture|photo|text)",
                                r"model|weight|param|ckpt|output|save|result|log|size|num|batch|thread")}


def _said(arg: Arg) -> str:
    text = arg.help.strip() or f"default {arg.default!r}"
    return text if len(text) <= 70 else text[:67] + "..."


def _where(role: str, script: Script) -> str:
    return f"{SCRIPT_FIELD[role]} ({script.path})"


def _default_text(arg: Arg) -> str:
    return "not a literal" if arg.default is not None and not isinstance(arg.default, (str, int, float, bool)) else repr(arg.default)


def notes(root: Path, scripts: dict[str, Script], readings: dict[str, Reading], chosen: dict[str, str | None],
          lite_epochs: int) -> list[str]:
    """The notes of every reading: downloads, data files, gated saves, disagreeing defaults."""
    out: list[str] = []
    for role, script in scripts.items():
        reading = readings.get(script.path)
        if reading is None or not reading.readable:
            continue
        given = {word.split("=", 1)[0] for word in script.args}
        out.extend(_downloads(role, script, reading, given, set(chosen.values())))
        out.extend(_data_files(root, role, script, reading, given, set(chosen.values())))
        if role == "train":  # what the training saves is what eval and export load
            # a flag another step passes to the same script is that step's mode (`--evaluate-only`): not the train's
            modes = {w.split("=", 1)[0] for other in scripts.values() if other is not script and other.path == script.path
                     for w in other.args if w.startswith("-")}
            out.extend(_gated(role, script, reading, given | modes, lite_epochs))
    out.extend(_disagreeing(scripts, readings, {loose(f) for f in chosen.values() if f}))
    return out


def _downloads(role: str, script: Script, reading: Reading, given: set[str], chosen: set) -> list[str]:
    out = []
    for arg in reading.args:
        if arg.name in chosen or given & set(arg.names) or reading.unused(arg.name):
            continue
        off = download_off(arg)
        if off is None:
            continue  # not a download switch, or off by default
        out.append(f"{script.path}: {arg.name} (line {arg.line}, default {_default_text(arg)}) downloads pretrained "
                   f"weights ({_said(arg)}); offline the step fails at start-up: add `{off}` to {_where(role, script)} "
                   "in tipc.yaml, or ship the weights")
    return out


def _data_files(root: Path, role: str, script: Script, reading: Reading, given: set[str], chosen: set) -> list[str]:
    """A data file the code names (a flag's default or a literal) that is not in the repository, and the
    flag whose block makes it."""
    out = []
    named: dict[str, str] = {}
    for arg in reading.args:
        name = data_file_name(arg.default)
        if name is not None and arg.name not in chosen and not given & set(arg.names) and not output_like(arg):
            named.setdefault(name, f"the default of {arg.name}")
    for name, where in reading.data_files:
        named.setdefault(name, where)
    base = (root / script.path).parent
    preparing = [g for g in reading.gates if g.what == "data preparation"]
    for name, where in named.items():
        if (root / name).exists() or (base / name).exists() or "{" in name or "%" in name:
            continue
        if preparing:
            gate = preparing[0]
            arg = next((a for a in reading.args if a.dest == gate.dest), None)
            if arg is None or given & set(arg.names):
                continue
            on = f"{arg.name} True" if arg.switch and arg.action != "store_true" else arg.name
            out.append(f"{script.path} reads {name} ({where}), which is not in the repository; {arg.name} makes it "
                       f"(`{', '.join(gate.calls)}` at {gate.where}, default {_default_text(arg)}): add `{on}` to "
                       f"{_where(role, script)} in tipc.yaml, or ship the file as lite data (data.files)")
        elif name not in reading.made:  # a file the code makes unconditionally is its own
            out.append(f"{script.path} reads {name} ({where}), which is not in the repository: ship it as lite data "
                       "(tipcgen new --train-data, data.files in tipc.yaml) or make it in data.setup")
    return out


def _gated(role: str, script: Script, reading: Reading, given: set[str], lite_epochs: int) -> list[str]:
    out = []
    seen: set[str] = set()  # one note per flag: its saving if it gates one, else its evaluation
    for gate in sorted(reading.gates, key=lambda g: g.what != "saving"):
        if gate.what == "data preparation" or gate.dest in seen:
            continue
        arg = next((a for a in reading.args if a.dest == gate.dest), None)
        if arg is None or given & set(arg.names) or MODE_SWITCH.search(arg.dest):
            continue
        seen.add(gate.dest)
        default = arg.default
        if isinstance(default, bool) or (arg.switch and truthy(default) is not None):
            if truthy(default):
                continue
            fix = arg.name if arg.action == "store_true" else f"{arg.name} True"
            why = f"off by default ({_default_text(arg)})"
        elif default is None or default == 0:
            fix, why = f"{arg.name} 1", f"its default is {_default_text(arg)}"
        elif isinstance(default, int) and gate.modulo and default > lite_epochs:
            fix, why = f"{arg.name} 1", f"every {default} (its default); a lite run trains {lite_epochs}"
        else:
            continue
        then = "export and eval find no checkpoint" if gate.what == "saving" else "no metric is printed"
        out.append(f"{script.path}: {gate.what} happens only when {arg.name} says so (`{', '.join(gate.calls)}` under "
                   f"the if at {gate.where}), {why}: a lite run may do none and {then}; add `{fix}` to "
                   f"{_where(role, script)} in tipc.yaml")
    return out


def _disagreeing(scripts: dict[str, Script], readings: dict[str, Reading], chosen: set[str]) -> list[str]:
    """An architecture flag (same name, literal defaults) that train and another step default differently."""
    train = scripts.get("train")
    if train is None or readings.get(train.path) is None:
        return []
    out = []
    train_args = {loose(a.name): a for a in readings[train.path].args}
    for role, script in scripts.items():
        if role == "train" or readings.get(script.path) is None or script.path == train.path:
            continue
        given = {word.split("=", 1)[0] for word in script.args}
        for arg in readings[script.path].args:
            key = loose(arg.name)
            mine = train_args.get(key)
            if (mine is None or key in chosen or _NOT_ARCHITECTURE.search(arg.dest) or given & set(arg.names)
                    or not _scalar(arg.default) or not _scalar(mine.default) or arg.default == mine.default
                    or {word.split("=", 1)[0] for word in train.args} & set(mine.names)):
                continue
            out.append(f"{arg.name}: {train.path} defaults to {mine.default!r}, {script.path} to {arg.default!r}: "
                       f"the {role} step builds another model than the one trained; add `{arg.name} {mine.default}` to "
                       f"{_where(role, script)} in tipc.yaml (or the same value to both)")
    return out


def _scalar(value: object) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool) and value != ""


def unfilled(fld: str, script: Script, choice: Choice, names: tuple[str, ...]) -> str:
    """A note for a slot no flag fills: the flags passed over, else the script's flags nearest the names."""
    if choice.passed_over:
        seen = "; ".join(choice.passed_over)
    else:
        flags = [f.name for f in script.flags]
        near = []
        for name in names[:6]:
            near += [m for m in difflib.get_close_matches(name, [loose(f) for f in flags], n=2, cutoff=0.75)]
        shown = [f for f in flags if loose(f) in near]
        seen = ("nearest: " + ", ".join(dict.fromkeys(shown))) if shown else "none of its flags is near"
    return (f"{fld} stays empty: no flag of {script.path} fills it (tried {', '.join('--' + n for n in names[:4])}, ...; "
            f"{seen}); pass --flag {fld}=FLAG, or edit {fld} in tipc.yaml")


def choose_flags(scripts: dict[str, Script], flags: dict[str, str], notes: list,
                  readings: dict[str, Reading]) -> tuple[dict[str, str | None], dict[str, Script]]:
    """Field → the flag that fills it (None: the slot stays null), and field → the script whose flag it is.
    A flag the code never reads, or a download switch for a checkpoint field, is passed over (new/reading.py)."""
    chosen: dict[str, str | None] = {}
    owners: dict[str, Script] = {}
    for fld, (role, names) in CANDIDATES.items():
        script = scripts.get(role)
        if fld in flags:
            flag_name = flags[fld]
            chosen[fld] = None if flag_name.lower() == "null" else flag_name
            continue
        if script is None:
            chosen[fld] = None
            continue
        # The runner passes train.pretrained's key to eval with the checkpoint: prefer a flag eval has too.
        order = [scripts["eval"], script] if fld == "train.pretrained" and "eval" in scripts else [script]
        choice = choose(fld, names, order, readings)
        flag = choice.flag
        if flag is not None and not flag.takes_value:
            notes.append(f"{choice.owner.path}: {flag.name} is a switch without a value; TIPC passes KEY=VALUE, so "
                         f"{fld} stays empty (make it take True/False, or pass --flag {fld}=FLAG)")
            flag = None
        elif flag is None and fld == "train.device" and not choice.passed_over:
            notes.append(f"{script.path} has no device flag: tipc.yaml has no train.device key, so the training runs "
                         "where Paddle puts it (the GPU when there is one, else the CPU); if a flag under another "
                         "name chooses the device, pass --flag train.device=FLAG")
        elif flag is None and (choice.passed_over or fld in _NOTED_EMPTY):
            notes.append(unfilled(fld, script, choice, names))
        elif choice.by_name:
            notes.append(f"question: {fld}: {flag.name} ({choice.owner.path}) chosen by its name alone (no usual name "
                         f"fits): is it? candidates: {flag.name} or another flag (--flag {fld}=FLAG)")
        elif choice.passed_over:
            notes.append(f"{fld}: {flag.name} ({choice.owner.path}) chosen, passed over {'; '.join(choice.passed_over)}; "
                         f"if that is wrong, pass --flag {fld}=FLAG or edit {fld} in tipc.yaml")
        if flag is not None and choice.also:
            notes.append(f"question: {fld} is {flag.name} ({choice.owner.path}); {', '.join(choice.also)} may fill it too: "
                         f"is {flag.name} the one? (candidates: {', '.join([flag.name, *choice.also])}; "
                         f"--flag {fld}=FLAG, or {fld} in tipc.yaml)")
        chosen[fld] = flag.name if flag else None
        if flag is not None and choice.owner is not None:
            owners[fld] = choice.owner
    return chosen, owners


# Slots whose emptiness a user should hear of even when no flag came near (the rest default sensibly).
_NOTED_EMPTY = ("train.epochs", "train.batch_size", "train.extra", "eval.extra", "inference.data", "train.device",
                "inference.use_gpu")


@contextlib.contextmanager
def with_choices(notes: list[str]):
    """A refusal of the chain (new's _check) also lists the slots left empty and the flags passed over."""
    try:
        yield
    except TipcgenError as exc:
        seen = [note for note in notes if " stays empty" in note or " passed over " in note]
        if not seen:
            raise
        raise TipcgenError(exc.message + "\n" + "\n".join(f"  - {note}" for note in seen), exc.hint) from None


def setup_notes(root: Path, scripts: dict[str, Script], chosen: dict[str, str | None],
                data_files: dict[str, tuple[str, str]], env: dict[str, str], values_given: tuple[str, ...] = ()) -> list[str]:
    """A value given (--value, --infer-data) that no flag passes; an inference script that may need an env:
    (never added unasked)."""
    out = [f"--value {fld}=... is given, but no flag fills {fld}, so the runner passes nothing; pass --flag {fld}=FLAG "
           f"too, or edit {fld}'s key in tipc.yaml" for fld in values_given
           if fld in CANDIDATES and not chosen.get(fld) and CANDIDATES[fld][0] in scripts]
    if "infer" in data_files and not chosen.get("inference.data") and "infer" in scripts:
        out.append(f"{scripts['infer'].path}: no flag for the inference data (inference.data) was found, so the "
                   f"--infer-data {data_files['infer'][1]} shipped is not passed to it; pass --flag inference.data=FLAG, "
                   "or edit inference.data in tipc.yaml")
    if "infer" in scripts and legacy_format.loads_pdmodel(root / scripts["infer"].path) and legacy_format.FLAG not in env:
        script = scripts["infer"].path
        out.append(legacy_format.advice(script, legacy_format.pdmodel_line(root, script))
                   + f" (then: tipcgen new --env {legacy_format.FLAG}=0)")
    return out
