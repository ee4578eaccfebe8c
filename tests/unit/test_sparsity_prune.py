"""Pruning scaledl.nn models (layer-wise, global, N:M) and the prune-and-retrain schedules."""

import numpy as np
import pytest

from scaledl.nn import SGD, digits, mlp, small_cnn, train
from scaledl.sparsity import (cubic_sparsity, hessian_diagonal, iterative_sparsities, model_sparsity, nm_masks,
                              prunable, prune_and_retrain, prune_masks)


@pytest.fixture(scope="module")
def trained():
    data = digits()
    model = mlp([64, 32, 10], seed=0)
    train(model, data, epochs=2, batch_size=32, optimizer=SGD(lr=0.05, momentum=0.9))
    return model, data


def test_layerwise_exact_per_tensor():
    model = mlp([64, 30, 10], seed=1)
    masks = prune_masks(model, 0.7)
    assert sorted(masks) == prunable(model) == ["fc1.W", "fc2.W"]
    for name, m in masks.items():
        assert m.sum() == m.size - round(0.7 * m.size)


def test_global_prunes_the_small_layer_more():
    model = mlp([64, 30, 10], seed=1)
    model.parameters()["fc2.W"][...] *= 0.01  # fc2's weights now rank below almost all of fc1's
    masks = prune_masks(model, 0.5, scope="global")
    total = sum(m.size for m in masks.values())
    assert sum(int(m.sum()) for m in masks.values()) == total - round(0.5 * total)
    assert masks["fc2.W"].mean() < 0.05 < 0.5 < masks["fc1.W"].mean()
    assert prune_masks(model, 0.5)["fc2.W"].mean() == 0.5  # layer-wise: both at 50 %


def test_per_layer_dict_and_nesting():
    model = mlp([64, 30, 10], seed=1)
    masks = prune_masks(model, {"fc1.W": 0.9})
    assert list(masks) == ["fc1.W"] and masks["fc1.W"].sum() == 1920 - 1728
    model.set_masks(prune_masks(model, 0.5, criterion="random", seed=0))
    before = {k: v.copy() for k, v in model.masks.items()}
    after = prune_masks(model, 0.75, criterion="random", seed=1)  # new scores, but dead entries stay dead
    for name in before:
        assert not (after[name] & ~before[name]).any()
        assert after[name].sum() == after[name].size - round(0.75 * after[name].size)


def test_obd_ranks_by_saliency(trained):
    model, data = trained
    model = model.copy()
    h = hessian_diagonal(model, data.x_train[:20])
    masks = prune_masks(model, 0.5, criterion="obd", hessian=h)
    s = 0.5 * h["fc1.W"] * model.parameters()["fc1.W"].astype(np.float64) ** 2
    assert s[masks["fc1.W"]].min() >= s[~masks["fc1.W"]].max()


def test_nm_masks_along_the_reduction_axis():
    masks = nm_masks(mlp([64, 32, 10], seed=0))
    for m in masks.values():  # Dense W is (n_in, n_out), y = x @ W: groups run down the columns
        assert (m.reshape(-1, 4, m.shape[1]).sum(axis=1) == 2).all()
    conv = nm_masks(small_cnn(seed=0))["conv1.W"]  # (8, 1, 3, 3): K = 9, padded to 12
    flat = conv.reshape(8, 9)
    assert (flat[:, :8].reshape(8, 2, 4).sum(-1) == 2).all() and (flat[:, 8] == 1).all()


def test_cubic_schedule_closed_form():
    # s_t = s_f (1 - (1 - t/T)^3) from s_i = 0: a quarter of the way, 1 - 0.75^3 = 0.578125 of s_f
    assert cubic_sparsity(25, 0.8, end_step=100) == pytest.approx(0.8 * 0.578125, abs=1e-15)
    assert cubic_sparsity(30, 0.9, initial_sparsity=0.5, begin_step=10, end_step=50) == \
        pytest.approx(0.9 - 0.4 * 0.5 ** 3, abs=1e-15)
    assert cubic_sparsity(5, 0.9, begin_step=10, end_step=50) == 0.0
    assert iterative_sparsities(0.9, 1) == [0.9]
    s = iterative_sparsities(0.99, 2)  # each round keeps the same fraction: 10 %, then 10 % of that
    assert s == pytest.approx([0.9, 0.99], abs=1e-12)


@pytest.mark.parametrize("schedule", ["one-shot", "iterative", "gradual"])
def test_prune_and_retrain_reaches_target_and_keeps_zeros(trained, schedule):
    model, data = trained
    model = model.copy()
    run = prune_and_retrain(model, data, 0.8, schedule=schedule, steps=60, rounds=3, prune_every=10,
                            batch_size=32)
    assert run.sparsity[-1] == pytest.approx(0.8, abs=1 / 2368)  # exact counts per layer
    assert all(a <= b for a, b in zip(run.sparsity, run.sparsity[1:]))
    assert len(run.sparsity) == {"one-shot": 1, "iterative": 3, "gradual": 5}[schedule]
    for name, m in model.masks.items():  # the pruned weights stayed exactly zero through retraining
        assert (model.parameters()[name][~m] == 0).all()
    assert model_sparsity(model)["total"] == pytest.approx(0.8, abs=1 / 2368)
    assert run.final_accuracy > 0.8


def test_errors():
    model = mlp([8, 4], seed=0)
    with pytest.raises(ValueError, match="scope='tensor' is not a pruning scope"):
        prune_masks(model, 0.5, scope="tensor")
    with pytest.raises(ValueError, match="criterion='taylor' is not a pruning criterion"):
        prune_masks(model, 0.5, criterion="taylor")
    with pytest.raises(ValueError, match=r"hessian: criterion='obd' needs the Hessian diagonal of \['fc1.W'\]"):
        prune_masks(model, 0.5, criterion="obd")
    with pytest.raises(ValueError, match="sparsity: a per-layer dict needs scope='layer'"):
        prune_masks(model, {"fc1.W": 0.5}, scope="global")
    with pytest.raises(ValueError, match=r"sparsity\['fc1.W'\] must be in \[0, 1\)"):
        prune_masks(model, {"fc1.W": 1.5})
    with pytest.raises(ValueError, match="names: unknown parameters \\['fc9.W'\\]"):
        prune_masks(model, 0.5, names=["fc9.W"])
    with pytest.raises(ValueError, match="schedule='cyclic' is not a pruning schedule"):
        prune_and_retrain(model, None, 0.5, schedule="cyclic")
    with pytest.raises(ValueError, match="end_step must be > begin_step=10, got 10"):
        cubic_sparsity(5, 0.5, begin_step=10, end_step=10)
    with pytest.raises(ValueError, match="rounds must be a positive integer, got 0"):
        iterative_sparsities(0.5, 0)
