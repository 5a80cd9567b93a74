"""The seeds a run used, for its provenance: what the config passes, what the train script sets itself
(its ``--seed`` default, a literal ``paddle.seed(N)``; its source read as text, never run), what the
training log prints, and the seeding environment variables. A run with none of them is unseeded: a
second run may differ, and golden results taken from it say so.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError

DETERMINISM_VARS = ("PYTHONHASHSEED", "FLAGS_cudnn_deterministic", "FLAGS_embedding_deterministic")
_TRAIN_KEYS = ("norm_train", "pact_train", "fpgm_train", "distill_train", "train_model")
_SEED_FLAG = re.compile(r"""add_argument\(\s*(?:['"]-\w['"]\s*,\s*)?['"](--?seed|--random[_-]seed)['"]([^)]*)\)""")
_DEFAULT = re.compile(r"\bdefault\s*=\s*(-?\d+)", re.ASCII)
_SEED_CALL = re.compile(r"\b((?:paddle|np|numpy|random|torch)(?:\.random)?\.(?:seed|manual_seed))\(\s*(-?\d+)\s*\)", re.ASCII)
_LOG_SEED = re.compile(r"(?<![\w.])(?:random_)?seed\b['\"]?\s*[:=]\s*(-?\d+)", re.IGNORECASE | re.ASCII)
_MAX_SOURCE = 1 << 20
UNSEEDED = ("this run set no seed (none in the config, the train script or its log): the difference may be the "
            "training's randomness, not a change of the model; seed it (paddle.seed, a --seed flag) and take the golden results again")


def seeds(config_text: str, env: dict[str, str], root: Path | None = None) -> dict[str, str]:
    """Seeds the run uses, each named by where it was found: a key of the config with `seed` in it, the
    train script's own ``--seed`` default or literal ``paddle.seed(N)`` call (its source read as text,
    never run; the config's own args first), and the seeding environment variables."""
    found = {}
    for line in config_text.splitlines():
        key, sep, value = line.partition(":")
        if sep and "seed" in key.lower() and value.strip() not in ("", "null"):
            found[key.strip()] = value.strip()
        elif sep and key.strip() in _TRAIN_KEYS and root is not None and value.strip() not in ("", "null"):
            found.update(script_seeds(root, value.strip()))
    for name in DETERMINISM_VARS:
        if env.get(name):
            found[name] = env[name]
    return found


def script_seeds(root: Path, command: str) -> dict[str, str]:
    """The seed a train command uses without the config's help: a --seed it passes, else its script's --seed
    default, and the literal seed calls in that script."""
    words = command.split()
    script = next((w for w in words if w.endswith(".py")), None)
    if script is None:
        return {}
    for i, word in enumerate(words):
        flag, _, inline = word.partition("=")
        if flag in ("--seed", "--random_seed", "--random-seed"):
            value = inline or (words[i + 1] if i + 1 < len(words) else "")
            if value:
                return {f"{flag} (given in the config's {script} command)": value}
    try:
        source = inputs.read_bytes(root / script, "script", _MAX_SOURCE).decode("utf-8", errors="replace")
    except TipcgenError:
        return {}
    out = {}
    for flag, rest in _SEED_FLAG.findall(source):
        default = _DEFAULT.search(rest)
        if default:
            out[f"{flag} default of {script}"] = default.group(1)
    for call, value in _SEED_CALL.findall(source):
        out.setdefault(f"{call}() in {script}", value)
    return out


def log_seeds(root: Path, logs: list[str], max_lines: int = 5000) -> dict[str, str]:
    """The seed a training log prints (``seed=42``, ``'seed': 42``): the first one of each log."""
    out = {}
    for rel in logs:
        try:  # a regular file inside the repository (a step may swap its log for a link, a FIFO), bounded lines
            for number, line in enumerate(inputs.lines(root / rel, "training log", folder=root)):
                match = _LOG_SEED.search(line)
                if match:
                    out[f"seed printed in {rel}"] = match.group(1)
                    break
                if number >= max_lines:
                    break
        except (OSError, TipcgenError):
            continue
    return out


def seeded(record: dict[str, Any]) -> bool | None:
    """Whether the run's training was seeded (a seed other than the determinism variables); None: no record."""
    if not record or "seeds" not in record:
        return None
    return any(key not in DETERMINISM_VARS for key in record["seeds"] or {})
