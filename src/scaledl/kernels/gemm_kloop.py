"""GEMM v7 and v8: the ladder's last two steps (:mod:`scaledl.kernels.gemm_ladder` has v4 to v6), which change
v6's k loop: taken two steps a trip (v7), then with the next tile loaded while this one is used (v8). Same
tiling, same ``PAD``, same rules (no device function, ``uint32`` indices, 128-bit loads through
:func:`scaledl.kernels.vector_load.load4_guarded`); :mod:`scaledl.kernels.gemm` launches them.
"""

from __future__ import annotations

import functools

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda, float32, uint32

from scaledl.kernels.gemm_ladder import PAD
from scaledl.kernels.vector_load import load4_guarded

__all__ = ["unroll_k_kernel", "prefetch_kernel"]


# ------------------------------------------------------------------------------------------------ v7
@functools.lru_cache(maxsize=None)
def unroll_k_kernel(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int):
    """v7: v6 with the k loop taken two steps a trip. The compiler unrolls loops of small constant trip count
    (the i and j loops) but not v6's k loop, whose body is already ~80 instructions: its counter, compare and
    branch then cost about 14 of every 82 issued instructions. An inner loop of exactly two trips is unrolled,
    so they are paid once per two k steps. (Numba has no unroll pragma; this is how to ask for one.)"""
    BM, BN, BK, TM, TN = block_m, block_n, block_k, thread_m, thread_n
    RM, RN = BM // TM, BN // TN
    NT = RM * RN
    HM, HN = TM // 2, TN // 2
    HALF_M, HALF_N = BM // 2, BN // 2

    SA_COLS = BM + PAD
    KQ, NQ = BK // 4, BN // 4
    LOADS_A = (BM * KQ + NT - 1) // NT
    LOADS_B = (BK * NQ + NT - 1) // NT
    K_UNROLL = 2  # block_k is a multiple of 4 (Vec4Config), so of 2

    @cuda.jit
    def gemm_v7_unroll_k(A, B, C):
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
            for l in range(LOADS_A):
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
            for k2 in range(uint32(BK // K_UNROLL)):
                for u in range(K_UNROLL):  # what changed: a constant trip count, unrolled
                    k = k2 * uint32(K_UNROLL) + uint32(u)
                    for i in range(HM):
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

    return gemm_v7_unroll_k


# ------------------------------------------------------------------------------------------------ v8
@functools.lru_cache(maxsize=None)
def prefetch_kernel(block_m: int, block_n: int, block_k: int, thread_m: int, thread_n: int):
    """v8: v7 with the next tile's float4s loaded into registers (``pa``, ``pb``) right after the barrier, so
    they are in flight while this tile is multiplied, and copied to shared memory at the top of the next trip.
    Up to v7 a block waits a whole memory latency per tile with nothing to issue, and only other blocks on the
    SM hide it; this costs ``4 (LOADS_A + LOADS_B)`` registers (8 at the GPU shape)."""
    BM, BN, BK, TM, TN = block_m, block_n, block_k, thread_m, thread_n
    RM, RN = BM // TM, BN // TN
    NT = RM * RN
    HM, HN = TM // 2, TN // 2
    HALF_M, HALF_N = BM // 2, BN // 2

    SA_COLS = BM + PAD
    KQ, NQ = BK // 4, BN // 4
    LOADS_A = (BM * KQ + NT - 1) // NT
    LOADS_B = (BK * NQ + NT - 1) // NT
    K_UNROLL = 2

    @cuda.jit
    def gemm_v8_prefetch(A, B, C):
        sA = cuda.shared.array((BK, SA_COLS), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        pa = cuda.local.array((LOADS_A, 4), float32)  # what changed: the next tile, held in registers
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
        for l in range(LOADS_A):  # the first tile's loads, before the loop
            q = tid + uint32(l * NT)
            if q < uint32(BM * KQ):
                x0, x1, x2, x3 = load4_guarded(A, row0 + q // uint32(KQ), q % uint32(KQ) * uint32(4), M, K)
                pa[l, 0], pa[l, 1], pa[l, 2], pa[l, 3] = x0, x1, x2, x3
        for l in range(LOADS_B):
            q = tid + uint32(l * NT)
            if q < uint32(BK * NQ):
                x0, x1, x2, x3 = load4_guarded(B, q // uint32(NQ), col0 + q % uint32(NQ) * uint32(4), K, N)
                pb[l, 0], pb[l, 1], pb[l, 2], pb[l, 3] = x0, x1, x2, x3
        for k0 in range(uint32(0), K, uint32(BK)):
            for l in range(LOADS_A):  # registers -> shared: the tile loaded during the previous trip
                q = tid + uint32(l * NT)
                if q < uint32(BM * KQ):
                    m = q // uint32(KQ)
                    k = q % uint32(KQ) * uint32(4)
                    sA[k, m] = pa[l, 0]
                    sA[k + uint32(1), m] = pa[l, 1]
                    sA[k + uint32(2), m] = pa[l, 2]
                    sA[k + uint32(3), m] = pa[l, 3]
            for l in range(LOADS_B):
                q = tid + uint32(l * NT)
                if q < uint32(BK * NQ):
                    k = q // uint32(NQ)
                    n = q % uint32(NQ) * uint32(4)
                    sB[k, n] = pb[l, 0]
                    sB[k, n + uint32(1)] = pb[l, 1]
                    sB[k, n + uint32(2)] = pb[l, 2]
                    sB[k, n + uint32(3)] = pb[l, 3]
            cuda.syncthreads()
            k1 = k0 + uint32(BK)
            if k1 < K:  # what changed: the next tile's loads, in flight during the arithmetic below
                for l in range(LOADS_A):
                    q = tid + uint32(l * NT)
                    if q < uint32(BM * KQ):
                        x0, x1, x2, x3 = load4_guarded(A, row0 + q // uint32(KQ), k1 + q % uint32(KQ) * uint32(4), M, K)
                        pa[l, 0], pa[l, 1], pa[l, 2], pa[l, 3] = x0, x1, x2, x3
                for l in range(LOADS_B):
                    q = tid + uint32(l * NT)
                    if q < uint32(BK * NQ):
                        x0, x1, x2, x3 = load4_guarded(B, k1 + q // uint32(NQ), col0 + q % uint32(NQ) * uint32(4), K, N)
                        pb[l, 0], pb[l, 1], pb[l, 2], pb[l, 3] = x0, x1, x2, x3
            for k2 in range(uint32(BK // K_UNROLL)):
                for u in range(K_UNROLL):
                    k = k2 * uint32(K_UNROLL) + uint32(u)
                    for i in range(HM):
                        a_reg[i] = sA[k, tr * uint32(HM) + uint32(i)]
                        a_reg[HM + i] = sA[k, tr * uint32(HM) + uint32(HALF_M + i)]
                    for j in range(HN):
                        b_reg[j] = sB[k, tc * uint32(HN) + uint32(j)]
                        b_reg[HN + j] = sB[k, tc * uint32(HN) + uint32(HALF_N + j)]
                    for i in range(TM):
                        for j in range(TN):
                            acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()  # everyone is done reading this tile before the next trip overwrites it
        for i in range(TM):
            r = row0 + tr * uint32(HM) + uint32(i if i < HM else HALF_M + i - HM)
            for j in range(TN):
                c = col0 + tc * uint32(HN) + uint32(j if j < HN else HALF_N + j - HN)
                if r < M and c < N:
                    C[r, c] = acc[i, j]

    return gemm_v8_prefetch
