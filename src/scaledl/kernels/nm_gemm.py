"""2:4 compressed GEMM, C = A @ B with A stored as ``compress_nm(A)``: half the multiplies of a dense GEMM.

``A`` (M x K) is 2:4 sparse along K, the reduction axis, as the sparse tensor cores take their A operand; it
arrives as ``values`` (M x K/2, the kept entries) and ``metadata`` (M x ceil(K/16) uint16 words, each kept
value's 2-bit position in its group of 4, four groups per word, little-endian; see
:mod:`scaledl.sparsity.nm`). Each thread owns one ``C[row, col]`` and, for each of the K/2 kept values,
decodes its position ``k = 4 (j // 2) + idx`` and multiplies it with ``B[k, col]``: K/2 multiply-adds
instead of K, and B's rows of the pruned positions are never read for that row.

* ``v1 naive``: one thread per output element, everything from global memory (GEMM v1 with a decode).
  A tiled version would stage B in shared memory as :mod:`scaledl.kernels.gemm` v2 does; the metadata decode
  and the halved inner loop stay the same.

A group padded past K (``compress_nm(..., pad=True)``) may name a position >= K; its value is zero and the
kernel skips it, so it never reads past B.

>>> import numpy as np
>>> from scaledl.sparsity import compress_nm
>>> A = np.array([[1.0, 0, 0, 2, 0, 3, 4, 0]], np.float32)
>>> values, meta = compress_nm(A)
>>> nm_gemm(values, meta, np.ones((8, 2), np.float32))
array([[10., 10.]], dtype=float32)
"""

from __future__ import annotations

import numpy as np

import scaledl.device
from numba import cuda, float32

from scaledl.sparsity.nm import decompress_nm, metadata_words

N_KEPT, M_GROUP = 2, 4  # 2:4, the only pattern the hardware runs for 16-bit operands
IDX_BITS = 2
PER_WORD = 8  # 16-bit word / 2 bits
BLOCK = {"cuda": (16, 16), "simulator": (8, 4)}


def nm_gemm_reference(values, metadata, B) -> np.ndarray:
    """The specification: decompress A and multiply in float64."""
    K = np.shape(B)[0]
    A = decompress_nm(values, metadata, (np.shape(values)[0], K), N_KEPT, M_GROUP, axis=1, pad=True)
    return np.asarray(A, np.float64) @ np.asarray(B, np.float64)


def nm_gemm_multiplies(M: int, K: int, N: int) -> tuple[int, int]:
    """``(dense, compressed)`` multiply-add counts of an M x K x N GEMM: ``M N K`` and ``M N K / 2``.

    >>> nm_gemm_multiplies(2, 8, 3)
    (48, 24)
    """
    kept = -(-K // M_GROUP) * N_KEPT
    return M * N * K, M * N * kept


@cuda.jit
def nm_gemm_v1(values, metadata, B, C):
    """v1: one thread per C[row, col]; K/2 multiply-adds, each after decoding a 2-bit position."""
    col, row = cuda.grid(2)
    K = B.shape[0]
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for j in range(values.shape[1]):
            word = metadata[row, j // PER_WORD]
            idx = (word >> (IDX_BITS * (j % PER_WORD))) & 3
            k = (j // N_KEPT) * M_GROUP + idx
            if k < K:  # a padded group's slot may point past the last column of A
                acc += values[row, j] * B[k, col]
        C[row, col] = acc


def nm_gemm(values, metadata, B, out=None) -> np.ndarray:
    """C = A @ B where ``(values, metadata) = compress_nm(A, 2, 4, axis=1, pad=...)`` and B is K x N float32.

    Raises:
        TypeError: values or B not float32, metadata not uint16.
        ValueError: shapes that do not fit 2:4 compression of an M x K matrix.
    """
    for name, a, dt in (("values", values, np.float32), ("metadata", metadata, np.uint16), ("B", B, np.float32)):
        if np.ndim(a) != 2:
            raise ValueError(f"{name} must be 2-D, got shape {np.shape(a)}")
        if np.dtype(a.dtype) != dt:
            raise TypeError(f"{name} must be {np.dtype(dt).name}, got dtype {a.dtype}")
    K, N = B.shape
    M = values.shape[0]
    kept = -(-K // M_GROUP) * N_KEPT
    if values.shape != (M, kept):
        raise ValueError(f"values must have shape {(M, kept)} for B with K={K} rows (2 of every 4), "
                         f"got {values.shape}")
    if metadata.shape != (M, metadata_words(K)):
        raise ValueError(f"metadata must have shape {(M, metadata_words(K))}, got {metadata.shape}")
    C = out if out is not None else np.empty((M, N), np.float32)
    if C.shape != (M, N) or C.dtype != np.float32:
        raise ValueError(f"out must be float32 of shape {(M, N)}, got {C.dtype} {C.shape}")
    if not (M and N):
        return C
    bx, by = BLOCK[scaledl.device.backend()]
    grid = ((N + bx - 1) // bx, (M + by - 1) // by)
    args = [np.ascontiguousarray(a) for a in (values, metadata, B)]
    if scaledl.device.on_gpu():
        d_C = cuda.device_array((M, N), np.float32)
        nm_gemm_v1[grid, (bx, by)](*[cuda.to_device(a) for a in args], d_C)
        C[...] = d_C.copy_to_host()
    else:
        nm_gemm_v1[grid, (bx, by)](*args, C)
    return C
