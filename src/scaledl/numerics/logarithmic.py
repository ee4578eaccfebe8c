"""Logarithmic numbers: a value is a sign and a fixed-point base-2 exponent, so multiplying is adding.

A logarithmic number with ``int_bits`` integer and ``frac_bits`` fractional exponent bits ("Log I.F";
Log 4.3 fits a byte with its sign bit) stores ``x = sign * 2**(code / 2**frac_bits)``, with ``code`` a
signed integer of ``int_bits + frac_bits`` bits. Here a number is held as two integer arrays:

* ``sign``: int8, -1, 0 or +1; 0 marks the value zero (which has no logarithm),
* ``code``: int32, the exponent in units of ``2**-frac_bits``.

The most negative code is given up to encode zero in hardware, so nonzero codes run over
``[-(2**(I+F-1) - 1), 2**(I+F-1) - 1]`` and the magnitudes are symmetric about 1.

Two rounding rules put a real number on this grid, and they are different functions, so each has its own name:

* ``"nearest_exponent"`` (:data:`NEAREST_EXPONENT`, the default here): round ``log2|x| * 2**F`` to the nearest
  integer, which is what an encoder that computes ``log2`` and rounds does. The largest relative error is
  ``2**(2**-(F+1)) - 1`` (4.43 % for Log 4.3), the same at every magnitude.
* ``"nearest"`` (:data:`NEAREST_VALUE`, what :func:`scaledl.numerics.quantize` does for every format): the
  nearest representable value. Its largest relative error is ``(r - 1)/(r + 1)`` with ``r = 2**(2**-F)``
  (4.33 % for Log 4.3).

They differ only for inputs between the geometric mean ``sqrt(g h)`` and the arithmetic mean ``(g + h)/2`` of
two neighbours ``g < h`` (there the exponent rounds up but the nearer value is ``g``): for Log 4.3 about 1.1 %
of log-uniform inputs (:func:`disagreement_fraction`). Multiplication adds codes exactly (and XORs signs);
addition needs the Gaussian logarithm ``sb(d) = log2(1 + 2**-d)``, which :func:`gaussian_log_add` evaluates
exactly and :func:`mitchell_add` approximates with Mitchell's ``log2(1 + m) ~ m``.

>>> import numpy as np
>>> s, c = lns_encode(np.array([3.0, -0.5, 0.0]), int_bits=4, frac_bits=3)
>>> c.tolist(), s.tolist()
([13, -8, 0], [1, -1, 0])
>>> lns_decode(s, c, frac_bits=3).round(4).tolist()
[3.0844, -0.5, 0.0]
"""

from __future__ import annotations

import math
import numpy as np

from scaledl.numerics.formats import LogFormat

__all__ = [
    "LogGrid", "LOG_4_3", "NEAREST_EXPONENT", "NEAREST_VALUE", "LOG_ROUNDINGS", "disagreement_fraction",
    "lns_encode", "lns_decode", "lns_quantize", "lns_multiply",
    "gaussian_log_add", "gaussian_log_table", "mitchell_log2", "mitchell_exp2", "mitchell_add",
    "MITCHELL_MAX_LOG_ERROR", "worst_relative_error",
]


# The grid's one spec lives with the other formats; here it is named for what this module uses it as.
LogGrid = LogFormat

LOG_4_3 = LogGrid(4, 3)  # the 8-bit logarithmic format of Dally's "Trends in Deep Learning Hardware" (2023)

NEAREST_EXPONENT = "nearest_exponent"  # round log2|x| to the grid: what a log2-and-round encoder does
NEAREST_VALUE = "nearest"              # the nearest representable value, as quantize() rounds every format
LOG_ROUNDINGS = (NEAREST_EXPONENT, NEAREST_VALUE)


def _check_log_rounding(rounding):
    if rounding not in LOG_ROUNDINGS:
        raise ValueError(f"rounding must be one of {LOG_ROUNDINGS} (nearest exponent or nearest value), "
                         f"got {rounding!r}")


def _grid(int_bits, frac_bits) -> LogGrid:
    return LogGrid(int_bits, frac_bits)


def lns_encode(x, *, int_bits: int = 4, frac_bits: int = 3, saturate: bool = True,
               rounding: str = NEAREST_EXPONENT):
    """Encode real numbers as logarithmic ``(sign, code)`` arrays.

    Magnitudes above the largest value saturate to it (or raise with ``saturate=False``); small magnitudes
    flush to zero: with ``"nearest_exponent"`` those whose rounded code falls below ``code_min``, with
    ``"nearest"`` those nearer to 0 than to the smallest value (half of it; the tie goes to zero).

    Args:
        x: array of finite reals.
        rounding: ``"nearest_exponent"`` (round ``log2|x|``; ties to the even code) or ``"nearest"`` (the
            nearest value; ties to the even code). See the module docstring.
    Returns:
        ``(sign, code)``: int8 and int32 arrays of ``x``'s shape.
    Raises:
        ValueError: ``x`` holds NaN or inf, a value overflows with ``saturate=False``, or an unknown rounding.
    """
    _check_log_rounding(rounding)
    g = _grid(int_bits, frac_bits)
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"x must be finite; got {np.count_nonzero(~np.isfinite(x))} NaN/inf value(s)")
    mag = np.abs(x)
    with np.errstate(divide="ignore"):
        exact = np.log2(np.where(mag > 0, mag, 1.0)) * g.steps_per_octave
    if rounding == NEAREST_EXPONENT:
        code = np.rint(exact)  # ties to even, in the log domain
        tiny = code < g.code_min
    else:
        lo = np.floor(exact)  # the neighbours 2**(lo/S) <= |x| < 2**((lo+1)/S); compare linear distances
        d_lo = mag - np.exp2(lo / g.steps_per_octave)
        d_hi = np.exp2((lo + 1) / g.steps_per_octave) - mag
        up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo % 2 != 0))  # a tie goes to the even code
        code = np.where(up, lo + 1, lo)
        tiny = (code < g.code_min) & ~(mag > g.min_positive / 2)  # nearer to 0 than to the smallest value
        code = np.maximum(code, g.code_min)
    if not saturate and np.any((mag > 0) & (code > g.code_max)):
        raise ValueError(f"x: a magnitude above {g.label}'s largest value {g.max_value:.6g} with saturate=False")
    code = np.minimum(code, g.code_max)
    sign = np.sign(x).astype(np.int8)
    sign[(mag == 0) | tiny] = 0
    code = np.where(sign == 0, 0, code).astype(np.int32)
    return sign, code


def lns_decode(sign, code, *, frac_bits: int = 3) -> np.ndarray:
    """The float64 value ``sign * 2**(code / 2**frac_bits)`` of logarithmic numbers."""
    sign = np.asarray(sign)
    code = np.asarray(code)
    return sign * np.exp2(code / float(1 << frac_bits))


def lns_quantize(x, *, int_bits: int = 4, frac_bits: int = 3, rounding: str = NEAREST_EXPONENT) -> np.ndarray:
    """Round ``x`` onto a Log ``int_bits.frac_bits`` grid by ``rounding`` (default: the nearest exponent).

    ``rounding="nearest"`` gives the same values as ``quantize(x, "lnsI.F")``;
    ``quantize(x, "lnsI.F", rounding="nearest_exponent")`` the same as the default here.
    """
    s, c = lns_encode(x, int_bits=int_bits, frac_bits=frac_bits, rounding=rounding)
    return lns_decode(s, c, frac_bits=frac_bits)


def lns_multiply(sign_a, code_a, sign_b, code_b):
    """Multiply logarithmic numbers: signs multiply, codes add. Exact; the code may leave the format's range
    (a product of two Log I.F numbers needs one more integer bit), which is what a MAC unit keeps."""
    sign = (np.asarray(sign_a, np.int8) * np.asarray(sign_b, np.int8)).astype(np.int8)
    code = np.where(sign == 0, 0, np.asarray(code_a, np.int32) + np.asarray(code_b, np.int32))
    return sign, code.astype(np.int32)


def worst_relative_error(frac_bits: int, rounding: str = NEAREST_EXPONENT) -> float:
    """Largest ``|q - x| / x`` of rounding onto a log grid with ``frac_bits`` fractional bits.

    ``"nearest_exponent"``: the exponent moves by at most half a step, ``2**-(F+1)``, so the value moves by a
    factor of at most ``2**(2**-(F+1))``; the error is largest on the side where the value is rounded up.
    ``"nearest"``: between neighbours ``g < h = r g`` the worst case is the midpoint, ``(r - 1)/(r + 1)``.

    >>> round(worst_relative_error(3), 5), round(worst_relative_error(3, "nearest"), 5)
    (0.04427, 0.04329)
    """
    _check_log_rounding(rounding)
    if rounding == NEAREST_EXPONENT:
        return 2.0 ** (2.0 ** -(frac_bits + 1)) - 1.0
    r = 2.0 ** (2.0 ** -frac_bits)
    return (r - 1.0) / (r + 1.0)


def disagreement_fraction(frac_bits: int) -> float:
    """Share of log-uniformly spread inputs on which the two rounding rules pick different neighbours.

    Between neighbours ``g`` and ``h = r g`` they disagree from ``sqrt(g h)`` (where the exponent rounds up) to
    ``(g + h)/2`` (where the nearer value changes); on a log axis that band is
    ``log2((1 + r) / (2 sqrt(r)))`` long out of a step of ``log2 r``. The same in every step.

    >>> round(disagreement_fraction(3), 5)
    0.01083
    """
    r = 2.0 ** (2.0 ** -frac_bits)
    return math.log2((1.0 + r) / (2.0 * math.sqrt(r))) / math.log2(r)


# ---------------------------------------------------------------------------------------------------------
# Addition: exact (Gaussian logarithms) and Mitchell's approximation, both on real-valued exponents.

def gaussian_log_add(a, b):
    """``log2(2**a + 2**b)`` for real exponents, as ``max(a, b) + sb(|a - b|)`` with ``sb(d) = log2(1+2**-d)``.

    This is the addition a logarithmic ALU performs (for positive numbers); ``sb`` is the Gaussian logarithm
    its table stores. Computed in float64 without overflow for any finite exponents.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.maximum(a, b) + np.log2(1.0 + np.exp2(-np.abs(a - b)))


def gaussian_log_table(frac_bits: int) -> np.ndarray:
    """The table a Log x.F adder needs: ``sb(d)`` rounded to the grid, for ``d = 0, 2**-F, 2**-2F...``, up to
    the first ``d`` where the rounded value is 0 (beyond it, adding the smaller number changes nothing).

    Returns the table in units of ``2**-F`` (int array). Its length grows like ``(F + 1.5) * 2**F``.

    >>> gaussian_log_table(3).tolist()[:6]
    [8, 8, 7, 7, 6, 6]
    """
    if not isinstance(frac_bits, (int, np.integer)) or isinstance(frac_bits, bool) or not 0 <= frac_bits <= 16:
        raise ValueError(f"frac_bits must be an int in [0, 16], got {frac_bits!r}")
    step = 2.0 ** -frac_bits
    # sb(d) < step / 2 once 2**-d / ln 2 < step / 2, i.e. d > F + 1 + log2(1 / ln 2): a safe upper bound.
    d = np.arange(0, math.ceil((frac_bits + 3) / step)) * step
    sb = np.rint(np.log2(1.0 + np.exp2(-d)) / step).astype(np.int64)
    first_zero = int(np.argmax(sb == 0))
    return sb[:first_zero]


# Mitchell (1962): log2(1 + m) ~ m on [0, 1). The largest gap is at m = 1/ln 2 - 1.
MITCHELL_MAX_LOG_ERROR = math.log2(1 / math.log(2)) - (1 / math.log(2) - 1)  # 0.0861 of an octave


def mitchell_log2(x):
    """Mitchell's approximate ``log2`` of positive ``x``: the exponent plus the mantissa fraction, unchanged.

    >>> float(mitchell_log2(3.0))  # 3 = 2 * 1.5, so 1 + 0.5 (exact: 1.585)
    1.5
    """
    x = np.asarray(x, dtype=np.float64)
    if np.any(~(x > 0)):
        raise ValueError("x must be positive and finite for a logarithm")
    m, e = np.frexp(x)  # x = m * 2**e with m in [0.5, 1)
    return (e - 1) + (2 * m - 1)


def mitchell_exp2(y):
    """Mitchell's approximate ``2**y``: ``2**floor(y) * (1 + frac(y))``; the inverse of :func:`mitchell_log2`."""
    y = np.asarray(y, dtype=np.float64)
    i = np.floor(y)
    return np.ldexp(1.0 + (y - i), i.astype(np.int64))


def mitchell_add(a, b):
    """``log2(2**a + 2**b)`` with both conversions done by Mitchell's approximation (no table at all)."""
    return mitchell_log2(mitchell_exp2(a) + mitchell_exp2(b))
