"""Outputs against expected outputs, the one way every result check of test_tipc/ compares them
(check_inference.py between inference configurations, compare_results.py against ground truth): every
name present, then shapes and dtypes, then values. Differences are taken in float64 (complex128 for
complex outputs), never in the arrays' own type, so two integer arrays far apart cannot wrap round to
a small difference; NaN or Inf on either side fails. Needs numpy only.
"""
import numpy as np

MARKER = ":::TIPC_CHECK "  # the structured result line a check prints last; tipcgen reads it from the log


def label(name):
    """How a message names an output: 'output 0 (fetch_name_0)' for a program's positional name."""
    if name.startswith("fetch_name_") and name[len("fetch_name_"):].isdigit():
        return f"output {name[len('fetch_name_'):]} ({name})"
    return f"output '{name}'"


class Outcome:
    """Per output: the worst differences seen (over every comparison made with it) and every failure."""

    def __init__(self, max_abs=None, max_rel=None):
        self.max_abs = {} if max_abs is None else max_abs
        self.max_rel = {} if max_rel is None else max_rel
        self.failures = []

    def fail(self, message):
        self.failures.append(message)


def _array(value):
    try:
        array = np.asarray(value)
    except ValueError:  # numpy 2 refuses a ragged list outright
        array = np.empty(0, dtype=object)
    if array.dtype == object:
        raise ValueError("ragged or mixed values")
    return array


def _wide(array):
    """The array in a type its differences cannot wrap in."""
    return array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)


def compare_output(want, got, atol, rtol, where, name, outcome):
    """One output: shape, dtype kind, finiteness, then |got - want| <= atol + rtol * |want| element-wise."""
    try:
        want, got = _array(want), _array(got)
    except ValueError as exc:
        outcome.fail(f"{where}: {label(name)}: {exc}")
        return
    if got.shape != want.shape:
        outcome.fail(f"{where}: {label(name)} has shape {got.shape}, expected {want.shape}")
        return
    if got.dtype.kind != want.dtype.kind:
        outcome.fail(f"{where}: {label(name)} has dtype {got.dtype}, expected {want.dtype}")
        return
    for side, array in (("expected", want), ("actual", got)):
        if array.dtype.kind in "fc" and not np.all(np.isfinite(array)):
            outcome.fail(f"{where}: {label(name)} holds NaN or Inf" + (" in the expected values" if side == "expected" else ""))
            return
    want_w, got_w = _wide(want), _wide(got)
    abs_diff = np.abs(got_w - want_w)
    scale = np.abs(want_w)
    rel_diff = abs_diff / np.maximum(scale, 1e-12)
    outcome.max_abs[name] = max(outcome.max_abs.get(name, 0.0), float(abs_diff.max(initial=0.0)))
    outcome.max_rel[name] = max(outcome.max_rel.get(name, 0.0), float(rel_diff.max(initial=0.0)))
    bad = abs_diff > atol + rtol * scale
    if np.any(bad):
        outcome.fail(f"{where}: {label(name)} differs by up to {float(abs_diff.max()):.3e} "
                     f"({int(bad.sum())} of {bad.size} values beyond atol {atol:g} + rtol {rtol:g})")


def compare_outputs(expected, actual, atol, rtol, where, outcome):
    """Every output of ``expected`` (a mapping name -> values) against ``actual``'s of the same name."""
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            outcome.fail(f"{where}: {label(name)} is missing")
            continue
        compare_output(want, got, atol, rtol, where, name, outcome)
