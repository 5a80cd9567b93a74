"""Which layout family a config of an existing repository is read in: its suite's own runner decides.

``lint`` and ``import`` read the repository's ``test_tipc/test_train_inference_python.sh`` (with
``--root``, or the ``test_tipc/`` folder the config sits under), parse the ``lines[N]`` it reads
(``format/families.runner_reads``) and pick the family that runner reads; without a runner the
file's headers decide. Runners are read as text and never run.
"""
from __future__ import annotations

from pathlib import Path

from tipcgen.core import inputs
from tipcgen.format import families, paths

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
