"""Bytes and time of a sparse x dense product, C = A B: CSR vs dense vs 2:4, by a traffic count and the roofline.

**Bytes.** A dense ``M x K`` matrix of ``v``-byte values is ``M K v`` bytes. CSR stores each non-zero with its
column index (``i`` bytes) plus ``M + 1`` row pointers (``p`` bytes)::

    CSR bytes = nnz (v + i) + (M + 1) p,      bytes per non-zero = v + i + (M + 1) p / nnz,

so CSR is smaller than dense only below the density ``d* = (M K v - (M + 1) p) / (M K (v + i))``, which
tends to ``v / (v + i)``: 1/2 for FP32 values with int32 indices, 1/3 for FP16 with int32. 2:4 keeps half
the values plus a 2-bit position each: ``0.5 (1 + 2 / 16) = 56.25 %`` of dense FP16.

**Time.** Each format's product runs no faster than its roofline (:mod:`scaledl.perf.roofline`):
``t = max(FLOPs / peak, bytes / bandwidth)`` with ``bytes`` = A in its format + B + C, each moved once
(perfect caching of B: optimistic for CSR, whose gathers of B are irregular). Dense runs at the device's dense
rate for ``precision`` (tensor cores where the device has them); CSR runs on the CUDA cores at the FP32 rate
(irregular sparsity does not map onto tensor-core tiles; cuSPARSE's CSR SpMM accumulates in FP32 on the CUDA
cores); 2:4 does half the multiplies at the dense tensor-core rate, which is what NVIDIA's "sparse" peak
(twice the dense one, counting the skipped multiplies as done) means. The speed crossover is therefore an
*upper bound*: the density below which CSR *could* beat dense if it ran at its roofline.

>>> from scaledl.perf import hardware
>>> h100 = hardware.get("H100 SXM")
>>> round(csr_bytes_crossover_density(4096, 4096, value_nbytes=2, index_nbytes=4), 4)  # -> 1/3 as M, K grow
0.3332
>>> round(csr_speed_crossover_density(h100, 4096, 4096, 4096, "fp16"), 4)  # 67 / 989.5: CUDA vs tensor cores
0.0677
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scaledl._args import count, positive as _positive
from scaledl.perf.roofline import BYTES_PER_ELEMENT

FORMATS = ("dense", "csr", "2:4")
METADATA_BITS = 2  # per kept value of a 2:4 group (Mishra et al. 2021, arXiv:2104.08378)
CSR_PRECISION = "fp32"  # the rate CSR kernels run at: CUDA cores, FP32 accumulation


def _density(d) -> float:
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 <= d <= 1:
        raise ValueError(f"density must be a number in [0, 1], got {d!r}")
    return float(d)


def dense_nbytes(M: int, K: int, value_nbytes: int = 4) -> int:
    """Bytes of a dense ``M x K`` matrix."""
    return count("M", M, 0) * count("K", K, 0) * int(_positive("value_nbytes", value_nbytes))


def csr_nbytes(M: int, K: int, nnz: int, *, value_nbytes: int = 4, index_nbytes: int = 4,
               rowptr_nbytes: int = 4) -> int:
    """Bytes of an ``M x K`` CSR matrix with ``nnz`` stored entries: values, column indices, row pointers.

    >>> csr_nbytes(3, 4, 5)  # 5 x (4 + 4) + 4 x 4
    56
    """
    if count("nnz", nnz, 0) > count("M", M, 0) * count("K", K, 0):
        raise ValueError(f"nnz must be at most M x K = {M * K}, got {nnz}")
    for name, v in (("value_nbytes", value_nbytes), ("index_nbytes", index_nbytes),
                    ("rowptr_nbytes", rowptr_nbytes)):
        _positive(name, v)
    return nnz * (value_nbytes + index_nbytes) + (M + 1) * rowptr_nbytes


def bytes_per_nonzero(M: int, nnz: int, *, value_nbytes: int = 4, index_nbytes: int = 4,
                      rowptr_nbytes: int = 4) -> float:
    """CSR bytes divided by ``nnz``: ``v + i + (M + 1) p / nnz`` (the row pointers shared out)."""
    if count("nnz", nnz, 0) == 0:
        raise ValueError("nnz must be positive to share the row pointers out, got 0")
    return value_nbytes + index_nbytes + (count("M", M, 0) + 1) * rowptr_nbytes / nnz


def nm_nbytes(M: int, K: int, value_nbytes: int = 2, n: int = 2, m: int = 4) -> int:
    """Bytes of an ``M x K`` matrix compressed N:M along K: kept values + 16-bit metadata words per row
    (:func:`scaledl.sparsity.nm.metadata_words`, so partial words count whole)."""
    from scaledl.sparsity.nm import metadata_words

    kept = -(-count("K", K, 0) // m) * n
    return count("M", M, 0) * (kept * int(_positive("value_nbytes", value_nbytes)) + 2 * metadata_words(K, n, m))


def nm_fraction_of_dense(value_bits: int = 16, n: int = 2, m: int = 4, index_bits: int = METADATA_BITS) -> float:
    """Compressed size / dense size: ``(n / m) (1 + index_bits / value_bits)``.

    >>> nm_fraction_of_dense(16), nm_fraction_of_dense(8)
    (0.5625, 0.625)
    """
    return n / m * (1 + index_bits / _positive("value_bits", value_bits))


def csr_bytes_crossover_density(M: int, K: int, *, value_nbytes: int = 4, index_nbytes: int = 4,
                                rowptr_nbytes: int = 4) -> float:
    """The density below which CSR holds fewer bytes than dense: ``(M K v - (M + 1) p) / (M K (v + i))``."""
    MK = count("M", M, 0) * count("K", K, 0)
    if MK == 0:
        raise ValueError(f"M x K must be positive, got {M} x {K}")
    return max(0.0, (MK * value_nbytes - (M + 1) * rowptr_nbytes) / (MK * (value_nbytes + index_nbytes)))


@dataclass(frozen=True)
class ProductCost:
    """FLOPs and bytes of one product C = A B, and the two ceilings it runs under."""

    fmt: str
    flops: float
    nbytes: float
    peak_TFLOPS: float
    bandwidth_GBps: float

    @property
    def compute_s(self) -> float:
        return self.flops / (self.peak_TFLOPS * 1e12)

    @property
    def memory_s(self) -> float:
        return self.nbytes / (self.bandwidth_GBps * 1e9)

    @property
    def time_s(self) -> float:
        """The roofline bound: the slower of computing and moving."""
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def product_cost(fmt: str, device, M: int, K: int, N: int, density: float = 1.0, precision: str = "fp16", *,
                 index_nbytes: int = 4, rowptr_nbytes: int = 4) -> ProductCost:
    """Roofline cost of C = A B (A: ``M x K`` at ``density``; B: ``K x N``; N = 1 is SpMV) on ``device``.

    ``fmt``: ``"dense"`` (all of A, 2 M K N FLOPs, dense rate), ``"csr"`` (``nnz = round(density M K)``,
    2 nnz N FLOPs at the FP32 CUDA-core rate) or ``"2:4"`` (half of A's multiplies at the dense
    tensor-core rate, only on a device with 2:4 sparse tensor cores; ``density`` is ignored). Values are
    ``precision``-sized; B and C too.

    Raises:
        ValueError: unknown format, bad sizes or density, or a precision the device has no (sparse) rate for.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt={fmt!r} is not a format; expected one of {FORMATS}")
    for name, v in (("M", M), ("K", K), ("N", N)):
        if count(name, v, 0) == 0:
            raise ValueError(f"{name} must be positive, got 0")
    v = BYTES_PER_ELEMENT[precision] if precision in BYTES_PER_ELEMENT else None
    if v is None:
        raise ValueError(f"precision={precision!r} is not one of {tuple(BYTES_PER_ELEMENT)}")
    operands = (K * N + M * N) * v  # B read once, C written once
    bw = device.memory_bandwidth_GBps
    if fmt == "dense":
        return ProductCost(fmt, 2.0 * M * K * N, dense_nbytes(M, K, v) + operands, device.peak_TFLOPS(precision), bw)
    if fmt == "csr":
        nnz = round(_density(density) * M * K)
        a = csr_nbytes(M, K, nnz, value_nbytes=v, index_nbytes=index_nbytes, rowptr_nbytes=rowptr_nbytes)
        return ProductCost(fmt, 2.0 * nnz * N, a + operands, device.peak_TFLOPS(CSR_PRECISION), bw)
    kept = -(-K // 4) * 2
    device.peak_TFLOPS(precision, sparse=True)  # raises where the device has no 2:4 sparse rate
    # the multiplies actually done, at the dense rate: the sparse peak (2x) counts the skipped ones too
    return ProductCost(fmt, 2.0 * M * kept * N, nm_nbytes(M, K, v) + operands, device.peak_TFLOPS(precision), bw)


def csr_speed_crossover_density(device, M: int, K: int, N: int, precision: str = "fp16", *,
                                index_nbytes: int = 4, rowptr_nbytes: int = 4) -> float:
    """The density below which CSR's roofline time beats dense's (0 if never, 1 if always).

    CSR's time rises with density in both terms, so the crossover is the smaller of the densities at which
    its compute time and its memory time reach the dense time (closed form, no search).
    """
    t = product_cost("dense", device, M, K, N, 1.0, precision).time_s
    v = BYTES_PER_ELEMENT[precision]
    d_compute = t * device.peak_TFLOPS(CSR_PRECISION) * 1e12 / (2.0 * M * K * N)
    fixed = (M + 1) * rowptr_nbytes + (K * N + M * N) * v
    d_memory = (t * device.memory_bandwidth_GBps * 1e9 - fixed) / (M * K * (v + index_nbytes))
    return min(1.0, max(0.0, min(d_compute, d_memory)))


def nm_speedup(device, M: int, K: int, N: int, precision: str = "fp16") -> float:
    """Dense roofline time / 2:4 roofline time: 2 when compute bound, about 1 / 0.5625 for FP16 SpMV."""
    return (product_cost("dense", device, M, K, N, 1.0, precision).time_s
            / product_cost("2:4", device, M, K, N, 0.5, precision).time_s)



def lane_utilization(row_lengths, threads_per_row: int = 1, warp: int = 32) -> float:
    """Fraction of the lane-steps a CSR SpMV's warps spend on useful multiply-adds (1.0 = perfectly balanced).

    ``threads_per_row = 1`` (one thread per row, v1): a warp of ``warp`` rows runs as long as its longest
    row, so it costs ``warp x max(length)`` lane-steps for ``sum(length)`` useful ones. ``threads_per_row =
    warp`` (a warp per row, v2/v3): a row of length ``L`` costs ``warp x ceil(L / warp)`` lane-steps. Empty
    rows cost nothing in the second case (they still occupy a lane in the first). Reductions and index
    arithmetic are not counted: this is the load-imbalance and idle-lane part of the cost only.

    >>> lane_utilization([1, 1, 1, 29], warp=4)   # one long row holds the warp for 29 steps
    0.2759
    >>> lane_utilization([1, 1, 1, 29], threads_per_row=4, warp=4)   # 1+1+1+8 steps of 4 lanes
    0.7273
    """
    lengths = np.asarray(row_lengths, dtype=np.int64).ravel()
    if lengths.size == 0 or (lengths < 0).any():
        raise ValueError("row_lengths: expected a non-empty list of non-negative row lengths")
    if threads_per_row not in (1, warp):
        raise ValueError(f"threads_per_row must be 1 or warp={warp}, got {threads_per_row!r}")
    useful = int(lengths.sum())
    if threads_per_row == 1:
        pad = -len(lengths) % warp
        per_warp = np.concatenate([lengths, np.zeros(pad, np.int64)]).reshape(-1, warp).max(axis=1)
        spent = int(warp * per_warp.sum())
    else:
        spent = int(warp * (-(-lengths // warp)).sum())
    return round(useful / spent, 4) if spent else 1.0


def amdahl_speedup(fraction: float, speedup: float) -> float:
    """Whole-program speedup when a ``fraction`` of the time runs ``speedup`` times faster (Amdahl, 1967).

    >>> round(amdahl_speedup(0.7, 2.0), 4)   # 70 % of the time in 2:4-sparse GEMMs at exactly 2x
    1.5385
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"fraction must be in [0, 1], got {fraction!r}")
    if not speedup > 0:
        raise ValueError(f"speedup must be positive, got {speedup!r}")
    return 1.0 / ((1.0 - fraction) + fraction / speedup)
