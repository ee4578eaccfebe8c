"""Seeded kernels for tests/sim/test_sanitizer.py: each case is one kernel shape with a known defect, in two
versions: ``run(True)`` launches the defective one, ``run(False)`` the correct one, and both return
``(got, want)``, the output and what the correct version must compute (the test checks the correct one).

Every defect is a classic one (GPU-Puzzles', the lab checks' hints, NVIDIA's compute-sanitizer examples),
seeded at sizes that are not multiples of the block (37 elements in blocks of 16; a 9 x 6 @ 6 x 11 GEMM in
4 x 4 tiles), so an edge block exists wherever a bound or a guard matters. ``CASES[name] = (kind, run)``.
"""

from __future__ import annotations

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda, float32, int32

BS = 16  # threads per 1-D block
N = 37  # elements of the 1-D cases: three blocks, the last one ragged
T = 4  # tile of the 2-D cases
M, K, NC = 9, 6, 11  # GEMM: C (M x NC) = A (M x K) @ B (K x NC), no dimension a multiple of T
NB = 5  # histogram bins
CASES: dict = {}


def case(kind):
    def register(run):
        CASES[run.__name__] = (kind, run)
        return run
    return register


def blocks(n, b=BS):
    return (n + b - 1) // b


def data(n=N, seed=0):
    return np.random.default_rng(seed).integers(-9, 10, n).astype(np.float32)  # small integers: sums are exact


def gemm_inputs():
    rng = np.random.default_rng(1)
    return rng.integers(-3, 4, (M, K)).astype(np.float32), rng.integers(-3, 4, (K, NC)).astype(np.float32)


def padded(x, value=0.0):
    """``x`` padded with ``value`` to whole blocks, one row per block."""
    return np.concatenate([x, np.full(blocks(len(x)) * BS - len(x), value, x.dtype)]).reshape(-1, BS)


def block_sums(x):
    return np.array([x[b * BS:(b + 1) * BS].sum() for b in range(blocks(len(x)))], np.float32)


# ------------------------------------------------------------------------------- one tiled GEMM, six bugs
def tiled_gemm(bug=None):
    """v2's tiled GEMM; ``bug`` one of the classic mistakes below (None: the correct kernel)."""
    @cuda.jit
    def gemm_tiled(A, B, C):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        if bug == "early_exit" and (row >= C.shape[0] or col >= C.shape[1]):
            return  # the edge threads leave before the barriers
        acc = float32(0.0)
        for t in range((A.shape[1] + T - 1) // T):
            ka, kb = t * T + tx, t * T + ty
            if bug == "unguarded":
                sA[ty, tx] = A[row, ka]
                sB[ty, tx] = B[kb, col]
            elif bug == "unzeroed":  # no else: the tile keeps garbage where the matrix ends
                if row < A.shape[0] and ka < A.shape[1]:
                    sA[ty, tx] = A[row, ka]
                if kb < B.shape[0] and col < B.shape[1]:
                    sB[ty, tx] = B[kb, col]
            else:
                sA[ty, tx] = A[row, ka] if row < A.shape[0] and ka < A.shape[1] else float32(0.0)
                value = B[kb, col] if kb < B.shape[0] and col < B.shape[1] else float32(0.0)
                if bug == "wrong_array":
                    sA[ty, tx] = value  # copy-paste: B's tile written into sA; sB is never written
                else:
                    sB[ty, tx] = value
            if bug != "no_first_sync":
                cuda.syncthreads()
            for kk in range(T):
                acc += sA[ty, kk] * sB[kk, tx]
            if bug != "no_second_sync":
                cuda.syncthreads()
        if row < C.shape[0] and col < C.shape[1]:
            C[row, col] = acc
    return gemm_tiled


def run_gemm(bug):
    A, B = gemm_inputs()
    C = np.full((M, NC), np.nan, np.float32)
    tiled_gemm(bug)[(blocks(NC, T), blocks(M, T)), (T, T)](A, B, C)
    return C, A @ B


def gemm_case(kind, bug, name):
    def run(defective):
        return run_gemm(bug if defective else None)
    run.__name__ = name
    return case(kind)(run)


gemm_case("race", "no_second_sync", "gemm_without_second_sync")
gemm_case("race", "no_first_sync", "gemm_without_first_sync")
gemm_case("barrier", "early_exit", "gemm_edge_threads_return_early")
gemm_case("uninitialized", "unzeroed", "gemm_tile_not_zeroed_past_the_edge")
gemm_case("uninitialized", "wrong_array", "gemm_b_tile_never_written")
gemm_case("out_of_bounds", "unguarded", "gemm_unguarded_tile_loads")


# ------------------------------------------------------------------------------------------------ races
@case("race")
def tree_reduction_without_loop_barrier(bug):
    @cuda.jit
    def tree_sum(x, partial):
        buf = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        buf[tid] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        half = BS // 2
        while half > 0:
            if tid < half:
                buf[tid] += buf[tid + half]
            if not bug:
                cuda.syncthreads()
            half //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = buf[0]

    x, out = data(), np.zeros(blocks(N), np.float32)
    tree_sum[blocks(N), BS](x, out)
    return out, block_sums(x)


@case("race")
def histogram_without_atomics(bug):
    @cuda.jit
    def histogram(x, bins):
        i = cuda.grid(1)
        if i < x.size:
            if bug:
                bins[x[i]] += 1
            else:
                cuda.atomic.add(bins, x[i], 1)

    x, bins = np.arange(N, dtype=np.int32) % NB, np.zeros(NB, np.int32)
    histogram[blocks(N), BS](x, bins)
    return bins, np.bincount(x, minlength=NB)


@case("race")
def shared_histogram_without_atomics(bug):
    @cuda.jit
    def histogram_shared(x, bins):
        local = cuda.shared.array(NB, int32)
        tid = cuda.threadIdx.x
        if tid < NB:
            local[tid] = 0
        cuda.syncthreads()
        i = cuda.grid(1)
        if i < x.size:
            if bug:
                local[x[i]] += 1
            else:
                cuda.atomic.add(local, x[i], 1)
        cuda.syncthreads()
        if tid < NB:
            cuda.atomic.add(bins, tid, local[tid])

    x, bins = np.arange(N, dtype=np.int32) * 7 % NB, np.zeros(NB, np.int32)
    histogram_shared[blocks(N), BS](x, bins)
    return bins, np.bincount(x, minlength=NB)


@case("race")
def grid_stride_total_without_atomics(bug):
    @cuda.jit
    def total(x, out):
        i = cuda.grid(1)
        while i < x.size:  # two blocks of 16 over 37 elements: some threads take two trips
            if bug:
                out[0] += x[i]
            else:
                cuda.atomic.add(out, 0, x[i])
            i += cuda.gridsize(1)

    x, out = np.arange(N, dtype=np.int32), np.zeros(1, np.int32)
    total[2, BS](x, out)
    return out, np.array([x.sum()])


@case("race")
def neighbour_sum_without_barrier(bug):
    @cuda.jit
    def neighbours(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        sh[tid] = x[i] if i < x.size else float32(0.0)
        if not bug:
            cuda.syncthreads()
        if i < x.size:
            y[i] = sh[tid] + sh[(tid + 1) % BS]

    x, y = data(), np.zeros(N, np.float32)
    neighbours[blocks(N), BS](x, y)
    p = padded(x)
    return y, (p + np.roll(p, -1, axis=1)).ravel()[:N]


@case("race")
def shift_in_place(bug):
    @cuda.jit
    def shift(x, y):
        i = cuda.grid(1)
        if i + 1 < x.size:
            if bug:
                x[i] = x[i + 1]  # in place: thread i + 1 (perhaps in the next block) writes x[i + 1]
            else:
                y[i] = x[i + 1]

    x, y = data(), np.zeros(N, np.float32)
    shift[blocks(N), BS](x, y)
    return (x if bug else y)[:-1], data()[1:]


@case("race")
def transpose_without_barrier(bug):
    @cuda.jit
    def transpose(A, At):
        tile = cuda.shared.array((T, T + 1), float32)  # a spare column: no bank conflicts on a GPU
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        r, c = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        tile[ty, tx] = A[r, c] if r < A.shape[0] and c < A.shape[1] else float32(0.0)
        if not bug:
            cuda.syncthreads()
        r2, c2 = cuda.blockIdx.x * T + ty, cuda.blockIdx.y * T + tx
        if r2 < At.shape[0] and c2 < At.shape[1]:
            At[r2, c2] = tile[tx, ty]

    A, _ = gemm_inputs()
    At = np.full((K, M), np.nan, np.float32)
    transpose[(blocks(K, T), blocks(M, T)), (T, T)](A, At)
    return At, A.T


@case("race")
def prefix_sum_with_one_barrier_per_step(bug):
    @cuda.jit
    def scan(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        sh[tid] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        offset = 1
        while offset < BS:
            v = sh[tid - offset] if tid >= offset else float32(0.0)
            if not bug:
                cuda.syncthreads()  # everyone has read before anyone adds
            sh[tid] += v
            cuda.syncthreads()
            offset *= 2
        if i < x.size:
            y[i] = sh[tid]

    x, y = data(), np.zeros(N, np.float32)
    scan[blocks(N), BS](x, y)
    return y, np.concatenate([np.cumsum(x[b:b + BS]) for b in range(0, N, BS)])


@case("race")
def every_thread_writes_the_broadcast(bug):
    @cuda.jit
    def broadcast(x, y):
        first = cuda.shared.array(1, float32)
        i = cuda.grid(1)
        if bug or cuda.threadIdx.x == 0:
            first[0] = x[min(i, x.size - 1)]  # bug: every thread writes its own value
        cuda.syncthreads()
        if i < x.size:
            y[i] = first[0]

    x, y = data(), np.zeros(N, np.float32)
    broadcast[blocks(N), BS](x, y)
    return y, np.repeat(x[::BS], BS)[:N]


@case("race")
def atomic_count_read_before_barrier(bug):
    @cuda.jit
    def count(x, y):
        n = cuda.shared.array(1, int32)
        if cuda.threadIdx.x == 0:
            n[0] = 0
        cuda.syncthreads()
        i = cuda.grid(1)
        if i < x.size:
            cuda.atomic.add(n, 0, 1)
        if not bug:
            cuda.syncthreads()
        if i < x.size:
            y[i] = n[0]

    x, y = data(), np.zeros(N, np.int32)
    count[blocks(N), BS](x, y)
    return y, np.repeat([min(BS, N - b) for b in range(0, N, BS)], BS)[:N]
