"""Logarithmic vs floating-point numbers: representation error and dot-product error, measured side by side.

Chapter 08 uses these to check the claims of Dally's lecture "Trends in Deep Learning Hardware" (2023) ("Log
4.3 ... 50 % higher worst-case accuracy than FP8 E4M3 with the same dynamic range") and to compare the binned
logarithmic dot product with FP32 and FP8 ones. ml_dtypes is the reference for FP8;
:mod:`scaledl.numerics.logarithmic` for the logarithmic side. Log 4.3 is measured under both of its rounding
rules (nearest value, as E4M3 rounds; nearest exponent, as a log2-and-round encoder does), each by name.

>>> t = worst_case_errors()
>>> [round(t[k]["vs_true"], 4) for k in ("lns4.3 nearest value", "lns4.3 nearest exponent", "e4m3")]
[0.0433, 0.0443, 0.0588]
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from scaledl.numerics.formats import get_format
from scaledl.numerics.logarithmic import (LOG_4_3, NEAREST_EXPONENT, NEAREST_VALUE, disagreement_fraction,
                                          lns_encode, lns_quantize)
from scaledl.numerics.logarithmic_sum import binned_dot, mitchell_dot

__all__ = ["round_float_mantissa", "worst_case_errors", "compare_log_roundings", "error_by_octave", "OCTAVE_FORMATS",
           "dot_error_study",
           "DOT_METHODS"]


def round_float_mantissa(x, mantissa_bits: int) -> np.ndarray:
    """Round to a float with ``mantissa_bits`` stored mantissa bits (unbounded exponent, ties to even).

    >>> round_float_mantissa(np.array([1.0625, 1.1875]), 3).tolist()   # E4M3's grid near 1: step 1/8
    [1.0, 1.25]
    """
    if not isinstance(mantissa_bits, (int, np.integer)) or not 0 <= mantissa_bits <= 52:
        raise ValueError(f"mantissa_bits must be an int in [0, 52], got {mantissa_bits!r}")
    m, e = np.frexp(np.asarray(x, dtype=np.float64))  # m in [0.5, 1): 1 + mantissa_bits significant bits
    scale = float(1 << (mantissa_bits + 1))
    return np.ldexp(np.rint(m * scale) / scale, e)


def _worst(q, x):
    err = np.abs(q - x)
    return {"vs_true": float(np.max(err / x)), "vs_rounded": float(np.max(err / q))}


def worst_case_errors(samples: int = 1 << 20) -> dict[str, dict[str, float]]:
    """Worst relative rounding error of Log 4.3 and of E4M3 (normal range), measured on a dense grid.

    Both patterns repeat every factor of two, so the binade [1, 2) is enough. Two yardsticks: the error over
    the true value ``|q - x| / x`` and over the rounded value ``|q - x| / q``; they differ at the 1 % level,
    which matters for a "50 %" claim. Each entry also gives the precision in bits, ``-log2(vs_true)``.
    Keys: ``"lns4.3 nearest value"``, ``"lns4.3 nearest exponent"`` (the two rounding rules) and ``"e4m3"``.
    The midpoints 1 + 1/16 (E4M3) and (1 + 2**(1/8))/2 (Log 4.3) are added to the grid, so the worst cases
    are hit exactly rather than approached.
    """
    r = 2.0 ** (1 / LOG_4_3.steps_per_octave)
    x = np.concatenate([np.linspace(1.0, 2.0, samples, endpoint=False), [1 + 1 / 16, (1 + r) / 2]])
    lns = lambda rule: lns_quantize(x, int_bits=LOG_4_3.int_bits, frac_bits=LOG_4_3.frac_bits,  # noqa: E731
                                    rounding=rule)
    out = {
        "lns4.3 nearest value": _worst(lns(NEAREST_VALUE), x),
        "lns4.3 nearest exponent": _worst(lns(NEAREST_EXPONENT), x),
        "e4m3": _worst(x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64), x),
    }
    for v in out.values():
        v["bits"] = -math.log2(v["vs_true"])
    return out


def _int8_symmetric(x, top):
    step = top / 127.0  # int8 scaled so that 127 codes reach the format's top; nothing clips
    return np.clip(np.rint(x / step), -127, 127) * step


# each entry: (largest value, rounding function) for positive inputs; all three are 8-bit codes
OCTAVE_FORMATS = {
    "INT8 (scaled)": (448.0, lambda x: _int8_symmetric(x, 448.0)),
    "FP8 E4M3": (448.0, lambda x: x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64)),
    "Log 4.3": (LOG_4_3.max_value, lambda x: lns_quantize(x, int_bits=LOG_4_3.int_bits,
                                                          frac_bits=LOG_4_3.frac_bits, rounding=NEAREST_VALUE)),
}  # every format rounds to its nearest value here, so the three are compared under one rule


def compare_log_roundings(fmt="lns4.3", samples_per_step: int = 4096) -> dict:
    """The two rounding rules of a log format, compared over its whole range and beyond both ends.

    Inputs: ``samples_per_step`` log-spaced values in every step of the grid, from 4x below the smallest
    magnitude to 4x above the largest, plus every exact midpoint (geometric and arithmetic) of every pair of
    neighbours. Returns a dict with ``inputs``; ``differ`` (inputs on which the rules give different values);
    ``fraction_in_range`` (share of the log-uniform inputs strictly inside the range that differ) beside
    ``predicted`` (:func:`scaledl.numerics.logarithmic.disagreement_fraction`); ``in_bands`` (every
    disagreement lies between a geometric and an arithmetic midpoint, or in the flush-to-zero band at the
    bottom); ``worst`` (each rule's largest ``|q - x| / x`` inside the range); ``same_grid`` (every value
    either rule returns is one of the format's values).

    >>> c = compare_log_roundings()
    >>> abs(c["fraction_in_range"] - c["predicted"]) < 1e-3, c["in_bands"], c["same_grid"]
    (True, True, True)
    """
    spec = get_format(fmt)
    if spec.kind != "log":
        raise ValueError(f"fmt must be a logarithmic format (lnsI.F), got {spec.name!r}")
    if not isinstance(samples_per_step, (int, np.integer)) or samples_per_step < 16:
        raise ValueError(f"samples_per_step must be an int >= 16, got {samples_per_step!r}")
    S = spec.steps_per_octave
    lo, hi = spec.code_min - 2 * S, spec.code_max + 2 * S
    k = np.arange(lo, hi)
    t = np.arange(samples_per_step) / samples_per_step
    sweep = np.exp2((k[:, None] + t[None, :]) / S).ravel()
    g, h = np.exp2(k / S), np.exp2((k + 1) / S)
    x = np.concatenate([sweep, np.sqrt(g * h), (g + h) / 2])
    rnd = lambda rule: lns_quantize(x, int_bits=spec.int_bits, frac_bits=spec.frac_bits, rounding=rule)  # noqa: E731
    qv, qe = rnd(NEAREST_VALUE), rnd(NEAREST_EXPONENT)
    differ = qv != qe
    inside = (x > spec.min_positive) & (x < spec.max_value)
    n_sweep = sweep.size
    # the band of each disagreement: between the geometric and arithmetic midpoints of its two neighbours
    kk = np.floor(np.log2(x) * S)
    gm, am = np.exp2((kk + 0.5) / S), (np.exp2(kk / S) + np.exp2((kk + 1) / S)) / 2
    bottom = x < spec.min_positive  # below the smallest value: each rule flushes to 0 from its own threshold
    between = (x >= gm * (1 - 1e-12)) & (x <= am * (1 + 1e-12))
    in_bands = bool(np.all((bottom | between)[differ]))
    values = spec.magnitudes()
    return {
        "inputs": int(x.size),
        "differ": int(differ.sum()),
        "fraction_in_range": float(differ[:n_sweep][inside[:n_sweep]].mean()),
        "predicted": disagreement_fraction(spec.frac_bits),
        "in_bands": in_bands,
        "worst": {rule: float(np.max(np.abs(q[inside] - x[inside]) / x[inside]))
                  for rule, q in ((NEAREST_VALUE, qv), (NEAREST_EXPONENT, qe))},
        "same_grid": bool(np.all(np.isin(qv, values)) and np.all(np.isin(qe, values))),
    }


def error_by_octave(octaves: int = 20, samples_per_octave: int = 4096) -> dict[str, np.ndarray]:
    """Worst relative rounding error ``|q - x| / x`` of each 8-bit format, octave by octave below its maximum.

    Octave ``k`` holds the values in ``[top * 2**-(k+1), top * 2**-k)`` where ``top`` is the format's largest
    value, so the formats are compared over the same span of their own windows (a scale factor can slide any
    window). A value that flushes to zero has error 1 (100 %). The midpoints between the values the samples
    round to are added, so each octave's worst case is hit exactly rather than approached.

    Returns:
        ``{format name: array of length octaves}``, names as in :data:`OCTAVE_FORMATS`.

    >>> e = error_by_octave(octaves=16, samples_per_octave=512)
    >>> round(float(e["Log 4.3"][10]), 4), round(float(e["FP8 E4M3"][15]), 4)  # E4M3 is subnormal there
    (0.0433, 0.1429)
    """
    if not isinstance(octaves, (int, np.integer)) or octaves < 1:
        raise ValueError(f"octaves must be a positive int, got {octaves!r}")
    t = np.arange(samples_per_octave) / samples_per_octave  # position inside an octave, log-spaced values
    out = {}
    for name, (top, rnd) in OCTAVE_FORMATS.items():
        worst = np.empty(octaves)
        for k in range(octaves):
            x = top * np.exp2(-(k + 1) + t)
            q = np.unique(rnd(x))
            mids = (q[:-1] + q[1:]) / 2  # where rounding to the nearest value errs most: add them exactly
            x = np.concatenate([x, mids[(mids >= x[0]) & (mids < top * 2.0 ** -k)]])
            worst[k] = np.max(np.abs(rnd(x) - x) / x)
        out[name] = worst
    return out


def _fp32_sequential(p) -> float:
    """Sum float32 products one after another in float32: a single FP32 accumulator, as in a simple MAC."""
    return float(np.cumsum(p.astype(np.float32), dtype=np.float32)[-1]) if p.size else 0.0


def _fp16_sequential(p) -> float:
    """As :func:`_fp32_sequential` with an FP16 accumulator (products of two E4M3 values are exact in FP16
    only when no more than 8 significant bits result, so each product is rounded to FP16 first, too)."""
    return float(np.cumsum(p.astype(np.float16), dtype=np.float16)[-1]) if p.size else 0.0


def _e4m3(x):
    return x.astype(ml_dtypes.float8_e4m3fn).astype(np.float64)


DOT_METHODS = {
    "FP32 inputs, FP32 accumulator": "fp32",
    "E4M3 inputs, FP32 accumulator": "e4m3_fp32",
    "E4M3 inputs, FP16 accumulator": "e4m3_fp16",
    "Log 4.3 inputs, binned (exact) sum": "lns_binned",
    "Log 4.3 inputs, binned sum, result in Log 4.3": "lns_binned_lns",
    "Log 4.3 inputs, Mitchell per product": "lns_mitchell",
}


def dot_error_study(n: int, trials: int, *, seed: int = 0, dist: str = "normal") -> dict[str, np.ndarray]:
    """Error of each dot-product method in :data:`DOT_METHODS` against the float64 dot of the unrounded data.

    Each trial draws ``a, b`` of length ``n``; the error is ``|y - a.b| / sum|a_i b_i|`` (relative to the sum
    of magnitudes, the scale of accumulation error bounds, and finite when ``a.b`` is near zero). No scale
    factors: N(0, 1) and Laplace(0, 1) data lie well inside both 8-bit formats' ranges.

    Returns:
        method name -> array of ``trials`` relative errors.
    Raises:
        ValueError: ``n`` or ``trials`` below 1, or an unknown ``dist``.
    """
    if n < 1 or trials < 1:
        raise ValueError(f"n and trials must be >= 1, got n={n!r}, trials={trials!r}")
    if dist not in ("normal", "laplace"):
        raise ValueError(f"dist must be 'normal' or 'laplace', got {dist!r}")
    rng = np.random.default_rng(seed)
    F, I = LOG_4_3.frac_bits, LOG_4_3.int_bits
    out = {name: np.empty(trials) for name in DOT_METHODS}
    for t in range(trials):
        draw = rng.standard_normal if dist == "normal" else rng.laplace
        a, b = draw(size=n), draw(size=n)
        exact = math.fsum((a * b).tolist())
        norm = float(np.sum(np.abs(a * b)))
        sa, ca = lns_encode(a, int_bits=I, frac_bits=F)
        sb, cb = lns_encode(b, int_bits=I, frac_bits=F)
        acc = binned_dot(sa, ca, sb, cb, frac_bits=F)
        # A product of two Log I.F codes needs one more integer bit; the sum may need a few more.
        s, c = acc.to_lns(int_bits=I + 4)
        y = {
            "fp32": _fp32_sequential(a.astype(np.float32) * b.astype(np.float32)),
            "e4m3_fp32": _fp32_sequential((_e4m3(a) * _e4m3(b)).astype(np.float32)),
            "e4m3_fp16": _fp16_sequential(_e4m3(a) * _e4m3(b)),
            "lns_binned": acc.value(),
            "lns_binned_lns": s * 2.0 ** (c / (1 << F)),
            "lns_mitchell": mitchell_dot(sa, ca, sb, cb, frac_bits=F),
        }
        for name, key in DOT_METHODS.items():
            out[name][t] = abs(y[key] - exact) / norm
    return out
