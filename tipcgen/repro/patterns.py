"""The regular expressions of a rule file (``align convert/trace --rules``), made unable to hang.

A rule file comes with a pull request like any checkpoint. Python's ``re`` backtracks, so a pattern
such as ``(a+)+$`` takes exponential time on a key of 40 ``a``. Two guards, because neither alone is
enough:

1. **What a pattern may be** (``compile_pattern``): at most ``MAX_PATTERN`` characters; no
   backreferences; no quantifier over a group that itself holds a quantifier or an alternation
   (``(a+)+``, ``(a|ab)*``, ``(\\w+\\.)*``): the shapes of exponential backtracking. Plain patterns
   (``\\.gamma$``, ``encoder\\.layer\\.(\\d+)\\.``, ``[a-z_]+\\.weight``) are all still allowed.
2. **How long matching may take** (``match_budget``): adjacent quantifiers (``.*.*.*x``) still
   backtrack polynomially; every rename, drop and transpose match of one command runs under a
   budget of ``MATCH_BUDGET_S`` seconds of wall time (a ``SIGALRM`` timer, which ``re`` checks
   while it matches), after which the command stops with one message naming the pattern's kind.
   Keys are at most 1,024 characters (tipcgen.repro.pickles), which bounds each match as well.
"""
from __future__ import annotations

import contextlib
import re
import signal
import threading
from typing import Any, Iterator

from tipcgen.core.errors import ConvertError
from tipcgen.core.text import terminal

try:  # Python 3.11+
    from re import _constants as _sre_constants  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover  # Python 3.10
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

MAX_PATTERN = 500  # characters in one pattern, replacement or glob
MAX_PATTERNS = 1000  # patterns in one rule file
MATCH_BUDGET_S = 5.0
_REPEATS = {name for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sre_constants, name)}
_BACKREFS = {"GROUPREF", "GROUPREF_EXISTS", "GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE", "GROUPREF_UNI_IGNORE"}
_HINT = "keep rename/drop/transpose patterns plain: e.g. '\\.gamma$' or 'encoder\\.layer\\.(\\d+)\\.'"


def compile_pattern(text: Any, source: str, where: str) -> re.Pattern:
    """A rule file's regular expression, compiled once it is known not to backtrack exponentially."""
    if not isinstance(text, str):
        raise ConvertError(f"{source}: {where}: expected a regular expression (text), not {type(text).__name__}",
                           _HINT)
    if len(text) > MAX_PATTERN:
        raise ConvertError(f"{source}: {where}: a pattern of {len(text)} characters (at most {MAX_PATTERN})", _HINT)
    try:
        compiled = re.compile(text)
        parsed = _sre_parse.parse(text)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        raise ConvertError(f"{source}: {where}: bad regular expression '{terminal(text)}' ({terminal(exc)})",
                           "check the pattern (Python re syntax)") from None
    problem = _risk(parsed, inside_repeat=False)
    if problem:
        raise ConvertError(f"{source}: {where}: the pattern '{terminal(text)}' {problem}, which can make matching "
                           "take exponential time; tipcgen refuses it", _HINT)
    return compiled


def _risk(parsed: Any, inside_repeat: bool) -> str:
    for op, arg in parsed:
        name = str(op)
        if name in _BACKREFS:
            return "has a backreference"
        if name in _REPEATS:
            low, high, body = arg
            if inside_repeat and high != low:
                return "repeats a group that holds another quantifier"
            found = _risk(body, inside_repeat or high > 1)
            if found:
                return found
        elif name == "BRANCH":
            if inside_repeat:
                return "repeats an alternation"
            for branch in arg[1]:
                found = _risk(branch, inside_repeat)
                if found:
                    return found
        elif name == "SUBPATTERN":
            found = _risk(arg[-1], inside_repeat)
            if found:
                return found
        elif name in ("ASSERT", "ASSERT_NOT"):
            found = _risk(arg[1], inside_repeat)
            if found:
                return found
        elif name == "ATOMIC_GROUP":
            found = _risk(arg, inside_repeat)
            if found:
                return found
    return ""


def check_replacement(pattern: re.Pattern, text: Any, source: str, where: str) -> str:
    """A rename's replacement: text of at most MAX_PATTERN characters whose group references exist."""
    if not isinstance(text, str) or len(text) > MAX_PATTERN:
        raise ConvertError(f"{source}: {where}: the replacement must be text of at most {MAX_PATTERN} characters",
                           "e.g. ['\\.gamma$', '.weight']")
    try:
        _sre_parse.parse_template(text, pattern)
    except (re.error, IndexError, TypeError) as exc:
        raise ConvertError(f"{source}: {where}: bad replacement '{terminal(text)}' ({terminal(exc)})",
                           "a group reference \\N must name a group of the pattern") from None
    return text


class _OverBudget(Exception):
    pass


@contextlib.contextmanager
def match_budget(source: str, seconds: float = MATCH_BUDGET_S) -> Iterator[None]:
    """Stop matching after ``seconds`` of wall time with a ConvertError naming ``source``. Only the main
    thread can take a signal: elsewhere the budget is not enforced (guard 1 still holds)."""
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable or signal.getitimer(signal.ITIMER_REAL)[0]:  # someone else's timer runs: leave it alone
        yield
        return

    def expired(_signum: int, _frame: Any) -> None:
        raise _OverBudget

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _OverBudget:
        raise ConvertError(f"{source}: matching the rule patterns against the keys took more than {seconds:g} s "
                           "(a pattern with several adjacent quantifiers backtracks)", _HINT) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
