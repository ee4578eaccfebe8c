"""scaledl.nn layers, loss and model: backward passes against float64 finite differences, hooks, errors."""

import numpy as np
import pytest

from scaledl.nn import (Conv2d, Dense, Flatten, ReLU, Sequential, max_gradient_error, mlp, small_cnn,
                        softmax_cross_entropy)

# Central differences in float64 with eps = 1e-6: truncation ~eps^2 |f'''| and rounding ~2^-53 / eps, both
# ~1e-10; 1e-6 leaves room for the ReLU kinks being crossed rarely. A wrong backward pass is off by O(1).
GRAD_TOL = 1e-6


@pytest.mark.parametrize("sizes", [[5, 3], [7, 11, 4], [6, 9, 5, 3]])
def test_mlp_gradients_match_finite_differences(sizes):
    rng = np.random.default_rng(len(sizes))
    x = rng.standard_normal((13, sizes[0]))
    y = rng.integers(0, sizes[-1], 13)
    assert max_gradient_error(mlp(sizes, seed=3), x, y) < GRAD_TOL


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_conv_gradients_match_finite_differences(padding):
    rng = np.random.default_rng(padding)
    model = Sequential([Conv2d(2, 3, 3, padding=padding, rng=rng, name="conv"), ReLU(), Flatten(),
                        Dense(3 * (5 + 2 * padding - 2) * (6 + 2 * padding - 2), 4, rng=rng, name="fc")])
    x = rng.standard_normal((3, 2, 5, 6))  # odd, non-square images
    assert max_gradient_error(model, x, np.array([0, 3, 1])) < GRAD_TOL


def test_conv_forward_matches_direct_loops():
    rng = np.random.default_rng(1)
    conv = Conv2d(2, 3, 3, padding=1, rng=rng)
    conv.params["b"][:] = rng.standard_normal(3)
    x = rng.standard_normal((2, 2, 5, 4)).astype(np.float32)
    got = conv.forward(x)
    W, b = conv.params["W"].astype(np.float64), conv.params["b"].astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.full((2, 3, 5, 4), np.nan)
    for n in range(2):
        for o in range(3):
            for i in range(5):
                for j in range(4):
                    ref[n, o, i, j] = (xp[n, :, i:i + 3, j:j + 3] * W[o]).sum() + b[o]
    # float32 sums of 18 products of O(1) values: a few ulps of float32 (eps 1.2e-7) times the magnitude
    np.testing.assert_allclose(got, ref, rtol=0, atol=18 * np.finfo(np.float32).eps * np.abs(ref).max())


def test_softmax_cross_entropy_against_float64_reference():
    rng = np.random.default_rng(2)
    logits = (rng.standard_normal((9, 5)) * 30).astype(np.float32)  # large: tests the max shift
    y = rng.integers(0, 5, 9)
    loss, d = softmax_cross_entropy(logits, y)
    z = logits.astype(np.float64)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    ref_loss = -np.mean(np.log(np.maximum(p[np.arange(9), y], 1e-300)))
    onehot = np.eye(5)[y]
    assert np.isfinite(loss)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    np.testing.assert_allclose(d, (p - onehot) / 9, atol=1e-7)


def test_parameters_are_the_layers_own_arrays():
    model = mlp([4, 3, 2], seed=0)
    model.parameters()["fc1.W"][:] = 0
    assert not model.layers[0].params["W"].any()
    assert model.n_parameters() == 4 * 3 + 3 + 3 * 2 + 2


def test_fake_quant_uses_straight_through_gradients():
    rng = np.random.default_rng(0)
    model = mlp([6, 5, 3], seed=1)
    x, y = rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, 8)
    quant = lambda a: np.round(a * 4) / 4  # noqa: E731  (a 0.25-step grid)
    model.set_fake_quant(weights=quant, activations=quant)
    _, g = model.loss_and_gradients(x, y)
    # Same as a plain model whose weights and inputs are already on the grid: the quantizer is identity.
    plain = mlp([6, 5, 3], seed=1)
    plain.layers[0].params["W"][:] = quant(plain.layers[0].params["W"])
    plain.layers[2].params["W"][:] = quant(plain.layers[2].params["W"])
    h = plain.layers[1].forward(plain.layers[0].forward(quant(x)))
    logits = plain.layers[2].forward(quant(h))
    _, dl = softmax_cross_entropy(logits, y)
    plain.layers[0].backward(plain.layers[1].backward(plain.layers[2].backward(dl)))
    for k, v in plain.gradients().items():
        np.testing.assert_array_equal(g[k], v)
    model.set_fake_quant()  # removes
    assert model.layers[0].quantize_weight is None


def test_fp16_precision_rounds_every_tensor():
    rng = np.random.default_rng(0)
    model = mlp([6, 5, 3], seed=1)
    model.precision = "fp16"
    x, y = rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, 8)
    _, g = model.loss_and_gradients(x, y)
    for v in [model.forward(x), *g.values()]:
        np.testing.assert_array_equal(v, v.astype(np.float16).astype(np.float32))
    model.precision = None
    assert model.layers[0].precision is None


def test_small_cnn_trains_a_step():
    model = small_cnn(seed=0)
    x = np.random.default_rng(0).random((4, 1, 8, 8), dtype=np.float32)
    loss, g = model.loss_and_gradients(x, np.array([1, 2, 3, 4]))
    assert np.isfinite(loss) and g["conv1.W"].shape == (8, 1, 3, 3)


def test_shape_mismatch_names_both_shapes():
    model = mlp([64, 8, 10], seed=0)
    with pytest.raises(ValueError, match=r"fc1: input has shape \(5, 63\), expected \(batch, 64\)"):
        model.forward(np.zeros((5, 63), np.float32))
    with pytest.raises(ValueError, match=r"labels: shape \(4,\) does not match the 5 samples"):
        model.loss_and_gradients(np.zeros((5, 64), np.float32), np.zeros(4, int))
    with pytest.raises(ValueError, match=r"masks\['fc1.W'\]: shape \(3, 3\) does not match .* \(64, 8\)"):
        model.set_masks({"fc1.W": np.ones((3, 3), bool)})
    with pytest.raises(ValueError, match=r"values\['fc2.b'\]: shape \(9,\) does not match .* \(10,\)"):
        model.load_parameters({"fc2.b": np.zeros(9)})
    with pytest.raises(ValueError, match=r"conv: input has shape \(2, 3, 8, 8\), expected \(batch, 1, H, W\)"):
        Conv2d(1, 2, 3, rng=np.random.default_rng(0)).forward(np.zeros((2, 3, 8, 8), np.float32))


def test_labels_outside_the_class_range():
    with pytest.raises(ValueError, match=r"labels: value 10 is outside the class range \[0, 9\]"):
        softmax_cross_entropy(np.zeros((3, 10)), np.array([0, 10, 2]))
    with pytest.raises(ValueError, match=r"labels: value -1 is outside"):
        softmax_cross_entropy(np.zeros((3, 10)), np.array([0, -1, 2]))
    with pytest.raises(ValueError, match=r"labels: expected a 1-D integer array"):
        softmax_cross_entropy(np.zeros((3, 10)), np.array([0.0, 1.0, 2.0]))


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match=r"sizes: expected at least two positive integers"):
        mlp([64])
    with pytest.raises(ValueError, match=r"n_out: expected a positive integer, got 0"):
        Dense(3, 0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"layers: names must be unique"):
        Sequential([ReLU("a"), ReLU("a")])
    with pytest.raises(ValueError, match=r"layers: \['nope'\] are not dense/conv layers"):
        mlp([3, 2]).set_fake_quant(weights=np.round, layers=["nope"])
