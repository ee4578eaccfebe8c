"""Sums and dot products of logarithmic numbers without a table lookup per element (Dally's lecture, 2023).

A product of two logarithmic numbers is an exact code ``p`` (units of ``2**-F``). Split it into an integer
part ``EI = p >> F`` and a fractional part ``EF = p & (2**F - 1)``, so ``2**(p / 2**F) = 2**EI * 2**(EF/2**F)``.
Terms with the same ``EF`` share the factor ``2**(EF / 2**F)``; their ``2**EI`` parts are powers of two, so
they add exactly in a fixed-point accumulator by shifting. The algorithm:

1. "sort" (bin) the products by ``EF``: ``2**F`` accumulators,
2. add ``sign * 2**(EI - EI_min)`` into accumulator ``EF``: shifts and integer adds only,
3. multiply each accumulator once by the constant ``2**(EF / 2**F)`` (a table of ``2**F`` hard-wired values)
   and add the ``2**F`` results,
4. convert the sum back to the logarithmic format (one log per tensor, not per element).

Steps 1-2 are exact; the only roundings are in the ``2**F`` constants, the final ``2**F``-term sum and the
final encoding. :func:`binned_dot` returns the integer accumulators, which a kernel must reproduce exactly.

>>> import numpy as np
>>> from scaledl.numerics.logarithmic import lns_encode
>>> sa, ca = lns_encode(np.array([1.0, 2.0, -0.5]))
>>> sb, cb = lns_encode(np.array([3.0, 1.0, 4.0]))
>>> acc = binned_dot(sa, ca, sb, cb, frac_bits=3)
>>> round(acc.value(), 4)   # 1 * 3.0844 + 2 * 1 - 0.5 * 4 (exact: 3.0)
3.0844
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scaledl.numerics.logarithmic import LogGrid, lns_decode, lns_encode, mitchell_exp2

__all__ = ["split_code", "BinnedSum", "binned_dot", "product_ei_min", "accumulator_bits",
           "mitchell_dot", "exact_dot", "op_counts"]


def split_code(code, frac_bits: int):
    """``(EI, EF)`` with ``code = EI * 2**F + EF`` and ``0 <= EF < 2**F`` (floor division, also for negatives).

    >>> [tuple(map(int, split_code(c, 3))) for c in (13, -8, -3)]
    [(1, 5), (-1, 0), (-1, 5)]
    """
    code = np.asarray(code)
    return code >> frac_bits, code & ((1 << frac_bits) - 1)


def product_ei_min(grid: LogGrid) -> int:
    """The smallest integer part a product of two numbers of ``grid`` can have: the accumulators' LSB."""
    return (2 * grid.code_min) >> grid.frac_bits


def accumulator_bits(grid: LogGrid, n_terms: int) -> int:
    """Bits of a two's-complement accumulator that sums ``n_terms`` products of ``grid`` without any loss.

    A product spans ``EI`` from ``product_ei_min`` to ``(2 * code_max) >> F``, so one term needs
    ``EI_max - EI_min + 1`` bits; ``n_terms`` of them add ``ceil(log2 n_terms)``; one more for the sign.

    >>> accumulator_bits(LogGrid(4, 3), 10_000)
    47
    """
    if n_terms < 1:
        raise ValueError(f"n_terms must be >= 1, got {n_terms!r}")
    ei_max = (2 * grid.code_max) >> grid.frac_bits
    return (ei_max - product_ei_min(grid) + 1) + math.ceil(math.log2(n_terms)) + 1


@dataclass(frozen=True)
class BinnedSum:
    """The ``2**F`` exact integer accumulators of a binned logarithmic sum, and how to read them.

    Attributes:
        bins: int64 array, ``bins[EF] = sum of sign * 2**(EI - ei_min)`` over terms with that ``EF``.
        frac_bits: F.
        ei_min: the exponent of the accumulators' least significant bit.
    """

    bins: np.ndarray
    frac_bits: int
    ei_min: int

    @property
    def constants(self) -> np.ndarray:
        """The ``2**F`` multipliers ``2**(EF / 2**F)``: the only "table" the algorithm needs."""
        return np.exp2(np.arange(1 << self.frac_bits) / float(1 << self.frac_bits))

    def value(self) -> float:
        """The sum as a float64: one multiply per bin, then a shift by ``ei_min`` (``ldexp``)."""
        return float(math.ldexp(float(np.dot(self.bins.astype(np.float64), self.constants)), self.ei_min))

    def to_lns(self, *, int_bits: int):
        """The sum converted back to the logarithmic format (one ``log2`` for the whole tensor)."""
        s, c = lns_encode(np.array([self.value()]), int_bits=int_bits, frac_bits=self.frac_bits)
        return int(s[0]), int(c[0])


def _check_pair(name, sign, code):
    sign, code = np.asarray(sign), np.asarray(code)
    if sign.shape != code.shape:
        raise ValueError(f"{name}: sign and code must have the same shape, got {sign.shape} and {code.shape}")
    if not (np.issubdtype(sign.dtype, np.integer) and np.issubdtype(code.dtype, np.integer)):
        raise TypeError(f"{name}: sign and code must be integer arrays, got {sign.dtype} and {code.dtype}")
    return sign, code


def binned_dot(sign_a, code_a, sign_b, code_b, *, frac_bits: int, ei_min: int | None = None) -> BinnedSum:
    """Dot product of two logarithmic vectors by the binned algorithm (NumPy reference).

    Args:
        sign_a, code_a, sign_b, code_b: equal-length 1-D integer arrays (see :func:`lns_encode`).
        frac_bits: the format's F.
        ei_min: LSB exponent of the accumulators; defaults to the smallest product ``EI`` present. Terms below
            it would be lost, so it must not exceed that.
    Raises:
        ValueError: mismatched shapes, ``ei_min`` above a product's ``EI``, or a term needing more than 62 bits.
    """
    sa, ca = _check_pair("a", sign_a, code_a)
    sb, cb = _check_pair("b", sign_b, code_b)
    if sa.shape != sb.shape or sa.ndim != 1:
        raise ValueError(f"a and b must be 1-D of the same length, got shapes {sa.shape} and {sb.shape}")
    sign = sa.astype(np.int64) * sb.astype(np.int64)
    code = np.where(sign != 0, ca.astype(np.int64) + cb.astype(np.int64), 0)
    ei, ef = split_code(code, frac_bits)
    live = sign != 0
    lo = int(ei[live].min()) if live.any() else 0
    hi = int(ei[live].max()) if live.any() else 0
    if ei_min is None:
        ei_min = lo
    if live.any() and lo < ei_min:
        raise ValueError(f"ei_min={ei_min} is above the smallest product exponent {lo}; those terms would be lost")
    if live.any() and hi - ei_min + math.ceil(math.log2(max(1, live.sum()))) > 62:
        raise ValueError(f"products span 2**{ei_min}..2**{hi}: too wide for a 64-bit accumulator")
    terms = np.where(live, sign << np.where(live, ei - ei_min, 0), 0)
    bins = np.zeros(1 << frac_bits, dtype=np.int64)
    np.add.at(bins, ef[live], terms[live])
    return BinnedSum(bins=bins, frac_bits=frac_bits, ei_min=int(ei_min))


def exact_dot(sign_a, code_a, sign_b, code_b, *, frac_bits: int) -> float:
    """The dot product of the decoded values, correctly rounded (``math.fsum``): the reference for the above."""
    va = lns_decode(sign_a, code_a, frac_bits=frac_bits)
    vb = lns_decode(sign_b, code_b, frac_bits=frac_bits)
    return math.fsum((va * vb).tolist())


def mitchell_dot(sign_a, code_a, sign_b, code_b, *, frac_bits: int) -> float:
    """The same dot product with each product converted to linear by Mitchell's ``2**f ~ 1 + f`` (no table)."""
    sign = np.asarray(sign_a, np.int64) * np.asarray(sign_b, np.int64)
    code = np.asarray(code_a, np.int64) + np.asarray(code_b, np.int64)
    return math.fsum((sign * mitchell_exp2(code / float(1 << frac_bits))).tolist())


def op_counts(n_terms: int, frac_bits: int) -> dict[str, int]:
    """Operations of the binned algorithm for one dot product of length ``n_terms``.

    >>> op_counts(10_000, 3)["multiplies"]
    8
    """
    bins = 1 << frac_bits
    return {
        "code additions (the products)": n_terms,
        "shift-and-add into a bin": n_terms,
        "multiplies": bins,
        "final additions": bins - 1,
        "log conversions": 1,
    }
