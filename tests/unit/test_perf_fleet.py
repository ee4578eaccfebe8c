"""The automotive fleet example: the seed's two tables recomputed exactly, and their inconsistencies pinned."""

import pytest

from scaledl.perf import fleet as F

EPS = 2.220446049250313e-16


def test_datasets_exact():
    assert F.VERY_CONSERVATIVE.raw_TB == 208_000  # 100 cars x 1 TB/h x 8 h x 260 days
    assert F.CONSERVATIVE.raw_TB == 609_375  # 125 x 1.5 x 10 x 325
    assert F.VERY_CONSERVATIVE.dataset_TB == 104.0
    assert F.CONSERVATIVE.dataset_TB == 487.5
    assert F.CONSERVATIVE.dataset_TB / F.VERY_CONSERVATIVE.dataset_TB == 4.6875


@pytest.mark.parametrize("network, base, cells", [
    # recomputed (years on one Pascal GPU, days on one DGX-1V, days on ten), very conservative then conservative
    ("InceptionV3", 9.1, [(9.1, 166.075, 16.6075), (42.65625, 778.4765625, 77.84765625)]),
    ("AlexNet", 1.1, [(1.1, 20.075, 2.0075), (5.15625, 94.1015625, 9.41015625)]),
])
def test_recomputed_table(network, base, cells):
    for scenario, expected in zip(F.SCENARIOS, cells):
        r = F.recompute(network, base, scenario)
        got = (r.pascal_gpu_years, r.dgx1v_days, r.dgx1v_x_nodes_days)
        assert got == pytest.approx(expected, rel=8 * EPS)


def test_alexnet_5_4_years_is_not_1_1_scaled():
    # the slide prints 5.4; 1.1 x 4.6875 = 5.16. 5.4 needs base >= 5.4 / 4.6875 = 1.152 years
    assert F.recompute("AlexNet", 1.1, F.CONSERVATIVE).pascal_gpu_years == pytest.approx(5.15625)
    assert 5.4 / 4.6875 == pytest.approx(1.152)


def test_implied_speedups():
    assert F.implied_speedup(9.1, 166) == pytest.approx(20.009, abs=1e-3)
    assert F.implied_speedup(42.6, 778) == pytest.approx(19.986, abs=1e-3)
    assert F.implied_speedup(1.1, 21) == pytest.approx(19.119, abs=1e-3)  # the odd one out
    assert F.implied_speedup(5.4, 98) == pytest.approx(20.112, abs=1e-3)
    assert F.TB_per_gpu_day(104, 9.1) == pytest.approx(104 / 3321.5, rel=8 * EPS)


def test_display_intervals():
    assert F.display_interval(5.4, 1, "round") == pytest.approx((5.35, 5.45))
    assert F.display_interval(5.4, 1, "truncate") == pytest.approx((5.4, 5.5))
    assert F.display_interval(16, 0, "truncate") == (16, 17)
    with pytest.raises(ValueError, match="mode='ceil' must be 'round' or 'truncate'"):
        F.display_interval(1, 0, "ceil")


def test_truncation_explains_every_cell_rounding_does_not():
    lo, hi = F.consistent_base_years("InceptionV3", "truncate")
    assert (lo, hi) == pytest.approx((9.1, 17 / (4.6875 * 365 / 20) * 0 + 779 / (4.6875 * 365 / 20)), rel=1e-12)
    lo, hi = F.consistent_base_years("AlexNet", "truncate")
    assert (lo, hi) == pytest.approx((5.4 / 4.6875, 99 / (4.6875 * 365 / 20)), rel=1e-12)  # [1.152, 1.1573)
    # rounding to nearest: 16 days needs base < 9.041 y, 42.6 years needs base >= 9.077 y
    assert F.consistent_base_years("InceptionV3", "round") is None
    assert F.consistent_base_years("AlexNet", "round") == pytest.approx((5.35 / 4.6875, 1.15), rel=1e-12)
    # 365.25-day years break the InceptionV3 row: 9.1 x 4.6875 x 365.25 / 20 = 779.0, printed 778
    assert F.consistent_base_years("InceptionV3", "truncate", days_per_year=365.25) is None
    with pytest.raises(ValueError, match="network='ResNet' is not in the table"):
        F.consistent_base_years("ResNet", "round")


def test_speedup_range():
    lo, hi = F.speedup_range("truncate")
    assert 19.98 < lo <= 20.0 <= hi < 20.04
    assert F.speedup_range("round") is None


def test_books_and_errors():
    assert F.bytes_per_book() == pytest.approx(166_666.667, abs=1e-3)
    with pytest.raises(ValueError, match="base_years, speedup, days_per_year must be > 0"):
        F.recompute("AlexNet", -1, F.CONSERVATIVE)
    with pytest.raises(ValueError, match="scenario='typical' is not one of"):
        F._scenario("typical")


def test_cells_to_blame():
    # with 365.25-day years truncation no longer reproduces InceptionV3: either of two cells is to blame
    blamed = F.cells_to_blame("InceptionV3", "truncate", days_per_year=365.25)
    assert [(c.scenario, c.system, c.value) for (c,) in blamed] == [
        ("very conservative", "1 Pascal GPU", 9.1), ("conservative", "1 DGX-1V", 778)]
    # rounding to nearest with 365-day years: no single cell, but the two "10 DGX-1V" cells together
    assert F.cells_to_blame("InceptionV3", "round") == []
    pairs = F.cells_to_blame("InceptionV3", "round", k=2)
    assert [tuple(c.value for c in t) for t in pairs] == [(16, 77)]
    assert F.cells_to_blame("AlexNet", "truncate") == []  # consistent: nothing to blame
    with pytest.raises(ValueError, match="k=0: expected a positive number of cells"):
        F.cells_to_blame("AlexNet", "round", k=0)
