"""FP8 rounding in 32-bit integer operations on a float32's bit pattern: the algorithm of the GPU kernel
:func:`scaledl.kernels.quantize.quantize_v4_bits`, written in NumPy (uint32 in, uint8 codes out) so that it can be
checked against ml_dtypes' float32 -> float8 cast on every one of the 2^32 float32 bit patterns.

For ``a = bits & 0x7fffffff`` (the magnitude's pattern):

* a normal result: drop ``23 - m`` mantissa bits rounding to nearest even by adding ``2**(22 - m) - 1`` plus the
  lowest kept bit, then shift; rebiasing the exponent is one subtraction, and a carry out of the mantissa moves
  into the exponent by itself (that is why the fields are kept together);
* a subnormal result (``a`` below the format's smallest normal): the significand with its implicit bit, shifted
  right by ``s = 151 - bias - m - exponent_field`` with the same rounding (``s`` capped at 31: the rest is zero);
* above the largest finite code: the format's overflow code (saturation to the largest finite value, or what a
  plain cast gives: NaN for e4m3fn, which has no infinity, inf for e5m2); inf is such a value;
* NaN: the format's NaN code (ml_dtypes keeps the sign and drops the payload: 0x7f for e4m3fn, 0x7e for e5m2).

The sign bit is ORed back in, so -0.0 gives 0x80.

>>> import numpy as np
>>> x = np.array([1.0625, 1.1875, 500.0, -0.3, np.inf, -0.0], np.float32)
>>> [hex(c) for c in fp8_bits_model(x.view(np.uint32), "e4m3")]
['0x38', '0x3a', '0x7e', '0xaa', '0x7e', '0x80']
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Fp8Params", "fp8_params", "fp8_bits_model", "FP8_FORMATS"]

FP8_FORMATS = ("e4m3", "e5m2")


class Fp8Params(NamedTuple):
    """The integer constants of one FP8 format for the bit-level rounding (all fit in 32 bits)."""
    man_bits: int  # m: mantissa bits kept
    shift: int  # 23 - m: float32 mantissa bits dropped for a normal result
    half: int  # 2**(22 - m) - 1: the rounding bias below the tie
    rebias: int  # (127 - bias) << m: subtracted from the shifted pattern to rebias the exponent
    min_normal: int  # the float32 pattern of the format's smallest normal, 2**(1 - bias)
    sub_base: int  # 151 - bias - m: s = sub_base - exponent_field for a subnormal result
    max_code: int  # the largest finite code (magnitude)
    overflow_code: int  # what a magnitude above max_code (inf included) becomes
    nan_code: int  # what a NaN becomes (magnitude; the sign is kept)


def fp8_params(fmt: str, saturate: bool = True) -> Fp8Params:
    """The constants for ``fmt`` ("e4m3" = ml_dtypes' float8_e4m3fn, "e5m2" = float8_e5m2). ``saturate=True``: values
    beyond the largest finite one (and inf) become it, as the book's quantizers do; ``False``: a plain cast's result
    (NaN for e4m3fn, inf for e5m2), as ml_dtypes' ``astype`` gives.

    Raises:
        ValueError: a format other than e4m3 and e5m2.
        TypeError: saturate not a bool.
    """
    if fmt not in FP8_FORMATS:
        raise ValueError(f"fmt={fmt!r} is not an FP8 format of the bit-level kernel; expected one of {FP8_FORMATS}")
    if not isinstance(saturate, (bool, np.bool_)):
        raise TypeError(f"saturate must be a bool, got {type(saturate).__name__}")
    m, bias, max_code, inf_or_nan, nan = {"e4m3": (3, 7, 0x7E, 0x7F, 0x7F), "e5m2": (2, 15, 0x7B, 0x7C, 0x7E)}[fmt]
    return Fp8Params(m, 23 - m, (1 << (22 - m)) - 1, (127 - bias) << m, (128 - bias) << 23, 151 - bias - m,
                     max_code, max_code if saturate else inf_or_nan, nan)


def fp8_bits_model(bits, fmt: str, saturate: bool = True) -> np.ndarray:
    """The kernel's algorithm, vectorized: float32 bit patterns (uint32) -> FP8 codes (uint8), bit-exact with
    ml_dtypes' cast (after clipping to the largest finite value where ``saturate``).

    Raises:
        TypeError: ``bits`` not a uint32 array (view a float32 array with ``.view(np.uint32)``).
        ValueError: as :func:`fp8_params`.
    """
    p = fp8_params(fmt, saturate)
    u = np.asarray(bits)
    if u.dtype != np.uint32:
        raise TypeError(f"bits must be a uint32 array (a float32 array's .view(np.uint32)), got {u.dtype}")
    U = np.uint32
    sign = (u >> U(24)) & U(0x80)
    a = u & U(0x7FFFFFFF)
    # normal result: round to nearest even at bit `shift`, shift, rebias (wraps below min_normal: not selected)
    r_norm = ((a + U(p.half) + ((a >> U(p.shift)) & U(1))) >> U(p.shift)) - U(p.rebias)
    # subnormal result: the significand with its implicit bit, shifted by s (capped at 31) with the same rounding
    sig = (a & U(0x7FFFFF)) | U(0x800000)
    s = np.minimum(U(p.sub_base) - np.minimum(a >> U(23), U(p.sub_base - 1)), U(31))
    r_sub = (sig + ((U(1) << (s - U(1))) - U(1)) + ((sig >> s) & U(1))) >> s
    r = np.where(a < U(p.min_normal), r_sub, r_norm)
    r = np.where(r > U(p.max_code), U(p.overflow_code), r)
    r = np.where(a > U(0x7F800000), U(p.nan_code), r)
    return (r | sign).astype(np.uint8)
