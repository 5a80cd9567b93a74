"""A suite's runner read as data: which config line (or word) each variable comes from, and when.

A TIPC runner loads its config into an array (``lines=(${dataline})``) and reads it by position:
``var=$(func_parser_value "${lines[12]}")``. This module reads a runner's text (never runs it) into
``Read``s: the index, the parser, the variable it sets and the ``${MODE}`` branch it sits in (``if [
${MODE} = "benchmark_train" ]``). How the array is split matters: after ``IFS=$'\\n'`` an element is
a line; without it (``dataline=`cat $1```) it is a whitespace-separated word, so a line holding spaces
moves every later index. A variable named like a config key (``run_mode=... lines[3]`` where the
file has ``run_mode:`` at that element) is an anchor learned from the runner: ``fit`` says whether a
config is one that runner reads as intended (its anchors in place, none found elsewhere); ``layout_fit`` says
whether its reads are the config's layout line for line (another runner's own layout, a 20-line PTQ one).
Besides the reads it keeps what decides whether a line is used for a config: ``if [ ${X} != "null" ]`` guards,
member guards (``for use_gpu in ${use_gpu_list[*]}`` under ``if [ ${use_gpu} = "True" ] || ...``), the
``${MODE}`` branches a variable is used in, and the tests tying a mode to a config value (``tied_mode``).
Bounded: a runner of at most ``MAX_TEXT`` characters, indices of ASCII digits, at most ``MAX_DIGITS``.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from tipcgen.core import inputs

MAX_TEXT = 1 << 20
MAX_DIGITS = 6  # lines[999999] at most: no config is longer
LINES, WORDS = "lines", "words"

# `var=$(func_parser_value "${lines[12]}")`, `var=$(parse_second_value "${lines[1]}")`: any function of one line.
_READ = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=\$\(\s*(?:func_parser_)?([A-Za-z_][A-Za-z0-9_]*)\s+\"?\$\{lines\[([0-9]+)\]\}")
# `var=$(sed -n 5p $FILENAME)`: the 5th physical line (index 4 where the file has no blank line before it).
_SED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=\$\(\s*sed\s+-n\s+[\"']?([0-9]+)p[\"']?")
# `$(func_parser_value "${lines[5]}")` not assigned to a variable (inside a loop header, a test): a read all the same.
_BARE = re.compile(r"\$\(\s*(?:func_parser_)?([A-Za-z_][A-Za-z0-9_]*)\s+\"?\$\{lines\[([0-9]+)\]\}")
_MODE_IF = re.compile(r"^\s*(el)?if\s+\[\[?\s+\"?\$\{?MODE\}?\"?\s+==?\s+\"?([A-Za-z0-9_]+)\"?\s*\]")
_OPEN = re.compile(r"^\s*if\s")
_CLOSE = re.compile(r"^\s*fi\b")
_ELSE = re.compile(r"^\s*(elif|else)\b")
_LOAD = re.compile(r"^\s*lines=\(\s*\$\{?dataline\}?\s*\)")
_NEWLINE_IFS = re.compile(r"^\s*IFS=\$'\\n'")


def index_of(digits: str) -> int | None:
    """A ``lines[N]`` index: ASCII digits only, at most MAX_DIGITS of them (else ``None``)."""
    return inputs.whole_number(digits, 10**MAX_DIGITS - 1)


@dataclass(frozen=True)
class Read:
    index: int
    parser: str  # key, value, params, value_lite (func_parser_*), or another function's name
    var: str
    mode: str | None  # the ${MODE} value of the branch it sits in; None: read in every mode
    load: int = 1  # which `lines=(${dataline})` it reads (a klquant branch reloads lines from another file: 2)


@dataclass(frozen=True)
class Spec:
    """What one runner reads: its name (for messages), how its array is split, its reads."""

    name: str
    split: str
    reads: tuple[Read, ...]
    uses: tuple[tuple[str | None, str, frozenset[str]], ...] = ()  # (function, variable, the null-guards around it)
    calls: tuple[tuple[str | None, str, frozenset[str]], ...] = ()  # (function, the function it calls, guards)
    sources: tuple[tuple[str, str], ...] = ()  # `A=${B}`: A takes B's value
    functions: frozenset[str] = frozenset()
    # Where the headers and `##` sit in the configs this runner reads (learned from the repository's configs:
    # ``learn_structure``); a config with them elsewhere is misread. Empty: not learned.
    structure: tuple[tuple[int, str], ...] = ()
    keys: tuple[tuple[int, str], ...] = ()  # the keys most of those configs share by index (``learn_keys``)
    loops: tuple[tuple[str, str], ...] = ()  # `for X in ${L[*]}`: X takes each '|'-separated item of L
    # (variable, the ${MODE} conditions around a use of it: (modes, negated)); top level only
    use_modes: tuple[tuple[str, tuple[tuple[frozenset[str], bool], ...]], ...] = ()
    # `[ ${MODE} = "M" ] && [ ${X} != "v" ]`: in mode M only an X of v runs (M, X, v)
    mode_ties: tuple[tuple[str, str, str], ...] = ()


_FUNCTION = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*\)\s*\{?\s*$")
_NOT_NULL = re.compile(r"^\s*(?:el)?if\s+\[\[?\s+\"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(?:\[[^]]*\])?\}?\"?\s+!=\s+[\"']null[\"']")
_USE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_ALIAS = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=\(?\"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?\"?\)?\s*$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FOR = re.compile(r"^\s*for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\s+\"?\$\{([A-Za-z_][A-Za-z0-9_]*)(?:\[[*@]\])?\}\"?\s*;")
# One test of an `if`: `[ ${X} = "v" ]` / `[[ ${X} == "v" ]]`.
_EQUALS = re.compile(r"\[\[?\s*\"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?\"?\s+==?\s+[\"']?([A-Za-z0-9_.-]+)[\"']?\s*\]\]?")
_TIE = re.compile(r"\$\{?MODE\}?\"?\s+==?\s+\"?([A-Za-z0-9_]+)\"?\s*\]\]?\s*&&\s*\[\[?\s*\"?\$\{?([A-Za-z_][A-Za-z0-9_]*)"
                  r"\}?\"?\s+!=\s+[\"']?([A-Za-z0-9_.-]+)[\"']?")
MEMBER = "="  # a guard `X=a|b`: the branch runs only where X is a or b


def _member_guard(code: str) -> str | None:
    """``if [ ${X} = "a" ] || [ ${X} = "b" ]; then`` (every test of the condition on the same X, joined by ``||``):
    the guard ``X=a|b``; else ``None``."""
    condition = re.sub(r"^\s*(?:el)?if\s+", "", code).split(";", 1)[0]
    tests = _EQUALS.findall(condition)
    rest = _EQUALS.sub("", condition).replace("||", "").strip()
    if not tests or rest or len({var for var, _ in tests}) != 1 or tests[0][0] == "MODE":
        return None
    return f"{tests[0][0]}{MEMBER}{'|'.join(value for _, value in tests)}"


def _mode_condition(code: str) -> frozenset[str] | None:
    """The ${MODE} values an ``if``/``elif`` condition made only of ``${MODE} = "x"`` tests joined by ``||`` admits."""
    condition = re.sub(r"^\s*(?:el)?if\s+", "", code).split(";", 1)[0]
    tests = _EQUALS.findall(condition)
    rest = _EQUALS.sub("", condition).replace("||", "").strip()
    if not tests or rest or any(var != "MODE" for var, _ in tests):
        return None
    return frozenset(value for _, value in tests)


# (sha256 of a runner's text, its name) -> its Spec: the same runner is read again and again (every lint, run and
# import of a repository reads all of its test_tipc/*.sh; a suite's configs share one runner; every repository tipcgen
# rendered holds the same scripts). By digest, so that no text is kept; at most _MAX_PARSED of them.
_PARSED: dict[tuple[bytes, str], Spec | None] = {}
_MAX_PARSED = 256


def spec_of(text: str, name: str) -> Spec | None:
    """The reads of a runner's text; ``None`` when it reads no ``lines[N]`` (or is too large to read).
    Besides the reads: where each variable is used, inside which ``if [ ${X} != "null" ]`` guards and which
    function, which functions each function calls (under which guards), and ``A=${B}`` copies."""
    if len(text) > MAX_TEXT:
        return None
    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(), name)
    if key not in _PARSED:
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        _PARSED[key] = _spec_of(text, name)
    return _PARSED[key]


def _spec_of(text: str, name: str) -> Spec | None:
    reads: list[Read] = []
    stack: list[str | None] = []  # per open `if`: its MODE value (None: another condition)
    guards: list[str | None] = []  # per open `if`: the variable it requires not null (None: another condition)
    uses: list[tuple[str | None, str, frozenset[str]]] = []
    calls: list[tuple[str | None, str, frozenset[str]]] = []
    sources: list[tuple[str, str]] = []
    loops: list[tuple[str, str]] = []
    modes: list[tuple[frozenset[str], bool] | None] = []  # per open `if`: the ${MODE} values it admits
    use_modes: list[tuple[str, tuple[tuple[frozenset[str], bool], ...]]] = []
    ties = [tie for tie in _TIE.findall(text)]
    lines_of = text.splitlines()
    functions = frozenset(m.group(1) for m in map(_FUNCTION.match, lines_of) if m)
    function: str | None = None
    split = WORDS
    loaded = False
    loads = 0
    for line in lines_of:
        code = line.split("#", 1)[0] if not line.lstrip().startswith("IFS") else line
        start = _FUNCTION.match(code)
        if start and function is None:
            function = start.group(1)
            continue
        if function is not None and code.startswith("}"):
            function = None
            continue
        guard = _NOT_NULL.match(code)
        if not loaded and _NEWLINE_IFS.match(code) and not stack:
            split = LINES
        if _LOAD.match(code):
            loaded = True
            loads += 1
        mode = _MODE_IF.match(code)
        loop = _FOR.match(code)
        if loop:
            loops.append((loop.group(1), loop.group(2)))
        if _OPEN.match(code):
            stack.append(mode.group(2) if mode else None)
            guards.append(guard.group(1) if guard else _member_guard(code))
            admitted = _mode_condition(code)
            modes.append((admitted, False) if admitted else None)
        elif _ELSE.match(code) and stack:
            stack[-1] = mode.group(2) if mode and mode.group(1) else None
            guards[-1] = guard.group(1) if guard else (_member_guard(code) if code.lstrip().startswith("elif") else None)
            before = modes[-1]
            admitted = _mode_condition(code) if code.lstrip().startswith("elif") else None
            modes[-1] = ((admitted, False) if admitted else None) if code.lstrip().startswith("elif") else (
                (before[0], True) if before is not None and not before[1] else None)
        held = frozenset(g for g in guards if g)
        found = _READ.findall(code)
        assigned = {digits for _, _, digits in found}
        found += [("", parser, digits) for parser, digits in _BARE.findall(code) if digits not in assigned]
        found += [(var, "sed", str(int(digits) - 1)) for var, digits in _SED.findall(code)
                  if index_of(digits) and int(digits) > 0]
        for var, parser, digits in found:
            index = index_of(digits)
            if index is not None:
                reads.append(Read(index, parser, var, next((m for m in reversed(stack) if m), None), max(loads, 1)))
        if not assigned:  # a line that only reads lines[N] inline still uses the variables it names
            alias = _ALIAS.match(code)
            if alias:
                sources.append((alias.group(1), alias.group(2)))
            uses += [(function, var, held) for var in _USE.findall(code) if var != "lines"]
            if function is None:
                around = tuple(m for m in modes if m is not None)
                use_modes += [(var, around) for var in _USE.findall(code) if var != "lines"]
            calls += [(function, word, held) for word in _WORD.findall(code) if word in functions]
        if _CLOSE.match(code) and stack:
            stack.pop()
            guards.pop()
            modes.pop()
    if not reads:
        return None
    return Spec(name, split, tuple(reads), tuple(uses), tuple(calls), tuple(sources), functions,
                loops=tuple(loops), use_modes=tuple(use_modes), mode_ties=tuple(ties))


def elements(text: str, split: str) -> list[str]:
    """The config as the runner's array holds it: its non-blank lines, or its whitespace-split words."""
    if split == LINES:
        return [line for line in text.split("\n") if line.strip()]
    return text.split()


def _key(element: str) -> str:
    return element.split(":", 1)[0].strip().lstrip("-")


def fit(spec: Spec, text: str) -> tuple[list[Read], list[tuple[Read, int]]]:
    """The runner's reads that land on the key they are named after (anchors in place), and those named
    after a key the config holds at another element (``(read, where)``: a misread)."""
    items = elements(text, spec.split)
    keys: dict[str, list[int]] = {}
    for i, element in enumerate(items):
        if ":" in element:
            keys.setdefault(_key(element), []).append(i)
    held, moved = [], []
    for read in spec.reads:
        if "key" in read.parser or read.load != 1 or not read.var:  # a key read names no key; a reload reads
            continue  # another file; an inline read (no variable) names nothing
        if read.index < len(items) and ":" in items[read.index] and _key(items[read.index]) == read.var:
            held.append(read)
        elif read.var in keys and len(keys[read.var]) == 1:
            moved.append((read, keys[read.var][0]))
    return held, moved


def _structural(element: str) -> str | None:
    """What a header or ``##`` element is (``the infer_params header``, ``'##'``), else ``None``."""
    bare = element.strip()
    header = re.match(r"^=+([^=]+)=+$", bare)
    if header:
        return f"the {header.group(1).strip()} header"
    return "'##'" if bare and not bare.strip("#") else None


def misreads(spec: Spec, text: str) -> list[tuple[Read, str]]:
    """Where the runner misreads the config: a read that lands on a header or ``##``, or whose variable is
    named after a key the config holds at another element; ``(read, what the config holds)``, by index."""
    items = elements(text, spec.split)
    read = {r.index for r in spec.reads if r.load == 1}
    unread = [i for i in range(min(max(read, default=-1) + 1, len(items))) if i not in read]
    out: dict[int, tuple[Read, str]] = {}
    for one in spec.reads:
        if one.load != 1 or one.index >= len(items) or one.index in out:
            continue
        what = _structural(items[one.index])
        # A header or `##` the runner reads is a misread only where a line it skips (its structure) holds a
        # key nearby: the lines moved. One it reads in place (PaddleSeg's inference_dir) reads empty, as upstream.
        if what is not None and any(abs(u - one.index) <= 3 and _structural(items[u]) is None for u in unread):
            out[one.index] = (one, f"idx {one.index} is {what}")
    for read, where in fit(spec, text)[1]:
        out.setdefault(read.index, (read, f"{read.var}: sits at idx {where}"))
    for moved in sorted(m for m in (_structure_misread(spec, text), _key_misread(spec, text)) if m is not None):
        index, what = moved
        after = [r for r in spec.reads if r.load == 1 and r.index >= index]
        if after:  # the first line it reads from there on is a neighbour's
            first = min(after, key=lambda r: (r.index, not r.var))
            out.setdefault(first.index, (first, what))
            break
    return [out[i] for i in sorted(out)]


def layout_fit(spec: Spec, text: str) -> bool:
    """The runner's reads are the config's layout: it reads the config to its last line (its span is the
    config's length, or up to a trailing section's header), skips exactly its headers and ``##`` (at least two)
    and reads a key on every other line (PaddleDetection's 20-line PTQ layout, read by its
    test_ptq_inference_python.sh)."""
    items = elements(text, spec.split)
    read = {r.index for r in spec.reads if r.load == 1}
    if len(items) > span(spec) and (_structural(items[span(spec)]) or "").endswith(" header"):
        items = items[: span(spec)]  # a trailing section after the layout (found by name, not by position)
    if span(spec) != len(items) or not items:
        return False
    structural = {i for i, item in enumerate(items) if _structural(item) is not None}
    return (len(structural) >= 2 and all((i in structural) != (i in read) for i in range(len(items)))
            and all(":" in items[i] for i in read))


def reads_as_intended(spec: Spec, text: str, anchors: int = 2, first: int = 0) -> bool:
    """The config is one this runner reads: at least ``anchors`` of its named reads at index ``first`` or
    later in place, none moved."""
    held, _ = fit(spec, text)
    return len({r.index for r in held if r.index >= first}) >= anchors and not misreads(spec, text)


def span(spec: Spec) -> int:
    """How many lines the runner reads in some mode (its highest index + 1, reads of its first load)."""
    return max((r.index for r in spec.reads if r.load == 1), default=-1) + 1


def structure_of(spec: Spec, text: str) -> tuple[tuple[int, str], ...]:
    """Where a config's headers and ``##`` sit, within what the runner reads."""
    items = elements(text, spec.split)[: span(spec) + 1]
    return tuple((i, what) for i, item in enumerate(items) if (what := _structural(item)) is not None)


def learn_structure(spec: Spec, texts: list[str], least: int = 3) -> tuple[tuple[int, str], ...]:
    """The header and ``##`` positions most of a repository's configs share (at least ``least`` of them, more
    than half of those the runner reads as intended); empty when there is no such majority."""
    seen = [structure_of(spec, text) for text in texts if reads_as_intended(spec, text)]
    if not seen:
        return ()
    counts: dict[tuple[tuple[int, str], ...], int] = {}
    for one in seen:
        counts[one] = counts.get(one, 0) + 1
    best, count = max(counts.items(), key=lambda item: item[1])
    return best if count >= least and 2 * count > len(seen) else ()


def learn_keys(spec: Spec, texts: list[str], least: int = 3, agree: float = 0.9) -> tuple[tuple[int, str], ...]:
    """The keys the repository's configs (those the runner reads as intended, at least ``least``) hold at the
    same index, where ``agree`` of them agree (a suite's fixed lines: its inference block's flags, say)."""
    seen = [elements(text, spec.split)[: span(spec) + 1] for text in texts if reads_as_intended(spec, text)]
    if len(seen) < least:
        return ()
    out = []
    for index in range(span(spec)):
        keys = [_key(items[index]) for items in seen if index < len(items) and ":" in items[index]]
        if not keys:
            continue
        best = max(set(keys), key=keys.count)
        if keys.count(best) >= agree * len(seen) and best not in ("null", ""):
            out.append((index, best))
    return tuple(out)


def _key_misread(spec: Spec, text: str) -> tuple[int, str] | None:
    """The first learned key out of place where the learned keys after it (at least two, or every one to the last)
    all sit one line early, or it and those after it one line late (a missing or an extra line, not a renamed key):
    ``(index, what)``."""
    if not spec.keys:
        return None
    items = elements(text, spec.split)

    def key_at(i: int) -> str | None:
        return _key(items[i]) if 0 <= i < len(items) and ":" in items[i] else None

    for position, (index, key) in enumerate(spec.keys):
        if key_at(index) == key:
            continue
        for offset in (-1, 1):  # a line missing at idx: the learned key there is gone, the next ones sit one early
            following = spec.keys[position + 1: position + 4] if offset < 0 else spec.keys[position: position + 3]
            # at least two learned keys moved, or (at the end of the learned keys) every one after it
            enough = len(following) >= 2 or (following and following[-1] == spec.keys[-1])
            if enough and all(key_at(i + offset) == k for i, k in following):
                at, moved = following[0]
                return index, (f"{moved}: sits at idx {at + offset}, where the repository's other configs read by "
                               f"this runner have it at idx {at} (a line {'missing' if offset < 0 else 'extra'} "
                               "above it)")
        return None
    return None


def _structure_misread(spec: Spec, text: str) -> tuple[int, str] | None:
    """The first learned header or ``##`` that sits 1-3 elements away in this config: ``(index, what)``."""
    if not spec.structure:
        return None
    items = elements(text, spec.split)
    for index, what in spec.structure:
        if index < len(items) and _structural(items[index]) == what:
            continue
        for offset in (-1, 1, -2, 2, -3, 3):
            at = index + offset
            if 0 <= at < len(items) and _structural(items[at]) == what:
                lines = f"{abs(offset)} line{'s' if abs(offset) > 1 else ''}"
                return index, (f"{what} sits at idx {at}, where the repository's other configs read by this runner "
                               f"have it at idx {index} ({lines} {'missing' if offset < 0 else 'extra'} above it)")
        return None  # moved farther, or gone: not a shift this check can name
    return None


def main_span(spec: Spec) -> int:
    """How many lines the runner reads in every mode (its highest index + 1, reads of its first load)."""
    return max((r.index for r in spec.reads if r.mode is None and r.load == 1), default=-1) + 1


def mode_reads(spec: Spec, beyond: int) -> dict[str, tuple[Read, ...]]:
    """The reads of lines at ``beyond`` or later, per ``${MODE}`` branch (a mode that reads its own lines)."""
    out: dict[str, list[Read]] = {}
    for read in spec.reads:
        if read.mode is not None and read.index >= beyond:
            out.setdefault(read.mode, []).append(read)
    return {mode: tuple(reads) for mode, reads in out.items()}


_MAX_DEPTH = 8  # function calls and variable copies followed at most this deep


def _guard_sets(spec: Spec, function: str | None, depth: int = 0) -> list[frozenset[str]]:
    """The null-guards under which a function's body runs, one set per way it is called (top level: no guard)."""
    if function is None:
        return [frozenset()]
    if depth > _MAX_DEPTH:
        return [frozenset()]  # too deep to follow: run without a guard (the safe side)
    out = []
    for caller, callee, guards in spec.calls:
        if callee == function and caller != function:
            out += [guards | outer for outer in _guard_sets(spec, caller, depth + 1)]
    return out  # [] : never called


def _is_null(spec: Spec, items: list[str], var: str, depth: int = 0) -> bool:
    """The variable holds "null" for this config: a read of a null value, or a copy of nulls only."""
    if depth > _MAX_DEPTH:
        return False
    read = [r for r in spec.reads if r.var == var and r.load == 1 and r.mode is None]
    if read:
        return all(r.index < len(items) and ":" in items[r.index]
                   and items[r.index].split(":")[1].strip() == "null" for r in read)
    copied = [b for a, b in spec.sources if a == var]
    return bool(copied) and all(_is_null(spec, items, b, depth + 1) for b in copied)


def _values(spec: Spec, items: list[str], var: str, depth: int = 0) -> set[str] | None:
    """The values a variable takes for this config: a read value's '|'-separated items, a loop variable's list's
    items, a copy's; ``None`` where that is not known (read in a branch, set by a command)."""
    if depth > _MAX_DEPTH:
        return None
    read = [r for r in spec.reads if r.var == var and r.load == 1 and r.mode is None and r.parser == "value"]
    if read and all(r.index < len(items) and ":" in items[r.index] for r in read):
        return {v.strip() for r in read for v in items[r.index].split(":", 1)[1].split("|")}
    listed = [lst for x, lst in spec.loops if x == var]
    copied = [b for a, b in spec.sources if a == var]
    if listed and not copied and len(set(listed)) == 1:
        return _values(spec, items, listed[0], depth + 1)
    return None


def _member_blocked(spec: Spec, items: list[str], guard: str) -> bool:
    """A guard ``X=a|b`` none of whose values X takes for this config (``use_gpu`` over a null ``use_gpu_list``)."""
    var, wanted = guard.split(MEMBER, 1)
    values = _values(spec, items, var)
    return values is not None and not values & set(wanted.split("|"))


def tied_mode(spec: Spec, text: str, index: int) -> tuple[str, str, str] | None:
    """The ``${MODE}`` this config is run in where that mode never uses line ``index``: a runner test
    ``[ ${MODE} = "M" ] && [ ${X} != "v" ]`` (in mode M only an X of v runs) whose X is v for this config, and
    every top-level use of the line's variables sits in a ``${MODE}`` branch that M does not enter
    (PaddleDetection's KL config: ``infer_mode:kl_quant`` runs in ``klquant_whole_infer``, which reads no trainer).
    ``(M, X, v)``, else ``None``."""
    items = elements(text, spec.split)
    names = {r.var for r in spec.reads if r.index == index and r.load == 1 and r.var}
    if not names or any(function is not None for function, var, _ in spec.uses if var in names):
        return None
    for mode, var, value in spec.mode_ties:
        values = _values(spec, items, var)
        if not values or value not in values:
            continue
        around = [contexts for used, contexts in spec.use_modes if used in names]
        if around and all(any((mode in modes) == negated for modes, negated in contexts) for contexts in around):
            return mode, var, value
    return None


def guard_index(spec: Spec, guard: str) -> int | None:
    """The line a guard's variable is read from (a loop variable's list's line)."""
    var = guard.split(MEMBER, 1)[0]
    for _ in range(_MAX_DEPTH):
        read = [r.index for r in spec.reads if r.var == var and r.load == 1]
        if read:
            return min(read)
        listed = [lst for x, lst in spec.loops if x == var]
        if not listed:
            return None
        var = listed[0]
    return None


def unused(spec: Spec, text: str) -> dict[int, frozenset[str]]:
    """The line indices the runner reads but, for this config, never uses: every use of the variable sits under
    an ``if [ ${X} != "null" ]`` whose X is null here (or in a function never called so); index -> those X
    (empty: nothing uses the line at all)."""
    items = elements(text, spec.split)
    null = {}

    def is_null(var: str) -> bool:  # a null guard's variable is null, a member guard's takes none of its values
        if var not in null:
            null[var] = _member_blocked(spec, items, var) if MEMBER in var else _is_null(spec, items, var)
        return null[var]

    out: dict[int, frozenset[str]] = {}
    used_at: set[int] = set()
    for read in spec.reads:
        if read.load != 1:
            continue
        if not read.var:  # read inline, where it is used: used whenever that line runs
            used_at.add(read.index)
            out.pop(read.index, None)
            continue
        used, why = False, set()
        for function, var, guards in spec.uses:
            if var != read.var:
                continue
            for outer in _guard_sets(spec, function):
                blocking = sorted(g for g in guards | outer if is_null(g))
                if not blocking:
                    used = True  # a use that runs for this config
                    break
                why.add(blocking[0])
            if used:
                break
        if not used:
            out[read.index] = out.get(read.index, frozenset()) | frozenset(why)
        elif used:
            out.pop(read.index, None)
            used_at.add(read.index)
    return {i: w for i, w in out.items() if i not in used_at}


def passing(spec: Spec, text: str) -> frozenset[int]:
    """The line indices the runner reads (its main load) and, for this config, uses: the lines whose keys it can
    pass to a script. A key it reads into a variable no command uses (``unused``) is never passed, so the keys'
    check (lint, import) leaves it out: a kept runner is judged by what it passes."""
    skip = unused(spec, text)
    return frozenset(r.index for r in spec.reads if r.load == 1 and r.index not in skip)
