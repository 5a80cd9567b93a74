"""The descriptor's rules of values a type cannot say: name patterns, the env deny-list, limits.

The fields themselves (types, defaults, allowed values, docs) are ``model.py``, which reads the
patterns here; the validator (``validate*.py``) checks values by them and names file:line:field.
"""
from __future__ import annotations

import re
from pathlib import Path


SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "tipc.schema.json"  # tipcgen/tipc.schema.json, from model.py
MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # the generated runner checks TIPC_MODEL by it too
MODEL_NAME_HINT = "use letters, digits, '_', '-' and '.', starting with a letter or digit (no '/', '..' or spaces)"
PYTHON_RE = re.compile(r"^[A-Za-z0-9_./+-]+$")
# -1, a device, devices, or machines;devices (upstream's multi-machine form: a machine's device is -1 for a CPU process).
GPU_ENTRY_RE = re.compile(r"^(-1|[0-9]+(,[0-9]+)*|[A-Za-z0-9_.,-]+;(-1|[0-9]+)(,(-1|[0-9]+))*)$")


def is_model_name(name: str) -> bool:
    """The one rule for a model_name (init, lint and the runner that run starts): it names the folder
    test_tipc/output/<model_name>/, so MODEL_NAME_RE on the whole text and no '..'."""
    return MODEL_NAME_RE.fullmatch(name) is not None and ".." not in name


# A flag name: words split by one space; the runner appends `=VALUE` to the last word, so only the
# words before it may hold `=` (PaddleVideo's `-o model_name=X -o DATASET.train.file_path`).
KEY_RE = re.compile(r"^(?:[^\s:|]+ )*[^\s:|=]+$")
DATA_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
INPUTS_PATH_RE = re.compile(r"^[A-Za-z0-9_./-]+\.npz$")  # one config value: no space, '|', ':' or '='
MD5_RE = re.compile(r"^[0-9a-f]{32}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
WHOLE_ENV_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Full-width and other look-alike punctuation that TIPC parsers split on wrongly (PaddleGAN #637).
BAD_PUNCTUATION = "，：｜；（）＝　、"
MAX_STEP_TIMEOUT = 24 * 3600
MAX_TEXT_LINE = 100_000  # text.lines: an index past any config (a 5,000-digit one is refused, not parsed)
# Slot fields whose key the generated runner checks before it reads anything: only their value is the user's.
FIXED_KEY_FIELDS = ("model_name", "python", "gpu_list", "train.trainer")
# What the runner needs to own itself: a descriptor's env: may not change them.
RESERVED_ENV = {"PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "BASH_ENV", "ENV", "IFS", "HOME"}
# Python variables that only tune a run; every other PYTHON* one can load or run code (PYTHONHOME,
# PYTHONSTARTUP, PYTHONBREAKPOINT, PYTHONWARNINGS importing a category, PYTHONUSERBASE, ...).
SAFE_PYTHON_ENV = {"PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8",
                   "PYTHONFAULTHANDLER", "PYTHONOPTIMIZE"}
# The classes of variable a descriptor's env: may not set, each with why (a deny-list by class, not by name).
DENIED_ENV = (
    (re.compile(r"^(LD|DYLD)_"), "the dynamic loader loads or audits the libraries it names (LD_AUDIT, LD_PRELOAD, ...)"),
    (re.compile(r"^PYTHON"), "Python reads it at start-up to find or run code (PYTHONHOME, PYTHONSTARTUP, PYTHONPATH, ...)"),
    (re.compile(r"^(BASH_ENV|ENV|BASH_FUNC_.*|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|IFS|CDPATH|GLOBIGNORE)$"),
     "bash reads it at start-up or while it runs the scripts"),
    (re.compile(r"^(PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|NODE_OPTIONS|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS)$"),
     "another interpreter runs the code it names"),
    (re.compile(r"^(GCONV_PATH|GLIBC_TUNABLES|LOCPATH|NLSPATH|HOSTALIASES|MALLOC_.*|OPENSSL_CONF|OPENSSL_ENGINES)$"),
     "the C library or OpenSSL loads modules or files it names"),
    (re.compile(r"^(PATH|HOME|TMPDIR|SHELL)$"), "the runner and tipcgen find their programs and files with it"),
    (re.compile(r"^TIPC_"), "the generated runner and tipcgen run set TIPC_* variables themselves (TIPC_RUN_ID, ...)"),
)


def env_refusal(name: str) -> str | None:
    """Why the descriptor's env: may not set this variable, or None when it may."""
    if name in SAFE_PYTHON_ENV:
        return None
    for pattern, reason in DENIED_ENV:
        if pattern.match(name):
            return reason
    return "it is reserved" if name in RESERVED_ENV else None
SECTION_FIELDS = ("train", "eval", "export", "whole_infer", "inference")  # the groups of slot fields
