"""Lab 02, Task 2.2: the lab's check catches the classic bugs in a *register-blocked* kernel too.

tests/sim/test_labs_buggy_kernels.py proves it for the one-output-per-thread tiled kernel; a register-blocked
kernel has more places to get wrong (R x R loads per thread, strided ownership, the k offset of each tile).
Each buggy variant below is the lab's solution with one bug, run at the lab's simulator shape (TILE 4, R 2,
so a block covers 8 x 8 of C) and sizes that are not multiples of 8."""

import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32

from scaledl.labs.check import check_gemm, gemm_sizes

pytestmark = pytest.mark.sim

TILE, R = 4, 2
BM = TILE * R
SIZES = gemm_sizes(BM)[:2]  # the lab's own check sizes for Task 2.2 (19x17x25 spans 3-4 blocks per dimension)


def make_regblock(guard_loads=True, guard_store=True, sync_before=True, sync_after=True, k_offset_bug=False,
                  contiguous_compute=False):
    @cuda.jit
    def kernel(A, B, C):
        sA = cuda.shared.array((BM, BM), float32)
        sB = cuda.shared.array((BM, BM), float32)
        acc = cuda.local.array((R, R), float32)
        a_reg = cuda.local.array(R, float32)
        b_reg = cuda.local.array(R, float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BM
        M, K, N = A.shape[0], A.shape[1], B.shape[1]
        for i in range(R):
            for j in range(R):
                acc[i, j] = float32(0.0)
        for t in range((K + BM - 1) // BM):
            k0 = t if k_offset_bug else t * BM
            for i in range(R):
                for j in range(R):
                    r, c = ty + i * TILE, tx + j * TILE
                    ga, gk = row0 + r, k0 + c
                    gk2, gb = k0 + r, col0 + c
                    if guard_loads:
                        sA[r, c] = A[ga, gk] if ga < M and gk < K else float32(0.0)
                        sB[r, c] = B[gk2, gb] if gk2 < K and gb < N else float32(0.0)
                    else:
                        sA[r, c] = A[ga, gk]
                        sB[r, c] = B[gk2, gb]
            if sync_before:
                cuda.syncthreads()
            for k in range(BM):
                for i in range(R):
                    # the bug: compute with contiguous rows ty * R + i while the store uses strided ones
                    a_reg[i] = sA[ty * R + i, k] if contiguous_compute else sA[ty + i * TILE, k]
                for j in range(R):
                    b_reg[j] = sB[k, tx + j * TILE]
                for i in range(R):
                    for j in range(R):
                        acc[i, j] += a_reg[i] * b_reg[j]
            if sync_after:
                cuda.syncthreads()
        for i in range(R):
            for j in range(R):
                r, c = row0 + ty + i * TILE, col0 + tx + j * TILE
                if not guard_store or (r < M and c < N):
                    C[r, c] = acc[i, j]

    def launch(A, B, C):
        M, N = C.shape
        kernel[((N + BM - 1) // BM, (M + BM - 1) // BM), (TILE, TILE)](A, B, C)

    return launch


def run(**bugs):
    import warnings

    with warnings.catch_warnings():  # buggy kernels read garbage that can overflow
        warnings.simplefilter("ignore", RuntimeWarning)
        return check_gemm(make_regblock(**bugs), sizes=SIZES, report=None, name="regblock")


def test_the_solution_passes():
    r = run()
    assert r.passed, str(r)


@pytest.mark.parametrize("bugs, words", [
    (dict(guard_loads=False), "bounds guard"),
    (dict(guard_store=False), "bounds guard"),
    (dict(sync_before=False), "syncthreads"),
    (dict(sync_after=False), "syncthreads"),
    (dict(k_offset_bug=True), "tile offset"),
    (dict(contiguous_compute=True), "Yours"),  # a wrong index inside the tile: wrong values, shown side by side
])
def test_each_bug_is_caught(bugs, words):
    r = run(**bugs)
    assert not r.passed, f"{bugs} passed the check"
    assert "FAIL" in str(r) and r.hints, str(r)
    if words == "Yours":
        assert "Yours" in str(r) and "Spec" in str(r), str(r)
    else:
        assert any(words in h for h in r.hints), f"{bugs}: hints were {r.hints}"
