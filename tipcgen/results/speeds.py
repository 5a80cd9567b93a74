"""A benchmark_train run's speed figures: the speed JSONs it wrote (index/*_speed, for the report), a speed
step's figures from its log, and their one line for the terminal. The descriptor's ``benchmark`` section that
asks for them is descriptor/benchmark.py.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.descriptor.benchmark import SPEED_DIR

MAX_SPEED_BYTES = 1 << 20


def read_speeds(run_dir: Path) -> list[dict]:
    """The speed JSONs a benchmark_train run wrote (index/*_speed), sorted by file name; unreadable
    or foreign files are left out (the report names what it shows)."""
    out: list[dict] = []
    folder = run_dir / SPEED_DIR
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*_speed")):
        try:  # a regular file inside the run folder (a FIFO would block, a link out is not read), small
            data = json.loads(inputs.read_bytes(path, "speed JSON", MAX_SPEED_BYTES, folder=run_dir))
        except (OSError, ValueError, RecursionError, TipcgenError):
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
