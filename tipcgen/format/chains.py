"""The chain registry (issue #58 item 1) and the proof list (item 2): each chain kind is one record, each proof
one entry, and every table that lists chains or the references a PASSED verdict needs is derived from them.

A chain's name is spelt here and nowhere else in the package (tests/test_chains.py finds no chain table written
by hand elsewhere): paths.RUNNERS, CONFIG_NAMES and RESULT_LOGS, the kinds a PASSED verdict needs
(summary.required_kinds), the CLI's `--chain` choices and help (`tipcgen run`, `tipcgen suite`) and what suite
plans all read ``CHAINS``. The file names of a chain (config, runner, status log) are spelt here too; paths.py
gives them their folders. Pure: records and lookups, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Mapping

from tipcgen.format.words import (
    BENCHMARK_TRAIN,
    CHECK,
    CONVERT,
    EVAL,
    EXPORT,
    INFER,
    LITE_TRAIN_LITE_INFER,
    LITE_TRAIN_WHOLE_INFER,
    QUANT,
    SPEED,
    TRAIN,
    WHOLE_INFER,
    WHOLE_TRAIN_WHOLE_INFER,
    Kind,
    word_repr,
    word_str,
)

class ChainName(str, Enum):
    """A chain's name: `--chain NAME`, summary.json's `chain`, its run folder's name (a Chain's ``name``)."""
    BASIC = "basic"
    PADDLE2ONNX = "paddle2onnx"
    BENCHMARK_TRAIN = BENCHMARK_TRAIN  # also a mode's name (words.BENCHMARK_TRAIN)
    PTQ = "ptq"
    DY2STATIC = "dy2static"
    FLEET = "fleet"

    __str__, __repr__ = word_str, word_repr


# The chain names other modules compare with (benchmark_train's is words.BENCHMARK_TRAIN: the mode's word).
BASIC, PADDLE2ONNX, PTQ, DY2STATIC, FLEET = (ChainName.BASIC, ChainName.PADDLE2ONNX, ChainName.PTQ,
                                             ChainName.DY2STATIC, ChainName.FLEET)


@dataclass(frozen=True)
class Chain:
    """One chain kind.

    name: `--chain NAME`, summary.json's `chain`, the run folder's name (test_tipc/output/<model>/<name>/<mode>).
    config: its config's file name (test_tipc/configs/<model>/<config>). runner: its runner's file name in
    test_tipc/. result_log: its status log in the run folder (upstream's names; reviewers read them).
    help: its piece of `tipcgen run --chain`'s help. required: the step kinds a PASSED verdict needs, per mode;
    every_mode: those of a mode ``required`` does not name (a kind the config sets to null is not required
    where ``null_kinds`` says the chain honours it: summary.required_kinds). always_trains: its runner trains
    in every mode, so it has no whole_infer (suite plans it in no whole_infer). section: its descriptor
    section (None: the descriptor's top level). suite: its piece of `tipcgen suite --chain`'s help, None where
    suite does not plan it.
    after_basic: it converts or infers the model its model's basic chain trained (suite runs it after that).
    render: the module of its render hook (render/hook.py: ``files(job)``, its runner, configs and other files for
    the models that ask for the chain), None where render/repository.py renders it (the basic chain).
    shipped: the scripts of tipcgen/render/shipped/ its runner calls, rendered wherever its runner is.
    """

    name: str
    config: str
    runner: str
    result_log: str
    help: str
    required: Mapping[str, tuple[Kind, ...]] = field(default_factory=dict)
    every_mode: tuple[Kind, ...] = ()
    null_kinds: bool = False
    always_trains: bool = False
    section: str | None = None
    suite: str | None = None
    after_basic: bool = False
    render: str | None = None
    shipped: tuple[str, ...] = ()

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes whose required kinds the record names (every mode: ``every_mode``)."""
        return tuple(self.required)

    @property
    def proofs(self) -> tuple[str, ...]:
        """The references of the proofs that apply to it (PROOFS)."""
        return tuple(proof.reference for proof in PROOFS if proof.chains is None or self.name in proof.chains)


_BASIC_CONFIG = "train_infer_python.txt"
_DY2STATIC_CONFIG = "train_dy2static_python.txt"
_FLEET_CONFIG = "train_linux_gpu_fleet_normal_infer_python_linux_gpu_cpu.txt"
# The shipped checks of the chains (format/paths.py names them for the rest of tipcgen).
CHECK_QUANT, BENCHMARK_ANALYSIS, CHECK_DY2STATIC = "check_quant.py", "benchmark_analysis.py", "check_dy2static.py"
CHECK_FLEET = "check_fleet.py"
_TRAINED_MODES = (LITE_TRAIN_LITE_INFER, LITE_TRAIN_WHOLE_INFER, WHOLE_TRAIN_WHOLE_INFER)

# In the order `--chain`'s help lists them.
CHAINS: tuple[Chain, ...] = (
    Chain(BASIC, _BASIC_CONFIG, "test_train_inference_python.sh", "results_python.log",
          "basic (train, eval, export, inference)",
          required={**{mode: (TRAIN, EVAL, EXPORT, INFER) for mode in _TRAINED_MODES}, WHOLE_INFER: (INFER,)},
          null_kinds=True, suite=f"basic ({_BASIC_CONFIG})"),
    Chain(PADDLE2ONNX, "model_linux_gpu_normal_normal_paddle2onnx_python_linux_cpu.txt", "test_paddle2onnx.sh",
          "results_paddle2onnx.log", "paddle2onnx", every_mode=(CONVERT, INFER), section=PADDLE2ONNX,
          suite="paddle2onnx (runs after the basic chain of its model, on the model it trained)", after_basic=True,
          render="tipcgen.render.paddle2onnx_runner"),
    Chain(ChainName.BENCHMARK_TRAIN, _BASIC_CONFIG, "benchmark_train.sh", "results_benchmark_train.log",
          "benchmark_train (training speed per case; --mode picks its data)",
          required={BENCHMARK_TRAIN: (TRAIN, SPEED)}, always_trains=True, section="benchmark",
          render="tipcgen.render.benchmark_runner", shipped=(BENCHMARK_ANALYSIS,)),
    Chain(PTQ, "train_ptq_infer_python.txt", "test_ptq_inference_python.sh", "results_ptq_python.log",
          "ptq (post-training quantization: calibrate, int8 inference, int8 vs float)",
          every_mode=(QUANT, INFER, CHECK), section=PTQ, render="tipcgen.render.ptq_runner", shipped=(CHECK_QUANT,)),
    Chain(DY2STATIC, _DY2STATIC_CONFIG, "test_train_dy2static_python.sh", "results_python.log",
          "dy2static (the same training in dygraph and through paddle.jit.to_static, losses compared step by step, "
          "then eval, export and inference)",
          every_mode=(TRAIN, EXPORT, INFER, CHECK), always_trains=True, section=DY2STATIC,
          suite=f"dy2static ({_DY2STATIC_CONFIG})", render="tipcgen.render.dy2static_runner", shipped=(CHECK_DY2STATIC,)),
    Chain(FLEET, _FLEET_CONFIG, "test_train_fleet_python.sh", "results_python.log",
          "fleet (a gpu_list naming machines, each simulated on this host as its own launcher over loopback "
          "addresses; rank 0's model goes on)",
          required={mode: (TRAIN, EVAL, EXPORT, INFER, CHECK) for mode in _TRAINED_MODES}, null_kinds=True,
          always_trains=True, section=FLEET,
          suite=f"fleet ({_FLEET_CONFIG}: machines simulated on this host)", render="tipcgen.render.fleet_runner",
          shipped=(CHECK_FLEET,)),
)


def by_name() -> Mapping[str, Chain]:
    """Each chain by its name, in CHAINS' order (read CHAINS when called: a test may register one)."""
    return MappingProxyType({chain.name: chain for chain in CHAINS})


def names() -> tuple[str, ...]:
    return tuple(chain.name for chain in CHAINS)


def suite_chains() -> tuple[Chain, ...]:
    """The chains `tipcgen suite` plans (it finds each by its config's file name)."""
    return tuple(chain for chain in CHAINS if chain.suite is not None)


def run_help() -> str:
    """`tipcgen run --chain`'s help: each chain's piece, the last after "or"."""
    pieces = [chain.help for chain in CHAINS]
    return ", ".join(pieces[:-1]) + ", or " + pieces[-1] + "." if len(pieces) > 1 else pieces[0] + "."


def suite_help() -> str:
    """`tipcgen suite --chain`'s help: each planned chain's piece, then those it plans in no whole_infer."""
    planned = suite_chains()
    trains = [chain.name for chain in planned if chain.always_trains]
    last_two = len(trains) == 2 and [chain.name for chain in planned[-2:]] == trains
    named = "those two" if last_two else " and ".join(filter(None, (", ".join(trains[:-1]), trains[-1])))
    return ("A chain to run (repeatable): " + ", ".join(chain.suite or "" for chain in planned)
            + (f"; {named} not in whole_infer." if trains else "."))


def required_kinds(chain: str, mode: str) -> tuple[Kind, ...]:
    """The step kinds a PASSED verdict of the chain in the mode needs (none for a chain it does not know)."""
    record = by_name().get(chain)
    if record is None:
        return ()
    return record.required.get(mode, record.every_mode)


def honours_null_kinds(chain: str) -> bool:
    """Whether a kind the chain's config sets to null (eval:null, inference:null) is not required."""
    record = by_name().get(chain)
    return record is not None and record.null_kinds


# ---- The proof seam (issue #58 item 2) ----

@dataclass(frozen=True)
class Proof:
    """One proof: a step of kind ``kind`` whose record carries ``reference``.

    chains: the chains it applies to (None: every chain). checks: what it proves. of_run: a check of the run
    itself (tipcgen run makes it after the runner), not of its results: a PASSED verdict needs each that the
    run made to have passed (Summary.unproven), and it never counts as the run's result check. made_by: where
    it is made (the module, or the runner and its shipped script)."""

    reference: str
    checks: str
    made_by: str
    chains: tuple[str, ...] | None = None
    kind: Kind = CHECK
    of_run: bool = False


class Reference(str, Enum):
    """The reference a check step records (steps.jsonl's and summary.json's `reference`), each a proof below."""
    TRAINED = "trained"
    GIT = "git"
    DYGRAPH = "dygraph"
    GOLDEN = "golden"
    FIXED = "fixed"
    PADDLE = "paddle"
    SINGLE = "single"

    __str__, __repr__ = word_str, word_repr


TRAINED, GIT, DYGRAPH, GOLDEN = Reference.TRAINED, Reference.GIT, Reference.DYGRAPH, Reference.GOLDEN
FIXED, PADDLE, SINGLE = Reference.FIXED, Reference.PADDLE, Reference.SINGLE

PROOFS: tuple[Proof, ...] = (
    Proof(TRAINED, "the export holds the parameters this run trained", "repro/export_check.py", of_run=True),
    Proof(GIT, "the chain changed no tracked file", "run/tracked.py", of_run=True),
    Proof(DYGRAPH, "inference matches the trained model's dygraph results (dy2static: the two trainings' losses)",
          "the runner's tipc_case", (BASIC, PADDLE2ONNX, DY2STATIC)),
    Proof(GOLDEN, "inference matches the committed golden results", "the runner's tipc_case", (BASIC,)),
    Proof(FIXED, "the chain's own check: the exported model fed fixed inputs in every inference configuration "
          "agrees with the first CPU fp32 one (ptq: the int8 model with the float one)",
          "tipc_steps.sh's tipc_fixed_check (check_inference.py); ptq's tipc_case (check_quant.py)",
          (BASIC, PADDLE2ONNX, PTQ)),
    Proof(PADDLE, "the ONNX model's inference matches Paddle's", "the runner's tipc_case", (PADDLE2ONNX,)),
    Proof(SINGLE, "the machines' training matches a single process's", "the runner's tipc_case, check_fleet.py",
          (FLEET,)),
)


def run_check_references() -> tuple[str, ...]:
    """The references of the run's own proofs (Proof.of_run), in PROOFS' order: ("trained", "git")."""
    return tuple(proof.reference for proof in PROOFS if proof.of_run)

