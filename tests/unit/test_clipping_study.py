"""Clipping and granularity study: the noise split adds up, OCTAV's clip beats max, finer scales beat coarser."""

import numpy as np
import pytest

from scaledl.numerics import clipping_study as cs
from scaledl.numerics import octav_clip
from scaledl.numerics import views as NV


def test_noise_split_adds_up_and_trades_off():
    x = np.random.default_rng(0).standard_normal(20_000)
    clips = np.array([1.0, 2.5, 4.0])
    s = cs.clip_noise_split(x, 4, clips)
    np.testing.assert_allclose(s["clipping"] + s["quantization"], s["total"], rtol=1e-12)
    assert np.all(np.diff(s["clipping"]) < 0) and np.all(np.diff(s["quantization"]) > 0)


def test_octav_clip_minimises_the_model_noise():
    x = np.random.default_rng(1).laplace(size=50_000)
    c, _ = octav_clip(x, 4)
    grid = np.linspace(0.5 * c, 1.5 * c, 41)
    noise = cs.model_noise(x, 4, grid)
    assert abs(grid[np.argmin(noise)] - c) <= (grid[1] - grid[0])  # the fixed point is the minimum


def test_rows_octav_matches_scalar_octav():
    a = np.abs(np.random.default_rng(2).standard_normal((3, 500)))
    rows = cs._octav_rows(a, 4, iters=60)
    for r, c in zip(a, rows):
        assert c == pytest.approx(octav_clip(r, 4, iters=60)[0], rel=1e-6)


def test_equivalent_bits():
    assert cs.equivalent_bits(1.0, 0.25) == 1.0
    with pytest.raises(ValueError, match="MSEs must be > 0"):
        cs.equivalent_bits(0.0, 1.0)


@pytest.mark.parametrize("granularity", cs.GRANULARITIES)
def test_fake_quant_shapes_and_error_order(granularity):
    rng = np.random.default_rng(3)
    W = rng.standard_normal((64, 10)) * np.linspace(0.1, 3, 10)  # columns of very different size
    q = cs.fake_quant(W, bits=4, granularity=granularity, reduce_axis=0)
    assert q.shape == W.shape and np.all(np.isfinite(q))
    e = np.mean((q - W) ** 2)
    e_tensor = np.mean((cs.fake_quant(W, bits=4, granularity="tensor", reduce_axis=0) - W) ** 2)
    assert e <= e_tensor * (1 + 1e-12) or granularity in ("mx", "nvfp4")


def test_fake_quant_unsigned_for_nonnegative_inputs():
    a = np.abs(np.random.default_rng(4).standard_normal((5, 32)))
    q = cs.fake_quant(a, bits=4, granularity="tensor", clipping="max", reduce_axis=1)
    assert len(np.unique(q)) > 8  # 16 unsigned levels in use, not 8


def test_fake_quant_errors():
    with pytest.raises(ValueError, match="granularity must be one of"):
        cs.fake_quant(np.ones((2, 32)), granularity="row")
    with pytest.raises(ValueError, match="clipping must be one of"):
        cs.fake_quant(np.ones((2, 32)), clipping="mse")
    with pytest.raises(ValueError, match="needs a multiple of 32"):
        cs.fake_quant(np.ones((2, 33)), granularity="vector")
    with pytest.raises(ValueError, match=r"bits must be an int in \[2, 16\], got 1"):
        cs.fake_quant(np.ones((2, 32)), bits=1, granularity="tensor")


def test_granularity_gains_against_direct_mse():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((40, 64)) * np.exp(rng.standard_normal((40, 1)))  # rows of different size
    gains = cs.granularity_gains(x, bits=4, reduce_axis=1)
    assert set(gains) == set(cs.SCHEMES)
    x32 = x.astype(np.float32).astype(np.float64)
    for (g, c), (rel, bits) in gains.items():
        q = cs.fake_quant(x, bits=4, granularity=g, clipping=c, reduce_axis=1)
        want = np.mean((q - x32) ** 2) / np.mean(x32 ** 2)
        assert rel == pytest.approx(want, rel=1e-12)  # same float64 arithmetic, summation order aside
        assert bits == pytest.approx(0.5 * np.log2(gains["tensor", "max"][0] / rel), abs=1e-12)
    assert gains["tensor", "max"][1] == 0.0
    assert gains["channel", "max"][1] > 1.0  # per-row scales help most when rows differ in size
    with pytest.raises(ValueError, match="x must have a nonzero entry"):
        cs.granularity_gains(np.zeros((2, 32)))


def test_scheme_labels():
    assert [cs.scheme_label(*s) for s in cs.SCHEMES][-2:] == ["MXFP4", "NVFP4"]
    assert cs.scheme_label("vector", "octav") == "vector / octav"


def test_accuracy_over_seeds_shapes_and_resolution():
    out = cs.accuracy_over_seeds(seeds=[0], bits=(4, 3), schemes=[("tensor", "max"), ("nvfp4", "max")])
    assert set(out) == {"fp32", ("tensor", "max", 4), ("tensor", "max", 3), ("nvfp4", "max", 4)}
    model, data = cs.trained_digits_mlp(0)
    n_test = len(data.y_test)
    for v in out.values():
        assert v.shape == (1,)
        assert abs(v[0] * n_test - round(v[0] * n_test)) < 1e-9  # a whole number of test images
    assert out["tensor", "max", 4][0] == cs.quantized_accuracy(model, data, bits=4, granularity="tensor")
    with pytest.raises(ValueError, match="seeds must name at least one seed"):
        cs.accuracy_over_seeds(seeds=[])


def test_summary_and_view_draw_the_same_numbers():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, data = cs.trained_digits_mlp()
    s = cs.mlp_quantization_summary(model, data, bits=3, granularity="channel", clipping="max")
    assert sorted(s["weight_mse"]) == ["fc1.W", "fc2.W", "fc3.W"]
    W = model.parameters()["fc2.W"].astype(np.float64)
    q = cs.fake_quant(W, bits=3, granularity="channel", clipping="max", reduce_axis=0, signed=True)
    assert s["weight_mse"]["fc2.W"] == pytest.approx(np.mean((q - W) ** 2) / np.mean(W ** 2), rel=1e-12)
    assert s["accuracy"] == cs.quantized_accuracy(model, data, bits=3, granularity="channel", clipping="max")
    fig = NV.view_quantized_mlp(3, "channel", "max")
    ax_mse, ax_acc = fig.axes
    heights = [p.get_height() for p in ax_mse.patches]
    assert heights[3:] == pytest.approx([s["weight_mse"][k] for k in ("fc1.W", "fc2.W", "fc3.W")])
    assert [p.get_height() for p in ax_acc.patches][-1] == pytest.approx(100 * s["accuracy"])
    assert "channel / max" in fig.texts[0].get_text() and "3-bit" in fig.texts[0].get_text()
    plt.close(fig)


@pytest.mark.parametrize("bits, granularity, clipping", [(4, "vector", "octav"), (2, "tensor", "octav"),
                                                          (8, "channel", "max")])
def test_view_legend_covers_no_bar(bits, granularity, clipping):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.transforms import Bbox

    fig = NV.view_quantized_mlp(bits, granularity, clipping)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        for bar in ax.patches:  # the visible part of each bar (on a log axis a bar starts far below the axes)
            visible = Bbox.intersection(bar.get_window_extent(renderer), ax.bbox)
            assert visible is None or not box.overlaps(visible), f"legend covers a bar at {bits} bits"
    plt.close(fig)
