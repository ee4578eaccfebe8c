"""Log vs float comparisons: worst-case rounding errors (closed forms) and the dot-product error study."""

import math

import matplotlib
import numpy as np
import pytest

from scaledl.numerics.logarithmic import disagreement_fraction, worst_relative_error
from scaledl.numerics.logarithmic_compare import (
    DOT_METHODS, compare_log_roundings, dot_error_study, error_by_octave, round_float_mantissa,
    worst_case_errors,
)
from scaledl.numerics.views import view_relative_error

matplotlib.use("Agg")


def test_worst_case_errors_match_closed_forms():
    t = worst_case_errors()
    # Log 4.3 rounding the exponent: half a step of 1/8 octave up: 2**(1/16) - 1 (either yardstick).
    assert t["lns4.3 nearest exponent"]["vs_true"] == pytest.approx(worst_relative_error(3), rel=1e-4)
    # Log 4.3 rounding to the nearest value: the midpoint of 1 and r = 2**(1/8): (r - 1)/(r + 1) over the true
    # value, (r - 1)/2 over the rounded one (1). The midpoint is added to the sampled grid.
    r = 2 ** (1 / 8)
    assert t["lns4.3 nearest value"]["vs_true"] == pytest.approx((r - 1) / (r + 1), rel=1e-12)
    assert t["lns4.3 nearest value"]["vs_rounded"] == pytest.approx((r - 1) / 2, rel=1e-5)  # approached: the
    # float64 midpoint itself may round up, so the sample below it (2**-20 away) is the worst one seen
    assert worst_relative_error(3, "nearest") == pytest.approx((r - 1) / (r + 1), rel=1e-15)
    # E4M3 near 1: step 1/8, the tie 1 + 1/16 rounds down to 1 (even): (1/16) / (17/16) = 1/17 over the
    # true value, 1/16 over the rounded one.
    assert t["e4m3"]["vs_true"] == pytest.approx(1 / 17, rel=1e-12)
    assert t["e4m3"]["vs_rounded"] == 1 / 16
    assert t["lns4.3 nearest exponent"]["bits"] == pytest.approx(-math.log2(2 ** (1 / 16) - 1), rel=1e-4)
    # the two headline ratios: 1.36 (both round to the nearest value) and 1.33 (Log 4.3 rounds its exponent)
    assert t["e4m3"]["vs_true"] / t["lns4.3 nearest value"]["vs_true"] == pytest.approx(1.359, abs=5e-4)
    assert t["e4m3"]["vs_true"] / t["lns4.3 nearest exponent"]["vs_true"] == pytest.approx(1.329, abs=5e-4)


def test_the_two_log_roundings_differ_only_between_the_two_midpoints():
    c = compare_log_roundings(samples_per_step=1024)
    assert c["in_bands"] and c["same_grid"] and c["differ"] > 0
    # log-spaced samples: the measured share of the band converges to the closed form, 1.08 % for Log 4.3
    assert c["predicted"] == pytest.approx(0.01083, abs=1e-5)
    assert c["fraction_in_range"] == pytest.approx(c["predicted"], abs=2 / 1024)
    assert c["worst"]["nearest"] == pytest.approx(worst_relative_error(3, "nearest"), rel=1e-12)
    assert c["worst"]["nearest_exponent"] == pytest.approx(worst_relative_error(3), rel=1e-6)
    assert disagreement_fraction(4) < disagreement_fraction(3)  # the band shrinks with the step (about r**2)
    with pytest.raises(ValueError, match="fmt must be a logarithmic format"):
        compare_log_roundings("e4m3")


@pytest.mark.parametrize("x, m, want", [
    (1.0625, 3, 1.0),    # tie, to even
    (1.1875, 3, 1.25),   # tie, to even (1.25 has an even last mantissa bit)
    (3.1, 1, 3.0),
    (-5.0, 2, -5.0),     # exactly representable
    (0.0, 3, 0.0),
])
def test_round_float_mantissa_table(x, m, want):
    assert round_float_mantissa(np.array([x]), m)[0] == want


def test_round_float_mantissa_rejects_bad_bits():
    with pytest.raises(ValueError, match="mantissa_bits must be an int in \\[0, 52\\], got 60"):
        round_float_mantissa(np.ones(2), 60)


def test_dot_error_study_orders_methods_sensibly():
    r = dot_error_study(257, 30, seed=3)
    assert set(r) == set(DOT_METHODS)
    med = {k: float(np.median(v)) for k, v in r.items()}
    fp32 = med["FP32 inputs, FP32 accumulator"]
    eps32 = np.finfo(np.float32).eps
    assert fp32 < 257 * eps32  # the classical bound n * eps on sum |a_i b_i|, far from reached
    for k in ("E4M3 inputs, FP32 accumulator", "Log 4.3 inputs, binned (exact) sum"):
        assert 1e4 * fp32 < med[k] < 0.05  # 8-bit inputs: errors of order 2**-4 / sqrt(n)
    assert med["Log 4.3 inputs, Mitchell per product"] > 0


def test_dot_error_study_rejects_bad_args():
    with pytest.raises(ValueError, match="n and trials must be >= 1, got n=0"):
        dot_error_study(0, 3)
    with pytest.raises(ValueError, match="dist must be 'normal' or 'laplace', got 'cauchy'"):
        dot_error_study(10, 3, dist="cauchy")


def test_view_relative_error_draws_both_worst_cases():
    fig = view_relative_error(frac_bits=3, mantissa_bits=3)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "worst 4.33 %" in labels and "worst 5.88 %" in labels  # both round to the nearest value


def test_error_by_octave_closed_forms():
    e = error_by_octave(octaves=20, samples_per_octave=2048)
    # samples are 2**(1/2048) apart (0.034 %), so a worst case is found to within about 1 % of itself
    assert set(e) == {"INT8 (scaled)", "FP8 E4M3", "Log 4.3"} and all(v.shape == (20,) for v in e.values())
    # Log 4.3, nearest value like the others: the same worst error (r - 1)/(r + 1) in each of its 15 full
    # octaves, then everything flushes.
    np.testing.assert_allclose(e["Log 4.3"][:15], worst_relative_error(3, "nearest"), rtol=1e-2)
    # octave 15 reaches a quarter octave below the smallest value: down to half of it, values round up to it
    assert e["Log 4.3"][15] == pytest.approx(2 ** 0.25 - 1, rel=1e-2) and np.all(e["Log 4.3"][16:] == 1.0)
    # E4M3 normal octaves: the tie 1 + 1/16 rounds to 1: 1/17. Its subnormal step is 2**-9; the octave
    # [2**-6, 2**-5) of 448 / 2**k (k = 15) sits on it: worst half step over the smallest value there.
    np.testing.assert_allclose(e["FP8 E4M3"][:14], 1 / 17, rtol=1e-2)
    assert np.all(e["FP8 E4M3"][:14] <= 1 / 17)
    assert np.all(e["Log 4.3"][:15] <= worst_relative_error(3, "nearest") * (1 + 1e-12))
    assert e["FP8 E4M3"][15] > 0.1 and e["FP8 E4M3"][-1] == 1.0
    # INT8 scaled to 448: step 448/127; octave 0 holds [224, 448): worst is half a step over about 224
    # (checked within the sampling resolution), and the error doubles each octave down.
    assert e["INT8 (scaled)"][0] == pytest.approx(0.5 * 448 / 127 / 224, rel=0.02)
    assert np.all(np.diff(e["INT8 (scaled)"][:7]) > 0) and e["INT8 (scaled)"][7] == 1.0
    with pytest.raises(ValueError, match="octaves must be a positive int, got 0"):
        error_by_octave(octaves=0)
