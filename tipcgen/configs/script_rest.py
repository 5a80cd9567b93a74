"""What a script does with the arguments its parser does not know: its source read with ``ast``, never run.

The flag check (``flag_check``) looks each key the runner passes up in the script's ``--help``. A key that is not
there ends the step where the script parses with ``parse_args`` (``unrecognized arguments``). With
``parse_known_args`` argparse hands such a key back in the rest, and what the code does with the rest decides:

- ``refuses``: no ``parse_known_args`` reads the command line (``parse_args``), or the rest stops the script
  (``if rest: raise ...``, ``parser.error(...)``, ``assert not rest``): the step fails on the key;
- ``drops``: the rest is never used (``args, _ = p.parse_known_args()``, ``p.parse_known_args()[0]``, a rest only
  printed or logged): the key is lost without a word and the step passes without the setting (issue #59: a
  misspelt ``--epohcs`` trained the default number of epochs);
- ``forwards``: the rest may reach other code, and a key that is no flag is not an error: the rest is used in any
  other way (``cfg.merge(rest)``, ``Config.from_args(rest)``, ``second.parse_args(rest)``, ``sys.argv = ...``, a
  tuple returned to a caller not read here); or more than the one parse reads the command line (a second parser,
  ``sys.argv`` read by hand, a module of ``absl``, ``fire``, ``hydra``, ...); or some of the source could not be
  read (a syntax error, a module outside the repository, more than ``MAX_FILES`` files).

The script and the local modules it imports (beside it or from the repository root, followed down to ``MAX_FILES``
files, their import names as the flag cache's key reads them: ``flag_cache.import_names``) are read; the parse may
sit in one of them (``args = utils.parse_args()``) and the rest be returned by a function and dropped by its caller
(followed two calls up). Where no file says ``parse_known``, or the script itself parses with ``parse_args``, it
refuses as argparse does (only the script is parsed, for its flags); else the files that mention a parse, a flag or
``argv`` are parsed (a module without any of them takes no key). ``exact``: every ``ArgumentParser(...)`` of them says
``allow_abbrev=False``, so argparse takes no prefix of a long flag (``--epoch`` for ``--epochs`` goes to the rest).
``shown``: the option names their ``add_argument`` calls spell, save those with ``help=argparse.SUPPRESS``
(``hidden``, which ``--help`` never lists but argparse takes): a ``--help`` that lacks one of ``shown`` was printed
by another parser than the one that keeps the rest, and the check says nothing of a dropped key then.

Keys that are no options (``Global.epoch_num=1`` after PaddleOCR's ``-o``, a ``key=value`` positional override) are
values, never looked up here (``flag_check``). Scripts parsed with click, typer or fire are not probed at all (no
argparse in them: ``flag_check`` says they are unchecked).
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from tipcgen.configs import flag_cache
from tipcgen.core import inputs
from tipcgen.core.errors import TipcgenError

MAX_FILES = 200  # the script and the local modules it imports, transitively (as the flag cache's key)
MAX_READ = 64 << 20  # bytes of them read at most; more: not all read, nothing said of a key
SOURCE_LIMIT = 2 << 20  # as script_reading's: a larger .py file is not read
# A parser's parse calls; parse_args_into_dataclasses: paddlenlp's PdArgumentParser (and HfArgumentParser), which
# reads the command line too (and refuses what it does not know unless asked for the remaining strings).
_PARSES = {"parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args",
           "parse_args_into_dataclasses"}
_KNOWN = {"parse_known_args", "parse_known_intermixed_args"}
_RELEVANT = ("argv", "parse_", "add_argument", "ArgumentParser")  # a module without any of these takes no key
# Libraries that read the command line themselves: a key the argparse parser leaves may be theirs.
CLI_MODULES = {"absl", "fire", "click", "typer", "hydra", "omegaconf", "docopt", "gflags", "jsonargparse",
               "simple_parsing", "tap", "tensorflow", "configargparse"}
_PRINTS = {"print", "pprint", "info", "debug", "warning", "warn", "log", "exception", "critical", "error"}
_THROUGH = {"join", "str", "repr", "len", "format", "sorted", "list", "tuple", "set", "bool", "any", "all"}
_EXITS = {"exit", "_exit", "quit", "abort"}


@dataclass(frozen=True)
class Rest:
    """The fate of a key the script's parser does not know (see the module docstring)."""

    fate: str  # refuses | drops | forwards
    where: str = ""  # file:line of the parse_known_args call
    why: str = ""  # drops: how the rest is left; forwards: what may take it
    shown: frozenset[str] = frozenset()
    hidden: frozenset[str] = frozenset()
    exact: bool = False


@dataclass
class _File:
    rel: str
    nodes: list[ast.AST]
    parents: dict[ast.AST, ast.AST]


def read(root: Path, rel: str) -> Rest:
    """The fate of an unknown key in ``root/rel`` (a path the flag check has already found to be a .py file
    inside the repository)."""
    texts, unread = _sources(root, rel)
    return _read_texts(texts, unread, rel)


def read_source(text: str, rel: str = "train.py", modules: dict[str, str] | None = None) -> Rest:
    """``read`` over texts (the script's, and local modules' by their path): what the tests give it."""
    return _read_texts([(rel, text), *(modules or {}).items()], [], rel)


def _read_texts(texts: list[tuple[str, str]], unread: list[str], rel: str) -> Rest:
    """A source none of whose files says parse_known refuses as argparse does (only the script itself is parsed,
    for its flags); else every file is parsed and judged."""
    text = texts[0][1] if texts and texts[0][0] == Path(rel).as_posix() else ""
    if not any("parse_known" in source for _, source in texts):
        tree = inputs.python_tree(text) if text else None
        own = [_file(rel, tree)] if tree is not None else []
        shown, hidden = _names(own)
        return Rest("refuses", shown=shown, hidden=hidden, exact=_exact(own))
    if unread:  # what was not read may take the key: say where the parse is, parse nothing more
        name, source = next((name, source) for name, source in texts if "parse_known" in source)
        where = f"{name}:{source[:source.index('parse_known')].count(chr(10)) + 1}"
        why = (f"{unread[0]} (which it imports) could not be read" if unread[0] != "..." else
               f"it imports more than {MAX_FILES} local files (not all read)")
        return Rest("forwards", where, why)
    files = []
    for index, (name, source) in enumerate(texts):
        if index and not any(word in source for word in _RELEVANT):
            continue  # no parse, no flag, no argv in it: nothing here can take a key (its CLI imports: below)
        tree = inputs.python_tree(source)
        if tree is None:
            unread.append(name)
        else:
            files.append(_file(name, tree))
    cli = sorted({name for _, source in texts for _, name in flag_cache.import_names(source.encode())
                  if name.split(".")[0] in CLI_MODULES})
    return _decide(files, unread, text, rel, cli)


def _decide(files: list[_File], unread: list[str], text: str, rel: str, cli: list[str]) -> Rest:
    if not files or files[0].rel != Path(rel).as_posix():  # the script itself did not parse
        return Rest("forwards", why=f"{rel} could not be read with ast") if "parse_known" in text else Rest("refuses")
    shown, hidden = _names(files)
    exact = _exact(files)
    line = [(f, c) for f in files for c in f.nodes if _is_parse(f, c) and _command_line(f, c)]
    known = [(f, c) for f, c in line if c.func.attr in _KNOWN]
    strict = [c for g, c in line if g is files[0] and c.func.attr not in _KNOWN]
    if strict and "parse_known" not in text:  # the script's own parse_args: unknown keys stop it, whatever a module does
        return Rest("refuses", shown=shown, hidden=hidden, exact=exact)
    if not known:
        if "parse_known" in text:  # on a list it builds itself: not followed
            return Rest("forwards", why="it calls parse_known_args on arguments it builds itself", shown=shown,
                        hidden=hidden, exact=exact)
        return Rest("refuses", shown=shown, hidden=hidden, exact=exact)
    f, call = known[0]
    where = f"{f.rel}:{call.lineno}"

    def forwards(why: str) -> Rest:
        return Rest("forwards", where, why, shown, hidden, exact)

    if unread:  # a relevant module that does not parse
        return forwards(f"{unread[0]} (which it imports) could not be read")
    if cli:
        return forwards(f"it imports {cli[0]}, which reads the command line too")
    if len(line) > 1:
        return forwards("the command line is parsed " + f"{len(line)} times ("
                        + ", ".join(f"{g.rel}:{c.lineno}" for g, c in line[:3]) + "): another parser may take the key")
    argv = _argv_reads(files, call)
    if argv:
        return forwards(f"{argv} reads sys.argv besides the parser")
    fate, why = _fate(f, call, files, _receiver(call), 0)
    return Rest(fate, where, why, shown, hidden, exact)


# ---------------------------------------------------------------- the sources

def _file(rel: str, tree: ast.Module) -> _File:
    nodes = list(ast.walk(tree))
    parents = {child: node for node in nodes for child in ast.iter_child_nodes(node)}
    return _File(rel, nodes, parents)


def _sources(root: Path, rel: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The texts of the script and its local modules (breadth first, at most MAX_FILES files and MAX_READ bytes),
    by their path from the root; the files that could not be read ("..." when there were more). The import names
    are flag_cache's (``import_names``: parsed once per source, as the flag cache's key reads the same files)."""
    texts: list[tuple[str, str]] = []
    unread: list[str] = []
    queue, seen, read = [root / rel], set(), 0
    listings: dict[Path, frozenset[str]] = {}
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        if len(texts) + len(unread) >= MAX_FILES or read > MAX_READ:
            unread.append("...")
            break
        try:
            name = path.relative_to(root).as_posix()
        except ValueError:  # a relative import above the repository
            unread.append(path.name)
            continue
        try:
            data = inputs.read_bytes(inputs.within(path, root), "script", limit=SOURCE_LIMIT)
            source = inputs.decode(data, path, "script")
        except (TipcgenError, ValueError, OSError):
            unread.append(name)
            continue
        read += len(data)
        texts.append((name, source))
        queue.extend(_local(flag_cache.import_names(data), path.parent, root, listings))
    return texts, unread


def _local(names: tuple[tuple[int, str], ...], here: Path, root: Path, listings: dict[Path, frozenset[str]]) -> list[Path]:
    """The files of the local modules of these imports ((level, dotted name): ``import a.b``, ``from a import b``,
    ``from .c import d``): beside the importing file or from the root; a.b.c runs a/__init__.py and a/b/__init__.py
    too. Looked up in each folder's listing (one ``listdir`` a folder, as flag_cache does), so a FIFO named
    ``x.py`` is found too (and said unread)."""
    def listing(folder: Path) -> frozenset[str]:
        if folder not in listings:
            try:
                listings[folder] = frozenset(os.listdir(folder))
            except OSError:
                listings[folder] = frozenset()
        return listings[folder]

    out = []
    for level, name in names:
        if level > len(here.parents):  # above the filesystem's root: nothing to read
            continue
        bases = [here.parents[level - 2] if level > 1 else here] if level else [here, root]
        parts = [part for part in name.split(".") if part]
        for base in bases:
            folder = base
            for part in parts:
                held = listing(folder)
                if part + ".py" in held:
                    out.append(folder / (part + ".py"))
                inner = listing(folder / part) if part in held else frozenset()
                if not inner:  # no such folder (or an empty one): the name is not a package here
                    break
                folder = folder / part
                if "__init__.py" in inner:  # else a namespace package: Python 3 imports from it all the same
                    out.append(folder / "__init__.py")
    return out


# ---------------------------------------------------------------- the parse

def _name(call: ast.AST) -> str:
    func = call.func if isinstance(call, ast.Call) else call
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _receiver(call: ast.Call) -> str:
    value = call.func.value if isinstance(call.func, ast.Attribute) else None
    return value.id if isinstance(value, ast.Name) else ""


def _is_parse(f: _File, node: ast.AST) -> bool:
    """A parser's parse call (``parser.parse_known_args()``), not a module's function of that name
    (``config.parse_args()``, PaddleClas) nor a plain call of a wrapper (``parse_args()``)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PARSES):
        return False
    modules = {(a.asname or a.name).split(".")[0] for n in f.nodes if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names}
    return _receiver(node) not in modules


def _is_argv(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "argv" and isinstance(node.value, ast.Name) \
        and node.value.id == "sys"


def _function(f: _File, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    cur = f.parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        cur = f.parents.get(cur)
    return cur


def _command_line(f: _File, call: ast.Call) -> bool:
    """The call parses the command line: no arguments (or None), ``sys.argv[...]``, or a parameter of the
    function around it (``def main(argv=None): p.parse_known_args(argv)``)."""
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "args"), None)
    if given is None or (isinstance(given, ast.Constant) and given.value is None):
        return True
    if any(_is_argv(n) for n in ast.walk(given)):
        return True
    func = _function(f, call)
    params = {a.arg for a in (func.args.args + func.args.kwonlyargs + func.args.posonlyargs)} if func else set()
    return isinstance(given, ast.Name) and given.id in params


def _names(files: list[_File]) -> tuple[frozenset[str], frozenset[str]]:
    shown: set[str] = set()
    hidden: set[str] = set()
    for f in files:
        for node in f.nodes:
            if not (isinstance(node, ast.Call) and _name(node) == "add_argument"):
                continue
            names = {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                     and a.value.startswith("-")}
            given = next((k.value for k in node.keywords if k.arg == "help"), None)
            suppressed = (isinstance(given, ast.Constant) and given.value == "==SUPPRESS==") or \
                (isinstance(given, (ast.Name, ast.Attribute)) and _name(given) == "SUPPRESS")
            (hidden if suppressed else shown).update(names)
    return frozenset(shown), frozenset(hidden)


def _exact(files: list[_File]) -> bool:
    """Every ArgumentParser(...) of the sources says allow_abbrev=False (and there is one)."""
    made = [n for f in files for n in f.nodes if isinstance(n, ast.Call) and _name(n) == "ArgumentParser"]
    return bool(made) and all(any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant) and k.value.value is False
                                  for k in n.keywords) for n in made)


def _argv_reads(files: list[_File], call: ast.Call) -> str:
    """Where code other than the parse reads sys.argv to some end (not only printing it), or ""."""
    for f in files:
        for node in f.nodes:
            if isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "argv" for a in node.names):
                return f"{f.rel}:{node.lineno}"
            if _is_argv(node) and not _inside(f, node, call) and _use(f, node, "")[0] == "forwarded":
                return f"{f.rel}:{node.lineno}"
    return ""


def _inside(f: _File, node: ast.AST, outer: ast.AST) -> bool:
    cur = f.parents.get(node)
    while cur is not None and cur is not outer:
        cur = f.parents.get(cur)
    return cur is outer


# ---------------------------------------------------------------- the rest

def _fate(f: _File, node: ast.AST, files: list[_File], parser: str, depth: int) -> tuple[str, str]:
    """(fate, why) of the value a parse_known_args call (or a function returning it) gives."""
    parent = f.parents.get(node)
    if isinstance(parent, ast.Subscript) and parent.value is node:
        index = parent.slice.value if isinstance(parent.slice, ast.Constant) else None
        if index == 0:
            return "drops", f"keeps only the parsed flags ([0], {f.rel}:{parent.lineno}), dropping what its parser does not know"
        return "forwards", f"reads the rest of the parse ({f.rel}:{parent.lineno})"
    if isinstance(parent, ast.Expr):
        return "drops", f"never uses the parse's result ({f.rel}:{parent.lineno})"
    if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
            return _name_fate(f, target.elts[1].id, parser)
        if isinstance(target, ast.Name):
            uses = [n for n in f.nodes if isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Load)]
            firsts = [u for u in uses if isinstance(f.parents.get(u), ast.Subscript) and f.parents[u].value is u
                      and isinstance(f.parents[u].slice, ast.Constant) and f.parents[u].slice.value == 0]
            if uses and len(firsts) == len(uses):
                return "drops", f"keeps only the parsed flags ({target.id}[0]), dropping what its parser does not know"
        return "forwards", f"keeps the parse's rest ({f.rel}:{parent.lineno})"
    func = _function(f, node)
    if isinstance(parent, ast.Return) and func is not None and depth < 2:
        callers = [(g, c) for g in files for c in g.nodes if isinstance(c, ast.Call) and _name(c) == func.name]
        fates = [_fate(g, c, files, parser, depth + 1) for g, c in callers]
        for wanted in ("forwards", "drops", "refuses"):
            found = next((one for one in fates if one[0] == wanted), None)
            if found:
                return found
    return "forwards", f"hands the parse's rest on ({f.rel}:{getattr(parent, 'lineno', node.lineno)})"


def _name_fate(f: _File, name: str, parser: str) -> tuple[str, str]:
    uses = [(n, *_use(f, n, parser)) for n in f.nodes if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    onward = next(((n, to) for n, kind, to in uses if kind == "forwarded"), None)
    if onward:
        return "forwards", f"hands what its parser does not know ({name}) to {onward[1]} ({f.rel}:{onward[0].lineno})"
    if any(kind == "refused" for _, kind, _ in uses):
        return "refuses", f"stops on what its parser does not know ({name})"
    if uses:
        return "drops", f"only prints what its parser does not know ({name}), then goes on"
    return "drops", f"never uses what its parser does not know ({name})"


def _exits(body: list[ast.stmt], parser: str) -> bool:
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Raise) or (isinstance(node, ast.Call) and (
                _name(node) in _EXITS or (_name(node) == "error" and _receiver(node) == parser and parser))):
            return True
    return False


def _use(f: _File, node: ast.AST, parser: str) -> tuple[str, str]:
    """What one read of a value does with it: ("printed" | "refused" | "forwarded", where it goes)."""
    stmt = f.parents.get(node)
    while stmt is not None and not isinstance(stmt, ast.stmt):
        stmt = f.parents.get(stmt)
    if isinstance(stmt, (ast.Raise, ast.Assert)):  # raise ValueError(f"unknown {rest}")
        return "refused", ""
    child, cur = node, f.parents.get(node)
    while cur is not None:
        if isinstance(cur, ast.Call) and child is not cur.func:
            name = _name(cur)
            if name in _EXITS or (name == "error" and parser and _receiver(cur) == parser):
                return "refused", ""
            if name in _PRINTS:
                return "printed", ""
            if name not in _THROUGH:
                return "forwarded", f"{name or 'a call'}()"
        if isinstance(cur, ast.stmt):
            if isinstance(cur, (ast.If, ast.While)) and any(n is node for n in ast.walk(cur.test)):
                return ("refused" if _exits(cur.body, parser) else "printed"), ""
            if isinstance(cur, ast.Expr):
                return "printed", ""
            return "forwarded", type(cur).__name__.lower()
        child, cur = cur, f.parents.get(cur)
    return "forwarded", ""
