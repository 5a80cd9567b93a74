"""What one ``tipcgen suite`` is asked to do, as one value: ``SuiteRequest``.

Built by the CLI (``tipcgen suite``'s options, one field each) and checked by ``checked()`` before anything is
planned: the repository root found, the limits, modes and chains refused by name (a TipcgenError: exit 2, one
message). suite/run.py takes it, as run/pipeline.py takes a ``RunRequest``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from tipcgen.configs.locate import find_root
from tipcgen.format.chains import BASIC
from tipcgen.format.words import LITE_TRAIN_LITE_INFER
from tipcgen.suite import owned


@dataclass(frozen=True)
class SuiteRequest:
    """One suite: what to plan (paths, modes, chains, the root), how to run it (locally in slots, or on Ray) and
    where to write it (--output); each option of ``tipcgen suite`` under its own name."""

    paths: tuple[str, ...] = ()
    modes: tuple[str, ...] = (LITE_TRAIN_LITE_INFER,)
    chains: tuple[str, ...] = (BASIC,)
    jobs: int = 1
    cores_per_chain: int | None = None
    gpus_per_chain: int = 1
    share_gpus: bool = False
    timeout: float = 3600
    output: Path | None = None
    root: Path | None = None  # None: found from the current folder up (checked() fills it in)
    lint_only: bool = False
    ray: bool = False
    address: str | None = None
    keep_work: bool = False
    sandbox: bool = False
    color: str = "auto"

    @property
    def on_ray(self) -> bool:
        """Each chain runs as a Ray task (--ray, or --address, which implies it)."""
        return self.ray or bool(self.address)

    def checked(self) -> SuiteRequest:
        """This request with its root found, after refusing a limit, mode or chain that cannot be (TipcgenError)."""
        root = find_root(self.root)
        owned.check_limits(self.timeout, self.jobs)
        owned.check_modes(list(self.modes))
        owned.check_chains(list(self.chains))
        return dataclasses.replace(self, root=root)
