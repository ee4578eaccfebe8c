"""CSR SpMV (row, warp), SpMM and the 2:4 compressed GEMM against float64 references, on the simulator.

Odd sizes (never a multiple of a block or a warp), random densities, empty rows, outputs poisoned with NaN.
Inputs the kernel must not touch are poisoned too: x at columns no row stores, B at rows that every row of a
2:4 matrix pruned. A kernel that reads them (a dense loop, a wrong index decode) returns NaN.

Tolerance: a float32 dot product of r terms, each product rounded, has error at most about
r eps32 sum_j |a_j x_j| (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 2002, sec. 3.1);
whatever the order of the additions (a loop, a 32-lane tree). We allow (r + 2) eps32 sum |a_j x_j|.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from scaledl.kernels.nm_gemm import nm_gemm, nm_gemm_multiplies, nm_gemm_reference
from scaledl.kernels.spmv import resolve_variant, spmm, spmm_reference, spmv, spmv_reference
from scaledl.sparsity import compress_nm

pytestmark = pytest.mark.sim
EPS32 = float(np.finfo(np.float32).eps)


def random_csr(M, K, density, seed, empty_rows=()):
    """A float32 CSR matrix with the given rows emptied, no explicit zeros stored."""
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((M, K)).astype(np.float32) * (rng.random((M, K)) < density)
    dense[list(empty_rows)] = 0
    return sp.csr_array(dense)


def assert_close(got, A, X, ref):
    absA = sp.csr_array(abs(A)).astype(np.float64)
    r = np.diff(A.indptr).reshape((-1,) + (1,) * (np.ndim(X) - 1))
    bound = (r + 2) * EPS32 * (absA @ np.abs(np.asarray(X, np.float64)))
    assert np.isfinite(got).all(), "an output was not written (still NaN) or a poisoned input was read"
    err = np.abs(got - ref)
    assert (err <= bound).all(), f"max error {err.max()} over the bound at {np.argwhere(err > bound)[:5]}"


CASES = [  # (M, K, density, empty rows)
    (1, 1, 1.0, ()),
    (7, 5, 0.5, (0, 6)),
    (19, 37, 0.3, (3, 4, 18)),  # K > 32: a warp's lanes stride the long rows twice
    (11, 70, 0.9, (5,)),
    (9, 13, 0.0, ()),  # nothing stored at all
]


@pytest.mark.parametrize("variant", ["row", "warp"])
@pytest.mark.parametrize("M, K, density, empty", CASES)
def test_spmv(variant, M, K, density, empty):
    A = random_csr(M, K, density, seed=M * K, empty_rows=empty)
    x = np.random.default_rng(1).standard_normal(K).astype(np.float32)
    unused = np.setdiff1d(np.arange(K), A.indices)
    x_poisoned = x.copy()
    x_poisoned[unused] = np.nan  # no stored entry points there: the kernel must never read it
    y = spmv(A, x_poisoned, variant, out=np.full(M, np.nan, np.float32))
    assert_close(y, A, x, spmv_reference(A, x))
    assert (y[list(empty)] == 0).all()


@pytest.mark.parametrize("M, K, N, density", [(1, 1, 1, 1.0), (13, 11, 9, 0.4), (6, 35, 3, 0.2)])
def test_spmm(M, K, N, density):
    A = random_csr(M, K, density, seed=N, empty_rows=(M - 1,))
    B = np.random.default_rng(2).standard_normal((K, N)).astype(np.float32)
    B_poisoned = B.copy()
    B_poisoned[np.setdiff1d(np.arange(K), A.indices)] = np.nan
    C = spmm(A, B_poisoned, out=np.full((M, N), np.nan, np.float32))
    assert_close(C, A, B, spmm_reference(A, B))
    assert (C[M - 1] == 0).all()


@pytest.mark.parametrize("variant", ["naive", "tiled", "decoded"])
# K = 41: three metadata words; K = 137: three of v3's 64-column tiles, the last one ragged
@pytest.mark.parametrize("M, K, N", [(1, 4, 1), (13, 18, 7), (5, 41, 11), (10, 137, 9)])
def test_nm_gemm_reads_only_kept_positions(variant, M, K, N):
    rng = np.random.default_rng(K)
    pattern = np.zeros(-(-K // 4) * 4, bool)  # one 2:4 pattern shared by every row
    for g in range(len(pattern) // 4):  # a partial last group picks among its real columns only
        real = min(4, K - 4 * g)  # K = 41: one real column, so a kept slot points past K (the guard)
        pattern[4 * g + rng.choice(real, min(2, real), replace=False)] = True
    pattern = pattern[:K]
    # no exact zeros: a group with fewer than two non-zeros stores a zero at a pruned position, whose
    # B row this test poisons (0 * NaN); test_nm_gemm_random_dense_input covers padded groups
    A = rng.standard_normal((M, K)).astype(np.float32) * pattern
    values, meta = compress_nm(A, axis=1, pad=True)
    B = rng.standard_normal((K, N)).astype(np.float32)
    B_poisoned = B.copy()
    B_poisoned[~pattern] = np.nan  # a dense product would give 0 * NaN = NaN
    C = nm_gemm(values, meta, B_poisoned, out=np.full((M, N), np.nan, np.float32), variant=variant)
    ref = nm_gemm_reference(values, meta, B)
    np.testing.assert_array_equal(ref, A.astype(np.float64) @ B)  # the reference is the dense product
    assert_close(C, sp.csr_array(A), B, ref)


@pytest.mark.parametrize("variant", ["naive", "tiled", "decoded"])
def test_nm_gemm_random_dense_input(variant):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((9, 21)).astype(np.float32)  # not sparse: compress_nm prunes it to 2:4
    B = rng.standard_normal((21, 6)).astype(np.float32)
    values, meta = compress_nm(A, axis=1, pad=True)
    C = nm_gemm(values, meta, B, out=np.full((9, 6), np.nan, np.float32), variant=variant)
    ref = nm_gemm_reference(values, meta, B)
    bound = (values.shape[1] + 2) * EPS32 * (np.abs(values).astype(np.float64).sum(1, keepdims=True)
                                           * np.abs(B).max())
    assert np.isfinite(C).all() and (np.abs(C - ref) <= bound).all()
    assert nm_gemm_multiplies(9, 21, 6) == (9 * 21 * 6, 9 * 12 * 6)  # K = 21 pads to 24: 12 kept


def test_errors():
    A = random_csr(4, 5, 0.5, 0)
    assert resolve_variant("auto") == "warp"
    with pytest.raises(RuntimeError, match="simulator implements no warp shuffles"):
        spmv(A, np.ones(5, np.float32), "shuffle")
    with pytest.raises(ValueError, match="variant='ell' is not an SpMV variant"):
        spmv(A, np.ones(5, np.float32), "ell")
    with pytest.raises(TypeError, match="A must be a scipy.sparse CSR matrix .* got csc_array in CSC format"):
        spmv(A.tocsc(), np.ones(5, np.float32))
    with pytest.raises(TypeError, match="A must hold float32 values, got dtype float64"):
        spmv(A.astype(np.float64), np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"x must have shape \(5,\) to match A, got \(4,\)"):
        spmv(A, np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"B must have 5 rows to match A \(4x5\), got shape \(4, 2\)"):
        spmm(A, np.ones((4, 2), np.float32))
    values, meta = compress_nm(np.ones((3, 8), np.float32))
    with pytest.raises(ValueError, match=r"values must have shape \(3, 6\) for B with K=12 rows"):
        nm_gemm(values, meta, np.ones((12, 2), np.float32))
    with pytest.raises(ValueError, match="variant='wmma' is not a 2:4 GEMM variant"):
        nm_gemm(values, meta, np.ones((8, 2), np.float32), variant="wmma")
    with pytest.raises(TypeError, match="metadata must be uint16, got dtype int16"):
        nm_gemm(values, meta.astype(np.int16), np.ones((8, 2), np.float32))
