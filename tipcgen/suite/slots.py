"""The share of the machine each chain of a suite gets: CPU cores (affinity and thread variables) and GPUs."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from tipcgen.core import process
from tipcgen.core.errors import TipcgenError

THREAD_VARIABLES = ("OMP_NUM_THREADS", "CPU_NUM", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass
class Slot:
    """The share of the machine one chain gets: CPU cores (affinity + thread variables) and GPUs."""

    cores: list[int] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)
    threads: int = 0  # without cores (a Ray task: Ray places it), the thread variables only

    def env(self, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        if self.cores or self.threads:
            for name in THREAD_VARIABLES:
                env[name] = str(len(self.cores) or self.threads)
        if self.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(self.gpus)
        return env



def detect_gpus() -> list[str]:
    """GPU ids from nvidia-smi; none when it is missing or finds none."""
    if shutil.which("nvidia-smi") is None:
        return []
    out = process.run(process.Request(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], timeout=20,
                                      stderr="discard", output_cap=1 << 20))
    return [line.strip() for line in out.output.splitlines() if line.strip().isdigit()] if out.ok else []


def slots(jobs: int, cores_per_chain: int | None, gpus: list[str], gpus_per_chain: int,
          share_gpus: bool) -> list[Slot]:
    """One slot per parallel job: disjoint cores while they last, disjoint GPU sets unless share_gpus."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    per = cores_per_chain or max(1, len(cores) // jobs)
    if gpus and gpus_per_chain and not share_gpus and jobs * gpus_per_chain > len(gpus):
        raise TipcgenError(f"--jobs {jobs} with --gpus-per-chain {gpus_per_chain} needs {jobs * gpus_per_chain} GPUs; "
                           f"this machine has {len(gpus)} ({', '.join(gpus)})",
                           "lower --jobs or --gpus-per-chain, or let chains share GPUs with --share-gpus")
    out = []
    for job in range(jobs):
        mine = [cores[(job * per + i) % len(cores)] for i in range(per)]
        if gpus and gpus_per_chain:
            start = 0 if share_gpus else job * gpus_per_chain
            mine_gpus = [gpus[(start + i) % len(gpus)] for i in range(gpus_per_chain)]
        else:
            mine_gpus = []
        out.append(Slot(sorted(set(mine)), mine_gpus))
    return out
