"""A chain's render hook: what it is given, and how render/repository.py finds it.

A chain's record (format/chains.py) names its hook by module (``Chain.render``); the module has
``files(job: RenderJob) -> dict[str, str | bytes]``: the chain's runner, configs and any other file for the models of
the job that ask for the chain, or {} where none does. Where what it returns holds the chain's runner, the render
adds the chain's shipped scripts (``Chain.shipped``). A new chain kind is its record, its hook and its templates.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2

from tipcgen.descriptor import Descriptor
from tipcgen.format.chains import Chain


@dataclass(frozen=True)
class RenderJob:
    """models: the repository's descriptors, by name. env: the Jinja environment. runner: the shared scripts'
    template context (repository._runner_context). files: what the render has made before the hooks (each model's
    basic config, with the configs the descriptors keep in their place). render_config: a descriptor's basic config
    rendered (the fleet chain renders its own from a changed descriptor)."""

    models: Sequence[Descriptor]
    env: jinja2.Environment
    runner: Mapping[str, Any]
    files: Mapping[str, str | bytes]
    render_config: Callable[[Descriptor, jinja2.Environment], str]


def files_of(chain: Chain, job: RenderJob) -> dict[str, str | bytes]:
    """What the chain's hook renders for the job ({} for a chain without one)."""
    if chain.render is None:
        return {}
    files: dict[str, str | bytes] = importlib.import_module(chain.render).files(job)
    return files
