"""Tensor-core emulation: exact products, FP32 accumulation in the stated order, TF32 rounding, padding."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaledl.numerics import tensorcore as tc

fp16_values = st.floats(-65504, 65504, width=16, allow_nan=False, allow_infinity=False)


@given(fp16_values, fp16_values)
def test_fp16_products_are_exact_in_fp32(a, b):
    exact = Fraction(a) * Fraction(b)
    assert Fraction(float(np.float32(a) * np.float32(b))) == exact


def _hmma_scalar(A, B, C):
    # independent scalar loops: D[i, j] = (((C + p0) + p1) + p2) + p3, each + an IEEE float32 addition
    a, b = A.astype(np.float16), B.astype(np.float16)
    D = np.array(C, np.float32)
    for i in range(4):
        for j in range(4):
            acc = np.float32(D[i, j])
            for k in range(4):
                p = np.float32(float(a[i, k]) * float(b[k, j]))  # exact (test above)
                acc = np.float32(acc + p)
            D[i, j] = acc
    return D


def test_hmma_tile_matches_scalar_reference_bit_for_bit():
    rng = np.random.default_rng(1)
    for _ in range(20):
        A, B = rng.standard_normal((4, 4)) * 100, rng.standard_normal((4, 4))
        C = rng.standard_normal((4, 4)).astype(np.float32) * 1e4
        assert np.array_equal(tc.hmma_4x4x4(A, B, C).view(np.uint32), _hmma_scalar(A, B, C).view(np.uint32))


def test_hmma_gemm_equals_a_chain_of_hmma_instructions():
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((8, 12)), rng.standard_normal((12, 8))
    D = np.zeros((8, 8), np.float32)
    for k0 in range(0, 12, 4):
        for i0 in range(0, 8, 4):
            for j0 in range(0, 8, 4):
                D[i0:i0 + 4, j0:j0 + 4] = tc.hmma_4x4x4(A[i0:i0 + 4, k0:k0 + 4], B[k0:k0 + 4, j0:j0 + 4],
                                                        D[i0:i0 + 4, j0:j0 + 4])
    assert np.array_equal(tc.hmma_gemm(A, B), D)


def test_summing_ones_stalls_at_2048_in_fp16_but_not_in_fp32():
    # FP16 has 11 significant bits: above 2048 its spacing is 2, so 2048 + 1 rounds (to even) back to 2048
    ones = np.ones((1, 3000), np.float32)
    assert tc.fp16_gemm(ones, ones.T)[0, 0] == 2048
    assert tc.hmma_gemm(ones, ones.T)[0, 0] == 3000


def test_fp16_gemm_matches_scalar_fma_loop():
    rng = np.random.default_rng(3)
    A, B = rng.random((3, 50)), rng.random((50, 2))
    a, b = A.astype(np.float16), B.astype(np.float16)
    want = np.zeros((3, 2), np.float16)
    for i in range(3):
        for j in range(2):
            acc = Fraction(0)
            for k in range(50):
                # exact sum, then one rounding to FP16 through float64 (no double rounding here: all terms
                # are multiples of 2^-48 below 2^12, which float64 holds exactly)
                acc = Fraction(float(np.float16(float(acc + Fraction(float(a[i, k])) * Fraction(float(b[k, j]))))))
            want[i, j] = float(acc)
    assert np.array_equal(tc.fp16_gemm(A, B), want)


def _tf32_reference(x: float) -> float:
    # independent: scale the significand to 11 bits, Python's round() is round-half-to-even
    if x == 0 or not math.isfinite(x):
        return x
    m, e = math.frexp(x)  # x = m 2^e, 0.5 <= |m| < 1
    e = max(e, -125)  # subnormals (below 2^-126) keep FP32's fixed exponent, so the grid stops shrinking
    m = x / 2.0**e
    return math.ldexp(round(m * 2**11), e - 11)


@pytest.mark.parametrize("x, want", [
    (1.0, 1.0),
    (1 + 2**-11, 1.0),                 # tie, even neighbour below
    (1 + 3 * 2**-11, 1 + 2**-9),       # tie, even neighbour above
    (1 + 2**-11 + 2**-20, 1 + 2**-10),  # just above a tie
    (-(1 + 3 * 2**-11), -(1 + 2**-9)),
    (2 - 2**-23, 2.0),                 # carries into the exponent
])
def test_tf32_table(x, want):
    assert float(tc.round_to_tf32(np.float32(x))) == want


@settings(max_examples=300)
@given(st.floats(-2.0**100, 2.0**100, width=32, allow_nan=False))
def test_tf32_matches_independent_rounding(x):
    assert float(tc.round_to_tf32(np.float32(x))) == _tf32_reference(float(np.float32(x)))


def test_tf32_keeps_inf_and_nan():
    out = tc.round_to_tf32(np.array([np.inf, -np.inf, np.nan], np.float32))
    assert np.isinf(out[0]) and np.isinf(out[1]) and np.isnan(out[2])


def test_error_ordering_and_bounds_on_positive_data():
    Ks = [16, 256, 2048]
    err = tc.accumulation_errors(Ks, M=8, N=8, seed=0, distribution="uniform")
    for i, K in enumerate(Ks):
        # positive data: the relative error of a K-term sum is at most about (K + 1) u per rounding kind
        assert err["FP32 in, FP32 acc"][i] <= (K + 1) * tc.FP32_EPS
        # HMMA: input rounding (at most ~2 u16 = 2^-10 relative per product) plus FP32 accumulation
        assert err["FP16 in, FP32 acc (HMMA)"][i] <= tc.FP16_EPS + (K + 1) * tc.FP32_EPS
        assert err["FP16 in, FP32 acc (HMMA)"][i] == pytest.approx(err["FP16 rounding of inputs only"][i],
                                                                   abs=(K + 1) * tc.FP32_EPS)
    # pure FP16 accumulation is worse than HMMA by a wide margin once K is large
    assert err["FP16 in, FP16 acc (HFMA)"][-1] > 10 * err["FP16 in, FP32 acc (HMMA)"][-1]
    assert err["FP32 in, FP32 acc"][-1] < err["TF32 in, FP32 acc"][-1] < err["FP16 in, FP16 acc (HFMA)"][-1]


@pytest.mark.parametrize("shape, tile, want", [
    ((1000, 1000, 1000), (4, 4, 4), 1.0),
    ((1000, 1000, 1000), (128, 128, 1), (1000 / 1024) ** 2),
    ((130, 130, 64), (128, 128, 1), (130 / 256) ** 2),
    ((130, 130, 64), (4, 4, 4), (130 / 132) ** 2),
])
def test_padded_efficiency(shape, tile, want):
    assert tc.padded_efficiency(shape, tile) == pytest.approx(want)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"A must be a 4x4 tile, got shape \(4, 3\)"):
        tc.hmma_4x4x4(np.zeros((4, 3)), np.zeros((4, 4)), np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"A's columns \(3\) must equal B's rows \(4\)"):
        tc.hmma_gemm(np.zeros((2, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="distribution='cauchy'"):
        tc.accumulation_errors([4], distribution="cauchy")
    with pytest.raises(ValueError, match="tile must hold positive integers"):
        tc.padded_efficiency((4, 4, 4), (0, 4, 4))


def test_measurement_refuses_without_a_gpu_and_checks_its_arguments():
    from scaledl import device

    with pytest.raises(ValueError, match="mode='int4'"):
        tc.measure_cupy_gemm_TFLOPS(64, "int4")
    with pytest.raises(ValueError, match="n must be a positive integer, got 0"):
        tc.measure_cupy_gemm_TFLOPS(0, "fp32")
    if not device.on_gpu():
        with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
            tc.measure_cupy_gemm_TFLOPS(64, "fp32")


def test_best_padded_efficiency_picks_the_best_tile():
    from scaledl.numerics.tensorcore import WARP_MMA_SHAPES, best_padded_efficiency, padded_efficiency

    # 130 = 128 + 2: one 128-tile wastes almost half per dimension; 32-tiles pad 130 to 160 per dimension
    assert best_padded_efficiency((130, 130, 130), [(128, 128, 32), (32, 32, 32)]) == (130 / 160) ** 3 * (
        160 / 160)
    assert best_padded_efficiency((128, 128, 128), [(128, 128, 32)]) == 1.0
    assert WARP_MMA_SHAPES["Turing mma.m8n8k16 (int8)"] == (8, 8, 16)
    assert padded_efficiency((8, 8, 16), WARP_MMA_SHAPES["Turing mma.m8n8k16 (int8)"]) == 1.0
    with pytest.raises(ValueError, match="tiles must name at least one"):
        best_padded_efficiency((4, 4, 4), [])
