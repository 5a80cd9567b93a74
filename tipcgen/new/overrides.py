"""Scripts driven by ``-o key=value`` over a YAML config (PaddleOCR, PaddleDetection, PaddleClas and the
reproductions built on them): the slots are keys of the config, not flags.

``tools/train.py -c configs/det/x.yml -o Global.epoch_num=1 Global.save_model_dir=./out/`` takes its
settings from the YAML the ``-c`` flag names (given in the script's command, else the flag's default);
``-o`` overrides keys of it. Here the config is read (``yaml.safe_load``, inside the repository) and its
keys are matched to the descriptor's slots (epochs, batch size, save dir, the checkpoint keys, data dirs,
device). How the runner passes them depends on ``-o``: with ``nargs='+'``/``'*'`` (PaddleOCR, Detection)
a second ``-o`` replaces the first, so the command ends in ``-o`` and every key is a bare word
(``Global.epoch_num``: the runner appends ``Global.epoch_num=1``, as PaddleOCR's own TIPC configs do);
with ``action='append'`` (PaddleClas) each key is ``-o KEY`` (the runner passes ``-o KEY=VALUE``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tipcgen.configs.script_help import Flag, Script, loose
from tipcgen.configs.script_reading import Arg, Reading
from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError

CONFIG_LIMIT = 1 << 20  # a model config is a few KB
_OVERRIDE_NAMES = {"o", "opt", "opts", "override", "overrides", "options", "cfgoptions", "config_options"}
_CONFIG_NAMES = {"c", "config", "cfg", "configfile", "cfgfile", "configpath"}
_OVERRIDE_HELP = re.compile(r"overrid|config|option|key\s*=\s*value|set ", re.IGNORECASE)

# Field → the last part of a key that fills it, best first; the roles the key is looked up in.
_KEYS: dict[str, tuple[str, ...]] = {
    "train.epochs": ("epoch_num", "epochs", "num_epochs", "max_epochs", "total_epochs", "epoch", "max_iters",
                     "total_iters", "iters", "max_iter", "max_steps", "total_steps", "num_steps"),
    "train.output_dir": ("save_model_dir", "output_dir", "save_dir", "work_dir", "save_path", "checkpoint_dir",
                         "output", "weight_dir", "save_folder"),
    "train.device": ("use_gpu", "device"),
    "train.pretrained": ("pretrained_model", "checkpoints", "weights", "pretrain_weights", "init_checkpoint",
                         "finetune_checkpoint", "resume_weights", "resume_checkpoint", "checkpoint"),
    "export.weights": ("pretrained_model", "checkpoints", "weights", "pretrain_weights", "init_checkpoint",
                       "finetune_checkpoint", "resume_checkpoint", "checkpoint"),
    "export.output_dir": ("save_inference_dir", "inference_dir", "export_dir", "output_dir", "save_dir"),
    # an infer script driven by its own config (PaddleClas's deploy/configs/inference_cls.yaml)
    "inference.model_dir": ("inference_model_dir", "model_dir"),
    "inference.use_gpu": ("use_gpu",),
    "inference.enable_mkldnn": ("enable_mkldnn", "use_mkldnn"),
    "inference.cpu_threads": ("cpu_num_threads", "cpu_threads", "num_threads"),
    "inference.batch_size": ("batch_size",),
    "inference.use_tensorrt": ("use_tensorrt",),
    "inference.benchmark": ("enable_benchmark", "benchmark"),
}
_INFER_DATA = ("infer_imgs", "infer_img", "infer_dir", "infer_data", "image_dir", "img_dir", "image_path")
_BATCH = re.compile(r"^(batch_size(_per_card|_per_gpu)?|train_batch_size|batchsize|samples_per_gpu)$")
_DATA_DIR = ("data_dir", "dataset_dir", "image_root", "data_root", "img_dir", "image_dir", "data_path", "root",
             "dataset_root", "img_prefix", "image_prefix", "dataroot")  # dataroot: PaddleGAN's dataset.train.dataroot
_LABEL_LIST = re.compile(r"^(label_file_list|label_file|anno_path|ann_file|label_path|cls_label_path|data_list|file_list)$")
_TRAIN_PART = re.compile(r"train", re.IGNORECASE)
_EVAL_PART = re.compile(r"eval|val|test", re.IGNORECASE)
_INTERVAL = re.compile(r"^(save|eval|test|val|snapshot)\w*(step|steps|interval|freq|epoch|epochs|every|period)$|^snapshot_epoch$")
# an interval named by its parent (PaddleGAN's snapshot_config.interval, validate.interval): the last part says
# how often, the one before it of what
_INTERVAL_PARENT = re.compile(r"(^|_)(save|snapshot|checkpoint|ckpt|eval|evaluate|validate|validation|val|test)(_|$)")
_INTERVAL_LAST = {"interval", "freq", "frequency", "period", "every", "step", "steps", "epoch", "epochs", "iters"}
_DOWNLOAD = re.compile(r"pretrain|imagenet|download", re.IGNORECASE)
_ROLE_OF = {"train.epochs": "train", "train.output_dir": "train", "train.device": "train", "train.batch_size": "train",
            "train.extra": "train", "train.pretrained": "eval", "eval.extra": "eval", "export.weights": "export",
            "export.output_dir": "export", "inference.data": "infer", "inference.model_dir": "infer",
            "inference.use_gpu": "infer", "inference.enable_mkldnn": "infer", "inference.cpu_threads": "infer",
            "inference.batch_size": "infer", "inference.use_tensorrt": "infer", "inference.benchmark": "infer"}


@dataclass
class Overrides:
    """One script's ``-o``: its flag, how keys are passed, the config read and its keys (dotted path → value)."""

    flag: str
    append: bool  # action='append': each key passed as `-o KEY`
    config: str
    keys: dict[str, object] = field(default_factory=dict)
    # a nargs -o in a script whose own flags fill other fields (PaddleSeg's --opts beside --device, --save_dir):
    # the runner passes those flags after the command, so it cannot end in the -o; its one key goes as `-o KEY`
    single: bool = False
    fixed: list[tuple[str, str]] = field(default_factory=list)  # a single -o's fixed overrides, placed by place_single

    def key(self, dotted: str) -> str:
        return f"{self.flag} {dotted}" if self.append or self.single else dotted

    def words(self, pairs: list[tuple[str, str]]) -> list[str]:
        """Fixed overrides as command words (after the command's trailing -o, or each with its -o)."""
        out = []
        for dotted, value in pairs:
            out += [self.flag, f"{dotted}={value}"] if self.append or self.single else [f"{dotted}={value}"]
        return out


def override_flag(script: Script) -> Flag | None:
    for flag in script.flags:
        if flag.takes_value and any(loose(n) in {loose(x) for x in _OVERRIDE_NAMES} for n in flag.names) and \
                (not flag.help or _OVERRIDE_HELP.search(flag.help)):
            return flag
    return None


def _config_path(script: Script, reading: Reading | None) -> tuple[str, Flag | None]:
    """The config the command passes (-c PATH, --config=PATH), else the -c flag's literal default."""
    config_flag = next((f for f in script.flags if any(loose(n) in _CONFIG_NAMES for n in f.names)), None)
    if config_flag is None:
        return "", None
    words = list(script.args)
    for i, word in enumerate(words):
        name, sep, value = word.partition("=")
        if name in config_flag.names:
            return (value if sep else words[i + 1] if i + 1 < len(words) else ""), config_flag
    args = [*(reading.args if reading else ()), *(reading.module_args if reading else ())]
    arg = next((a for a in args if set(a.names) & set(config_flag.names)), None)
    return (arg.default if arg is not None and isinstance(arg.default, str) else ""), config_flag


def _flatten(node: object, prefix: str, out: dict[str, object], budget: list[int], depth: int = 0) -> None:
    """Dotted key → leaf value; at most 12 deep and 20,000 nodes visited (YAML aliases may share a node
    thousands of times: a walk of every path through them would never end)."""
    budget[0] -= 1
    if depth > 12 or budget[0] < 0:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_\-]+", key):
                _flatten(value, f"{prefix}.{key}" if prefix else key, out, budget, depth + 1)
    elif prefix:
        out[prefix] = node


def detect(root: Path, script: Script, reading: Reading | None) -> Overrides | None:
    """The script's -o and the keys of its config; None when it has no -o or no readable config."""
    flag = override_flag(script)
    if flag is None:
        return None
    path, _ = _config_path(script, reading)
    if not path:
        return None
    import yaml

    try:
        text = inputs.read_text(inputs.within(root / path, root), "config", limit=CONFIG_LIMIT)
        data = yaml.safe_load(text)
    except (TipcgenError, ValueError, yaml.YAMLError, RecursionError):  # not there, not text, not YAML: flags as before
        return None
    if not isinstance(data, dict):
        return None
    keys: dict[str, object] = {}
    _flatten(data, "", keys, [20_000])
    args = [*(reading.args if reading else ()), *(reading.module_args if reading else ())]
    arg: Arg | None = next((a for a in args if set(a.names) & set(flag.names)), None)
    short = next((n for n in flag.names if not n.startswith("--")), flag.name)
    return Overrides(short, arg is not None and arg.action == "append", path, keys)


def _last(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1].lower()


def is_interval(dotted: str) -> bool:
    """A key that says how often the training saves or evaluates: ``Global.save_epoch_step``, or an interval
    named by its parent (``snapshot_config.interval``, ``validate.interval``); never ``log_config.interval``,
    ``lr_scheduler.step_size`` nor an ``epochs`` count of its own (``Global.epochs``)."""
    parts = dotted.lower().split(".")
    if _INTERVAL.match(parts[-1]):
        return True
    return len(parts) > 1 and parts[-1] in _INTERVAL_LAST and bool(_INTERVAL_PARENT.search(parts[-2]))


def _checkpointish(value: object) -> bool:
    """A checkpoint key's value: a path or nothing, never a switch or a URL (a download)."""
    if isinstance(value, bool):
        return False
    return value is None or (isinstance(value, str) and not value.startswith(("http://", "https://")))


def candidates(fld: str, ov: Overrides) -> list[str]:
    """The dotted keys of the config that may fill a field, best first."""
    keys = list(ov.keys)
    if fld == "train.batch_size":
        batch = [k for k in keys if _BATCH.match(_last(k))]
        train = [k for k in batch if _TRAIN_PART.search(k)]
        return train or (batch if len(batch) == 1 else [])
    if fld == "inference.data" and (named := [k for name in _INFER_DATA for k in keys if _last(k) == name]):
        return named  # Global.infer_imgs
    if fld in ("train.extra", "eval.extra", "inference.data"):  # an infer script's data: the config's test set
        part = _TRAIN_PART if fld == "train.extra" else _EVAL_PART
        return [k for name in _DATA_DIR for k in keys
                if _last(k) == name and part.search(k.rsplit(".", 1)[0] if "." in k else "")]
    out = []
    for name in _KEYS.get(fld, ()):
        for key in keys:
            if _last(key) != name:
                continue
            if fld in ("train.pretrained", "export.weights") and (not _checkpointish(ov.keys[key]) or
                                                                 re.search(r"backbone|architecture|arch\.", key, re.IGNORECASE)):
                continue
            out.append(key)
    return out


def find(fld: str, ov: Overrides) -> str | None:
    """The dotted key of the config that fills a field, or None."""
    return next(iter(candidates(fld, ov)), None)


def choose(scripts: dict[str, Script], found: dict[str, Overrides], given: dict[str, str],
           notes: list[str]) -> dict[str, str]:
    """The fields of -o scripts filled with config keys (a field given by --flag stays the user's): field →
    the key as the runner passes it (``Global.epoch_num``, or ``-o Global.epoch_num`` for an append -o)."""
    from tipcgen.new.fields import CANDIDATES

    flagged = {fld for fld, role in _ROLE_OF.items() if role in scripts and
               {loose(n) for f in scripts[role].flags for n in f.names} & {loose(n) for n in CANDIDATES[fld][1]}}
    # any flag of the script the runner fills (an infer script's --model_dir, --device) follows the command
    # (never train.pretrained's: null for the train step, so not passed to it)
    passes_flags = {role for role, script in scripts.items() for fld, (step, names) in CANDIDATES.items()
                    if step == role and fld != "train.pretrained"
                    and {loose(n) for f in script.flags for n in f.names} & {loose(n) for n in names}}
    for role, one in found.items():
        one.single = not one.append and (any(_ROLE_OF[fld] == role for fld in flagged) or role in passes_flags)
    out = {}
    for fld, role in _ROLE_OF.items():
        ov = found.get(role)
        if ov is None or fld in given or (ov.single and fld in flagged):  # the script's own flag fills it
            continue
        found_keys = candidates(fld, ov)
        if not found_keys:
            continue
        out[fld] = found_keys[0]
        if len(found_keys) > 1:
            notes.append(f"question: {fld} is {found_keys[0]} of {ov.config}; {', '.join(found_keys[1:4])} may fill it "
                         f"too: is {found_keys[0]} the one? (candidates: {', '.join(found_keys[:4])}; "
                         f"--flag {fld}=KEY, or {fld}'s key in tipc.yaml)")
    for role, ov in found.items():
        mapped = ", ".join(f"{fld} → {out[fld]}" for fld in out if _ROLE_OF[fld] == role)
        style = f"each key passed as `{ov.flag} KEY=VALUE` (action='append')" if ov.append else \
            f"its own flags fill the other fields, so its one key is passed as `{ov.flag} KEY=VALUE`" if ov.single else \
            f"the command ends in `{ov.flag}` and each key is passed as KEY=VALUE after it"
        notes.append(f"{scripts[role].path} takes `{ov.flag} key=value` over {ov.config}: {style}; keys mapped: "
                     f"{mapped or 'none'}")
    return {fld: found[_ROLE_OF[fld]].key(key) for fld, key in out.items()}


def end_with_flag(script: Script, ov: Overrides) -> None:
    """A nargs -o: the command ends in it, so every key the runner appends is one of its values."""
    if ov.append or ov.single:
        return
    words = list(script.args)
    last = max((i for i, w in enumerate(words) if w == ov.flag or w.split("=", 1)[0] == ov.flag), default=None)
    if last is None or any(w.startswith("-") for w in words[last + 1:]):
        words.append(ov.flag)
    script.args = tuple(words)


def _missing_weights(root: Path, value: object) -> bool:
    """A pretrained-weights path the repository does not hold (nor with .pdparams after it)."""
    if not isinstance(value, str) or not value.strip() or value.startswith(("http://", "https://")):
        return False
    path = value.strip()
    return not any((root / candidate).exists() for candidate in (path, path + ".pdparams"))


def lite_edits(root: Path, scripts: dict[str, Script], found: dict[str, Overrides], data: dict[str, str],
               data_dir: str, data_names: dict[str, str], lite_count: int, pretrained_key: str | None = None) -> list[str]:
    """Fixed overrides for the lite run (save/eval intervals above it, label files the lite data ships, a
    pretrained file the repository does not hold), each named in a note; and a note for a backbone download."""
    notes: list[str] = []
    for role, ov in found.items():
        script = scripts[role]
        pairs: list[tuple[str, str]] = []
        passed = " ".join(script.args)
        added = f"passed in the {role} command's one `{ov.flag}`" if ov.single else f"added to the {role} command in tipc.yaml"
        eval_key = find("eval.extra", ov) if role == "train" and "eval" in data_names else None
        for key, value in ov.keys.items():
            if f"{key}=" in passed:
                continue
            last = _last(key)
            if role == "export" and _last(key) in _KEYS["train.device"] and \
                    (value is True or (isinstance(value, str) and value.lower().startswith(("gpu", "cuda")))):
                cpu = "False" if isinstance(value, bool) else "cpu"  # no device slot for export: the runner passes none
                pairs.append((key, cpu))
                notes.append(f"{ov.config}: {key} is {value} and the runner passes export no device: set to {cpu} "
                             f"({added}), so the export runs on a machine without a GPU too (the exported model is "
                             "the same)")
                continue
            if key == eval_key and isinstance(value, str):  # the training's own validation reads the eval data
                lite = f"{data_dir}/{data_names['eval']}"
                pairs.append((key, lite))
                notes.append(f"{ov.config}: {key} is {value}, the data the training validates on: set to the lite eval "
                             f"data {lite} ({added})")
                continue
            if role == "train" and pretrained_key is not None and ov.key(key) == pretrained_key and \
                    _missing_weights(root, value):
                pairs.append((key, ""))
                notes.append(f"{ov.config}: {key} is {value}, which is not in the repository: the train step would stop "
                             f"loading it; set to nothing so the lite training starts from scratch (`{ov.key(key)}=` "
                             f"{added}); ship the file there to start from it")
                continue
            if role == "train" and is_interval(key) and isinstance(value, int) and not isinstance(value, bool) \
                    and value > lite_count:
                pairs.append((key, "1"))
                tail = ".".join(key.split(".")[-2:])  # validate.interval evaluates, snapshot_config.interval saves
                does = "evaluates" if re.search(r"eval|val|test", tail, re.IGNORECASE) and \
                    not re.search(r"save|snapshot|checkpoint", tail, re.IGNORECASE) else "saves"
                notes.append(f"{ov.config}: {key} is {value}, above the lite run's {lite_count}: set to 1 so the training "
                             f"{does} (`{ov.key(key)}=1` {added})")
            elif _LABEL_LIST.match(last) and role in ("train", "eval"):
                data_role = "train" if _TRAIN_PART.search(key) and not _EVAL_PART.search(key) else \
                    "eval" if _EVAL_PART.search(key) else None
                # the training validates on the eval data (the eval data key set above): its label list too
                validates = role == "train" and data_role == "eval" and eval_key is not None
                if (data_role != role and not validates) or data_role not in data:
                    continue
                role_of_data = data_role
                names = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
                lite = root / data[role_of_data]
                shipped = [Path(n).name for n in names if lite.is_dir() and (lite / Path(n).name).is_file()]
                if shipped and len(shipped) == len(names):
                    new = [f"{data_dir}/{data_names[role_of_data]}/{n}" for n in shipped]
                    text = "[" + ",".join(new) + "]" if isinstance(value, list) else new[0]
                    pairs.append((key, text))
                    notes.append(f"{ov.config}: {key} names {', '.join(names)}; the lite data {data[role_of_data]} ships "
                                 f"{', '.join(shipped)}: set to {text} ({added})")
                elif names:
                    notes.append(f"question: {ov.config}: {key} names {', '.join(names)}, which the lite data "
                                 f"{data.get(role_of_data, '(none)')} does not ship; which file lists the lite {role_of_data} data? add "
                                 f"`{ov.key(key)}=PATH` to the {role} command in tipc.yaml")
            elif role == "train" and value is True and _DOWNLOAD.search(last):
                notes.append(f"{ov.config}: {key} is true: it may download pretrained weights at start-up (offline the "
                             f"step fails): add `{ov.key(key)}=False` to the train command in tipc.yaml, or ship the weights")
        if ov.single:  # one run of the flag for them all, placed by place_single once the keys are known
            ov.fixed = pairs
            continue
        end_with_flag(script, ov)
        script.args = (*script.args, *ov.words(pairs))
    return notes


def place_single(scripts: dict[str, Script], found: dict[str, Overrides], chosen: dict[str, str | None],
                 order: dict[str, tuple[str, ...]], passed: Callable[[str], str]) -> list[str]:
    """A nargs ``--opts`` beside flags of its own (PaddleSeg): argparse keeps the last ``--opts`` of a command
    only, so a script gets one run of it, with every key. The runner passes its flags after the command, in
    ``order`` (the fields it passes to each script; ``passed(field)``: "always", "sometimes" (a per-mode value,
    a mode without one drops the flag) or "" (never)). The last of this script's ``--opts`` fields passed in every
    mode carries the fixed overrides before its own key (``--opts model.pretrained= train_dataset.dataset_root``:
    the runner appends ``=VALUE`` to the last word); any other ``--opts`` field would replace that run, so its
    key is left out, and said. With no such field the fixed overrides end the command as one ``--opts K=V ...``
    (the runner's flags after it end the run). Mutates ``chosen`` and the scripts' args; returns the notes."""
    notes: list[str] = []
    for role, ov in found.items():
        if not ov.single:
            continue
        # the fields whose key only this script is passed (train.device and train.pretrained go to eval too)
        own = [fld for fld in order.get(role, ()) if fld not in ("train.device", "train.pretrained")]
        keyed = [fld for fld in own if (chosen.get(fld) or "").startswith(f"{ov.flag} ")]
        sometimes = [fld for fld in keyed if passed(fld)]
        always = [fld for fld in sometimes if passed(fld) == "always"]
        kept = always[-1] if always else None if ov.fixed or not sometimes else sometimes[-1]
        for fld in sometimes:
            if fld == kept:
                continue
            why = f"{kept} carries the `{ov.flag}` keys" if kept else \
                f"the fixed `{ov.flag}` keys end the command, and {fld} is not passed in every mode to carry them"
            notes.append(f"{scripts[role].path}: {fld} would be passed as a second `{ov.flag} "
                         f"{chosen[fld].split(' ', 1)[1]}=...`, and argparse keeps only the last `{ov.flag}` "
                         f"(nargs): left out, so {ov.config}'s value stays ({why})")
            chosen[fld] = None
        if not ov.fixed:
            continue
        words = [f"{dotted}={value}" for dotted, value in ov.fixed]
        if kept is not None:
            chosen[kept] = f"{ov.flag} {' '.join(words)} {chosen[kept].split(' ', 1)[1]}"
            notes.append(f"{scripts[role].path}: its fixed `{ov.flag}` keys ({', '.join(words)}) go in {kept}'s key, "
                         f"before {chosen[kept].rsplit(' ', 1)[1]}: argparse keeps only the last `{ov.flag}` (nargs), "
                         "and the runner passes that one after the command")
        else:
            scripts[role].args = (*scripts[role].args, ov.flag, *words)
    return notes

