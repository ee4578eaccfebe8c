"""Lab 04's SpMV check, on the simulator: a kernel without the row bound guard fails with the hint that
names it, one that skips the last row's entries fails, and the correct one passes."""

import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32

from scaledl.labs import sparse_checks as S

pytestmark = pytest.mark.sim

T = 32  # none of the check's row counts (1, 37, 70, 65) is a multiple


def _kernel(guard=True, off_by_one=False):
    @cuda.jit
    def kernel(indptr, indices, data, x, y):
        row = cuda.grid(1)
        if not guard or row < y.shape[0]:
            acc = float32(0.0)
            end = indptr[row + 1] - 1 if off_by_one else indptr[row + 1]
            for j in range(indptr[row], end):
                acc += data[j] * x[indices[j]]
            y[row] = acc
    return kernel


def _launch(kernel):
    def launch(indptr, indices, data, x, y):
        kernel[(y.shape[0] + T - 1) // T, T](indptr, indices, data, x, y)
    return launch


def test_correct_spmv_passes():
    r = S.check_spmv(_launch(_kernel()), report=None)
    assert r.passed, str(r)


def test_missing_row_guard_is_named():
    r = S.check_spmv(_launch(_kernel(guard=False)), report=None)
    assert not r.passed
    assert any("bounds guard" in h for h in r.hints), str(r)


def test_dropped_entries_fail():
    r = S.check_spmv(_launch(_kernel(off_by_one=True)), report=None)
    assert not r.passed and "Yours" in str(r), str(r)
