"""GEMM v4 to v6: the book's register-blocked GEMM (v3, :mod:`scaledl.kernels.gemm`) one change at a time;
v7 and v8, which change the k loop, are in :mod:`scaledl.kernels.gemm_kloop`.

Each kernel is v3's tiling (``block_m x block_n`` of C per block, ``block_k`` columns of A per step,
``thread_m x thread_n`` per thread) with one change over the one before, and a docstring saying why; the
reasons come from the first H200 run (docs/gpu-runs/2026-11-26-nvidia-h200: v3 at 15 % of cuBLAS, 196
registers, 8 warps per SM, stalled on global loads) and from ``scaledl kernels report``, which shows what the
compiler made of each (:mod:`scaledl.kernels.static_report`). :mod:`scaledl.kernels.gemm` holds the
reference, v1 to v3, the tiling configs and the launcher, which runs these too (``variant="prefetch"``);
:mod:`scaledl.kernels.kernel_model` predicts their speed.

Two things Numba does differently from CUDA C, each used once: indices are 64-bit and signed unless made
``uint32`` (v5), and a 128-bit load needs :func:`scaledl.kernels.vector_load.load4` (v6). The kernels call no
``@cuda.jit(device=True)`` function: a counted run (``count_gemm_traffic``) executes their Python body beside a
GPU too, where a device function could not be called.
"""

from __future__ import annotations

import functools

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda, float32, uint32

from scaledl.kernels.vector_load import load4_guarded

__all__ = ["fixed_loads_kernel", "index32_kernel", "vec4_kernel", "PAD"]

# v3 on (gemm.regblock_kernel and every variant here): spare columns of the transposed A tile sA
# (block_k x (block_m + PAD)), so that the threads storing neighbouring k of one row of A write to different
# shared-memory banks; a multiple of 4, so rows of sA stay 16-byte aligned for v6's 128-bit shared loads. A tile
# pair takes 4 (block_k (block_m + PAD) + block_k block_n) bytes. gemm.PAD is this.
PAD = 4


# ------------------------------------------------------------------------------------------------ v4
@functools.lru_cache(maxsize=None)
def fixed_loads_kernel(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int):
    """v4: v3 with one change: each thread's share of a tile is copied by loops of fixed length ``LOADS_A``
    (a compile-time constant) instead of ``range(tid, BM * BK, NT)``, whose trip count depends on the thread.
    With a fixed length the share fits an array in registers, so all its loads are issued first and the stores
    to shared memory follow; v3 loaded, waited, stored, then loaded the next (one load in flight: a load under
    a bounds guard is a branch, and the compiler does not move it above the store before it). At the GPU shape
    ptxas issues 7 of the 8 loads before the first store (``scaledl kernels report``: 28 bytes in flight)."""
    BM, BN, BK, TM, TN = block_m, block_n, block_k, thread_m, thread_n
    RM, RN = BM // TM, BN // TN
    NT = RM * RN

    SA_COLS = BM + PAD
    LOADS_A = (BM * BK + NT - 1) // NT  # elements of each tile a thread copies (the last trip may be short)
    LOADS_B = (BK * BN + NT - 1) // NT

    @cuda.jit
    def gemm_v4_fixed_loads(A, B, C):
        sA = cuda.shared.array((BK, SA_COLS), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        ra = cuda.local.array(LOADS_A, float32)  # this thread's share of the tiles, on its way to shared memory
        rb = cuda.local.array(LOADS_B, float32)
        tid = cuda.threadIdx.x
        tr = tid // RN
        tc = tid % RN
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for k0 in range(0, K, BK):
            for l in range(LOADS_A):  # what changed: every load of the tile into registers first ...
                idx = tid + l * NT
                r = row0 + idx // BK
                kk = k0 + idx % BK
                ra[l] = A[r, kk] if (idx < BM * BK and r < M and kk < K) else float32(0.0)
            for l in range(LOADS_B):
                idx = tid + l * NT
                kk = k0 + idx // BN
                c = col0 + idx % BN
                rb[l] = B[kk, c] if (idx < BK * BN and kk < K and c < N) else float32(0.0)
            for l in range(LOADS_A):  # ... then every store, the first of which waits for its load
                idx = tid + l * NT
                if idx < BM * BK:
                    sA[idx % BK, idx // BK] = ra[l]
            for l in range(LOADS_B):
                idx = tid + l * NT
                if idx < BK * BN:
                    sB[idx // BN, idx % BN] = rb[l]
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):
                    a_reg[i] = sA[k, tr + i * RM]
                for j in range(TN):
                    b_reg[j] = sB[k, tc + j * RN]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + tr + i * RM
            for j in range(TN):
                c = col0 + tc + j * RN
                if r < M and c < N:
                    C[r, c] = acc[i, j]

    return gemm_v4_fixed_loads


# ------------------------------------------------------------------------------------------------ v5
@functools.lru_cache(maxsize=None)
def index32_kernel(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int):
    """v5: v4 with every index an unsigned 32-bit integer (``uint32``). Numba's indices are 64-bit and signed,
    and it makes ``A[i]`` wrap a negative ``i`` around (``i + len``): two registers per index and a compare and
    select per access. Unsigned indices cannot be negative, so that code goes, and v4's ~160 registers become
    ~120 (sm_90): two blocks of 256 threads per SM instead of one. Sizes stay below 2**32 elements a dimension."""
    BM, BN, BK, TM, TN = block_m, block_n, block_k, thread_m, thread_n
    RM, RN = BM // TM, BN // TN
    NT = RM * RN

    SA_COLS = BM + PAD
    LOADS_A = (BM * BK + NT - 1) // NT
    LOADS_B = (BK * BN + NT - 1) // NT

    @cuda.jit
    def gemm_v5_index32(A, B, C):
        sA = cuda.shared.array((BK, SA_COLS), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        ra = cuda.local.array(LOADS_A, float32)
        rb = cuda.local.array(LOADS_B, float32)
        tid = uint32(cuda.threadIdx.x)  # what changed: uint32 from here on
        tr = tid // uint32(RN)
        tc = tid % uint32(RN)
        row0 = uint32(cuda.blockIdx.y) * uint32(BM)
        col0 = uint32(cuda.blockIdx.x) * uint32(BN)
        M = uint32(A.shape[0])
        K = uint32(A.shape[1])
        N = uint32(B.shape[1])
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for k0 in range(uint32(0), K, uint32(BK)):
            for l in range(LOADS_A):
                idx = tid + uint32(l * NT)
                r = row0 + idx // uint32(BK)
                kk = k0 + idx % uint32(BK)
                ra[l] = A[r, kk] if (idx < uint32(BM * BK) and r < M and kk < K) else float32(0.0)
            for l in range(LOADS_B):
                idx = tid + uint32(l * NT)
                kk = k0 + idx // uint32(BN)
                c = col0 + idx % uint32(BN)
                rb[l] = B[kk, c] if (idx < uint32(BK * BN) and kk < K and c < N) else float32(0.0)
            for l in range(LOADS_A):
                idx = tid + uint32(l * NT)
                if idx < uint32(BM * BK):
                    sA[idx % uint32(BK), idx // uint32(BK)] = ra[l]
            for l in range(LOADS_B):
                idx = tid + uint32(l * NT)
                if idx < uint32(BK * BN):
                    sB[idx // uint32(BN), idx % uint32(BN)] = rb[l]
            cuda.syncthreads()
            for k in range(uint32(BK)):  # a 32-bit loop counter too
                for i in range(TM):
                    a_reg[i] = sA[k, tr + uint32(i * RM)]
                for j in range(TN):
                    b_reg[j] = sB[k, tc + uint32(j * RN)]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + tr + uint32(i * RM)
            for j in range(TN):
                c = col0 + tc + uint32(j * RN)
                if r < M and c < N:
                    C[r, c] = acc[i, j]

    return gemm_v5_index32


# ------------------------------------------------------------------------------------------------ v6
@functools.lru_cache(maxsize=None)
def vec4_kernel(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int):
    """v6: v5 with 128-bit accesses. A tile load is ``BM * BK / 4`` float4s (one per thread at the GPU
    shape), each four neighbours along a row of A or B. A's tile is stored transposed (``sA[k, m]``), and a
    thread owns rows ``tr * HM + i`` and ``BM / 2 + tr * HM + i`` (``HM = thread_m / 2``) rather than v3's
    ``tr + i * RM``: each run of HM neighbours is one 128-bit shared load (LDS.128). Two runs half a tile apart,
    not one run of thread_m: a warp's 16 column groups then read 256 consecutive bytes of sB, which the 32
    banks serve without conflict (one run of 8 would put lanes 0 and 4 on the same bank)."""
    BM, BN, BK, TM, TN = block_m, block_n, block_k, thread_m, thread_n
    RM, RN = BM // TM, BN // TN
    NT = RM * RN
    HM, HN = TM // 2, TN // 2
    HALF_M, HALF_N = BM // 2, BN // 2

    SA_COLS = BM + PAD
    KQ, NQ = BK // 4, BN // 4  # float4s along a row of the A tile / of the B tile
    LOADS_A = (BM * KQ + NT - 1) // NT
    LOADS_B = (BK * NQ + NT - 1) // NT

    @cuda.jit
    def gemm_v6_vec4(A, B, C):
        sA = cuda.shared.array((BK, SA_COLS), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        pa = cuda.local.array((LOADS_A, 4), float32)  # v4's loads-then-stores, a float4 at a time
        pb = cuda.local.array((LOADS_B, 4), float32)
        tid = uint32(cuda.threadIdx.x)
        tr = tid // uint32(RN)
        tc = tid % uint32(RN)
        row0 = uint32(cuda.blockIdx.y) * uint32(BM)
        col0 = uint32(cuda.blockIdx.x) * uint32(BN)
        M = uint32(A.shape[0])
        K = uint32(A.shape[1])
        N = uint32(B.shape[1])
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for k0 in range(uint32(0), K, uint32(BK)):
            for l in range(LOADS_A):  # what changed: a float4 of A (row m, columns k..k+3) per load
                q = tid + uint32(l * NT)
                if q < uint32(BM * KQ):
                    x0, x1, x2, x3 = load4_guarded(A, row0 + q // uint32(KQ), k0 + q % uint32(KQ) * uint32(4), M, K)
                    pa[l, 0], pa[l, 1], pa[l, 2], pa[l, 3] = x0, x1, x2, x3
            for l in range(LOADS_B):
                q = tid + uint32(l * NT)
                if q < uint32(BK * NQ):  # and a float4 of B (row k, columns n..n+3)
                    x0, x1, x2, x3 = load4_guarded(B, k0 + q // uint32(NQ), col0 + q % uint32(NQ) * uint32(4), K, N)
                    pb[l, 0], pb[l, 1], pb[l, 2], pb[l, 3] = x0, x1, x2, x3
            for l in range(LOADS_A):
                q = tid + uint32(l * NT)
                if q < uint32(BM * KQ):
                    m = q // uint32(KQ)
                    k = q % uint32(KQ) * uint32(4)
                    sA[k, m] = pa[l, 0]  # A's float4 stored transposed: four rows of sA, one column
                    sA[k + uint32(1), m] = pa[l, 1]
                    sA[k + uint32(2), m] = pa[l, 2]
                    sA[k + uint32(3), m] = pa[l, 3]
            for l in range(LOADS_B):
                q = tid + uint32(l * NT)
                if q < uint32(BK * NQ):
                    k = q // uint32(NQ)
                    n = q % uint32(NQ) * uint32(4)
                    sB[k, n] = pb[l, 0]  # B's as it is: one 128-bit store
                    sB[k, n + uint32(1)] = pb[l, 1]
                    sB[k, n + uint32(2)] = pb[l, 2]
                    sB[k, n + uint32(3)] = pb[l, 3]
            cuda.syncthreads()
            for k in range(uint32(BK)):
                for i in range(HM):  # what changed: two runs of HM neighbours, 128 bits per shared load
                    a_reg[i] = sA[k, tr * uint32(HM) + uint32(i)]
                    a_reg[HM + i] = sA[k, tr * uint32(HM) + uint32(HALF_M + i)]
                for j in range(HN):
                    b_reg[j] = sB[k, tc * uint32(HN) + uint32(j)]
                    b_reg[HN + j] = sB[k, tc * uint32(HN) + uint32(HALF_N + j)]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + tr * uint32(HM) + uint32(i if i < HM else HALF_M + i - HM)
            for j in range(TN):
                c = col0 + tc * uint32(HN) + uint32(j if j < HN else HALF_N + j - HN)
                if r < M and c < N:
                    C[r, c] = acc[i, j]

    return gemm_v6_vec4
