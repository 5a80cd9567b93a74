"""The benchmark_train chain: the descriptor's ``benchmark`` section and the speed JSONs a run writes.

The section renders the config's trailing ``train_benchmark_params`` section (upstream order:
batch_size, fp_items, epoch, --profiler_options, flags; then device_num, which upstream readers
ignore). ``test_tipc/benchmark_train.sh`` reads it by key and writes one ``*_speed`` JSON per case
with upstream's keys (PaddleOCR ``test_tipc/benchmark_train.sh`` → ``analysis.py``) plus peak
memory. Pure functions over data, and a reader of those JSONs for the report.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.schema import BENCHMARK_FIELDS
from tipcgen.descriptor.yaml_lines import shown

SECTION = "train_benchmark_params"
FP_ITEMS = ("fp32", "fp16")
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
    epoch: int = 1
    profiler_options: str | None = None
    flags: tuple[tuple[str, str], ...] = ()
    device_num: tuple[str, ...] = ("N1C1", "N1C2")

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
    epoch = value.get("epoch", 1)
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
    devices = _as_list(value.get("device_num", ["N1C1", "N1C2"]))
    if not devices or not all(isinstance(d, str) and DEVICE_RE.match(d) for d in devices):
        raise fail("benchmark.device_num", f"expected entries such as N1C1 or N1C8, found {shown(value.get('device_num'))}",
                   "N<machines>C<cards>: N1C1 is one device, N1C2 two (on a CPU machine, two gloo processes)")
    return BenchmarkSpec(tuple(sizes), tuple(fp_items), epoch, profiler, tuple(pairs), tuple(devices))


MAX_SPEED_BYTES = 1 << 20


def read_speeds(run_dir: Path) -> list[dict]:
    """The speed JSONs a benchmark_train run wrote (index/*_speed), sorted by file name; unreadable
    or foreign files are left out (the report names what it shows)."""
    out = []
    folder = run_dir / SPEED_DIR
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*_speed")):
        try:
            if not path.is_file() or path.stat().st_size > MAX_SPEED_BYTES:  # a FIFO would block; a speed JSON is small
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and _finite(data.get("ips")):  # a figure the report can format and draw
            data["file"] = path.name
            out.append(data)
    return out


def _finite(value) -> bool:
    try:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def speed_of_log(lines: list[str]) -> dict:
    """The figures of a speed step, from the JSON line benchmark_analysis.py printed into its log:
    ips, unit, device_num, peak memory; {} when there is none."""
    for line in reversed(lines):
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("ips"), (int, float)) and not isinstance(data["ips"], bool):
            return {key: data[key] for key in ("ips", "speed_unit", "device_num", "fp_item", "batch_size",
                                               "peak_memory_mb", "peak_memory_kind") if key in data}
    return {}


def speed_text(speed: dict) -> str:
    """`ips 171.967 samples/s, peak memory 688.3 MB RSS` for the terminal summary."""
    text = f"ips {speed['ips']:g} {speed.get('speed_unit', '')}".rstrip()
    peak = speed.get("peak_memory_mb")
    if isinstance(peak, (int, float)) and not isinstance(peak, bool):
        kind = {"rss": "RSS", "gpu_reserved": "GPU reserved"}.get(str(speed.get("peak_memory_kind")), "")
        text += f", peak memory {peak:g} MB {kind}".rstrip()
    return text
