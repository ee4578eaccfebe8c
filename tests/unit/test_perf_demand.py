"""Compute demand: conversions, the seeds' figures side by side, growth rates, the CPU and AlexNet checks."""

import math

import matplotlib
import pytest

matplotlib.use("Agg")

from scaledl.perf import demand as D  # noqa: E402
from scaledl.perf import views as PV

EPS = 2.220446049250313e-16


def test_conversions():
    assert D.pf_days_to_flop(1) == 8.64e19
    assert D.exaflop_to_pf_days(100) == pytest.approx(100e18 / 8.64e19, rel=4 * EPS)
    assert D.flop_to_pf_days(D.pf_days_to_flop(0.01)) == pytest.approx(0.01, rel=4 * EPS)


def test_seeds_disagree_and_are_kept_apart():
    by = {(m.seed, m.model): m for m in D.LANDMARKS}
    assert by["000", "ResNet"].flop == 7e18 and by["003", "ResNet"].flop == 20e18
    assert by["000", "Deep Speech 2"].flop == 20e18 and by["003", "Deep Speech 2"].flop == 100e18
    assert by["000", "GNMT"].flop == by["003", "GNMT"].flop == 100e18
    # seed 002's ResNet (~1 PF-day = 86.4 EF) is 12x seed 000's and 4.3x seed 003's
    assert by["002", "ResNet"].flop / by["000", "ResNet"].flop == pytest.approx(86.4 / 7)
    assert by["002", "GPT-4"].pf_days / by["002", "AlexNet"].pf_days == pytest.approx(1e8)
    assert by["003", "ResNet"].params_M == 300


def test_growth():
    assert D.growth_per_year(1e8, 11) == pytest.approx(10 ** (8 / 11), rel=8 * EPS)  # 5.34x a year
    assert D.doubling_time_months(1e8, 11) == pytest.approx(4.97, abs=0.005)
    assert D.doubling_time_months(2, 1) == pytest.approx(12, rel=8 * EPS)
    with pytest.raises(ValueError, match="ratio and years must be > 0"):
        D.growth_per_year(1e8, 0)


def test_two_years_on_a_dual_cpu_server():
    # 3.1 TFLOP/s; a few roundings of float64 apart from the hand product
    assert D.DUAL_XEON_E5_2699V4.peak_FLOPS == pytest.approx(2 * 22 * 2.2e9 * 32, rel=8 * EPS)
    rate = D.implied_rate_FLOPS(100e18, 2 * D.SECONDS_PER_YEAR)
    assert rate == pytest.approx(1.5844e12, rel=1e-4)
    assert rate / D.DUAL_XEON_E5_2699V4.peak_FLOPS == pytest.approx(0.5115, abs=1e-4)


def test_2012_cpu_server():
    assert D.DUAL_XEON_E5_2690.peak_FLOPS == pytest.approx(2 * 8 * 2.9e9 * 16, rel=8 * EPS)  # 0.742 TFLOP/s


def test_alexnet_bottom_up():
    flop = D.training_flop(2 * D.ALEXNET_FORWARD_MACS, D.IMAGENET_TRAIN_IMAGES, D.ALEXNET_EPOCHS)
    assert flop == pytest.approx(1.44e9 * 3 * 1_281_167 * 90, rel=8 * EPS)
    assert D.flop_to_pf_days(flop) == pytest.approx(0.00577, abs=1e-5)  # seed 002's 1e-2 is an upper round figure


def test_two_week_budget_and_figure():
    # 8 x H100 bf16 989.5 TFLOP/s x 40 % x 14 days
    assert D.two_week_budget_pf_days("H100 SXM") == pytest.approx(8 * 989.5e12 * 0.4 * 14 / 1e15, rel=8 * EPS)
    budgets = [D.two_week_budget_pf_days(d) for _, d in D.TWO_WEEK_SERVERS]
    assert budgets == sorted(budgets)  # each newer training GPU does more (K80, a two-GPU board, is left out)
    fig = PV.demand_figure()
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "petaflop/s-days" in ax.get_ylabel()
    assert len(ax.collections) == 4  # one scatter per source document, one for the outside estimate
    matplotlib.pyplot.close(fig)
    assert math.isclose(D.Landmark("x", 2020, 8.64e19, "000").pf_days, 1.0)


def test_gpt4_estimate_against_the_lecture():
    # Epoch AI's 2.1e25 FLOP is 2.4e5 PF-days, about a quarter of the lecture's 1e6
    assert D.GPT4_EPOCH_AI.pf_days == pytest.approx(2.1e25 / 8.64e19, rel=4 * EPS)
    assert round(D.GPT4_EPOCH_AI.pf_days, -4) == 240_000
    gpt4_002 = next(m for m in D.SEED_002 if m.model == "GPT-4")
    assert gpt4_002.flop / D.GPT4_EPOCH_AI.flop == pytest.approx(4.11, abs=0.01)
    # with the bottom-up AlexNet count the growth is ~4e7, not 1e8
    alexnet = D.training_flop(2 * D.ALEXNET_FORWARD_MACS, D.IMAGENET_TRAIN_IMAGES, D.ALEXNET_EPOCHS)
    assert D.GPT4_EPOCH_AI.flop / alexnet == pytest.approx(4.2e7, rel=0.01)


def test_seed_003_is_seed_000_shifted_by_one_row():
    shifted = D.seed_003_shifted_rows()
    assert shifted == [("ResNet", 20e18, "Deep Speech 2"), ("Deep Speech 2", 100e18, "GNMT")]
    # and its parameter counts are far above the papers' counts whichever row they belong to
    assert 300 / D.PAPER_PARAMS_M["ResNet-152"][1] > 4.9
    assert 300 / D.PAPER_PARAMS_M["Deep Speech 2"][1] == 3


def test_when_one_server_stops_being_enough():
    assert D.server_budget_pf_days(2016) == D.two_week_budget_pf_days("P100 SXM2")
    assert D.server_budget_pf_days(2019, days=28) == pytest.approx(2 * D.two_week_budget_pf_days("V100 SXM2"))
    first = D.first_beyond_one_server(14)
    assert (first.model, first.year, first.seed) == ("Deep Speech 2", 2016, "003")  # 1.16 > 0.95 PF-days
    month = D.first_beyond_one_server(30)
    assert (month.model, month.year) == ("GPT-4", 2023)
    with pytest.raises(ValueError, match="year=2011: expected 2012 or later"):
        D.server_budget_pf_days(2011)
