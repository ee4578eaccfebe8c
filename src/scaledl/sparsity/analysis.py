"""What pruning buys and costs: multiplies with a zero operand, per layer, and the layer sensitivity scan.

:func:`zero_multiplies` counts, exactly (integer arithmetic), the multiplies each dense or conv layer does
on a batch, how many of them have a non-zero weight, and how many have a non-zero weight *and* a non-zero
input. If weights and activations were zero independently, the last fraction would be the product of the
two densities (a claim to check, not assume: seed 000's "10 % of weights x 30 % of activations = 3 % of
the multiplies"). A conv layer's inputs are its im2col matrix, so zero padding counts as zero inputs.

:func:`sensitivity_scan` prunes one layer at a time, without retraining, and measures test accuracy: the
scan that tells which layers tolerate pruning.

>>> import numpy as np
>>> from scaledl.nn import mlp
>>> model = mlp([4, 3, 2], seed=0)
>>> rows = zero_multiplies(model, np.ones((5, 4), np.float32))
>>> [(r.name, r.multiplies) for r in rows]
[('fc1', 60), ('fc2', 30)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scaledl.nn.layers import Conv2d, Dense
from scaledl.nn.train import evaluate
from scaledl.sparsity.masks import check_sparsity
from scaledl.sparsity.prune import prunable, prune_masks


@dataclass(frozen=True)
class LayerZeros:
    """Multiply counts of one layer on one batch."""

    name: str
    multiplies: int  # all multiplies of the layer's GEMM
    nonzero_weight: int  # those whose weight operand is non-zero
    nonzero_both: int  # those whose weight and input are both non-zero
    weight_density: float  # fraction of non-zero weights
    input_density: float  # fraction of non-zero inputs (im2col entries for a conv)

    @property
    def multiply_density(self) -> float:
        """Fraction of the multiplies that have two non-zero operands."""
        return self.nonzero_both / self.multiplies

    @property
    def independent_density(self) -> float:
        """What ``multiply_density`` would be if zeros in weights and inputs were independent."""
        return self.weight_density * self.input_density


def _gemm_operands(layer):
    """(inputs as a (rows, K) matrix, weights as a (K, n_out) matrix) of the GEMM the layer last ran."""
    if isinstance(layer, Dense):
        return layer._x, layer.params["W"]
    return layer._cols, layer.params["W"].reshape(layer.c_out, -1).T


def zero_multiplies(model, x) -> list[LayerZeros]:
    """Run ``model`` on the batch ``x`` and count each dense/conv layer's multiplies by zero operands.

    Relies on what each layer caches for its backward pass (``Dense._x``, ``Conv2d._cols``): the inputs
    exactly as the GEMM saw them, after any fake quantization.
    """
    model.forward(np.asarray(x))
    rows = []
    for layer in model.layers:
        if not isinstance(layer, (Dense, Conv2d)):
            continue
        a, w = _gemm_operands(layer)
        a_nz = (a != 0).astype(np.int64)  # (rows, K)
        w_nz_per_k = np.count_nonzero(w, axis=1).astype(np.int64)  # (K,): non-zero weights each input meets
        n_rows, K = a.shape
        n_out = w.shape[1]
        rows.append(LayerZeros(
            name=layer.name,
            multiplies=int(n_rows * K * n_out),
            nonzero_weight=int(n_rows * w_nz_per_k.sum()),
            nonzero_both=int((a_nz.sum(axis=0) * w_nz_per_k).sum()),
            weight_density=float(np.count_nonzero(w) / w.size),
            input_density=float(a_nz.sum() / a_nz.size),
        ))
    return rows


def sensitivity_scan(model, data, sparsities, *, names=None, criterion: str = "magnitude",
                     seed: int = 0) -> dict[str, list[float]]:
    """Test accuracy with one layer at a time pruned to each of ``sparsities`` (no retraining).

    Returns ``{layer parameter name: [accuracy at each sparsity]}``; ``model`` is left unchanged.
    """
    sparsities = [check_sparsity(s) for s in sparsities]
    names = prunable(model) if names is None else list(names)
    out = {}
    for name in names:
        accs = []
        for s in sparsities:
            trial = model.copy()
            trial.set_masks({**trial.masks, **prune_masks(trial, {name: s}, criterion=criterion, seed=seed)})
            accs.append(evaluate(trial, data.x_test, data.y_test)[1])
        out[name] = accs
    return out
