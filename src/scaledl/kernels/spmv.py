"""Sparse x dense products on CSR: SpMV y = A x in three variants, and SpMM C = A B; NumPy/SciPy reference first.

A is a ``scipy.sparse`` CSR matrix (``indptr``, ``indices``, ``data``); the kernels read its three arrays as
int32, int32 and float32. The variants:

* ``v1 row``: one thread per row walks that row's non-zeros. Simple, but neighbouring threads read far-apart
  addresses (each its own row), and a warp waits for its longest row: load imbalance and poor coalescing.
* ``v2 warp``: what changed: a warp (32 threads) per row; lane ``l`` takes non-zeros ``l, l + 32, ...``, so a
  warp's loads of ``indices`` and ``data`` are contiguous; the 32 partial sums meet in a shared-memory tree.
* ``v3 shuffle``: what changed: the tree uses warp shuffles (``shfl_down_sync``) instead of shared memory.

Numba's CUDA simulator has no warp shuffles: ``variant="auto"`` is ``shuffle`` on a GPU and ``warp`` on the
simulator (as :mod:`scaledl.kernels.reduce`). SpMM (``spmm_v1_row``) gives each thread one ``C[row, col]``,
with ``x`` along the columns so that a warp reads a row of ``B`` coalesced.

Every kernel guards its row (and column) bounds, so any shape works, empty rows included (they give 0).

>>> import numpy as np, scipy.sparse as sp
>>> A = sp.csr_array(np.array([[1.0, 0, 2], [0, 0, 0], [0, 3, 0]], np.float32))
>>> spmv(A, np.ones(3, np.float32))
array([3., 0., 3.], dtype=float32)
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp

import scaledl.device
from numba import cuda, float32

VARIANTS = ("auto", "row", "warp", "shuffle")
WARP = 32
FULL_MASK = 0xFFFFFFFF  # every lane takes part in the shuffle


# --------------------------------------------------------------------------------------------- reference
def spmv_reference(A, x) -> np.ndarray:
    """The specification: ``A @ x`` in float64 with SciPy (the caller compares a float32 result with it)."""
    return sp.csr_array(A).astype(np.float64) @ np.asarray(x, np.float64)


def spmm_reference(A, B) -> np.ndarray:
    """``A @ B`` in float64 with SciPy."""
    return sp.csr_array(A).astype(np.float64) @ np.asarray(B, np.float64)


# ------------------------------------------------------------------------------------------------ v1
@cuda.jit
def spmv_v1_row(indptr, indices, data, x, y):
    """v1: one thread per row, a plain loop over that row's non-zeros."""
    row = cuda.grid(1)
    if row < y.shape[0]:  # the grid is rounded up to whole blocks
        acc = float32(0.0)
        for j in range(indptr[row], indptr[row + 1]):
            acc += data[j] * x[indices[j]]
        y[row] = acc


# ------------------------------------------------------------------------------------------------ v2
@functools.lru_cache(maxsize=None)
def warp_kernel(threads: int):
    """v2 for ``threads`` per block, a multiple of 32 (what changed: a warp per row, lanes stride the row,
    partial sums reduced in shared memory)."""
    NT = threads  # a compile-time constant for the shared array

    @cuda.jit
    def spmv_v2_warp(indptr, indices, data, x, y):
        buf = cuda.shared.array(NT, float32)
        tid = cuda.threadIdx.x
        lane = tid % WARP
        row = cuda.grid(1) // WARP
        acc = float32(0.0)
        if row < y.shape[0]:
            for j in range(indptr[row] + lane, indptr[row + 1], WARP):
                acc += data[j] * x[indices[j]]
        buf[tid] = acc
        cuda.syncthreads()  # every thread reaches every barrier: the row guard only wraps loads and stores
        offset = WARP // 2
        while offset > 0:  # 5 levels: lane l adds lane l + offset of its own warp
            if lane < offset:
                buf[tid] += buf[tid + offset]
            cuda.syncthreads()
            offset //= 2
        if lane == 0 and row < y.shape[0]:
            y[row] = buf[tid]

    return spmv_v2_warp


# ------------------------------------------------------------------------------------------------ v3
@cuda.jit
def spmv_v3_shuffle(indptr, indices, data, x, y):
    """v3: what changed: the warp's 32 partial sums meet through register shuffles (GPU only)."""
    lane = cuda.threadIdx.x % WARP
    row = cuda.grid(1) // WARP
    acc = float32(0.0)
    if row < y.shape[0]:
        for j in range(indptr[row] + lane, indptr[row + 1], WARP):
            acc += data[j] * x[indices[j]]
    offset = WARP // 2
    while offset > 0:  # every lane of the warp runs the shuffles, in range or not
        acc += cuda.shfl_down_sync(FULL_MASK, acc, offset)
        offset //= 2
    if lane == 0 and row < y.shape[0]:
        y[row] = acc


# ---------------------------------------------------------------------------------------------- SpMM
@cuda.jit
def spmm_v1_row(indptr, indices, data, B, C):
    """SpMM: one thread per ``C[row, col]``; the threads of a row share its ``indices`` and ``data``."""
    col, row = cuda.grid(2)  # x along columns: a warp reads B[k, col ... col + 31] together
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for j in range(indptr[row], indptr[row + 1]):
            acc += data[j] * B[indices[j], col]
        C[row, col] = acc


# -------------------------------------------------------------------------------------------- launcher
def block_threads() -> int:
    """Threads per block of the SpMV kernels: 256 (8 warps) on a GPU, 64 (2 warps) on the simulator."""
    return 256 if scaledl.device.on_gpu() else 64


SPMM_BLOCK = {"cuda": (32, 8), "simulator": (8, 4)}


def resolve_variant(variant: str) -> str:
    """``auto`` -> ``shuffle`` on a GPU, ``warp`` on the simulator.

    Raises:
        ValueError: unknown variant. RuntimeError: ``shuffle`` on the simulator, which has no shuffles.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not an SpMV variant; expected one of {VARIANTS}")
    on_gpu = scaledl.device.on_gpu()
    if variant == "auto":
        return "shuffle" if on_gpu else "warp"
    if variant == "shuffle" and not on_gpu:
        raise RuntimeError("variant='shuffle' needs a GPU: Numba's CUDA simulator implements no warp shuffles "
                           "(shfl_down_sync); use variant='warp' or 'auto'")
    return variant


def csr_arrays(A) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr int32, indices int32, data float32)`` of a SciPy CSR matrix, or a TypeError naming ``A``."""
    if not (sp.issparse(A) and A.format == "csr"):
        raise TypeError(f"A must be a scipy.sparse CSR matrix (scipy.sparse.csr_array(dense)), got "
                        f"{type(A).__name__}" + (f" in {A.format.upper()} format" if sp.issparse(A) else ""))
    if np.dtype(A.dtype) != np.float32:
        raise TypeError(f"A must hold float32 values, got dtype {A.dtype} (convert with A.astype(np.float32))")
    return (np.ascontiguousarray(A.indptr, np.int32), np.ascontiguousarray(A.indices, np.int32),
            np.ascontiguousarray(A.data, np.float32))


def spmv_into(indptr, indices, data, x, y, variant: str = "auto"):
    """Launch one SpMV variant on arrays already in place (host arrays on the simulator, device arrays on a
    GPU), so a benchmark times the kernel alone."""
    kind = resolve_variant(variant)
    M = y.shape[0]
    if M == 0:
        return y
    threads = block_threads()
    if kind == "row":
        spmv_v1_row[(M + threads - 1) // threads, threads](indptr, indices, data, x, y)
    else:
        rows_per_block = threads // WARP
        kernel = warp_kernel(threads) if kind == "warp" else spmv_v3_shuffle
        kernel[(M + rows_per_block - 1) // rows_per_block, threads](indptr, indices, data, x, y)
    return y


def _vector(name, v, n):
    if np.dtype(getattr(v, "dtype", None)) != np.float32:
        raise TypeError(f"{name} must be float32, got dtype {getattr(v, 'dtype', type(v).__name__)}")
    if tuple(v.shape) != n:
        raise ValueError(f"{name} must have shape {n} to match A, got {tuple(v.shape)}")


def _run(kernel_launch, host_in, out_shape, out):
    """Copy host inputs to the GPU (when there is one), launch, copy back; on the simulator run in place."""
    y = out if out is not None else np.empty(out_shape, np.float32)
    if scaledl.device.on_gpu():
        dev = [cuda.to_device(a) for a in host_in]
        d_y = cuda.device_array(out_shape, np.float32)
        kernel_launch(*dev, d_y)
        y[...] = d_y.copy_to_host()
    else:
        kernel_launch(*host_in, y)
    return y


def spmv(A, x, variant: str = "auto", out=None) -> np.ndarray:
    """y = A @ x for a SciPy CSR float32 ``A`` (M x K) and a float32 ``x`` of length K.

    Raises:
        TypeError: ``A`` not CSR or not float32, ``x``/``out`` not float32.
        ValueError / RuntimeError: shapes that do not match, an unknown or unavailable variant.
    """
    kind = resolve_variant(variant)
    indptr, indices, data = csr_arrays(A)
    M, K = A.shape
    _vector("x", x, (K,))
    if out is not None:
        _vector("out", out, (M,))
    return _run(lambda *a: spmv_into(*a, variant=kind), (indptr, indices, data, np.ascontiguousarray(x)),
                (M,), out)


def spmm(A, B, out=None) -> np.ndarray:
    """C = A @ B for a SciPy CSR float32 ``A`` (M x K) and a dense float32 ``B`` (K x N)."""
    indptr, indices, data = csr_arrays(A)
    M, K = A.shape
    if np.dtype(getattr(B, "dtype", None)) != np.float32 or np.ndim(B) != 2:
        raise TypeError(f"B must be a 2-D float32 array, got {getattr(B, 'dtype', type(B).__name__)} "
                        f"of shape {np.shape(B)}")
    if B.shape[0] != K:
        raise ValueError(f"B must have {K} rows to match A ({M}x{K}), got shape {B.shape}")
    N = B.shape[1]
    if out is not None:
        _vector("out", out, (M, N))
    bx, by = SPMM_BLOCK[scaledl.device.backend()]

    def launch(indptr, indices, data, B, C):
        if M and N:
            spmm_v1_row[((N + bx - 1) // bx, (M + by - 1) // by), (bx, by)](indptr, indices, data, B, C)

    return _run(launch, (indptr, indices, data, np.ascontiguousarray(B)), (M, N), out)
