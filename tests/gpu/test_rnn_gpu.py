"""The persistent grid RNN kernel at Seed 001's size on a real GPU, many blocks synchronised by a grid barrier
(skipped on the simulator by tests/gpu/conftest.py; the simulator can only run a grid of one block)."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
EPS32 = float(np.finfo(np.float32).eps)


@pytest.mark.parametrize("variant", ["standard", "persistent_grid"])
@pytest.mark.parametrize("H, B", [(1152, 4), (1001, 3)])
def test_rnn_full_size(variant, H, B):
    from scaledl.kernels.rnn import rnn_forward, rnn_reference

    rng = np.random.default_rng(H)
    W = rng.standard_normal((H, H))
    W *= 0.9 / np.abs(W).sum(axis=1).max()
    U, b = rng.standard_normal((H, 7)), 0.1 * rng.standard_normal(H)
    x, h0 = rng.standard_normal((20, B, 7)), 0.5 * rng.standard_normal((B, H))
    ref = rnn_reference(W, U, b, x, h0)
    got = rnn_forward(W, U, b, x, h0, variant=variant)
    assert not np.any(np.isnan(got))
    prev = np.concatenate((h0[None], ref[:-1]))
    step = (H + 6) * EPS32 * (np.abs(prev) @ np.abs(W).T + np.abs(x @ U.T + b)) + EPS32
    assert np.abs(got - ref).max() <= 10 * step.max()  # see tests/sim/test_rnn_kernels.py for the bound
