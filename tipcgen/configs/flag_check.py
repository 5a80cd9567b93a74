"""Every flag the runner will pass, checked against the script it is passed to, before anything runs.

The generated runner passes a config line's key as ``KEY=VALUE`` to a step's script (SPEC §1.1); a key
the script's argparse does not know ends that step with ``unrecognized arguments`` (issue #28: a
tutorial-layout repository failed one step at a time, ``--data-path``, then ``--pretrained``). Here
each script a config names is probed once (``python SCRIPT --help``, ``configs/script_help.py``, as
``tipcgen new`` does), and every key the runner of that layout family passes to it is looked up in its
flags, as argparse would (exact, or an unambiguous ``--`` prefix). ``run``'s preflight, ``lint --root``
and ``import`` report a key the script does not accept as an error naming the config line and the script;
``doctor`` shows it as a FAIL row, and with ``survey`` how many keys and scripts it checked.

What is passed is the runner's, per layout (``layout.RUNNER_UNPASSED``: the tutorial runner never
passes its device line or line 11, ``--data-path:``, to train). A key that does not start with ``-``
(``Global.epoch_num``, a PaddleOCR ``-o`` override) is not an argparse option: it is not checked.

A key the ``--help`` lacks is judged by what the script does with the keys its parser does not know
(``script_rest``, its source read with ast): ``parse_args`` (or a rest that stops the script) fails the step,
an error; ``parse_known_args`` whose rest is dropped loses the key without a word (issue #59: ``--epohcs``),
an error too, with the nearest flag; a rest handed on to other code (``cfg.merge(rest)``, a second parser)
may take it: a note. ``allow_abbrev=False`` on every parser: no prefix of a flag is taken.

A script whose text never mentions argparse is not run with ``--help`` (it might train instead); it
and a script whose ``--help`` fails are said to be unchecked, never guessed. The probe runs in the
sandbox (``script_help.probe``); without one, the reading commands (lint, import, doctor) run no probe
unless the user passes ``--trust-repo``, and say so in one note. The flags a finished probe read are
cached in the user's cache folder (``flag_cache.cache_dir``; never the repository's: a committed cache must never
vouch for a flag), keyed on the script, the interpreter and the repository files the script imports
(``flag_cache.key``), so a second run probes nothing; a probe that failed or timed out is not cached.
Within one reading of a repository (``Memo``: lint --root's files) each script is probed once, failures
included, and a script that imports a module another script's ``--help`` found missing (``No module named
'paddle'``) is not probed at all: the same cause, said once (``cause``).
"""
from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tipcgen.configs.script_reading import nearest_flag
from tipcgen.configs.script_help import PROBE_TIMEOUT, TRUST_OPTION, Flag, Script, checked_script, probe, user_interpreter
from tipcgen.configs import flag_cache, script_rest
from tipcgen.core import inputs, isolated, sandbox
from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import terminal
from tipcgen.format import chain, layout
from tipcgen.format.config import TipcConfig, is_null, parse_per_mode, split_list

# Text a script that parses its flags with argparse (or PaddleOCR's ArgsParser) has in it.
_ARGPARSE_WORDS = ("argparse", "ArgumentParser", "ArgsParser", "add_argument", "parse_args")
# The slots the generated runner passes to each step's script (templates/runner/test_train_inference_python.sh.j2).
STEP_FIELDS = {
    "train": ("train.device", "train.output_dir", "train.epochs", "train.pretrained", "train.batch_size",
              "train.autocast", "train.extra"),
    "eval": ("train.pretrained", "train.device", "eval.extra"),
    "export": ("export.weights", "export.output_dir"),
    "infer": ("inference.use_gpu", "inference.enable_mkldnn", "inference.cpu_threads", "inference.use_tensorrt",
              "inference.precision", "inference.model_dir", "inference.batch_size", "inference.data",
              "inference.benchmark", "inference.extra"),
}
# Passed with a value the runner fills (a checkpoint, an output folder), whatever the config's value.
_FILLED = {"train.output_dir", "export.weights", "export.output_dir", "inference.model_dir"}
_FILLED_BY_STEP = {"eval": {"train.pretrained"}}
_GPU_ONLY = {"inference.use_tensorrt"}  # passed only in a GPU inference case
_SHOWN = 80  # characters of a key a message quotes


@dataclass(frozen=True)
class Passed:
    """One key the runner passes to one script."""

    step: str  # train | eval | export | infer
    script: str  # relative to the repository root
    script_line: int  # the editor line of the command that names the script
    key: str  # as the config writes it
    line: int  # the editor line of the key
    field: str = ""  # the descriptor field whose key it is (train.pretrained): what a fix names


@dataclass(frozen=True)
class Problem:
    """A finding of the check: an error (a key the script refuses) or a note (a script not checked)."""

    line: int
    severity: str  # error | note
    message: str
    fix: str = ""


@dataclass(frozen=True)
class Survey:
    """What ``survey`` found, and how much it looked at (``tipcgen doctor`` says so)."""

    problems: list[Problem]
    keys: int  # keys looked up in a script's flags (a key without a leading - is no option: not counted)
    scripts: int  # scripts whose flags were read
    answers: int  # scripts answered: read, or said to be unchecked
    cached: int  # of those, answered from the cache (no script was run for them)


class _Lines:
    """A config's slots by name, with the editor line of each; ``family``: the layout family it is read in
    (default: its kind's); ``reads``: the line indices the repository's own runner reads (a line it never
    reads is never passed), ``None`` without a runner of its own."""

    def __init__(self, text: str, family: str | None = None, reads: frozenset[int] | None = None) -> None:
        config = TipcConfig.parse(text)
        self.logical = config.logical_lines()
        self.numbers = [number for number, line in enumerate(config.lines) if line.text]
        self.layout = family if family in layout.LAYOUTS else layout.LAYOUT_OF_KIND.get(config.kind, "standard")
        self.index = {slot.name: slot.index for slot in layout.slots_of(self.layout) if slot.kind == "kv"}
        self.reads = reads

    def get(self, fld: str) -> tuple[str, str, int] | None:
        """(key, value, editor line) of the slot of a descriptor field; None where the layout has no line."""
        name = chain.name_of(fld)
        index = self.index.get(name)
        if index is None or index >= len(self.logical) or self.logical[index].value is None:
            return None
        line = self.logical[index]
        return line.key, line.value or "", self.numbers[index] + 1

    def passed(self, fld: str) -> bool:
        name = chain.name_of(fld)
        if self.reads is not None and self.index.get(name) not in self.reads:
            return False  # the repository's runner never reads this line: it passes nothing from it
        return name not in layout.RUNNER_UNPASSED[self.layout]


def _has_value(value: str) -> bool:
    """A value the runner passes: a per-mode value, a list item or a plain value that is not null."""
    per_mode = parse_per_mode(value)
    return any(not is_null(item) for item in (per_mode.values() if per_mode else split_list(value)))


def _script_of(command: str) -> str | None:
    return next((word for word in command.split() if word.endswith(".py")), None)


def _commands(lines: _Lines) -> list[tuple[str, str, int]]:
    """(step, command, editor line) of every command the runner runs for this config."""
    out: list[tuple[str, str, int]] = []
    trainer = lines.get("train.trainer")
    items = [item.strip() for item in split_list(trainer[1])] if trainer else []
    for item in items:
        for spec in chain.TRAINERS:
            key_line = lines.get(spec.key)
            if spec.match == ("*",) or item in spec.match or (not spec.match and key_line and key_line[0] == item):
                train, export = lines.get(spec.train[0]), lines.get(spec.export)
                if train and not is_null(train[1]):
                    out.append(("train", train[1], train[2]))
                if export and not is_null(export[1]) and export[1].strip().lower() != "false":
                    out.append(("export", export[1], export[2]))
                break
    for step, fld in (("eval", "eval.script"), ("infer", "inference.script")):
        found = lines.get(fld)
        if found and not is_null(found[1]):
            out.append((step, found[1], found[2]))
    whole = lines.get("whole_infer.export")
    for command in split_list(whole[1]) if whole else []:
        if not is_null(command) and command.strip().lower() != "false":
            out.append(("export", command, whole[2]))
    return out


def passed_flags(text: str, family: str | None = None, reads: frozenset[int] | None = None) -> list[Passed]:
    """Every key the runner passes to every script of a config, in run order (one per script and key); family
    and reads: the layout family and the line indices its own runner reads (``_Lines``)."""
    lines = _Lines(text, family, reads)
    use_gpu = lines.get("inference.use_gpu")
    gpu_cases = bool(use_gpu) and any(v.strip().lower() in ("true", "gpu") for v in split_list(use_gpu[1]))
    out: list[Passed] = []
    seen: set[tuple[str, str]] = set()
    for step, command, command_line in _commands(lines):
        script = _script_of(command)
        if script is None:
            continue
        for fld in STEP_FIELDS[step]:
            found = lines.get(fld)
            if found is None or not lines.passed(fld) or (fld in _GPU_ONLY and not gpu_cases):
                continue
            key, value, line = found
            filled = fld in _FILLED or fld in _FILLED_BY_STEP.get(step, ())
            if fld == "inference.data":  # after training, the runner passes train_infer_data's value with this key
                infer_data = lines.get("train.infer_data")
                filled = bool(infer_data) and _has_value(infer_data[1])
            if is_null(key) or not (filled or _has_value(value)) or (script, key) in seen:
                continue
            seen.add((script, key))
            out.append(Passed(step, script, command_line, key, line, fld))
    return out


# ---------------------------------------------------------------- probing, cached

def interpreter(text: str, env: dict[str, str]) -> tuple[str, str | None]:
    """The chain's interpreter as TIPC_PYTHON or the config's python: line names it, and its full path
    (what the runner will run: ``run``'s concern; a probe uses ``probe_interpreter``)."""
    python = env.get("TIPC_PYTHON") or next((line.split(":", 1)[1].strip() for line in text.splitlines()
                                              if line.startswith("python:")), "python")
    return python, shutil.which(python, path=env.get("PATH"))


_COMMAND_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._+]*")


def is_command_name(word: str) -> bool:
    """A plain command name (python3.7), looked up on the user's PATH: no path, no option."""
    return bool(_COMMAND_NAME.fullmatch(word))


def probe_interpreter(text: str, env: dict[str, str]) -> tuple[str, str | None]:
    """The interpreter a probe runs: the user's (TIPC_PYTHON, which --python sets), else the config's python:
    word when it is a plain command name that the user's PATH finds as a Python interpreter (python3.7), or
    finds nothing for (no path: the caller says the interpreter is not on PATH), else PATH's python. A path the
    config names (``./tool.sh``, ``/opt/x/python``), an option-like word or a program that is no Python
    (``python:make``) never runs."""
    if env.get("TIPC_PYTHON"):
        return env["TIPC_PYTHON"], shutil.which(env["TIPC_PYTHON"], path=env.get("PATH"))
    named = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("python:")), "")
    found = shutil.which(named, path=env.get("PATH")) if is_command_name(named) else None
    python = named if is_command_name(named) and (found is None or isolated.is_python(found)) else "python"
    return python, shutil.which(python, path=env.get("PATH"))


NOT_PYTHON_FIX = ("pass --python python3 (or set TIPC_PYTHON to the interpreter with the model's packages), "
                  "or write python:python in the config")


def not_python(text: str, env: dict[str, str], found: str | None, where: str) -> str | None:
    """Why the chain's interpreter must not be run (issue #59 item 5): the config's ``python:`` word (no
    TIPC_PYTHON / --python given) finds a program that is not a Python interpreter (``python:make`` would run
    the repository's Makefile); None where it is one, is the user's choice, or is not found (said elsewhere).
    ``where``: the config's name, for the message."""
    if env.get("TIPC_PYTHON") or found is None or isolated.is_python(found):
        return None
    number, word = next(((n, line.split(":", 1)[1].strip()) for n, line in enumerate(text.splitlines(), 1)
                         if line.startswith("python:")), (0, "python"))
    return (f"{where}:{number}: python:{terminal(word)[:80]} names {terminal(found)[:200]}, which is not a Python "
            "interpreter, so it is not run")


def _uses_argparse(text: str) -> bool:
    return any(word in text for word in _ARGPARSE_WORDS)


_MISSING = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def cause(message: str) -> str:
    """What a flags-unchecked message is about, to say it once per repository: a missing module's name
    (every script that needs it fails the same way), else the message itself."""
    missing = _MISSING.search(message)
    return f"missing module {missing.group(1).split('.')[0]}" if missing else message


def _top_imports(root: Path, script: str) -> frozenset[str]:
    """The top-level module names a script imports (ast, absolute imports; nothing when it cannot be parsed)."""
    import ast

    try:
        tree = inputs.python_tree(inputs.read_bytes(checked_script(root, script), "script"))
    except TipcgenError:
        return frozenset()
    if tree is None:
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return frozenset(names)


@dataclass
class Memo:
    """What one reading of a repository learned from the probes: each script's answer (failures too), and the
    modules a failing --help found missing (module -> the script whose --help said so)."""

    answers: dict[tuple[str, str, bool], tuple[list[Flag] | str, bool]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # module -> the script whose --help found it missing
    rests: dict[str, script_rest.Rest] = field(default_factory=dict)  # script -> what it does with unknown keys


def _answers(root: Path, roles: dict[str, str], python: str, timeout: float, unsandboxed: bool,
             memo: Memo | None) -> dict[str, tuple[list[Flag] | str, bool]]:
    """script_flags for each script, each probed once per Memo; a script importing a module a probe found
    missing is not probed (its --help would fail the same way)."""
    memo = Memo() if memo is None else memo
    out: dict[str, tuple[list[Flag] | str, bool]] = {}
    todo = []
    for script in roles:
        known = memo.answers.get((script, python, unsandboxed))
        lacking = sorted(_top_imports(root, script) & memo.missing.keys()) if known is None and memo.missing else []
        if known is not None:
            out[script] = known
        elif lacking:
            first = memo.missing[lacking[0]]
            out[script] = (f"{script}'s flags are not checked: it imports {lacking[0]}, and `{first} --help` "
                           f"failed with No module named '{lacking[0]}' (not probed again)", False)
        else:
            todo.append(script)
    with ThreadPoolExecutor(max_workers=4) as pool:
        out.update(zip(todo, pool.map(lambda s: script_flags(root, s, python, timeout, roles[s], unsandboxed), todo)))
    for script in todo:
        memo.answers[(script, python, unsandboxed)] = out[script]
        found = out[script][0]
        missing = _MISSING.search(found) if isinstance(found, str) else None
        if missing:
            memo.missing.setdefault(missing.group(1).split(".")[0], script)
    return {script: out[script] for script in roles}


def script_flags(root: Path, script: str, python: str, timeout: float = PROBE_TIMEOUT,
                 role: str = "train", unsandboxed: bool = False) -> tuple[list[Flag] | str, bool]:
    """The flags of a script's --help, or why they were not read (no argparse, a failing --help, no
    sandbox), and whether the answer came from the cache (the user's: ``cache_dir``). Only flags that a
    finished probe read are cached; a timed-out or failed probe is asked again next time."""
    data = inputs.read_bytes(checked_script(root, script), "script")
    text = data.decode("utf-8", errors="replace")
    if not _uses_argparse(text):
        return f"{script} does not use argparse (no ArgumentParser in it), so its flags are not checked", False
    try:
        return cached_flags(root, Script(role, script), python, timeout, unsandboxed, data=data)
    except TipcgenError as exc:
        return f"{script}'s flags are not checked: {terminal(exc.message)}", False


def cached_flags(root: Path, script: Script, python: str, timeout: float = PROBE_TIMEOUT, unsandboxed: bool = False,
                 timeout_option: str = "", data: bytes | None = None) -> tuple[list[Flag], bool]:
    """``probe``'s flags through the flag cache, and whether they came from it: a cached answer for this
    script, interpreter and the repository files it imports is read (a sandboxed one first: it holds whether
    or not bwrap works now, so no sandbox probe is needed for it); else the script is probed (its errors
    raised as ``probe`` raises them) and a finished probe's flags are written for the next reader (run after
    new, lint, import, doctor)."""
    full = user_interpreter(python) or python  # the cache key names the interpreter's file, not a PATH word
    if data is None:
        data = inputs.read_bytes(checked_script(root, script.path), "script")
    cache = flag_cache.cache_dir()
    keys = [flag_cache.key(root, script.path, data, full, True)]
    found = flag_cache.read(cache / keys[0])
    if found is not None:
        return found, True
    boxed = sandbox.available()[0]
    if unsandboxed and not boxed:
        keys.append(flag_cache.key(root, script.path, data, full, False))
        found = flag_cache.read(cache / keys[-1])
        if found is not None:
            return found, True
    result = probe(script, root, python, timeout, unsandboxed=unsandboxed, timeout_option=timeout_option)
    flag_cache.write(cache, keys[0] if boxed else keys[-1], script.path, result)
    return result, False


def no_sandbox_note(trust_option: str = TRUST_OPTION) -> str:
    """The one line a reading command prints when it did not run the probes (no sandbox, no trust option)."""
    why = sandbox.available()[1]
    return (f"the scripts' --help was not run, so no key was checked against its script: no sandbox here ({why}); "
            f"{sandbox.INSTALL_HINT}, or pass {trust_option} to run the repository's scripts unsandboxed")


def accepts(flags: list[Flag], key: str, abbrev: bool = True) -> bool:
    """Whether argparse takes ``KEY=value`` for this key's first word: exact, or (abbrev: the parser's
    ``allow_abbrev``, True unless it says otherwise) a prefix of one ``--`` flag only. An ambiguous prefix ends
    the parse (``ambiguous option``, exit 2) even under ``parse_known_args``; with ``allow_abbrev=False`` a
    prefix is an unknown key."""
    word = key.split()[0] if key.split() else key
    names = {name for flag in flags for name in flag.names}
    if word in names:
        return True
    return abbrev and word.startswith("--") and len(_prefix_of(word, names)) == 1


def _prefix_of(word: str, names: set[str]) -> list[str]:
    return sorted(name for name in names if name.startswith("--") and name.startswith(word))


NO_INTERPRETER = "the interpreter '{python}' is not on PATH, so no script's flags were checked"


def check_config(root: Path, text: str, env: dict[str, str], unsandboxed: bool = False, family: str | None = None,
                 reads: frozenset[int] | None = None, memo: Memo | None = None) -> list[Problem]:
    """``check`` with the user's interpreter (lint --root, import): a note when it is not on PATH (one message
    per interpreter, which ``lint --root`` says once per repository). unsandboxed: the user passed the trust
    option (else the probes run only in a sandbox). family, reads: ``_Lines``."""
    python, found = probe_interpreter(text, env)
    if found is None and any((root / p.script).is_file() for p in passed_flags(text, family, reads)):
        return [Problem(1, "note", NO_INTERPRETER.format(python=terminal(python)) + " (TIPC_PYTHON names another)")]
    return survey(root, text, found, unsandboxed=unsandboxed, family=family, reads=reads, memo=memo).problems if found else []


def check(root: Path, text: str, python: str, timeout: float = PROBE_TIMEOUT, unsandboxed: bool = False) -> list[Problem]:
    """Errors for every key a script refuses, notes for every script not checked, in config line order.
    ``python`` is the interpreter's full path (the caller says when there is none)."""
    return survey(root, text, python, timeout, unsandboxed).problems


def _probed(root: Path, script: str) -> bool:
    try:
        checked_script(root, script)
        return True
    except TipcgenError:
        return False


def _rest(root: Path, script: str, memo: Memo | None) -> script_rest.Rest:
    """What the script does with a key its parser does not know (``script_rest``), read once per Memo."""
    if memo is not None and script in memo.rests:
        return memo.rests[script]
    found = script_rest.read(root, script)
    if memo is not None:
        memo.rests[script] = found
    return found


def judge(item: Passed, flags: list[Flag], rest: script_rest.Rest) -> Problem | None:
    """The finding for one key its script's --help lacks (None: argparse takes it): an error where the step
    would fail on it (``refuses``) or lose it without a word (``drops``); a note where the script hands the
    keys its parser does not know to other code (``forwards``), which may or may not take it."""
    word = item.key.split()[0] if item.key.split() else item.key
    hidden = [Flag((name,), True) for name in rest.hidden]  # help=argparse.SUPPRESS: taken, never listed
    if not word.startswith("-") or accepts(flags + hidden, item.key, abbrev=not rest.exact):
        return None
    names = sorted({terminal(name)[:_SHOWN] for flag in flags for name in flag.names if name.startswith("-")})
    close = nearest_flag(word[:_SHOWN], names)
    where = f"the key of {item.field} (in tipc.yaml; line {item.line} of the config)" if item.field else f"the key on line {item.line}"
    fix = (f"make {where} the script's flag {close}" if close else
           f"make {where} one of the script's flags ({', '.join(names[:8]) or 'it has none'})") + ", or null to pass nothing"
    shown = terminal(word if len(word) <= _SHOWN else f"{word[:_SHOWN]}... ({len(word)} characters)")
    passes = f"{item.step} passes {shown}=... (line {item.line}) to {item.script} (line {item.script_line})"
    unlisted = sorted(rest.shown - {name for flag in flags for name in flag.names})
    ambiguous = not rest.exact and len(_prefix_of(word, {n for flag in flags for n in flag.names})) > 1
    if rest.fate == "drops" and unlisted:  # the --help came from another parser than the one that drops the rest
        fate, why = "forwards", (f"its source adds {terminal(unlisted[0])[:_SHOWN]}, which its --help does not list: "
                                 "another parser than the one that drops the rest printed the help")
    else:
        fate, why = ("refuses" if ambiguous else rest.fate), terminal(rest.why)
    if fate == "refuses":
        return Problem(item.line, "error", f"{passes}, which does not accept it: `{item.script} --help` has no {shown}", fix)
    if fate == "drops":
        mean = f" (did you mean {close}?)" if close else ""
        abbrev = "; it sets allow_abbrev=False, so argparse takes no prefix of a flag" if rest.exact else ""
        return Problem(item.line, "error", (
            f"{passes}, which ignores it: `{item.script} --help` has no {shown}{mean}, and {item.script} parses with "
            f"parse_known_args ({rest.where}) and {why}{abbrev}: the setting is lost and the step still passes"), fix)
    return Problem(item.line, "note", (
        f"{passes}, whose --help has no {shown}; it is not checked: {item.script} parses with parse_known_args"
        f"{f' ({rest.where})' if rest.where else ''} and {why}"))


def survey(root: Path, text: str, python: str, timeout: float = PROBE_TIMEOUT, unsandboxed: bool = False,
           family: str | None = None, reads: frozenset[int] | None = None, memo: Memo | None = None) -> Survey:
    """``check``'s problems, with how many keys and scripts it checked and how many answers were cached.
    Without a sandbox and without ``unsandboxed`` no script runs: the answers the cache has are used, and
    one note says how to have the others checked."""
    passed = [p for p in passed_flags(text, family, reads) if _probed(root, p.script)]
    roles: dict[str, str] = {}
    for item in passed:
        roles.setdefault(item.script, item.step)  # the step that runs it first (its --help's hint names it)
    answers = _answers(root, roles, python, timeout, unsandboxed, memo)
    flags = {script: found for script, (found, _) in answers.items()}
    rests = {script: _rest(root, script, memo) for script, found in flags.items() if not isinstance(found, str)}
    problems: list[Problem] = []
    noted: set[str] = set()
    keys = 0
    not_run = [script for script, found in flags.items() if isinstance(found, str) and "no sandbox here" in found]
    if not_run:
        first = min(p.script_line for p in passed if p.script in not_run)
        problems.append(Problem(first, "note", no_sandbox_note()))
        noted.update(not_run)
    for item in passed:
        found = flags[item.script]
        if isinstance(found, str):
            if item.script not in noted:
                noted.add(item.script)
                problems.append(Problem(item.script_line, "note", found))
            continue
        word = item.key.split()[0] if item.key.split() else item.key
        keys += word.startswith("-")
        problem = judge(item, found, rests[item.script])
        if problem is not None:
            problems.append(problem)
    return Survey(sorted(problems, key=lambda p: (p.line, p.severity)), keys,
                  sum(not isinstance(found, str) for found in flags.values()), len(answers),
                  sum(cached for _, cached in answers.values()))
