"""The benchmark_train chain's runner (its render hook, render/hook.py), where a descriptor has a ``benchmark:``
section or an imported config carries upstream's train_benchmark_params section."""
from __future__ import annotations

from tipcgen.descriptor import benchmark
from tipcgen.format import paths, words
from tipcgen.render.hook import RenderJob


def files(job: RenderJob) -> dict[str, str]:
    if not any(d.benchmark is not None or any(name == benchmark.SECTION for name, _ in d.sections) for d in job.models):
        return {}
    return {paths.RUNNERS[words.BENCHMARK_TRAIN]: job.env.get_template("runner/benchmark_train.sh.j2").render(**job.runner)}
