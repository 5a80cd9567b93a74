"""|a - b| in a type that cannot wrap: the one difference every numeric check of tipcgen computes.

``align compare``/``report`` and ``align trace`` call ``abs_diff``. numpy subtracts two int8 arrays in
int8, so 100 - (-100) wraps to -56, and two uint64 arrays far apart "differ" by a small number; two
float16 arrays of finite values can differ by inf. Here:

- integers (and bools) of any width: the exact distance, computed on magnitudes as uint64 (never
  wraps: |a - b| < 2**64 for any two 64-bit integers of one sign); returned as int64 where every
  distance fits (so the diff log prints integers as reprod_log does), else as float64;
- floats: in their common type, as reprod_log computes (the same printed digits), and again in
  float64 wherever that overflowed from finite values;
- NaN and inf are never hidden: a NaN or inf in an input stays one in the difference (callers name
  them as problems first), and a NaN never compares below a threshold.
"""
from __future__ import annotations

import numpy as np

_INT64_MAX = np.uint64(np.iinfo(np.int64).max)


def abs_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
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


def _magnitude(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(negative?, |x| as uint64), exact for every integer type (the minimum int64 included)."""
    if x.dtype.kind in "bu":
        return np.zeros(x.shape, dtype=bool), x.astype(np.uint64)
    wide = x.astype(np.int64)
    negative = wide < 0
    with np.errstate(over="ignore"):
        flipped = (-(wide + 1)).astype(np.uint64) + np.uint64(1)  # -(x+1) never overflows
    return negative, np.where(negative, flipped, wide.astype(np.uint64))


def _int_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
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
