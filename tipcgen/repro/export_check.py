"""After a run: the exported model holds the trained model's parameters (issue #28).

A chain whose eval and export load weights the repository ships (a null or wrong checkpoint key) passes
every step while the trained model is never used. For each training whose export passed, this check
reads the trained checkpoint (``<train output>/<train_model_name>``, with ``checkpoint_io``'s safe
reader: no pickle code runs) and the exported parameters (the ``.pdiparams`` beside a ``.json``/``.pdmodel``,
read by ``paddle.static.load_inference_model`` in the chain's own interpreter, written to an ``.npz``
read back without pickle), and compares them by shape and value: Paddle 3's export renames every
parameter (``fc.weight`` becomes ``linear_0.w_0``), so a trained parameter is found by its shape and its
values. A trained parameter with no exported one of its shape was folded or left out by export (a
BatchNorm folded into a conv, a loss head): allowed and counted; so is a one-element tensor (a
quantizer's scale or state, which a PACT export rescales). One with exported ones of its shape
that all hold other values fails the check, named; so does an export holding none of them.

Every inference case of that training must have read the export's folder (the run's own export), or
the check fails naming the case. The result is a ``check`` step (``export_params_<training>``) in the summary. Where it cannot run
(no ``.pdiparams`` in the export: a stand-in chain without paddle) the summary gets a note saying so.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from tipcgen.core import process
from tipcgen.core.errors import CheckpointError
from tipcgen.format import chain, layout
from tipcgen.format.config import TipcConfig
from tipcgen.repro.checkpoint_io import read_paddle_state
from tipcgen.format.words import CHECK, EXPORT, FAILED, INFER, PASSED, SKIPPED, TRAIN
from tipcgen.results.results import Step

TIMEOUT = 300
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


def checkpoint_name(config_text: str) -> str | None:
    """The config's train_model_name value (the checkpoint the runner passes to eval and export)."""
    config = TipcConfig.parse(config_text)
    table = layout.slots_of(layout.LAYOUT_OF_KIND.get(config.kind, "standard"))
    index = next((s.index for s in table if s.name == chain.name_of("train.checkpoint")), None)
    logical = config.logical_lines()
    if index is None or index >= len(logical) or logical[index].value is None:
        return None
    return logical[index].value.strip() or None


def _checkpoint(save: Path, name: str) -> Path | None:
    for candidate in (save / name, save / f"{name}.pdparams"):
        if candidate.is_file():
            return candidate
    if (save / name).is_dir():
        found = sorted((save / name).glob("*.pdparams"))
        return found[0] if len(found) == 1 else None
    return None


def _exported_prefix(export_dir: Path) -> Path | None:
    found = sorted(export_dir.rglob("*.pdiparams"), key=lambda p: (p.name != "inference.pdiparams", len(p.parts), p))
    return found[0].with_suffix("") if found else None


def read_export(prefix: Path, python: str, env: dict[str, str]) -> dict[str, np.ndarray]:
    """The exported model's parameters, read in the chain's interpreter (paddle), passed back as an .npz."""
    env = dict(env, GLOG_minloglevel="3")
    if not Path(f"{prefix}.json").is_file() and Path(f"{prefix}.pdmodel").is_file():
        env["FLAGS_enable_pir_api"] = "0"  # a .pdmodel program (the old IR): Paddle 3 reads it with PIR off
    with tempfile.TemporaryDirectory(prefix="tipcgen-export-") as tmp:
        out = Path(tmp) / "params.npz"
        proc = process.run(process.Request([python, "-c", _READ_EXPORT, str(prefix), str(out)], env=env,
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


def compare(trained: dict[str, np.ndarray], exported: dict[str, np.ndarray]) -> tuple[bool, str]:
    """(passed, what was found): every trained parameter is in the export with its values, by shape."""
    def digest(array: np.ndarray) -> str:
        return hashlib.sha256(np.ascontiguousarray(array.astype(np.float32)).tobytes()).hexdigest() + str(array.shape)

    # A one-element parameter (a quantizer's scale or state, a counter) says nothing about which weights
    # export used, and export may rescale or fold it: only tensors of two elements or more are compared.
    floats = {n: a for n, a in trained.items() if np.issubdtype(a.dtype, np.floating) and a.size > 1}
    by_digest = {digest(a) for a in exported.values() if np.issubdtype(a.dtype, np.floating)}
    matched, folded = 0, 0
    for name, array in floats.items():
        if digest(array) in by_digest:
            matched += 1
            continue
        same = {n: e for n, e in exported.items() if e.shape == array.shape and np.issubdtype(e.dtype, np.floating)}
        if not same:
            folded += 1
            continue
        diffs = {n: float(np.max(np.abs(e.astype(np.float64) - array.astype(np.float64)))) for n, e in same.items()}
        nearest = min(diffs, key=diffs.get)
        if np.allclose(same[nearest], array, rtol=1e-5, atol=1e-6):
            matched += 1
            continue
        return False, (f"trained parameter {name} {list(array.shape)} is not in the export: its {len(same)} "
                       f"parameter(s) of that shape hold other values (nearest, {nearest}, differs by up to "
                       f"{diffs[nearest]:.3g}), so export did not use the trained checkpoint")
    if not matched:
        return False, (f"none of the {len(floats)} trained parameters is in the export "
                       f"({len(exported)} exported parameters of other shapes or values)")
    kept = f"{matched} of {len(floats)} trained parameters found in the export with their trained values"
    return True, kept + (f"; {folded} have no exported parameter of their shape (folded or left out by export)"
                         if folded else "")


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def check_run(root: Path, steps: list[Step], config_text: str, python: str | None,
              env: dict[str, str]) -> tuple[list[Step], list[str]]:
    """The check steps for every passed export of a trained model, and notes where none could run."""
    name = checkpoint_name(config_text)
    trains = {s.training: s for s in steps if s.kind == TRAIN and s.status == PASSED and s.model_dir}
    out: list[Step] = []
    notes: list[str] = []
    for export in (s for s in steps if s.kind == EXPORT and s.status == PASSED and s.model_dir):
        train = trains.get(export.training)
        if train is None:
            continue  # whole_infer: an export of given models, not of this run's training
        label = f"export_params_{export.training}"
        prefix = _exported_prefix(root / export.model_dir)
        if prefix is None:
            notes.append(f"{label}: the export wrote no .pdiparams under {export.model_dir}, so its parameters were "
                         "not compared with the trained checkpoint")
            continue
        step = Step(kind=CHECK, name=label, status=SKIPPED, reference="trained", training=export.training,
                    model_dir=str(prefix.relative_to(root)) if prefix.is_relative_to(root) else str(prefix))
        started = time.perf_counter()
        checkpoint = _checkpoint(root / train.model_dir, name) if name else None
        if checkpoint is None:
            step.reason = (f"no trained checkpoint {name!r} under {train.model_dir} (train_model_name): the exported "
                           "parameters cannot be compared with it")
        elif python is None:
            step.reason = "no interpreter to read the export with"
        else:
            try:
                passed, found = compare(read_paddle_state(checkpoint), read_export(prefix, python, env))
                step.status, step.note = (PASSED, found) if passed else (FAILED, "")
                step.reason = "" if passed else found
                step.command = f"compare {os.path.relpath(checkpoint, root)} with {step.model_dir}.pdiparams"
            except (CheckpointError, OSError, ValueError) as exc:
                step.status = FAILED
                step.reason = getattr(exc, "message", None) or str(exc)
        elsewhere = [s for s in steps if s.kind == INFER and s.training == export.training and s.model_dir
                     and not _inside(root / s.model_dir, root / export.model_dir)]
        if elsewhere:  # the runner passes the export's folder: a config or runner that does not proves nothing
            step.status, step.note = FAILED, ""
            step.reason = "; ".join(filter(None, [step.reason, f"inference {elsewhere[0].name} read {elsewhere[0].model_dir}, "
                                                  f"not this run's export {export.model_dir}"]))
        step.seconds = round(time.perf_counter() - started, 3)
        out.append(step)
    return out, notes
