"""2:4 compressed GEMM, C = A @ B with A stored as ``compress_nm(A)``: half the multiplies of a dense GEMM.

``A`` (M x K) is 2:4 sparse along K, the reduction axis, as the sparse tensor cores take their A operand; it
arrives as ``values`` (M x K/2, the kept entries) and ``metadata`` (M x ceil(K/16) uint16 words, each kept
value's 2-bit position in its group of 4, four groups per word, little-endian; see
:mod:`scaledl.sparsity.nm`). Each thread owns one ``C[row, col]`` and, for each of the K/2 kept values,
decodes its position ``k = 4 (j // 2) + idx`` and multiplies it with ``B[k, col]``: K/2 multiply-adds
instead of K, and B's rows of the pruned positions are never read for that row.

* ``v1 naive``: one thread per output element, everything from global memory (GEMM v1 with a decode).
* ``v2 tiled``: what changed: a ``T x T`` block walks K sixteen dense columns at a time (one metadata word
  per row, 8 kept values): it stages those 16 rows of B in shared memory, and each row's word and 8 values;
  each thread then decodes one word for 8 multiply-adds, gathering B from shared memory as a sparse
  tensor core gathers its B fragment.
* ``v3 decoded``: what changed, and why (the H200 ran v2 at 0.35x its dense twin,
  docs/gpu-runs/2026-11-26-nvidia-h200; ``scaledl kernels report`` shows why): v2 copies its tiles in loops whose
  trip count depends on the thread (``range(ty, K_STEP, T)``), which the compiler builds as a general loop, unrolled
  and with a remainder, in 64-bit signed indices, one load in flight at a time; and all 16 threads of a row decode
  the same word again. v3 copies each tile with loops of fixed length into registers, every load issued before the
  first store (GEMM v4, :mod:`scaledl.kernels.gemm_ladder`), in ``uint32`` indices (GEMM v5); the thread that loads
  a kept value also decodes its position, once, into shared memory beside it (``sK``, already scaled to a row of
  ``sB``); and a tile spans ``TILE_WORDS`` metadata words (64 dense columns), so a thread does 32 multiply-adds
  between two barriers where v2 did 8.

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

import functools

import numpy as np

import scaledl.device
from numba import cuda, float32, uint16, uint32

from scaledl.sparsity.nm import decompress_nm, metadata_words

N_KEPT, M_GROUP = 2, 4  # 2:4, the only pattern the hardware runs for 16-bit operands
IDX_BITS = 2
PER_WORD = 8  # 16-bit word / 2 bits
BLOCK = {"cuda": (16, 16), "simulator": (8, 4)}  # v1's threads per block (x along the columns of C)
TILE = {"cuda": 16, "simulator": 8}  # v2's and v3's T: T x T threads, T x T outputs per block
K_STEP = M_GROUP * PER_WORD // N_KEPT  # 16 dense columns of A per metadata word
TILE_WORDS = 4  # v3: metadata words per row per tile, 64 dense columns: 32 multiply-adds between two barriers
VARIANTS = ("naive", "tiled", "decoded")


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


@functools.lru_cache(maxsize=None)
def tiled_kernel(tile: int):
    """v2 for a ``tile x tile`` block (what changed: K in steps of one metadata word; B, values and words
    pass through shared memory; one decode of a word feeds 8 multiply-adds)."""
    T = tile

    @cuda.jit
    def nm_gemm_v2_tiled(values, metadata, B, C):
        sB = cuda.shared.array((K_STEP, T), float32)  # B[k0 + k, col0 + tx]
        sV = cuda.shared.array((T, PER_WORD), float32)  # the 8 kept values of each of the block's rows
        sM = cuda.shared.array(T, uint16)  # one metadata word per row
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * T + ty
        col = cuda.blockIdx.x * T + tx
        M = C.shape[0]
        N = C.shape[1]
        K = B.shape[0]
        kept = values.shape[1]
        acc = float32(0.0)
        for w in range((K + K_STEP - 1) // K_STEP):
            k0 = w * K_STEP
            for k in range(ty, K_STEP, T):  # the block's rows of threads share the copy of 16 rows of B
                sB[k, tx] = B[k0 + k, col] if (k0 + k < K and col < N) else float32(0.0)
            for j in range(tx, PER_WORD, T):
                jj = w * PER_WORD + j
                sV[ty, j] = values[row, jj] if (row < M and jj < kept) else float32(0.0)
            if tx == 0:
                sM[ty] = metadata[row, w] if row < M else uint16(0)
            cuda.syncthreads()
            word = sM[ty]
            for j in range(PER_WORD):  # unrolled by the compiler: a fixed 8 steps
                k = (j // N_KEPT) * M_GROUP + ((word >> (IDX_BITS * j)) & 3)
                acc += sV[ty, j] * sB[k, tx]  # past K, sB holds zeros (and so does sV past the kept values)
            cuda.syncthreads()
        if row < M and col < N:
            C[row, col] = acc

    return nm_gemm_v2_tiled


nm_gemm_v2_tiled = tiled_kernel(TILE["cuda"])


@functools.lru_cache(maxsize=None)
def decoded_kernel(tile: int):
    """v3 for a ``tile x tile`` block (what changed, see the module docstring: fixed-length loads, all issued
    first, in unsigned indices; each position decoded once per tile into shared memory; 64 dense columns a tile).

    Raises:
        ValueError: a tile that does not divide the tile's 64 dense columns (then the loads would not share
            out evenly, and each would need a guard of its own).
    """
    T = tile
    KT = TILE_WORDS * K_STEP  # dense columns of A (rows of B) per tile
    KEPT_T = TILE_WORDS * PER_WORD  # kept values per row of A per tile: KT / 2
    if not (isinstance(T, int) and 0 < T and KT % T == 0):
        raise ValueError(f"tile={tile!r}: expected a divisor of {KT} (the dense columns of a tile)")
    NT = T * T  # threads per block
    LOADS_B = KT // T  # loads of B per thread per tile: rows ty, ty + T, ... of the tile, column tx
    LOADS_V = KEPT_T // T  # kept values (and their words) per thread per tile
    SB = KT * T  # a shared array's shape must be a constant: computed here, not in the kernel

    @cuda.jit
    def nm_gemm_v3_decoded(values, metadata, B, C):
        sB = cuda.shared.array(SB, float32)  # B[k0 + k, col0 + c] at k * T + c
        sV = cuda.shared.array((T, KEPT_T), float32)  # the kept values of the block's rows in this tile
        sK = cuda.shared.array((T, KEPT_T), uint32)  # what changed: each value's row of sB (times T), decoded
        rb = cuda.local.array(LOADS_B, float32)  # this thread's share of the tile, on its way to shared memory
        rv = cuda.local.array(LOADS_V, float32)
        rw = cuda.local.array(LOADS_V, uint32)  # the metadata word of each of those values
        tx = uint32(cuda.threadIdx.x)  # unsigned from here on (GEMM v5: no wrap-around of negative indices)
        ty = uint32(cuda.threadIdx.y)
        tid = ty * uint32(T) + tx
        row0 = uint32(cuda.blockIdx.y) * uint32(T)
        col0 = uint32(cuda.blockIdx.x) * uint32(T)
        M = uint32(C.shape[0])
        N = uint32(C.shape[1])
        K = uint32(B.shape[0])
        kept = uint32(values.shape[1])
        col = col0 + tx
        acc = float32(0.0)
        for k0 in range(uint32(0), K, uint32(KT)):
            j0 = k0 // uint32(M_GROUP) * uint32(N_KEPT)  # the tile's first kept value in each row
            for l in range(LOADS_B):  # what changed: every load of the tile into registers first (GEMM v4) ...
                k = k0 + ty + uint32(l * T)
                rb[l] = B[k, col] if (k < K and col < N) else float32(0.0)
            for l in range(LOADS_V):
                q = tid + uint32(l * NT)  # the q-th of the tile's T x KEPT_T values
                r = row0 + q // uint32(KEPT_T)
                jj = j0 + q % uint32(KEPT_T)
                inside = r < M and jj < kept
                rv[l] = values[r, jj] if inside else float32(0.0)
                rw[l] = uint32(metadata[r, jj // uint32(PER_WORD)]) if inside else uint32(0)
            for l in range(LOADS_B):  # ... then the stores, the first of which waits for its load
                sB[(ty + uint32(l * T)) * uint32(T) + tx] = rb[l]
            for l in range(LOADS_V):
                q = tid + uint32(l * NT)
                r = q // uint32(KEPT_T)
                j = q % uint32(KEPT_T)
                idx = (rw[l] >> (uint32(IDX_BITS) * (j % uint32(PER_WORD)))) & uint32(3)
                sV[r, j] = rv[l]
                # what changed: the position decoded once, as the offset of its row in sB; a value outside A is
                # zero and points at its group's first row, inside the tile (past K, sB holds zeros)
                sK[r, j] = ((j // uint32(N_KEPT)) * uint32(M_GROUP) + idx) * uint32(T)
            cuda.syncthreads()
            for j in range(KEPT_T):  # unrolled by the compiler: a fixed 32 steps
                acc += sV[ty, j] * sB[sK[ty, j] + tx]
            cuda.syncthreads()
        if row0 + ty < M and col < N:
            C[row0 + ty, col] = acc

    return nm_gemm_v3_decoded


def kernel_and_block(variant: str, backend: str | None = None):
    """``(kernel, (threads x, threads y))`` of ``variant`` on ``backend`` (the active one by default): what
    :func:`nm_gemm` and the bench launch, one block per ``x`` by ``y`` outputs of C."""
    backend = backend or scaledl.device.backend()
    if variant == "naive":
        return nm_gemm_v1, BLOCK[backend]
    t = TILE[backend]
    return (tiled_kernel(t) if variant == "tiled" else decoded_kernel(t)), (t, t)


def nm_gemm(values, metadata, B, out=None, variant: str = "tiled") -> np.ndarray:
    """C = A @ B where ``(values, metadata) = compress_nm(A, 2, 4, axis=1, pad=...)`` and B is K x N float32.

    ``variant``: ``"naive"`` (v1), ``"tiled"`` (v2) or ``"decoded"`` (v3).

    Raises:
        TypeError: values or B not float32, metadata not uint16.
        ValueError: shapes that do not fit 2:4 compression of an M x K matrix, an unknown variant.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not a 2:4 GEMM variant; expected one of {VARIANTS}")
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
    kernel, (bx, by) = kernel_and_block(variant)
    grid = ((N + bx - 1) // bx, (M + by - 1) // by)
    args = [np.ascontiguousarray(a) for a in (values, metadata, B)]
    if scaledl.device.on_gpu():
        d_C = cuda.device_array((M, N), np.float32)
        kernel[grid, (bx, by)](*[cuda.to_device(a) for a in args], d_C)
        C[...] = d_C.copy_to_host()
    else:
        kernel[grid, (bx, by)](*args, C)
    return C
