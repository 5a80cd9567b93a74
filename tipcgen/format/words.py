"""tipcgen's vocabulary, each word said once: what a step's status, a chain's verdict and a suite chain's
verdict can be, and how tables show them; the runners' progress line; the modes; the kinds of step a chain
records; the config sections tipcgen reads by
name; its defaults. Python imports the names from here; the templates get them as ``status``, ``progress``,
``mode``, ``kind`` and ``verdicts`` (render/templating.py), so the runner writes the words Python reads.
tests/test_vocabulary.py finds none of them spelt anywhere else in the package or the templates (the shipped
scripts, which import nothing from tipcgen, excepted: they write only their own check line)."""
from __future__ import annotations

from enum import Enum


# Statuses and kinds are typed (`Status`, `Kind`; chains' names and proofs' references in format/chains.py) and are
# their words at once: each member is a str equal to its value, hashed as it, and written as it (str(), repr(),
# f-strings, json, the templates), so what reaches a file or a message is the same bytes as the plain word, and a
# word read back from steps.jsonl finds its member in a dict or a tuple. (enum.StrEnum is Python 3.11's; tipcgen
# runs on 3.9.) A chain's name lives in the chain registry (format/chains.py).
def word_str(member: Enum) -> str:
    """A typed word's __str__ (and so its f-string, %s and template text): its value."""
    return str(member.value)


def word_repr(member: Enum) -> str:
    return repr(member.value)


class Status(str, Enum):
    """A step's status: steps.jsonl's and summary.json's `status` (the runner's tipc_record writes it)."""
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    # A step a stop signal cut short (Ctrl-C, a CI's cancel): neither passed nor failed, and never a PASSED verdict.
    # The runners' records keep `failed` with the reason `interrupted` (their status log's "Run failed" line, as
    # upstream's); results/summary.py reads such a record as this status.
    INTERRUPTED = "interrupted"

    __str__, __repr__ = word_str, word_repr


PASSED, FAILED, SKIPPED, INTERRUPTED = Status.PASSED, Status.FAILED, Status.SKIPPED, Status.INTERRUPTED
STATUSES: tuple[str, ...] = tuple(Status)
# a step's status in every table and on the runners' progress lines (four letters each)
MARKS: dict[str, str] = {PASSED: "PASS", FAILED: "FAIL", SKIPPED: "SKIP", INTERRUPTED: "INTR"}

# The runners' progress lines (stdout): `[tipc] RUN kind name` when a step starts, `[tipc] PASS|FAIL|SKIP|INTR kind
# name ...` when it ends; tipcgen run shows them, times steps by the RUN lines, and a suite relays them.
PROGRESS = "[tipc] "
STARTED = "RUN"


def progress_mark(line: str) -> str | None:
    """RUN, PASS, FAIL, SKIP or INTR when ``line`` is a runner's progress line about a step, else None."""
    if not line.startswith(PROGRESS):
        return None
    mark = line[len(PROGRESS):].split(" ", 1)[0]
    return mark if mark == STARTED or mark in MARKS.values() else None


# The runner's handshake with tipcgen run (run/pipeline.py): where tipcgen gave it an answer pipe (ANSWER_FD_VAR names
# its descriptor), the runner prints `[tipc] WAIT NONCE start KIND NAME` before a train, eval or export step starts
# and `[tipc] WAIT NONCE ended train NAME` after a training (`beside` for a step started beside the next ones, and
# `ended` for it when it is collected: an export beside the eval), then reads the pipe until the line NONCE comes: tipcgen
# records what it must (repro/record.py) while no step runs, then answers. NONCE is a fresh random number each
# time, so that an answer to a line a step printed into the runner's output never lets the runner go on early.
# Without the pipe (a reviewer running the shell) it never waits.
WAIT = "WAIT"
WAIT_START, WAIT_BESIDE, WAIT_ENDED = "start", "beside", "ended"
ANSWER_FD_VAR = "TIPC_ANSWER_FD"


def handshake_of(line: str) -> tuple[str, str, str, str] | None:
    """(nonce, start, beside or ended, kind, name) when ``line`` is the runner's handshake, else None."""
    if not line.startswith(PROGRESS + WAIT + " "):
        return None
    fields = line[len(PROGRESS) + len(WAIT) + 1:].split(" ", 3)
    if len(fields) != 4 or not fields[0].isdigit() or fields[1] not in (WAIT_START, WAIT_BESIDE, WAIT_ENDED) or not all(fields[2:]):
        return None
    return fields[0], fields[1], fields[2], fields[3]


# The modes of the basic chain (the runners' second argument; a config's per-mode values are keyed by them),
# the old names upstream runners still accept, and modes real per-mode values name that no basic runner has a
# branch for. benchmark_train is also the benchmark_train chain's one mode.
LITE_TRAIN_LITE_INFER, LITE_TRAIN_WHOLE_INFER = "lite_train_lite_infer", "lite_train_whole_infer"
WHOLE_INFER, WHOLE_TRAIN_WHOLE_INFER = "whole_infer", "whole_train_whole_infer"
MODES = (LITE_TRAIN_LITE_INFER, LITE_TRAIN_WHOLE_INFER, WHOLE_INFER, WHOLE_TRAIN_WHOLE_INFER)
LEGACY_MODES = {"lite_train_infer": LITE_TRAIN_LITE_INFER, "whole_train_infer": WHOLE_TRAIN_WHOLE_INFER, "infer": WHOLE_INFER}
BENCHMARK_TRAIN = "benchmark_train"
KNOWN_EXTRA_MODES = ("whole_train_lite_infer", "klquant_whole_infer", BENCHMARK_TRAIN)

# A step's kind: steps.jsonl's and summary.json's `kind` (the runners' tipc_step/tipc_skip/tipc_record write
# it; tipcgen run writes prepare and its own checks). SKIPPED_AFTER_TRAIN is the one record a failed training
# leaves for the eval, export and inference it would have fed.
class Kind(str, Enum):
    """A step's kind (steps.jsonl's and summary.json's `kind`)."""
    PREPARE = "prepare"
    TRAIN = "train"
    EVAL = "eval"
    EXPORT = "export"
    INFER = "infer"
    CHECK = "check"
    CONVERT = "convert"  # paddle2onnx
    QUANT = "quant"  # ptq
    SPEED = "speed"  # benchmark_train
    PROFILE = "profile"  # benchmark_train
    SKIPPED_AFTER_TRAIN = "eval+export+infer"
    OTHER = "other"  # a kept runner's status line whose command matches no config command (run/submission_run.py)

    __str__, __repr__ = word_str, word_repr


PREPARE, TRAIN, EVAL, EXPORT, INFER, CHECK = Kind.PREPARE, Kind.TRAIN, Kind.EVAL, Kind.EXPORT, Kind.INFER, Kind.CHECK
CONVERT, QUANT, SPEED, PROFILE = Kind.CONVERT, Kind.QUANT, Kind.SPEED, Kind.PROFILE
SKIPPED_AFTER_TRAIN, OTHER = Kind.SKIPPED_AFTER_TRAIN, Kind.OTHER
# The steps a descriptor's checks.own_weights may name: they load a model, and may load their own on purpose.
OWN_WEIGHTS_KINDS = (EVAL, EXPORT, INFER)
KINDS: tuple[str, ...] = tuple(Kind)

# What a PASSED verdict needs besides a clean exit (a passed step of each kind, per chain and mode) is each
# chain's record in the chain registry (format/chains.py: Chain.required, Chain.every_mode).

# A chain's verdict (summary.json's `verdict`, the summary's last line; tipcgen run's exit code follows it).
CHAIN_PASSED, CHAIN_FAILED, CHAIN_INTERRUPTED = "PASSED", "FAILED", "INTERRUPTED"
CHAIN_UNCHECKED = "PASSED (results not checked)"  # passed, but no result check compared anything

# What became of one chain of a suite (suite.json's `verdict`), and how the suite's table shows it.
ERROR, TIMEOUT, LOST = "error", "timeout", "lost"  # and INTERRUPTED, the step status's word
SUITE_VERDICTS = (PASSED, FAILED, ERROR, TIMEOUT, LOST, INTERRUPTED)
SUITE_MARKS = {PASSED: "PASS", FAILED: "FAIL", ERROR: "ERROR", TIMEOUT: "TIMEOUT", LOST: "LOST",
               INTERRUPTED: "INTERRUPTED"}

# The trailing sections of a config that tipcgen writes and its runners read by name (section_value).
RESULT_CHECK_SECTION = "result_check_params"
PADDLE2ONNX_SECTION = "paddle2onnx_params"

# Defaults said once.
DEFAULT_STEP_TIMEOUT = 600  # seconds before a step is killed (the descriptor's run.step_timeout)
PADDLE_PIN = "paddlepaddle==3.3.1"  # the paddle the chains are tested with (pyproject's paddle extra pins it too)


def template_context() -> dict[str, object]:
    """The words as the templates name them: {{ status.passed }}, {{ kind.train }}, {{ mode.whole_infer }}, {{ verdicts.passed }},
    {{ section_names.result_check }} ({{ kind.after_train }}: SKIPPED_AFTER_TRAIN)."""
    return {"status": {word: word for word in STATUSES},
            "progress": {"prefix": PROGRESS, "started": STARTED, **{word: MARKS[word] for word in STATUSES},
                         "wait": WAIT, "wait_start": WAIT_START, "wait_beside": WAIT_BESIDE,
                         "wait_ended": WAIT_ENDED},
            "mode": {name: name for name in (*MODES, BENCHMARK_TRAIN)},
            "kind": {**{word: word for word in KINDS if word != SKIPPED_AFTER_TRAIN}, "after_train": SKIPPED_AFTER_TRAIN},
            "verdicts": {"passed": CHAIN_PASSED, "failed": CHAIN_FAILED, "interrupted": CHAIN_INTERRUPTED},
            "section_names": {"result_check": RESULT_CHECK_SECTION, "paddle2onnx": PADDLE2ONNX_SECTION},
            "default_step_timeout": DEFAULT_STEP_TIMEOUT}
