"""What makes a training big, read from the scripts' source (``configs/script_reading``, ``ast``) and set for
the lite data, each edit named in a note; and the checkpoint name train saves for eval and export.

Shaped on reproduction repositories: a checkpoint saved only every ``--save_interval`` / ``--test_epochs`` /
``--eval_freq`` (above the lite run's epochs or iterations: nothing saved, eval and export find nothing),
patches cut at a ``--stride`` below ``--patch_size`` (two images become thousands of patches), augmentation
multipliers (``--aug_times 8``), a class filter whose default ``all`` wants every class of a data set the
lite data has one of (``--type all`` on MVTec). Each edit is a fixed argument appended to the script's
command in tipc.yaml; a pick it is not sure of is a question with its candidates, and nothing is set.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tipcgen.configs.script_help import Flag, Script, loose
from tipcgen.configs.script_reading import Arg, Reading, read_script, truthy
from tipcgen.new.fields import MODE_SWITCH
from tipcgen.new.overrides import override_flag

SCRIPT_FIELD = {"train": "train.norm", "eval": "eval.script", "export": "export.norm", "infer": "inference.script"}
_INTERVAL_NAME = re.compile(r"(save|eval|test|val|valid|ckpt|checkpoint|snapshot)\w*(interval|freq|frequency|every|"
                            r"epochs?|steps?|iters?|period)$|^(save|eval|test|val)_?(every|per)\w*$")
_STRIDE_NAME = re.compile(r"^(patch_?|crop_?)?stride$")
_PATCH_NAME = re.compile(r"^(patch|crop|window|tile)(_?size)?$|^(train_)?(patch|crop)_?size$")
_AUG_NAME = re.compile(r"^(aug(ment(ation)?)?_?(times|num|factor|mult|multiplier|repeat|repeats|count)|(num|n)_?aug(s|ment(s|ations)?)?|"
                       r"(data(set)?_?)?repeats?(_?times)?|num_?repeats?)$")
_CLASS_NAME = re.compile(r"^(type|category|categories|class|class_?name|classes|obj|object|object_?name|subset|cls|"
                         r"sub_?category|texture)$")
_ONE_CLASS_NAME = re.compile(r"^(category|class_?name|obj|object_?name|sub_?category|texture|defect_?class)$")
_ALL = ("all", "everything", "*")
_WEIGHTS_DEST = re.compile(r"ckpt|checkpoint|weight|model|param|pretrain|resume|state|load|init", re.IGNORECASE)
_CHECKPOINT_SUFFIX = (".pdparams", ".pdckpt", ".ckpt", ".pth", ".pt")


@dataclass(frozen=True)
class Edit:
    """A fixed argument added to a role's command (flag and value), and the note that says why."""

    role: str
    flag: str
    value: str
    note: str


def _given(script: Script, arg: Arg) -> bool:
    return any(word.split("=", 1)[0] in arg.names for word in script.args)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _unit(steps: bool, count: int) -> str:
    return f"{count} iteration{'s' if count != 1 else ''}" if steps else f"{count} epoch{'s' if count != 1 else ''}"


def edits(root: Path, scripts: dict[str, Script], readings: dict[str, Reading], chosen: dict[str, str | None],
          lite_count: int, steps: bool, train_data: str | None) -> list[Edit]:
    """The edits that make the lite training lite and make it save (see the module's doc); each at most once
    per flag, none for a flag the user gave or a slot fills."""
    train = scripts.get("train")
    reading = readings.get(train.path) if train is not None else None
    if train is None or reading is None or not reading.readable:
        return []
    slot_flags = {loose(f) for f in chosen.values() if f}
    free = [a for a in reading.args if not _given(train, a) and loose(a.name) not in slot_flags]
    # a flag another step passes to the same script is that step's mode (PaddleGAN's eval is `tools/main.py
    # --evaluate-only`, which tests and returns before training): never one the training is given
    modes = {w.split("=", 1)[0] for s in scripts.values() if s is not train and s.path == train.path
             for w in s.args if w.startswith("-")}
    free = [a for a in free if not set(a.names) & modes]
    out: list[Edit] = []
    for rule in (lambda left: _intervals(train, reading, left, lite_count, steps), lambda left: _strides(train, left),
                 lambda left: _augmentations(train, left),
                 lambda left: _class_filters(root, scripts, readings, train, left, train_data)):
        out += rule(free)
        edited = {e.flag for e in out if e.role == "train"}
        free = [a for a in free if a.name not in edited]  # one edit a flag: the first rule that reads it
    return out


def _intervals(train: Script, reading: Reading, free: list[Arg], lite_count: int, steps: bool) -> list[Edit]:
    """A save or an evaluation gated by a flag whose default skips it in a lite run: the flag set so it happens."""
    out, seen = [], set()
    gates = {g.dest: g for g in sorted(reading.gates, key=lambda g: g.what != "saving") if g.what != "data preparation"}
    for arg in free:
        gate = gates.get(arg.dest)
        by_name = gate is None and _INTERVAL_NAME.search(arg.dest.lower().replace("_", "")) is not None \
            and not reading.unused(arg.name)  # parsed and never read (a literal `step % 5000` gates): it sets nothing
        if gate is None and not by_name or arg.dest in seen or MODE_SWITCH.search(arg.dest):
            continue
        default = arg.default
        what = gate.what if gate is not None else "saving or evaluation (by its name)"
        where = f" (`{', '.join(gate.calls)}` under the if at {gate.where})" if gate is not None else ""
        then = "so the training saves" if gate is None or gate.what == "saving" else "so the training evaluates"
        if gate is not None and (isinstance(default, bool) or (arg.switch and truthy(default) is not None)):
            if truthy(default):
                continue
            value = "" if arg.action == "store_true" else "True"
            note = f"{arg.name} is off by default ({default!r}): set {arg.name} {value or ''}".rstrip()
        elif gate is not None and (default is None or default == 0):
            value, note = "1", f"{arg.name} defaults to {default!r}, which skips {what}: set to 1"
        elif _int(default) is not None and default > lite_count and (gate is None or gate.modulo):
            value = "1"
            counts_steps = re.search(r"step|iter|batch", arg.dest, re.IGNORECASE) and not steps
            note = (f"{arg.name} defaults to {default}: a lite run ({_unit(steps, lite_count)} on the lite data) may end "
                    "before that many steps; set to 1") if counts_steps else \
                f"{arg.name} defaults to {default}, above the lite run's {_unit(steps, lite_count)}: set to 1"
        else:
            continue
        seen.add(arg.dest)
        out.append(Edit("train", arg.name, value, f"{train.path}: {note} {then}{where}; added to "
                                                  f"{SCRIPT_FIELD['train']} in tipc.yaml"))
    return out


def _strides(train: Script, free: list[Arg]) -> list[Edit]:
    """Patches cut at a stride below their size overlap: the lite images become (size/stride)² times as many."""
    patch = next((a for a in free if _PATCH_NAME.match(a.dest.lower()) and _int(a.default)), None)
    out = []
    for arg in free:
        if not _STRIDE_NAME.match(arg.dest.lower()) or _int(arg.default) is None or arg.default <= 0:
            continue
        if patch is None:
            continue  # a stride without a patch size (a conv's stride) is the model's, not the data's
        if arg.default < patch.default:
            many = (patch.default // arg.default) ** 2
            out.append(Edit("train", arg.name, str(patch.default),
                            f"{train.path}: {arg.name} defaults to {arg.default} with {patch.name} {patch.default}: "
                            f"overlapping patches, about {many} times as many as the lite images need; set to "
                            f"{patch.default} (patches side by side); added to {SCRIPT_FIELD['train']} in tipc.yaml"))
    return out


def _augmentations(train: Script, free: list[Arg]) -> list[Edit]:
    out = []
    for arg in free:
        if _AUG_NAME.match(arg.dest.lower()) and _int(arg.default) is not None and arg.default > 1:
            out.append(Edit("train", arg.name, "1",
                            f"{train.path}: {arg.name} defaults to {arg.default}, which repeats the data set "
                            f"{arg.default} times: set to 1 for the lite run; added to {SCRIPT_FIELD['train']} in tipc.yaml"))
    return out


def _subfolders(root: Path, data: str | None) -> list[str]:
    if not data:
        return []
    folder = root / data
    if not folder.is_dir() or folder.is_symlink():
        return []
    try:
        return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))[:200]
    except OSError:
        return []


def _choices(scripts: dict[str, Script], role: str, arg: Arg) -> tuple[str, ...]:
    script = scripts.get(role)
    flag: Flag | None = script.find((arg.name,)) if script is not None else None
    return flag.choices if flag is not None else ()


def _class_filters(root: Path, scripts: dict[str, Script], readings: dict[str, Reading], train: Script,
                   free: list[Arg], train_data: str | None) -> list[Edit]:
    """A class filter whose default is every class (``--type all``): the lite data's one class, in every script
    that has the same flag with the same default; a question with the candidates when the data does not say."""
    out = []
    folders = _subfolders(root, train_data)
    for arg in free:
        if not isinstance(arg.default, str) or not arg.default:
            continue
        choices = _choices(scripts, "train", arg)
        if arg.default.lower() not in _ALL:
            # one class by default (--category leather) that the lite data does not hold, where it holds one
            # the flag takes: its choices, or a class flag by its name (--category, --class_name)
            named = [c for c in choices if c in folders] if choices else \
                folders if _ONE_CLASS_NAME.match(arg.dest.lower()) else []
            if not folders or arg.default in folders or len(named) != 1:
                continue
            value = named[0]
            out += _set_everywhere(scripts, readings, arg, value,
                                   f"(one class the lite data {train_data} does not hold) and the lite data holds the "
                                   f"class {value} only")
            continue
        if not (_CLASS_NAME.match(arg.dest.lower()) or (choices and arg.default in choices)):
            continue
        named = [c for c in choices if c in folders and c.lower() not in _ALL] if choices else folders
        if len(named) != 1:
            candidates = ", ".join((named or [c for c in choices if c.lower() not in _ALL])[:8]) or "none seen"
            out.append(Edit("train", "", "",
                            f"question: {train.path}: {arg.name} defaults to {arg.default!r} (every class); which class "
                            f"does the lite data hold? candidates: {candidates}; add `{arg.name} CLASS` to "
                            f"{SCRIPT_FIELD['train']} (and the other scripts that take it) in tipc.yaml"))
            continue
        out += _set_everywhere(scripts, readings, arg, named[0],
                               f"(every class) and the lite data {train_data} holds the class {named[0]} only")
    return out


def _set_everywhere(scripts: dict[str, Script], readings: dict[str, Reading], arg: Arg, value: str,
                    why: str) -> list[Edit]:
    """The class flag set to the lite data's class in every script that has it with the same default."""
    out = []
    for role, script in scripts.items():
        reading = readings.get(script.path)
        other = reading.arg(arg.name) if reading is not None else None
        if other is None or _given(script, other) or other.default != arg.default:
            continue
        out.append(Edit(role, other.name, value, f"{script.path}: {other.name} defaults to {arg.default!r} {why}: set "
                                                 f"to {value}; added to {SCRIPT_FIELD[role]} in tipc.yaml"))
    return out


def apply(scripts: dict[str, Script], found: list[Edit]) -> list[str]:
    """Append each edit to its script's fixed arguments; the notes, in order."""
    for edit in found:
        script = scripts.get(edit.role)
        if script is not None and edit.flag:
            words = list(script.args)
            at = _before_trailing_override(script)
            words[at:at] = [edit.flag, *([edit.value] if edit.value else [])]
            script.args = tuple(words)
    return [edit.note for edit in found]


def _before_trailing_override(script: Script) -> int:
    """Where a flag goes in the script's fixed arguments: at the end, or before a trailing nargs ``-o`` and its
    KEY=VALUE words (a flag after them would be one more value of it: argparse refuses a flag there)."""
    override = override_flag(script)
    words = list(script.args)
    last = max((i for i, w in enumerate(words) if w.startswith("-")), default=None)
    if override is None or last is None or words[last] not in override.names:
        return len(words)
    return last


# ---------------------------------------------------------------- the checkpoint name

def checkpoint_guess(root: Path, train: str | None, loaders: list[str]) -> tuple[str, str] | None:
    """(train.checkpoint, the note) from the source: what train saves inside a flag's folder, and whether eval
    and export load a folder (``.``) or a file (the name); None when the source does not say."""
    if not train:
        return None
    saved = [name for _, name in read_script(root, train).saves if name.lower().endswith(_CHECKPOINT_SUFFIX)]
    saved = list(dict.fromkeys(saved))
    if not saved:
        return None
    loads = [(path, load) for path in loaders for load in read_script(root, path).loads]
    in_folder = [(path, name) for path, (_, name) in loads if name and name in saved]
    # a folder of the output folder holding the name loaded (best_model/model.pdparams, iter_*/model.pdparams)
    sub = [(path, name, saves.rsplit("/", 1)[0]) for path, (_, name) in loads if name and "/" not in name
           for saves in _ranked(saved) if saves.endswith("/" + name)]
    whole = [path for path, (dest, name) in loads if not name and _WEIGHTS_DEST.search(dest)]
    if in_folder and not whole:
        path, name = in_folder[0]
        return ".", (f"train.checkpoint is '.' (the output folder): {train} saves {', '.join(saved)} in its output "
                     f"folder and {path} loads {name} from the folder its flag names")
    if sub and not whole:
        path, name, folder = sub[0]
        return folder, (f"train.checkpoint is {folder}{_which(folder)}: {train} saves {name} in it, and {path} loads "
                        f"{name} from the folder its flag names")
    if not whole:
        return None
    best = _ranked(saved)
    if len(best) == 1:
        return best[0], (f"train.checkpoint is {best[0]}{_which(best[0])}: {train} saves it in its output folder and "
                         f"{' and '.join(dict.fromkeys(whole))} load{'s' if len(set(whole)) == 1 else ''} the file named by a flag")
    return best[0], (f"question: train.checkpoint is {best[0]}{_which(best[0])}, one of the files {train} saves "
                     f"({', '.join(best)}); eval and export load the one named: is it the right one? (tipcgen new "
                     "--checkpoint NAME, or train.checkpoint in tipc.yaml)")


def _ranked(saved: list[str]) -> list[str]:
    """The names train saves, best first: a best snapshot, a final or latest one, any other fixed name, then a
    folder per iteration or epoch (``iter_*/model.pdparams``: its number is the run's)."""
    return sorted(saved, key=lambda n: ("*" in n, not re.search(r"best", n, re.IGNORECASE),
                                        not re.search(r"final|latest|last", n, re.IGNORECASE)))


def _which(name: str) -> str:
    """What a name with a ``*`` stands for: the runner gives eval and export its newest match."""
    if "*" not in name:
        return ""
    return (f" (a folder per iteration or epoch, {name.split('/')[0]}: the runner gives eval and export the newest, "
            "the one of the highest number)")
