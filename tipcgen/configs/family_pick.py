"""Which layout family a config of an existing repository is read in: its suite's own runner decides.

``lint`` and ``import`` read the repository's ``test_tipc/test_train_inference_python.sh`` (with
``--root``, or the ``test_tipc/`` folder the config sits under), parse the ``lines[N]`` it reads
(``format/families.runner_reads``) and pick the family that runner reads; without a runner the
file's headers decide. Runners are read as text and never run.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.format import families, layout, paths, runner_spec

Runner = tuple[families.RunnerReads, str]  # a runner's reads, and how messages name it


def runner_of(config: Path, repo_root: Path | None = None) -> Path | None:
    """The repository's own basic-chain runner for a config: ``<root>/test_tipc/...`` with a root,
    else the one in the ``test_tipc/`` folder the config sits under."""
    if repo_root is not None:
        candidate = repo_root / paths.BASIC_RUNNER
        return candidate if candidate.is_file() else None
    for folder in Path(config).resolve().parents:
        if folder.name == paths.TEST_TIPC:
            candidate = folder / Path(paths.BASIC_RUNNER).name
            return candidate if candidate.is_file() else None
    return None


def read_runner(config: Path, repo_root: Path | None = None, cache: dict | None = None) -> Runner | None:
    """The reads of a config's runner (``None``: no runner, or one that reads no ``lines[N]``, such
    as tipcgen's own)."""
    path = runner_of(config, repo_root)
    if path is None:
        return None
    cache = {} if cache is None else cache
    if path not in cache:
        reads = families.runner_reads(inputs.read_text(path, "runner"))
        cache[path] = (reads, str(path)) if reads is not None else None
    return cache[path]


MAX_RUNNERS = 32  # shell scripts of one test_tipc/ folder read as runners


def runner_specs(config: Path, repo_root: Path | None = None, cache: dict | None = None) -> tuple[runner_spec.Spec, ...]:
    """Every runner of the config's ``test_tipc/`` folder read as data (``format/runner_spec.py``): the basic
    one first (its name is paths.BASIC_RUNNER's), then the others (PTQ, benchmark, C++, serving, ...) by name."""
    basic = runner_of(config, repo_root)
    folder = basic.parent if basic is not None else next(
        (f for f in Path(config).resolve().parents if f.name == paths.TEST_TIPC), None)
    if folder is None or not folder.is_dir():
        return ()
    cache = {} if cache is None else cache
    key = ("specs", folder)
    if key not in cache:
        scripts = sorted(p for p in folder.glob("*.sh") if p.is_file() and not p.is_symlink())[:MAX_RUNNERS]
        scripts.sort(key=lambda p: p.name != Path(paths.BASIC_RUNNER).name)
        specs = []
        for script in scripts:
            try:
                spec = runner_spec.spec_of(inputs.read_text(script, "runner", runner_spec.MAX_TEXT), script.name)
            except TipcgenError:  # not text, too large: not a runner tipcgen reads
                spec = None
            if spec is not None:
                specs.append(spec)
        if specs and specs[0].name == Path(paths.BASIC_RUNNER).name:  # where its configs have their headers
            texts = _configs(folder)
            specs[0] = dataclasses.replace(specs[0], structure=runner_spec.learn_structure(specs[0], texts),
                                           keys=runner_spec.learn_keys(specs[0], texts))
        cache[key] = tuple(specs)
    return cache[key]


MAX_CONFIGS = 2000  # configs of one repository read to learn where its runner's configs have their headers


def _configs(folder: Path) -> list[str]:
    """The basic-kind configs below ``folder/configs`` (bounded; unreadable ones left out)."""
    from tipcgen.format.config import TipcConfig

    out = []
    for path in sorted((folder / Path(paths.CONFIGS).name).rglob("*.txt"))[:MAX_CONFIGS]:
        if path.is_file() and not path.is_symlink():
            try:
                text = inputs.read_text(path, "config")
            except TipcgenError:
                continue
            if TipcConfig.parse(text).kind in layout.LAYOUT_OF_KIND:
                out.append(text)
    return out
