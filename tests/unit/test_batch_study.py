"""scaledl.nn.batch_study: steps-to-target sweeps, the S_min (1 + B_noise/B) fit, determinism helpers."""

import matplotlib
import numpy as np
import pytest

from scaledl.nn import digits, sum_reducer
from scaledl.nn import batch_study as bs
from scaledl.nn import views as NNV

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def data():
    return digits()


def _run(b, lr, seed, steps):
    return bs.Run(b, lr, seed, steps or 100, steps, 0.9, False)


def test_fit_steps_model_recovers_the_parameters_of_exact_data():
    B = np.array([4, 16, 64, 256, 1024])
    s_min, b_noise = bs.fit_steps_model(B, 12.5 * (1 + 80 / B))
    assert s_min == pytest.approx(12.5, rel=1e-9) and b_noise == pytest.approx(80, rel=1e-9)


@pytest.mark.parametrize("B, S", [([8], [3]), ([8, 16], [3]), ([0, 16], [3, 2]), ([8, 16], [3, -1])])
def test_fit_steps_model_refuses_bad_input(B, S):
    with pytest.raises(ValueError, match="batch_sizes and steps"):
        bs.fit_steps_model(B, S)


def test_best_per_batch_picks_the_lowest_mean_among_lrs_that_always_reach():
    runs = [_run(8, 0.1, 0, 50), _run(8, 0.1, 1, 70), _run(8, 0.2, 0, 30), _run(8, 0.2, 1, None),
            _run(8, 0.05, 0, 55), _run(8, 0.05, 1, 57), _run(32, 0.4, 0, None)]
    assert bs.best_per_batch(runs) == {8: (0.05, 56.0, [55, 57])}


def test_run_reaches_a_modest_target_and_is_bitwise_repeatable(data):
    a = bs.run(data, batch_size=64, lr=0.1, target=0.9, max_steps=300)
    b = bs.run(data, batch_size=64, lr=0.1, target=0.9, max_steps=300)
    assert a.reached and a == b and a.epochs == pytest.approx(a.steps / -(-data.n_train // 64))


def test_run_stops_a_diverging_run(data):
    r = bs.run(data, batch_size=64, lr=50.0, momentum=0.9, target=0.99, max_steps=200)
    assert not r.reached and (r.diverged or r.final_accuracy < 0.5)


@pytest.mark.parametrize("kw, match", [({"lr": 0.0}, "lr must be"), ({"batch_size": 0}, "batch_size must be"),
                                        ({"target": 1.5}, "target must be"), ({"max_steps": 0}, "max_steps"),
                                        ({"warmup_epochs": -1.0}, "warmup_epochs")])
def test_run_refuses_bad_settings(data, kw, match):
    args = dict(batch_size=32, lr=0.1, max_steps=10) | kw
    with pytest.raises(ValueError, match=match):
        bs.run(data, **args)


def test_pruned_sweep_finds_the_same_best_as_the_full_sweep(data):
    opts = dict(target=0.9, max_samples=6000, seeds=(0, 1))
    full = bs.sweep(data, [32, 256], [0.05, 0.2, 0.8], prune=False, **opts)
    pruned = bs.sweep(data, [32, 256], [0.05, 0.2, 0.8], **opts)
    assert bs.best_per_batch(full) == bs.best_per_batch(pruned)
    assert sum(r.steps for r in pruned) <= sum(r.steps for r in full)


def test_sweep_refuses_empty_grids(data):
    with pytest.raises(ValueError, match="non-empty"):
        bs.sweep(data, [], [0.1], target=0.9, max_samples=100)


def test_ordered_sum_depends_on_the_order_in_float32():
    arrays = [np.float32([1e8]), np.float32([1.0]), np.float32([-1e8])]
    assert bs.ordered_sum(arrays, [0, 2, 1])[0] == 1.0    # (1e8 - 1e8) + 1
    assert bs.ordered_sum(arrays, [0, 1, 2])[0] == 0.0    # 1e8 + 1 rounds back to 1e8
    assert bs.bits_differ(bs.ordered_sum(arrays, [0, 1, 2]), bs.ordered_sum(arrays, [0, 2, 1])) == 1.0
    with pytest.raises(ValueError, match="permutation"):
        bs.ordered_sum(arrays, [0, 0, 1])


def test_bits_differ_counts_elements_and_refuses_shape_mismatch():
    a = np.float32([1, 2, 3, 4])
    b = a.copy()
    b[1] = np.nextafter(b[1], np.float32(3))
    assert bs.bits_differ(a, b) == 0.25 and bs.bits_differ(a, a) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        bs.bits_differ(a, a[:3])


def test_shuffled_reducer_is_the_sum_up_to_rounding_and_seeded():
    rng = np.random.default_rng(0)
    grads = [{"w": rng.standard_normal(1000).astype(np.float32)} for _ in range(8)]
    exact = sum_reducer(grads)["w"]
    r1, r2 = bs.shuffled_sum_reducer(3), bs.shuffled_sum_reducer(3)
    outs1 = [r1(grads)["w"] for _ in range(4)]
    outs2 = [r2(grads)["w"] for _ in range(4)]
    assert all(np.array_equal(a, b) for a, b in zip(outs1, outs2))
    assert all(np.allclose(o, exact, rtol=1e-5, atol=1e-5) for o in outs1)
    assert any(bs.bits_differ(o, exact) > 0 for o in outs1)


def test_implied_throughput_and_its_errors():
    t = bs.implied_throughput(images_per_epoch=1_000_000, epochs=90, seconds=900, gpus=1000,
                              train_flop_per_image=1e10, peak_flop_per_s=1e13)
    assert t["images_per_s"] == 100_000 and t["images_per_s_per_gpu"] == 100
    assert t["flop_per_s_per_gpu"] == 1e12 and t["utilisation"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="gpus must be"):
        bs.implied_throughput(images_per_epoch=1, epochs=1, seconds=1, gpus=0, train_flop_per_image=1,
                              peak_flop_per_s=1)


def test_view_run_returns_a_figure_saying_what_happened(data):
    import matplotlib.pyplot as plt

    fig = NNV.view_run(batch_size=128, lr=0.2, warmup_epochs=1.0, epochs=3, data=data)
    title = fig.axes[0].get_title()
    assert "B=128" in title and "final" in title
    plt.close(fig)


def test_plot_steps_vs_batch_draws_the_perfect_scaling_line():
    import matplotlib.pyplot as plt

    best = {8: (0.1, 100.0, [90, 110]), 64: (0.4, 20.0, [20, 20]), 512: (0.8, 12.0, [11, 13])}
    fig = NNV.plot_steps_vs_batch(best, fit=(10.0, 50.0), b_simple=40.0)
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert any("perfect scaling" in s for s in labels) and any("B_simple" in s for s in labels)
    plt.close(fig)
