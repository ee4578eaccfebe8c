"""scaledl.nn training: determinism, data-parallel equivalence, the hooks, schedules and error messages."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaledl.nn import (SGD, Precision, cosine, data_parallel_gradients, digits, mlp, step_decay, sum_reducer,
                        teacher_student, train, warmup)


@pytest.fixture(scope="module")
def data():
    return digits()


def small_run(data, **kw):
    model = mlp([64, 32, 10], seed=0)
    kw.setdefault("steps", 30)
    hist = train(model, data, batch_size=kw.pop("batch_size", 32), optimizer=kw.pop("optimizer", SGD(lr=0.05)),
                 **kw)
    return model, hist


def test_same_seed_gives_bitwise_identical_weights(data):
    a, ha = small_run(data, seed=4)
    b, hb = small_run(data, seed=4)
    for k, v in a.parameters().items():
        np.testing.assert_array_equal(v, b.parameters()[k])
    assert ha.step_loss == hb.step_loss
    c, _ = small_run(data, seed=5)
    assert not np.array_equal(a.parameters()["fc1.W"], c.parameters()["fc1.W"])


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_data_parallel_with_exact_sum_matches_one_worker(data, workers):
    one, h1 = small_run(data, seed=1, batch_size=30)
    many, hn = small_run(data, seed=1, batch_size=30, workers=workers)
    # Same arithmetic up to the order of the batch sum: after 30 steps the weights may differ by a few
    # float32 ulps per step; 1e-4 relative is ~1000 ulps (eps 1.2e-7) yet far below one step's change.
    for k, v in one.parameters().items():
        np.testing.assert_allclose(many.parameters()[k], v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hn.step_loss, h1.step_loss, rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 40), workers=st.integers(1, 9), seed=st.integers(0, 10_000))
def test_reduced_gradient_is_the_minibatch_gradient(batch, workers, seed):
    if batch < workers:
        return
    rng = np.random.default_rng(seed)
    model = mlp([5, 6, 3], seed=seed % 7)
    x, y = rng.standard_normal((batch, 5)).astype(np.float32), rng.integers(0, 3, batch)
    loss1, g1 = model.loss_and_gradients(x, y)
    g1 = {k: v.copy() for k, v in g1.items()}
    lossn, gn = data_parallel_gradients(model, x, y, workers)
    assert lossn == pytest.approx(loss1, rel=1e-5)
    for k in g1:  # sums of at most 40 float32 terms, reordered: a few ulps of the largest term
        np.testing.assert_allclose(gn[k], g1[k], rtol=0, atol=40 * 1.2e-7 * (np.abs(g1[k]).max() + 1e-6))


def test_reducer_sees_every_worker_and_can_change_the_result(data):
    seen = []

    def half_sum(worker_grads):
        seen.append(len(worker_grads))
        return {k: v * 0 for k, v in sum_reducer(worker_grads).items()}

    model, _ = small_run(data, steps=3, workers=4, reducer=half_sum)
    assert seen == [4, 4, 4]
    np.testing.assert_array_equal(model.parameters()["fc1.W"], mlp([64, 32, 10], seed=0).parameters()["fc1.W"])


def test_grad_transform_is_applied_before_the_update(data):
    calls = []

    def zero(grads):
        calls.append(sorted(grads))
        return {k: np.zeros_like(v) for k, v in grads.items()}

    model, _ = small_run(data, steps=5, grad_transform=zero)
    assert len(calls) == 5 and calls[0] == ["fc1.W", "fc1.b", "fc2.W", "fc2.b"]
    for k, v in mlp([64, 32, 10], seed=0).parameters().items():
        np.testing.assert_array_equal(model.parameters()[k], v)


def test_masks_hold_pruned_weights_at_zero(data):
    model = mlp([64, 32, 10], seed=0)
    mask = np.random.default_rng(0).random((64, 32)) < 0.1  # keep 10 %
    model.set_masks({"fc1.W": mask})
    hist = train(model, data, steps=40, batch_size=32, optimizer=SGD(lr=0.05, weight_decay=1e-3))
    W = model.parameters()["fc1.W"]
    assert not W[~mask].any() and W[mask].all()
    assert hist.test_accuracy[-1] > 0.5


def test_precision_policies_train_and_loss_scaling_divides_out(data):
    _, h32 = small_run(data, steps=40)
    for policy in ("fp16", "bf16", Precision(lambda a: np.asarray(a, np.float32), "id", loss_scale=1024.0)):
        model, h = small_run(data, steps=40, precision=policy)
        assert abs(h.test_accuracy[-1] - h32.test_accuracy[-1]) < 0.1
    # A power-of-two loss scale with an exact rounding changes nothing (scaling by 2^k is exact).
    _, hs = small_run(data, steps=40, precision=Precision(lambda a: np.asarray(a, np.float32), loss_scale=1024.0))
    assert hs.step_loss == h32.step_loss


def test_overflowing_fp16_steps_are_skipped(data):
    model, h = small_run(data, steps=3, precision=Precision(np.round, "x", loss_scale=1e30))
    assert h.skipped_steps == 0  # np.round keeps 1e30 finite in float32 ...
    model, h = small_run(data, steps=3, precision=as_fp16_scaled(1e30))
    assert h.skipped_steps == 3  # ... while FP16 overflows to inf and the steps are dropped


def as_fp16_scaled(scale):
    from scaledl.nn import as_precision

    return as_precision("fp16", loss_scale=scale)


def test_target_accuracy_stops_early_and_epochs_count(data):
    model = mlp([64, 128, 10], seed=0)
    h = train(model, data, epochs=20, batch_size=32, optimizer=SGD(lr=0.05), target_accuracy=0.95)
    assert h.steps_to_target is not None and h.steps_to_target == h.eval_step[-1] < 20 * 43
    h = train(mlp([64, 8, 10]), data, epochs=2, batch_size=100)
    assert h.steps == 2 * 14 and h.eval_step == [14, 28]


def test_schedules():
    assert [step_decay(10, 0.5)(s) for s in (0, 9, 10, 25)] == [1.0, 1.0, 0.5, 0.25]
    f = warmup(4)
    assert [f(s) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    c = cosine(10)
    assert c(0) == 1.0 and c(10) == pytest.approx(0.0) and c(5) == pytest.approx(0.5)
    opt = SGD(lr=0.2, schedule=warmup(2))
    assert [opt.lr_at(s) for s in range(3)] == [0.1, 0.2, 0.2]


def test_momentum_and_weight_decay_against_hand_computation():
    opt = SGD(lr=0.5, momentum=0.5, weight_decay=0.25)
    p = {"W": np.float32([[2.0]]), "b": np.float32([2.0])}
    g = {"W": np.float32([[1.0]]), "b": np.float32([1.0])}
    opt.step(p, g)  # W: g = 1 + 0.25*2 = 1.5, v = 1.5, W = 2 - 0.75 = 1.25 ; b: no decay, 2 - 0.5 = 1.5
    assert p["W"][0, 0] == 1.25 and p["b"][0] == 1.5
    opt.step(p, g)  # W: g = 1 + 0.3125 = 1.3125, v = 0.75 + 1.3125 = 2.0625, W = 1.25 - 1.03125
    assert p["W"][0, 0] == np.float32(0.21875)


def test_errors(data):
    with pytest.raises(ValueError, match=r"lr: expected a positive learning rate, got 0"):
        SGD(lr=0)
    with pytest.raises(ValueError, match=r"lr: expected a positive learning rate, got -0.1"):
        SGD(lr=-0.1)
    with pytest.raises(ValueError, match=r"workers: expected a positive integer number of workers, got 0"):
        train(mlp([64, 10]), data, steps=1, workers=0)
    with pytest.raises(ValueError, match=r"batch_size: 4 is smaller than workers=8"):
        train(mlp([64, 10]), data, steps=1, batch_size=4, workers=8)
    with pytest.raises(ValueError, match=r"give exactly one of epochs and steps"):
        train(mlp([64, 10]), data)
    with pytest.raises(ValueError, match=r"batch_size: expected a positive integer, got 0"):
        train(mlp([64, 10]), data, steps=1, batch_size=0)
    with pytest.raises(ValueError, match=r"precision: unknown format 'fp8'"):
        train(mlp([64, 10]), data, steps=1, precision="fp8")
    with pytest.raises(ValueError, match=r"momentum: expected a value in \[0, 1\), got 1.0"):
        SGD(momentum=1.0)


def test_digits_split_is_fixed_and_stratified(data):
    assert data.x_train.shape == (1347, 64) and data.x_test.shape == (450, 64)
    assert data.x_train.dtype == np.float32 and 0 <= data.x_train.min() and data.x_train.max() <= 1
    test, total = np.bincount(data.y_test, minlength=10), np.bincount(np.r_[data.y_train, data.y_test])
    assert np.all(np.abs(test - 0.25 * total) <= 1)  # stratified: each class split 1:3 to within a sample
    np.testing.assert_array_equal(digits().x_train, data.x_train)


def test_subsets_are_nested_and_nearly_stratified(data):
    small, large = data.subset(20), data.subset(200)
    np.testing.assert_array_equal(large.x_train[:20], small.x_train)
    assert np.bincount(data.subset(10).y_train, minlength=10).tolist() == [1] * 10
    assert np.bincount(small.y_train, minlength=10).tolist() == [2] * 10
    with pytest.raises(ValueError, match=r"n_train: expected an integer in \[1, 1347\], got 0"):
        data.subset(0)


def test_teacher_student_is_nested_and_noise_is_the_label_flip_rate():
    a, b = teacher_student(50, 100, noise=0.2), teacher_student(500, 100, noise=0.2)
    np.testing.assert_array_equal(b.x_train[:50], a.x_train)
    np.testing.assert_array_equal(b.y_train[:50], a.y_train)
    np.testing.assert_array_equal(b.x_test, a.x_test)
    clean = teacher_student(20000, 10, noise=0.0)
    noisy = teacher_student(20000, 10, noise=0.2)
    np.testing.assert_array_equal(clean.x_train, noisy.x_train)
    flipped = (clean.y_train != noisy.y_train).mean()
    assert abs(flipped - 0.2) < 4 * np.sqrt(0.2 * 0.8 / 20000)  # 4 binomial standard deviations
    assert np.bincount(clean.y_train).min() > 0.1 * 20000  # centred teacher: no class starved
    with pytest.raises(ValueError, match=r"noise: expected a fraction in \[0, 0.75\], got 0.9"):
        teacher_student(10, noise=0.9)
    with pytest.raises(ValueError, match=r"n_classes: expected an integer >= 2, got 1"):
        teacher_student(10, n_classes=1)


def test_dynamic_loss_scaling_backs_off_on_overflow_and_grows_when_calm(data):
    from scaledl.nn.precision import round_fp16

    # Start far too high for FP16 (65504): every step overflows until the scale has halved enough.
    policy = Precision(round_fp16, "fp16", loss_scale=2.0 ** 40, dynamic=True, growth_interval=5)
    _, h = small_run(data, steps=60, precision=policy)
    scales = h.loss_scale
    assert scales[0] == 2.0 ** 40
    # 2^25 times a loss gradient of order 1/32 is still far beyond FP16: the first 15 steps all overflow.
    assert scales[:16] == [2.0 ** 40 * 0.5 ** i for i in range(16)]
    assert all(b in (a, a * 0.5, a * 2) for a, b in zip(scales, scales[1:]))
    assert any(b == 2 * a for a, b in zip(scales, scales[1:]))  # and it grew again after 5 calm steps
    assert np.isfinite(h.step_loss[-1]) and h.test_accuracy[-1] > 0.5
    # A fixed scale of 2^40 never recovers: every step is dropped.
    _, fixed = small_run(data, steps=10, precision=as_fp16_scaled(2.0 ** 40))
    assert fixed.skipped_steps == 10


@pytest.mark.parametrize("kw, message", [({"growth": 0.5}, "growth: expected a finite factor >= 1, got 0.5"),
                                         ({"backoff": 1.0}, r"backoff: expected a factor in \(0, 1\), got 1.0"),
                                         ({"growth_interval": 0}, "growth_interval: expected a positive int, got 0")])
def test_dynamic_scaling_parameters_are_checked(kw, message):
    with pytest.raises(ValueError, match=message):
        Precision(np.round, "x", dynamic=True, **kw)
