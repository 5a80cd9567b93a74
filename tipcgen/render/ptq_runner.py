"""The PTQ chain's files for the models of a repository with a ``ptq:`` section: each model's config, and one
runner (``test_tipc/test_ptq_inference_python.sh``) and check (``check_quant.py``) for all of them.

The runner holds the layouts of the models rendered here (read by position: ``ptq`` and ``ptq_video`` share
one body, ``kl_quant`` has its own), tells a config's layout by its first line (and, for ``ptq_params``, where
its ``trainer`` line is: ``compression.layout_of``), and picks the check's settings (``ptq.eval_data``,
``ptq.accuracy_drop``, ``ptq.tolerance``) by the config's model_name; the step time limit comes from
``tipc_steps.sh``'s model arm (``ptq_timeout_arms`` for a PTQ model_name no descriptor has). A config of a
model no descriptor here rendered runs with its layout's checks alone and the check's defaults.
"""
from __future__ import annotations

from collections.abc import Sequence

import jinja2

from tipcgen.core.errors import TipcgenError
from tipcgen.descriptor import Descriptor
from tipcgen.descriptor import ptq as ptq_spec
from tipcgen.format import chains, compression, paths
from tipcgen.render.hook import RenderJob


def ptq_name(desc: Descriptor) -> str:
    """The model_name of a descriptor's PTQ config: what the runner reads (it may differ from the descriptor's)."""
    return desc.ptq.config.value("model_name") or ""


def ptq_models(models: Sequence[Descriptor]) -> list[Descriptor]:
    """The models with a ``ptq:`` section; two of them whose PTQ configs name one model, or a PTQ config
    naming another descriptor's model, are an error (the runner picks a model's settings by that name)."""
    found = [d for d in models if d.ptq is not None]
    names = {d.model_name: d for d in models}
    seen: dict[str, Descriptor] = {}
    for desc in found:
        name = ptq_name(desc)
        other = seen.get(name) or (names.get(name) if name != desc.model_name else None)
        if other is not None:
            raise TipcgenError(f"{desc.source}: its PTQ config's model_name {name} is also the model of {other.source}",
                               "give each model's ptq: config its own model_name (the PTQ runner picks a model's check "
                               "settings and run folder by it)")
        seen[name] = desc
    return found


def ptq_timeout_arms(models: Sequence[Descriptor]) -> list[dict]:
    """tipc_steps.sh's model arms for the PTQ configs whose model_name is not their descriptor's, where the
    descriptor's step time limit is not the default (tipc_begin reads it by the config's model_name)."""
    return [{"name": ptq_name(d), "timeout": d.step_timeout, "env": (), "slot_keys": []} for d in ptq_models(models)
            if ptq_name(d) != d.model_name and d.step_timeout != Descriptor.step_timeout]


def _layout(name: str) -> dict:
    """What the runner's body for one layout reads: the line of each slot, the anchors, the kv lines, and
    (ptq, ptq_video) the calibration lines and the inference lines passed as flags."""
    table = compression.LAYOUTS[name]
    at = {slot.name: slot.index for slot in table}
    kv = [slot for slot in table if slot.kind == "kv"]
    layout = {"name": name, "n_lines": len(table), "at": at, "kv": kv,
              "anchors": [s for s in table[1:] if s.kind != "kv" or s.anchors]}
    if name != "kl_quant":
        passed = ("inference", "infer_use_gpu", "infer_batch_size")
        layout.update(calibration=[s for s in kv if at["python"] < s.index < at["trainer"]],
                      inference_flags=[s for s in kv if s.index > at["inference"] and s.name not in passed])
    return layout


def _settings(desc: Descriptor) -> dict:
    """A model's check settings: ptq.tolerance only where it is not check_quant.py's default (left to it)."""
    spec = desc.ptq
    return {"name": ptq_name(desc), "eval_data": spec.eval_data, "accuracy_drop": spec.accuracy_drop,
            "tolerance": None if spec.tolerance == ptq_spec.DEFAULT_TOLERANCE else spec.tolerance}


def ptq_files(models: Sequence[Descriptor], env: jinja2.Environment) -> dict[str, str]:
    """Each PTQ model's config (byte for byte as imported), and the one runner and check when there is any."""
    found = ptq_models(models)
    files = {paths.config_rel(d.model_name, chains.PTQ): env.get_template("config/train_ptq_infer_python.txt.j2").render(
        layout=compression.LAYOUTS[d.ptq.config.layout], ptq=d.ptq.config) for d in found}
    if not found:
        return files
    held = [name for name in compression.LAYOUTS if any(d.ptq.config.layout == name for d in found)]
    video = next(slot.index for slot in compression.LAYOUTS["ptq_video"] if slot.name == "trainer")
    files[paths.RUNNERS[chains.PTQ]] = env.get_template("runner/test_ptq_inference_python.sh.j2").render(
        layouts=[_layout(name) for name in held], models=[_settings(d) for d in found], headers=compression.HEADERS,
        video_trainer=video, paths=paths.runner_context())
    return files


def files(job: RenderJob) -> dict[str, str]:
    """The PTQ chain's render hook (render/hook.py)."""
    return ptq_files(job.models, job.env)
