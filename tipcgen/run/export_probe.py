"""doctor's probe of this repository's own export (issue #56 item 4): the export step the chain's last lite run
recorded (steps.jsonl: its command, its output folder), run again into a temporary folder twice, under Paddle 3's
program IR (PIR: ``inference.json``) and under the old one (``FLAGS_enable_pir_api=0``: ``inference.pdmodel``), so
that doctor says what this model's export meets with this paddle, before anyone advises or adds the flag. It runs
the repository's code, so only in the sandbox (the temporary folder its one writable place), or without one where
the user trusts the repository (doctor --trust-repo). Without a recorded export (no lite run yet) it says so."""
from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tipcgen.configs.legacy_format import FLAG
from tipcgen.core import process, sandbox
from tipcgen.core.errors import TipcgenError
from tipcgen.format import paths
from tipcgen.format.words import DEFAULT_STEP_TIMEOUT, EXPORT, FAILED, LITE_TRAIN_LITE_INFER, PASSED
from tipcgen.results.summary import read_records
from tipcgen.run import sandboxed

_ERROR_CHARS = 300


@dataclass(frozen=True)
class Outcome:
    """One probe export: under PIR (``pir``) or the old program IR, whether it wrote a model, which files, or its
    error (the last line of its output)."""

    pir: bool
    ok: bool
    files: tuple[str, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Recorded:
    """The export step of the last lite run: its argv as recorded (an ``env A=B`` prefix included) and the
    output folder the runner gave it."""

    name: str
    argv: tuple[str, ...]
    output: str


def recorded_export(root: Path, model: str) -> Recorded | None:
    """The last lite run's export step, where it ran (passed or failed) and its command can be read back."""
    run_dir = paths.run_dir(root, model, LITE_TRAIN_LITE_INFER)
    try:
        steps, _ = read_records(run_dir, root)
    except (TipcgenError, OSError):
        return None
    for step in reversed(steps):
        if step.kind == EXPORT and step.command and step.case.model_dir and step.status in (PASSED, FAILED):
            try:
                argv = tuple(shlex.split(step.command))
            except ValueError:  # a quoting shlex does not read ($'...')
                return None
            return Recorded(step.name, argv, step.case.model_dir) if argv else None
    return None


def variants(argv: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the command under PIR, the command under FLAGS_enable_pir_api=0): the recorded one with any setting of the
    flag in its ``env`` prefix taken out, then the flag put in front."""
    rest = list(argv)
    prefix: list[str] = []
    if rest and rest[0] == "env":
        prefix.append(rest.pop(0))
        while rest and "=" in rest[0] and not rest[0].startswith("-"):
            word = rest.pop(0)
            if not word.startswith(FLAG + "="):
                prefix.append(word)
    pir = tuple((prefix if len(prefix) > 1 else []) + rest)
    old = tuple((prefix or ["env"]) + [f"{FLAG}=0"] + rest)
    return pir, old


def retarget(argv: tuple[str, ...], output: str, folder: str) -> tuple[str, ...]:
    """argv with the output folder the runner gave (a word equal to it, or a flag's ``--x=`` value equal to it)
    pointed at folder; the checkpoint's path, which starts with it, is left as it is."""
    want = os.path.normpath(output)
    out = []
    for word in argv:
        head, eq, value = word.partition("=")
        if os.path.normpath(word) == want:
            out.append(folder)
        elif eq and head.startswith("-") and os.path.normpath(value) == want:
            out.append(f"{head}={folder}")
        else:
            out.append(word)
    return tuple(out)


def probe(root: Path, recorded: Recorded, env: dict[str, str], python: str, unsandboxed: bool) -> list[Outcome]:
    """The two probe exports (PIR, then the old IR), each into a fresh temporary folder: in the sandbox, or
    without one where ``unsandboxed`` (the user trusts the repository). A TipcgenError where neither may run."""
    boxed, why = sandbox.available()
    if not boxed and not unsandboxed:
        raise TipcgenError(f"no sandbox here ({why}) to run the repository's export in",
                           "doctor --trust-repo runs it without one")
    # run's own sandbox (what the chain must see under /tmp), with the temporary folder its one writable place
    base = sandboxed.spec(root, root / paths.OUTPUT, env, shutil.which(python) or python) if boxed else None
    out = []
    for pir, argv in zip((True, False), variants(recorded.argv)):
        with tempfile.TemporaryDirectory(prefix="tipcgen-export-probe-") as folder:
            spec = None if base is None else \
                dataclasses.replace(base, writable=(folder,), readable=(*base.readable, str(root)))
            result = process.run(process.Request(list(retarget(argv, recorded.output, folder)), cwd=root, env=env,
                                                 sandbox=spec, timeout=DEFAULT_STEP_TIMEOUT, output_cap=1 << 20))
            written = tuple(sorted(name for name in os.listdir(folder)
                                   if name.endswith((".json", ".pdmodel", ".pdiparams"))))
            model = any(n.endswith(".pdiparams") for n in written)
            ok = result.exit_code == 0 and not result.timed_out and model
            error = "" if ok else _error(result, model)
            out.append(Outcome(pir, ok, written, error))
    return out


def _error(result: process.Outcome, model: bool) -> str:
    if result.timed_out:
        return f"no export within {DEFAULT_STEP_TIMEOUT} s"
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    last = lines[-1][:_ERROR_CHARS] if lines else ""
    if result.exit_code == 0 and not model:
        return "it exited 0 and wrote no .pdiparams"
    return last or f"exit code {result.exit_code}"
