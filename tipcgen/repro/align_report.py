"""The six acceptance checkpoints of a paper reproduction, found in a folder, re-checked, and reported.

For reviewers and CI: `tipcgen align report DIR` finds each checkpoint's file pair and diff log under DIR
(the guide names logs both ``*_diff.log`` and ``*_diff_log.txt``), re-compares the pair with the guide's
thresholds, and adds the TIPC row from the last `tipcgen run` summary. numpy only.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tipcgen.core.errors import InputError, TipcgenError
from tipcgen.core.inputs import read_bytes, within
from tipcgen.core.text import terminal
from tipcgen.format.paths import OUTPUT, SUMMARY_JSON
from tipcgen.format.words import LITE_TRAIN_LITE_INFER
from tipcgen.repro import align
from tipcgen.results.summary_check import MAX_SUMMARY_BYTES


@dataclass(frozen=True)
class Checkpoint:
    """One acceptance node of the guide: its file-name prefixes and its default threshold."""

    name: str
    title: str
    prefixes: tuple[str, ...]
    threshold: float
    allow_identical: bool = False  # accuracy values can be bit-identical without anything being wrong


CHECKPOINTS: tuple[Checkpoint, ...] = (
    Checkpoint("forward", "forward (model structure)", ("forward",), 1e-6),
    Checkpoint("metric", "evaluation metric", ("metric",), 1e-6, allow_identical=True),
    Checkpoint("loss", "loss function", ("loss",), 1e-6),
    Checkpoint("backward", "backward (optimizer steps)", ("bp_align", "backward", "bp"), 1e-6),
    Checkpoint("train", "train alignment (accuracy)", ("train_align", "train", "acc"), 0.0015, allow_identical=True),
)
TIPC = "tipc"
ROW_NAMES = tuple(c.name for c in CHECKPOINTS) + (TIPC,)
PADDLE_SIDES = ("paddle", "pd")
REFERENCE_SIDES = ("torch", "pytorch", "pt", "benchmark", "ref", "reference", "hf", "tf")
LOG_SUFFIXES = ("_diff.log", "_diff_log.txt")
DATA_SUFFIXES = (".npy", ".npz")
_SKIP_DIRS = {"site-packages", "node_modules", "__pycache__"}


@dataclass
class Row:
    """One line of the report: pass, fail or missing, the worst difference, and where it came from."""

    checkpoint: str
    status: str  # pass | fail | missing
    worst: float | None = None
    threshold: float | None = None
    method: str = "mean"
    reference: str | None = None
    paddle: str | None = None
    log: str | None = None
    detail: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    """The six rows; ``passed`` only when every row passes."""

    folder: str
    rows: list[Row]

    @property
    def passed(self) -> bool:
        return all(r.status == "pass" for r in self.rows)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r.status == status)

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for row in self.rows:
            data = asdict(row)
            data["worst"] = _json_float(row.worst)
            rows.append(data)
        return {"folder": self.folder, "passed": self.passed, "pass": self.count("pass"),
                "fail": self.count("fail"), "missing": self.count("missing"), "rows": rows}


def _json_float(value: float | None) -> Any:
    return value if value is None or math.isfinite(value) else str(value)


# ---------------------------------------------------------------- thresholds

def parse_threshold_options(options: Sequence[str]) -> dict[str, float]:
    """`forward=1e-5` strings from the command line -> {checkpoint: threshold}."""
    out: dict[str, float] = {}
    for option in options:
        name, sep, value = option.partition("=")
        if not sep:
            raise TipcgenError(f"--threshold {option!r}: expected CHECKPOINT=VALUE", "e.g. --threshold forward=1e-5")
        out[name.strip()] = _threshold_value(name.strip(), value, f"--threshold {option}")
    return out


def read_descriptor(path: Path) -> tuple[dict[str, float], str | None]:
    """A tipcgen descriptor's optional ``align: {thresholds: {forward: 1e-6, ...}}`` and its model_name."""
    from tipcgen.core.inputs import read_text
    from tipcgen.descriptor import yaml_lines

    data, _ = yaml_lines.read(read_text(path, "descriptor"), str(path))  # no alias bomb, no binary, plain keys
    data = data if isinstance(data, dict) else {}
    model = str(data["model_name"]) if data.get("model_name") else None
    section = data.get("align") or {}
    thresholds = section.get("thresholds") if isinstance(section, dict) else None
    if section and not isinstance(section, dict) or thresholds is not None and not isinstance(thresholds, dict):
        raise TipcgenError(f"{path}: align.thresholds must be a mapping", "e.g. align: {thresholds: {forward: 1e-5}}")
    return {str(k): _threshold_value(str(k), v, f"{path}: align.thresholds.{k}")
            for k, v in (thresholds or {}).items()}, model


def _threshold_value(name: str, value: Any, where: str) -> float:
    if name not in ROW_NAMES[:-1]:
        raise TipcgenError(f"{where}: unknown checkpoint {name!r}",
                           "checkpoints with a threshold: " + ", ".join(ROW_NAMES[:-1]))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TipcgenError(f"{where}: threshold must be a number, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise TipcgenError(f"{where}: threshold must be a finite number >= 0, got {value!r}")
    return number


def resolve_thresholds(*overrides: Mapping[str, float]) -> dict[str, float]:
    """The guide's defaults, then each override in turn (descriptor, then command line)."""
    out = {c.name: c.threshold for c in CHECKPOINTS}
    for override in overrides:
        out.update(override)
    return out


# ---------------------------------------------------------------- finding files

def _walk(folder: Path) -> list[Path]:
    """The regular files below folder, hidden folders and site-packages skipped, a linked folder never entered
    (a `data -> /datasets` link is passed by). A link whose name the report reads (a checkpoint's array or diff
    log) must lead inside folder to something that exists: inputs.within refuses one that leads outside or
    nowhere (exit 2) before anything is read; a link under any other name is never read, so never judged."""
    found = []
    for top, dirs, names in os.walk(folder):  # followlinks=False: a link to a folder is listed, not entered
        here = Path(top)
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d in _SKIP_DIRS)]
        for name in names:
            path = here / name
            if path.is_symlink() and _read_by_name(name):
                within(path, folder)
            if path.is_file():
                found.append(path)
    return sorted(found)


def _read_by_name(name: str) -> bool:
    """Whether a file of this name is one the report reads: some checkpoint's array (prefix_SIDE.npy ...) or log."""
    return any(_role(name, prefix) for checkpoint in CHECKPOINTS for prefix in checkpoint.prefixes)


def _side(stem: str, prefix: str) -> str | None:
    """'forward_paddle' -> 'paddle' for prefix 'forward'; None when the stem is not prefix_SIDE."""
    if not stem.startswith(prefix + "_"):
        return None
    side = stem[len(prefix) + 1:]
    return side if side in PADDLE_SIDES + REFERENCE_SIDES else None


def _role(name: str, prefix: str) -> str | None:
    """What a file of this name is to the checkpoint prefix: its log, its paddle or its reference array, or nothing."""
    if name in tuple(prefix + s for s in LOG_SUFFIXES):
        return "log"
    path = Path(name)
    side = _side(path.stem, prefix) if path.suffix in DATA_SUFFIXES else None
    return None if side is None else "paddle" if side in PADDLE_SIDES else "reference"


@dataclass
class Found:
    """The files of one checkpoint found in one folder."""

    folder: Path
    paddle: Path | None = None
    reference: Path | None = None
    log: Path | None = None


def find_checkpoint(files: Sequence[Path], checkpoint: Checkpoint) -> list[Found]:
    """Every folder holding files of this checkpoint, the most complete first (a pair and a log)."""
    by_folder: dict[Path, Found] = {}
    for prefix in checkpoint.prefixes:
        for path in files:
            role = _role(path.name, prefix)
            if role is None:
                continue
            found = by_folder.setdefault(path.parent, Found(path.parent))
            setattr(found, role, getattr(found, role) or path)
    return sorted(by_folder.values(), key=lambda f: (-(bool(f.paddle and f.reference) * 2 + bool(f.log)),
                                                     len(f.folder.parts), str(f.folder)))


# ---------------------------------------------------------------- rows

def checkpoint_row(files: Sequence[Path], checkpoint: Checkpoint, threshold: float, base: Path,
                   max_bytes: int = align.DEFAULT_MAX_BYTES) -> Row:
    """Re-check one checkpoint: the file pair decides; a log alone is read; nothing is 'missing'."""
    row = Row(checkpoint.name, "missing", threshold=threshold)
    found = find_checkpoint(files, checkpoint)
    if not found:
        row.detail = f"no {checkpoint.prefixes[0]}_paddle.npy / {checkpoint.prefixes[0]}_<reference>.npy / " \
                     f"{checkpoint.prefixes[0]}_diff.log"
        return row
    best = found[0]

    def rel(path: Path | None) -> str | None:
        return str(path.relative_to(base)) if path else None

    row.paddle, row.reference, row.log = rel(best.paddle), rel(best.reference), rel(best.log)
    if len(found) > 1:
        row.notes.append("also found in: " + ", ".join(rel(f.folder) or "." for f in found[1:]))
    if best.paddle and best.reference:
        _recheck(row, best, checkpoint, threshold, max_bytes)
    elif best.log:
        _from_log(row, best.log)
    else:
        side = "Paddle" if best.reference else "reference"
        row.detail = f"the {side} file is missing next to {rel(best.paddle or best.reference)}"
    return row


def _recheck(row: Row, found: Found, checkpoint: Checkpoint, threshold: float, max_bytes: int) -> None:
    assert found.paddle and found.reference
    try:
        result = align.compare_files(found.reference, found.paddle, "mean", threshold,
                                     allow_identical=checkpoint.allow_identical, max_bytes=max_bytes)
    except align.AlignFileError as exc:
        row.status, row.detail = "fail", exc.message
        return
    row.status = "pass" if result.passed else "fail"
    row.worst = result.worst
    keys = len(result.keys)
    row.detail = f"{keys} key(s), max abs diff {_fmt(result.max_abs)}"
    row.notes.extend(result.failures[:5])
    row.notes.extend(result.warnings)
    if found.log is None:
        row.notes.append(f"no {checkpoint.prefixes[0]}_diff.log: the guide asks for the diff log too")
        return
    try:
        logged = align.read_log(found.log)
    except align.AlignFileError as exc:
        row.status = "fail"
        row.notes.append(exc.message)
        return
    if logged.passed is None:
        row.notes.append(f"{found.log.name} has no 'diff check passed/failed' line")
    elif logged.passed != result.passed:
        said = "passed" if logged.passed else "failed"
        row.notes.append(f"{found.log.name} says {said}, the re-check {'passes' if result.passed else 'fails'} "
                         f"(threshold {threshold:g}, mean)")


def _from_log(row: Row, log: Path) -> None:
    try:
        logged = align.read_log(log)
    except align.AlignFileError as exc:
        row.status, row.detail = "fail", exc.message
        return
    row.worst = logged.worst
    row.status = "pass" if logged.passed else "fail"
    row.detail = "from the log only: the .npy pair is missing, nothing re-checked"
    if logged.passed is None:
        row.notes.append(f"{log.name} has no 'diff check passed/failed' line")


def tipc_row(root: Path, model: str | None = None) -> Row:
    """The TIPC row: the summary.json that the last `tipcgen run` of lite_train_lite_infer wrote."""
    row = Row(TIPC, "missing", method="")
    output = root / OUTPUT
    candidates = ([output / model / LITE_TRAIN_LITE_INFER / SUMMARY_JSON] if model
                  else output.glob(f"*/{LITE_TRAIN_LITE_INFER}/{SUMMARY_JSON}"))
    candidates = [p for p in candidates if within(p, root).is_file()]  # no link out of --root on the way
    if not candidates:
        row.detail = f"no {output / (model or '<model>') / LITE_TRAIN_LITE_INFER / SUMMARY_JSON}: run " \
                     f"`tipcgen run --mode {LITE_TRAIN_LITE_INFER}`"
        return row
    candidates.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    path = candidates[0]
    if len(candidates) > 1:
        row.notes.append("several models ran; newest used (choose with --model): "
                         + ", ".join(p.parts[-3] for p in candidates))
    row.log = str(path)
    try:
        summary = json.loads(read_bytes(path, SUMMARY_JSON, MAX_SUMMARY_BYTES))  # a regular file, bounded
        ok, counts = bool(summary["ok"]), {k: int(summary[k]) for k in ("passed", "failed", "skipped")}
    except (InputError, ValueError, KeyError, TypeError, RecursionError) as exc:
        row.status, row.detail = "fail", f"unreadable summary ({getattr(exc, 'message', exc)})"
        return row
    row.status = "pass" if ok else "fail"
    row.detail = (f"{summary.get('model', path.parts[-3])} {summary.get('mode', LITE_TRAIN_LITE_INFER)}: "
                  f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return row


def build_report(folder: Path, thresholds: Mapping[str, float], root: Path, model: str | None = None,
                 max_bytes: int = align.DEFAULT_MAX_BYTES) -> Report:
    """All six rows for a reproduction folder; thresholds as resolve_thresholds returns them; a file
    that is refused (over max_bytes, or naming anything but numpy arrays) fails its row."""
    if not folder.is_dir():
        raise TipcgenError(f"{folder}: no such folder", "pass the folder that holds the *_paddle.npy files and logs")
    files = _walk(folder)
    rows = [checkpoint_row(files, c, thresholds[c.name], folder, max_bytes) for c in CHECKPOINTS]
    rows.append(tipc_row(root, model))
    return Report(str(folder), rows)


# ---------------------------------------------------------------- writers

def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value else "0"


def report_text(report: Report) -> str:
    """The table for people: one row per checkpoint, then the notes."""
    head = ("checkpoint", "status", "worst diff", "threshold", "files / detail")
    lines = []
    for row in report.rows:
        where = row.log or row.paddle or ""
        detail = f"{where}  ({row.detail})" if where and row.detail else where or row.detail
        lines.append((row.checkpoint, row.status.upper(), _fmt(row.worst),
                      "-" if row.threshold is None else f"{row.threshold:g}", terminal(detail)))
    widths = [max(len(r[i]) for r in [head, *lines]) for i in range(4)]
    out = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in [head, *lines]]
    for row in report.rows:
        out.extend(f"  {row.checkpoint}: {terminal(note)}" for note in row.notes)
    out.append(f"{len(report.rows)} checkpoints: {report.count('pass')} pass, {report.count('fail')} fail, "
               f"{report.count('missing')} missing")
    return "\n".join(out)


def report_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2)
