"""The paddle2onnx chain's files (its render hook, render/hook.py): each model's paddle2onnx config, where its
descriptor has a ``paddle2onnx:`` section, and the one runner when any has."""
from __future__ import annotations

import posixpath

import jinja2

from tipcgen.configs import legacy_format
from tipcgen.descriptor import Descriptor
from tipcgen.format import chains, paths
from tipcgen.render.hook import RenderJob


def config(desc: Descriptor, env: jinja2.Environment) -> str:
    """The model's paddle2onnx config: its inference flags' keys as its basic config spells them."""
    p = desc.paddle2onnx
    assert p is not None
    use_gpu, model_dir, data = (desc.slot_of(f"inference.{name}") for name in ("use_gpu", "model_dir", "data"))
    keys = {"use_gpu_key": use_gpu.key, "model_dir_key": model_dir.key, "data_key": data.key}  # the runner reads them back
    return env.get_template("config/paddle2onnx.txt.j2").render(
        model_name=desc.model_name, python=desc.slot_of("python").value, p=p, checks=desc.checks,
        use_gpu={"key": keys["use_gpu_key"], "value": use_gpu.value},
        model_dir_key=keys["model_dir_key"], onnx_dir=posixpath.dirname(p.save_file),
        data={"key": keys["data_key"]}, infer_data=desc.slot_of("train.infer_data").value,
        # Paddle 3 writes the Paddle 2 format (.pdmodel) only under the env: that turns PIR off.
        model_filename="inference.pdmodel" if dict(desc.env).get(legacy_format.FLAG) == "0" else "inference.json")


def files(job: RenderJob) -> dict[str, str]:
    found = [d for d in job.models if d.paddle2onnx is not None]
    out = {paths.config_rel(d.model_name, chains.PADDLE2ONNX): config(d, job.env) for d in found}
    if found:
        out[paths.RUNNERS[chains.PADDLE2ONNX]] = job.env.get_template("runner/test_paddle2onnx.sh.j2").render(**job.runner)
    return out
