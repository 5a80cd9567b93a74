"""``tipcgen new``: a descriptor for an existing Paddle repository, from its scripts' ``--help``.

Each script (train, eval, export, infer) is run as ``python SCRIPT --help`` in a subprocess with a
timeout; its argparse-style flags are matched to TIPC slots by name (``--epochs``/``--epoch_num``/
``--max_steps`` → ``train.epochs``, ...). Options override what probing finds. What a chain cannot do
without (a required flag no slot fills, a flag the runner passes that a script lacks) is an error
naming the option to pass. The descriptor is checked by loading and rendering it before it is written.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from tipcgen import descriptor
from tipcgen.core.errors import TipcgenError
from tipcgen.descriptor import writer
from tipcgen.format import layout
from tipcgen.new import data as new_data
from tipcgen.new import lite, overrides
from tipcgen.new import reading as new_reading
from tipcgen.configs import flag_check, script_reading
from tipcgen.new.fields import CANDIDATES, STEP_COUNTERS
from tipcgen.configs.script_help import PROBE_TIMEOUT, SCRIPT_OPTION, Flag, Script, loose, norm
from tipcgen.render import repository
from tipcgen.format.words import LITE_TRAIN_LITE_INFER, LITE_TRAIN_WHOLE_INFER

ROLES = ("train", "eval", "export", "infer")
DATA_ROLES = {"train": "train", "eval": "train", "infer": "infer"}  # descriptor data.files roles
_DATA_OPTION = {"train": "--train-data", "eval": "--eval-data", "infer": "--infer-data"}


@dataclass
class Proposal:
    """The descriptor text, and what was mapped from where (for the user to read)."""

    text: str
    model_name: str
    mapping: list[tuple[str, str, str]]  # (field, flag or value, origin)
    notes: list[str]


# ---------------------------------------------------------------- mapping

@dataclass
class Options:
    """What the user gave (as CLI options); anything missing may be asked for, or is an error."""

    model_name: str | None = None
    scripts: dict[str, str] = field(default_factory=dict)   # role → "path [fixed args]"
    data: dict[str, str] = field(default_factory=dict)      # role → lite data file
    setup: list[str] = field(default_factory=list)          # "script.py args" ({data_dir} is replaced)
    checkpoint: str | None = None
    python: str = "python"
    devices: str = "all"
    flags: dict[str, str] = field(default_factory=dict)     # field → flag ('null' drops it)
    values: dict[str, str] = field(default_factory=dict)    # field → YAML value
    probe_timeout: float = PROBE_TIMEOUT
    env: dict[str, str] = field(default_factory=dict)       # the descriptor's env: (only what was asked for)
    checkpoint_guessed: bool = False                          # train.checkpoint read from the scripts' source


def propose(options: Options, root: Path, ask: Callable[[str, str, str], str] | None = None) -> Proposal:
    """Probe the scripts and map their flags → a descriptor that loads and renders.

    ``ask(option, question, default)`` is called for missing values when stdin is a terminal; without
    it a missing value is an error that names the option to pass."""
    options = replace(options, scripts=dict(options.scripts))
    _setup_calls(options.setup)  # before any probing: a typo here should not cost a minute of --help runs
    guessed = _guess_checkpoint(options, root)
    _ask_missing(options, root, ask)
    scripts = {role: _script(role, given, root) for role in ROLES
               if (given := options.scripts.get(role)) is not None and given.lower() != "null"}
    model_name = options.model_name or ""
    # Each --help at once (each a process that mostly imports the model's packages), through the flag cache that
    # `tipcgen run`'s flag check reads next: a script probed here is not probed again there. An error is the
    # first script's, in the order of ROLES, as when they ran one by one.
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda s: flag_check.cached_flags(root, s, options.python, options.probe_timeout,
                                                                  unsandboxed=True), scripts.values()))
    for script, (flags, _) in zip(scripts.values(), answers):
        script.flags = flags
    readings = {s.path: script_reading.read_script(root, s.path) for s in scripts.values()}
    notes: list[str] = [guessed] if guessed and options.checkpoint_guessed else []
    found = {role: ov for role, s in scripts.items() if (ov := overrides.detect(root, s, readings.get(s.path)))}
    keyed = overrides.choose(scripts, found, options.flags, notes)  # -o scripts: keys of their YAML config
    chosen, owners = new_reading.choose_flags(scripts, {**keyed, **options.flags}, notes, readings)
    _device_eval_lacks(scripts, chosen, readings, options, notes, eval_overrides="eval" in found)
    data_dir = f"./train_data/{model_name}"
    data_files = _data_files(options.data, data_dir, root)
    values = _values(scripts, chosen, options, data_files, model_name)
    with new_reading.with_choices(notes):  # a refusal lists the slots left empty and the flags passed over
        _check(scripts, chosen, values, notes, eval_overrides="eval" in found)
    epochs = values.get("train.epochs")
    lite_count = epochs.get(LITE_TRAIN_LITE_INFER, 1) if isinstance(epochs, dict) else 1
    if not isinstance(lite_count, int) or isinstance(lite_count, bool):
        lite_count = 1
    steps = _counts_steps(chosen.get("train.epochs"))
    train_data = options.data.get("train")
    notes.extend(overrides.lite_edits(root, scripts, found, options.data, data_dir,
                                      {role: name for role, (name, _) in data_files.items()}, lite_count,
                                      chosen.get("train.pretrained")))
    notes.extend(overrides.place_single(scripts, found, chosen, flag_check.STEP_FIELDS,
                                        lambda fld: _how_passed(CANDIDATES[fld][0], fld, values)))
    notes.extend(lite.apply(scripts, lite.edits(root, scripts, readings, chosen, lite_count, steps, train_data)))
    notes.extend(new_reading.notes(root, scripts, readings, chosen, lite_count))
    env = dict(options.env)
    notes.extend(new_reading.setup_notes(root, scripts, chosen, data_files, env, tuple(options.values)))
    text = _document(model_name, scripts, chosen, values, options, data_files, data_dir, env, notes)
    desc = descriptor.load_text(text, source="<tipcgen new>", base_dir=root)
    repository.render_files(desc)
    mapping = []
    for fld, (role, _) in CANDIDATES.items():
        origin = "option" if fld in options.flags else "probed" if role in scripts else "no script"
        flag = chosen.get(fld)
        owner = owners.get(fld) or scripts.get(role)
        mapping.append((fld, f"{flag} ({owner.path})" if flag and owner else flag or "-", origin if flag else "empty"))
    return Proposal(text, model_name, mapping, notes)


_CPU_VALUES = {"cpu", "false", "0", "no"}
_GPU_VALUES = {"gpu", "cuda", "true", "1", "yes"}


def _device_eval_lacks(scripts: dict[str, Script], chosen: dict[str, str | None], readings: dict[str, Any],
                       options: Options, notes: list[str], eval_overrides: bool = False) -> None:
    """The runner passes train.device's key to eval too: an eval script without the train script's device flag
    would stop at it (unrecognized arguments). Each script gets what it has: the key is left out of tipc.yaml
    and said; with --devices cpu the train command fixes the flag's CPU value (exact: every case is the CPU);
    else the cases are the device the flag defaults to (a GPU default: the GPU entry only, a CPU default: the
    CPU entry only; a default that does not say: both, each where the script puts it), named in the note."""
    key = chosen.get("train.device")
    if not key or "eval" not in scripts or "train" not in scripts or "train.device" in options.flags:
        return
    if scripts["eval"].accepts(key) or (eval_overrides and (not key.startswith("-") or " " in key)):
        return
    if not key.startswith("-") or " " in key:
        return  # a config key of the train script's -o: the refusal names it
    train, evaluation = scripts["train"], scripts["eval"]
    flag = next((f for f in train.flags if key in f.names), None)
    reading = readings.get(train.path)
    arg = next((a for a in (reading.args if reading else ()) if key in a.names), None)
    default = arg.default if arg is not None else None
    said = str(default).split(":")[0].lower() if isinstance(default, (str, bool, int)) else ""
    switch = "gpu" in norm(key) or "cuda" in norm(key)
    own = evaluation.find(tuple(n.lstrip("-") for n in CANDIDATES["train.device"][1]))
    own_said = f" (its own {own.name} is not passed: it runs on that flag's default)" if own is not None else ""
    head = (f"{train.path}: {key} is left out of tipc.yaml (no train.device key): the runner passes train.device to "
            f"eval too, and {evaluation.path} has no {key}{own_said}")
    chosen["train.device"] = None
    if options.devices == "cpu":
        cpu = "False" if switch else next((c for c in (flag.choices if flag else ()) if c.lower() in _CPU_VALUES), "cpu")
        train.args = (*train.args, key, cpu)
        notes.append(f"{head}; the train command passes {key} {cpu} (every case is the CPU: --devices cpu), "
                     f"{evaluation.path} runs on its default device; to drive both, add {key} to {evaluation.path}, "
                     f"then --flag train.device={key}")
    elif said in _GPU_VALUES or (said and not switch and said not in _CPU_VALUES):
        options.devices = "gpu"
        notes.append(f"{head}; {key} defaults to {default!r}, so gpu_list has the GPU entry only (a CPU case would "
                     f"train on its default device); for the CPU case pass --devices cpu (the train command then "
                     f"passes {key}'s CPU value), or add {key} to {evaluation.path}, then --flag train.device={key}")
    elif said in _CPU_VALUES:
        options.devices = "cpu"
        notes.append(f"{head}; {key} defaults to {default!r}, so gpu_list has the CPU entry only (a GPU case would "
                     f"train on the CPU); to drive both, add {key} to {evaluation.path}, then --flag train.device={key}")
    else:
        notes.append(f"question: {head}; its default ({default!r}) does not say the device, so each case trains "
                     f"where {train.path} puts it (gpus_-1 may train on a GPU where there is one): pass --devices cpu "
                     f"for a CPU-only chain, or add {key} to {evaluation.path}, then --flag train.device={key}")


def _guess_checkpoint(options: Options, root: Path) -> str:
    """Without --checkpoint: what the train script saves by its flag's folder (``os.path.join(args.save_dir,
    "model.pdparams")``) and how eval and export load it: ``.`` when they load that name inside a folder flag
    (``--checkpoint .``: the runner passes the output folder), the name when they load a flag's path as is. Sets
    options.checkpoint and returns the note that says so (a question when several names fit); "" when the
    source does not say (then --checkpoint is asked for, as before)."""
    if options.checkpoint is not None or not options.scripts.get("train"):
        return ""
    from tipcgen.new.lite import checkpoint_guess

    def path(role: str) -> str | None:
        given = options.scripts.get(role)
        if not given or given.lower() == "null":
            return None
        try:
            return (shlex.split(given) or [None])[0]
        except ValueError:
            return None

    guess = checkpoint_guess(root, path("train"), [p for p in (path("eval"), path("export")) if p])
    if guess is None:
        return ""
    options.checkpoint, note = guess
    options.checkpoint_guessed = True
    return note


def _ask_missing(options: Options, root: Path, ask: Callable[[str, str, str], str] | None) -> None:
    """Fill what the user must say (scripts, model name, checkpoint) by asking, or fail naming every option."""
    if options.checkpoint == ".":
        options.checkpoint = ""
    wanted = [(SCRIPT_OPTION[role], f"the {role} script (path relative to the repository root)", role)
              for role in ("train", "export", "infer") if options.scripts.get(role) is None]
    if not options.model_name:
        wanted.append(("--model-name", "the model's name (it names test_tipc/configs/<model>)", "model_name"))
    # eval and export load <output_dir>/<checkpoint>; export is required unless given as null
    loads = options.scripts.get("eval") not in (None, "null") or options.scripts.get("export") != "null"
    if loads and options.checkpoint is None:
        wanted.append(("--checkpoint", "what train saves in its output dir for eval and export to load "
                       "(a file or folder name; '.' for the output dir itself; a * for a run's number or time: "
                       "'iter_*/model.pdparams', '*/iter_*_weight.pdparams', the newest match)", "checkpoint"))
    if not wanted:
        return
    if ask is None:
        listing = "\n".join(f"  {option}: {question}" for option, question, _ in wanted)
        raise TipcgenError(f"tipcgen new needs {len(wanted)} more option(s):\n{listing}", _EXAMPLE)
    for option, question, key in wanted:
        default = _suggest_name(options.scripts["train"], root) if key == "model_name" and options.scripts.get("train") else ""
        answer = ask(option, question, default).strip()
        if not answer:
            raise TipcgenError(f"{option}: no answer given", f"pass {option} ...; {_EXAMPLE}")
        if key == "model_name":
            options.model_name = answer
        elif key == "checkpoint":
            options.checkpoint = "" if answer == "." else answer
        else:
            options.scripts[key] = answer


_EXAMPLE = ("e.g. tipcgen new --model-name my_model --train tools/train.py --export tools/export_model.py "
            "--infer tools/infer.py --checkpoint best_model (on a terminal, tipcgen new asks instead)")


def _setup_calls(calls: list[str]) -> list[list[str]]:
    """Each --setup "SCRIPT.py ARGS" split as a shell would; an unbalanced quote is the user's to fix."""
    out = []
    for call in calls:
        try:
            words = shlex.split(call)
        except ValueError as exc:
            raise TipcgenError(f"--setup {call!r}: {exc} (an unbalanced quote)",
                               "close the quote, or quote the whole call once: --setup \"prep.py --out {data_dir}\"") from None
        if not words:
            raise TipcgenError("--setup is empty", "give a script and its arguments, e.g. --setup \"prep.py {data_dir}\"")
        out.append(words)
    return out


def _script(role: str, given: str, root: Path) -> Script:
    try:
        words = shlex.split(given)
    except ValueError as exc:
        raise TipcgenError(f"{SCRIPT_OPTION[role]} {given!r}: {exc}", "quote the script and its arguments as one word") from None
    if not words:
        raise TipcgenError(f"{SCRIPT_OPTION[role]} is empty", f"give a script path, or null for no {role} step")
    path = Path(words[0])
    full = path if path.is_absolute() else root / path
    if not full.is_file():
        raise TipcgenError(f"{SCRIPT_OPTION[role]} {words[0]}: no such file under {root}",
                           "give the script's path relative to the repository root (--root)")
    try:
        rel = full.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise TipcgenError(f"{SCRIPT_OPTION[role]} {words[0]} is outside the repository {root}",
                           "TIPC runs scripts by paths relative to the repository root") from None
    return Script(role, rel, tuple(words[1:]))


def _suggest_name(train: str, root: Path) -> str:
    name = Path(shlex.split(train)[0]).parent.name or root.resolve().name
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip("._-") or "my_model"


def _data_files(data: dict[str, str], data_dir: str, root: Path) -> dict[str, tuple[str, str]]:
    """Role → (file name in the data dir, lite source) for the lite data the user ships."""
    out = {}
    for role, source in data.items():
        if not (root / source).exists():
            raise TipcgenError(f"{_DATA_OPTION[role]} {source}: no such file or folder under {root}",
                               "give the lite data's path (a file, a folder or a .tar/.zip archive) relative to the repository root")
        out[role] = (new_data.entry_name(role, root / source), Path(source).as_posix())
    return out


def _data_value(scripts: dict[str, Script], fld: str, chosen: dict[str, str | None],
                data_files: dict[str, tuple[str, str]], role: str, data_dir: str) -> str | None:
    """The path a data flag gets: the lite data in the data folder, or that folder for a flag that takes one."""
    if role not in data_files:
        return None
    path = f"{data_dir}/{data_files[role][0]}"
    flag = _flag_of(scripts, fld, chosen)
    is_file = Path(data_files[role][0]).suffix != ""
    if flag is not None and is_file and new_data.takes_folder(norm(flag.name), flag.help):
        return data_dir  # a folder flag: the folder that holds the file
    return path


def _values(scripts: dict[str, Script], chosen: dict[str, str | None], options: Options,
            data_files: dict[str, tuple[str, str]], model_name: str) -> dict[str, Any]:
    """Field → the proposed value (YAML-ready Python data)."""
    cpu_only = options.devices == "cpu"
    values: dict[str, Any] = {}

    def device_values(fld: str, gpu: Any, cpu: Any) -> Any:
        flag = _flag_of(scripts, fld, chosen)
        if flag is not None and flag.choices:
            lowered = [c.lower() for c in flag.choices]
            gpu = next((c for c in flag.choices if c.lower() in ("gpu", "cuda", "true")), gpu)
            cpu = next((c for c in flag.choices if c.lower() in ("cpu", "false")), cpu)
            if "cpu" not in lowered and "false" not in lowered:
                cpu = flag.choices[0]
        return [cpu] if cpu_only else [gpu] if options.devices == "gpu" else [gpu, cpu]

    device_flag = chosen.get("train.device") or ""
    is_switch = "gpu" in norm(device_flag) or "cuda" in norm(device_flag)  # --use_gpu, --cuda: True/False, never cpu
    values["train.device"] = device_values("train.device", True if is_switch else "gpu", False if is_switch else "cpu")
    autocast = _flag_of(scripts, "train.autocast", chosen)
    values["train.autocast"] = "fp32" if autocast is None else \
        new_data.autocast_value(norm(autocast.name), autocast.help, autocast.choices)
    steps = _counts_steps(chosen.get("train.epochs"))
    lite = {LITE_TRAIN_LITE_INFER: 10 if steps else 1, LITE_TRAIN_WHOLE_INFER: 10 if steps else 1}
    values["train.epochs"] = lite  # whole_train_whole_infer: no value, so the script's own default
    values["train.batch_size"] = {LITE_TRAIN_LITE_INFER: 4, LITE_TRAIN_WHOLE_INFER: 4}
    values["train.output_dir"] = "./output/"
    values["train.pretrained"] = None
    data_dir = f"./train_data/{model_name}"
    values["train.extra"] = _data_value(scripts, "train.extra", chosen, data_files, "train", data_dir)
    values["eval.extra"] = _data_value(scripts, "eval.extra", chosen, data_files, "eval", data_dir)
    values["export.output_dir"] = "./output/"
    values["export.weights"] = None
    use_gpu = loose((chosen.get("inference.use_gpu") or "").rsplit(".", 1)[-1]) == "usegpu"  # -o Global.use_gpu too
    values["inference.use_gpu"] = device_values("inference.use_gpu", True if use_gpu else "gpu", False if use_gpu else "cpu")
    values["inference.enable_mkldnn"] = [False, True]
    values["inference.cpu_threads"] = [1, 2]
    values["inference.batch_size"] = 1
    values["inference.use_tensorrt"] = False
    precision = _flag_of(scripts, "inference.precision", chosen)
    values["inference.precision"] = "fp32" if precision is None or not precision.choices or "fp32" in precision.choices \
        else precision.choices[0]
    values["inference.model_dir"] = None
    infer_data = _data_value(scripts, "inference.data", chosen, data_files, "infer", data_dir)
    values["inference.data"] = infer_data
    values["inference.benchmark"] = True
    values["train.infer_data"] = infer_data
    import yaml

    for fld, text in options.values.items():
        try:
            values[fld] = yaml.safe_load(text)
        except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: an int of 4300+ digits
            raise TipcgenError(f"--value {fld}={text[:80]}: not a YAML value ({(str(exc).splitlines() or ['?'])[0][:120]})",
                               "e.g. --value inference.cpu_threads='[1, 6]'") from None
    if "inference.data" in options.values and "train.infer_data" not in options.values:
        values["train.infer_data"] = values["inference.data"]  # what inference reads after training
    return values


def _counts_steps(key: str | None) -> bool:
    """Whether the epochs key counts iterations (--iter, --max_steps, Global.max_iters)."""
    return loose((key or "").rsplit(".", 1)[-1]) in {loose(n) for n in STEP_COUNTERS}


def _flag_of(scripts: dict[str, Script], fld: str, chosen: dict[str, str | None]) -> Flag | None:
    role = CANDIDATES[fld][0]
    name = chosen.get(fld)
    script = scripts.get(role)
    if name is None or script is None:
        return None
    return next((f for f in script.flags if name in f.names), None)




def _passed_with_value(role: str, fld: str, values: dict[str, Any]) -> bool:
    """Whether the runner passes this field's flag with a value (a null value drops the flag)."""
    if fld in layout.RUNNER_FILLED or (role == "eval" and fld == "train.pretrained"):
        return True
    # after training, inference reads train.infer_data (with inference.data's key)
    value = values.get("train.infer_data" if fld == "inference.data" else fld)
    return value not in (None, "", [], {})


def _how_passed(role: str, fld: str, values: dict[str, Any]) -> str:
    """"always" when the runner passes this field's flag in every mode, "sometimes" for a per-mode value (a mode
    without one drops the flag), "" never."""
    if not _passed_with_value(role, fld, values):
        return ""
    return "sometimes" if isinstance(values.get(fld), dict) else "always"


def _check(scripts: dict[str, Script], chosen: dict[str, str | None], values: dict[str, Any], notes: list[str],
           eval_overrides: bool = False) -> None:
    """Errors for what would make the chain fail; notes for what the user should know. ``eval_overrides``: the
    eval script takes ``-o key=value`` (a config key passed to it is one of those, not a flag)."""
    problems = []
    passed: dict[str, dict[str, str]] = {role: {} for role in ROLES}  # role → {flag: the field that passes it}
    for fld, (role, _) in CANDIDATES.items():
        if chosen.get(fld):
            passed[role][norm(chosen[fld])] = fld
    for fld in ("train.pretrained", "train.device"):  # the runner passes these to eval too
        if chosen.get(fld):
            passed["eval"][norm(chosen[fld])] = fld
    for role, script in scripts.items():
        for flag in script.flags:
            if not flag.required or script.given(flag):
                continue
            fld = next((passed[role][norm(n)] for n in flag.names if norm(n) in passed[role]), None)
            if fld is None:
                problems.append(f"{script.path}: the required flag {flag.name} fills no TIPC slot; give it as a fixed "
                                f"argument ({SCRIPT_OPTION[role]} \"{script.path} {flag.name} VALUE\") or map it "
                                f"(--flag FIELD={flag.name})")
            elif not _passed_with_value(role, fld, values):
                data_role = {"train.extra": "train", "eval.extra": "eval", "inference.data": "infer"}.get(fld)
                fix = f"ship lite data with {_DATA_OPTION[data_role]} FILE" if data_role else f"pass --value {fld}=VALUE"
                problems.append(f"{script.path}: the required flag {flag.name} ({fld}) gets no value; {fix}")
    if "eval" in scripts:
        for fld, why in (("train.pretrained", "the checkpoint"), ("train.device", "the device")):
            key = chosen.get(fld)
            if key and not (eval_overrides and (not key.startswith("-") or " " in key)) and not scripts["eval"].accepts(key):
                problems.append(f"{scripts['eval'].path} has no {key}, but the runner passes {why} to eval with the "
                                f"key of {fld}; add it to the eval script, or pass --eval null to skip eval")
        if not chosen.get("train.pretrained"):
            problems.append(f"{scripts['eval'].path}: no flag to load the trained checkpoint was found (tried "
                            f"{', '.join('--' + n for n in CANDIDATES['train.pretrained'][1][:4])}, ...); "
                            "pass --flag train.pretrained=FLAG")
    for fld, role in (("export.weights", "export"), ("inference.model_dir", "infer")):
        if role in scripts and not chosen.get(fld):
            problems.append(f"{scripts[role].path}: no flag for {fld} was found; pass --flag {fld}=FLAG")
    for fld, role in (("train.output_dir", "train"), ("export.output_dir", "export")):
        if role not in scripts:
            continue
        if not chosen.get(fld):  # never rendered empty: the step would write wherever the script's default is
            tried = ", ".join("--" + n for n in CANDIDATES[fld][1][:8])
            problems.append(f"{scripts[role].path}: no flag for the {role} output folder ({fld}) was found (tried "
                            f"{tried}, ...); without one the {role} step writes to the script's default folder, "
                            f"perhaps over files the repository tracks; pass --flag {fld}=FLAG, or add such a flag to the script")
        elif values.get(fld) in (None, "", "null"):
            problems.append(f"{scripts[role].path}: {chosen[fld]} ({fld}) gets no folder; pass --value {fld}=./output/")
    for fld in ("train.extra", "eval.extra", "inference.data"):
        role = CANDIDATES[fld][0]
        if chosen.get(fld) and values.get(fld) is None and role in scripts:
            notes.append(f"{scripts[role].path}: {chosen[fld]} is not passed, so the script reads its default data; "
                         f"ship lite data with {_DATA_OPTION[role]} FILE")
    for fld in ("train.extra", "eval.extra", "inference.data"):
        flag = _flag_of(scripts, fld, chosen)
        value = values.get("train.infer_data" if fld == "inference.data" else fld)
        if flag is not None and isinstance(value, str) and value not in ("", "null"):
            mismatch = new_data.kind_mismatch(norm(flag.name), flag.help, value)
            if mismatch:
                notes.append(f"{scripts[CANDIDATES[fld][0]].path}: {flag.name} {mismatch}; check {fld} "
                             f"(--value {fld}=PATH) or the flag (--flag {fld}=FLAG)")
    if problems:
        raise TipcgenError("the chain would fail:\n" + "\n".join(f"  - {p}" for p in problems),
                           "fix the scripts or pass the options named above; tipcgen new --help lists them")


# ---------------------------------------------------------------- the descriptor text

def _document(model_name: str, scripts: dict[str, Script], chosen: dict[str, str | None], values: dict[str, Any],
              options: Options, data_files: dict[str, tuple[str, str]], data_dir: str, env: dict[str, str],
              notes: Sequence[str] = ()) -> str:
    def entry(fld: str) -> str:
        return writer.keyed(chosen.get(fld), values.get(fld))

    setup = [[word.replace("{data_dir}", data_dir) for word in call] for call in _setup_calls(options.setup)]
    context = {
        "model_name": writer.flow(model_name), "python": writer.flow(options.python),
        "gpu_list": writer.flow({"cpu": ["-1"], "gpu": ["0"]}.get(options.devices, ["0", "-1"])),
        "scripts": {role: writer.flow(s.command) for role, s in scripts.items()},
        "sources": {role: s.path for role, s in scripts.items()},
        "entry": entry, "flow": writer.flow, "checkpoint": writer.flow(options.checkpoint if options.checkpoint is not None else None),
        "infer_data": writer.flow(values.get("train.infer_data")),
        "data_dir": writer.flow(data_dir),
        "data_files": [(name, writer.flow({"role": DATA_ROLES[role], "lite": source, "whole": name}))
                       for role, (name, source) in sorted(data_files.items(), key=lambda kv: ROLES.index(kv[0]))],
        "setup": [writer.flow(call) for call in setup],
        "env": writer.flow(env) if env else None,
        "whole_infer": None,
        "paddle2onnx": None,
        "notes": [" ".join(note.split()) for note in notes],
    }
    # a folder per iteration (iter_*/model.pdparams): no one model to name before a run, so no whole_infer models
    if (data_files or setup) and "export" in scripts and options.checkpoint is not None and "*" not in options.checkpoint:
        trained = f"{data_dir}/trained"
        context["trained_model"] = writer.flow(trained)
        if "infer" in scripts and chosen.get("inference.model_dir"):
            flag = scripts["infer"].find(("use_onnx", "onnx"))
            context["paddle2onnx"] = {"save_file": writer.flow(f"{data_dir}/onnx/model.onnx"), "inference": context["scripts"]["infer"],
                                      # --use_onnx is the default: written only when the script has another one, or none
                                      "onnx_flag": None if flag is not None and flag.name == "--use_onnx"
                                      else writer.flow(flag.name) if flag is not None and flag.takes_value else "null"}
        context["whole_infer"] = {"models": writer.flow(f"{trained}/{options.checkpoint}" if options.checkpoint else trained),
                                  "export": context["scripts"]["export"]}
    return repository.environment().get_template("descriptor/tipc.yaml.j2").render(**context)
