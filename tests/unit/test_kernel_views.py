"""The chapters' explorer views: they draw, they reject bad input, and the numbers they show are right."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scaledl.kernels.gemm_traffic import fma_share_bound  # noqa: E402
from scaledl.kernels.views import traffic_figure, winograd_error, winograd_tradeoff_figure  # noqa: E402


def test_traffic_figure_bars_match_the_model():
    fig = traffic_figure(n=256, tile=16, block=64, ridge_FLOP_per_byte=20.0)
    bars = [p.get_height() for p in fig.axes[0].patches]
    # naive: 2 n^3 loads + n^2 stores, 4 bytes each
    assert math.isclose(bars[0], 4 * (2 * 256**3 + 256**2) / 1e9)
    assert bars[0] > bars[1] > bars[2]
    plt.close(fig)
    with pytest.raises(ValueError, match="tile=0"):
        traffic_figure(tile=0)


def test_winograd_error_ordering_and_errors():
    e32 = [winograd_error(m, "float32") for m in (0, 2, 4)]
    assert e32[0] < 1e-5 and e32[1] < e32[2] < 1e-3
    assert winograd_error(2, "float16") > 100 * e32[1]  # 2^-11 vs 2^-24 unit roundoff
    with pytest.raises(ValueError, match="dtype_name='int8'"):
        winograd_error(2, "int8")
    fig = winograd_tradeoff_figure("float16", channels=2, max_m=6)
    assert len(fig.axes) == 2
    plt.close(fig)


def test_winograd_error_f6_overflows_only_with_integer_scaling():
    # F(6x6)'s integer-scaled B^T reaches 160: B^T d B of standard-normal data passes float16's 65504
    assert winograd_error(6, "float16", scaling="integer") == float("inf")
    fractional = winograd_error(6, "float16", scaling="fractional")
    assert 1e-3 < fractional < 1e-1  # finite, a few percent (unit roundoff 2^-11 times the transforms' growth)
    # constants left in the data transform (no rescaling) are rounded per tile: worse than in G
    assert winograd_error(4, "float16", scaling="none") > winograd_error(4, "float16", scaling="fractional")


def test_fma_share_bound_table():
    assert math.isclose(fma_share_bound("naive"), 1 / 3)
    assert math.isclose(fma_share_bound("tiled", tile=16), 16 / 52)
    # 128x128x8 with 8x8 per thread: 512 FMAs, 128 shared loads, 8 global loads + 8 shared stores
    assert math.isclose(fma_share_bound("regblock", block_m=128, block_n=128, block_k=8, thread_m=8,
                                        thread_n=8), 512 / 656)


def test_launch_figure_curves_and_errors():
    from scaledl.kernels.occupancy import launch_waves
    from scaledl.kernels.views import launch_figure

    fig = launch_figure(n=512, block=128, registers_per_thread=128, per_thread=8)
    busy, kept = fig.axes[0].lines[0], fig.axes[0].lines[1]
    x, y = busy.get_data()
    i = list(x).index(4096)  # 4096 is on the grid of sizes: 1024 blocks in 2-per-SM slots
    assert math.isclose(y[i], 100 * launch_waves(4096, 4096, 128, 128, 2).sm_utilisation)
    assert max(kept.get_data()[1]) <= 100
    assert "16 blocks" in fig.axes[0].get_title()  # 512^2 / 128^2
    plt.close(fig)
    with pytest.raises(ValueError, match="block=100"):
        launch_figure(block=100, per_thread=8)
    assert "at most 1024" in launch_figure(block=256, per_thread=2)  # 16384 threads: a sentence, not a plot
    assert "cannot run" in launch_figure(block=256, registers_per_thread=255, per_thread=8)  # 1024 x 255
