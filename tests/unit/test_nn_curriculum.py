"""The resolution curriculum: pooling, exact-up-to-rounding growth, FLOP counting, and a run's bookkeeping."""

import numpy as np
import pytest

from scaledl.nn import curriculum as cu
from scaledl.nn import digits
from scaledl.nn.model import mlp


def test_pooling_matches_its_matrix():
    x = np.random.default_rng(0).random((5, 64)).astype(np.float32)
    np.testing.assert_allclose(cu.pool2(x), x @ cu.pooling_matrix(), rtol=4 * np.finfo(np.float32).eps)
    with pytest.raises(ValueError, match="x must have shape \\(n, 64\\)"):
        cu.pool2(x[:, :10])


def test_grown_network_computes_what_the_small_one_did():
    x = digits().x_test[:50]
    small = mlp([16, 32, 10], seed=3)
    big = cu.grow(small, [32])
    # same function; only the order of the first layer's additions differs (64 terms instead of 16)
    np.testing.assert_allclose(big.predict(x), small.predict(cu.pool2(x)), atol=1e-5)


def test_run_counts_flops_and_switch():
    d = digits().subset(200)
    r = cu.run(d, low_steps=10, high_steps=10, hidden=8, eval_every=5)
    step4, step8 = cu.training_flops([16, 8, 10], 32), cu.training_flops([64, 8, 10], 32)
    assert r.switch_flops == 10 * step4 and r.flops[-1] == 10 * step4 + 10 * step8
    assert len(r.flops) == len(r.accuracy) and r.flops_to(2.0) is None and r.flops_to(0.0) == 0.0
    with pytest.raises(ValueError, match="low_steps must be an integer >= 0, got -1"):
        cu.run(d, low_steps=-1, high_steps=1)
