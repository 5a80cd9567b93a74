"""Compare a reference framework's outputs with Paddle's, as reprod_log does, with the guards it lacks.

For people checking a paper reproduction (the guide's forward, metric, loss, backward and train
checkpoints). Reads reprod_log's pickled-dict ``.npy`` files and pickle-free ``.npz`` files (through
reprod_files, which never runs code from them), compares key by key (names, then types, shapes and
dtypes, then values), and writes the diff log in reprod_log's text format. numpy only: never imports
paddle, torch or reprod_log (which imports paddle).
"""
from __future__ import annotations

import hashlib
import io
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tipcgen.core.errors import TipcgenError
from tipcgen.core.writes import write_file
from tipcgen.render.shipped.tipc_compare import abs_diff
from tipcgen.repro.reprod_files import DEFAULT_MAX_BYTES, AlignFileError, load_info

METHODS = ("mean", "max", "min")
ALL_ORDER = ("min", "max", "mean")  # the order reprod_log prints for diff_method='all'
DEFAULT_THRESHOLD = 1e-6
_ALL_ZERO = "every difference is exactly 0"
_NPZ_SEP = "/"

Info = dict[str, Any]  # a reprod_log dict: key -> ndarray, or key -> nested dict
KeyPath = tuple[str, ...]


def save_info(path: str | Path, data: Info) -> Path:
    """Write ``data`` as ReprodLogger.save does (``.npy``, a pickled dict) or, for ``.npz``, without pickle."""
    path = Path(path)
    arrays = _as_arrays(data)
    buffer = io.BytesIO()  # numpy writes into memory; tipcgen.core.writes puts the bytes on disk
    if path.suffix == ".npz":
        np.savez(buffer, **dict(_flatten(arrays)))  # type: ignore[arg-type]  # numpy's stubs read ** as allow_pickle
    else:
        np.save(buffer, arrays)  # type: ignore[arg-type]  # np.save pickles the dict: reprod_log's format
    write_file(path, buffer.getvalue())
    return path


def _as_arrays(data: Info) -> Info:
    out: Info = {}
    for key, value in data.items():
        out[key] = _as_arrays(value) if isinstance(value, dict) else np.asarray(value)
    return out


def _flatten(data: Info, prefix: str = "") -> Iterator[tuple[str, np.ndarray]]:
    for key, value in data.items():
        if _NPZ_SEP in key:
            raise AlignFileError(f"key {key!r}: '/' cannot be stored in a .npz key", "rename the key or save as .npy")
        if isinstance(value, dict):
            yield from _flatten(value, prefix + key + _NPZ_SEP)
        else:
            yield prefix + key, value


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- comparison results

@dataclass
class KeyDiff:
    """One compared key: its absolute-difference statistics and why it fails, if it does."""

    path: KeyPath
    shape: tuple[int, ...] | None = None
    dtype: str = ""
    diffs: dict[str, Any] = field(default_factory=dict)  # method -> numpy scalar, as reprod_log prints it
    problems: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return ".".join(self.path)

    def value(self, method: str) -> float:
        return float(self.diffs[method]) if method in self.diffs else math.nan

    def method_passed(self, method: str, threshold: float) -> bool:
        value = self.value(method)
        return math.isfinite(value) and value <= threshold  # NaN never passes (reprod_log lets it)

    def passed(self, methods: Sequence[str], threshold: float) -> bool:
        return not self.problems and all(self.method_passed(m, threshold) for m in methods)


@dataclass
class Comparison:
    """The verdict of comparing two reprod_log files; the log and the CLI are writers over it."""

    reference: str
    paddle: str
    methods: tuple[str, ...]
    threshold: float
    keys: list[KeyDiff] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # file-level failures (missing keys, identical files)
    warnings: list[str] = field(default_factory=list)
    reference_info: Info = field(default_factory=dict, repr=False)

    @property
    def passed(self) -> bool:
        return not self.problems and bool(self.keys) and all(k.passed(self.methods, self.threshold) for k in self.keys)

    @property
    def failures(self) -> list[str]:
        """Every reason for failing, file-level first, then per key in file order."""
        out = list(self.problems)
        for k in self.keys:
            out.extend(f"{k.key}: {p}" for p in k.problems)
            out.extend(f"{k.key}: {m} diff {k.value(m):.3g} > threshold {self.threshold:g}"
                       for m in self.methods if not k.problems and not k.method_passed(m, self.threshold))
        return out

    @property
    def worst(self) -> float | None:
        """The largest checked difference (NaN if any is NaN); None when nothing could be compared."""
        return _largest(k.value(m) for k in self.keys for m in self.methods if m in k.diffs)

    @property
    def max_abs(self) -> float | None:
        """The largest absolute difference of any element, whatever the method checked."""
        return _largest(k.value("max") for k in self.keys if "max" in k.diffs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference, "paddle": self.paddle, "methods": list(self.methods),
            "threshold": self.threshold, "passed": self.passed, "worst": _json_float(self.worst),
            "max_abs": _json_float(self.max_abs), "problems": self.problems, "warnings": self.warnings,
            "failures": self.failures,
            "keys": [{"key": k.key, "shape": list(k.shape) if k.shape is not None else None, "dtype": k.dtype,
                      **{m: _json_float(k.value(m)) for m in METHODS if m in k.diffs},
                      "passed": k.passed(self.methods, self.threshold), "problems": k.problems} for k in self.keys],
        }


def _largest(values: Iterable[float]) -> float | None:
    found = list(values)
    if not found:
        return None
    return math.nan if any(math.isnan(v) for v in found) else max(found)


def _json_float(value: float | None) -> float | str | None:
    if value is None:
        return None
    return value if math.isfinite(value) else str(value)  # JSON has no NaN/Inf


def parse_methods(method: str | Sequence[str]) -> tuple[str, ...]:
    """reprod_log's diff_method: 'mean', 'max', 'min', 'all', or a list of the first three."""
    names = [method] if isinstance(method, str) else list(method)
    if names == ["all"]:
        return ALL_ORDER
    bad = [m for m in names if m not in METHODS]
    if bad or not names:
        raise TipcgenError(f"unknown diff method {', '.join(bad) or '(none)'}", "use mean, max, min or all")
    return tuple(names)


def check_threshold(threshold: float, where: str = "--threshold") -> float:
    """A threshold is a finite number >= 0: inf would pass anything, NaN nothing, a negative value nothing."""
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise TipcgenError(f"{where} {threshold!r} is not a number", "e.g. --threshold 1e-6") from None
    if not math.isfinite(value) or value < 0:
        raise TipcgenError(f"{where} {threshold!r}: a threshold must be a finite number >= 0",
                           "e.g. --threshold 1e-6 (the guide's default for forward, metric, loss and backward)")
    return value


# ---------------------------------------------------------------- comparing

def compare_info(reference: Info, paddle: Info, method: str | Sequence[str] = "mean",
                 threshold: float = DEFAULT_THRESHOLD, reference_name: str = "reference",
                 paddle_name: str = "paddle") -> Comparison:
    """Compare two reprod_log dicts key by key: names, then types, shapes and dtypes, then values."""
    result = Comparison(reference_name, paddle_name, parse_methods(method), check_threshold(threshold),
                        reference_info=reference)
    _compare_level(reference, paddle, (), result)
    if not result.keys and not result.problems:
        result.problems.append("no keys to compare: both files are empty")
    elif result.keys and all(k.diffs and not k.problems and all(k.value(m) == 0 for m in METHODS) for k in result.keys):
        result.warnings.append(_ALL_ZERO + ": check that the two files come from different frameworks "
                               "(a reference compared with itself proves nothing)")
    return result


def _compare_level(ref: Info, pd: Info, prefix: KeyPath, result: Comparison) -> None:
    where = f" under {'.'.join(prefix)}" if prefix else ""
    only_ref = [k for k in ref if k not in pd]
    only_pd = [k for k in pd if k not in ref]
    if only_ref:
        result.problems.append(f"key(s) only in {result.reference}{where}: {', '.join(map(str, only_ref))}")
    if only_pd:
        result.problems.append(f"key(s) only in {result.paddle}{where}: {', '.join(map(str, only_pd))}")
    for key in ref:
        if key not in pd:
            continue
        path = prefix + (str(key),)
        a, b = ref[key], pd[key]
        if isinstance(a, dict) and isinstance(b, dict):
            _compare_level(a, b, path, result)
        else:
            result.keys.append(_compare_leaf(path, a, b, result.reference, result.paddle))


def _compare_leaf(path: KeyPath, a: Any, b: Any, ref_name: str, pd_name: str) -> KeyDiff:
    diff = KeyDiff(path)
    a, b = _leaf_array(a), _leaf_array(b)
    if a is None or b is None:
        diff.problems.append("not an array on both sides (a nested dict on one side only, or an unsupported type)")
        return diff
    diff.shape, diff.dtype = a.shape, str(a.dtype)
    if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        diff.problems.append(f"not numeric: {ref_name} {a.dtype}, {pd_name} {b.dtype}")
        return diff
    if a.shape != b.shape:
        hint = " (the transpose of each other; reprod_log transposes silently)" if a.T.shape == b.shape else ""
        diff.problems.append(f"shapes differ: {ref_name} {a.shape}, {pd_name} {b.shape}{hint}")
        return diff
    if a.dtype != b.dtype:
        diff.problems.append(f"dtypes differ: {ref_name} {a.dtype}, {pd_name} {b.dtype}")
    if a.size == 0:
        diff.problems.append("empty array: nothing to compare")
        return diff
    for name, arr in ((ref_name, a), (pd_name, b)):
        bad = _non_finite(arr)
        if bad:
            diff.problems.append(f"{name} has {bad}")
    d = _abs_diff(a, b)
    diff.diffs = {"mean": d.mean(), "max": d.max(), "min": d.min()}
    return diff


def _leaf_array(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, np.generic)):
        return np.asarray(value)
    return None


def _non_finite(arr: np.ndarray) -> str:
    if arr.dtype.kind != "f":
        return ""
    nan, inf = int(np.isnan(arr).sum()), int(np.isinf(arr).sum())
    parts = [f"{nan} NaN" if nan else "", f"{inf} Inf" if inf else ""]
    return " and ".join(p for p in parts if p)


def _abs_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| as reprod_log prints it, but never wrapped (int8/int64/uint64) or overflowed: tipc_compare.abs_diff."""
    return abs_diff(a, b)


def compare_files(reference: str | Path, paddle: str | Path, method: str | Sequence[str] = "mean",
                  threshold: float = DEFAULT_THRESHOLD, allow_identical: bool = False,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Comparison:
    """Load and compare two checkpoint files; identical files fail unless ``allow_identical``
    (a metric on integer counts can legitimately be bit-identical)."""
    ref_path, pd_path = Path(reference), Path(paddle)
    result = compare_info(load_info(ref_path, max_bytes), load_info(pd_path, max_bytes), method, threshold,
                          reference_name=str(ref_path), paddle_name=str(pd_path))
    if ref_path.resolve() == pd_path.resolve():
        result.problems.insert(0, "the reference and the Paddle file are the same file")
    elif _sha256(ref_path) == _sha256(pd_path):
        result.warnings = [w for w in result.warnings if not w.startswith(_ALL_ZERO)]
        if allow_identical:
            result.warnings.insert(0, "the two files are byte-identical: expected only where both frameworks "
                                      "compute the very same numbers (an accuracy on the same predictions)")
        else:
            result.problems.insert(0, "the two files are byte-identical: was the reference compared with itself? "
                                      "(BERT-SST2-Prod's backward step did that)")
    return result


# ---------------------------------------------------------------- reprod_log's log text

def log_lines(result: Comparison, when: float | None = None) -> list[str]:
    """The diff log, line by line, in reprod_log's format; guard findings are ERROR/WARNING lines."""
    stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(when))

    def line(message: str, level: str = "INFO") -> str:
        return f"[{stamp}] root {level}: {message}"

    by_path = {k.path: k for k in result.keys}
    out: list[str] = []
    _log_level(result.reference_info, (), by_path, result, out, line)
    out.extend(line(p, "ERROR") for p in result.problems)
    out.extend(line(w, "WARNING") for w in result.warnings)
    out.append(line("diff check passed" if result.passed else "diff check failed"))
    return out


def _log_level(info: Info, prefix: KeyPath, by_path: dict[KeyPath, KeyDiff], result: Comparison,
               out: list[str], line: Any) -> None:
    indent = "\t" * len(prefix)
    for key, value in info.items():
        path = prefix + (str(key),)
        if path in by_path:
            k = by_path[path]
            out.append(line(f"{indent}{key}: "))
            for method in result.methods if k.diffs else ():
                passed = k.method_passed(method, result.threshold)
                out.append(line(f"{indent}\t{method} diff: check passed: {passed}, value: {k.diffs[method]}"))
            out.extend(line(f"{indent}\t{p}", "ERROR") for p in k.problems)
        elif isinstance(value, dict) and any(p[: len(path)] == path for p in by_path):
            out.append(line(f"{indent}{key}"))
            _log_level(value, path, by_path, result, out, line)


def write_log(result: Comparison, path: str | Path, when: float | None = None) -> Path:
    """Write the diff log (replaced whole, as reprod_log's mode 'w'; a link there is replaced, not followed)."""
    path = Path(path)
    write_file(path, "\n".join(log_lines(result, when)) + "\n")
    return path


@dataclass
class LoggedVerdict:
    """What a diff log written by reprod_log (or tipcgen) says: its verdict and its largest value."""

    passed: bool | None
    worst: float | None


_LOG_VALUE = "diff: check passed: "


MAX_LOG_BYTES = 16 << 20  # a diff log has a few lines per key


def read_log(path: str | Path) -> LoggedVerdict:
    """The verdict line and the largest `value:` of a diff log; None where the log has none. The log is
    read through tipcgen.core.inputs (a regular file of at most 16 MiB: never a FIFO or /dev/zero);
    anything else is an AlignFileError."""
    from tipcgen.core.errors import InputError
    from tipcgen.core.inputs import read_bytes

    try:
        raw = read_bytes(path, "diff log", MAX_LOG_BYTES)
    except InputError as exc:
        raise AlignFileError(exc.message, "a diff log is the text file ReprodDiffHelper.report writes") from None
    passed: bool | None = None
    values: list[float] = []
    for text in raw.decode("utf-8", errors="replace").splitlines():
        message = text.split(": ", 1)[1] if "] root " in text and ": " in text else text
        if message.strip() == "diff check passed":
            passed = True
        elif message.strip() == "diff check failed":
            passed = False
        elif _LOG_VALUE in message and ", value: " in message:
            try:
                values.append(float(message.rsplit(", value: ", 1)[1]))
            except ValueError:
                continue
    return LoggedVerdict(passed, _largest(values))
