"""What a chain left behind → a Summary; and the Summary's writers (JSON, JUnit XML, terminal).

The runner writes one JSON record per step (steps.jsonl) next to results_python.log; the
summary is built from those records and cross-checked against the status lines, so it never
depends on regular expressions over free text.
"""
from __future__ import annotations

import copy
import json
import os
import platform
import re
from dataclasses import Field, dataclass, field, fields, is_dataclass
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.core.writes import write_file
from tipcgen.format.paths import CHECK_MARKER, JUNIT_XML, RECORDS, RESULTS_LOG, STEP_FIELDS, SUMMARY_JSON, run_rel
from tipcgen.format import chains
from tipcgen.format.words import (
    CHAIN_FAILED,
    CHAIN_INTERRUPTED,
    CHAIN_PASSED,
    CHAIN_UNCHECKED,
    CHECK,
    EVAL,
    FAILED,
    INFER,
    INTERRUPTED,
    MARKS,
    PASSED,
    SKIPPED,
    SPEED,
    Status,
)
from tipcgen.results import autolog, speeds
from tipcgen.results.summary_check import read_summary_data

__all__ = ["JUNIT_XML", "RECORDS", "RESULTS_LOG", "SUMMARY_JSON"]  # re-exported: older imports read them here
TAIL_LINES = 20
_TAIL_BYTES = 64 * 1024
RECORDS_BYTES = 64 << 20  # steps.jsonl and the status log: a record is a few hundred bytes


# A step's record is flat on disk (steps.jsonl: tipc_record writes paths.STEP_FIELDS; summary.json: Step.to_dict)
# and typed here: the fields every step has stay on Step, those of what it belongs to or ran in are sub-records,
# each flat key its field's name (or its metadata's FLAT_KEY). results/summary_schema.py derives the step's schema
# from these classes (flat_fields).
FLAT_KEY = "flat_key"


@dataclass
class StepTraining:
    """The training a step belongs to (train, and the eval, export, inference and checks of its model); None
    where the step belongs to none. Values as the config spells them."""
    gpu: str | None = None  # the gpu_list entry of the training (-1: CPU)
    trainer: str | None = None
    autocast: str | None = None
    # gpus_<entry>[_<tag>]: the trained model, as golden result files name it (the record's `training`)
    name: str | None = field(default=None, metadata={FLAT_KEY: "training"})


@dataclass
class StepCase:
    """What the step ran in: the configuration an inference case (or a training, an export) was given; None where
    it does not apply. Values as the config spells them."""
    device: str | None = None  # cpu | gpu: where it ran
    use_gpu: str | None = None  # the config's device value passed to it
    use_trt: str | None = None
    mkldnn: str | None = None
    threads: str | None = None
    precision: str | None = None
    batch_size: str | None = None
    model_dir: str | None = None  # the model folder it read (an inference) or wrote (a training, an export)
    device_num: str | None = None  # a benchmark_train case's N<machines>C<cards>


@dataclass
class StepCheck:
    """A check step's proof: which reference it compared with, and what it found."""
    reference: str | None = None  # a reference of format/chains.py's PROOFS (golden, trained, ...)
    # what the check printed (compare_results.py's, check_inference.py's, check_quant.py's result line; the record's
    # `check`)
    differences: dict = field(default_factory=dict, metadata={FLAT_KEY: "check"})


@dataclass
class Step:
    kind: str  # a words.Kind's value (a kept runner's own kinds too)
    name: str
    status: Status  # a record's word kept as read (the runner's records are not refused for an unknown one)
    exit_code: int | None = None
    seconds: float = 0.0
    log: str = ""
    reason: str = ""
    note: str = ""
    hint: str = ""  # a failed step: why, in one line, and the descriptor field to edit (results/explain.py)
    command: str = ""
    training: StepTraining = field(default_factory=StepTraining)
    case: StepCase = field(default_factory=StepCase)
    check: StepCheck = field(default_factory=StepCheck)
    tail: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)  # an eval's figures
    speed: dict = field(default_factory=dict)  # an inference case's AutoLog figures (autolog.py), a benchmark's (speeds.py)

    @property
    def mark(self) -> str:
        """PASS, FAIL, SKIP or INTR: how every table shows the status."""
        return MARKS.get(self.status, self.status.upper())

    @classmethod
    def flat(cls, kind: str, name: str, status: str, exit_code: int | None = None, seconds: float = 0.0,
             log: str = "", **keys: object) -> "Step":
        """A step from the keys of its flat record, as steps.jsonl and summary.json spell them
        (``Step.flat("infer", "c", PASSED, device="cpu", check={...})``)."""
        unknown = sorted(set(keys) - {key for key, _, _ in flat_fields()})
        if unknown:
            raise TypeError(f"a step record has no key {', '.join(unknown)}")
        return cls.from_dict({"kind": kind, "name": name, "status": status, "exit_code": exit_code,
                              "seconds": seconds, "log": log, **keys})

    @classmethod
    def from_dict(cls, data: dict) -> "Step":
        """A flat step record (summary.json's, validated: summary_check; or steps.jsonl's) typed again: each
        sub-record gathers its keys; keys it does not know are left out."""
        known: dict = {}
        for fld in fields(cls):
            record = _record_class(fld)
            if record is not None:
                known[fld.name] = record(**{sub.name: data[_flat_key(sub)] for sub in fields(record)
                                            if _flat_key(sub) in data})
            elif fld.name in data:
                known[fld.name] = data[fld.name]
        return cls(**known)

    def to_dict(self) -> dict:
        """The flat record summary.json holds (the keys flat_fields names, in its order)."""
        data: dict = {}
        for fld in fields(self):
            value = getattr(self, fld.name)
            if _record_class(fld) is not None:
                data.update((_flat_key(sub), copy.deepcopy(getattr(value, sub.name))) for sub in fields(value))
            else:
                data[fld.name] = copy.deepcopy(value)
        return data


def _record_class(fld: Field) -> type | None:
    """The sub-record class of a Step field, None for a field of its own."""
    factory = fld.default_factory
    return factory if isinstance(factory, type) and is_dataclass(factory) else None


def _flat_key(fld: Field) -> str:
    return fld.metadata.get(FLAT_KEY, fld.name)


def flat_fields() -> list[tuple[str, str, str]]:
    """Each key of a step's flat record: (key, its type as annotated, the Step field holding it: itself, or the
    sub-record's)."""
    out = []
    for fld in fields(Step):
        record = _record_class(fld)
        if record is None:
            out.append((fld.name, str(fld.type), fld.name))
        else:
            out.extend((_flat_key(sub), str(sub.type), fld.name) for sub in fields(record))
    return out


def required_kinds(chain: str, mode: str, null_kinds: set[str]) -> list[str]:
    """The step kinds a PASSED verdict needs; null_kinds: kinds the config turns off (command null)."""
    return [kind for kind in chains.required_kinds(chain, mode) if kind not in null_kinds]


@dataclass
class Summary:
    model: str
    mode: str
    config: str
    chain: str = chains.BASIC
    steps: list[Step] = field(default_factory=list)
    wall_seconds: float = 0.0
    runner_exit_code: int | None = None
    interrupted: bool = False
    interrupted_by: str = ""  # SIGINT, SIGTERM or SIGHUP, when tipcgen run received it
    required_kinds: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)  # tipcgen.provenance.collect
    target: dict = field(default_factory=dict)  # results.target_check.TargetResult.to_dict(), whole_train_whole_infer only
    notes: list[str] = field(default_factory=list)  # what the run cannot tell (submission mode: tipcgen.submission)
    previous: str = ""  # the run folder this run replaced, moved aside (format/paths.py PREVIOUS), relative to the root

    def count(self, status: str) -> int:
        return sum(1 for step in self.steps if step.status == status)

    def missing_kinds(self) -> list[str]:
        """Required kinds without a passed step (the runner exited 0, but it did not do the work)."""
        passed = {step.kind for step in self.steps if step.status == PASSED}
        return [kind for kind in self.required_kinds if kind not in passed]

    def unproven(self) -> list[Step]:
        """The run's own proofs (format/chains.py's PROOFS that are of_run: the export holds the trained
        parameters, no tracked file changed) that did not run: a PASSED verdict needs each to have passed. A skip
        is allowed only for a device the machine lacks (the step records one other than the CPU)."""
        return [step for step in self.steps if step.kind == CHECK and step.check.reference in chains.run_check_references()
                and step.status == SKIPPED and step.case.device in (None, "", "cpu")]

    @property
    def was_interrupted(self) -> bool:
        """A stop signal ended the run: tipcgen run received one, or the runner did and a step it cut short says
        so (its status: interrupted), as when the runner alone was sent SIGTERM."""
        return self.interrupted or self.count(INTERRUPTED) > 0

    @property
    def ok(self) -> bool:
        """The one rule of a PASSED verdict: no problem, no interrupt, no failed or interrupted step, a clean
        runner exit, a passed step of every required kind, every proof run (unproven) and the target reproduced."""
        return (not self.problems and not self.was_interrupted and self.count(FAILED) == 0
                and self.count(PASSED) > 0 and self.runner_exit_code == 0 and not self.missing_kinds()
                and not self.unproven() and self.target.get("reproduced", True))

    @property
    def verdict(self) -> str:
        return verdict(self)

    @property
    def exit_code(self) -> int:
        if self.was_interrupted:  # 128 + the signal (SIGINT where tipcgen run received none itself)
            return 128 + _SIGNAL_NUMBERS.get(self.interrupted_by, 2)
        return 0 if self.ok else 1

    @classmethod
    def from_dict(cls, data: dict) -> "Summary":
        """A summary.json (validated: summary_check) again: the derived fields (ok, exit_code, the counts) are
        recomputed, keys it does not know are left out (as pytest's reports' `_from_json`)."""
        known = {key: value for key, value in data.items() if key in cls.__dataclass_fields__ and key != "steps"}
        return cls(**known, steps=[Step.from_dict(step) for step in data.get("steps", [])])

    def to_dict(self) -> dict:
        data = {fld.name: copy.deepcopy(getattr(self, fld.name)) for fld in fields(self) if fld.name != "steps"}
        data["steps"] = [step.to_dict() for step in self.steps]
        data.update(ok=self.ok, exit_code=self.exit_code, passed=self.count(PASSED),
                    failed=self.count(FAILED), skipped=self.count(SKIPPED), interrupted_steps=self.count(INTERRUPTED),
                    steps_seconds=round(sum(s.seconds for s in self.steps), 3))
        return data


_SIGNAL_NUMBERS = {"SIGHUP": 1, "SIGINT": 2, "SIGTERM": 15}


def log_tail(path: Path, lines: int = TAIL_LINES, folder: Path | None = None) -> list[str]:
    """The last lines of a log, reading at most 64 KiB however large the log is (core/inputs.py: a regular file;
    with ``folder``, reached through no link out of it). A log a step swapped for a link out, a FIFO or a device
    is not read: its one line says why (never what the link points at holds)."""
    try:
        text = inputs.tail(path, "step log", _TAIL_BYTES, folder).decode("utf-8", errors="replace")
    except TipcgenError as exc:
        return [f"(tipcgen did not read this log: {exc.message})"] if os.path.lexists(path) else []
    return text.splitlines()[-lines:]


_METRIC = re.compile(r"^\s*(accuracy|acc|f1|loss)\s*[:=]\s*([-+0-9.eE]+)")


def eval_metrics(lines: list[str]) -> dict[str, float]:
    """The last `accuracy: X` style values an eval step printed."""
    metrics = {}
    for line in lines:
        match = _METRIC.match(line)
        if match:
            try:
                metrics[match.group(1)] = float(match.group(2))
            except ValueError:
                continue
    return metrics


def check_result(lines: list[str]) -> dict:
    """The structured result line compare_results.py prints (`:::TIPC_CHECK {json}`)."""
    for line in reversed(lines):
        if line.startswith(CHECK_MARKER):
            try:
                return json.loads(line[len(CHECK_MARKER):])
            except ValueError:
                return {}
    return {}


def check_text(check: dict) -> str:
    """`logits 3.1e-07 (atol 1e-05, rtol 0.0001)`: the worst difference per output."""
    if not check.get("max_abs"):
        return ""
    diffs = ", ".join(f"{name} {value:.2g}" for name, value in sorted(check["max_abs"].items()))
    text = f"max abs diff {diffs} (atol {check.get('atol'):g}, rtol {check.get('rtol'):g})"
    means = [t["mean_ms"] for t in (check.get("latency_ms") or {}).values() if isinstance(t, dict)
             and isinstance(t.get("mean_ms"), (int, float))]
    if means:  # the chain's own check (check_inference.py) times every configuration
        text += f"; latency {min(means):.3g}-{max(means):.3g} ms over {len(means)} configuration(s)"
    accuracy = check.get("accuracy")  # the PTQ chain's check (check_quant.py): float and int8 on labelled data
    if isinstance(accuracy, dict) and all(isinstance(accuracy.get(k), (int, float)) for k in ("float", "int8", "delta")):
        text += f"; accuracy float {accuracy['float']:.4g}, int8 {accuracy['int8']:.4g} ({accuracy['delta']:+.4g})"
    return text


def _field(value) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return str(value)


def read_records(run_dir: Path, root: Path) -> tuple[list[Step], list[str]]:
    """The step records of a run folder, and any record that could not be read."""
    steps: list[Step] = []
    problems: list[str] = []
    path = run_dir / RECORDS
    if not os.path.lexists(path):
        return steps, problems
    try:  # the runner writes it, but a step may have replaced it: a regular file inside the repository, bounded
        text = inputs.read_bytes(path, RECORDS, RECORDS_BYTES, folder=root).decode("utf-8", errors="replace")
    except TipcgenError as exc:
        return steps, [f"the step records were not read: {exc.message}"]
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            step = Step.from_dict({**{k: raw[k] for k in ("kind", "name", "status")},
                                   "exit_code": raw.get("exit_code"), "seconds": float(raw.get("seconds") or 0),
                                   **{k: raw.get(k) or "" for k in ("log", "reason", "note", "command")},
                                   **{k: _field(raw.get(k)) for k in STEP_FIELDS}})
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{path}:{number}: unreadable step record ({exc})")
            continue
        if step.status == FAILED and step.reason == INTERRUPTED:
            step.status = INTERRUPTED  # cut short by a stop signal (the runner's tipc_conclude): not a failure of its own
        if step.status in (FAILED, INTERRUPTED) and step.log:
            step.tail = log_tail(root / step.log, folder=root)
        if step.status == PASSED and step.kind == EVAL and step.log:
            step.metrics = eval_metrics(log_tail(root / step.log, 200, folder=root))
        if step.kind == INFER and step.status == PASSED and step.log:
            step.speed = autolog.read_block(log_tail(root / step.log, 400, folder=root))
        if step.kind == CHECK and step.log:
            step.check.differences = check_result(log_tail(root / step.log, 200, folder=root))
        if step.kind == SPEED and step.log:  # benchmark_train: the case's speed JSON
            step.speed = speeds.speed_of_log(log_tail(root / step.log, 50, folder=root))
        steps.append(step)
    return steps, problems


def check_status_lines(run_dir: Path, steps: list[Step], results_log: str = RESULTS_LOG) -> list[str]:
    """The legacy results log must say exactly what the records say."""
    path = run_dir / results_log
    if not os.path.lexists(path):
        return [f"{path} is missing"] if steps else []
    try:
        text = inputs.read_bytes(path, results_log, RECORDS_BYTES, folder=run_dir).decode("utf-8", errors="replace")
    except TipcgenError as exc:
        return [f"the status log was not read: {exc.message}"]
    lines = [line for line in text.splitlines() if line.strip()]
    ok = sum(1 for line in lines if "Run successfully with command" in line)
    bad = sum(1 for line in lines if "Run failed with command" in line)
    problems = []
    passed = sum(1 for s in steps if s.status == PASSED)
    failed = sum(1 for s in steps if s.status in (FAILED, INTERRUPTED) and s.command)  # an interrupted one: "Run failed"
    if (ok, bad) != (passed, failed):
        problems.append(f"{path}: {ok} success and {bad} failure lines, but the step records say "
                        f"{passed} passed and {failed} failed")
    other = [line for line in lines if "Run successfully" not in line and "Run failed" not in line]
    if other:
        problems.append(f"{path}: {len(other)} line(s) are neither success nor failure lines, e.g. {other[0]!r}")
    return problems


def environment_info() -> dict[str, str]:
    """Python, the platform (``platform.platform()``'s text without its processor field, which Python reads
    by starting ``uname -p``: a process outside core/process.py, before every run) and the machine."""
    uname, libc = platform.uname(), "".join(platform.libc_ver())
    shown = f"{uname.system}-{uname.release}-{uname.machine}" + (f"-with-{libc}" if libc else "")
    return {"python": platform.python_version(), "platform": shown, "machine": uname.machine}


def load_summary(path: Path) -> Summary:
    """A summary.json (as write_json wrote it) → the Summary again; derived fields are recomputed.
    Anything write_json never writes is a SummaryFileError naming the file and the field (exit 2)."""
    return Summary.from_dict(read_summary_data(path))


def relocate_logs(summary: Summary, run_dir: Path, root: Path) -> None:
    """A run folder that is no longer where its run wrote it (a rerun moved it aside to <mode>.previous, or it was
    copied elsewhere in the repository): the step logs its summary names in the folder it was are read, and shown,
    in the folder it is now, never in the folder a later run now fills."""
    was = run_rel(summary.model, summary.mode, summary.chain)
    try:
        now = run_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:  # outside the repository: the logs are read where the summary says
        return
    if now == was:
        return
    summary.previous = ""  # the folder it names is this one now, or another run's
    for step in summary.steps:
        log = step.log.removeprefix("./")
        if log.startswith(was + "/"):
            step.log = now + log[len(was):]


def write_json(summary: Summary, path: Path) -> None:
    write_file(path, json.dumps(summary.to_dict(), indent=2, ensure_ascii=False) + "\n", within=path.parent)


def verdict(summary: Summary) -> str:
    """PASSED only when the steps ran and passed; a run where no result check passed says so."""
    if not summary.ok:
        return CHAIN_INTERRUPTED if summary.was_interrupted else CHAIN_FAILED
    if not any(step.kind == CHECK and step.status == PASSED and step.check.differences.get("logs") != 0
               and step.check.reference not in chains.run_check_references() for step in summary.steps):
        return CHAIN_UNCHECKED  # no check ran, or none compared anything (one configuration only)
    return CHAIN_PASSED
