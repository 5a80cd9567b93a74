"""A script's source read with ``ast`` (never run): its argparse flags, which of them the code reads, what
they switch on, and what they gate.

``tipcgen new`` chooses flags from a script's ``--help`` (``script_help``); the help says what a flag is
called, not what the code does with it. This reads the source: ``add_argument`` calls (names, action,
literal default, help), the ``args.<dest>`` reads in the script and the local modules it imports (one
level), the ``if`` blocks a flag's value opens (a save, an evaluation, a data preparation), and the data
file names the code spells (``h5py.File('train.h5')``). Pure functions over text; a file that does not
parse reads as nothing known (``used`` is None: every flag may be used).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tipcgen.core import inputs
from tipcgen.core.errors import InputError

UNKNOWN = object()  # a default that is not a literal (a call, a name): nothing is said about it
SOURCE_LIMIT = 2 << 20  # a training script is tens of KB; a larger .py file is not read
MAX_MODULES = 12  # local modules read beside the script
DATA_SUFFIXES = (".h5", ".hdf5", ".npy", ".npz", ".mat", ".pkl", ".pickle", ".csv", ".tsv", ".txt", ".json",
                 ".jsonl", ".lmdb", ".tfrecord", ".tfrecords", ".parquet", ".zip", ".tar", ".tar.gz", ".tgz")
_DOWNLOAD_HELP = re.compile(r"download|imagenet|backbone|from the (internet|web)|\burl\b|pre-?trained (on|backbone|weights? (from|of) (imagenet|the web))",
                            re.IGNORECASE)
_DOWNLOAD_NAME = re.compile(r"pre_?train|download|imagenet|backbone", re.IGNORECASE)
_SAVE_CALL = re.compile(r"save", re.IGNORECASE)
_EVAL_CALL = re.compile(r"^(eval|evaluate|evaluation|validate|validation|val|test|run_eval|do_eval|valid)(_.*)?$|_eval$|_val$|_test$",
                        re.IGNORECASE)
_PREP_CALL = re.compile(r"prep|process|make|generat|build_data|create|convert|gen_", re.IGNORECASE)
_TRUE = {"true", "1", "yes", "y", "on"}


@dataclass(frozen=True)
class Arg:
    """One ``add_argument`` call: its option names, dest, action, literal default (or UNKNOWN), help."""

    names: tuple[str, ...]
    dest: str
    action: str = ""
    default: object = None
    help: str = ""
    type: str = ""  # the type= callable's name (int, str, str2bool, ...)
    line: int = 0
    nargs: str = ""  # '+', '*', '?' or a count, as written

    @property
    def name(self) -> str:
        longs = [n for n in self.names if n.startswith("--")]
        return (longs or list(self.names))[0]

    @property
    def switch(self) -> bool:
        """On/off: store_true/store_false, a bool type, or a True/False default."""
        return (self.action in ("store_true", "store_false", "BooleanOptionalAction") or "bool" in self.type.lower()
                or isinstance(self.default, bool))


@dataclass(frozen=True)
class Gate:
    """An ``if`` whose test reads a flag and whose block saves, evaluates or prepares data."""

    dest: str
    what: str  # saving | evaluation | data preparation
    calls: tuple[str, ...]  # the calls in the block that say so
    where: str  # file:line
    modulo: bool = False  # the test is `epoch % args.X`: an interval


@dataclass
class Reading:
    """What the source says; ``used`` is None when the code may read every flag (``vars(args)``, a parse error)."""

    path: str
    args: tuple[Arg, ...] = ()
    used: frozenset[str] | None = None
    gates: tuple[Gate, ...] = ()
    data_files: tuple[tuple[str, str], ...] = ()  # (file name, file:line) the code opens by a literal name
    readable: bool = False
    workers: str = ""  # `num_workers=16 at train.py:40`: a loader's worker count set in code
    made: tuple[str, ...] = ()  # the data file names the code opens for writing
    # (dest, file name or "") of each checkpoint the code saves / loads by a flag: paddle.save(sd,
    # os.path.join(args.save_dir, "model.pdparams")) is ("save_dir", "model.pdparams"); paddle.load(args.ckpt) ("ckpt", "")
    saves: tuple[tuple[str, str], ...] = ()
    loads: tuple[tuple[str, str], ...] = ()
    module_args: tuple[Arg, ...] = ()  # add_argument calls in the local modules read (an ArgsParser class there)
    intervals: tuple[str, ...] = ()  # `every 10 at train.py:57`: a save under `% <literal>`, no flag to change it

    def arg(self, flag: str) -> Arg | None:
        key = _norm(flag)
        return next((a for a in self.args if any(_norm(n) == key for n in a.names)), None)

    def unused(self, flag: str) -> bool:
        """The code provably never reads this flag (parsed, then nothing: never an output flag)."""
        arg = self.arg(flag)
        return arg is not None and self.used is not None and arg.dest not in self.used


def _norm(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


def nearest_flag(word: str, names: list[str]) -> str | None:
    """The flag of ``names`` spelt like ``word`` (--epoch-num for --epoch_num, --Epochs for --epochs, --epohcs for
    --epochs), compared without dashes, underscores and case: the fewest letters changed, swapped, added or left out
    (at most 2; 1 in a name of 4 letters or fewer), else difflib's closest; None rather than one that only shares
    letters (--gpu_id for --pretrained)."""
    import difflib

    def plain(name: str) -> str:
        return name.lstrip("-").split("=", 1)[0].replace("-", "").replace("_", "").lower()

    by_plain = {plain(n): n for n in names}
    target = plain(word)
    if target in by_plain:
        return by_plain[target]
    limit = 1 if len(target) <= 4 else 2
    near = sorted((edits(target, p, limit), -difflib.SequenceMatcher(None, target, p).ratio(), p) for p in by_plain)
    if near and near[0][0] <= limit:
        return by_plain[near[0][2]]
    close = difflib.get_close_matches(target, list(by_plain), n=1, cutoff=0.75)
    return by_plain[close[0]] if close else None


def edits(a: str, b: str, limit: int = 2) -> int:
    """The edit distance of a and b counting a swap of two neighbours as one edit (optimal string alignment);
    ``limit + 1`` for anything above ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        before, row = row, current
    return min(row[-1], limit + 1)


def download_switch(arg: Arg) -> bool:
    """A flag that means "fetch pretrained weights" (a backbone from the web), not "load this checkpoint":
    a switch or URL default named or described as such."""
    named = bool(_DOWNLOAD_NAME.search(arg.dest))
    described = bool(_DOWNLOAD_HELP.search(arg.help))
    url = isinstance(arg.default, str) and arg.default.startswith(("http://", "https://"))
    return url or (arg.switch and (named or described)) or (described and not re.search(r"\bpath\b|\bfile\b|checkpoint", arg.help, re.IGNORECASE))


def download_off(arg: Arg) -> str | None:
    """The words that turn a download switch off (``--pretrained False``, ``--no-pretrained``), or None when it
    is off by default (or not a download switch)."""
    if not download_switch(arg):
        return None
    negative = arg.dest.lower().startswith(("no_", "not_", "skip_", "disable_"))
    if isinstance(arg.default, str) and arg.default.startswith(("http://", "https://")):
        return f"{arg.name}="  # empty: the runner passes `''` on as two quote characters
    on = truthy(arg.default)
    if negative:  # --no-pretrained: set, it does not download
        return None if on else (arg.name if arg.action == "store_true" else f"{arg.name} True")
    if not on:
        return None
    if arg.action == "BooleanOptionalAction":
        return "--no-" + arg.name.lstrip("-")
    if arg.action == "store_false":
        return arg.name
    if arg.action == "store_true":  # default True and no way to turn it off from the command line
        return None
    if arg.type == "bool":  # type=bool: bool('False') is True; only an empty value is false
        return f"{arg.name}="
    return f"{arg.name} False"


def output_like(arg: Arg) -> bool:
    """A flag whose name or help says the script writes there (--save_json results.json is no data to ship)."""
    return bool(re.search(r"save|out|result|log|export|dump|write|pred", f"{arg.dest} {arg.help}", re.IGNORECASE))


def truthy(value: object) -> bool | None:
    """A default as on/off: True/False, 'True'/'False', 1/0; None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str) and value.strip().lower() in _TRUE | {"false", "0", "no", "n", "off", ""}:
        return value.strip().lower() in _TRUE
    return None


def data_file_name(value: object) -> str | None:
    """A literal that names a data file (train.h5, data/val.npy), else None."""
    if not isinstance(value, str) or not value or len(value) > 200 or "\n" in value or value.startswith(("http:", "https:")):
        return None
    lowered = value.lower()
    if lowered.endswith(DATA_SUFFIXES) and " " not in value and not lowered.endswith(("requirements.txt", "readme.txt")):
        return value
    return None


# ---------------------------------------------------------------- reading

def read_source(text: str, path: str = "<source>", others: dict[str, str | None] | None = None) -> Reading:
    """The reading of a script's text; ``others``: local module name → its text (read for flag uses; None: a
    module that could not be read, which may read any flag)."""
    tree = inputs.python_tree(text)
    return Reading(path) if tree is None else _reading(list(ast.walk(tree)), path, others)


def _reading(nodes: list[ast.AST], path: str, others: dict[str, str | None] | None) -> Reading:
    """The reading of a parsed script from its nodes (read_source, read_script: each text is parsed and walked
    once; every reading below scans this one list)."""
    args = tuple(_arguments(nodes))
    dests = {a.dest for a in args}
    trees = [(path, nodes)]
    unknown = False  # some code that may read the flags was not read
    for name, other in (others or {}).items():
        other_tree = inputs.python_tree(other if other is not None else "")
        if other_tree is None:
            unknown = True
        else:
            trees.append((name, list(ast.walk(other_tree))))
            unknown = unknown or other is None
    used: set[str] | None = set()
    gates: list[Gate] = []
    files: list[tuple[str, str]] = []
    workers = ""
    made: set[str] = set()
    saves: list[tuple[str, str]] = []
    loads: list[tuple[str, str]] = []
    module_args: list[Arg] = []
    intervals: list[str] = []
    for where, one in trees:
        if one is not nodes:
            module_args += _arguments(one)
        try:
            one_saves, one_loads = _checkpoints(one, dests)
        except RecursionError:  # a path built of thousands of `+`: nothing said about its checkpoints
            one_saves, one_loads = [], []
        saves += one_saves
        loads += one_loads
        workers = workers or _workers(one, where)
        found = _uses(one, dests)
        used = None if found is None or used is None else used | found
        gates.extend(_gates(one, dests, where))
        intervals.extend(_intervals(one, where))
        reads, written = _file_literals(one, where, {a.line for a in args} if one is nodes else set())
        files.extend(reads)
        made.update(written)
    if not used or unknown or _handed_on(trees):
        used = None  # no flag read by name (a stub), or the namespace handed to code not read here: say nothing
    return Reading(path, args, frozenset(used) if used is not None else None, tuple(gates), tuple(files), True, workers,
                   tuple(sorted(made)), tuple(dict.fromkeys(saves)), tuple(dict.fromkeys(loads)), tuple(module_args),
                   tuple(intervals[:3]))


def read_script(root: Path, rel: str) -> Reading:
    """The reading of ``root/rel`` and the local modules it imports (next to it, or from the root); a file
    that is not a regular file inside the root (a link out of it, a FIFO, too large) reads as nothing known."""
    full = root / rel
    try:
        text = inputs.read_text(inputs.within(full, root), "script", limit=SOURCE_LIMIT)
    except InputError:
        return Reading(rel)
    tree = inputs.python_tree(text)
    if tree is None:
        return Reading(rel)
    nodes = list(ast.walk(tree))
    others: dict[str, str | None] = {}
    for module in _local_imports(nodes):
        if len(others) >= MAX_MODULES:
            others["..."] = None  # more local modules than are read: one of them may read any flag
            break
        for candidate in (base / (module.replace(".", "/") + suffix) for base in (full.parent, root)
                          for suffix in (".py", "/__init__.py")):
            if not candidate.is_file() or candidate == full:
                continue
            key = candidate.relative_to(root).as_posix()
            try:
                others[key] = inputs.read_text(inputs.within(candidate, root), "script", limit=SOURCE_LIMIT)
            except (InputError, ValueError):
                others[key] = None  # a module outside the root, or not text: it may read any flag
            break
    return _reading(nodes, rel, others)


def _local_imports(nodes: list[ast.AST]) -> list[str]:
    names = [alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in nodes if isinstance(node, ast.ImportFrom) and node.module]
    # `from ppcls.utils import config`: a submodule of the package (PaddleClas's parse_args lives there)
    names += [f"{node.module}.{alias.name}" for node in nodes if isinstance(node, ast.ImportFrom) and node.module
              for alias in node.names if alias.name != "*"]
    return list(dict.fromkeys(names))


def _literal(node: ast.AST | None) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _arguments(nodes: list[ast.AST]) -> list[Arg]:
    out = []
    for node in nodes:
        if not (isinstance(node, ast.Call) and _call_name(node) == "add_argument"):
            continue
        names = tuple(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
        if not names or not names[0].startswith("-"):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        dest = _literal(kw.get("dest"))
        if not isinstance(dest, str):
            longs = [n for n in names if n.startswith("--")]
            dest = (longs or list(names))[0].lstrip("-").replace("-", "_")
        action = _literal(kw.get("action"))
        if action is UNKNOWN and isinstance(kw.get("action"), ast.Attribute):
            action = kw["action"].attr  # argparse.BooleanOptionalAction
        help_text = _literal(kw.get("help"))
        type_node = kw.get("type")
        out.append(Arg(names, dest, action if isinstance(action, str) else "",
                       _literal(kw["default"]) if "default" in kw else (False if action == "store_true" else True if action == "store_false" else None),
                       help_text if isinstance(help_text, str) else "",
                       _call_name(type_node) if type_node is not None else "", node.lineno,
                       str(nargs) if (nargs := _literal(kw.get("nargs"))) not in (None, UNKNOWN) else ""))
    return out


def _uses(nodes: list[ast.AST], dests: set[str]) -> set[str] | None:
    """The dests the code reads (``x.dest``, ``getattr(x, 'dest')``, ``x['dest']``); None: it may read any."""
    used: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Attribute) and node.attr in dests and not isinstance(node.ctx, ast.Store):
            used.add(node.attr)
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return None
        elif isinstance(node, ast.Call) and _call_name(node) in ("vars", "getattr", "_get_kwargs"):
            if _call_name(node) == "getattr" and len(node.args) >= 2:
                name = _literal(node.args[1])
                if not isinstance(name, str):
                    return None
                used.add(name)
            elif _call_name(node) != "getattr":
                return None
        elif isinstance(node, ast.Subscript):
            key = _literal(node.slice)
            if isinstance(key, str) and key in dests:
                used.add(key)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in dests:
            used.add(node.value)  # cfg.get('dest'), a YAML merge by name: read, as far as the source can tell
    return used


_HARMLESS = {"print", "str", "repr", "info", "debug", "warning", "log", "format", "pprint", "vars", "getattr", "setattr"}


def _handed_on(trees: list[tuple[str, list[ast.AST]]]) -> bool:
    """The parsed namespace (``args = p.parse_args()``) passed whole to a function none of the read files defines."""
    names: set[str] = set()
    defined: set[str] = set()
    for _, nodes in trees:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    _call_name(node.value) in ("parse_args", "parse_known_args"):
                for target in node.targets:
                    for one in ast.walk(target):
                        if isinstance(one, ast.Name):
                            names.add(one.id)
    skip = defined | _HARMLESS
    for _, nodes in trees:
        for node in nodes:
            if isinstance(node, ast.Call) and _call_name(node) not in skip:
                passed = [*node.args, *(kw.value for kw in node.keywords)]
                if any(isinstance(a, ast.Name) and a.id in names for a in passed):
                    return True
    return False


def _workers(nodes: list[ast.AST], where: str) -> str:
    """A ``num_workers=<literal>`` keyword above 0 in a call (a DataLoader built with a fixed worker count)."""
    for node in nodes:
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                value = _literal(kw.value) if kw.arg == "num_workers" else None
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return f"num_workers={value} at {where}:{node.lineno}"
    return ""


def _intervals(nodes: list[ast.AST], where: str) -> list[str]:
    """Saves under an ``if`` whose test is ``... % <int literal above 1>`` (``(epoch + 1) % 10 == 0``): a fixed
    interval no flag changes, which a short run may never reach."""
    out = []
    for node in nodes:
        if not isinstance(node, ast.If):
            continue
        every = next((n.right.value for n in ast.walk(node.test) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
                      and isinstance(n.right, ast.Constant) and isinstance(n.right.value, int)
                      and not isinstance(n.right.value, bool) and n.right.value > 1), None)
        if every is None:
            continue
        calls = [_call_name(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
        if any(c and _SAVE_CALL.search(c) for c in calls):
            out.append(f"every {every} at {where}:{node.lineno}")
    return out


def _reads(node: ast.AST, dests: set[str]) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr in dests}


def _gates(nodes: list[ast.AST], dests: set[str], where: str) -> list[Gate]:
    out = []
    for node in nodes:
        if not isinstance(node, ast.If):
            continue
        read = _reads(node.test, dests)
        if not read:
            continue
        modulo = any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node.test))
        calls = [_call_name(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
        for what, pattern in (("saving", _SAVE_CALL), ("evaluation", _EVAL_CALL), ("data preparation", _PREP_CALL)):
            hits = tuple(dict.fromkeys(c for c in calls if c and pattern.search(c)))
            if what == "data preparation":
                hits = tuple(c for c in hits if not _SAVE_CALL.search(c) and not _EVAL_CALL.search(c))
            if hits:
                for dest in sorted(read):
                    out.append(Gate(dest, what, hits[:3], f"{where}:{node.lineno}", modulo))
    return out


_READ_CALLS = {"open", "File", "load", "loadtxt", "loadmat", "read_csv", "read_table", "read_hdf", "read_parquet",
               "genfromtxt", "memmap", "read_json", "imread", "DatasetFolder", "ImageFolder"}


def _mode(node: ast.Call) -> str:
    mode = _literal(node.args[1]) if len(node.args) > 1 else None
    for kw in node.keywords:
        if kw.arg == "mode":
            mode = _literal(kw.value)
    return mode if isinstance(mode, str) else "r"


def _file_literals(nodes: list[ast.AST], where: str, skip_lines: set[int]) -> tuple[list[tuple[str, str]], set[str]]:
    """Data files the code opens for reading by a literal name (``h5py.File('train.h5', 'r')``), outside
    add_argument lines; and the names it opens for writing (it makes them, perhaps only behind a flag)."""
    reads, written = [], set()
    for node in nodes:
        if not (isinstance(node, ast.Call) and _call_name(node) in _READ_CALLS and node.args):
            continue
        name = data_file_name(_literal(node.args[0]))
        if name is None or node.lineno in skip_lines:
            continue
        if any(ch in _mode(node) for ch in "wax"):
            written.add(name)
        else:
            reads.append((name, f"{where}:{node.lineno}"))
    return reads, written


_SAVES = re.compile(r"^(save|save_model|save_checkpoint|save_state_dict|save_dict)$", re.IGNORECASE)
_LOADS = re.compile(r"^(load|load_model|load_checkpoint|load_state_dict|load_dict|load_pretrained|load_weights)$",
                    re.IGNORECASE)


_SUBFOLDER = re.compile(r"[A-Za-z0-9_\-]+")  # a folder name: no suffix, no separator
_SOME_FOLDER = "\0"  # a part of a path of a value the reading does not know (os.path.join(args.out, name))
# a folder per iteration or epoch (``iter_*``: f"iter_{it}", "epoch_{}".format(e), "iter_%d" % it): one number
_NUMBERED = re.compile(r"[A-Za-z0-9_\-]*\*[A-Za-z0-9_\-]*")


def numbered_folder(node: ast.AST) -> str | None:
    """``iter_*`` for a folder name built from a literal and one formatted value (f"iter_{it}",
    "epoch_{}".format(e), "iter_%d" % it); None for anything else (a literal, two values, a separator)."""
    text: str | None = None
    if isinstance(node, ast.JoinedStr):
        values = [v for v in node.values if isinstance(v, ast.FormattedValue)]
        if len(values) == 1 and all(isinstance(v, (ast.FormattedValue, ast.Constant)) for v in node.values):
            text = "".join("*" if isinstance(v, ast.FormattedValue) else str(v.value) for v in node.values)
    elif isinstance(node, ast.Call) and _call_name(node) == "format" and isinstance(node.func, ast.Attribute) \
            and isinstance(template := _literal(node.func.value), str) and len(node.args) == 1 and not node.keywords:
        text = re.sub(r"\{[^{}]*\}", "*", template) if len(re.findall(r"\{[^{}]*\}", template)) == 1 else None
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(template := _literal(node.left), str):
        text = re.sub(r"%[0-9]*d", "*", template) if len(re.findall(r"%", template)) == 1 else None
    return text if text is not None and _NUMBERED.fullmatch(text) and text != "*" else None


def _flag_path(node: ast.AST, dests: set[str], named: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """(dest, file name) of a path built from a flag: ``args.d``, ``os.path.join(args.d, 'x.pdparams')``,
    ``f"{args.d}/x.pdparams"``, ``args.d + '/x.pdparams'``, or a name assigned one of these."""
    if isinstance(node, ast.Attribute) and node.attr in dests:
        return node.attr, ""
    if isinstance(node, ast.Subscript) and isinstance(key := _literal(node.slice), str) and key:
        return key, ""  # config["Global"]["save_model_dir"]: a key of the config a -o script loads
    if isinstance(node, ast.Name) and node.id in named:
        return named[node.id]
    parts: list[ast.AST] = []
    if isinstance(node, ast.Call) and _call_name(node) == "join":
        parts = list(node.args)
    elif isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.FormattedValue) else v for v in node.values]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [node.left, node.right]
    if not parts:
        return None
    head = _flag_path(parts[0], dests, named)
    tail = _literal(parts[-1]) if len(parts) > 1 else None
    if head is None or head[1] == _SOME_FOLDER or \
            (head[1] and not (_SUBFOLDER.fullmatch(head[1]) or _NUMBERED.fullmatch(head[1]))):
        return None
    joined = isinstance(node, ast.Call)
    if joined and len(parts) == 3 and not head[1] and isinstance(tail, str):  # join(args.out, f"iter_{it}", "m.pdparams")
        middle = _literal(parts[1])
        folder = middle if isinstance(middle, str) and _SUBFOLDER.fullmatch(middle) else numbered_folder(parts[1])
        return (head[0], f"{folder}/{tail.strip('/')}") if folder and _SUBFOLDER.fullmatch(tail.strip("/").replace(".", "_")) \
            else None
    name = tail.strip("/") if isinstance(tail, str) else ""
    name = name if len(parts) == 2 and name and "{" not in name else ""
    if not name and len(parts) == 2 and not head[1] and joined and tail is UNKNOWN:
        # os.path.join(args.save_dir, f"iter_{it}"): a folder per iteration; a name of any other value: some
        # folder or file (a file saved in it is not known; the path itself, loaded or saved, is as before)
        name = numbered_folder(parts[1]) or _SOME_FOLDER
    if head[1]:  # a fixed subfolder of the flag's folder (PaddleSeg's best_model/model.pdparams)
        return (head[0], f"{head[1]}/{name}") if name else None
    return head[0], name


def _checkpoints(nodes: list[ast.AST], dests: set[str]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The checkpoints a file saves and loads by a flag's path (see Reading.saves)."""
    named: dict[str, tuple[str, str]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found = _flag_path(node.value, dests, {})
            if found is not None:
                named[node.targets[0].id] = found
    saves: list[tuple[str, str]] = []
    loads: list[tuple[str, str]] = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        pattern = _SAVES if _SAVES.match(name) else _LOADS if _LOADS.match(name) else None
        if pattern is None or (name in ("save", "load") and not isinstance(node.func, ast.Attribute)):
            continue  # paddle.save / paddle.load; a bare load(...) is the repository's own (a data loader)
        for arg in [*node.args, *(kw.value for kw in node.keywords if kw.arg in ("path", "f", "file", "fname"))]:
            found = _flag_path(arg, dests, named)
            if found is not None:
                (saves if pattern is _SAVES else loads).append((found[0], found[1].replace(_SOME_FOLDER, "")))
                break
    return saves, loads


MODEL_SUFFIXES = (".pdparams", ".pdiparams", ".pdmodel", ".pdopt", ".onnx", ".pth", ".ckpt")


def model_file_literals(text: str) -> list[tuple[str, int]]:
    """The model files a script names by a whole literal path ((literal, line)): ``paddle.load('w/best.pdparams')``,
    never a part of a joined path (``os.path.join(args.model_dir, 'inference.pdmodel')``) nor a flag's default or help."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    joined: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in ("join", "Path", "add_argument", "format"):
            joined.update(id(a) for a in ast.walk(node) if isinstance(a, ast.Constant))
        elif isinstance(node, (ast.BinOp, ast.JoinedStr)):  # dir + "/x.pdparams", f"{dir}/x.pdparams"
            joined.update(id(a) for a in ast.walk(node) if isinstance(a, ast.Constant))
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in joined
                and node.value.lower().endswith(MODEL_SUFFIXES) and len(node.value) < 300 and " " not in node.value
                and "\n" not in node.value):
            out.append((node.value, node.lineno))
    return sorted(set(out), key=lambda item: item[1])
