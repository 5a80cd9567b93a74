"""After a run: the exported model holds the trained model's parameters (issue #28).

A chain whose eval and export load weights the repository ships (a null or wrong checkpoint key) passes
every step while the trained model is never used. For each training whose export passed, this check
takes every checkpoint the training wrote as recorded when the train step ended, before any other step ran
(repro/record.py: ``*.pdparams``, ``*.pth``, ``*.pd``, ``*.pt`` under any name in its output folder and
below, and any file there that holds a pickle, such as the one train_model_name names whatever its name:
best, latest and EMA side by side, ``epoch_3/model.pdparams``, ``model_latest.pth``; read with
``checkpoint_io.read_paddle_checkpoint``, the safe reader: no pickle code runs, each at most
``--max-checkpoint-bytes``, by default a quarter of the machine's memory; a file may be a plain state dict
or a dict holding one or several under any key, ``state_dict``, ``model``, ``net``, ``ema``, beside
optimizer state, step counters and plain values: each state dict in it is a candidate, optimizer state
never is), keeps those the training trained (some parameter in none of the weight files there before it:
never a copy, link or re-save of committed weights), reads each as it is now only while it still holds
the recorded bytes (else the recorded parameter digests are what the export is compared with, and the
change is named) and the exported parameters (the ``.pdiparams`` beside a ``.json``/``.pdmodel``,
read with numpy in tipcgen's own process by ``pdiparams.read_pdiparams``, names from the ``.json`` program;
a file that reader refuses, an old-IR ``.pdmodel`` export among them, is read by
``paddle.static.load_inference_model`` in the chain's own interpreter, written to an ``.npz`` read back
without pickle, and the step's note says so), and compares them by shape and value: Paddle 3's export renames every
parameter (``fc.weight`` becomes ``linear_0.w_0``), so a trained parameter is found by its shape and its
values. The check passes when the export holds one of those state dicts; else it fails naming the nearest
(fewest differing parameters, then the smallest difference) and how it differs. A file that holds no state
dict tipcgen can read (refused: a global that is not part of a checkpoint; optimizer state only; no tensors)
is named with what it found, never taken for a missing checkpoint. A trained parameter with no
exported one of its shape was folded or left out by export (a BatchNorm folded into a conv, a loss head):
allowed and counted; so is a one-element tensor (a quantizer's scale or state, which a PACT export rescales).

A training that did not write the checkpoint the config names (train_model_name: a file of any name, or a
folder holding a checkpoint file; ``.`` is the output folder; ``iter_*/model.pdparams``, a folder per iteration,
of which the runner passes the newest) fails, naming the file. Eval and export must have been given the
same checkpoint (their recorded commands), and every inference case of that training must have read the
export's folder (the run's own export), or the check fails naming them. The result is a ``check`` step
(``export_params_<training>``) in the summary. A check that cannot run fails; only a stand-in chain
(``TIPC_NO_PADDLE=1``) whose export wrote no ``.pdiparams`` gets a note instead.
"""
from __future__ import annotations

import fnmatch
import os
import re
import shlex
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tipcgen.core import isolated, process
from tipcgen.core.errors import CheckpointError, TipcgenError
from tipcgen.core.inputs import read_text
from tipcgen.format import chain, layout
from tipcgen.format.chains import TRAINED
from tipcgen.format.config import TipcConfig
from tipcgen.repro.record import Recorder, Training, Weights, digest as _digest, trained_text
from tipcgen.repro.checkpoint_io import read_paddle_checkpoint
from tipcgen.core.errors import ExportFormatError
from tipcgen.repro import record
from tipcgen.repro.pdiparams import read_pdiparams
from tipcgen.format.words import CHECK, EVAL, EXPORT, FAILED, INFER, PASSED, TRAIN
from tipcgen.results.summary import Step, StepCase, StepCheck, StepTraining

TIMEOUT = 300
MAX_BYTES_OPTION = "--max-checkpoint-bytes"  # tipcgen run's option for the largest checkpoint read
MAX_CHECKPOINTS = 200  # checkpoint files of one training compared with the export, at most
CHECKPOINT_SUFFIXES = (".pdparams", ".pth", ".pd", ".pt")  # the names paddle.save checkpoints are given
CHECKPOINT_WORDS = "no checkpoint (.pdparams, .pth, .pd, .pt)"
MAX_SAME_SHAPE = 16  # exported parameters of one shape a trained one is measured against, at most
DIFF_BUDGET = 1 << 30  # array elements measured per checkpoint (beyond it a parameter without an exact copy differs)
SHOWN = 5
_READ_EXPORT = """
import sys, numpy as np, paddle
paddle.enable_static()
exe = paddle.static.Executor(paddle.CPUPlace())
scope = paddle.static.Scope()
with paddle.static.scope_guard(scope):
    prog, _, _ = paddle.static.load_inference_model(sys.argv[1], exe)
    names = [p.name for p in prog.global_block().all_parameters()]
    if not names:  # a .pdmodel program (the old IR) holds its weights as persistable variables
        names = [v.name for v in prog.list_vars() if getattr(v, "persistable", False) and v.name not in ("feed", "fetch")]
    arrays = {n: np.array(scope.find_var(n).get_tensor()) for n in names if scope.find_var(n) is not None}
np.savez(sys.argv[2], **arrays)
"""


def _slot_line(config_text: str, fld: str) -> tuple[str | None, str | None]:
    """(key, value) of a descriptor field's line in the config, for the config's layout (None where absent)."""
    config = TipcConfig.parse(config_text)
    table = layout.slots_of(layout.LAYOUT_OF_KIND.get(config.kind, "standard"))
    index = next((s.index for s in table if s.name == chain.name_of(fld)), None)
    logical = config.logical_lines()
    if index is None or index >= len(logical):
        return None, None
    line = logical[index]
    value = line.value
    if value is None:
        return None, None
    return line.key.strip() or None, value.strip() or None


def checkpoint_name(config_text: str) -> str | None:
    """The config's train_model_name value (the checkpoint the runner passes to eval and export)."""
    return _slot_line(config_text, "train.checkpoint")[1]


def default_max_bytes() -> int:
    """The largest checkpoint the check reads: a quarter of the machine's memory (MemTotal in /proc/meminfo;
    reading one costs about three times its size: its bytes, its arrays, the export's), 1 GiB where unknown."""
    try:
        text = read_text("/proc/meminfo", "memory table", 1 << 16)
    except TipcgenError:
        return 1 << 30
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return max(1 << 30, int(match.group(1)) * 1024 // 4) if match else 1 << 30


def is_checkpoint_file(path: Path, save: Path, name: str | None = None) -> bool:
    """A file the training may have written its weights into: any name ending in ``CHECKPOINT_SUFFIXES``
    (paddle.save writes whatever name it is given: ``model_latest.pth``, ``net.pd``), or the file the config
    names (train_model_name, any name)."""
    return path.name.endswith(CHECKPOINT_SUFFIXES) or (name is not None and name not in ("", ".") and path == save / name)


def written_checkpoints(save: Path, name: str | None = None) -> list[Path]:
    """Every checkpoint file (``is_checkpoint_file``) under a training's output folder and below as it is now
    (best, latest and EMA side by side, ``epoch_3/model.pdparams``), any name; links are not followed. Only
    for a caller without records: a recorded training's checkpoints are its record's."""
    found: list[Path] = []
    if not save.is_dir() or save.is_symlink():
        return found
    for folder, dirs, files in os.walk(save, followlinks=False):
        dirs.sort()
        for file in sorted(files):
            path = Path(folder) / file
            if not is_checkpoint_file(path, save, name) or path.is_symlink():
                continue
            try:
                info = path.stat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(path)
        if len(found) >= MAX_CHECKPOINTS:
            break
    return found[:MAX_CHECKPOINTS]


def missing_checkpoint(save: Path, name: str | None, written: list[Path]) -> Path | None:
    """The checkpoint the config names (``<train output>/<train_model_name>``: a file of any name, the file
    with a ``CHECKPOINT_SUFFIXES`` suffix added (a script that saves ``name + '.pth'``), or a folder holding a
    checkpoint file (``is_checkpoint_file``); ``.`` is the output folder itself; a name with ``*``, a folder per
    iteration such as ``iter_*/model.pdparams``, any file or folder it matches) when the training did not
    write it; None when it did, or when the config names none."""
    if not name:
        return None
    if "*" in name:  # a folder per iteration (iter_*/model.pdparams): the runner passes the newest match
        rels = [path.relative_to(save) for path in written if path.is_relative_to(save)]
        matched = [rel for rel in rels if any(fnmatch.fnmatchcase(part.as_posix(), name) for part in (rel, *rel.parents))]
        return None if matched else save / name
    target = save / name
    if any(candidate in written for candidate in (target, *(save / f"{name}{suffix}" for suffix in CHECKPOINT_SUFFIXES))):
        return None
    if target.is_file() and not target.name.endswith(CHECKPOINT_SUFFIXES):
        return None  # a file of another name there before the training (as before issue #56: not judged by its time)
    if any(path.is_relative_to(target) for path in written):
        return None
    if target.is_dir() and not target.is_symlink() and any(target.glob("*.safetensors")):
        return None  # a folder checkpoint in the safetensors format (not compared: the export check reads .pdparams)
    return target


def passed_value(command: str, key: str | None) -> str | None:
    """The last value a recorded command passes with ``key`` (``key=value`` or ``key value``), as argparse reads it."""
    if not key or not command:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    value = None
    for i, word in enumerate(words):
        if word == key and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith(key + "="):
            value = word[len(key) + 1:]
    return value


def _exported_prefix(export_dir: Path) -> Path | None:
    found = sorted(export_dir.rglob("*.pdiparams"), key=lambda p: (p.name != "inference.pdiparams", len(p.parts), p))
    return found[0].with_suffix("") if found else None


def read_exported(prefix: Path, python: str | None, env: dict[str, str],
                  max_bytes: int) -> tuple[dict[str, np.ndarray], str]:
    """(the exported parameters, '' or why paddle read them): read with numpy in this process
    (``pdiparams.read_pdiparams``, no interpreter start); a file that reader refuses (an old-IR ``.pdmodel``
    export, a format it does not know) is read with paddle in the chain's interpreter instead."""
    try:
        return read_pdiparams(prefix, max_bytes), ""
    except ExportFormatError as exc:
        if python is None:
            raise CheckpointError(f"no interpreter to read the export with: {exc.message}",
                                  "check that the chain's interpreter has paddle (tipcgen doctor)") from None
        return read_export(prefix, python, env), exc.message


def read_export(prefix: Path, python: str, env: dict[str, str]) -> dict[str, np.ndarray]:
    """The exported model's parameters, read in the chain's interpreter (paddle), passed back as an .npz."""
    if not isolated.is_python(python):  # the config's python:make is never run (issue #59 item 5)
        raise CheckpointError(f"the chain's interpreter {python} is not a Python interpreter, so it does not read the "
                              "exported parameters", "pass --python with the interpreter that has paddle")
    env = dict(env, GLOG_minloglevel="3")
    if not Path(f"{prefix}.json").is_file() and Path(f"{prefix}.pdmodel").is_file():
        env["FLAGS_enable_pir_api"] = "0"  # a .pdmodel program (the old IR): Paddle 3 reads it with PIR off
    with tempfile.TemporaryDirectory(prefix="tipcgen-export-") as tmp:
        out = Path(tmp) / "params.npz"
        # -I: the repository's modules (a committed numpy.py, paddle/) never shadow the interpreter's own
        proc = process.run(process.Request([*isolated.command(python, _READ_EXPORT), str(prefix), str(out)], env=env,
                                           timeout=TIMEOUT, stderr="separate", output_cap=1 << 20))
        if proc.timed_out:
            raise CheckpointError(f"reading the exported parameters of {prefix} did not finish in {TIMEOUT} s",
                                  "check that the chain's interpreter has paddle (tipcgen doctor)")
        if proc.exit_code != 0 or not out.is_file():
            tail = " | ".join(proc.errors.strip().splitlines()[-2:]) or proc.error
            raise CheckpointError(f"cannot read the exported parameters of {prefix}: {tail or f'exit {proc.exit_code}'}",
                                  "check that the chain's interpreter has paddle (tipcgen doctor)")
        with np.load(out, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}


@dataclass
class Match:
    """How a trained state dict is found in an export: parameters found with their values, folded away
    (no exported parameter of their shape), and those whose shape is there with other values
    (name, shape, the nearest exported parameter, how far, how many of that shape)."""

    compared: int = 0
    matched: int = 0
    folded: int = 0
    differing: list[tuple[str, list[int], str, float, int]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.matched > 0 and not self.differing

    @property
    def distance(self) -> tuple[int, int, float]:
        """Smaller is nearer: an export of another architecture last, then fewest differing, smallest max diff."""
        return (0 if self.matched or self.differing else 1, len(self.differing),
                max((d[3] for d in self.differing), default=0.0))

    def text(self, exported: int) -> str:
        if self.differing:
            name, shape, nearest, diff, count = self.differing[0]
            more = f" ({len(self.differing)} of {self.compared} trained parameters differ)" if len(self.differing) > 1 else ""
            return (f"trained parameter {name} {shape} is not in the export: its {count} parameter(s) of that shape "
                    f"hold other values (nearest, {nearest}, differs by up to {diff:.3g}){more}, so export did not "
                    "use the trained checkpoint")
        if not self.matched:
            return (f"none of the {self.compared} trained parameters is in the export "
                    f"({exported} exported parameters of other shapes or values)")
        kept = f"{self.matched} of {self.compared} trained parameters found in the export with their trained values"
        return kept + (f"; {self.folded} have no exported parameter of their shape (folded or left out by export)"
                       if self.folded else "")


def match(trained: dict[str, np.ndarray], exported: dict[str, np.ndarray],
          digests: set[str] | None = None) -> Match:
    """Every trained parameter looked for in the export, by shape and value (digests: the export's, if known)."""
    # A one-element parameter (a quantizer's scale or state, a counter) says nothing about which weights
    # export used, and export may rescale or fold it: only tensors of two elements or more are compared.
    floats = {n: a for n, a in trained.items() if np.issubdtype(a.dtype, np.floating) and a.size > 1}
    if digests is None:
        digests = {_digest(a) for a in exported.values() if np.issubdtype(a.dtype, np.floating)}
    found = Match(compared=len(floats))
    budget = DIFF_BUDGET  # elements measured: an export of other weights of a large model stays seconds, not minutes
    for name, array in floats.items():
        if _digest(array) in digests:
            found.matched += 1
            continue
        same = [(n, e) for n, e in exported.items() if e.shape == array.shape and np.issubdtype(e.dtype, np.floating)]
        if not same:
            found.folded += 1
            continue
        if budget <= 0:  # measured enough: this one holds no exact copy, its distance is not measured
            found.differing.append((name, list(array.shape), same[0][0], float("inf"), len(same)))
            continue
        trained32 = array.astype(np.float32, copy=False)
        diffs = {n: float(np.max(np.abs(e.astype(np.float32, copy=False) - trained32))) for n, e in same[:MAX_SAME_SHAPE]}
        budget -= array.size * len(diffs)
        nearest = min(diffs, key=diffs.__getitem__)
        if np.allclose(dict(same)[nearest], array, rtol=1e-5, atol=1e-6):
            found.matched += 1
            continue
        found.differing.append((name, list(array.shape), nearest, diffs[nearest], len(same)))
    return found


def compare(trained: dict[str, np.ndarray], exported: dict[str, np.ndarray]) -> tuple[bool, str]:
    """(passed, what was found): every trained parameter is in the export with its values, by shape."""
    found = match(trained, exported)
    return found.passed, found.text(len(exported))


def _unread_text(unread: list[tuple[Path, str]], root: Path) -> str:
    """The files that are no model weights tipcgen could read, each with what it found there."""
    shown = "; ".join(f"{os.path.relpath(p, root)}: {why}" for p, why in unread[:SHOWN])
    return shown + (f"; and {len(unread) - SHOWN} more" if len(unread) > SHOWN else "")


def read_candidates(path: Path, root: Path, max_bytes: int) -> tuple[dict[str, dict[str, np.ndarray]], str]:
    """(the state dicts in one checkpoint file by where they are in it, '' or what it holds instead):
    read with checkpoint_io's safe reader (``read_paddle_checkpoint``), refused over max_bytes
    (--max-checkpoint-bytes, a CheckpointError naming the option). A file that is not a checkpoint tipcgen can
    read (refused, optimizer state only, no tensors) gives no state dict and the reason, its path relative."""
    size = path.stat().st_size
    if size > max_bytes:
        raise CheckpointError(f"checkpoint {os.path.relpath(path, root)} is {size} bytes, over the limit of "
                              f"{max_bytes} bytes ({MAX_BYTES_OPTION})",
                              f"raise it: tipcgen run {MAX_BYTES_OPTION} {size}")
    try:
        found = read_paddle_checkpoint(path, max_bytes)
    except CheckpointError as exc:
        if "limit" in exc.message:
            raise CheckpointError(f"{exc.message} ({MAX_BYTES_OPTION})",
                                  f"raise it: tipcgen run {MAX_BYTES_OPTION} {2 * size}") from None
        return {}, exc.message.removeprefix(f"{path}: ")
    return found.states, found.found


def compare_written(checkpoints: list[Path], exported: dict[str, np.ndarray], root: Path,
                    max_bytes: int, changed: dict[Path, tuple[Weights, str]] | None = None) -> tuple[bool, str, Path | None]:
    """(passed, what was found, the checkpoint it names): the export holds one of the state dicts in the
    checkpoints the training wrote (the first that matches; a file may hold several: ``model`` and ``ema``),
    else the nearest is named with how it differs. Each file is read by ``read_candidates``, one at a time;
    a file that holds no state dict is named with what it holds, never taken for a missing checkpoint. One that
    no longer holds the bytes recorded as the training ended (``changed``: its record, what it holds now) is
    not read: its recorded parameter digests are looked for in the export instead."""
    digests = {_digest(a) for a in exported.values() if np.issubdtype(a.dtype, np.floating)}
    tried: list[tuple[tuple, Path, str, str]] = []
    unread: list[tuple[Path, str]] = []
    for path in checkpoints:
        if changed and path in changed:
            weights, now = changed[path]
            groups: dict[str, dict[str, str]] = {}  # the recorded parameters by the state dict they were in
            for param, value in (weights.params or {}).items():
                groups.setdefault(param.rsplit("/", 1)[0] if "/" in param else "", {})[param] = value
            params = min(groups.values(), key=lambda g: sum(d not in digests for d in g.values()), default={})
            missing = [n for n, d in params.items() if d not in digests]
            if params and not missing:
                return True, (f"{len(params)} of {len(params)} trained parameters (as recorded when the training "
                              f"ended) found in the export; {weights.path} changed after: {now}"), path
            tried.append(((0, len(missing) or 1, float("inf")), path, "", (
                f"{weights.path} changed after the training ended ({now}): {len(missing)} of {len(params)} parameters "
                f"the training wrote (recorded as it ended) are not in the export"
                + (f", {missing[0]} among them" if missing else "") + ", so export did not use the trained checkpoint")))
            continue
        states, why = read_candidates(path, root, max_bytes)
        if not states:
            unread.append((path, why))
        for key, state in states.items():
            found = match(state, exported, digests)
            where = f" (the state dict under {key!r})" if key else ""
            if found.passed:
                text = found.text(len(exported)) + where
                return True, text + (f"; not compared, no model weights: {_unread_text(unread, root)}" if unread else ""), path
            tried.append((found.distance, path, key, found.text(len(exported))))
    if not tried:
        if not unread:
            return False, "the training wrote no checkpoint", None
        return False, (f"none of the {len(unread)} checkpoint file(s) the training wrote holds model weights tipcgen "
                       f"can read: {_unread_text(unread, root)}"), unread[0][0]
    _, nearest, key, text = min(tried, key=lambda t: t[0])
    text += f" (the state dict under {key!r})" if key else ""
    rest = f"; not compared, no model weights: {_unread_text(unread, root)}" if unread else ""
    if len(tried) == 1:
        return False, text + rest, nearest
    names = ", ".join(os.path.relpath(p, root) + (f" [{k}]" if k else "") for _, p, k, _ in tried[:SHOWN])
    return False, (f"the export equals none of the {len(tried)} checkpoints the training wrote ({names}); the nearest, "
                   f"{os.path.relpath(nearest, root)}{f' [{key}]' if key else ''}: {text}{rest}"), nearest


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def _same_checkpoint(steps: list[Step], export: Step, eval_key: str | None, export_key: str | None) -> str:
    """Why eval and export were not given the same checkpoint (their recorded commands), or ''."""
    given = passed_value(export.command, export_key)
    for step in steps:
        if step.kind != EVAL or step.training.name != export.training.name or step.status != PASSED:
            continue
        evaluated = passed_value(step.command, eval_key)
        if evaluated is not None and given is not None and os.path.normpath(evaluated) != os.path.normpath(given):
            return (f"eval {step.name} was given {evaluated} ({eval_key}) but export {given} ({export_key}): both must "
                    "load the checkpoint this run trained")
    return ""


def _checkpoints_of(written: list[Weights], root: Path) -> list[Path]:
    """The checkpoint files among a training's recorded weight files: any but an export's ``.pdiparams`` and a
    ``.safetensors`` (the files ``record.Recorder.weights_in`` keeps: a checkpoint suffix, or a pickle whatever
    its name, such as the one train_model_name names)."""
    return [root / w.path for w in written if not w.path.endswith((".pdiparams", ".safetensors"))]


def _training_of(train: Step, model_dir: str, root: Path, records: Recorder | None,
                 name: str | None = None) -> tuple[Training | None, list[Path], str]:
    """(the training's record, the checkpoints it wrote, '' or why it has none): its record, taken as the train
    step ended; a training of a runner that does not wait for tipcgen (a kept one) read now, judged against the
    weights there before the runner started (those in its own output folder left out); no records at all (a
    caller without a run): the files as they are, nothing judged. ``model_dir``: the train step's own."""
    save = root / model_dir
    if records is None:
        return None, written_checkpoints(save, name), ""
    training = records.trainings.get(train.name)
    if training is not None and training.written is not None:
        return training, _checkpoints_of(training.written, root), ""
    if records.handshake:
        return None, [], (f"tipcgen holds no record of what training {train.name} wrote: the runner did not wait for "
                          "it after the step (a runner rendered before the handshake: tipcgen update)")
    start = records.trainings.get("*")
    written = records.weights_in(save)
    now = Training(train.name, start.before if start else [], start.unrecorded if start else 0,
                   records.folder(model_dir), written, unrecorded_cached=start.unrecorded_cached if start else 0)
    records.trainings[train.name] = now
    return now, _checkpoints_of(written, root), ""


def _judge(training: Training, checkpoints: list[Path], root: Path, records: Recorder,
           outside: str | None) -> tuple[list[Path], dict[Path, tuple[Weights, str]], list[str], str, str, str]:
    """Of the checkpoints a training wrote: those it trained, those changed since their record (what each
    holds now), why each other is not trained, why the record fails (a checkpoint changed before an eval or
    export started), what training changed (the note) and what was not checked (a run note: checkpoints with
    no bias or normalisation tensor of their own, so that record.initial_values could not tell)."""
    by_path = {root / w.path: w for w in training.written or []}
    shas = training.before_shas(outside)
    before = training.before_digests(outside)
    trained, changed, untrained, counts, kept, blind = [], {}, [], [], False, []
    for path in checkpoints:
        weights = by_path.get(path)
        if weights is None:
            continue
        n, total, why = trained_text(weights, training, outside)
        if why:
            untrained.append(why)
            continue
        trained.append(path)
        if weights.params and not record.initial_values(weights.params, weights.constant, before)[0]:
            blind.append(weights.path)
        if total:
            counts.append(f"{n} of {total} in {weights.path}")
            kept = kept or n < total
        now = records.now(weights) if records.handshake else weights.sha256
        if now != weights.sha256:
            changed[path] = (weights, _holds(now, shas))
    failed = "; ".join(f"checkpoint {p} changed after the training ended, {when} ({_holds(now, shas)})"
                       for p, now, when in training.changed)
    others = " (the others hold values of weights there before it)" if kept else ""
    note = f"parameters the training changed{others}: {', '.join(counts[:SHOWN])}" if counts else ""
    if training.unrecorded:
        note = "; ".join(filter(None, [note, (
            f"{training.unrecorded} weight file(s) in the repository were not recorded before the training (over "
            f"{record.MAX_FILES} files or {record.HASH_BUDGET >> 30} GiB), so it was not compared with them")]))
    if training.unrecorded_cached:
        note = "; ".join(filter(None, [note, (
            f"{training.unrecorded_cached} weight file(s) in the pretrained caches outside the repository "
            f"({', '.join(n for _, n in records.caches)}) were not recorded before the training (over "
            f"{record.CACHE_MAX_FILES} files or {record.CACHE_HASH_BUDGET >> 30} GiB), so it was not compared with "
            "them")]))
    unchecked = ""
    if blind:
        shown = ", ".join(blind[:SHOWN]) + (f" (and {len(blind) - SHOWN} more)" if len(blind) > SHOWN else "")
        unchecked = (f"whether {shown} hold(s) the model's initial values rather than trained ones: "
                     "no bias or normalisation tensor of its own (one off its constant initial value shows an optimizer "
                     "step), so only its difference from the weight files there before the training was checked")
    return trained, changed, untrained, failed, note, unchecked


def unchecked_prefix() -> str:
    from tipcgen.results.unchecked import PREFIX

    return PREFIX


def _holds(sha: str, shas: dict[str, str]) -> str:
    if not sha:
        return "it is gone or unreadable"
    if sha in shas:
        return f"it now holds the bytes of {shas[sha]}, a weight file there before the train step"
    return "it now holds other bytes"


def check_exports(root: Path, steps: list[Step], config_text: str, python: str | None,
                  env: dict[str, str], records: Recorder | None = None,
                  max_bytes: int | None = None) -> tuple[list[Step], list[str]]:
    """The check steps for every passed export of a trained model, and notes where none could run.

    records: what tipcgen recorded at the runner's handshakes (repro/record.py): each training's checkpoints
    as it ended and the weights there before it; only those it trained count, and the export is compared with
    their recorded content. None (a caller without a run): the files as they are, nothing judged. A training
    whose eval or export the config feeds, but which did not write the checkpoint the config names
    (train_model_name), fails here, naming the file. A check that cannot run fails (never a skip): only a
    stand-in chain (TIPC_NO_PADDLE=1) whose export wrote no ``.pdiparams`` and whose record shows nothing
    wrong gets a note instead."""
    name = checkpoint_name(config_text)
    eval_key, export_key = _slot_line(config_text, "train.pretrained")[0], _slot_line(config_text, "export.weights")[0]
    limit = max_bytes or default_max_bytes()
    fed = {s.training.name for s in steps if s.kind in (EVAL, EXPORT)}
    # keyed by the steps' training (None where a record named none: one key for all of those, as it always was)
    written: dict[str | None, list[Path]] = {}
    judged: dict[str | None, tuple] = {}
    for train in steps:
        model_dir = train.case.model_dir
        if train.kind != TRAIN or train.status != PASSED or not model_dir or train.training.name not in fed:
            continue
        training_id = train.training.name
        save = root / model_dir
        training, written[training_id], unrecorded = _training_of(train, model_dir, root, records, name)
        if training is not None and records is not None:
            outside = None if records.handshake else training.model_dir
            judged[training_id] = _judge(training, written[training_id], root, records, outside)
        elif unrecorded:
            judged[training_id] = ([], {}, [], unrecorded, "", "")
        if unrecorded:
            continue
        missing = missing_checkpoint(save, name, written[training_id])
        if missing is not None:
            train.status = FAILED
            what = (f"{CHECKPOINT_WORDS} into {os.path.relpath(missing, root)}" if name == "." or missing.is_dir()
                    else f"no checkpoint {os.path.relpath(missing, root)}")
            train.reason = "; ".join(filter(None, [train.reason, (
                f"it wrote {what} (train_model_name {name!r}, the descriptor's train.checkpoint), which eval and "
                "export load: check that the training saves (a flag that gates saving, such as a save or eval "
                "interval) into the output folder it is given (train.output_dir)")]))
    trains = {s.training.name: s for s in steps if s.kind == TRAIN and s.case.model_dir and s.training.name in written}
    out: list[Step] = []
    notes: list[str] = []
    for export in steps:
        exported_to = export.case.model_dir
        if export.kind != EXPORT or export.status != PASSED or not exported_to:
            continue
        training_id = export.training.name
        trained_by = trains.get(training_id)
        if trained_by is None:
            continue  # whole_infer: an export of given models, not of this run's training
        label = f"export_params_{training_id}"
        prefix = _exported_prefix(root / exported_to)
        checkpoints = written[training_id]
        trained, changed, untrained, failed, note, unchecked = judged.get(training_id,
                                                                         (checkpoints, {}, [], "", "", ""))
        if prefix is None and env.get("TIPC_NO_PADDLE") == "1" and not failed:
            notes.append(f"{label}: the export wrote no .pdiparams under {exported_to} (a stand-in chain, "
                         "TIPC_NO_PADDLE=1), so its parameters were not compared with the trained checkpoint")
            continue
        step = Step(kind=CHECK, name=label, status=FAILED, check=StepCheck(TRAINED), training=StepTraining(name=training_id),
                    case=StepCase(model_dir=(str(prefix.relative_to(root)) if prefix.is_relative_to(root) else str(prefix))
                                  if prefix is not None else exported_to))
        started = time.perf_counter()
        if failed:
            step.reason = failed
        elif prefix is None:
            step.reason = (f"the export wrote no .pdiparams under {exported_to}: its parameters cannot be "
                           "compared with the trained checkpoint")
        elif not checkpoints:
            step.reason = (f"the training wrote {CHECKPOINT_WORDS} under {trained_by.case.model_dir}: the exported "
                           "parameters cannot be compared with a checkpoint of this run")
        elif not trained:
            step.reason = ("the training wrote no checkpoint of its own, judged by content against the weight files "
                           "there before it: " + "; ".join(untrained[:SHOWN]))
        else:
            try:
                exported, fallback = read_exported(prefix, python, env, limit)
                passed, found, checkpoint = compare_written(trained, exported, root, limit, changed)
                if fallback:
                    found += f" (the exported parameters were read with paddle: {fallback})"
                if passed and note:
                    found += f"; {note}"
                step.status, step.note = (PASSED, found) if passed else (FAILED, "")
                if passed and unchecked:
                    notes.append(f"{unchecked_prefix()}{label}: {unchecked}")
                step.reason = "" if passed else "; ".join([found, *(
                    [f"not counted as the training's own: {'; '.join(untrained[:SHOWN])}"] if untrained else [])])
                step.command = f"compare {os.path.relpath(checkpoint, root)} with {step.case.model_dir}.pdiparams" if checkpoint else ""
            except (CheckpointError, OSError, ValueError) as exc:
                step.status = FAILED
                step.reason = (getattr(exc, "message", None) or str(exc)).replace(f"{root}{os.sep}", "")
                hint = getattr(exc, "hint", "")
                if MAX_BYTES_OPTION in hint:
                    step.reason += f": {hint}"
        mismatch = _same_checkpoint(steps, export, eval_key, export_key)
        elsewhere = [s for s in steps if s.kind == INFER and s.training.name == training_id and s.case.model_dir
                     and not _inside(root / s.case.model_dir, root / exported_to)]
        if elsewhere:  # the runner passes the export's folder: a config or runner that does not proves nothing
            mismatch = "; ".join(filter(None, [mismatch, f"inference {elsewhere[0].name} read {elsewhere[0].case.model_dir}, "
                                                         f"not this run's export {exported_to}"]))
        if mismatch:
            step.status, step.note = FAILED, ""
            step.reason = "; ".join(filter(None, [step.reason, mismatch]))
        step.seconds = round(time.perf_counter() - started, 3)
        out.append(step)
    return out, notes
