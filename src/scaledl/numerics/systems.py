"""Judging number systems by accuracy, dynamic range and cost (chapter 07).

A number system is a set of representable values. This module measures, for a format from the registry or
any sorted set of values (a k-means codebook: the "symbolic" system):

* accuracy: the relative error ``|q(x) - x| / |x|`` of rounding to nearest. Its worst case over a range is
  exact, not sampled: between neighbours ``g < h`` the error peaks at the midpoint, where it is
  ``(h - g) / (h + g)`` (:func:`worst_relative_error`). The mean is taken over ``x`` spread log-uniformly (every
  factor of two equally likely), the usual model for weights and activations spanning several binades.
* dynamic range: ``log2(max / min)`` in binades, for all nonzero values or for the normal ones only.
* cost: bits moved per value, and a first-order multiplier cost. An array multiplier of two ``n``-bit
  significands has about ``n**2`` full adders, so a float multiplier grows with (mantissa bits + 1) squared
  plus a small exponent adder, an integer one with its width squared, and a logarithmic "multiplier" is just
  an adder of its exponent bits (its cost moves to addition instead; chapter 08).

>>> worst_relative_error("int8", lo=1.0)   # between 1 and 2: error 0.5 at 1.5, i.e. 1/3
0.3333333333333333
>>> round(worst_relative_error("e4m3", lo=get_format("e4m3").min_normal), 4)  # 1/17 at 1 + 1/16
0.0588
"""

from __future__ import annotations

import numpy as np

from scaledl.numerics.formats import FloatFormat, IntFormat, LogFormat, get_format
from scaledl.numerics.quantize import quantize, round_to_values

__all__ = ["grid_of", "relative_error", "worst_relative_error", "mean_relative_error", "dynamic_range_binades",
           "multiplier_cost", "kmeans_codebook", "compare", "error_envelope"]


def grid_of(system) -> np.ndarray:
    """The non-negative representable magnitudes of a format (name or spec) or of a codebook array."""
    if isinstance(system, np.ndarray) or isinstance(system, (list, tuple)):
        g = np.unique(np.abs(np.asarray(system, dtype=np.float64)))
        if g.size < 2:
            raise ValueError(f"a codebook needs at least 2 distinct magnitudes, got {g!r}")
        return g
    return get_format(system).magnitudes()


def _round(x, system) -> np.ndarray:
    if isinstance(system, (np.ndarray, list, tuple)):
        g = grid_of(system)
        return np.copysign(round_to_values(np.abs(x), g), x)
    return quantize(x, system).astype(np.float64)


def relative_error(x, system) -> np.ndarray:
    """``|q(x) - x| / |x|`` for nonzero ``x`` rounded to nearest in ``system`` (format or codebook)."""
    x = np.asarray(x, dtype=np.float64)
    if np.any(x == 0):
        raise ValueError("x must be nonzero: the relative error of 0 is undefined")
    return np.abs(_round(x, system) - x) / np.abs(x)


def _range(g, lo, hi):
    pos = g[g > 0]
    lo = pos[0] if lo is None else float(lo)
    hi = pos[-1] if hi is None else float(hi)
    if not (0 < lo < hi):
        raise ValueError(f"need 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    return lo, hi


def worst_relative_error(system, lo=None, hi=None) -> float:
    """The largest relative rounding error for ``x`` in ``[lo, hi]`` (default: smallest to largest nonzero value).

    Exact: for representable neighbours ``g < h`` the error is largest at the midpoint, ``(h - g) / (h + g)``;
    only the pairs whose midpoint falls in ``[lo, hi]`` count (and the ends of the range themselves).
    """
    g = grid_of(system)
    lo, hi = _range(g, lo, hi)
    a, b = g[:-1], g[1:]
    mid = (a + b) / 2
    inside = (mid >= lo) & (mid <= hi) & (a > 0)
    worst = float(np.max((b - a)[inside] / (b + a)[inside])) if np.any(inside) else 0.0
    ends = relative_error(np.array([lo, hi]), system)
    return max(worst, float(ends.max()))


def mean_relative_error(system, lo=None, hi=None, n: int = 100_001) -> float:
    """Mean relative error for ``x`` log-uniform on ``[lo, hi]`` (``n`` evenly spaced points in ``log2 x``)."""
    g = grid_of(system)
    lo, hi = _range(g, lo, hi)
    x = np.geomspace(lo, hi, n)
    return float(relative_error(x, system).mean())


def dynamic_range_binades(system, normal_only: bool = False) -> float:
    """``log2(max / min)`` over nonzero values (or over normal values: floats lose precision below min_normal)."""
    if isinstance(system, (np.ndarray, list, tuple)):
        g = grid_of(system)
        pos = g[g > 0]
        return float(np.log2(pos[-1] / pos[0]))
    spec = get_format(system)
    low = spec.min_normal if normal_only else spec.min_positive
    return float(np.log2(spec.max_value / low))


def multiplier_cost(system) -> float:
    """First-order multiplier area in full adders: n**2 for n-bit significands, an adder for log formats.

    >>> multiplier_cost("e4m3"), multiplier_cost("int8"), multiplier_cost("lns4.3"), multiplier_cost("fp16")
    (20, 64, 7, 126)
    """
    spec = get_format(system)
    if isinstance(spec, FloatFormat):
        return (spec.man_bits + 1) ** 2 + spec.exp_bits  # significand array + exponent adder
    if isinstance(spec, IntFormat):
        return spec.bits ** 2
    if isinstance(spec, LogFormat):
        return spec.int_bits + spec.frac_bits  # multiplying is adding the exponents
    raise TypeError(f"no cost model for {spec!r}")


def kmeans_codebook(x, n_values: int, *, iters: int = 100, seed: int = 0) -> np.ndarray:
    """A "symbolic" number system: the ``n_values`` centres of 1-D k-means (Lloyd) on ``x``, sorted.

    Started where high-resolution theory puts the optimum (Panter and Dite, 1951: the density of centres
    goes as the data's density to the power 1/3, estimated from a histogram), so Lloyd's iteration has little
    left to do; started from plain quantiles instead, it crowds the centres into the peak of a heavy-tailed
    distribution and converges very slowly. Deterministic (``seed`` only breaks ties among equal starts).
    Optimal in mean squared error for its data among codebooks of that size (to a local optimum); the price is
    a table lookup to decode, and arithmetic on the decoded values.
    """
    x = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if not isinstance(n_values, (int, np.integer)) or n_values < 2:
        raise ValueError(f"n_values must be an int >= 2, got {n_values!r}")
    if x.size < n_values:
        raise ValueError(f"x has {x.size} values, fewer than n_values={n_values}")
    counts, edges = np.histogram(x, bins=int(np.clip(x.size // 20, n_values, 4096)))
    cdf = np.concatenate([[0.0], np.cumsum(np.cbrt(counts.astype(np.float64)))])  # equal-width bins
    c = np.interp((np.arange(n_values) + 0.5) / n_values * cdf[-1], cdf, edges) if cdf[-1] > 0 else \
        np.full(n_values, x[0])
    c = c + np.random.default_rng(seed).normal(0, 1e-12, c.size) * (np.ptp(x) or 1.0)
    for _ in range(iters):
        c = np.sort(c)
        edges = (c[1:] + c[:-1]) / 2
        idx = np.searchsorted(edges, x)
        sums = np.bincount(idx, weights=x, minlength=n_values)
        counts = np.bincount(idx, minlength=n_values)
        new = np.where(counts > 0, sums / np.maximum(counts, 1), c)
        if np.allclose(new, c, rtol=0, atol=1e-12 * (np.ptp(x) or 1.0)):
            c = new
            break
        c = new
    return np.unique(np.sort(c))


def compare(systems, lo=None, hi=None) -> list[dict]:
    """One row per format: bits, max, dynamic range, worst and mean relative error over its nonzero range
    (or ``[lo, hi]`` if given) and over its normal range, and multiplier cost."""
    rows = []
    for name in systems:
        spec = get_format(name)
        rows.append({
            "format": spec.name, "bits": spec.bits, "max": spec.max_value,
            "range_binades": dynamic_range_binades(spec), "normal_range_binades": dynamic_range_binades(spec, True),
            "worst_rel_err": worst_relative_error(spec, lo, hi),
            "worst_rel_err_normal": worst_relative_error(spec, spec.min_normal if lo is None else lo, hi),
            "mean_rel_err": mean_relative_error(spec, lo, hi),
            "multiplier_cost": multiplier_cost(spec),
        })
    return rows


def error_envelope(system, lo: float, hi: float, *, scale: float = 1.0, bins_per_binade: int = 8,
                   points_per_bin: int = 64):
    """The worst relative error of rounding to nearest in each 1/``bins_per_binade`` of a binade over ``[lo, hi]``.

    Plotting every tooth of the error curve of an 8-bit format over 18 binades gives a solid block of ink; the
    envelope keeps what matters (the sawtooth of a float, the flat line of a log format).

    Returns:
        ``(log2_centres, worst)``: float64 arrays; ``worst`` is a fraction (0.05 = 5 %).
    """
    if not (0 < lo < hi):
        raise ValueError(f"need 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    edges = np.arange(np.log2(lo), np.log2(hi), 1.0 / bins_per_binade)
    if edges.size < 2:
        raise ValueError(f"[lo, hi] = [{lo!r}, {hi!r}] is narrower than one bin")
    t = np.linspace(0, 1, points_per_bin, endpoint=False)
    x = np.exp2(edges[:-1, None] + t[None, :] / bins_per_binade)
    err = np.abs(quantize(x, get_format(system), scale=scale).astype(np.float64) - x) / x
    return edges[:-1] + 0.5 / bins_per_binade, err.max(axis=1)
