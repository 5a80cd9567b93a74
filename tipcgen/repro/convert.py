"""PyTorch state dict -> Paddle state dict, by a small rule set; every key accounted for.

For people starting a reproduction from a PyTorch checkpoint (``tipcgen align convert``). A rule set
renames keys (regular expressions, applied in order), drops keys on purpose, transposes Linear weights
(torch stores ``[out, in]``, Paddle ``[in, out]``) and casts floating dtypes. Checked against the
target model's own state dict, every unmatched, missing or shape-mismatched key is listed, and any of
them fails the conversion unless allowed by name. Reading is pickle-safe (tipcgen.checkpoint_io).
"""
from __future__ import annotations

import fnmatch
import importlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tipcgen.core.errors import ConvertError, DescriptorError
from tipcgen.core.text import terminal
from tipcgen.repro.patterns import MAX_PATTERN, MAX_PATTERNS, check_replacement, compile_pattern, match_budget
from tipcgen.repro.pickles import DEFAULT_MAX_BYTES, MAX_KEY

# Built-in rule sets. Names are matched against the PyTorch key; `rename` is applied in order.
_LAYER = r"encoder\.layer\.(\d+)\."
BUILTIN_RULES: dict[str, dict[str, Any]] = {
    "bert": {
        "rename": [
            [r"\.gamma$", ".weight"], [r"\.beta$", ".bias"],  # TF-ported checkpoints name LayerNorm so
            [r"embeddings\.LayerNorm\.", "embeddings.layer_norm."],
            [_LAYER + r"attention\.self\.query\.", r"encoder.layers.\1.self_attn.q_proj."],
            [_LAYER + r"attention\.self\.key\.", r"encoder.layers.\1.self_attn.k_proj."],
            [_LAYER + r"attention\.self\.value\.", r"encoder.layers.\1.self_attn.v_proj."],
            [_LAYER + r"attention\.output\.dense\.", r"encoder.layers.\1.self_attn.out_proj."],
            [_LAYER + r"attention\.output\.LayerNorm\.", r"encoder.layers.\1.norm1."],
            [_LAYER + r"intermediate\.dense\.", r"encoder.layers.\1.linear1."],
            [_LAYER + r"output\.dense\.", r"encoder.layers.\1.linear2."],
            [_LAYER + r"output\.LayerNorm\.", r"encoder.layers.\1.norm2."],
            [r"predictions\.transform\.dense\.", "predictions.transform."],
            [r"predictions\.transform\.LayerNorm\.", "predictions.layer_norm."],
            [_LAYER, r"encoder.layers.\1."],  # what is left: the block itself, so tracing matches it too
        ],
        "drop": [r"\.position_ids$"],  # a buffer older transformers saved; Paddle builds it
        "transpose": {"match": [r"\.weight$"], "except": [r"embeddings\.", r"LayerNorm", r"predictions\.decoder\."],
                      "ndim": 2},
        "dtype": "float32",
    },
    "bn-cnn": {
        "rename": [[r"\.running_mean$", "._mean"], [r"\.running_var$", "._variance"]],
        "drop": [r"\.num_batches_tracked$"],
        "transpose": {"match": [r"\.weight$"], "except": [r"embed"], "ndim": 2},  # Linear only: conv is 4-D
        "dtype": "float32",
    },
}
_RULE_KEYS = {"rename", "drop", "transpose", "dtype", "allow", "base"}
_DTYPES = ("float16", "float32", "float64")
MAX_RULE_FILE = 1 << 20  # a rule file is a few dozen lines


@dataclass
class Rules:
    rename: list[tuple[re.Pattern, str]] = field(default_factory=list)
    drop: list[re.Pattern] = field(default_factory=list)
    transpose: list[re.Pattern] = field(default_factory=list)
    keep: list[re.Pattern] = field(default_factory=list)  # transpose's `except`
    ndim: int = 2
    dtype: str | None = None
    allow: list[str] = field(default_factory=list)
    name: str = ""

    def target_name(self, name: str) -> str:
        for i, (pattern, replacement) in enumerate(self.rename):
            name = pattern.sub(replacement, name)
            if len(name) > MAX_KEY:  # `(.*)` -> `\1\1` applied again and again would double each time
                raise ConvertError(f"{self.name}: rename[{i}] makes a key longer than {MAX_KEY} characters",
                                   "a rename should shorten or keep a key's length")
        return name

    def dropped(self, name: str) -> bool:
        return any(p.search(name) for p in self.drop)

    def transposes(self, name: str, value: np.ndarray) -> bool:
        return (value.ndim == self.ndim and any(p.search(name) for p in self.transpose)
                and not any(p.search(name) for p in self.keep))

    def layer_name(self, layer: str) -> str:
        """A torch layer's (module's) name in Paddle: the renames applied to its parameter prefix."""
        return self.target_name(layer + ".").rstrip(".") if layer else layer


def _list(source: str, where: str, value: Any, example: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_PATTERNS:
        raise ConvertError(f"{source}: {where}: expected a list (of at most {MAX_PATTERNS} entries), "
                           f"not {type(value).__name__}", f"e.g. {example}")
    return value


def _compile(source: str, where: str, patterns: Any) -> list[re.Pattern]:
    items = _list(source, where, patterns, "drop: ['\\.num_batches_tracked$']")
    return [compile_pattern(p, source, f"{where}[{i}]") for i, p in enumerate(items)]


def rules_from_mapping(data: Any, source: str) -> Rules:
    """Validate a rule mapping (a built-in set or a YAML rule file); errors name the field. Patterns go
    through tipcgen.repro.patterns (no shape of exponential backtracking)."""
    if not isinstance(data, dict):
        raise ConvertError(f"{source}: a rule file is a mapping", "see docs/ALIGNMENT.md (Weight conversion)")
    unknown = sorted(terminal(k)[:40] for k in data if k not in _RULE_KEYS)
    if unknown:
        raise ConvertError(f"{source}: unknown field(s) {', '.join(unknown)}", f"use: {', '.join(sorted(_RULE_KEYS))}")
    base = data.get("base")
    if base is not None and (not isinstance(base, str) or base not in BUILTIN_RULES):
        raise ConvertError(f"{source}: base: unknown rule set {terminal(base)[:40]!r}",
                           f"use one of: {', '.join(BUILTIN_RULES)}")
    merged = {**(BUILTIN_RULES[base] if base else {}), **{k: v for k, v in data.items() if k != "base"}}
    if base and "rename" in data:  # a file that builds on a set adds its renames after the set's
        merged["rename"] = list(BUILTIN_RULES[base]["rename"]) + _list(source, "rename", data["rename"], "[['a', 'b']]")
    rename = []
    for i, pair in enumerate(_list(source, "rename", merged.get("rename"), "rename: [['\\.gamma$', '.weight']]")):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise ConvertError(f"{source}: rename[{i}]: expected [PATTERN, REPLACEMENT]", "e.g. ['\\.gamma$', '.weight']")
        pattern = compile_pattern(pair[0], source, f"rename[{i}]")
        rename.append((pattern, check_replacement(pattern, pair[1], source, f"rename[{i}]")))
    transpose = merged.get("transpose") or {}
    if not isinstance(transpose, dict) or set(transpose) - {"match", "except", "ndim"}:
        raise ConvertError(f"{source}: transpose: expected a mapping with match, except, ndim",
                           "e.g. transpose: {match: ['\\.weight$'], except: ['embeddings'], ndim: 2}")
    ndim = transpose.get("ndim", 2)
    if type(ndim) is not int or not 1 <= ndim <= 32:
        raise ConvertError(f"{source}: transpose.ndim: expected a whole number from 1 to 32", "e.g. ndim: 2 (Linear weights)")
    dtype = merged.get("dtype")
    if dtype is not None and (not isinstance(dtype, str) or dtype not in _DTYPES):
        raise ConvertError(f"{source}: dtype: {terminal(dtype)[:40]!r} is not a floating dtype",
                           f"use one of {', '.join(_DTYPES)} or null")
    allow = _list(source, "allow", merged.get("allow"), "allow: ['cls.*']")
    if not all(isinstance(a, str) and len(a) <= MAX_PATTERN for a in allow):
        raise ConvertError(f"{source}: allow: expected a list of key names (globs)", "e.g. allow: ['cls.*']")
    return Rules(rename=rename, drop=_compile(source, "drop", merged.get("drop")),
                 transpose=_compile(source, "transpose.match", transpose.get("match")),
                 keep=_compile(source, "transpose.except", transpose.get("except")),
                 ndim=ndim, dtype=dtype, allow=list(allow), name=source)


def load_rules(spec: str) -> Rules:
    """A built-in rule set by name (bert, bn-cnn), or a YAML rule file."""
    if spec in BUILTIN_RULES:
        return rules_from_mapping(BUILTIN_RULES[spec], spec)
    path = Path(spec)
    if not path.is_file():
        raise ConvertError(f"--rules {terminal(spec)}: neither a built-in rule set nor a file",
                           f"use one of {', '.join(BUILTIN_RULES)}, or a YAML rule file")
    from tipcgen.core.inputs import read_text
    from tipcgen.descriptor import yaml_lines

    text = read_text(path, "rule file", MAX_RULE_FILE)
    try:  # the descriptor's reader: no alias bomb, no huge number, no binary, plain keys
        data, _ = yaml_lines.read(text, str(path))
    except DescriptorError as exc:
        raise ConvertError(exc.message.replace("descriptor field", "rule field").replace("a descriptor", "a rule file"),
                           "see docs/ALIGNMENT.md (Weight conversion) for the rule file's fields") from None
    return rules_from_mapping(data, str(path))


@dataclass
class Mapped:
    source: str
    target: str
    shape: tuple[int, ...]
    dtype: str
    transposed: bool


@dataclass
class Conversion:
    """The converted state dict and everything that did not line up."""

    state: dict[str, np.ndarray]
    mapped: list[Mapped]
    dropped: list[str]
    checked: bool = False
    unmatched: list[str] = field(default_factory=list)  # "source -> target" names the target model lacks
    missing: list[str] = field(default_factory=list)  # target keys nothing filled
    shape_mismatch: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        empty = [] if self.mapped else [f"empty: no tensor is left to write ({len(self.dropped)} dropped by the rules)"]
        return (empty + [f"unmatched: {u}" for u in self.unmatched] + [f"missing: {m}" for m in self.missing]
                + [f"shape: {s}" for s in self.shape_mismatch] + [f"duplicate: {d}" for d in self.duplicates])

    @property
    def passed(self) -> bool:
        return not self.problems

    def name_map(self) -> dict[str, str]:
        return {m.source: m.target for m in self.mapped}

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "checked": self.checked, "tensors": len(self.mapped),
                "transposed": [m.target for m in self.mapped if m.transposed], "dropped": self.dropped,
                "unmatched": self.unmatched, "missing": self.missing, "shape_mismatch": self.shape_mismatch,
                "duplicates": self.duplicates, "allowed": self.allowed, "name_map": self.name_map()}


def convert_state(source: dict[str, np.ndarray], rules: Rules, target: dict[str, tuple[int, ...]] | None = None,
                  allow: list[str] | None = None) -> Conversion:
    """Rename, drop, transpose and cast ``source``; with ``target`` (name -> shape) check every key.
    The matching (names only) runs under tipcgen.repro.patterns.match_budget; the arrays are moved after."""
    with match_budget(rules.name or "the rules"):
        plan = [(name, value, None if rules.dropped(name) else rules.target_name(name), rules.transposes(name, value))
                for name, value in source.items()]
    state: dict[str, np.ndarray] = {}
    filled_by: dict[str, str] = {}
    mapped, dropped, duplicates = [], [], []
    for name, value, new, transposed in plan:
        if new is None:
            dropped.append(name)
            continue
        if new in state:
            duplicates.append(f"{name} -> {new} (already filled by {filled_by[new]})")
            continue
        out = np.ascontiguousarray(value.T) if transposed else value
        if rules.dtype and out.dtype.kind == "f":
            out = out.astype(rules.dtype)
        state[new], filled_by[new] = out, name
        mapped.append(Mapped(name, new, tuple(out.shape), str(out.dtype), transposed))
    result = Conversion(state=state, mapped=mapped, dropped=dropped, duplicates=duplicates)
    if target is not None:
        _check(result, target)
    with match_budget(rules.name or "the rules"):
        _apply_allow(result, list(rules.allow) + list(allow or []))
    return result


def _check(result: Conversion, target: dict[str, tuple[int, ...]]) -> None:
    result.checked = True
    for m in result.mapped:
        if m.target not in target:
            result.unmatched.append(m.source if m.source == m.target else f"{m.source} -> {m.target}")
        elif tuple(target[m.target]) != m.shape:
            expected = tuple(target[m.target])
            hint = " (transposed?)" if len(m.shape) == 2 and m.shape[::-1] == expected else ""
            result.shape_mismatch.append(f"{m.target}: converted {list(m.shape)}, the target expects "
                                         f"{list(expected)}{hint} (from {m.source})")
    filled = {m.target for m in result.mapped}
    result.missing = [name for name in target if name not in filled]


def _allowed(entry: str, patterns: list[str]) -> bool:
    names = [part.strip() for part in re.split(r" -> |: | \(", entry)[:2]]
    return any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns)


def _apply_allow(result: Conversion, patterns: list[str]) -> None:
    for kind in ("unmatched", "missing", "shape_mismatch"):
        kept = []
        for entry in getattr(result, kind):
            if _allowed(entry, patterns):
                result.allowed.append(f"{kind}: {entry}")
            else:
                kept.append(entry)
        setattr(result, kind, kept)


def import_factory(spec: str) -> Any:
    """Call ``module:factory`` (the module found from the current folder) and return what it builds."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConvertError(f"{spec!r}: expected MODULE:FACTORY", "e.g. mymodels:build_paddle_model")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConvertError(f"{spec}: cannot import it ({exc})", "run from the folder that holds the module") from None
    try:
        return factory()
    except Exception as exc:  # the user's own code: say where it failed instead of a traceback
        raise ConvertError(f"{spec}: the factory raised {type(exc).__name__}: {exc}",
                           "call it in Python to see the traceback; it should return the model") from None


def target_shapes(spec: str, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, tuple[int, ...]]:
    """The target model's state dict as name -> shape: a .pdparams file (read safely) or a module:factory."""
    from tipcgen.repro.checkpoint_io import read_paddle_state

    if Path(spec).is_file() or ":" not in spec:
        return {k: tuple(v.shape) for k, v in read_paddle_state(spec, max_bytes).items()}
    model = import_factory(spec)
    if not hasattr(model, "state_dict"):
        raise ConvertError(f"{spec}: built a {type(model).__name__}, not a model with state_dict()",
                           "the factory should return a paddle.nn.Layer")
    return {k: tuple(int(d) for d in v.shape) for k, v in model.state_dict().items()}


def convert_file(source: str | Path, rules: Rules, check: str | None = None,
                 allow: list[str] | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Conversion:
    """Read a PyTorch weights file safely and convert it (checked against ``check`` when given)."""
    from tipcgen.repro.checkpoint_io import read_torch_state

    state = read_torch_state(source, max_bytes)
    if not state:
        raise ConvertError(f"{source}: holds no tensors", "pass the state dict of the PyTorch model")
    return convert_state(state, rules, target_shapes(check, max_bytes) if check else None, allow)


def report_lines(result: Conversion) -> list[str]:
    """What a person reads: the counts, then every problem, then what was allowed or dropped."""
    transposed = sum(1 for m in result.mapped if m.transposed)
    lines = [f"{len(result.mapped)} tensors converted ({transposed} transposed), {len(result.dropped)} dropped"]
    if not result.checked:
        lines.append("not checked against a target model (--check FILE.pdparams or MODULE:FACTORY)")
    lines += [f"  FAIL {terminal(p)}" for p in result.problems]
    lines += [f"  allowed {terminal(a)}" for a in result.allowed]
    lines += [f"  dropped {terminal(d)}" for d in result.dropped]
    lines.append("conversion " + ("passed" if result.passed else f"FAILED: {len(result.problems)} problem(s)"))
    return lines
