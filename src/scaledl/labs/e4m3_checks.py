"""Lab 03 checks: an E4M3 quantizer against ``ml_dtypes`` and the library, bit for bit, naming the classic bug.

:func:`check` is the lab's own check (it prints ``Yours`` beside ``Spec`` for the first values that differ and
raises); :func:`rounding_hints` and :func:`saturation_hint` decide which classic bug explains the wrong values.
The grader's judge of Task 1.1 (:mod:`scaledl.course.tasks.lab03`) calls the same two functions on its own
inputs, so the notebook and the feedback page name the same bug, in the words of :mod:`scaledl.labs.hints`:

======================================  ==================================================================
what the wrong values look like          what it most likely means
======================================  ==================================================================
subnormals all 0                         flushed to zero: clamp the exponent at -6
subnormals all +-2^-6                    clamped to the smallest normal
subnormals within half a 2^-9 of x,      no exponent clamp: 3 mantissa bits kept below 2^-6
off the 2^-9 grid
every wrong value is the lower           truncation instead of rounding
neighbour
wrong values only at ties, away from     floor(v + 0.5): half away from zero instead of half to even
(or toward) zero
out-of-range values beyond 448, inf,     not saturated to +-448 (or the sign dropped)
NaN, or +448 for a negative x
======================================  ==================================================================

>>> import numpy as np
>>> x = np.float32([1.0625, 0.001, 3.0])            # a tie, a subnormal, an exact value
>>> rounding_hints(x, np.float32([1.125, 0.0, 3.0]), np.float32([1.0, 0.0009765625, 3.0]))[0][:42]
'values below the smallest normal 0.015625 '
"""

from __future__ import annotations

import sys

import numpy as np

from scaledl.labs.hints import E4M3_MAX, E4M3_MIN_NORMAL, E4M3_MIN_SUBNORMAL, hint

__all__ = ["check", "rounding_hints", "saturation_hint", "e4m3_grid"]


def e4m3_grid() -> np.ndarray:
    """Every finite E4M3 magnitude, ascending, as float64."""
    import ml_dtypes

    grid = np.unique(np.abs(np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)))
    return grid[np.isfinite(grid)]


def rounding_hints(x, got, want) -> list[str]:
    """The classic E4M3 rounding bugs that explain the wrong outputs ``got[i] != want[i]`` for in-range ``x``.

    Each is named only when it accounts for every wrong output of its kind: subnormals flushed to zero or
    clamped to the smallest normal, subnormals kept with more precision than the format has, ties rounded away
    from zero (or toward it) instead of to the even neighbour, and truncation. None for the right answer.
    """
    x = np.asarray(x, np.float64)
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~((got == want) & (np.signbit(got) == np.signbit(want)))
    if not bad.any():
        return []
    a = np.abs(x)
    grid = e4m3_grid()
    hi_i = np.clip(np.searchsorted(grid, a, side="left"), 0, grid.size - 1)
    lo_i = np.clip(np.searchsorted(grid, a, side="right") - 1, 0, grid.size - 1)
    lo, hi = grid[lo_i], grid[hi_i]                        # the neighbours of |x| on the grid
    toward, away = np.copysign(lo, x), np.copysign(hi, x)
    tie = (hi > lo) & (a - lo == hi - a)
    sub = (a > 0) & (a < E4M3_MIN_NORMAL)
    hints = []

    b_sub = bad & sub
    if b_sub.any():
        g = got[b_sub]
        with np.errstate(invalid="ignore"):
            if np.all(g == 0):
                hints.append(hint("lab03", "subnormals_flushed"))
            elif np.all(np.abs(g) == E4M3_MIN_NORMAL):
                hints.append(hint("lab03", "subnormals_clamped"))
            elif (np.all(np.abs(g - x[b_sub]) < E4M3_MIN_SUBNORMAL / 2)  # nearer x than the format can be
                  and np.any(g / E4M3_MIN_SUBNORMAL != np.rint(g / E4M3_MIN_SUBNORMAL))):
                hints.append(hint("lab03", "subnormals_too_precise"))
    b_norm = bad & ~sub
    b_tie, b_other = b_norm & tie, b_norm & ~tie
    if b_other.any() and np.all(got[b_other] == toward[b_other]):
        hints.append(hint("lab03", "truncated"))
    elif b_tie.any() and np.all(got[b_tie] == away[b_tie]):
        hints.append(hint("lab03", "ties_away"))
    elif b_tie.any() and np.all(got[b_tie] == toward[b_tie]):
        hints.append(hint("lab03", "ties_toward"))
    return hints


def saturation_hint(x, got) -> str:
    """Why ``got``, the results for out-of-range ``x`` (|x| > 448, infinities included), are not +-448 with the
    sign of ``x``, when a classic reason explains it; "" otherwise."""
    x, got = np.asarray(x, np.float64), np.asarray(got, np.float64)
    spec = np.copysign(E4M3_MAX, x)
    with np.errstate(invalid="ignore"):
        wrong = ~(got == spec)
        if not wrong.any():
            return ""
        g = got[wrong]
        if np.any(np.isfinite(g) & (np.abs(g) > E4M3_MAX)):
            return hint("lab03", "saturate_beyond")
    if np.any(np.isinf(g)):
        return hint("lab03", "saturate_inf")
    if np.any(np.isnan(g)):
        return hint("lab03", "saturate_nan")
    if np.all(np.abs(g) == E4M3_MAX) and np.any(np.signbit(g) != np.signbit(x[wrong])):
        return hint("lab03", "saturate_sign")
    return ""


def _same_bits(a, b):
    """Equal float32 bit patterns, or both NaN."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def _hints(x, yours, spec) -> list[str]:
    """The hints for an E4M3 rounding (float results): rounding in range, saturation beyond it."""
    x = np.asarray(x, np.float64).ravel()
    yours, spec = np.asarray(yours, np.float64).ravel(), np.asarray(spec, np.float64).ravel()
    with np.errstate(invalid="ignore"):
        inside = np.isfinite(x) & (np.abs(x) <= E4M3_MAX)
        beyond = ~np.isnan(x) & ~inside
    hints = rounding_hints(x[inside], yours[inside], spec[inside]) if inside.any() else []
    if beyond.any():
        hints.append(saturation_hint(x[beyond], yours[beyond]))
    return [h for h in hints if h]


def check(name, x, yours, spec, show=6, report=sys.stdout):
    """Compare element by element (float results bit for bit, NaN equal to NaN); print the first mismatches as
    Yours/Spec and the classic bug they point to (``Hint: ...``, for rounded values), and raise if any differ.

    Raises:
        AssertionError: ``name``, how many values differ (after the lines printed to ``report``).
    """
    yours, spec = np.asarray(yours), np.asarray(spec)
    if yours.shape != spec.shape:
        raise AssertionError(f"{name}: Yours has shape {yours.shape}, Spec has shape {spec.shape}")
    ok = _same_bits(yours, spec) if spec.dtype.kind == "f" else (yours == spec)
    if ok.all():
        print(f"{name}: all {ok.size} values match", file=report)
        return
    x = np.asarray(x)
    bad = np.flatnonzero(~ok)
    for i in bad[:show]:
        print(f"  x = {x.flat[i]!r:>16}   Yours: {yours.flat[i]!r:>14}   Spec: {spec.flat[i]!r}", file=report)
    if spec.dtype.kind == "f" and yours.dtype.kind == "f" and x.shape == spec.shape:
        for h in _hints(x, yours, spec):
            print(f"Hint: {h}", file=report)
    raise AssertionError(f"{name}: {bad.size} of {ok.size} values differ")
