"""scaledl.nn noise scale, stale-gradient (asynchronous) training and the linear scaling rule."""

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest

from scaledl.nn import SGD, mlp, teacher_student, train
from scaledl.nn.large_batch import gradual_warmup, linear_scaling_rule, scaled_lr
from scaledl.nn.noise_scale import measure_noise_scale, noise_scale
from scaledl.nn.stale import StaleGradients, train_stale


class MeanOfRows:
    """A stand-in model whose per-sample gradient is its input row: the batch gradient is their mean."""

    def loss_and_gradients(self, x, y):
        return 0.0, {"w": x.mean(axis=0)}


def test_noise_scale_estimators_are_exact_on_the_expectations_of_a_finite_population():
    per_sample = np.array([[3.0, 1.0], [-1.0, 2.0], [1.0, 0.0], [1.0, -3.0]])
    G = per_sample.mean(axis=0)
    trace = ((per_sample - G) ** 2).sum(axis=1).mean()  # tr(Sigma) of the population (1/m: sampling with
    #                                                     replacement draws from exactly this distribution)
    sq = {}
    for b in (1, 3):  # every ordered batch with replacement is equally likely: their mean IS the expectation
        batches = itertools.product(range(4), repeat=b)
        sq[b] = np.mean([np.sum(per_sample[list(i)].mean(axis=0) ** 2) for i in batches])
    est = noise_scale(sq[1], sq[3], 1, 3)
    assert est.g_sq == pytest.approx(G @ G, rel=1e-13) and est.trace_sigma == pytest.approx(trace, rel=1e-13)
    assert est.b_simple == pytest.approx(trace / (G @ G), rel=1e-12)
    assert (G @ G, trace) == (1.0, 5.5)  # the case: |G|^2 = 1, tr(Sigma) = 22 / 4, B_simple = 5.5


def test_measured_noise_scale_is_unbiased_within_its_sampling_error():
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((500, 10)) * 2.0 + np.r_[3.0, np.zeros(9)]
    G = rows.mean(axis=0)
    trace = ((rows - G) ** 2).sum(axis=1).mean()
    data = SimpleNamespace(x_train=rows, y_train=np.zeros(500), n_train=500)
    est = measure_noise_scale(MeanOfRows(), data, b_small=2, b_big=16, pairs=4000, seed=1)
    # Spread of these estimates over 20 seeds (measured): 0.9 % for tr(Sigma), 0.55 % for |G|^2, 1.2 % for
    # B_simple. 5 % is at least four standard deviations for each, while a missing 1/B correction (a bias
    # of tr(Sigma)/B_big / |G|^2 ~ 28 % in |G|^2 here) would fail.
    assert est.trace_sigma == pytest.approx(trace, rel=0.05)
    assert est.g_sq == pytest.approx(G @ G, rel=0.05)
    assert est.b_simple == pytest.approx(trace / (G @ G), rel=0.06)


def test_noise_scale_on_the_mlp_runs_and_is_positive():
    data = teacher_student(400, 100, seed=0)
    est = measure_noise_scale(mlp([16, 16, 4], seed=0), data, b_small=4, b_big=64, pairs=8)
    assert est.trace_sigma > 0 and est.g_sq > 0 and 0 < est.b_simple < math.inf


def test_noise_scale_errors():
    with pytest.raises(ValueError, match=r"b_small must be smaller than b_big, got b_small=8, b_big=8"):
        noise_scale(1.0, 1.0, 8, 8)
    with pytest.raises(ValueError, match=r"b_big must be an int >= 1, got 0"):
        noise_scale(1.0, 1.0, 1, 0)
    with pytest.raises(ValueError, match=r"g_big_sq must be finite non-negative"):
        noise_scale(1.0, [1.0, float("nan")], 1, 2)
    with pytest.raises(ValueError, match=r"pairs must be an int >= 1"):
        measure_noise_scale(None, None, b_small=1, b_big=2, pairs=0)
    assert noise_scale(2.0, 0.5, 1, 2).b_simple == math.inf  # |G|^2 estimate <= 0: no finite noise scale


def test_staleness_zero_is_synchronous_sgd_bitwise():
    data = teacher_student(300, 100, seed=0)
    a, b = mlp([16, 16, 4], seed=2), mlp([16, 16, 4], seed=2)
    train(a, data, steps=20, batch_size=30)
    train_stale(b, data, staleness=0, steps=20, batch_size=30)
    assert all(np.array_equal(w, b.parameters()[k]) for k, w in a.parameters().items())


def test_stale_updates_use_the_gradient_at_old_weights():
    data = teacher_student(300, 100, seed=0)
    tau, steps = 3, 8
    model = mlp([16, 8, 4], seed=1)
    snapshots = []
    train_stale(model, data, staleness=tau, steps=steps, batch_size=30, optimizer=SGD(lr=0.1, momentum=0.0),
                callback=lambda s, m, h: snapshots.append({k: v.copy() for k, v in m.parameters().items()}))
    # replay: w_{t+1} = w_t - lr g_{max(t - tau, 0)}(w_{max(t - tau, 0)}) on the same batches
    replay = mlp([16, 8, 4], seed=1)
    order = np.random.default_rng(0).permutation(data.n_train)
    weights = [{k: v.copy() for k, v in replay.parameters().items()}]
    for t in range(steps):
        s = max(t - tau, 0)
        replay.load_parameters(weights[s])
        idx = order[s * 30:(s + 1) * 30]
        _, g = replay.loss_and_gradients(data.x_train[idx], data.y_train[idx])
        weights.append({k: w - np.float32(0.1) * g[k] for k, w in weights[t].items()})
        for k in g:
            np.testing.assert_allclose(snapshots[t][k], weights[t + 1][k], rtol=0, atol=1e-6)


def test_large_staleness_hurts_at_a_large_learning_rate():
    data = teacher_student(600, 200, seed=0)
    final = {}
    for tau in (0, 16):
        h = train_stale(mlp([16, 32, 4], seed=0), data, staleness=tau, steps=150, batch_size=32,
                        optimizer=SGD(lr=0.5, momentum=0.0))
        final[tau] = np.mean(h.step_loss[-20:])
    assert final[16] > 3 * final[0]  # measured: 1.49 vs 0.136 (test accuracy 0.58 vs 0.86)


def test_stale_errors():
    with pytest.raises(ValueError, match=r"staleness must be a non-negative integer number of steps, got -1"):
        StaleGradients(-1)
    with pytest.raises(ValueError, match=r"grad_transform: train_stale sets its own"):
        train_stale(None, None, staleness=1, grad_transform=lambda g: g)


def test_linear_scaling_rule():
    assert scaled_lr(0.1, 8192) == pytest.approx(3.2)  # Goyal et al.: 0.1 x 8192 / 256
    lr, f = linear_scaling_rule(0.1, 8192, warmup_steps=100)
    assert lr * f(0) == pytest.approx(0.1) and lr * f(50) == pytest.approx(0.1 + 3.1 / 2)
    assert f(100) == 1.0 and f(10**6) == 1.0
    assert gradual_warmup(0.5, 10)(0) == 1.0  # a smaller batch: nothing to warm up
    g = gradual_warmup(4, 2, then=lambda s: 0.1 ** (s // 10))
    assert [g(s) for s in (0, 1, 2, 11, 12)] == [0.25, 0.625, 1.0, 1.0, 0.1]
    with pytest.raises(ValueError, match=r"batch_size must be a positive integer, got 0"):
        scaled_lr(0.1, 0)
    with pytest.raises(ValueError, match=r"base_lr must be a positive finite learning rate, got -1"):
        scaled_lr(-1, 256)
    with pytest.raises(ValueError, match=r"steps must be a non-negative integer"):
        gradual_warmup(2, -1)
