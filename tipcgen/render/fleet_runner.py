"""The fleet chain's files for the models of a repository with a ``fleet:`` section: each model's fleet config
(its basic config with ``gpu_list`` naming machines and the train device at its CPU value), and one runner
(``test_tipc/test_train_fleet_python.sh``: the basic runner with the machines simulated on this host by
``tipc_fleet.sh``, which the basic runner sources only in this chain) and check (``check_fleet.py``) for all of them.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import jinja2

from tipcgen.descriptor import Descriptor
from tipcgen.format import chain, chains, paths
from tipcgen.render.hook import RenderJob


def fleet_descriptor(desc: Descriptor) -> Descriptor:
    """The model's descriptor as its fleet config renders it: gpu_list the machines, the device its CPU value."""
    slots = dict(desc.slots)
    gpus, devices = desc.list_value("gpu_list"), desc.list_value("train.device")
    cpu = devices[gpus.index("-1")] if "-1" in gpus and len(devices) == len(gpus) else devices[0]
    for fld, value in (("gpu_list", desc.fleet.gpu_list), ("train.device", cpu)):
        slots[chain.name_of(fld)] = replace(desc.slot_of(fld), value=value)
    return replace(desc, slots=slots)


def fleet_files(models: Sequence[Descriptor], env: jinja2.Environment,
                render_config: Callable[[Descriptor, jinja2.Environment], str]) -> dict[str, str]:
    found = [d for d in models if d.fleet is not None]
    files = {paths.config_rel(d.model_name, chains.FLEET): render_config(fleet_descriptor(d), env) for d in found}
    if not found:
        return files
    files[paths.RUNNERS[chains.FLEET]] = env.get_template("runner/test_train_fleet_python.sh.j2").render(
        models=[{"name": d.model_name, "tolerance": d.fleet.tolerance} for d in found], paths=paths.runner_context())
    files[paths.FLEET_SH] = env.get_template("runner/tipc_fleet.sh.j2").render(paths=paths.runner_context())
    return files


def files(job: RenderJob) -> dict[str, str]:
    """The fleet chain's render hook (render/hook.py)."""
    return fleet_files(job.models, job.env, job.render_config)
