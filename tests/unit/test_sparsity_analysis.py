"""Zero-operand multiply counts against brute force, and the layer sensitivity scan."""

import numpy as np
import pytest

from scaledl.nn import Conv2d, Dense, Flatten, ReLU, Sequential, digits, evaluate, mlp
from scaledl.sparsity.analysis import sensitivity_scan, zero_multiplies


def test_dense_counts_by_hand():
    layer = Dense(3, 2, rng=np.random.default_rng(0), name="fc1")
    layer.params["W"][...] = [[1, 0], [0, 0], [2, 3]]  # non-zeros per input row: 1, 0, 2
    x = np.array([[1, 1, 0], [0, 5, 7]], np.float32)
    (row,) = zero_multiplies(Sequential([layer]), x)
    assert row.multiplies == 2 * 3 * 2
    assert row.nonzero_weight == 2 * 3  # 3 non-zero weights, each used once per sample
    assert row.nonzero_both == 1 + 2  # sample 0: x0 meets 1 weight; sample 1: x2 meets 2
    assert row.weight_density == 0.5 and row.input_density == 4 / 6
    # the zeros line up (x1 = 5 meets only zero weights): 1/4 of the multiplies, not 1/2 x 2/3
    assert row.multiply_density == 0.25 and row.independent_density == pytest.approx(1 / 3)


def test_conv_counts_match_brute_force():
    rng = np.random.default_rng(1)
    conv = Conv2d(2, 3, 3, rng=rng, padding=1, name="conv1")
    conv.params["W"][rng.random(conv.params["W"].shape) < 0.5] = 0
    model = Sequential([conv, ReLU(name="relu1"), Flatten(name="flat"), Dense(3 * 4 * 5, 2, rng=rng, name="fc1")])
    x = rng.standard_normal((2, 2, 4, 5)).astype(np.float32)
    x[x < 0] = 0
    rows = zero_multiplies(model, x)
    W = conv.params["W"]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    total = both = 0
    for n in range(2):
        for o in range(3):
            for i in range(4):
                for j in range(5):
                    win = xp[n, :, i:i + 3, j:j + 3]
                    total += win.size
                    both += int(np.count_nonzero((win != 0) & (W[o] != 0)))
    assert rows[0].multiplies == total and rows[0].nonzero_both == both
    assert rows[1].name == "fc1" and rows[1].multiplies == 2 * 60 * 2


def test_sensitivity_scan_leaves_model_alone():
    data = digits()
    model = mlp([64, 16, 10], seed=0)
    before = {k: v.copy() for k, v in model.parameters().items()}
    scan = sensitivity_scan(model, data, [0.0, 0.99])
    assert sorted(scan) == ["fc1.W", "fc2.W"]
    base = evaluate(model, data.x_test, data.y_test)[1]
    assert scan["fc1.W"][0] == scan["fc2.W"][0] == base  # 0 % pruned: the model itself
    assert all(np.array_equal(before[k], v) for k, v in model.parameters().items()) and not model.masks
    with pytest.raises(ValueError, match=r"sparsity must be in \[0, 1\)"):
        sensitivity_scan(model, data, [1.0])
