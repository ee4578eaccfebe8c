"""The CSR / dense / 2:4 traffic and roofline model against its closed forms and the real compressed arrays."""

import numpy as np
import pytest
import scipy.sparse as sp

from scaledl.perf import hardware
from scaledl.perf.sparse_traffic import (bytes_per_nonzero, csr_bytes_crossover_density, csr_nbytes,
                                         csr_speed_crossover_density, dense_nbytes, nm_fraction_of_dense,
                                         nm_nbytes, nm_speedup, product_cost)
from scaledl.sparsity import compress_nm

H100 = hardware.get("H100 SXM")


def test_csr_bytes_match_scipy():
    dense = np.random.default_rng(0).random((37, 53), dtype=np.float32)
    A = sp.csr_array(np.where(dense < 0.2, dense, 0))  # about 20 % nonzero (random_array needs SciPy 1.12+)
    assert 0 < A.nnz < 37 * 53
    A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int32)
    assert csr_nbytes(37, 53, A.nnz) == A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    assert bytes_per_nonzero(37, A.nnz) == pytest.approx(8 + 38 * 4 / A.nnz, rel=1e-15)


@pytest.mark.parametrize("v, i, limit", [(4, 4, 1 / 2), (2, 4, 1 / 3), (2, 2, 1 / 2), (1, 4, 1 / 5)])
def test_bytes_crossover(v, i, limit):
    M = K = 1000
    d = csr_bytes_crossover_density(M, K, value_nbytes=v, index_nbytes=i)
    # at the crossover the two sizes are equal (nnz as a real number); the row pointers lower it a little
    assert d * M * K * (v + i) + (M + 1) * 4 == pytest.approx(dense_nbytes(M, K, v), rel=1e-12)
    assert limit - 4 * (M + 1) / (M * K * (v + i)) == pytest.approx(d, rel=1e-12) and d < limit
    big = csr_bytes_crossover_density(10**6, 10**6, value_nbytes=v, index_nbytes=i)
    assert big == pytest.approx(limit, rel=1e-5)


def test_nm_size_is_56_25_percent_and_matches_compress():
    assert nm_fraction_of_dense(16) == 0.5 + 2 / 16 * 0.5 == 0.5625
    assert nm_nbytes(32, 64, 2) / dense_nbytes(32, 64, 2) == 0.5625
    w = np.random.default_rng(1).standard_normal((7, 37)).astype(np.float16)  # 37: padded, a partial word
    values, meta = compress_nm(w, pad=True)
    assert nm_nbytes(7, 37, 2) == values.nbytes + meta.nbytes


def test_speed_crossover_closed_forms():
    # A large GEMM: dense is compute bound on tensor cores and so is CSR on CUDA cores:
    # d* = P_cuda_fp32 / P_tensor_fp16
    d = csr_speed_crossover_density(H100, 4096, 4096, 4096, "fp16")
    assert d == pytest.approx(H100.peak_TFLOPS("fp32") / H100.peak_TFLOPS("fp16"), rel=1e-12)
    # SpMV: both memory bound, so the speed crossover is the byte crossover of the whole traffic
    M = K = 4096
    d = csr_speed_crossover_density(H100, M, K, 1, "fp16")
    assert d == pytest.approx((M * K * 2 - (M + 1) * 4) / (M * K * 6), rel=1e-12)
    assert product_cost("csr", H100, M, K, 1, d, "fp16").bound == "memory"
    # at the crossover the two roofline times agree (nnz is rounded: within one non-zero's bytes)
    t_dense = product_cost("dense", H100, M, K, 1, 1.0, "fp16").time_s
    assert product_cost("csr", H100, M, K, 1, d, "fp16").time_s == pytest.approx(t_dense, rel=1e-6)


def test_nm_speedup_two_regimes():
    assert nm_speedup(H100, 8192, 8192, 8192, "fp16") == pytest.approx(2.0, rel=1e-12)  # compute bound
    # memory bound SpMV: dense bytes / compressed bytes, with B and C the same on both sides
    M = K = 8192
    ops = (K + M) * 2
    expect = (M * K * 2 + ops) / (0.5625 * M * K * 2 + ops)
    assert nm_speedup(H100, M, K, 1, "fp16") == pytest.approx(expect, rel=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="nnz must be at most M x K = 12, got 13"):
        csr_nbytes(3, 4, 13)
    with pytest.raises(ValueError, match=r"density must be a number in \[0, 1\], got 1.5"):
        product_cost("csr", H100, 4, 4, 4, 1.5)
    with pytest.raises(ValueError, match="fmt='coo' is not a format"):
        product_cost("coo", H100, 4, 4, 4)
    with pytest.raises(ValueError, match="sparse=True: V100 SXM2 has no 2:4 sparse fp16 rate"):
        product_cost("2:4", hardware.get("V100"), 4, 4, 4)
    with pytest.raises(ValueError, match="nnz must be positive to share the row pointers out"):
        bytes_per_nonzero(3, 0)


# ------------------------------------------------------------------------ load balance, Amdahl
from scaledl.perf.sparse_traffic import amdahl_speedup, lane_utilization  # noqa: E402


def test_lane_utilization_hand_cases():
    assert lane_utilization([3] * 64) == 1.0  # equal rows, one thread each: perfectly balanced
    assert lane_utilization([3] * 64, threads_per_row=32) == round(3 / 32, 4)  # 29 of 32 lanes idle
    assert lane_utilization([0, 0, 5, 0], warp=4) == 0.25
    assert lane_utilization([0, 0, 5, 0], threads_per_row=4, warp=4) == round(5 / 8, 4)
    assert lane_utilization([1, 2, 3], warp=4) == round(6 / 12, 4)  # padded warp: the missing row is idle


def test_lane_utilization_errors():
    with pytest.raises(ValueError, match="threads_per_row"):
        lane_utilization([1, 2], threads_per_row=8)
    with pytest.raises(ValueError, match="row_lengths"):
        lane_utilization([])


def test_amdahl():
    assert amdahl_speedup(1.0, 2.0) == 2.0 and amdahl_speedup(0.0, 2.0) == 1.0
    with pytest.raises(ValueError, match="fraction"):
        amdahl_speedup(1.5, 2.0)
    with pytest.raises(ValueError, match="speedup"):
        amdahl_speedup(0.5, 0)
