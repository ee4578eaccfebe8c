"""scaledl.nn.scaling: power-law fits recover known laws, inverses, growth arithmetic, the widget view."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaledl.nn import teacher_student
from scaledl.nn.scaling import (PowerLaw, Recipe, compute_factor, fit_power_law, geometric_sizes, learning_curve,
                                model_exponent, requirements, train_error)
from scaledl.nn.views import requirements_view


@settings(max_examples=25, deadline=None)
@given(a=st.floats(0.5, 20), b=st.floats(-0.9, -0.1), c=st.floats(0.0, 0.05))
def test_fit_recovers_an_exact_power_law(a, b, c):
    m = np.geomspace(10, 1e6, 15)
    law = fit_power_law(m, a * m ** b + c)
    # Noise-free data: the optimiser stops at its own tolerance, far inside these bounds.
    assert law.b == pytest.approx(b, abs=1e-3)
    assert law.c == pytest.approx(c, abs=1e-4 + 1e-3 * (a * 1e6 ** b))
    assert law.b_err < 1e-2


def test_fit_uncertainty_covers_the_truth_under_noise():
    rng = np.random.default_rng(0)
    m = np.repeat(np.geomspace(30, 3e5, 12), 3)
    err = (3.0 * m ** -0.4 + 0.02) * np.exp(rng.normal(0, 0.05, m.size))  # 5 % multiplicative noise
    law = fit_power_law(m, err)
    assert abs(law.b + 0.4) < 4 * law.b_err and law.b_err < 0.1
    assert abs(law.c - 0.02) < 4 * law.c_err + 1e-3
    line = fit_power_law(m[m < 3000], err[m < 3000], irreducible=False)
    assert line.c == 0 and line.b_err > 0


def test_data_for_error_inverts_predict():
    law = PowerLaw(a=5.0, b=-0.35, c=0.03)
    for m in (10.0, 1234.0, 1e7):
        assert law.data_for_error(float(law.predict(m))) == pytest.approx(m, rel=1e-9)
    with pytest.raises(ValueError, match=r"target: 0.02 is not above the irreducible error c = 0.03"):
        law.data_for_error(0.02)


def test_growth_arithmetic():
    assert compute_factor(256, 64) == 16384 == 2 ** 14
    assert compute_factor(256, 64, epochs_factor=2) == 32768 == 2 ** 15
    assert model_exponent(256, 64) == pytest.approx(0.75)
    r = requirements(PowerLaw(1.0, -0.5), target_error=0.01, n_now=100, beta=0.5)
    assert r.data == pytest.approx(10_000) and r.data_factor == pytest.approx(100)
    assert r.model_factor == pytest.approx(10) and r.compute_factor == pytest.approx(1000)
    with pytest.raises(ValueError, match=r"data_factor: expected a positive factor, got 0"):
        compute_factor(0, 2)
    with pytest.raises(ValueError, match=r"expected data_factor > 1"):
        model_exponent(1, 2)


def test_fit_errors():
    with pytest.raises(ValueError, match=r"m has shape \(3,\) but err has shape \(2,\)"):
        fit_power_law([1, 2, 3], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"need at least 4 points"):
        fit_power_law([1, 2, 3], [0.3, 0.2, 0.1])


def test_geometric_sizes():
    assert geometric_sizes(4, 64).tolist() == [4, 8, 16, 32, 64]
    assert geometric_sizes(10, 40, per_octave=2).tolist() == [10, 14, 20, 28, 40]
    with pytest.raises(ValueError, match=r"expected 1 <= lo < hi, got lo=8, hi=8"):
        geometric_sizes(8, 8)


def test_recipe_and_a_tiny_learning_curve():
    r = Recipe()
    assert r.batch_and_steps(16) == (8, 400) and r.batch_and_steps(100_000) == (256, 4000)
    d = teacher_student(64, 500, noise=0.0)
    fast = Recipe(min_steps=60, max_steps=60)
    curve = learning_curve(d, [8, 64], seeds=(0, 1), hidden=(16,), recipe=fast)
    assert curve.shape == (2, 2) and np.all((0 <= curve) & (curve <= 1))
    assert curve[:, 1].mean() < curve[:, 0].mean()  # 8x the data helps
    assert train_error(d, 64, hidden=(16,), recipe=fast) == curve[0, 1]  # deterministic
    with pytest.raises(ValueError, match=r"n: expected an integer in \[1, 64\], got 65"):
        train_error(d, 65)


def test_requirements_view_draws_and_reports_unreachable_targets():
    import matplotlib

    matplotlib.use("Agg")
    law = PowerLaw(2.0, -0.4, 0.01)
    fig = requirements_view(0.03, 0.75, law=law, n_now=1000, measured=([100, 1000], [0.3, 0.1]))
    assert "compute x" in fig.axes[0].get_title()
    fig = requirements_view(0.005, 0.75, law=law, n_now=1000)
    assert "not above the irreducible error" in fig.axes[0].get_title()


def test_holdout_scores_prefer_the_window_past_a_shoulder():
    from scaledl.nn.scaling import holdout_scores

    rng = np.random.default_rng(1)
    sizes = np.geomspace(16, 2**15, 12)
    law = 2.0 * sizes ** -0.4 + 0.1
    shoulder = np.where(sizes < 300, 0.55, law)  # flat region the power law does not describe
    errs = shoulder * np.exp(rng.normal(0, 0.01, (2, sizes.size)))
    scores = holdout_scores(sizes, errs, [16, 64, 512])
    assert [s for s, _, _ in scores] == [16, 64, 512]
    best = min(scores, key=lambda t: t[2])
    assert best[0] == 512 and abs(best[1].c - 0.1) < 0.02
    with pytest.raises(ValueError, match="start=4000 leaves 2 sizes to fit before the held-out ones"):
        holdout_scores(sizes, errs, [4000])
    with pytest.raises(ValueError, match=r"holdout=0: expected an integer in \[1, 11\]"):
        holdout_scores(sizes, errs, [16], holdout=0)
    with pytest.raises(ValueError, match=r"errs has shape \(2, 11\): expected \(seeds, 12\)"):
        holdout_scores(sizes, errs[:, 1:], [16])


def test_train_error_takes_a_model_factory():
    data = teacher_student(64, 64, n_features=4, n_classes=3, teacher_hidden=8, noise=0.0, seed=0)
    from scaledl.nn import mlp

    same = train_error(data, 64, hidden=(8,), seed=0, recipe=Recipe(min_steps=20, max_steps=20))
    via = train_error(data, 64, seed=0, recipe=Recipe(min_steps=20, max_steps=20),
                      make_model=lambda s: mlp([4, 8, 3], seed=s))
    assert via == same  # the factory gets the run's seed, so the two runs are the same run
    with pytest.raises(TypeError, match="make_model: expected a callable taking a seed, got 3"):
        train_error(data, 64, make_model=3)
