"""What one ``tipcgen run`` is asked to do, as one value, and the proofs it is handed.

``RunRequest`` is built by the CLI (``tipcgen run``'s options, one field each, under the same names) and by
``tipcgen suite``, which starts each chain as ``tipcgen run`` with ``request.args()``: the arguments that the
CLI parses back into the same request (tests/test_run_request.py). ``run.pipeline.run`` takes it, for a generated
runner and a kept one (init --submission) alike.

``Proofs`` is what a run checks that lives above ``run/`` (the layering: ``run/`` never imports ``repro/``
or ``configs/lint``): the CLI hands in an object with its methods; ``NO_PROOFS`` checks nothing. Its
``recorder`` takes the records the proofs read (repro/record.py) at the runner's handshakes (words.WAIT):
``run/`` calls it, and hands it back to ``check_exports``, without looking inside.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from tipcgen.format.chains import BASIC
from tipcgen.format.words import LITE_TRAIN_LITE_INFER
from tipcgen.results.summary import Step


@dataclass(frozen=True)
class RunRequest:
    """One run: the mode, the repository and config, the chain, and each option of ``tipcgen run``."""

    mode: str = LITE_TRAIN_LITE_INFER
    root: Path = Path(".")
    config: str | None = None
    chain: str = BASIC
    data_dir: str | None = None
    model_dir: str | None = None
    step_timeout: int | None = None
    python: str | None = None
    sandbox: bool = False
    max_checkpoint_bytes: int | None = None
    quiet: bool = False
    # Where each output line of the scripts goes (the CLI's printer); not part of what is asked.
    on_line: Callable[[str], None] | None = field(default=None, compare=False, repr=False)
    # Told the run folder once it is known, before any script starts (the display reads the steps' logs there).
    on_run_dir: Callable[[Path], None] | None = field(default=None, compare=False, repr=False)

    def args(self) -> list[str]:
        """The ``tipcgen run`` arguments that ask for this request (what ``suite`` starts)."""
        out = ["--root", str(self.root), "--mode", self.mode, "--chain", self.chain]
        for option, value in (("--config", self.config), ("--data-dir", self.data_dir),
                              ("--model-dir", self.model_dir), ("--step-timeout", self.step_timeout),
                              ("--python", self.python), ("--max-checkpoint-bytes", self.max_checkpoint_bytes)):
            if value is not None:
                out += [option, str(value)]
        return out + (["--sandbox"] if self.sandbox else []) + (["--quiet"] if self.quiet else [])

    def line(self, text: str) -> None:
        if self.on_line is not None:
            self.on_line(text)


class Records(Protocol):
    """What a run records while no step runs, at the runner's handshakes (repro/record.Recorder)."""

    def prime(self) -> None:
        """Read ahead, beside prepare.sh, what the first handshake will need (a cache: it changes no record)."""
        ...

    def started(self, kind: str, name: str) -> None:
        """A train, eval or export step is about to start (a kept runner: ``train *`` before it starts)."""
        ...

    def beside(self, kind: str, name: str) -> None:
        """A step is about to start beside the next ones (an export beside the eval); ``started`` follows."""
        ...

    def ended(self, kind: str, name: str, model_dir: str | None) -> None:
        """A train step ended, having written into model_dir (its record's, relative to the repository); or an
        eval or export that ran beside the next steps ended (the records checked again)."""
        ...


class Proofs(Protocol):
    """The checks of a run that live above ``run/``: the config's refusals before anything starts
    (configs/preflight.refuse), the records taken while the runner waits (repro/record.Recorder) and the
    checks of a finished run (repro/export_check.check_exports)."""

    def refuse(self, root: Path, config_path: Path, env: dict[str, str], desc: Any) -> list[str]:
        """Raise a RunError for a config that would make every step fail; notes the summary records."""
        ...

    def recorder(self, root: Path, run_dir: Path, max_bytes: int | None, handshake: bool,
                 env: dict[str, str] | None = None) -> Records:
        """This run's records (handshake: the runner waits for tipcgen at each step; False for a kept runner;
        env: the steps' environment, whose HOME and PPNLP_HOME name the pretrained caches they see)."""
        ...

    def check_exports(self, root: Path, steps: list[Step], config_text: str, python: str | None, env: dict[str, str],
                      records: Records, max_bytes: int | None) -> tuple[list[Step], list[str]]:
        """The check steps and notes of a finished run, from its records."""
        ...

    def load(self) -> None:
        """Import what check_exports needs (numpy, ...): called in a thread while the scripts run, so that the
        proofs start at once when the runner ends."""
        ...


class NoRecords:
    """Records nothing."""

    def prime(self) -> None:
        return None

    def started(self, kind: str, name: str) -> None:
        return None

    def beside(self, kind: str, name: str) -> None:
        return None

    def ended(self, kind: str, name: str, model_dir: str | None) -> None:
        return None


class NoProofs:
    """Checks nothing: for a caller that has no proofs to hand in (tests of the pipeline alone)."""

    def refuse(self, root: Path, config_path: Path, env: dict[str, str], desc: Any) -> list[str]:
        return []

    def recorder(self, root: Path, run_dir: Path, max_bytes: int | None, handshake: bool,
                 env: dict[str, str] | None = None) -> Records:
        return NoRecords()

    def check_exports(self, root: Path, steps: list[Step], config_text: str, python: str | None, env: dict[str, str],
                      records: Records, max_bytes: int | None) -> tuple[list[Step], list[str]]:
        return [], []

    def load(self) -> None:
        return None


NO_PROOFS = NoProofs()
