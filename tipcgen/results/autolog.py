"""The AutoLog benchmark block an inference script prints (``--benchmark True``) → one case's speed.

AutoLog (`auto_log.AutoLogger.report()`, ../shared/tipc/SPEC.md §6) logs `key: value` lines under
section rules such as `----- Perf info -----`, each line behind a logger prefix
(`[2026-11-30 12:00:00] bert_sst2 INFO: `). Only a block with a Perf info section counts; the
figures are read by key, never by position. Pure text → dict; no paddle.
"""
from __future__ import annotations

import re
from typing import Iterable

# AutoLog's key (the C++ logger's spelling too) → the summary's key.
_KEYS = {
    "preprocess_time(ms)": "preprocess_ms", "preproce_time(ms)": "preprocess_ms",
    "inference_time(ms)": "inference_ms", "postprocess_time(ms)": "postprocess_ms",
    "total time spent(s)": "total_s", "cpu_rss(MB)": "cpu_rss_mb", "gpu_rss(MB)": "gpu_rss_mb",
    "gpu_util": "gpu_util_percent", "batch_size": "batch_size", "data_num": "data_num",
    "precision": "precision", "runtime_device": "device", "enable_mkldnn": "mkldnn",
    "enable_tensorrt": "tensorrt", "cpu_math_library_num_threads": "cpu_threads",
    "model_name": "model_name",
}
TEXT_KEYS = frozenset({"precision", "device", "mkldnn", "tensorrt", "model_name"})
PERF_KEYS = frozenset({"preprocess_ms", "inference_ms", "postprocess_ms", "total_s", "cpu_rss_mb", "gpu_rss_mb",
                       "gpu_util_percent"})  # read only under the Perf info rule
_SECTION = re.compile(r"-{3,}\s*(\w+) info\s*-{3,}", re.IGNORECASE)
_PREFIX = re.compile(r"^.*?\b(?:INFO|WARNING|DEBUG)\s*:\s?")
_PAIR = re.compile(r"^\s*([^:,]+?)\s*:\s*(.*?)\s*$")


def read_block(lines: Iterable[str]) -> dict:
    """The last AutoLog block in lines, as {summary key: value}; {} when there is none.

    Numbers are floats (`None`, `nan` and `%` are handled); a value that is not a number stays text
    only for the text keys and is dropped otherwise, so a figure is never a guess."""
    found: dict = {}
    block: dict | None = None
    section = ""
    for raw in lines:
        line = _PREFIX.sub("", raw.rstrip("\n"), count=1)
        header = _SECTION.search(line)
        if header:
            section = header.group(1).lower()
            if section == "env" or block is None:
                if block and "inference_ms" in block:
                    found = block
                block = {}
            continue
        if block is None or not section:
            continue
        for piece in line.split(","):
            pair = _PAIR.match(piece)
            if not pair or pair.group(1) not in _KEYS:
                continue
            key, value = _KEYS[pair.group(1)], pair.group(2)
            if (key in PERF_KEYS) != (section == "perf"):
                continue
            if key in TEXT_KEYS:
                block[key] = value
                continue
            number = _number(value)
            if number is not None:
                block[key] = number
    if block and "inference_ms" in block:
        found = block
    return found


def _number(text: str) -> float | None:
    try:
        value = float(text.rstrip("%").strip())
    except ValueError:
        return None
    return value if value == value else None  # nan is no figure

