"""Layer-by-layer forward tracing: where do a Paddle model and its PyTorch reference first part ways?

For people whose final outputs differ after a weight conversion. Forward hooks record every layer's
outputs over the same inputs on both sides; layers are matched by the conversion's name map (a rule
set's renames applied to the PyTorch module name), and the table lists per layer the max/mean abs
difference, NaN/Inf counts and min/max. Layers are listed in the order they finished, so the first
row past the threshold is the first layer to go wrong (a leaf before the block that holds it).
With one model only, the same table finds the first layer that produces NaN or Inf.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from tipcgen.core.errors import TipcgenError
from tipcgen.core.text import terminal
from tipcgen.render.shipped.tipc_compare import abs_diff
from tipcgen.repro.convert import Rules, load_rules
from tipcgen.repro.patterns import match_budget

ROOT_NAME = "(model)"
DEFAULT_THRESHOLD = 1e-5


@dataclass
class LayerRow:
    name: str
    reference: str = ""  # the PyTorch layer it was matched with
    shape: list[int] = field(default_factory=list)
    max_abs: float | None = None
    mean_abs: float | None = None
    nan: int = 0
    inf: int = 0
    min: float | None = None
    max: float | None = None
    status: str = "ok"  # ok | diverged | nan/inf | shape | no output

    @property
    def bad(self) -> bool:
        return self.status != "ok"


@dataclass
class Trace:
    rows: list[LayerRow]
    threshold: float
    unmatched_paddle: list[str] = field(default_factory=list)
    unmatched_reference: list[str] = field(default_factory=list)

    @property
    def first_bad(self) -> LayerRow | None:
        return next((row for row in self.rows if row.bad), None)

    @property
    def passed(self) -> bool:
        return self.first_bad is None

    def to_dict(self) -> dict[str, Any]:
        first = self.first_bad
        return {"passed": self.passed, "threshold": self.threshold, "first_bad": first.name if first else None,
                "rows": [asdict(r) for r in self.rows], "unmatched_paddle": self.unmatched_paddle,
                "unmatched_reference": self.unmatched_reference}


def _framework(model: Any) -> str:
    if hasattr(model, "register_forward_post_hook"):
        return "paddle"
    if hasattr(model, "register_forward_hook"):
        return "torch"
    raise TypeError(f"{type(model).__name__} is neither a paddle.nn.Layer nor a torch.nn.Module")


def _arrays(output: Any) -> list[np.ndarray]:
    """Every tensor in a layer's output (tensor, tuple, list, dict, ModelOutput), as float numpy arrays."""
    if isinstance(output, Mapping):
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        return [a for item in output for a in _arrays(item)]
    if hasattr(output, "detach"):  # torch
        output = output.detach().cpu()
        output = output.float() if str(output.dtype) == "torch.bfloat16" else output
        return [output.numpy()]
    if hasattr(output, "numpy") and hasattr(output, "shape"):  # paddle
        return [np.asarray(output.numpy())]
    return []


def _to_framework(value: np.ndarray, framework: str) -> Any:
    if framework == "paddle":
        import paddle

        return paddle.to_tensor(value)
    import torch

    return torch.from_numpy(np.ascontiguousarray(value))


def record(model: Any, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray]) -> list[tuple[str, list[np.ndarray]]]:
    """Run ``model`` once (no grad) on ``inputs``; each layer's outputs in the order the layers finished."""
    framework = _framework(model)
    seen: dict[str, int] = {}
    records: list[tuple[str, list[np.ndarray]]] = []

    def hook_for(name: str):
        def hook(_layer: Any, _inputs: Any, output: Any) -> None:
            seen[name] = seen.get(name, 0) + 1
            records.append((name if seen[name] == 1 else f"{name}#{seen[name]}", _arrays(output)))
        return hook

    if framework == "paddle":
        import paddle

        layers = model.named_sublayers(include_self=True)
        handles = [layer.register_forward_post_hook(hook_for(name or ROOT_NAME)) for name, layer in layers]
        no_grad = paddle.no_grad()
    else:
        import torch

        handles = [module.register_forward_hook(hook_for(name or ROOT_NAME)) for name, module in model.named_modules()]
        no_grad = torch.no_grad()
    try:
        with no_grad:
            if isinstance(inputs, Mapping):
                model(**{k: _to_framework(v, framework) for k, v in inputs.items()})
            else:
                model(*[_to_framework(v, framework) for v in inputs])
    except Exception as exc:  # wrong inputs for the model: one message, not a traceback from deep inside it
        raise TipcgenError(f"the {framework} model {type(model).__name__} raised {type(exc).__name__} on the inputs: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}",
                           "check the inputs' names, shapes and dtypes against the model's forward()") from None
    finally:
        for handle in handles:
            handle.remove()
    return records


def _stats(row: LayerRow, arrays: list[np.ndarray]) -> None:
    floats = [a for a in arrays if a.dtype.kind == "f"]
    row.shape = list(arrays[0].shape) if arrays else []
    row.nan = int(sum(np.isnan(a).sum() for a in floats))
    row.inf = int(sum(np.isinf(a).sum() for a in floats))
    finite = [a[np.isfinite(a)] for a in floats]
    finite = [a for a in finite if a.size]
    if finite:
        row.min = float(min(a.min() for a in finite))
        row.max = float(max(a.max() for a in finite))
    if not arrays:
        row.status = "no output"
    elif row.nan or row.inf:
        row.status = "nan/inf"


def scan(model: Any, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray]) -> Trace:
    """One framework alone: min/max/NaN/Inf per layer; the first layer with NaN or Inf fails."""
    rows = []
    for name, arrays in record(model, inputs):
        row = LayerRow(name)
        _stats(row, arrays)
        if row.status == "no output":
            row.status = "ok"
        rows.append(row)
    return Trace(rows, threshold=0.0)


def compare(paddle_model: Any, reference_model: Any, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
            rules: Rules | str | None = None, threshold: float = DEFAULT_THRESHOLD,
            reference_inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] | None = None) -> Trace:
    """Both models over the same inputs; layers matched by ``rules`` (a rule set or its name)."""
    if isinstance(rules, str):
        rules = load_rules(rules)
    paddle_records = record(paddle_model, inputs)
    reference_records = record(reference_model, inputs if reference_inputs is None else reference_inputs)
    with match_budget(rules.name if rules else "the rules"):
        by_name = {(rules.layer_name(name.split("#")[0]) + ("#" + name.split("#")[1] if "#" in name else "")
                    if rules else name): (name, arrays) for name, arrays in reference_records}
    rows, used = [], set()
    unmatched = []
    for name, arrays in paddle_records:
        if name not in by_name:
            unmatched.append(name)
            continue
        reference, ref_arrays = by_name[name]
        used.add(name)
        row = LayerRow(name, reference)
        _stats(row, arrays)
        _diff(row, arrays, ref_arrays, threshold)
        rows.append(row)
    return Trace(rows, threshold, unmatched_paddle=unmatched,
                 unmatched_reference=[ref for key, (ref, _) in by_name.items() if key not in used])


def _diff(row: LayerRow, arrays: list[np.ndarray], ref_arrays: list[np.ndarray], threshold: float) -> None:
    if row.status != "ok":
        return
    pairs = list(zip(arrays, ref_arrays))
    if not pairs or len(arrays) != len(ref_arrays) or not all(_broadcastable(a, b) for a, b in pairs):
        row.status = "shape"
        return
    diffs = [abs_diff(a, b).astype("float64") for a, b in pairs]
    if any(not np.isfinite(d).all() for d in diffs):
        row.status = "nan/inf"
        return
    row.max_abs = float(max(d.max() if d.size else 0.0 for d in diffs))
    row.mean_abs = float(max(d.mean() if d.size else 0.0 for d in diffs))
    if row.max_abs > threshold:
        row.status = "diverged"


def _broadcastable(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, or the same rank with size-1 axes (position embeddings of one row against a batch)."""
    if a.shape == b.shape:
        return True
    return a.ndim == b.ndim and all(x == y or 1 in (x, y) for x, y in zip(a.shape, b.shape))


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def table_lines(trace: Trace) -> list[str]:
    """One line per layer, then the verdict naming the first layer past the threshold (or with NaN/Inf)."""
    width = max([len(terminal(r.name)) for r in trace.rows] + [5])
    lines = [f"{'layer':<{width}}  {'shape':<16} {'max abs':>9} {'mean abs':>9} {'nan':>5} {'inf':>5} "
             f"{'min':>9} {'max':>9}  status"]
    for r in trace.rows:
        lines.append(f"{terminal(r.name):<{width}}  {str(r.shape):<16} {_num(r.max_abs):>9} {_num(r.mean_abs):>9} {r.nan:>5} "
                     f"{r.inf:>5} {_num(r.min):>9} {_num(r.max):>9}  {r.status}")
    if trace.unmatched_paddle or trace.unmatched_reference:
        lines.append(f"not compared: {len(trace.unmatched_paddle)} Paddle layer(s) and "
                     f"{len(trace.unmatched_reference)} reference layer(s) without a counterpart")
    first = trace.first_bad
    if first is None:
        lines.append(f"every layer within {trace.threshold:g}" if trace.threshold else "no NaN or Inf in any layer")
    else:
        detail = f"max abs diff {_num(first.max_abs)} > {trace.threshold:g}" if first.status == "diverged" else first.status
        lines.append(f"first bad layer: {terminal(first.name)} ({detail})")
    return lines
