"""Config-level refusals before `tipcgen run` starts anything.

ARCHITECTURE.md layers run/pipeline.py under the config model (run imports results, never lint), so this gate
lives one level up: the CLI hands ``refuse`` to ``pipeline.run`` (its ``Proofs.refuse``), which calls it where
a refusal belongs (after the config is found and the run's environment is built, before any script or
probe starts). In order:

1. lint errors (``lint.refusals``, the function ``tipcgen doctor --config`` reports with);
2. the chain's interpreter (``TIPC_PYTHON`` / ``--python``, else the config's ``python:``) must be on PATH;
3. eval, export and inference must receive the run's own model (a trained checkpoint, the run's export):
   a null key there runs the script on whatever it loads by default, and the chain would still pass
   (issue #28); the descriptor's ``checks.own_weights`` says so on purpose (the run loads the descriptor
   once and hands it to ``refuse``: nothing here reads it again);
4. every key the generated runner passes must be a flag of the script it is passed to, or be handed on by a
   script that parses with ``parse_known_args`` (``flag_check``, ``script_rest``: a key such a script drops is
   refused like one ``parse_args`` refuses;
   in submission mode the repository's own runner passes what it passes: a note says the keys were not
   checked, ``flags_unchecked``, which ``tipcgen doctor``'s flags row says too).

``refuse`` returns notes (scripts whose flags could not be checked) for the run to record.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tipcgen.core.errors import RunError
from tipcgen.format import chain, layout
from tipcgen.format.config import TipcConfig, is_null, model_name_in, split_list

if TYPE_CHECKING:
    from tipcgen.descriptor import Descriptor

# (step, the command it runs, the slot that hands it the run's model, what it would use without it)
_MODEL_SLOTS = (
    ("eval", "eval.script", "train.pretrained", "trained checkpoint", "evaluate"),
    ("export", "export.norm", "export.weights", "trained checkpoint", "export"),
    ("infer", "inference.script", "inference.model_dir", "exported model of this run", "infer with"),
)


def refuse_lint_errors(root: Path, config_path: Path) -> None:
    """A RunError listing the first lint errors of the config (config_path relative to root)."""
    from tipcgen.configs import lint

    errors = lint.refusals(root / config_path, repo_root=root)
    if errors:
        shown = "; ".join(f"{config_path}:{f.line}: {f.message}" for f in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise RunError(f"the config has {len(errors)} lint error(s): {shown}{more}",
                       "fix them (tipcgen lint lists every finding; a .tipcgen-lint silence quiets lint's report, never "
                       "this refusal: each is what the runner would get wrong), or run from the repository root")


def refuse_missing_interpreter(config_path: Path, text: str, env: dict[str, str]) -> str:
    """The interpreter's full path; a RunError naming the fix when it is not on PATH."""
    from tipcgen.configs.flag_check import NOT_PYTHON_FIX, interpreter, not_python

    python, found = interpreter(text, env)
    if found is None:
        where = "--python / TIPC_PYTHON" if env.get("TIPC_PYTHON") else f"{config_path}, line python:"
        raise RunError(f"the chain's interpreter '{python}' ({where}) is not on PATH, so every step would fail",
                       "pass --python python3 (or the interpreter with the model's packages) for this run, "
                       "or write python:python in the config")
    refused = not_python(text, env, found, str(config_path))
    if refused:
        raise RunError(refused, NOT_PYTHON_FIX)
    return found


def own_weights(desc: Descriptor | None, model: str | None = None) -> tuple[str, ...]:
    """The descriptor's checks.own_weights (the steps that load their own weights on purpose) when it is the
    config's model's (desc: the one `tipcgen init` rendered it from, as the run loaded it; None: none)."""
    if desc is None or (model is not None and desc.model_name != model) or not desc.checks:
        return ()
    return desc.checks.own_weights


def untrained_steps(text: str, allowed: tuple[str, ...] = ()) -> list[tuple[int, str, str]]:
    """(editor line, message, fix) for each step that gets no model of this run: eval and export without
    the trained checkpoint, inference without the run's export."""
    config = TipcConfig.parse(text)
    logical = config.logical_lines()
    numbers = [number for number, line in enumerate(config.lines) if line.text]
    table = layout.slots_of(layout.LAYOUT_OF_KIND.get(config.kind, "standard"))
    index = {slot.name: slot.index for slot in table if slot.kind == "kv"}

    def line(fld: str):
        i = index.get(chain.name_of(fld))
        return (logical[i], numbers[i] + 1) if i is not None and i < len(logical) and logical[i].value is not None else None

    out = []
    for step, command, slot, what, verb in _MODEL_SLOTS:
        if step in allowed:
            continue
        commands = [line(command)]
        if step == "export":  # any export the trainer list can reach, and whole_infer's
            commands += [line(f) for f in ("export.quant", "export.fpgm", "export.distill", "export.key2")]
            whole = line("whole_infer.export")
            commands += [whole] if whole and any(not is_null(c) for c in split_list(whole[0].value)) else []
        ran = [c for c in commands if c and not is_null(c[0].value) and c[0].value.strip().lower() != "false"]
        given = line(slot)
        if not ran or (given is not None and not is_null(given[0].key)):
            continue
        where = given[1] if given else ran[0][1]
        script = next((w for w in ran[0][0].value.split() if w.endswith(".py")), ran[0][0].value.strip())
        out.append((where, f"{step} gets no {what}: it would {verb} whatever {script} loads by default "
                           f"(line {where}'s key is null, so the runner passes nothing)",
                    f"make the key of {slot} in tipc.yaml (line {where} of the config) the flag {script} takes its model "
                    "with (tipcgen new finds it), "
                    f"or, if that is intended, add {step} to checks.own_weights in the descriptor"))
    return out


def flags_unchecked(root: Path, text: str) -> str | None:
    """Why the keys of this config are not checked against its scripts (``refuse``, ``tipcgen doctor``); None
    when they are."""
    from tipcgen.configs import submission

    kind = TipcConfig.parse(text).kind
    if kind not in layout.LAYOUT_OF_KIND:
        return f"a {kind} config: tipcgen run checks the basic chain's (train_infer_python.txt) only"
    if submission.is_submission(root):  # the repository's own runner passes what it passes: not guessed
        return "the repository's own runner (init --submission) decides which keys reach which script"
    return None


def refuse(root: Path, config_path: Path, env: dict[str, str] | None = None,
           desc: Descriptor | None = None) -> list[str]:
    """Every refusal above, in order; the notes the run should record (scripts not checked). desc: the
    descriptor the run loaded (provenance.load_descriptor), for its checks.own_weights."""
    from tipcgen.configs import flag_check
    from tipcgen.core import inputs

    env = dict(os.environ) if env is None else env
    refuse_lint_errors(root, config_path)
    text = inputs.read_text(root / config_path, "config")
    found = refuse_missing_interpreter(config_path, text, env)
    if TipcConfig.parse(text).kind not in layout.LAYOUT_OF_KIND:
        return []  # a paddle2onnx, benchmark or PTQ config: its runner passes no trained checkpoint or train keys
    model = model_name_in(text)
    untrained = untrained_steps(text, own_weights(desc, model))
    if untrained:
        where, message, fix = untrained[0]
        more = "; ".join(f"{config_path}:{w}: {m}" for w, m, _ in untrained[1:])
        raise RunError(f"{config_path}:{where}: {message}" + (f"; {more}" if more else ""), fix)
    unchecked = flags_unchecked(root, text)
    if unchecked:
        return [f"{config_path}: {unchecked}, so the keys were not checked against the scripts' --help"]
    # run executes the repository's code anyway: its probe runs unsandboxed where no sandbox can be had,
    # in the user's interpreter (TIPC_PYTHON, which --python sets, or PATH's; never a path the config names).
    probe_python = flag_check.probe_interpreter(text, env)[1] or found
    problems = flag_check.check(root, text, probe_python, unsandboxed=True)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        shown = "; ".join(f"{config_path}:{p.line}: {p.message}" for p in errors)
        raise RunError(f"{len(errors)} key(s) the runner would pass are not flags of their script: {shown}",
                       "; ".join(dict.fromkeys(p.fix for p in errors)))
    return [f"{config_path}:{p.line}: {p.message}" for p in problems]
