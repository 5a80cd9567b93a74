"""The dy2static chain's files for the models of a repository with a ``dy2static:`` section: each model's
``train_dy2static_python.txt``, and one runner (``test_tipc/test_train_dy2static_python.sh``) and check
(``check_dy2static.py``) for all of them.

The config is the descriptor's ``dy2static.lines`` as written (an imported one), else the model's basic
config's train block under PaddleClas's ``base_train`` header (``format/dy2static.py``). The runner reads
its 22 lines by the 51-line layout's indices, checks each anchor, writes the config the basic runner
trains both trainings from (the basic config beside it with that train block and the trainer list
``norm_train|to_static_train``), runs the basic runner on it, and compares the losses; the tolerance is
picked by the config's model_name (``dy2static.tolerance``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import jinja2

from tipcgen.descriptor import Descriptor
from tipcgen.format import chains, dy2static, layout, paths
from tipcgen.format.config import TipcConfig, model_name_in
from tipcgen.render.hook import RenderJob


LAYOUT = "standard"  # the basic config's layout the runner reads a dy2static config's train block by


def config_text(desc: Descriptor, basic_text: str) -> str:
    """The model's dy2static config: as the descriptor gives it, else its basic config's train block."""
    return desc.dy2static.text if desc.dy2static.text is not None else dy2static.from_basic(basic_text)


def dy2static_files(models: Sequence[Descriptor], env: jinja2.Environment,
                    basic_config: Callable[[Descriptor], str]) -> dict[str, str]:
    """Each dy2static model's config, and the one runner and check when there is any."""
    found = [d for d in models if d.dy2static is not None]
    files: dict[str, str] = {}
    settings = []
    for desc in found:
        config = TipcConfig.parse(config_text(desc, basic_config(desc)))
        files[paths.config_rel(desc.model_name, chains.DY2STATIC)] = env.get_template("config/train_dy2static_python.txt.j2").render(
            lines=[line.text for line in config.lines], final_newline=config.final_newline)
        settings.append({"name": model_name_in(config.render()) or desc.model_name, "tolerance": desc.dy2static.tolerance})
    if not found:
        return files
    trainer = layout.SLOT_BY_FIELD["train.trainer"]
    files[paths.RUNNERS[chains.DY2STATIC]] = env.get_template("runner/test_train_dy2static_python.sh.j2").render(
        models=settings, anchors=dy2static.anchors(), n_lines=dy2static.LINES, trainer_index=trainer.index,
        trainer_key=trainer.key, dygraph=dy2static.DYGRAPH_TRAINER, to_static=dy2static.TO_STATIC_TRAINER,
        to_static_index=layout.SLOT_BY_FIELD["train.to_static"].index, layout_name=LAYOUT,
        paths=paths.runner_context())
    return files


def files(job: RenderJob) -> dict[str, str]:
    """The dy2static chain's render hook (render/hook.py): each config from its model's basic one as rendered (or
    kept)."""
    return dy2static_files(job.models, job.env, lambda d: str(job.files[paths.config_rel(d.model_name)]))
