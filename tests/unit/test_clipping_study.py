"""Clipping and granularity study: the noise split adds up, OCTAV's clip beats max, finer scales beat coarser."""

import numpy as np
import pytest

from scaledl.numerics import clipping_study as cs
from scaledl.numerics import octav_clip


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


def test_view_reports_accuracy():
    text = cs.view_quantized_mlp(4, "vector", "max")
    assert "test accuracy" in text and "fc1.W" in text
