"""The pruning experiments of chapters 11-12 on the book's own networks: trained baselines (cached), the
accuracy-vs-sparsity sweep over seeds, and the chapter-11 widget view.

Networks: the digits MLP ``64-128-128-10`` (``fc1.W, fc2.W, fc3.W``: 26,112 weights) and the small CNN
(one 3x3 conv with 8 channels, then a dense layer: 5,120 weights). Every run is seeded and trained with
``scaledl.nn``, so the printed accuracies are the same on any CPU.

>>> sweep_summary([{"accuracy": 0.9}, {"accuracy": 0.96}])
(93.0, 3.0)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from scaledl.nn import digits, mlp, small_cnn, train
from scaledl.nn.train import evaluate
from scaledl.sparsity.analysis import zero_multiplies
from scaledl.sparsity.masks import check_sparsity
from scaledl.sparsity.prune import prunable, prune_masks
from scaledl.sparsity.saliency import hessian_diagonal

MLP_SIZES = (64, 128, 128, 10)  # wide enough that most of its weights are redundant, trains in seconds
DENSE_STEPS = {"mlp": 1500, "cnn": 1000}  # batch 32: about 36 and 24 epochs of the 1,347 training images
RETRAIN_STEPS = 300  # after pruning: a fifth of the dense training, with the mask fixed
HESSIAN_SAMPLES = 256  # training images for OBD's Hessian-diagonal estimate
NETWORKS = tuple(DENSE_STEPS)


def _check_network(network):
    if network not in NETWORKS:
        raise ValueError(f"network={network!r}: expected one of {NETWORKS}")


@lru_cache(maxsize=None)
def _trained(network: str, seed: int):
    data = digits()
    if network == "mlp":
        model = mlp(list(MLP_SIZES), seed=seed)
    else:
        data = data.as_images()
        model = small_cnn(seed=seed)
    train(model, data, steps=DENSE_STEPS[network], seed=seed)
    return model, data


def trained_network(network: str = "mlp", seed: int = 0):
    """``(model, data)``: the dense network trained on digits with ``seed`` (a fresh copy each call)."""
    _check_network(network)
    model, data = _trained(network, int(seed))
    return model.copy(), data


def prune_once(model, data, sparsity, *, criterion: str = "magnitude", retrain_steps: int = 0, seed: int = 0,
               scope: str = "layer"):
    """Prune ``model`` in place (layer-wise by default) and optionally retrain with the mask fixed.

    ``sparsity`` may be a ``{name: sparsity}`` dict. Returns the test accuracy after pruning (and retraining).
    """
    hessian = None
    if criterion == "obd":
        hessian = hessian_diagonal(model, data.x_train[:HESSIAN_SAMPLES], names=prunable(model))
    model.set_masks(prune_masks(model, sparsity, scope=scope, criterion=criterion, hessian=hessian, seed=seed))
    if retrain_steps:
        train(model, data, steps=retrain_steps, seed=seed + 1000)
    return evaluate(model, data.x_test, data.y_test)[1]


def sparsity_sweep(network: str, sparsities, *, seeds=(0, 1, 2), criteria=("magnitude", "obd", "random"),
                   retrain_steps: int = RETRAIN_STEPS, progress: bool = False) -> list[dict]:
    """Test accuracy of ``network`` pruned one-shot, layer-wise, to each sparsity, by each criterion, with
    and without retraining, for each seed. One dict per run: network, seed, criterion, sparsity, retrained,
    accuracy (sparsity 0 rows are the dense baselines).

    ``progress=True`` shows a ``tqdm.auto`` bar, one tick per row (a dense baseline or a pruned copy); it
    changes no result. Off by default: a bar's timings differ from run to run, so a notebook that shows one
    keeps it in a cell of its own and prints the results in the next.
    """
    _check_network(network)
    sparsities = [check_sparsity(s) for s in sparsities]
    if not isinstance(progress, bool):
        raise TypeError(f"progress: expected True or False, got {progress!r}")
    seeds, criteria = tuple(seeds), tuple(criteria)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        total = len(seeds) * (1 + 2 * len(criteria) * len(sparsities))
        bar = tqdm(total=total, desc=f"{network} sweep", unit="run")
    rows = []
    try:
        for seed in seeds:
            base, data = trained_network(network, seed)
            dense = evaluate(base, data.x_test, data.y_test)[1]
            rows.append(dict(network=network, seed=seed, criterion="dense", sparsity=0.0, retrained=False,
                             accuracy=dense))
            if bar is not None:
                bar.update()
            for criterion in criteria:
                for s in sparsities:
                    for steps in (0, retrain_steps):
                        acc = prune_once(base.copy(), data, s, criterion=criterion, retrain_steps=steps, seed=seed)
                        rows.append(dict(network=network, seed=seed, criterion=criterion, sparsity=s,
                                         retrained=bool(steps), accuracy=acc))
                        if bar is not None:
                            bar.update()
    finally:
        if bar is not None:
            bar.close()
    return rows


def sweep_summary(rows) -> tuple[float, float]:
    """(mean, half the range) of the rows' accuracies, in percent: the spread over seeds, honestly small n."""
    acc = 100 * np.array([r["accuracy"] for r in rows], dtype=np.float64)
    if acc.size == 0:
        raise ValueError("rows: expected at least one run")
    return float(np.round(acc.mean(), 2)), float(np.round((acc.max() - acc.min()) / 2, 2))


def sweep_table(rows) -> str:
    """Text table: one line per (network, criterion, retrained), one column per sparsity, mean +- spread."""
    lines = []
    for network in dict.fromkeys(r["network"] for r in rows):
        mine = [r for r in rows if r["network"] == network]
        sparsities = sorted({r["sparsity"] for r in mine if r["criterion"] != "dense"})
        dense = [r for r in mine if r["criterion"] == "dense"]
        m, h = sweep_summary(dense)
        seeds = len(dense)
        lines.append(f"{network}: dense {m:.2f} +- {h:.2f} % ({seeds} seeds; +- is half the range)")
        lines.append(f"  {'criterion':<10s}{'retrain':>8s}" + "".join(f"{100 * s:>15.0f} %" for s in sparsities))
        for criterion in dict.fromkeys(r["criterion"] for r in mine if r["criterion"] != "dense"):
            for retrained in (False, True):
                cells = []
                for s in sparsities:
                    sel = [r for r in mine if r["criterion"] == criterion and r["retrained"] == retrained
                           and r["sparsity"] == s]
                    cells.append("{:>10.2f} +-{:>5.2f}".format(*sweep_summary(sel)) if sel else " " * 17)
                lines.append(f"  {criterion:<10s}{'yes' if retrained else 'no':>8s}" + "".join(cells))
    return "\n".join(lines)


def pruned_summary(fc1: float = 0.9, fc2: float = 0.9, fc3: float = 0.5, retrain_steps: int = 0) -> dict:
    """Prune the seed-0 digits MLP layer by layer (magnitude), optionally retrain, and count what it does.

    Returns ``accuracy``, ``dense_accuracy``, ``weight_density`` (overall), and per layer the
    :class:`~scaledl.sparsity.analysis.LayerZeros` on the test images (``layers``), plus the overall fractions
    of multiplies with a non-zero weight (``weight_multiplies``) and with both operands non-zero
    (``useful_multiplies``).
    """
    model, data = trained_network("mlp", 0)
    dense = evaluate(model, data.x_test, data.y_test)[1]
    acc = prune_once(model, data, {"fc1.W": fc1, "fc2.W": fc2, "fc3.W": fc3}, retrain_steps=retrain_steps)
    layers = zero_multiplies(model, data.x_test)
    total = sum(r.multiplies for r in layers)
    params = model.parameters()
    n_w = sum(params[n].size for n in prunable(model))
    return dict(accuracy=acc, dense_accuracy=dense, layers=layers,
                weight_density=sum(np.count_nonzero(params[n]) for n in prunable(model)) / n_w,
                weight_multiplies=sum(r.nonzero_weight for r in layers) / total,
                useful_multiplies=sum(r.nonzero_both for r in layers) / total)


# Han, Pool, Tran and Dally, "Learning both Weights and Connections for Efficient Neural Networks", NeurIPS 2015,
# Table 1: parameters before and after magnitude pruning with retraining (same accuracy), and the paper's
# compression rate. LeNets on MNIST, AlexNet and VGG-16 on ImageNet.
HAN2015_PARAMETERS = {  # network: (parameters before, after, compression the paper reports)
    "LeNet-300-100": (267e3, 22e3, 12),
    "LeNet-5": (431e3, 36e3, 12),
    "AlexNet": (61e6, 6.7e6, 9),
    "VGG-16": (138e6, 10.3e6, 13),
}


def nm_once(model, data, *, retrain_steps: int = RETRAIN_STEPS, seed: int = 0, n: int = 2, m: int = 4):
    """Mishra et al.'s 2:4 recipe on a trained ``model`` (in place): prune every layer once to N:M along its
    reduction axis, retrain with the mask fixed. Returns (accuracy right after pruning, after retraining)."""
    from scaledl.sparsity.prune import nm_masks
    model.set_masks(nm_masks(model, n, m))
    before = evaluate(model, data.x_test, data.y_test)[1]
    if retrain_steps:
        train(model, data, steps=retrain_steps, seed=seed + 1000)
    return before, evaluate(model, data.x_test, data.y_test)[1]


# Han, Liu, Mao, Pu, Pedram, Horowitz and Dally, "EIE: Efficient Inference Engine on Compressed Deep Neural
# Network", ISCA 2016: against a GPU on its fully connected layer benchmarks (compressed, sparse weights and
# activations skipped).
EIE_2016 = {"speedup_vs_gpu": 13, "energy_efficiency_vs_gpu": 3400}  # "3,400x" is the paper's approximate figure
# Parashar et al., "SCNN: An Accelerator for Compressed-sparse Convolutional Neural Networks", ISCA 2017:
# against a comparably provisioned dense CNN accelerator.
SCNN_2017 = {"speedup_vs_dense": 2.7, "energy_improvement_vs_dense": 2.3}
