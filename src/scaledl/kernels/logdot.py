"""Binned dot product of logarithmic vectors on the GPU: products are code additions, sums are integer shifts.

The NumPy reference is :func:`scaledl.numerics.logarithmic_sum.binned_dot`; every variant here must give the
same ``2**F`` int64 accumulators bit for bit (integer addition is associative, so the order the threads add in
does not matter). The ``2**F`` multiplies that finish the dot product happen once, on the host
(:meth:`BinnedSum.value`).

* v1: one thread per element, one global atomic add per nonzero product.
* v2: grid-stride loop over a few blocks; each block bins into shared memory, then adds its ``2**F`` bins to
  global memory with one atomic each (global atomics drop from ``n`` to ``blocks * 2**F``).
"""

from __future__ import annotations

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda

from scaledl.numerics.logarithmic_sum import BinnedSum, binned_dot

MAX_FRAC_BITS = 8  # shared memory holds 2**8 int64 bins per block (2 KiB)
_MAX_BINS = 1 << MAX_FRAC_BITS

__all__ = ["reference", "logdot_v1", "logdot_v2", "logdot", "VARIANTS", "MAX_FRAC_BITS"]

reference = binned_dot


@cuda.jit
def logdot_v1(sa, ca, sb, cb, frac_bits, ei_min, bins):
    """v1: thread i multiplies pair i (adds codes) and atomically adds its shifted sign into its bin."""
    i = cuda.grid(1)
    if i < sa.size:  # guard the tail: the grid is rounded up to whole blocks
        s = np.int64(sa[i]) * np.int64(sb[i])
        if s != 0:
            p = np.int64(ca[i]) + np.int64(cb[i])
            ef = p & ((np.int64(1) << frac_bits) - 1)
            ei = p >> frac_bits  # arithmetic shift: floor division, also for negative codes
            cuda.atomic.add(bins, ef, s << (ei - ei_min))


@cuda.jit
def logdot_v2(sa, ca, sb, cb, frac_bits, ei_min, bins):
    """v2: as v1, but each block accumulates in shared memory and flushes 2**F atomics at the end."""
    local = cuda.shared.array(_MAX_BINS, dtype=np.int64)
    t = cuda.threadIdx.x
    nbins = 1 << frac_bits
    k = t
    while k < nbins:
        local[k] = 0
        k += cuda.blockDim.x
    cuda.syncthreads()
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < sa.size:
        s = np.int64(sa[i]) * np.int64(sb[i])
        if s != 0:
            p = np.int64(ca[i]) + np.int64(cb[i])
            ef = p & ((np.int64(1) << frac_bits) - 1)
            ei = p >> frac_bits
            cuda.atomic.add(local, ef, s << (ei - ei_min))
        i += stride
    cuda.syncthreads()  # every thread's terms are in shared memory before the flush
    k = t
    while k < nbins:
        cuda.atomic.add(bins, k, local[k])
        k += cuda.blockDim.x


VARIANTS = {"v1": logdot_v1, "v2": logdot_v2}


def logdot(sign_a, code_a, sign_b, code_b, *, frac_bits: int, variant: str = "v2", threads: int = 128,
           blocks: int | None = None, out: np.ndarray | None = None) -> BinnedSum:
    """Launch a binned log dot product kernel and return its accumulators.

    Args:
        sign_a, code_a, sign_b, code_b: 1-D arrays of equal length (int8 signs, int32 codes).
        frac_bits: F, at most :data:`MAX_FRAC_BITS`.
        variant: ``"v1"`` or ``"v2"``.
        threads: threads per block.
        blocks: v2's grid size (grid-stride loop); default ``min(ceil(n / threads), 4)``. v1 always uses
            ``ceil(n / threads)`` blocks.
        out: optional int64 array of ``2**F`` bins to accumulate into (a test poisons it); zeroed first.
    Raises:
        ValueError: unknown variant, ``frac_bits`` out of range, or inputs of different lengths.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    if not isinstance(frac_bits, (int, np.integer)) or not 0 <= frac_bits <= MAX_FRAC_BITS:
        raise ValueError(f"frac_bits must be an int in [0, {MAX_FRAC_BITS}], got {frac_bits!r}")
    sa, sb = np.ascontiguousarray(sign_a, np.int8), np.ascontiguousarray(sign_b, np.int8)
    ca, cb = np.ascontiguousarray(code_a, np.int32), np.ascontiguousarray(code_b, np.int32)
    if not (sa.shape == sb.shape == ca.shape == cb.shape) or sa.ndim != 1:
        raise ValueError(f"inputs must be 1-D of one length, got {sa.shape}, {ca.shape}, {sb.shape}, {cb.shape}")
    # The accumulators' LSB: the smallest product exponent, the reference's choice, so bins compare exactly.
    live = (sa != 0) & (sb != 0)
    ei_min = int(((ca[live].astype(np.int64) + cb[live]) >> frac_bits).min()) if live.any() else 0
    bins = np.zeros(1 << frac_bits, np.int64) if out is None else out
    bins[:] = 0
    n = sa.size
    if n == 0:
        return BinnedSum(bins=bins, frac_bits=frac_bits, ei_min=ei_min)
    full = (n + threads - 1) // threads
    grid = full if variant == "v1" else (blocks or min(full, 4))
    d_bins = cuda.to_device(bins)
    VARIANTS[variant][grid, threads](cuda.to_device(sa), cuda.to_device(ca), cuda.to_device(sb),
                                     cuda.to_device(cb), np.int64(frac_bits), np.int64(ei_min), d_bins)
    d_bins.copy_to_host(bins)
    return BinnedSum(bins=bins, frac_bits=frac_bits, ei_min=ei_min)
