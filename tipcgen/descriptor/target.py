"""A reproduction target: the paper's metrics with a tolerance, checked on whole_train_whole_infer's eval.

For people reproducing a paper (the guide's ``compare_with_paper``). The descriptor's ``target``
section names the paper figures; after a whole_train_whole_infer run, each metric of the last passed
eval step is compared with its figure. A metric is reproduced when it is no worse than the figure by
more than the tolerance (absolute, or relative to the figure); beating the paper is reproduced too.
A missed or unmeasured metric fails the run (exit 1). This module is the section; the check of a run against
it is results/target_check.py. Pure functions over data: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tipcgen.core.errors import DescriptorError
from tipcgen.descriptor.fields import default
from tipcgen.descriptor.yaml_lines import shown

DEFAULT_TOLERANCE = default("target.tolerance")
LOWER_BY_DEFAULT = tuple(default("target.lower_is_better"))  # metrics where smaller is better unless lower_is_better says otherwise


@dataclass(frozen=True)
class Target:
    metrics: dict[str, float]
    tolerance: float = DEFAULT_TOLERANCE
    relative: bool = True
    lower_is_better: tuple[str, ...] = LOWER_BY_DEFAULT

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": dict(self.metrics), "tolerance": self.tolerance, "relative": self.relative,
                "lower_is_better": list(self.lower_is_better)}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def parse(value: Any, source: str, lines: dict[str, int]) -> Target | None:
    """The descriptor's ``target`` section → Target; errors name the field and its line."""
    if value is None:
        return None

    def fail(path: str, message: str, hint: str) -> DescriptorError:
        return DescriptorError(source, path, message, lines.get(path) or lines.get("target"), hint)

    # Types, allowed fields and the tolerance's range are the model's (descriptor/structure.py); here the rest.
    metrics = value["metrics"]
    for name, figure in metrics.items():
        if not name.strip() or not _number(figure):
            raise fail(f"target.metrics.{name}", f"expected a number, found {shown(figure)}",
                       "the metric as the eval step prints it (accuracy: 0.8125), e.g. accuracy: 0.80")
    tolerance = value.get("tolerance", DEFAULT_TOLERANCE)
    relative = value.get("relative", default("target.relative"))
    lower = value.get("lower_is_better", [m for m in metrics if m in LOWER_BY_DEFAULT])
    if not all(m in metrics for m in lower):
        raise fail("target.lower_is_better", f"expected a list of metric names from target.metrics, found {shown(lower)}",
                   "e.g. lower_is_better: [loss]")
    return Target({str(k): float(v) for k, v in metrics.items()}, float(tolerance), relative, tuple(lower))
