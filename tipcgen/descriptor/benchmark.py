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
from tipcgen.descriptor.fields import BENCHMARK_FIELDS, default
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


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1_000_000


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def parse(value: Any, source: str, lines: dict[str, int]) -> BenchmarkSpec | None:
    """The descriptor's ``benchmark`` section → BenchmarkSpec; errors name the field and its line."""
    if value is None:
        return None

    def fail(path: str, message: str, hint: str) -> DescriptorError:
        return DescriptorError(source, path, message, lines.get(path) or lines.get("benchmark"), hint)

    example = "benchmark: {batch_size: [8], fp_items: [fp32, fp16], epoch: 4, device_num: [N1C1, N1C2]}"
    if not isinstance(value, dict):
        raise fail("benchmark", "expected a mapping", example)
    unknown = sorted(str(k) for k in set(value) - BENCHMARK_FIELDS)
    if unknown:
        raise fail(f"benchmark.{unknown[0]}", "unknown field", "allowed: " + ", ".join(sorted(BENCHMARK_FIELDS)))
    if "batch_size" not in value:
        raise fail("benchmark.batch_size", "is missing", example)
    sizes = _as_list(value["batch_size"])
    if not sizes or not all(_positive_int(b) for b in sizes):
        raise fail("benchmark.batch_size", f"expected whole numbers > 0, found {shown(value['batch_size'])}", "e.g. [8, 16]")
    fp_items = _as_list(value.get("fp_items", list(FP_ITEMS)))
    if not fp_items or not all(item in FP_ITEMS for item in fp_items):
        raise fail("benchmark.fp_items", f"expected a list of fp32 and fp16, found {shown(value.get('fp_items'))}",
                   "fp16 trains with AMP (the autocast slot gets amp), e.g. [fp32, fp16]")
    epoch = value.get("epoch", default("benchmark.epoch"))
    if not _positive_int(epoch):
        raise fail("benchmark.epoch", f"expected a whole number > 0, found {shown(epoch)}",
                   "enough epochs for more than 2 logged ips: values (the first 2 are skipped)")
    profiler = value.get("profiler_options")
    if profiler is not None and (not isinstance(profiler, str) or not re.fullmatch(r"[^\s|:]+", profiler)):
        raise fail("benchmark.profiler_options", f"expected one word without spaces, ':' or '|', found {shown(profiler)}",
                   "e.g. batch_range=[10,20];state=GPU;tracer_option=Default;profile_path=model.profile, or null")
    flags = value.get("flags") or {}
    if not isinstance(flags, dict):
        raise fail("benchmark.flags", f"expected a mapping of environment variable to value, found {shown(flags)}",
                   "e.g. {FLAGS_eager_delete_tensor_gb: 0.0}")
    pairs = []
    for name, flag in flags.items():
        text = str(flag).lower() if isinstance(flag, bool) else str(flag)
        if not isinstance(name, str) or not FLAG_NAME_RE.match(name) or not FLAG_VALUE_RE.match(text):
            raise fail(f"benchmark.flags.{name}", f"{shown(f'{name}={text}')} is not NAME=VALUE (letters, digits, _ . + -)",
                       "the benchmark exports each flag as an environment variable: e.g. FLAGS_cudnn_deterministic: 1")
        pairs.append((name, text))
    devices = _as_list(value.get("device_num", list(DEVICE_NUM)))
    if not devices or not all(isinstance(d, str) and DEVICE_RE.match(d) for d in devices):
        raise fail("benchmark.device_num", f"expected entries such as N1C1 or N1C8, found {shown(value.get('device_num'))}",
                   "N<machines>C<cards>: N1C1 is one device, N1C2 two (on a CPU machine, two gloo processes)")
    return BenchmarkSpec(tuple(sizes), tuple(fp_items), epoch, profiler, tuple(pairs), tuple(devices))
