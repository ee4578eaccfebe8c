"""The RNN kernels (standard, persistent block, persistent grid) against the float64 NumPy reference on the
simulator, at odd sizes (hidden, batch and the product not multiples of the 16-thread block), outputs
poisoned with NaN by the launcher before every launch."""

import numpy as np
import pytest

from scaledl.kernels.rnn import VARIANTS, rnn_forward, rnn_reference

pytestmark = pytest.mark.sim
EPS32 = float(np.finfo(np.float32).eps)


def problem(H, B, I, T, seed):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((H, H))
    W *= 0.9 / np.abs(W).sum(axis=1).max()  # every row's |W| sums to <= 0.9: the recurrence contracts errors
    return (W, rng.standard_normal((H, I)), 0.1 * rng.standard_normal(H), rng.standard_normal((T, B, I)),
            0.5 * rng.standard_normal((B, H)))


def error_bound(W, U, b, x, h0, ref):
    """Forward-error bound of the float32 recurrence (tanh and relu are 1-Lipschitz).

    Each step adds at most (H + 2) eps32 (sum_k |W_jk| |h_k| + |z_j|) from the float32 dot product (H terms
    onto z) and the rounding of z, W and h to float32 (a few eps more), plus 1 eps of rounding the output;
    errors from earlier steps shrink by the row-sum norm of W, 0.9, so the total is below 1 / (1 - 0.9) = 10
    times the largest per-step term.
    """
    H = W.shape[0]
    prev = np.concatenate((h0[None], ref[:-1]))
    z = np.abs(x @ U.T + b)
    step = (H + 6) * EPS32 * (np.abs(prev) @ np.abs(W).T + z) + EPS32
    return 10 * step.max()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("H, B, I, T", [(13, 3, 5, 6), (7, 1, 2, 3), (21, 2, 3, 4)])
def test_kernel_matches_reference(variant, activation, H, B, I, T):
    W, U, b, x, h0 = problem(H, B, I, T, seed=H * 100 + B)
    ref = rnn_reference(W, U, b, x, h0, activation)
    got = rnn_forward(W, U, b, x, h0, activation, variant)
    assert got.shape == (T, B, H) and got.dtype == np.float32
    assert not np.any(np.isnan(got)), "a state was never written (the output was poisoned with NaN)"
    err = np.abs(got - ref).max()
    assert err <= error_bound(W, U, b, x, h0, ref), err


def test_variants_agree_bit_for_bit_on_the_simulator():
    # every variant adds z then W[j, 0] h_0, W[j, 1] h_1, ... in the same order, and the simulator's float32
    # arithmetic contracts nothing into FMAs, so the bits must agree (on a GPU they may differ by FMA rounding)
    W, U, b, x, h0 = problem(11, 3, 4, 5, seed=1)
    outs = [rnn_forward(W, U, b, x, h0, "tanh", v) for v in VARIANTS]
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


def test_reference_is_the_textbook_recurrence():
    W, U, b, x, h0 = problem(4, 2, 3, 2, seed=3)
    ref = rnn_reference(W, U, b, x, h0, "relu")
    h1 = np.maximum(W @ h0[1] + U @ x[0, 1] + b, 0)  # sample 1, column-vector form
    np.testing.assert_allclose(ref[1, 1], np.maximum(W @ h1 + U @ x[1, 1] + b, 0), rtol=1e-14)


def test_errors():
    W, U, b, x, h0 = problem(5, 2, 3, 2, seed=0)
    with pytest.raises(ValueError, match="variant='cudnn' is not an RNN variant"):
        rnn_forward(W, U, b, x, h0, variant="cudnn")
    with pytest.raises(ValueError, match="activation='sigmoid'"):
        rnn_forward(W, U, b, x, h0, activation="sigmoid")
    with pytest.raises(ValueError, match=r"W must be square \(hidden, hidden\), got shape \(5, 4\)"):
        rnn_forward(W[:, :4], U, b, x, h0)
    with pytest.raises(ValueError, match=r"h0 must have shape \(2, 5\) for hidden=5, batch=2, inputs=3, got"):
        rnn_forward(W, U, b, x, h0[:1])
    with pytest.raises(ValueError, match=r"x must have shape \(steps, batch, inputs\)"):
        rnn_forward(W, U, b, x[0], h0)
    big = problem(111, 1, 1, 1, seed=0)  # 111^2 x 4 B > 48 KiB
    with pytest.raises(ValueError, match="hidden=111: W takes 49284 bytes, more than one block's 49152"):
        rnn_forward(*big, variant="persistent_block")
    grid = problem(200, 1, 1, 1, seed=0)  # 61 rows per block: 4 blocks
    with pytest.raises(RuntimeError, match="hidden=200 needs 4 blocks of 61 rows, but Numba's simulator"):
        rnn_forward(*grid, variant="persistent_grid")


@pytest.mark.parametrize("variant", VARIANTS)
def test_time_per_step_runs_and_checks_its_arguments(variant):
    from scaledl.kernels.rnn import time_per_step_s

    assert time_per_step_s(5, 2, variant, steps=2, repeats=1) > 0
    with pytest.raises(ValueError, match="hidden must be a positive integer, got 0"):
        time_per_step_s(0, 2, variant)
    with pytest.raises(ValueError, match="variant='lstm' is not an RNN variant"):
        time_per_step_s(5, 2, "lstm")
