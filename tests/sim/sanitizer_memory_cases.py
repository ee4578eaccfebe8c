"""Seeded kernels for tests/sim/test_sanitizer.py (see sanitizer_cases): reads of shared memory nobody wrote,
and indices outside an array. Importing this module adds its cases to ``sanitizer_cases.CASES``."""

from __future__ import annotations

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda, float32, int32
from sanitizer_cases import BS, NB, N, T, block_sums, blocks, case, data, gemm_inputs, padded


# --------------------------------------------------------------------------------- uninitialized reads
@case("uninitialized")
def ragged_block_reduces_unloaded_slots(bug):
    @cuda.jit
    def tree_sum(x, partial):
        buf = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        if i < x.size:
            buf[tid] = x[i]
        elif not bug:
            buf[tid] = float32(0.0)
        cuda.syncthreads()
        half = BS // 2
        while half > 0:
            if tid < half:
                buf[tid] += buf[tid + half]
            cuda.syncthreads()
            half //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = buf[0]

    x, out = data(), np.zeros(blocks(N), np.float32)
    tree_sum[blocks(N), BS](x, out)
    return out, block_sums(x)


@case("uninitialized")
def stencil_halo_never_loaded(bug):
    @cuda.jit
    def three_point(x, y):
        sh = cuda.shared.array(BS + 2, float32)  # the block's elements and one halo element each side
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        sh[tid + 1] = x[i] if i < x.size else float32(0.0)
        if not bug:
            if tid == 0:
                sh[0] = x[i - 1] if i > 0 else float32(0.0)
            if tid == BS - 1:
                sh[BS + 1] = x[i + 1] if i + 1 < x.size else float32(0.0)
        cuda.syncthreads()
        if i < x.size:
            y[i] = sh[tid] + sh[tid + 1] + sh[tid + 2]

    x, y = data(), np.zeros(N, np.float32)
    three_point[blocks(N), BS](x, y)
    p = np.concatenate([[0], x, [0]])
    return y, p[:-2] + p[1:-1] + p[2:]


@case("uninitialized")
def shared_bins_not_zeroed(bug):
    @cuda.jit
    def histogram_shared(x, bins):
        local = cuda.shared.array(NB, int32)
        tid = cuda.threadIdx.x
        if not bug and tid < NB:
            local[tid] = 0
        cuda.syncthreads()
        i = cuda.grid(1)
        if i < x.size:
            cuda.atomic.add(local, x[i], 1)
        cuda.syncthreads()
        if tid < NB:
            cuda.atomic.add(bins, tid, local[tid])

    x, bins = np.arange(N, dtype=np.int32) * 3 % NB, np.zeros(NB, np.int32)
    histogram_shared[blocks(N), BS](x, bins)
    return bins, np.bincount(x, minlength=NB)


@case("uninitialized")
def accumulator_never_cleared(bug):
    @cuda.jit
    def pair_sums(x, y):
        acc = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        if not bug:
            acc[tid] = float32(0.0)
        for k in range(2):  # each thread adds two elements into its own slot
            j = 2 * i + k
            acc[tid] += x[j] if j < x.size else float32(0.0)
        if 2 * i < x.size:
            y[i] = acc[tid]

    x, y = data(), np.zeros((N + 1) // 2, np.float32)
    pair_sums[blocks(len(y)), BS](x, y)
    return y, np.concatenate([x, [0]]).reshape(-1, 2).sum(axis=1)


@case("uninitialized")
def only_half_the_tile_rows_loaded(bug):
    @cuda.jit
    def column_sums(A, out):
        tile = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        c = cuda.blockIdx.x * T + tx
        total = float32(0.0)
        for r0 in range(0, A.shape[0], T):
            if not bug or ty < T // 2:  # bug: only the first half of the rows is loaded
                r = r0 + ty
                tile[ty, tx] = A[r, c] if r < A.shape[0] and c < A.shape[1] else float32(0.0)
            cuda.syncthreads()
            if ty == 0:
                for k in range(T):
                    total += tile[k, tx]
            cuda.syncthreads()
        if ty == 0 and c < A.shape[1]:
            out[c] = total

    A, _ = gemm_inputs()
    out = np.zeros(A.shape[1], np.float32)
    column_sums[blocks(A.shape[1], T), (T, T)](A, out)
    return out, A.sum(axis=0)


@case("uninitialized")
def mirror_of_what_half_the_threads_wrote(bug):
    @cuda.jit
    def mirror(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        if not bug or tid < BS // 2:
            sh[tid] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        if i < x.size:
            y[i] = sh[BS - 1 - tid]

    x, y = data(), np.zeros(N, np.float32)
    mirror[blocks(N), BS](x, y)
    return y, padded(x)[:, ::-1].ravel()[:N]


@case("uninitialized")
def transpose_reads_the_padding_column(bug):
    @cuda.jit
    def transpose(A, At):
        tile = cuda.shared.array((T, T + 1), float32)  # the spare column is never written
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        r, c = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        tile[ty, tx] = A[r, c] if r < A.shape[0] and c < A.shape[1] else float32(0.0)
        cuda.syncthreads()
        r2, c2 = cuda.blockIdx.x * T + ty, cuda.blockIdx.y * T + tx
        if r2 < At.shape[0] and c2 < At.shape[1]:
            At[r2, c2] = tile[tx, ty + 1] if bug else tile[tx, ty]  # bug: one column to the right

    A, _ = gemm_inputs()
    At = np.full(A.T.shape, np.nan, np.float32)
    transpose[(blocks(A.shape[1], T), blocks(A.shape[0], T)), (T, T)](A, At)
    return At, A.T


@case("uninitialized")
def thread_zero_sums_past_the_count(bug):
    @cuda.jit
    def block_total(x, partial):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        start = cuda.blockIdx.x * BS
        count = min(BS, x.size - start)  # the last block holds fewer
        if tid < count:
            sh[tid] = x[start + tid]
        cuda.syncthreads()
        if tid == 0:
            total = float32(0.0)
            for k in range(BS if bug else count):
                total += sh[k]
            partial[cuda.blockIdx.x] = total

    x, out = data(), np.zeros(blocks(N), np.float32)
    block_total[blocks(N), BS](x, out)
    return out, block_sums(x)


@case("uninitialized")
def flag_set_only_on_a_rare_path(bug):
    @cuda.jit
    def any_large(x, out):
        flag = cuda.shared.array(1, int32)
        i = cuda.grid(1)
        if not bug and cuda.threadIdx.x == 0:
            flag[0] = 0
        cuda.syncthreads()
        if i < x.size and x[i] > 100:  # never true here: the flag stays unset
            flag[0] = 1
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = flag[0]

    x, out = data(), np.full(blocks(N), -1, np.int32)
    any_large[blocks(N), BS](x, out)
    return out, np.zeros(blocks(N), np.int32)


@case("uninitialized")
def row_tile_slot_past_the_last_column(bug):
    @cuda.jit
    def row_sums(A, out):
        tile = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        r = cuda.blockIdx.y * T + ty
        total = float32(0.0)
        for c0 in range(0, A.shape[1], T):
            c = c0 + tx
            if not bug or c < A.shape[1]:  # bug: past the last column, the slot is not written at all
                tile[ty, tx] = A[r, c] if r < A.shape[0] and c < A.shape[1] else float32(0.0)
            cuda.syncthreads()
            if tx == 0:
                for k in range(T):
                    total += tile[ty, k]
            cuda.syncthreads()
        if tx == 0 and r < A.shape[0]:
            out[r] = total

    A, B = gemm_inputs()
    A = np.ascontiguousarray(A[:, :3])  # three columns: one trip, the tile's last column past the edge
    out = np.zeros(A.shape[0], np.float32)
    row_sums[(1, blocks(A.shape[0], T)), (T, T)](A, out)
    return out, A.sum(axis=1)


# --------------------------------------------------------------------------------- out-of-bounds indices
@case("out_of_bounds")
def axpy_without_a_guard(bug):
    @cuda.jit
    def axpy(a, x, y, out):
        i = cuda.grid(1)
        if not bug and i >= out.size:
            return
        out[i] = a * x[i] + y[i]  # bug: the grid's 48 threads cover 37 elements

    x, y, out = data(), data(seed=1), np.zeros(N, np.float32)
    axpy[blocks(N), BS](np.float32(2), x, y, out)
    return out, 2 * x + y


@case("out_of_bounds")
def bound_off_by_one(bug):
    @cuda.jit
    def double(x, y):
        i = cuda.grid(1)
        if (i <= x.size) if bug else (i < x.size):
            y[i] = 2 * x[i]

    x, y = data(), np.zeros(N, np.float32)
    double[blocks(N), BS](x, y)
    return y, 2 * x


@case("out_of_bounds")
def left_neighbour_at_index_minus_one(bug):
    @cuda.jit
    def difference(x, y):
        i = cuda.grid(1)
        if i < x.size:
            left = x[i - 1] if (bug or i > 0) else float32(0.0)  # bug: x[-1] wraps to the last element
            y[i] = x[i] - left

    x, y = data(), np.zeros(N, np.float32)
    difference[blocks(N), BS](x, y)
    return y, x - np.concatenate([[0], x[:-1]])


@case("out_of_bounds")
def shared_left_neighbour_at_minus_one(bug):
    @cuda.jit
    def difference_shared(x, y):
        sh = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        sh[tid] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        left = sh[tid - 1] if (bug or tid > 0) else float32(0.0)  # bug: sh[-1] is sh[15] to NumPy
        if i < x.size:
            y[i] = sh[tid] - left

    x, y = data(), np.zeros(N, np.float32)
    difference_shared[blocks(N), BS](x, y)
    p = padded(x)
    return y, (p - np.concatenate([np.zeros((p.shape[0], 1), np.float32), p[:, :-1]], axis=1)).ravel()[:N]


@case("out_of_bounds")
def shared_array_one_too_small(bug):
    @cuda.jit
    def shift_shared(x, y):
        sh = cuda.shared.array(BS, float32) if bug else cuda.shared.array(BS + 1, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        sh[tid + 1] = x[i] if i < x.size else float32(0.0)  # slot 0 is left for the one before
        if tid == 0:
            sh[0] = float32(0.0)
        cuda.syncthreads()
        if i < x.size:
            y[i] = sh[tid]

    x, y = data(), np.zeros(N, np.float32)
    shift_shared[blocks(N), BS](x, y)
    p = padded(x)
    return y, np.concatenate([np.zeros((p.shape[0], 1), np.float32), p[:, :-1]], axis=1).ravel()[:N]


@case("out_of_bounds")
def column_not_guarded_in_2d(bug):
    @cuda.jit
    def add_one(A, B):
        c, r = cuda.grid(2)
        if r < A.shape[0] and (bug or c < A.shape[1]):
            B[r, c] = A[r, c] + 1

    A, _ = gemm_inputs()
    B = np.full(A.shape, np.nan, np.float32)
    add_one[(blocks(A.shape[1], T), blocks(A.shape[0], T)), (T, T)](A, B)
    return B, A + 1


@case("out_of_bounds")
def grid_stride_loop_runs_one_past(bug):
    @cuda.jit
    def square(x, y):
        i = cuda.grid(1)
        while (i <= x.size) if bug else (i < x.size):
            y[i] = x[i] * x[i]
            i += cuda.gridsize(1)

    x, y = data(), np.zeros(N, np.float32)
    square[2, BS](x, y)
    return y, x * x


@case("out_of_bounds")
def histogram_bin_of_the_maximum(bug):
    @cuda.jit
    def histogram(u, bins):
        i = cuda.grid(1)
        if i < u.size:
            k = int32(u[i] * NB)  # u in [0, 1]: u = 1 lands in bin NB, one past the last
            if not bug:
                k = min(k, NB - 1)
            cuda.atomic.add(bins, k, 1)

    u = np.linspace(0, 1, N).astype(np.float32)
    bins = np.zeros(NB, np.int32)
    histogram[blocks(N), BS](u, bins)
    return bins, np.bincount(np.minimum((u * NB).astype(np.int32), NB - 1), minlength=NB)


@case("out_of_bounds")
def reduction_starts_at_the_whole_block(bug):
    @cuda.jit
    def tree_sum(x, partial):
        buf = cuda.shared.array(BS, float32)
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        buf[tid] = x[i] if i < x.size else float32(0.0)
        cuda.syncthreads()
        half = BS if bug else BS // 2  # bug: the first level adds buf[tid + 16]
        while half > 0:
            if tid < half:
                buf[tid] += buf[tid + half]
            cuda.syncthreads()
            half //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = buf[0]

    x, out = data(), np.zeros(blocks(N), np.float32)
    tree_sum[blocks(N), BS](x, out)
    return out, block_sums(x)


@case("out_of_bounds")
def reverse_off_by_one(bug):
    @cuda.jit
    def reverse(x, y):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = x[x.size - i] if bug else x[x.size - 1 - i]

    x, y = data(), np.zeros(N, np.float32)
    reverse[blocks(N), BS](x, y)
    return y, x[::-1]


@case("out_of_bounds")
def row_above_at_minus_one_in_2d(bug):
    @cuda.jit
    def row_difference(A, B):
        c, r = cuda.grid(2)
        if r < A.shape[0] and c < A.shape[1]:
            above = A[r - 1, c] if (bug or r > 0) else float32(0.0)
            B[r, c] = A[r, c] - above

    A, _ = gemm_inputs()
    B = np.full(A.shape, np.nan, np.float32)
    row_difference[(blocks(A.shape[1], T), blocks(A.shape[0], T)), (T, T)](A, B)
    return B, A - np.vstack([np.zeros((1, A.shape[1]), np.float32), A[:-1]])
