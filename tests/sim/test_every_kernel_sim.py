"""The GPU tier's kernel checks (tests/kernel_cases.py) at tiny odd sizes on the simulator, and proof that they fail.

Every case of tests/gpu/test_every_kernel_gpu.py runs here in the GPU's launch shapes (256-thread reductions,
16 x 16 GEMM tiles, 128 x 128 register blocks, 8 rows per SpMV block, ...), which the launchers only use on a
GPU, on sizes that are not multiples of the block and need more than one block, outputs poisoned. The
warp-shuffle kernels run under the strict shuffle emulation of kernel_cases.emulated_warp_shuffles; their
hardware form is compiled to sm_90 PTX by test_ptx_compile.py and test_sparse_ptx.py. The last tests show
that each kind of check rejects a real bug: a missing tail, a lost k tile, a lane skipping a shuffle.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared kernel_cases module
import kernel_cases  # noqa: E402
from numba import cuda, float32  # noqa: E402  (after scaledl: the backend decision comes first)

pytestmark = pytest.mark.sim

SIM_CASES = [name for name, case in kernel_cases.CASES.items() if case.sim is not None]


@pytest.mark.parametrize("name", SIM_CASES)
def test_gpu_case_on_the_simulator(name):
    kernel_cases.CASES[name].run("sim")


def test_every_gpu_case_runs_here_too():
    assert SIM_CASES == list(kernel_cases.CASES), "a GPU check that the simulator never proves"


# ------------------------------------------------------------------------- the checks can fail
def test_poison_catches_a_kernel_that_skips_the_tail():
    @cuda.jit
    def axpy_drops_last_block(a, x, y, out):
        i = cuda.grid(1)
        if i < out.size - out.size % 256:  # forgets the partial last block
            out[i] = a * x[i] + y[i]

    with pytest.raises(AssertionError, match=r"axpy n=300: 44 of 300 elements off .*\(\(256,\), [-0-9.e]+, nan\)"):
        kernel_cases.check_axpy(300, kernel=axpy_drops_last_block)


def test_unguarded_axpy_fails_on_the_simulator():
    from scaledl.kernels.smoke import axpy_unguarded

    with pytest.raises(IndexError):
        kernel_cases.check_axpy(300, kernel=axpy_unguarded)


def test_tolerance_catches_a_gemm_that_loses_the_ragged_k_tile():
    @cuda.jit
    def tiled16_floor_k(A, B, C):  # v2 with (K // T) tiles instead of ceil(K / T): passes when T divides K
        sA = cuda.shared.array((16, 16), float32)
        sB = cuda.shared.array((16, 16), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * 16 + ty, cuda.blockIdx.x * 16 + tx
        M, K = A.shape
        N = B.shape[1]
        acc = float32(0.0)
        for t in range(K // 16):
            sA[ty, tx] = A[row, t * 16 + tx] if row < M else float32(0.0)
            sB[ty, tx] = B[t * 16 + ty, col] if col < N else float32(0.0)
            cuda.syncthreads()
            for kk in range(16):
                acc += sA[ty, kk] * sB[kk, tx]
            cuda.syncthreads()
        if row < M and col < N:
            C[row, col] = acc

    kernel_cases.check_gemm(17, 32, 19, variant="tiled", kernel=tiled16_floor_k)  # K a multiple of 16: passes
    with pytest.raises(AssertionError, match="gemm tiled 17x13x19: 323 of 323 elements off"):
        kernel_cases.check_gemm(17, 13, 19, variant="tiled", kernel=tiled16_floor_k)


FULL = 0xFFFFFFFF


@cuda.jit
def warp_sum_skips_upper_lanes(x, partial):
    """A warp sum whose lanes 16-31 skip the shuffle: on a GPU a full-mask shuffle then hangs or reads junk."""
    lane = cuda.threadIdx.x % 32
    acc = x[cuda.grid(1)] if cuda.grid(1) < x.size else float32(0.0)
    if lane < 16:
        acc += cuda.shfl_down_sync(FULL, acc, 16)
    if lane == 0:
        partial[cuda.blockIdx.x] = acc


@cuda.jit
def warp_sum_one_level_short(x, partial):
    """A warp sum that starts its tree at offset 8: lanes 16-31 are never added."""
    lane = cuda.threadIdx.x % 32
    acc = x[cuda.grid(1)] if cuda.grid(1) < x.size else float32(0.0)
    offset = 8
    while offset > 0:
        acc += cuda.shfl_down_sync(FULL, acc, offset)
        offset //= 2
    if lane == 0:
        partial[cuda.blockIdx.x] = acc


def test_shuffle_emulation_rejects_a_lane_that_skips_the_shuffle():
    x, out = np.ones(32, np.float32), np.full(1, np.nan, np.float32)
    lost = r"lane \d+ of warp 0 \(block \(0, 0, 0\)\) shuffled with lane (1[6-9]|2\d|3[01]), which did not take part"
    with kernel_cases.emulated_warp_shuffles(), pytest.raises(RuntimeError, match=lost):
        warp_sum_skips_upper_lanes[1, 32](x, out)


def test_shuffle_emulation_gives_shuffle_semantics():
    x = np.arange(64, dtype=np.float32)
    out = np.full(2, np.nan, np.float32)
    with kernel_cases.emulated_warp_shuffles():
        warp_sum_one_level_short[2, 32](x, out)
    assert out.tolist() == [x[:16].sum(), x[32:48].sum()]  # lane 0 holds lanes 0-15 only
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    assert not hasattr(FakeCUDAModule, "shfl_down_sync")  # removed again: other tests see the plain simulator


def test_sum_check_catches_a_short_shuffle_tree():
    with pytest.raises(AssertionError, match="sum warp n=1001 blocks=3"):
        kernel_cases.check_sum(1001, variant="warp", blocks=3, threads=32, kernel=warp_sum_one_level_short)


def test_assert_exact_names_bits_not_values():
    with pytest.raises(AssertionError, match=r"1 of 2 differ \(index, reference, got\): \[\(\(0,\), 0.0, -0.0\)\]"):
        kernel_cases.assert_exact(np.array([-0.0, 1.0], np.float32), np.array([0.0, 1.0]), "signed zero")
