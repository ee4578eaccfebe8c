"""Logarithmic numbers: encoding, exact multiplication, Gaussian-log and Mitchell addition, binned sums."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaledl.numerics.logarithmic import (
    LOG_4_3, LogGrid, MITCHELL_MAX_LOG_ERROR, gaussian_log_add, gaussian_log_table, lns_decode, lns_encode,
    lns_multiply, lns_quantize, mitchell_add, mitchell_exp2, mitchell_log2, worst_relative_error,
)
from scaledl.numerics.logarithmic_sum import (
    accumulator_bits, binned_dot, exact_dot, mitchell_dot, product_ei_min, split_code,
)

EPS64 = np.finfo(np.float64).eps


# --- the format -------------------------------------------------------------------------------------------

def test_log_4_3_grid_facts():
    g = LOG_4_3
    assert (g.bits, g.code_min, g.code_max, g.steps_per_octave) == (8, -63, 63, 8)
    assert g.max_value == 2.0 ** (63 / 8) and g.min_positive == 2.0 ** (-63 / 8)
    assert g.dynamic_range_octaves == 126 / 8


@pytest.mark.parametrize("x, sign, code", [
    (1.0, 1, 0),          # 2**0
    (2.0, 1, 8),          # one octave = 2**F codes
    (-0.5, -1, -8),
    (3.0, 1, 13),         # log2(3) * 8 = 12.68 -> 13
    (0.0, 0, 0),          # zero has its own sign value
    (1e9, 1, 63),         # saturates at code_max
    (1e-9, 0, 0),         # below code_min: flushes to zero
    (2.0 ** (12.5 / 8), 1, 12),  # an exact tie in the log domain goes to the even code
    (2.0 ** (13.5 / 8), 1, 14),
])
def test_encode_table(x, sign, code):
    s, c = lns_encode(np.array([x]))
    assert (int(s[0]), int(c[0])) == (sign, code)


def test_encode_rejects_bad_input():
    with pytest.raises(ValueError, match="x must be finite"):
        lns_encode(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="saturate=False"):
        lns_encode(np.array([1e6]), saturate=False)
    with pytest.raises(ValueError, match=r"frac_bits must be in \[0, 8\], got -1"):
        LogGrid(4, -1)
    with pytest.raises(ValueError, match=r"int_bits must be in \[0, 8\], got 20"):
        LogGrid(20, 11)


def test_log_grid_is_the_registry_spec():
    from scaledl.numerics import get_format

    assert LOG_4_3 == get_format("lns4.3") and LOG_4_3.label == "Log 4.3"
    assert (LOG_4_3.code_min, LOG_4_3.code_max, LOG_4_3.dynamic_range_octaves) == (-63, 63, 15.75)


def test_every_code_round_trips_exactly():
    codes = np.arange(LOG_4_3.code_min, LOG_4_3.code_max + 1)
    for sign in (-1, 1):
        s, c = lns_encode(lns_decode(np.full(codes.shape, sign), codes, frac_bits=3))
        assert np.all(s == sign) and np.array_equal(c, codes)


@pytest.mark.parametrize("frac_bits", [0, 1, 3, 5])
def test_relative_error_is_bounded_and_attained(frac_bits):
    rng = np.random.default_rng(frac_bits)
    x = np.exp2(rng.uniform(-4, 4, 100_000))
    rel = np.abs(lns_quantize(x, int_bits=6, frac_bits=frac_bits) - x) / x
    bound = worst_relative_error(frac_bits)
    assert rel.max() <= bound * (1 + 8 * EPS64)  # the bound is exact; a few float64 roundings in log2/exp2
    assert rel.max() > 0.98 * bound  # and it is reached near the midpoints


@settings(max_examples=200, deadline=None)
@given(st.floats(-7.0, 7.0), st.floats(-7.0, 7.0), st.sampled_from([-1, 1]), st.sampled_from([-1, 1]))
def test_multiplication_is_exact_addition_of_codes(ea, eb, sa_, sb_):
    sa, ca = lns_encode(np.array([sa_ * 2.0 ** ea]))
    sb, cb = lns_encode(np.array([sb_ * 2.0 ** eb]))
    s, c = lns_multiply(sa, ca, sb, cb)
    got = lns_decode(s, c, frac_bits=3)
    want = lns_decode(sa, ca, frac_bits=3) * lns_decode(sb, cb, frac_bits=3)
    assert got[0] == pytest.approx(want[0], rel=4 * EPS64)  # exp2 of a sum vs product of two exp2


def test_multiply_by_zero_is_zero():
    s, c = lns_multiply(np.array([0]), np.array([0]), np.array([1]), np.array([40]))
    assert s[0] == 0 and c[0] == 0


# --- addition ---------------------------------------------------------------------------------------------

def test_gaussian_log_add_matches_float64_and_survives_extremes():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-30, 30, 1000), rng.uniform(-30, 30, 1000)
    np.testing.assert_allclose(gaussian_log_add(a, b), np.log2(np.exp2(a) + np.exp2(b)), rtol=0, atol=64 * EPS64)
    assert gaussian_log_add(5000.0, 5000.0) == 5001.0  # 2**5000 overflows float64; the Gaussian form does not


def test_gaussian_log_table():
    t = gaussian_log_table(3)
    assert t[0] == 8  # sb(0) = log2 2 = 1 octave = 8 steps
    assert np.all(np.diff(t) <= 0) and t[-1] >= 1
    d_end = len(t) / 8
    assert np.rint(np.log2(1 + 2.0 ** -d_end) * 8) == 0  # the next entry would round to zero
    with pytest.raises(ValueError, match="frac_bits must be an int in \\[0, 16\\], got 17"):
        gaussian_log_table(17)


def test_mitchell_error_bound():
    m = np.linspace(0, 1, 100_001)[:-1]
    gap = np.log2(1 + m) - (mitchell_log2(1 + m))
    assert gap.min() >= 0 and gap.max() == pytest.approx(MITCHELL_MAX_LOG_ERROR, rel=1e-6)
    assert MITCHELL_MAX_LOG_ERROR == pytest.approx(0.0860713, abs=1e-7)
    y = np.linspace(-3, 3, 6001)
    assert np.all(mitchell_exp2(y) >= np.exp2(y) * (1 - 1e-15))  # 1 + f >= 2**f on [0, 1)
    np.testing.assert_array_equal(mitchell_log2(mitchell_exp2(y)), y)  # exact inverses (dyadic grid)
    with pytest.raises(ValueError, match="x must be positive"):
        mitchell_log2(np.array([0.0]))


def test_mitchell_add_error_is_within_the_bound():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-5, 5, 10_000), rng.uniform(-5, 5, 10_000)
    err = np.abs(mitchell_add(a, b) - gaussian_log_add(a, b))
    assert err.max() <= 2 * MITCHELL_MAX_LOG_ERROR  # one error on the way in, one on the way out


# --- binned sums ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("code, ei, ef", [(13, 1, 5), (-8, -1, 0), (-3, -1, 5), (0, 0, 0), (7, 0, 7)])
def test_split_code(code, ei, ef):
    got = split_code(np.array([code]), 3)
    assert (int(got[0][0]), int(got[1][0])) == (ei, ef)


@pytest.mark.parametrize("n", [1, 17, 1000])
@pytest.mark.parametrize("frac_bits", [1, 3, 5])
def test_binned_dot_matches_correctly_rounded_sum(n, frac_bits):
    rng = np.random.default_rng(n + frac_bits)
    a, b = rng.standard_normal(n), rng.laplace(size=n)
    a[::5] = 0
    sa, ca = lns_encode(a, int_bits=5, frac_bits=frac_bits)
    sb, cb = lns_encode(b, int_bits=5, frac_bits=frac_bits)
    acc = binned_dot(sa, ca, sb, cb, frac_bits=frac_bits)
    want = exact_dot(sa, ca, sb, cb, frac_bits=frac_bits)
    terms = np.abs(lns_decode(sa, ca, frac_bits=frac_bits) * lns_decode(sb, cb, frac_bits=frac_bits)).sum()
    # Exact integer bins; then 2**F float64 constants (each within eps/2) and a 2**F-term float64 sum.
    assert abs(acc.value() - want) <= (2 ** frac_bits + 2) * EPS64 * terms


def test_binned_bins_are_exact_integers():
    # 2**(0/8) + 2**(8/8) + 2**(3/8) - 2**(11/8): EF bins 0 and 3, EI 0 and 1.
    sa = np.array([1, 1, 1, -1], np.int8)
    ca = np.array([0, 4, 3, 5], np.int32)
    sb = np.ones(4, np.int8)
    cb = np.array([0, 4, 0, 6], np.int32)
    acc = binned_dot(sa, ca, sb, cb, frac_bits=3)
    assert acc.ei_min == 0
    assert acc.bins.tolist() == [1 + 2, 0, 0, 1 - 2, 0, 0, 0, 0]


def test_binned_dot_errors():
    s = np.ones(3, np.int8)
    with pytest.raises(ValueError, match="same length"):
        binned_dot(s, s.astype(np.int32), s[:2], s[:2].astype(np.int32), frac_bits=3)
    with pytest.raises(TypeError, match="integer arrays"):
        binned_dot(s, np.ones(3), s, np.ones(3, np.int32), frac_bits=3)
    with pytest.raises(ValueError, match="ei_min=5 is above"):
        binned_dot(s, np.zeros(3, np.int32), s, np.zeros(3, np.int32), frac_bits=3, ei_min=5)


def test_accumulator_width():
    assert product_ei_min(LOG_4_3) == -16  # -126 >> 3
    assert accumulator_bits(LOG_4_3, 1) == 33  # EI from -16 to 15: 32 bit positions, plus a sign bit
    assert accumulator_bits(LOG_4_3, 10_000) == 33 + math.ceil(math.log2(10_000))
    with pytest.raises(ValueError, match="n_terms must be >= 1, got 0"):
        accumulator_bits(LOG_4_3, 0)


def test_mitchell_dot_overestimates_positive_sums():
    sa, ca = lns_encode(np.full(64, 1.3))
    assert mitchell_dot(sa, ca, sa, ca, frac_bits=3) >= exact_dot(sa, ca, sa, ca, frac_bits=3)


# The two rounding rules onto a log grid, each by its name.
@pytest.mark.parametrize("x, rule, want_code", [
    (2 ** (0.5 / 8), "nearest_exponent", 0),           # the geometric midpoint of 1 and r: a tie, to the even code
    (2 ** (0.5 / 8) * 1.0001, "nearest_exponent", 1),  # above it the exponent rounds up...
    (2 ** (0.5 / 8) * 1.0001, "nearest", 0),           # ...but 1 is still the nearer value
    ((1 + 2 ** (1 / 8)) / 2 * 0.9999, "nearest", 0),   # just below the arithmetic midpoint: still 1
    ((1 + 2 ** (1 / 8)) / 2 * 1.0001, "nearest", 1),   # past it both rules round up
    (2 ** (-63 / 8) * 0.5, "nearest", None),           # half the smallest value: a tie, flushed to zero
    (2 ** (-63 / 8) * 0.51, "nearest", -63),
    (2 ** (-63.4 / 8), "nearest_exponent", -63),
    (2 ** (-63.6 / 8), "nearest_exponent", None),      # the exponent rounds below the smallest code: zero
])
def test_lns_encode_rounding_rules_table(x, rule, want_code):
    s, c = lns_encode(np.array([x]), rounding=rule)
    if want_code is None:
        assert s[0] == 0 and c[0] == 0
    else:
        assert s[0] == 1 and c[0] == want_code


def test_quantize_names_both_log_roundings():
    from scaledl.numerics import quantize
    x = np.exp2(np.random.default_rng(2).uniform(-9, 9, 20_001)).astype(np.float32)
    x[::2] *= -1
    np.testing.assert_array_equal(quantize(x, "lns4.3"), lns_quantize(x, rounding="nearest").astype(np.float32))
    np.testing.assert_array_equal(quantize(x, "lns4.3", rounding="nearest_exponent"),
                                  lns_quantize(x).astype(np.float32))
    with pytest.raises(ValueError, match="rounding must be one of .* got 'log'"):
        lns_encode(x, rounding="log")
    with pytest.raises(ValueError, match="'nearest_exponent' is for logarithmic formats .* got fmt 'e4m3'"):
        quantize(x, "e4m3", rounding="nearest_exponent")
