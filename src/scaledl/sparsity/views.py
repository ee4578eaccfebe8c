"""The pruning chapter's widget view (chapter 11): accuracy and size of a pruned MLP, from
:mod:`scaledl.sparsity.study`; matplotlib is imported inside the function (ARCHITECTURE.md, the views rule).
"""

from __future__ import annotations


import numpy as np

from scaledl.sparsity.study import MLP_SIZES, pruned_summary


def pruning_view(fc1: float = 0.9, fc2: float = 0.9, fc3: float = 0.5, retrain_steps: int = 0):
    """Explorer view (chapter 11): per-layer sparsity in; accuracy and multiplies saved out.

    Left, each layer's multiplies: all, those with a non-zero weight, those with both operands non-zero
    (on the 450 test images). Right, test accuracy of the pruned MLP beside the dense one.
    """
    import matplotlib.pyplot as plt

    out = pruned_summary(fc1, fc2, fc3, retrain_steps)
    layers = out["layers"]
    pos = np.arange(len(layers))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 1.4]})
    n_img = layers[0].multiplies // (MLP_SIZES[0] * MLP_SIZES[1])
    for k, (attr, label, color) in enumerate([("multiplies", "all", "tab:gray"),
                                              ("nonzero_weight", "weight non-zero", "tab:blue"),
                                              ("nonzero_both", "both non-zero", "tab:green")]):
        ax1.bar(pos + (k - 1) * 0.27, [getattr(r, attr) / n_img for r in layers], 0.27, color=color, label=label)
    ax1.set_xticks(pos, [f"{r.name}\n{100 * r.weight_density:.0f} % weights kept" for r in layers])
    ax1.set_ylabel("multiplies per image")
    ax1.legend(fontsize=8)
    ax1.set_title(f"Multiplies saved: {100 * (1 - out['weight_multiplies']):.1f} % (zero weights), "
                  f"{100 * (1 - out['useful_multiplies']):.1f} % (zero weight or input)", fontsize=9)
    accs = [out["dense_accuracy"], out["accuracy"]]
    bars = ax2.bar(["dense", "pruned"], [100 * a for a in accs], color=["tab:gray", "tab:blue"])
    for bar, a in zip(bars, accs):
        ax2.annotate(f"{100 * a:.2f} %", (bar.get_x() + bar.get_width() / 2, 100 * a), ha="center",
                     va="bottom", fontsize=8)
    ax2.set_ylim(max(0.0, 100 * min(accs) - 10), 100)
    ax2.set_ylabel("test accuracy (%)")
    ax2.set_title("retrained %d steps" % retrain_steps if retrain_steps else "no retraining", fontsize=9)
    fig.suptitle(f"Digits MLP {'-'.join(map(str, MLP_SIZES))}: {100 * (1 - out['weight_density']):.1f} % of "
                 "weights pruned by magnitude", fontsize=10)
    fig.tight_layout()
    return fig
