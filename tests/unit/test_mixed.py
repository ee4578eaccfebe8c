"""Mixed precision helpers: lost updates, stochastic rounding in expectation, loss scaling, narrow softmax."""

import numpy as np
import pytest

from scaledl.nn import digits, mlp
from scaledl.numerics import mixed as mx
from scaledl.numerics import views as NV


@pytest.mark.parametrize("w, dw, fmt, lost", [
    (1.0, 2.0 ** -12, "fp16", True),      # below half an ulp (2**-11): rounds back to 1
    (1.0, 2.0 ** -11, "fp16", True),      # exactly half an ulp: a tie, to even (1.0)
    (1.0, 2.0 ** -10, "fp16", False),     # one ulp
    (1.0, 2.0 ** -9, "bf16", True),       # bf16 ulp(1) = 2**-7
    (1.0, 2.0 ** -7, "bf16", False),
    (256.0, 0.1, "bf16", True),
    (0.0, 0.0, "fp16", False),            # no update asked for: not "lost"
])
def test_lost_updates_table(w, dw, fmt, lost):
    assert bool(mx.lost_updates(np.float32([w]), np.float32([dw]), fmt)[0]) is lost


def test_half_ulp_matches_format_spacing():
    w = np.float32([1.0, 1.5, 0.25, 1000.0])
    np.testing.assert_array_equal(mx.half_ulp(w, "fp16"), [2.0 ** -11, 2.0 ** -11, 2.0 ** -13, 0.25])
    with pytest.raises(ValueError, match="fmt must be a floating-point format"):
        mx.half_ulp(w, "int8")


def test_nearest_stagnates_and_stochastic_is_unbiased():
    steps, dw = 400, 1e-4
    near = mx.repeated_add(1.0, dw, steps, "fp16")
    assert np.all(near == 1.0)  # every addition is rounded away
    sr = mx.repeated_add(1.0, dw, steps, "fp16", rounding="stochastic", replicas=400, seed=1)
    mean_final = sr[-1].mean()
    exact = 1.0 + steps * dw
    # Each step's rounding error has mean 0 and sd <= ulp/2 = 2**-11; after 400 independent steps the final
    # value's sd is <= 20 * 2**-11; the mean over 400 replicas has sd <= 2**-11: allow 5 sigma.
    assert abs(mean_final - exact) < 5 * 2.0 ** -11


def test_repeated_add_rejects_bad_args():
    with pytest.raises(ValueError, match="rounding must be 'nearest' or 'stochastic', got 'up'"):
        mx.repeated_add(1.0, 1e-3, 3, "fp16", rounding="up")
    with pytest.raises(ValueError, match="steps must be a non-negative int, got -1"):
        mx.repeated_add(1.0, 1e-3, -1, "fp16")


def test_dynamic_loss_scaler_sequence():
    s = mx.DynamicLossScaler(init_scale=1024.0, growth_interval=3)
    seen = []
    for ok in (True, True, True, False, False, True):
        s.update(ok)
        seen.append(s.scale)
    assert seen == [1024.0, 1024.0, 2048.0, 1024.0, 512.0, 512.0]
    with pytest.raises(ValueError, match="init_scale must be positive and finite, got 0"):
        mx.DynamicLossScaler(init_scale=0)
    with pytest.raises(ValueError, match="growth_interval must be >= 1, got 0"):
        mx.DynamicLossScaler(growth_interval=0)


def test_gradient_underflow_thresholds():
    grads = {"a": np.float32([2.0 ** -26, 2.0 ** -20, 1e-3, 0.0, 1e5])}
    f = mx.gradient_underflow(grads, "fp16")
    assert f == {"zero": 0.25, "subnormal": 0.25, "overflow": 0.25}  # zeros are not counted
    assert mx.gradient_underflow(grads, "fp16", scale=2.0 ** 10)["zero"] == 0.0


@pytest.fixture(scope="module")
def data():
    return digits()


def test_train_mixed_fp32_and_master_weights_agree(data):
    a = mx.train_mixed(mlp([64, 16, 10], seed=0), data, steps=60, compute="fp32", eval_every=60)
    b = mx.train_mixed(mlp([64, 16, 10], seed=0), data, steps=60, compute="fp16", master_weights=True,
                       eval_every=60)
    assert a.test_accuracy[-1] > 0.5 and abs(a.test_accuracy[-1] - b.test_accuracy[-1]) < 0.1
    assert all(f == 0.0 for f in b.lost_fraction)  # FP32 master weights lose nothing


def test_train_mixed_low_precision_weights_lose_updates(data):
    model = mlp([64, 16, 10], seed=0)
    h = mx.train_mixed(model, data, steps=40, lr=0.001, compute="bf16", master_weights=False, eval_every=40)
    assert np.mean(h.lost_fraction) > 0.5
    for w in model.parameters().values():  # the stored weights are bf16 values
        np.testing.assert_array_equal(w, w.astype("float32").astype(np.dtype("float32")))
        from scaledl.numerics import quantize
        np.testing.assert_array_equal(quantize(w, "bf16"), w)


def test_train_mixed_quarter_precision_weights(data):
    from scaledl.numerics import quantize

    near_model, sr_model = mlp([64, 16, 10], seed=0), mlp([64, 16, 10], seed=0)
    near = mx.train_mixed(near_model, data, steps=40, lr=0.005, compute="fp16", master_weights=False,
                          weight_format="e4m3", eval_every=40)
    sr = mx.train_mixed(sr_model, data, steps=40, lr=0.005, compute="fp16", master_weights=False,
                        weight_format="e4m3", weight_rounding="stochastic", eval_every=40)
    for model in (near_model, sr_model):
        for w in model.parameters().values():  # stored on the 8-bit grid, not the fp16 one
            np.testing.assert_array_equal(quantize(w, "e4m3"), w)
    # E4M3 keeps 4 significant bits: half an ulp is >= 2**-5 of a weight, far above lr * gradient here,
    # so round-to-nearest loses nearly every update; stochastic rounding moves some of them.
    assert np.mean(near.lost_fraction) > 0.95
    assert np.mean(sr.lost_fraction) < np.mean(near.lost_fraction)


def test_train_mixed_loss_weight_and_scaling(data):
    w = 2.0 ** -14
    plain = mx.train_mixed(mlp([64, 16, 10], seed=0), data, steps=30, lr=0.05 / w, compute="fp16",
                           loss_weight=w, eval_every=30)
    scaled = mx.train_mixed(mlp([64, 16, 10], seed=0), data, steps=30, lr=0.05 / w, compute="fp16",
                            loss_weight=w, loss_scale=mx.DynamicLossScaler(), eval_every=30)
    # Only underflow separates the two runs (same data, same model), so the scaled run has strictly fewer
    # exact zeros in its gradients; the size of the gap depends on the run, its sign does not.
    assert np.nanmean(plain.zero_grad_fraction) > np.nanmean(scaled.zero_grad_fraction) + 0.01


def test_train_mixed_rejects_bad_args(data):
    m = mlp([64, 8, 10], seed=0)
    with pytest.raises(ValueError, match="compute must be one of"):
        mx.train_mixed(m, data, steps=1, compute="fp8")
    with pytest.raises(ValueError, match="weight_rounding must be 'nearest' or 'stochastic', got 'x'"):
        mx.train_mixed(m, data, steps=1, weight_rounding="x")
    with pytest.raises(ValueError, match="loss_weight must be positive and finite, got 0"):
        mx.train_mixed(m, data, steps=1, loss_weight=0)
    with pytest.raises(ValueError, match="weight_format must be a floating-point format .* got 'int8'"):
        mx.train_mixed(m, data, steps=1, master_weights=False, weight_format="int8")


def test_softmax_in_fp16_overflows_without_max_subtraction():
    logits = np.float32([[12.0, 0.0, -3.0], [1.0, 2.0, 3.0]])
    labels = np.array([0, 2])
    naive = mx.softmax_cross_entropy_in(logits, labels, "fp16", stable=False)
    assert not np.isfinite(naive[0]) and np.isfinite(naive[1])  # exp(12) > 65504
    ref = mx.reference_cross_entropy(logits, labels)
    stable = mx.softmax_cross_entropy_in(logits, labels, "fp16", form="logsumexp")
    np.testing.assert_allclose(stable, ref, atol=4 * 2.0 ** -11 * 4)  # a few fp16 roundings of values <= 4


def test_prob_form_gives_inf_for_a_confidently_wrong_label():
    logits = np.float32([[20.0, 0.0]])
    assert np.isinf(mx.softmax_cross_entropy_in(logits, [1], "fp16")[0])  # p = e**-20 < 2**-24
    assert mx.softmax_cross_entropy_in(logits, [1], "fp16", form="logsumexp")[0] == 20.0
    assert mx.softmax_cross_entropy_in(logits, [1], "fp32")[0] == pytest.approx(20.0, rel=1e-6)
    with pytest.raises(ValueError, match="form must be 'prob' or 'logsumexp', got 'x'"):
        mx.softmax_cross_entropy_in(logits, [1], "fp16", form="x")


def test_view_repeated_add_draws_the_three_curves():
    import matplotlib

    matplotlib.use("Agg")
    fig = NV.view_repeated_add("bf16", -9.0, 1.0, 50)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["exact w0 + k dw", "round to nearest", "stochastic rounding (mean of 32 runs)"]
    near = fig.axes[0].lines[-2].get_ydata()
    assert np.all(near == 1.0)  # 2**-9 is below half of bf16's ulp(1) = 2**-7
