"""The sparse kernels at full sizes on a real GPU, the shuffle SpMV included (skipped on the simulator).

Row lengths follow a heavy-tailed distribution (a few rows far longer than the rest), as pruned layers and
graphs have, with empty rows; device outputs are poisoned with NaN before the launch.
"""

import numpy as np
import pytest
import scipy.sparse as sp

pytestmark = pytest.mark.gpu

EPS32 = float(np.finfo(np.float32).eps)


def skewed_csr(M, K, mean_nnz, seed):
    rng = np.random.default_rng(seed)
    lengths = np.minimum(K, rng.zipf(1.8, M) * mean_nnz // 3)
    lengths[::17] = 0  # empty rows
    rows = np.repeat(np.arange(M), lengths)
    cols = np.concatenate([rng.choice(K, n, replace=False) for n in lengths])
    vals = rng.standard_normal(rows.size).astype(np.float32)
    return sp.csr_array((vals, (rows, cols)), shape=(M, K))


def bound(A, X):
    r = np.diff(A.indptr).reshape((-1,) + (1,) * (np.ndim(X) - 1))
    return (r + 2) * EPS32 * (abs(A).astype(np.float64) @ np.abs(X).astype(np.float64))


@pytest.mark.parametrize("variant", ["row", "warp", "shuffle"])
def test_spmv_full_size(variant):
    from numba import cuda

    from scaledl.kernels.spmv import csr_arrays, spmv, spmv_into, spmv_reference

    A = skewed_csr(20011, 4099, 40, 0)
    x = np.random.default_rng(1).standard_normal(4099).astype(np.float32)
    dev = [cuda.to_device(a) for a in (*csr_arrays(A), x)]
    y = cuda.to_device(np.full(A.shape[0], np.nan, np.float32))
    got = spmv_into(*dev, y, variant).copy_to_host()
    ref = spmv_reference(A, x)
    assert np.all(np.abs(got - ref) <= bound(A, x))
    assert np.all(np.abs(spmv(A, x, variant) - ref) <= bound(A, x))  # host in, host out


def test_spmm_and_nm_gemm_full_size():
    from scaledl.kernels.nm_gemm import nm_gemm, nm_gemm_reference
    from scaledl.kernels.spmv import spmm, spmm_reference
    from scaledl.sparsity import compress_nm

    A = skewed_csr(3001, 1025, 30, 2)
    B = np.random.default_rng(3).standard_normal((1025, 257)).astype(np.float32)
    assert np.all(np.abs(spmm(A, B) - spmm_reference(A, B)) <= bound(A, B))
    dense = np.random.default_rng(4).standard_normal((1001, 1023)).astype(np.float32)  # K = 1023: padded
    values, meta = compress_nm(dense, axis=1, pad=True)
    Bk = B[:1023]
    ref = nm_gemm_reference(values, meta, Bk)
    # float32 accumulation of the K/2 kept products: (K/2 + 2) eps32 sum_j |a_j b_j|
    tol = (values.shape[1] + 2) * EPS32 * (np.abs(nm_gemm_reference(np.abs(values), meta, np.abs(Bk))))
    for variant in ("naive", "tiled", "decoded"):
        C = nm_gemm(values, meta, Bk, variant=variant)
        assert np.all(np.abs(C - ref) <= tol), variant
