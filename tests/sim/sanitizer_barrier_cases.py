"""Seeded kernels for tests/sim/test_sanitizer.py (see sanitizer_cases): barriers that not every thread of a
block reaches, or reaches as often. Importing this module adds its cases to ``sanitizer_cases.CASES``."""

from __future__ import annotations

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda, float32, int32
from sanitizer_cases import BS, N, T, block_sums, blocks, case, data, gemm_inputs, padded


# --------------------------------------------------------------------------------------------- barriers
@case("barrier")
def barrier_inside_a_branch(bug):
    @cuda.jit
    def reverse(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        sh[tid] = x[i] if i < x.size else float32(0.0)
        if not bug or tid < BS // 2:
            cuda.syncthreads()
        if i < x.size:
            y[i] = sh[BS - 1 - tid]

    x, y = data(), np.zeros(N, np.float32)
    reverse[blocks(N), BS](x, y)
    return y, padded(x)[:, ::-1].ravel()[:N]


@case("barrier")
def a_barrier_on_each_side_of_an_if(bug):
    @cuda.jit
    def scale_odd_even(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        v = x[i] if i < x.size else float32(0.0)
        if tid % 2 == 0:
            sh[tid] = 2 * v
            if bug:
                cuda.syncthreads()  # one barrier for the even threads ...
        else:
            sh[tid] = 3 * v
            if bug:
                cuda.syncthreads()  # ... and another for the odd ones
        if not bug:
            cuda.syncthreads()
        if i < x.size:
            y[i] = sh[tid ^ 1]

    x, y = data(), np.zeros(N, np.float32)
    scale_odd_even[blocks(N), BS](x, y)
    s = padded(x) * np.where(np.arange(BS) % 2 == 0, 2, 3)
    return y, s[:, np.arange(BS) ^ 1].ravel()[:N]


@case("barrier")
def ragged_block_returns_before_the_barrier(bug):
    @cuda.jit
    def rotate(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        if bug and i >= x.size:
            return  # the last block's spare threads leave; the others wait at the barrier
        sh[tid] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        if i < x.size:
            y[i] = sh[(tid + 1) % BS]

    x, y = data(), np.zeros(N, np.float32)
    rotate[blocks(N), BS](x, y)
    return y, np.roll(padded(x), -1, axis=1).ravel()[:N]


@case("barrier")
def loop_with_a_trip_count_per_thread(bug):
    @cuda.jit
    def smooth(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        sh[tid] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        for _ in range(tid % 3 if bug else 2):
            v = sh[tid]
            cuda.syncthreads()
            sh[tid] = v + 1
            cuda.syncthreads()
        if i < x.size:
            y[i] = sh[tid]

    x, y = data(), np.zeros(N, np.float32)
    smooth[blocks(N), BS](x, y)
    return y, x + 2


@case("barrier")
def reduction_barrier_inside_the_if(bug):
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
                if bug:
                    cuda.syncthreads()  # only the threads still adding wait here
            if not bug:
                cuda.syncthreads()
            half //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = buf[0]

    x, out = data(), np.zeros(blocks(N), np.float32)
    tree_sum[blocks(N), BS](x, out)
    return out, block_sums(x)


@case("barrier")
def grid_stride_loop_with_a_barrier(bug):
    @cuda.jit
    def rotate_strided(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        stride = cuda.gridsize(1)
        base = 0
        while (cuda.grid(1) + base < x.size) if bug else (base < x.size):  # bug: each thread's own trip count
            i = base + cuda.grid(1)
            sh[tid] = x[i] if i < x.size else float32(0.0)
            cuda.syncthreads()
            if i < x.size:
                y[i] = sh[(tid + 1) % BS]
            cuda.syncthreads()
            base += stride

    x, y = data(), np.zeros(N, np.float32)
    rotate_strided[2, BS](x, y)
    return y, np.roll(padded(x), -1, axis=1).ravel()[:N]


@case("barrier")
def barrier_in_one_row_of_a_2d_block(bug):
    @cuda.jit
    def transpose(A, At):
        tile = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        r, c = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        tile[ty, tx] = A[r, c] if r < A.shape[0] and c < A.shape[1] else float32(0.0)
        if not bug or ty == 0:
            cuda.syncthreads()
        r2, c2 = cuda.blockIdx.x * T + ty, cuda.blockIdx.y * T + tx
        if r2 < At.shape[0] and c2 < At.shape[1]:
            At[r2, c2] = tile[tx, ty]

    A, _ = gemm_inputs()
    At = np.full(A.T.shape, np.nan, np.float32)
    transpose[(blocks(A.shape[1], T), blocks(A.shape[0], T)), (T, T)](A, At)
    return At, A.T


@case("barrier")
def syncthreads_count_in_a_branch(bug):
    @cuda.jit
    def positives(x, counts):
        i = cuda.grid(1)
        v = x[i] if i < x.size else float32(0.0)
        if not bug or cuda.threadIdx.x < BS // 2:
            n = cuda.syncthreads_count(v > 0)
            if cuda.threadIdx.x == 0:
                counts[cuda.blockIdx.x] = n

    x, counts = data(), np.zeros(blocks(N), np.int32)
    positives[blocks(N), BS](x, counts)
    return counts, (padded(x) > 0).sum(axis=1)


@case("barrier")
def data_dependent_while_loop(bug):
    @cuda.jit
    def halve(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        v = abs(x[i]) if i < x.size else float32(0.0)
        steps = 0
        while (v > 1) if bug else (steps < 4):  # bug: as many barriers as this thread's value needs
            if v > 1:
                v /= 2
            sh[tid] = v
            cuda.syncthreads()
            steps += 1
        if i < x.size:
            y[i] = v

    x, y = data(), np.zeros(N, np.float32)
    halve[blocks(N), BS](x, y)
    want = np.abs(x)
    for _ in range(4):
        want = np.where(want > 1, want / 2, want)
    return y, want


@case("barrier")
def break_before_the_barrier(bug):
    @cuda.jit
    def rounds(x, y):
        sh = cuda.shared.array(BS, int32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        v = int32(x[i]) if i < x.size else int32(0)
        sh[tid] = 0
        done = False
        for r in range(3):
            if bug and v < r:
                break  # this thread skips the rest of the loop's barriers
            if not done and v < r:
                done = True
            if not done:
                cuda.atomic.add(sh, tid, 1)
            cuda.syncthreads()
        if i < x.size:
            y[i] = sh[tid]

    x, y = data(), np.zeros(N, np.int32)
    rounds[blocks(N), BS](x, y)
    return y, np.clip(x.astype(np.int64) + 1, 0, 3)


@cuda.jit(device=True)
def _stage(sh, tid, v):
    sh[tid] = v
    cuda.syncthreads()
    return sh[(tid + 1) % BS]


@case("barrier")
def device_function_with_a_barrier_called_in_a_branch(bug):
    @cuda.jit
    def rotate_positive(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        v = x[i] if i < x.size else float32(0.0)
        if bug:
            w = _stage(sh, tid, v) if v > 0 else float32(0.0)  # only some threads reach its barrier
        else:
            w = _stage(sh, tid, v)
            w = w if v > 0 else float32(0.0)
        if i < x.size:
            y[i] = w

    x, y = data(), np.zeros(N, np.float32)
    rotate_positive[blocks(N), BS](x, y)
    return y, np.where(x > 0, np.roll(padded(x), -1, axis=1).ravel()[:N], 0)
