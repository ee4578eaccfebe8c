"""Number-system comparison: exact worst cases against brute force, cost model, k-means codebooks, the view."""

import numpy as np
import pytest

from scaledl.numerics.formats import get_format
from scaledl.numerics.systems import (compare, dynamic_range_binades, error_envelope, kmeans_codebook,
                                      mean_relative_error,
                                      multiplier_cost, relative_error, worst_relative_error)
from scaledl.numerics.views import view_formats


@pytest.mark.parametrize("fmt, lo", [("int8", 1.0), ("e4m3", 2.0**-6), ("lns4.3", None), ("e2m1", 1.0)])
def test_worst_case_matches_a_dense_sweep(fmt, lo):
    spec = get_format(fmt)
    lo_ = spec.min_positive if lo is None else lo
    x = np.geomspace(lo_, spec.max_value, 400_001)
    brute = relative_error(x, fmt).max()
    exact = worst_relative_error(fmt, lo=lo)
    assert brute <= exact + 1e-12 and brute >= exact * (1 - 1e-3)  # a sweep can only approach the supremum


def test_seed_figures():
    assert worst_relative_error("int8", lo=1.0) == pytest.approx(1 / 3, rel=1e-15)  # at 1.5, any bit width
    assert worst_relative_error("int16", lo=1.0) == pytest.approx(1 / 3, rel=1e-15)
    assert worst_relative_error("e4m3", lo=2.0**-6) == pytest.approx(1 / 17, rel=1e-15)  # at 1 + 1/16
    r = 2.0 ** (1 / 8)
    assert worst_relative_error("lns4.3") == pytest.approx((r - 1) / (r + 1), rel=1e-12)
    assert dynamic_range_binades("lns4.3") == 15.75
    assert dynamic_range_binades("e4m3", normal_only=True) == pytest.approx(np.log2(448 * 64))


def test_mean_error_is_below_worst_and_orders_formats():
    assert mean_relative_error("lns4.3") < worst_relative_error("lns4.3")
    assert mean_relative_error("fp16", lo=1, hi=2) < mean_relative_error("e4m3", lo=1, hi=2) < mean_relative_error(
        "e2m1", lo=1, hi=2)


def test_cost_model():
    assert multiplier_cost("int8") == 64 and multiplier_cost("int4") == 16
    assert multiplier_cost("e4m3") == 4**2 + 4 and multiplier_cost("bf16") == 8**2 + 8
    assert multiplier_cost("lns4.3") == 7


def test_kmeans_codebook_beats_a_uniform_grid_of_the_same_size():
    x = np.random.default_rng(0).standard_normal(20_000)
    cb = kmeans_codebook(x, 16)
    assert cb.size == 16 and np.all(np.diff(cb) > 0)
    from scaledl.numerics.quantize import round_to_values
    mse_cb = np.mean((round_to_values(x, cb) - x) ** 2)
    uniform = np.linspace(x.min(), x.max(), 16)
    assert mse_cb < 0.5 * np.mean((round_to_values(x, uniform) - x) ** 2)
    with pytest.raises(ValueError, match="n_values must be an int >= 2, got 1"):
        kmeans_codebook(x, 1)


def test_compare_rows_and_errors():
    rows = compare(["int8", "e4m3"])
    assert [r["format"] for r in rows] == ["int8", "e4m3"] and rows[1]["worst_rel_err_normal"] == pytest.approx(1 / 17)
    with pytest.raises(ValueError, match="x must be nonzero"):
        relative_error([0.0, 1.0], "e4m3")
    with pytest.raises(ValueError, match="need 0 < lo < hi"):
        worst_relative_error("e4m3", lo=2.0, hi=1.0)


def test_view_returns_a_labelled_figure():
    import matplotlib

    matplotlib.use("Agg")
    fig = view_formats("e4m3", "lns4.3")
    axes = fig.get_axes()
    assert axes[1].get_ylabel().startswith("worst relative error (%)") and axes[1].get_xlabel() == "log2 |x|"
    assert len(axes[0].get_legend().get_texts()) == 2
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_error_envelope_is_flat_for_log_and_a_sawtooth_for_floats():
    c, w = error_envelope("lns4.3", 0.01, 100.0)
    r = 2.0 ** (1 / 8)
    assert np.all(w <= (r - 1) / (r + 1) + 1e-12) and w.min() > 0.9 * (r - 1) / (r + 1)  # one midpoint per bin
    c, w = error_envelope("e4m3", 1.0, 4.0)
    # sampled points approach the supremum 1/17 (at 1 + 1/16) from below; the top of a binade is half as bad
    assert 0.99 / 17 <= w.max() <= 1 / 17 and w.min() < 0.6 / 17
    with pytest.raises(ValueError, match="need 0 < lo < hi"):
        error_envelope("e4m3", 0.0, 1.0)


def test_kmeans_codebook_converges_on_heavy_tails():
    # From plain quantiles, Lloyd's iteration left a 256-entry Laplace codebook crowded into the peak (MSE 1.8e-3,
    # worse than INT8). Started from the Panter-Dite spacing it beats INT8 at its best scale, 8 bits each.
    from scaledl.numerics import mse_scale, quantize, round_to_values

    x = np.random.default_rng(4).laplace(size=50_000)
    mse_cb = np.mean((round_to_values(x, kmeans_codebook(x, 256)) - x) ** 2)
    mse_int8 = np.mean((quantize(x, "int8", scale=mse_scale(x, "int8")) - x) ** 2)
    assert mse_cb < 0.7 * mse_int8
