"""TernGrad's and QSGD's variance: exact formulas, the papers' bounds, and the real compressors measured.

Every Monte Carlo check uses a fixed seed, so it is deterministic; the tolerances are in standard errors of
the measured mean (4 of them: a 1-in-16,000 miss for a correct formula, were the seed drawn at random).
"""

import math

import numpy as np
import pytest

from scaledl.comm.compression import make_compressor
from scaledl.comm.compression.variance import (measured_variance, mean_of_draws, qsgd_variance, quantiser_error,
                                               qsgd_variance_bound, terngrad_variance, terngrad_variance_bound)

DRAWS = 2000
Z = 4  # standard errors


def _vectors():
    rng = np.random.default_rng(7)
    return {
        "normal 257": rng.standard_normal(257).astype(np.float32),
        "heavy tail 300": rng.standard_t(2, 300).astype(np.float32),
        "sparse 400": (rng.standard_normal(400) * (rng.random(400) < 0.05)).astype(np.float32),
        "one spike 500": np.float32([40.0] + list(rng.standard_normal(499) * 0.1)),
    }


@pytest.mark.parametrize("name", list(_vectors()))
def test_terngrad_measured_variance_matches_the_formula_and_stays_below_the_bound(name):
    g = _vectors()[name]
    est = measured_variance(make_compressor("terngrad", clip_sigmas=None, seed=3), g, DRAWS)
    exact = terngrad_variance(g)
    assert abs(est.mean - exact) < Z * est.stderr, (est, exact)
    assert est.mean <= terngrad_variance_bound(g)
    # the formula is not merely below the bound: 10 % off is caught
    assert abs(est.mean - 1.1 * exact) > Z * est.stderr


@pytest.mark.parametrize("levels", [1, 2, 4, 16, 64])
@pytest.mark.parametrize("name", list(_vectors()))
def test_qsgd_measured_variance_matches_the_formula_and_stays_below_the_bound(name, levels):
    g = _vectors()[name]
    est = measured_variance(make_compressor("qsgd", levels=levels, seed=5), g, DRAWS)
    exact = qsgd_variance(g, levels)
    assert abs(est.mean - exact) <= Z * est.stderr + 1e-6 * exact, (est, exact)
    assert est.mean <= qsgd_variance_bound(g, levels)


def test_qsgd_bound_is_tight_when_s_is_much_less_than_sqrt_n():
    # all |v_i| equal, n = 10,000, s = 1: p_i = 1 / sqrt(n), variance = sqrt(n) (1 - 1/sqrt(n)) ||v||^2,
    # 99 % of the bound sqrt(n)/s ||v||^2. A bound off by a factor (1.5x too large or too small) fails.
    n, s = 10_000, 1
    v = np.where(np.arange(n) % 2 == 0, 1.0, -1.0).astype(np.float32)
    est = measured_variance(make_compressor("qsgd", levels=s, seed=11), v, 1000)
    bound = qsgd_variance_bound(v, s)
    assert bound == pytest.approx(math.sqrt(n) / s * n)
    assert qsgd_variance(v, s) == pytest.approx(0.99 * bound)
    assert 0.97 * bound < est.mean <= bound
    # the same two checks against a bound 1.5x too small and 1.5x too large: each would fail
    assert est.mean > bound / 1.5 and not 0.97 * (1.5 * bound) < est.mean


def test_qsgd_first_term_is_reached_up_to_its_factor_of_four():
    # n = 4, s = 3, all |v_i| equal: r_i = 1.5, p_i = 1/2, variance n / (4 s^2) ||v||^2, a quarter of the bound
    v = np.float32([1, -1, 1, -1])
    bound = qsgd_variance_bound(v, 3)
    assert bound == pytest.approx(4 / 9 * 4)
    assert qsgd_variance(v, 3) == pytest.approx(bound / 4)
    est = measured_variance(make_compressor("qsgd", levels=3, seed=2), v, DRAWS)
    # every draw errs by exactly u / 2 per element (|Q(v_i)| is 2/3 or 4/3), so the spread is float32
    # rounding of the decoded values (relative 2^-24), not sampling
    assert est.mean == pytest.approx(bound / 4, rel=1e-6)


def test_terngrad_bound_is_tight_for_one_spike_among_many_small_values():
    # g = (1, 0.01 x 10,000): ||g||_inf ||g||_1 = 101, ||g||^2 = 2, variance 99: 98 % of the bound
    g = np.float32([1.0] + [0.01] * 10_000)
    bound = terngrad_variance_bound(g)
    assert bound == pytest.approx(101, rel=1e-6) and terngrad_variance(g) == pytest.approx(99, rel=1e-5)
    est = measured_variance(make_compressor("terngrad", clip_sigmas=None, seed=4), g, 1000)
    assert 0.95 * bound < est.mean <= bound
    # against a bound 1.5x too small and 1.5x too large, the same two checks would fail
    assert est.mean > bound / 1.5 and not 0.95 * (1.5 * bound) < est.mean


def test_wrong_bounds_are_caught_by_the_measurement():
    # the checks above, run against deliberately wrong bounds, fail: n instead of sqrt(n) is too loose to
    # be tight, and ||g||_2^2 (QSGD's form without the sqrt(n)) is broken by TernGrad's measured variance
    n = 10_000
    v = np.ones(n, np.float32)
    est = measured_variance(make_compressor("qsgd", levels=1, seed=11), v, 200)
    assert not est.mean > 0.97 * (n * n)  # "n / s^2" alone: the tightness check fails
    g = np.float32([1.0] + [0.01] * 10_000)
    est_t = measured_variance(make_compressor("terngrad", clip_sigmas=None, seed=4), g, 200)
    assert est_t.mean > float(np.sum(g.astype(np.float64) ** 2))


def test_mean_of_draws_converges_like_one_over_sqrt_n():
    rng = np.random.default_rng(0)
    g = rng.standard_normal(1000).astype(np.float32)
    marks = (1, 10, 100, 1000)
    for c, var in ((make_compressor("terngrad", clip_sigmas=None, seed=1), terngrad_variance(g)),
                   (make_compressor("qsgd", levels=4, seed=1), qsgd_variance(g, 4))):
        dist = mean_of_draws(c, g, marks)
        norm = float(np.linalg.norm(g))
        for n in marks:
            predicted = math.sqrt(var / n) / norm
            # a norm of ~1000 independent terms: within 15 % of its root-mean-square value
            assert 0.85 * predicted < dist[n] < 1.15 * predicted, (c.name, n, dist[n], predicted)


def test_clipped_terngrad_averages_to_the_clipped_gradient_not_to_g():
    g = np.float32([30.0] + [1.0, -1.0] * 200)
    c = make_compressor("terngrad", seed=0)
    clipped = c.clipped(g)
    assert clipped[0] < 30 * 0.5  # clipping at 2.5 sigma cuts the spike
    to_clipped = mean_of_draws(c, g, [4000], around=clipped)[4000]
    to_g = mean_of_draws(make_compressor("terngrad", seed=0), g, [4000])[4000]
    predicted = math.sqrt(terngrad_variance(clipped) / 4000) / float(np.linalg.norm(clipped))  # about 0.03
    assert 0.85 * predicted < to_clipped < 1.15 * predicted
    bias = float(np.linalg.norm(clipped - g) / np.linalg.norm(g))  # the spike cut from 30 to about 4.5: 0.71
    assert to_g > 0.9 * bias > 0.6
    est = measured_variance(make_compressor("terngrad", seed=0), g, DRAWS, around=clipped)
    assert abs(est.mean - terngrad_variance(clipped)) < Z * est.stderr


def test_zero_and_bad_input():
    assert terngrad_variance(np.zeros(3)) == 0 == qsgd_variance(np.zeros(3), 4) == qsgd_variance_bound(np.zeros(3), 4)
    assert terngrad_variance(np.zeros(0)) == 0 == terngrad_variance_bound(np.zeros(0))
    with pytest.raises(ValueError, match=r"levels must be a positive integer \(s in QSGD\), got 0"):
        qsgd_variance_bound(np.ones(3), 0)
    with pytest.raises(ValueError, match="levels must be a positive integer"):
        qsgd_variance(np.ones(3), 2.5)
    with pytest.raises(TypeError, match="grad: expected a floating-point array, got dtype int64"):
        terngrad_variance(np.arange(3))
    with pytest.raises(ValueError, match="draws: expected a positive integer number of draws, got 0"):
        measured_variance(make_compressor("qsgd"), np.ones(3), 0)
    with pytest.raises(ValueError, match="'topk' keeps error feedback"):
        measured_variance(make_compressor("topk", ratio=0.5), np.ones(4), 10)
    with pytest.raises(TypeError, match="compressor: expected a Compressor"):
        measured_variance("qsgd", np.ones(3), 10)
    with pytest.raises(ValueError, match=r"checkpoints: expected increasing positive integers, got \[10, 5\]"):
        mean_of_draws(make_compressor("qsgd"), np.ones(3), [10, 5])
    with pytest.raises(ValueError, match="reference vector is zero"):
        mean_of_draws(make_compressor("qsgd"), np.zeros(3), [1])


@pytest.mark.parametrize("name,options", [("terngrad", {}), ("terngrad", {"clip_sigmas": None}),
                                          ("qsgd", {"levels": 16}), ("qsgd", {"levels": 1})])
def test_quantiser_error_measured_against_g_matches_exact_and_stays_below_bound(name, options):
    g = (np.random.default_rng(0).standard_normal((16, 40)) * 0.01).astype(np.float32)
    e = quantiser_error(name, g, DRAWS, **options)
    assert abs(e.measured - e.exact) < Z * e.stderr
    assert e.measured <= e.bound and e.one_draw <= e.bound
    # the first draw is the one a fresh seed-0 compressor's compress() shows
    first = make_compressor(name, **options).compress(g).decode().astype(np.float64)
    assert e.one_draw == pytest.approx(np.sum((first - g) ** 2) / np.sum(g.astype(np.float64) ** 2), rel=1e-12)
    assert (e.bias > 0) == (name == "terngrad" and options.get("clip_sigmas", 1) is not None)


def test_quantiser_error_bad_input():
    with pytest.raises(ValueError, match="name: expected 'terngrad' or 'qsgd'.*got 'topk'"):
        quantiser_error("topk", np.ones(3, np.float32), 10)
    with pytest.raises(ValueError, match="g: expected a non-zero gradient"):
        quantiser_error("qsgd", np.zeros(3, np.float32), 10)


def test_mean_distance_predicts_the_mean_of_many_messages_including_the_clipping_bias():
    g = np.float32([30.0] + [1.0, -1.0] * 200)
    for options in ({}, {"clip_sigmas": None}):
        e = quantiser_error("terngrad", g, 200, **options)
        dist = mean_of_draws(make_compressor("terngrad", seed=1, **options), g, [1, 30, 3000])
        for n, d in dist.items():
            assert 0.8 * e.mean_distance(n) < d < 1.2 * e.mean_distance(n), (options, n, d, e.mean_distance(n))
    assert e.mean_distance(10**9) < 1e-3  # unbiased: to zero
    clipped = quantiser_error("terngrad", g, 10)
    assert clipped.mean_distance(10**9) == pytest.approx(math.sqrt(clipped.bias), rel=1e-6) and clipped.bias > 0.4
