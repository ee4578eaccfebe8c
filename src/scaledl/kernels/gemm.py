"""GEMM, C = A @ B in float32: a NumPy reference, eight kernels, and a launcher that runs on either backend.

The variants, each one step further from the naive loop:

* ``v1 naive``: one thread per output element; it reads a whole row of A and a whole column of B from
  global memory, so every input element is fetched once per output that needs it.
* ``v2 tiled``: a block of ``tile x tile`` threads stages ``tile x tile`` sub-matrices of A and B in shared
  memory; each element fetched from global memory is reused ``tile`` times.
* ``v3 regblock``: each thread keeps a ``thread_m x thread_n`` patch of C in registers and the block covers a
  ``block_m x block_n`` patch of C; a fetched element is reused ``block_n`` (A) or ``block_m`` (B) times, and
  each shared-memory read feeds several FMAs.

v4 to v8 (:mod:`scaledl.kernels.gemm_ladder`, :mod:`scaledl.kernels.gemm_kloop`; launched from here) keep v3's
tiling and change one thing each, for a reason the first H200 run gave (v3 at 15 % of cuBLAS: 196 registers, so 8
warps per SM, stalled on global loads issued one at a time; docs/gpu-runs/2026-11-26-nvidia-h200) or that ``scaledl
kernels report`` shows in the machine code (:mod:`scaledl.kernels.static_report`):

* ``v4 fixed_loads``: the tile loads run in loops of fixed length, so a thread's share fits an array in
  registers and every load is issued before the first store waits on one (v3 loaded, waited, stored: one load
  in flight at a time).
* ``v5 index32``: indices in unsigned 32-bit arithmetic: Numba's default, 64-bit signed indices with
  negative-index wrap-around, cost registers and an address calculation per access (about 160 -> 120
  registers: two blocks of 256 threads per SM instead of one).
* ``v6 vec4``: 128-bit global loads (:func:`scaledl.kernels.vector_load.load4`, CUDA's ``float4``), and each
  thread's rows and columns in two runs of ``thread_m / 2`` (``thread_n / 2``) neighbours, so the inner loop
  reads shared memory 128 bits at a time too (A's tile is stored transposed, as in v3).
* ``v7 unroll_k``: the k loop in steps of two (an inner loop of constant trip count, which the compiler
  unrolls), so its counter and branch are paid once per ``2 thread_m thread_n`` FMAs.
* ``v8 prefetch``: the next tile is loaded into registers while the current one is multiplied, so its loads
  are in flight during the arithmetic instead of before it.

Every kernel guards its loads and stores, so any ``M x K @ K x N`` works, including sizes that are not
multiples of the tile. :mod:`scaledl.kernels.gemm_traffic` counts what each variant moves.

Note: the package exports the *function* ``scaledl.kernels.gemm``, which shadows this module as an attribute
of ``scaledl.kernels``; import names from it with ``from scaledl.kernels.gemm import gemm_v2_tiled``.

>>> import numpy as np
>>> from scaledl.kernels import gemm
>>> A = np.ones((5, 3), np.float32); B = np.ones((3, 7), np.float32)
>>> gemm(A, B, variant="tiled")[0, :3]
array([3., 3., 3.], dtype=float32)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda, float32

from scaledl.kernels.gemm_kloop import prefetch_kernel, unroll_k_kernel
from scaledl.kernels.reference import gemm_reference  # noqa: F401  (chapters and tests import it from here)
from scaledl.kernels.gemm_ladder import PAD, fixed_loads_kernel, index32_kernel, vec4_kernel  # noqa: F401

# In ladder order; the last is the fastest the book's model predicts (scaledl.kernels.kernel_model).
VARIANTS = ("naive", "tiled", "regblock", "fixed_loads", "index32", "vec4", "unroll_k", "prefetch")
LADDER = VARIANTS[3:]  # v4 on: v3's tiling, one change each
LADDER_FACTORIES = {"fixed_loads": fixed_loads_kernel, "index32": index32_kernel, "vec4": vec4_kernel,
                    "unroll_k": unroll_k_kernel, "prefetch": prefetch_kernel}


# ------------------------------------------------------------------------------------------ tiling specs
@dataclass(frozen=True)
class TiledConfig:
    """v2: a square block of ``tile x tile`` threads, one output each, sharing ``tile x tile`` tiles."""

    tile: int = 16  # 16 x 16 = 256 threads: enough warps per block to hide latency, 2 KiB of shared memory

    @property
    def threads_per_block(self) -> int:
        return self.tile * self.tile

    @property
    def shared_bytes(self) -> int:
        """Shared memory per block: a ``tile x tile`` tile of A and one of B, float32."""
        return 2 * 4 * self.tile * self.tile


@dataclass(frozen=True)
class RegBlockConfig:
    """v3: a block computes ``block_m x block_n`` of C, ``block_k`` columns of A at a time; each thread
    keeps ``thread_m x thread_n`` outputs in registers."""

    block_m: int = 128  # 128 x 128 x 8 with 8 x 8 per thread: the classic SGEMM shape (256 threads, 64
    block_n: int = 128  # accumulators each); 8 KiB of shared memory per stage
    block_k: int = 8
    thread_m: int = 8
    thread_n: int = 8

    def __post_init__(self):
        for name in ("block_m", "block_n", "block_k", "thread_m", "thread_n"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.block_m % self.thread_m or self.block_n % self.thread_n:
            raise ValueError(f"block_m={self.block_m} and block_n={self.block_n} must be multiples of "
                             f"thread_m={self.thread_m} and thread_n={self.thread_n}")

    @property
    def threads_per_block(self) -> int:
        return (self.block_m // self.thread_m) * (self.block_n // self.thread_n)

    @property
    def shared_bytes(self) -> int:
        """Shared memory per block: the transposed A tile (``block_k x (block_m + PAD)``) and the B tile
        (``block_k x block_n``), float32; what ptxas reports for v3 (chapter 04 checks it)."""
        return 4 * self.block_k * (self.block_m + PAD + self.block_n)


@dataclass(frozen=True)
class Vec4Config(RegBlockConfig):
    """v6 to v8: v3's tiling, with what 128-bit accesses need: rows of the tiles in whole float4s
    (``block_k``, ``block_n`` multiples of 4) and each thread's rows and columns in two equal runs."""

    def __post_init__(self):
        super().__post_init__()
        if self.block_k % 4 or self.block_n % 4:
            raise ValueError(f"block_k={self.block_k} and block_n={self.block_n} must be multiples of 4 (float4 "
                             "loads)")
        if self.thread_m % 2 or self.thread_n % 2:
            raise ValueError(f"thread_m={self.thread_m} and thread_n={self.thread_n} must be even (two runs each)")


# What gemm() uses on each backend. The simulator runs one Python thread per CUDA thread, so its shapes are
# small (64 threads per block) while keeping every mechanism (several k-steps, several outputs per thread).
# v4 to v8 keep v3's shapes, so each row of the ladder differs from the one before by its one change.
DEFAULT_TILING = {
    "cuda": {"naive": None, "tiled": TiledConfig(16), "regblock": RegBlockConfig(128, 128, 8, 8, 8),
             "fixed_loads": RegBlockConfig(128, 128, 8, 8, 8), "index32": RegBlockConfig(128, 128, 8, 8, 8),
             **{v: Vec4Config(128, 128, 8, 8, 8) for v in ("vec4", "unroll_k", "prefetch")}},
    "simulator": {"naive": None, "tiled": TiledConfig(8), "regblock": RegBlockConfig(16, 16, 8, 2, 2),
                  "fixed_loads": RegBlockConfig(16, 16, 8, 2, 2), "index32": RegBlockConfig(16, 16, 8, 2, 2),
                  **{v: Vec4Config(16, 16, 8, 2, 2) for v in ("vec4", "unroll_k", "prefetch")}},
}
NAIVE_BLOCK = (16, 16)  # threads per block of v1 (x along columns of C, so a warp reads B coalesced)
# PAD (v3 on: spare columns of the transposed A tile) is defined in gemm_ladder, which v3 to v8 share.


# ------------------------------------------------------------------------------------------------ v1
@cuda.jit
def gemm_v1_naive(A, B, C):
    """v1: one thread per C[row, col]; a dot product straight out of global memory."""
    col, row = cuda.grid(2)  # x runs along the columns: neighbouring threads read neighbouring B[k, col]
    M, K = A.shape
    N = B.shape[1]
    if row < M and col < N:  # the grid is rounded up to whole blocks: guard the ragged edge
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


# ------------------------------------------------------------------------------------------------ v2
@functools.lru_cache(maxsize=None)
def tiled_kernel(tile: int):
    """v2 for a given tile size (what changed: A and B pass through shared memory, tile x tile at a time)."""
    T = tile  # a compile-time constant: shared arrays need a fixed shape

    @cuda.jit
    def gemm_v2_tiled(A, B, C):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * T + ty
        col = cuda.blockIdx.x * T + tx
        M, K = A.shape
        N = B.shape[1]
        acc = float32(0.0)
        for t in range((K + T - 1) // T):
            k = t * T + tx  # each thread fetches one element of each tile; out of range -> 0
            sA[ty, tx] = A[row, k] if (row < M and k < K) else float32(0.0)
            k = t * T + ty
            sB[ty, tx] = B[k, col] if (k < K and col < N) else float32(0.0)
            cuda.syncthreads()  # the whole tile is in shared memory before anyone reads it
            for kk in range(T):
                acc += sA[ty, kk] * sB[kk, tx]
            cuda.syncthreads()  # ... and nobody overwrites it while a neighbour is still reading
        if row < M and col < N:
            C[row, col] = acc

    return gemm_v2_tiled


# ------------------------------------------------------------------------------------------------ v3
@functools.lru_cache(maxsize=None)
def regblock_kernel(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int):
    """v3 for a given tiling (what changed: each thread accumulates thread_m x thread_n outputs in
    registers, so each value read from shared memory feeds thread_n or thread_m FMAs)."""
    BM, BN, BK, TM, TN = block_m, block_n, block_k, thread_m, thread_n
    RM, RN = BM // TM, BN // TN  # threads along the rows / columns of the block's C patch
    NT = RM * RN  # threads per block (1-D)
    SA_COLS = BM + PAD  # sA is stored transposed, PAD spare columns (see PAD); computed here: a shared array's
    # shape must be a compile-time constant, not an expression

    @cuda.jit
    def gemm_v3_regblock(A, B, C):
        sA = cuda.shared.array((BK, SA_COLS), float32)  # sA[k, m] = A[row0 + m, k0 + k]
        sB = cuda.shared.array((BK, BN), float32)  # sB[k, n] = B[k0 + k, col0 + n]
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        tid = cuda.threadIdx.x
        tr = tid // RN  # this thread owns rows tr, tr + RM, ... and columns tc, tc + RN, ... of the patch:
        tc = tid % RN  # strided, so a warp's shared reads hit distinct banks and its stores coalesce
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for k0 in range(0, K, BK):
            for idx in range(tid, BM * BK, NT):  # the block's threads share the copy of the A tile
                m = idx // BK
                k = idx % BK
                r = row0 + m
                kk = k0 + k
                sA[k, m] = A[r, kk] if (r < M and kk < K) else float32(0.0)
            for idx in range(tid, BK * BN, NT):
                k = idx // BN
                n = idx % BN
                kk = k0 + k
                c = col0 + n
                sB[k, n] = B[kk, c] if (kk < K and c < N) else float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):
                    a_reg[i] = sA[k, tr + i * RM]
                for j in range(TN):
                    b_reg[j] = sB[k, tc + j * RN]
                for i in range(TM):  # the outer product: TM * TN FMAs from TM + TN shared reads
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + tr + i * RM
            for j in range(TN):
                c = col0 + tc + j * RN
                if r < M and c < N:
                    C[r, c] = acc[i, j]

    return gemm_v3_regblock


gemm_v2_tiled = tiled_kernel(DEFAULT_TILING["cuda"]["tiled"].tile)
gemm_v3_regblock = regblock_kernel(128, 128, 8, 8, 8)


# -------------------------------------------------------------------------------------------- launcher
def _cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def resolve_tiling(variant: str, tiling: dict):
    """The config object for ``variant``: a whole config passed as ``config=`` (a :class:`TiledConfig` for
    ``"tiled"``, a :class:`RegBlockConfig` for v3 to v8, checked as the variant's own config class), or keyword
    overrides (``tile=`` or ``block_m=`` ...) with the rest from the active backend's defaults.

    >>> resolve_tiling("vec4", {"config": DEFAULT_TILING["cuda"]["regblock"]})
    Vec4Config(block_m=128, block_n=128, block_k=8, thread_m=8, thread_n=8)

    Raises:
        ValueError: unknown variant, or a config the variant cannot run (e.g. odd thread_m for v6 to v8).
        TypeError: a keyword that the variant does not take, a config of the wrong class, or both a config
            and keywords.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not a GEMM variant; expected one of {VARIANTS}")
    default = DEFAULT_TILING[scaledl.device.backend()][variant]
    tiling = dict(tiling)
    config = tiling.pop("config", None)
    if default is None:
        if tiling or config is not None:
            raise TypeError(f"variant 'naive' takes no tiling parameters, got {sorted(tiling) or ['config']}")
        return None
    if config is not None:
        if tiling:
            raise TypeError(f"give config= or tiling keywords, not both: got config and {sorted(tiling)}")
        want = TiledConfig if variant == "tiled" else RegBlockConfig
        if not isinstance(config, want):
            raise TypeError(f"config for variant {variant!r} must be a {want.__name__}, got {config!r}")
        return type(default)(**config.__dict__)
    allowed = set(default.__dataclass_fields__)
    unknown = set(tiling) - allowed
    if unknown:
        raise TypeError(f"variant {variant!r} takes tiling parameters {sorted(allowed)}, got {sorted(unknown)}")
    if variant == "tiled" and "tile" in tiling:
        t = tiling["tile"]
        if not isinstance(t, (int, np.integer)) or t < 1:
            raise ValueError(f"tile must be a positive int, got {t!r}")
    return type(default)(**{**default.__dict__, **tiling})


def launch_config(M: int, N: int, variant: str, config) -> tuple[tuple[int, int], tuple[int, ...]]:
    """``(grid, block)`` for a launch over an ``M x N`` output: whole blocks covering C, rounded up."""
    if variant == "naive":
        bx, by = NAIVE_BLOCK
        return (_cdiv(N, bx), _cdiv(M, by)), (bx, by)
    if variant == "tiled":
        return (_cdiv(N, config.tile), _cdiv(M, config.tile)), (config.tile, config.tile)
    return (_cdiv(N, config.block_n), _cdiv(M, config.block_m)), (config.threads_per_block,)


def kernel_for(variant: str, config):
    """The compiled kernel of ``variant`` specialised for ``config``."""
    if variant == "naive":
        return gemm_v1_naive
    if variant == "tiled":
        return tiled_kernel(int(config.tile))
    c = config
    factory = LADDER_FACTORIES.get(variant, regblock_kernel)
    return factory(int(c.block_m), int(c.block_n), int(c.block_k), int(c.thread_m), int(c.thread_n))


def _check_operand(name: str, X) -> tuple[int, int]:
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {shape!r}")
    if np.dtype(getattr(X, "dtype", None)) != np.float32:
        raise TypeError(f"{name} must be float32, got dtype {X.dtype} (convert with .astype(np.float32))")
    return int(shape[0]), int(shape[1])


def gemm(A, B, variant: str = "tiled", out=None, **tiling):
    """C = A @ B for float32 matrices of any shape, on the active backend.

    Args:
        A: ``M x K`` float32 (NumPy, or a device array on a GPU).
        B: ``K x N`` float32.
        variant: ``"naive"`` (v1), ``"tiled"`` (v2), ``"regblock"`` (v3), or v4 to v8 (:data:`VARIANTS`).
        out: optional ``M x N`` float32 array to write into (same kind as A).
        **tiling: the variant's tiling as a config object (``config=RegBlockConfig(...)``) or overrides of the
            backend's, e.g. ``tile=8`` or ``block_m=64`` (:func:`resolve_tiling`).

    Returns:
        C (``out`` when given): a NumPy array for NumPy inputs, a device array for device inputs.

    Raises:
        ValueError: shapes that are not 2-D or do not chain, an unknown variant, a bad ``out`` shape.
        TypeError: an operand that is not float32, or a tiling keyword the variant does not take.
    """
    config = resolve_tiling(variant, tiling)
    M, K = _check_operand("A", A)
    K2, N = _check_operand("B", B)
    if K2 != K:
        raise ValueError(f"inner dimensions differ: A is {M}x{K} but B is {K2}x{N} (expected B to have {K} rows)")
    if out is not None:
        if tuple(out.shape) != (M, N):
            raise ValueError(f"out must have shape {(M, N)}, got {tuple(out.shape)}")
        if np.dtype(out.dtype) != np.float32:
            raise TypeError(f"out must be float32, got dtype {out.dtype}")
    on_device = scaledl.device.on_gpu() and cuda.is_cuda_array(A)
    if scaledl.device.on_gpu() and not on_device:  # host arrays on a GPU: copy once each way
        dA, dB = cuda.to_device(np.ascontiguousarray(A)), cuda.to_device(np.ascontiguousarray(B))
        dC = cuda.device_array((M, N), np.float32)
    else:
        dA, dB = A, B
        dC = out if out is not None else (cuda.device_array((M, N), np.float32) if on_device
                                          else np.empty((M, N), np.float32))
    if M and N:
        grid, block = launch_config(M, N, variant, config)
        kernel_for(variant, config)[grid, block](dA, dB, dC)
    if scaledl.device.on_gpu() and not on_device:
        host = dC.copy_to_host()
        if out is None:
            return host
        out[...] = host
        return out
    return dC
