"""Scripts written for Paddle 2's export format: an inference script that loads ``inference.pdmodel``.

Paddle 3 exports ``inference.json`` (PIR) unless ``FLAGS_enable_pir_api=0``; such a script then fails
at inference. But the flag is no cure: on Paddle 3.3 ``paddle.jit.save`` under it fails for most models
(``sigmoid()/matmul(): argument must be Value, but got Variable``: 4 of 4 repositories of issue #56). So
``new`` and ``import`` never add it: they name the script's line to change (load ``inference.json`` when
there is no ``.pdmodel``), and ``doctor`` probes an export under the flag with this paddle before it
advises the descriptor's ``env:`` (run/doctor.py).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from tipcgen.configs import existing
from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError
from tipcgen.format import chain
from tipcgen.format.config import TipcConfig
from tipcgen.format.paths import COMMON_FUNC, STEPS_SH

FLAG = "FLAGS_enable_pir_api"
ENV = {FLAG: "0"}
# `.pdmodel` in code (a string literal or a name), not in a comment line
_PDMODEL_RE = re.compile(r"""^(?!\s*#).*\.pdmodel\b""", re.MULTILINE)
# ... unless it also reads the PIR format (it tries inference.json first, as the sample's infer.py does)
_JSON_MODEL_RE = re.compile(r"""^(?!\s*#).*(['"]\.json['"]|\b(inference|model)\.json\b)""", re.MULTILINE)
MAX_SCRIPT_BYTES = 2 << 20


def script_of(command: str | None) -> str | None:
    """The .py script a config command runs (`tools/infer.py --x 1` -> tools/infer.py), if any."""
    try:
        words = shlex.split(command or "")
    except ValueError:
        words = (command or "").split()
    return next((w for w in words if w.endswith(".py")), None)


def loads_pdmodel(script: Path) -> bool:
    """Whether the script's code loads a .pdmodel file only (the Paddle 2 export format), never a .json one."""
    try:
        if not script.is_file() or script.stat().st_size > MAX_SCRIPT_BYTES:
            return False
        text = script.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(_PDMODEL_RE.search(text)) and not _JSON_MODEL_RE.search(text)


def pdmodel_line(root: Path, script: str | None) -> str:
    """`tools/infer.py:41`: the first code line of ``script`` that names a .pdmodel ('' if none or unreadable)."""
    if not script:
        return ""
    try:
        path = root / script
        if not path.is_file() or path.stat().st_size > MAX_SCRIPT_BYTES:
            return ""
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""
    found = _PDMODEL_RE.search(text)
    return f"{script}:{text.count(chr(10), 0, found.start()) + 1}" if found else ""


def advice(script: str, at: str) -> str:
    """The one wording of what to do about a script that loads inference.pdmodel only (new, import, doctor)."""
    where = f" ({at})" if at else ""
    return (f"{script} loads inference.pdmodel only, and Paddle 3's export writes inference.json: make it load "
            f"inference.json when there is no .pdmodel{where}. {FLAG}=0 (env:) writes .pdmodel, but on Paddle 3.3 "
            "paddle.jit.save fails under it for most models (sigmoid()/matmul(): must be Value, but got Variable): "
            "add it only where tipcgen doctor says the export works under it")


def needs_env(root: Path, command: str | None) -> bool:
    """Whether the inference command's script (relative to the repository root) loads inference.pdmodel."""
    script = script_of(command)
    return script is not None and loads_pdmodel(root / script)


def runner_sets_flag(common_func_text: str, model: str) -> bool:
    """Whether the generated shell (tipc_steps.sh, or the common_func.sh of a render before it) exports
    FLAGS_enable_pir_api=0 to ``model``'s steps (the descriptor's env:, in that model's arm of tipc_model_settings in a
    render before test_tipc/tipc_layouts.json held the models' settings)."""
    arm, lines = False, []
    for raw in common_func_text.splitlines():
        line = raw.strip()
        if line.endswith(")") and not line.startswith(("TIPC_", "(", ")", "case", "esac")):
            arm = line[:-1].strip("'\"") == model  # an arm's label, as the template quotes it
        elif arm and line.startswith("TIPC_STEP_ENV=("):
            lines.append(line)
    return any(re.search(rf"\b{FLAG}=['\"]?0\b", line) for line in lines)


def config_state(root: Path, config_path: Path) -> tuple[str, bool] | None:
    """For doctor: the config's inference script when it loads inference.pdmodel (None otherwise), and whether
    the repository's generated shell exports FLAGS_enable_pir_api=0 to the config's model."""
    config = TipcConfig.read(root / config_path)
    line = config.slot(chain.name_of("inference.script"))
    command = line.value if line is not None else None
    if not needs_env(root, command):
        return None
    return script_of(command) or "", flag_in_runner(root, config_path)


def flag_in_runner(root: Path, config_path: Path) -> bool:
    """Whether the repository's generated shell exports FLAGS_enable_pir_api=0 to the config's model: its env prefix
    in test_tipc/tipc_layouts.json, or in a render before it, its arm of tipc_steps.sh's or common_func.sh's
    tipc_model_settings."""
    config = TipcConfig.read(root / config_path)
    line = config.slot(chain.name_of("model_name"))
    model = line.value if line is not None else ""
    env = existing.rendered_settings(root).get(model, {}).get("env")
    if isinstance(env, list) and f"{FLAG}=0" in env:
        return True
    common = ""
    for rel in (STEPS_SH, COMMON_FUNC):  # the model arms of a render before tipc_layouts.json held them
        try:  # through the one reader: a regular file of bounded size (a FIFO there is not waited on)
            common += inputs.read_bytes(root / rel, rel).decode("utf-8", errors="replace") + "\n"
        except TipcgenError:
            pass
    return runner_sets_flag(common, model)


def imported_env(text: str, root: Path) -> tuple[str, str | None]:
    """An imported descriptor, never changed (the flag is not added unasked: it breaks most exports on Paddle 3.3);
    and the note that names the inference script's line to change when it loads inference.pdmodel only."""
    from tipcgen import descriptor

    desc = descriptor.load_text(text, source="<import>", base_dir=root)
    command = desc.slot_of("inference.script").value
    if desc.env or not needs_env(root, command):
        return text, None
    script = script_of(command) or ""
    return text, advice(script, pdmodel_line(root, script))
