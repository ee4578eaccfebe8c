"""The lab checks catch the classic kernel bugs, on the simulator too: each buggy kernel below must fail
with the hint that names its bug, and the correct one must pass."""

import numpy as np
import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32

from scaledl.labs import check as C

pytestmark = pytest.mark.sim

T = 4  # a small tile keeps the simulator fast; sizes below are not multiples of it
SIZES = ((3, 2, 3), (9, 6, 11))  # the first fits in one tile, the second spans several in every dimension


def _tiled(guard_store=True, guard_loads=True, sync_before=True, sync_after=True, offset_bug=False,
           b_row_bug=False):
    @cuda.jit
    def kernel(A, B, Cm):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * T + ty
        col = cuda.blockIdx.x * T + tx
        acc = float32(0.0)
        for t in range((A.shape[1] + T - 1) // T):
            base = t if offset_bug else t * T
            ka, kb = base + tx, base + ty
            if b_row_bug:  # B's tile row taken from threadIdx.x, as for A: the tile is loaded transposed
                kb = base + tx
            if guard_loads:
                sA[ty, tx] = A[row, ka] if row < A.shape[0] and ka < A.shape[1] else float32(0.0)
                sB[ty, tx] = B[kb, col] if kb < B.shape[0] and col < B.shape[1] else float32(0.0)
            else:
                sA[ty, tx] = A[row, ka]
                sB[ty, tx] = B[kb, col]
            if sync_before:
                cuda.syncthreads()
            for k in range(T):
                acc += sA[ty, k] * sB[k, tx]
            if sync_after:
                cuda.syncthreads()
        if not guard_store or (row < Cm.shape[0] and col < Cm.shape[1]):
            Cm[row, col] = acc
    return kernel


def _launcher(kernel, shrink_grid=False):
    def launch(A, B, Cm):
        M, N = Cm.shape
        grid = (N // T, M // T) if shrink_grid else ((N + T - 1) // T, (M + T - 1) // T)
        kernel[(max(grid[0], 1), max(grid[1], 1)), (T, T)](A, B, Cm)
    return launch


def _check(**bugs):
    shrink = bugs.pop("shrink_grid", False)
    return C.check_gemm(_launcher(_tiled(**bugs), shrink), sizes=SIZES, report=None, name="tiled")


def test_correct_tiled_kernel_passes():
    r = _check()
    assert r.passed, str(r)
    assert r.hints == []


@pytest.mark.parametrize("bugs, words", [
    (dict(guard_store=False), "bounds guard"),
    (dict(guard_loads=False), "bounds guard"),
    (dict(sync_before=False), "syncthreads"),
    (dict(sync_after=False), "syncthreads"),
    (dict(offset_bug=True), "tile offset"),
    (dict(b_row_bug=True), "transposed index"),
    (dict(shrink_grid=True), "never written"),
])
# a race reads uninitialised shared memory, whose garbage can overflow: expected, and not the point here
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_each_classic_bug_is_caught_and_named(bugs, words):
    r = _check(**bugs)
    assert not r.passed
    assert any(words in h for h in r.hints), f"{bugs}: hints were {r.hints}"
    assert "FAIL" in str(r)


def test_report_shows_yours_beside_spec():
    r = _check(offset_bug=True)
    text = str(r)
    assert "Yours" in text and "Spec" in text and "outputs differ" in text


@cuda.jit
def _copy_noguard(x, out):
    i = cuda.grid(1)
    out[i] = x[i]


@cuda.jit
def _copy(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i]


def _copy_launch(kernel):
    def launch(x, out):
        kernel[(x.size + 31) // 32, 32](x, out)
    return launch


def test_elementwise_check_catches_missing_guard_and_passes_a_guarded_copy():
    spec = lambda x: np.asarray(x, np.float64)  # noqa: E731
    make = lambda n, rng: (rng.standard_normal(n).astype(np.float32),)  # noqa: E731
    good = C.check_kernel(_copy_launch(_copy), spec, make, [1, 37, 100], report=None, name="copy")
    bad = C.check_kernel(_copy_launch(_copy_noguard), spec, make, [1, 37, 100], report=None, name="copy")
    assert good.passed and not bad.passed
    assert any("bounds guard" in h for h in bad.hints)


@cuda.jit
def _copy_one_pass(x, out):
    i = cuda.grid(1)  # guarded, but no grid-stride loop: a capped grid leaves the tail unwritten
    if i < out.size:
        out[i] = x[i]


def test_missing_grid_stride_loop_leaves_the_tail_and_is_named():
    spec = lambda x: np.asarray(x, np.float64)  # noqa: E731
    make = lambda n, rng: (rng.standard_normal(n).astype(np.float32),)  # noqa: E731

    def launch(x, out):
        _copy_one_pass[min(2, (x.size + 31) // 32), 32](x, out)  # at most 64 threads, as lab 01 caps the grid

    r = C.check_kernel(launch, spec, make, [1, 37, 100], report=None, name="copy")
    assert not r.passed
    assert any("never written" in h for h in r.hints)
    assert "ok   copy at size 1" in str(r) and "FAIL copy at size 100" in str(r)
