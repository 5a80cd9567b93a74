"""The benchmark_train chain: the descriptor's ``benchmark`` section (what a run writes is results/speeds.py).

The section renders the config's trailing ``train_benchmark_params`` section (upstream order:
batch_size, fp_items, epoch, --profiler_options, flags; then device_num, which upstream readers
ignore). ``test_tipc/benchmark_train.sh`` reads it by key and writes one ``*_speed`` JSON per case
with upstream's keys (PaddleOCR ``test_tipc/benchmark_train.sh`` → ``analysis.py``) plus peak
memory. Pure functions over data, and a reader of those JSONs for the report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.fields import default
from tipcgen.descriptor.yaml_lines import shown

SECTION = "train_benchmark_params"
FP_ITEMS = tuple(default("benchmark.fp_items"))
DEVICE_NUM = tuple(default("benchmark.device_num"))
DEVICE_RE = re.compile(r"^N([1-9][0-9]*)C([1-9][0-9]*)$")
FLAG_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FLAG_VALUE_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
# The keys of upstream's speed JSON (PaddleOCR benchmark_train.sh → benchmark analysis.py), in order.
UPSTREAM_KEYS = ("model_branch", "model_commit", "model_name", "batch_size", "fp_item", "run_process_type",
                 "run_mode", "convergence_value", "convergence_key", "ips", "speed_unit", "device_num",
                 "model_run_time", "frame_commit", "frame_version")
SPEED_DIR = "index"


@dataclass(frozen=True)
class BenchmarkSpec:
    batch_size: tuple[int, ...]
    fp_items: tuple[str, ...] = FP_ITEMS
    epoch: int = default("benchmark.epoch")
    profiler_options: str | None = None
    flags: tuple[tuple[str, str], ...] = ()
    device_num: tuple[str, ...] = DEVICE_NUM

    def lines(self) -> list[str]:
        """The section's config lines, in upstream's order (device_num last: upstream reads five)."""
        flags = ";".join(f"{name}={value}" for name, value in self.flags) or "null"
        return [f"batch_size:{'|'.join(str(b) for b in self.batch_size)}", f"fp_items:{'|'.join(self.fp_items)}",
                f"epoch:{self.epoch}", f"--profiler_options:{self.profiler_options or 'null'}", f"flags:{flags}",
                f"device_num:{'|'.join(self.device_num)}"]


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def parse(value: Any, source: str, lines: dict[str, int]) -> BenchmarkSpec | None:
    """The descriptor's ``benchmark`` section → BenchmarkSpec. Its fields' types, ranges and allowed values are the
    model's (checked before, descriptor/structure.py); here what a schema does not state: a flag's value."""
    if value is None:
        return None
    pairs = []
    for name, flag in (value.get("flags") or {}).items():
        text = str(flag).lower() if isinstance(flag, bool) else str(flag)
        if not FLAG_VALUE_RE.match(text):
            path = f"benchmark.flags.{name}"
            raise DescriptorError(source, path, f"{shown(f'{name}={text}')} is not NAME=VALUE (letters, digits, _ . + -)",
                                  lines.get(path) or lines.get("benchmark"), "the benchmark exports each flag as an "
                                  "environment variable: e.g. FLAGS_cudnn_deterministic: 1")
        pairs.append((name, text))
    return BenchmarkSpec(tuple(_as_list(value["batch_size"])), tuple(_as_list(value.get("fp_items", list(FP_ITEMS)))),
                         value.get("epoch", default("benchmark.epoch")), value.get("profiler_options"), tuple(pairs),
                         tuple(_as_list(value.get("device_num", list(DEVICE_NUM)))))
