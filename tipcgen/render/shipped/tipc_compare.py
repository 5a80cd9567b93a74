"""Outputs against expected outputs, the one comparison of tipcgen: every result check of test_tipc/
(check_inference.py between inference configurations, compare_results.py against ground truth) and,
through ``abs_diff``, tipcgen's own `align compare`/`report` and `align trace`. Every name present, then
shapes and dtypes, then values. ``abs_diff`` is |a - b| in a type that cannot wrap: numpy subtracts two
int8 arrays in int8 (100 - (-100) wraps to -56) and two uint64 arrays far apart "differ" by a small
number; two float16 arrays of finite values can differ by inf. Here:

- integers (and bools) of any width: the exact distance, computed on magnitudes as uint64 (never
  wraps: |a - b| < 2**64 for any two 64-bit integers of one sign); returned as int64 where every
  distance fits (so a diff log prints integers as reprod_log does), else as float64, never 0 for two
  different values (two int64 above 2**53 one apart differ by 1, not by 0 as in float64);
- floats: in their common type, as reprod_log computes (the same printed digits), and again in
  float64 wherever that overflowed from finite values;
- NaN and inf are never hidden: a NaN or inf in an input stays one in the difference, and a check
  fails an output holding NaN or Inf on either side before it compares values.

Needs numpy only; imports nothing from tipcgen (it is copied into test_tipc/).
"""
import numpy as np

_INT64_MAX = np.uint64(np.iinfo(np.int64).max)

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
    if want.dtype.kind == "c":
        diff = np.abs(got.astype(np.complex128) - want.astype(np.complex128))
    elif want.dtype.kind in "biu":
        diff = abs_diff(want, got).astype(np.float64)
    else:
        diff = abs_diff(want.astype(np.float64), got.astype(np.float64))
    scale = np.abs(want.astype(np.complex128 if want.dtype.kind == "c" else np.float64))
    rel_diff = diff / np.maximum(scale, 1e-12)
    outcome.max_abs[name] = max(outcome.max_abs.get(name, 0.0), float(diff.max(initial=0.0)))
    outcome.max_rel[name] = max(outcome.max_rel.get(name, 0.0), float(rel_diff.max(initial=0.0)))
    bad = diff > atol + rtol * scale
    if want.dtype.kind in "biu":
        bad |= (diff > 0) & (atol + rtol * scale < 1)  # an integer off by one is off, whatever float64 rounds to
    if np.any(bad):
        outcome.fail(f"{where}: {label(name)} differs by up to {float(diff.max()):.3e} "
                     f"({int(bad.sum())} of {bad.size} values beyond atol {atol:g} + rtol {rtol:g})")


def compare_outputs(expected, actual, atol, rtol, where, outcome):
    """Every output of ``expected`` (a mapping name -> values) against ``actual``'s of the same name."""
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            outcome.fail(f"{where}: {label(name)} is missing")
            continue
        compare_output(want, got, atol, rtol, where, name, outcome)


def abs_diff(a, b):
    """Elementwise |a - b| of two arrays of the same shape, without wrapping or overflowing (see above)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        return _int_distance(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        if diff.dtype.kind == "f":
            overflowed = ~np.isfinite(diff) & np.isfinite(a) & np.isfinite(b)
            if overflowed.any():
                return np.abs(a.astype(np.float64) - b.astype(np.float64))
    return diff


def _magnitude(x):
    """(negative?, |x| as uint64), exact for every integer type (the minimum int64 included)."""
    if x.dtype.kind in "bu":
        return np.zeros(x.shape, dtype=bool), x.astype(np.uint64)
    wide = x.astype(np.int64)
    negative = wide < 0
    with np.errstate(over="ignore"):
        flipped = (-(wide + 1)).astype(np.uint64) + np.uint64(1)  # -(x+1) never overflows
    return negative, np.where(negative, flipped, wide.astype(np.uint64))


def _int_distance(a, b):
    a_neg, a_mag = _magnitude(a)
    b_neg, b_mag = _magnitude(b)
    same = a_neg == b_neg
    with np.errstate(over="ignore"):
        near = np.where(a_mag >= b_mag, a_mag - b_mag, b_mag - a_mag)  # same sign: exact in uint64
    if same.all():
        return near.astype(np.int64) if not near.size or near.max() <= _INT64_MAX else near.astype(np.float64)
    far = np.where(same, near.astype(np.float64), a_mag.astype(np.float64) + b_mag.astype(np.float64))
    if far.max() < 2.0 ** 62:  # every distance fits: exact again, in int64 (a_mag + b_mag cannot wrap)
        return np.where(same, near, a_mag + b_mag).astype(np.int64)
    return far  # opposite signs may pass 2**64: float64, never 0 for two different values
