"""Pruning a :class:`scaledl.nn.Sequential`: layer-wise or global, by magnitude, OBD saliency or at random.

* **Layer-wise** prunes every weight tensor to the same sparsity (or to its own, from a dict: the layer
  sensitivity scan), exactly ``n - round(s n)`` kept per tensor.
* **Global** ranks all the pruned tensors' scores together and keeps exactly ``N - round(s N)`` of them,
  so a layer with small weights (or low saliency) loses more than one with large weights.

Only the weights (``"W"`` of dense and conv layers) are pruned by default: the biases are a rounding
error of the parameter count and of the multiplies. The masks go to ``model.set_masks``, which keeps the
pruned weights at zero through training. An entry already masked out stays out (its score is ranked below
every live one), so successive prunings of one model are nested.

>>> import numpy as np
>>> from scaledl.nn import mlp
>>> model = mlp([64, 32, 10], seed=0)
>>> masks = prune_masks(model, 0.75, scope="global")
>>> sum(int(m.sum()) for m in masks.values()), 64 * 32 + 32 * 10 - round(0.75 * (64 * 32 + 32 * 10))
(592, 592)
>>> model.set_masks(masks); round(model_sparsity(model)["total"], 4)
0.75
"""

from __future__ import annotations

import numpy as np

from scaledl.nn.layers import Conv2d, Dense
from scaledl.sparsity.masks import check_sparsity, kept_count, nm_mask, score_mask, top_k_mask
from scaledl.sparsity.saliency import obd_saliency

SCOPES = ("layer", "global")
CRITERIA = ("magnitude", "obd", "random")


def prunable(model) -> list[str]:
    """Names of the weight matrices/kernels of the dense and conv layers (``["fc1.W", "fc2.W"]``)."""
    return [f"{layer.name}.W" for layer in model.layers if isinstance(layer, (Dense, Conv2d))]


def _names(model, names) -> list[str]:
    params = model.parameters()
    names = prunable(model) if names is None else list(names)
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ValueError(f"names: unknown parameters {unknown}; the model has {sorted(params)}")
    return names


def scores(model, criterion: str = "magnitude", *, hessian: dict | None = None, names=None,
           seed: int = 0) -> dict[str, np.ndarray]:
    """Per-weight importance (higher is kept): ``|w|``, OBD saliency (needs ``hessian``) or uniform noise."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion={criterion!r} is not a pruning criterion; expected one of {CRITERIA}")
    params = model.parameters()
    names = _names(model, names)
    if criterion == "obd":
        missing = [n for n in names if hessian is None or n not in hessian]
        if missing:
            raise ValueError(f"hessian: criterion='obd' needs the Hessian diagonal of {missing} "
                             "(from scaledl.sparsity.hessian_diagonal)")
        out = {n: obd_saliency(params[n], hessian[n]) for n in names}
    elif criterion == "magnitude":
        out = {n: np.abs(params[n]).astype(np.float64) for n in names}
    else:
        rng = np.random.default_rng(seed)
        out = {n: rng.random(params[n].shape) for n in names}
    for n in names:  # nested pruning: what is already masked out ranks below everything alive
        if n in model.masks:
            out[n] = np.where(model.masks[n], out[n], -1.0)
    return out


def prune_masks(model, sparsity, *, scope: str = "layer", criterion: str = "magnitude",
                hessian: dict | None = None, names=None, seed: int = 0) -> dict[str, np.ndarray]:
    """Masks pruning ``model``'s weights to ``sparsity`` (not applied: pass them to ``model.set_masks``).

    Args:
        model: a :class:`scaledl.nn.Sequential`.
        sparsity: fraction removed in [0, 1); with ``scope="layer"`` also a dict ``{name: sparsity}``
            (names left out are not pruned).
        scope: ``"layer"`` (each tensor to the sparsity) or ``"global"`` (all tensors ranked together).
        criterion: ``"magnitude"``, ``"obd"`` (give ``hessian``) or ``"random"`` (seeded by ``seed``).
        hessian: ``{name: Hessian diagonal}`` from :func:`~scaledl.sparsity.saliency.hessian_diagonal`.
        names: the parameters to prune (default: :func:`prunable`).

    Raises:
        ValueError: bad sparsity, scope, criterion or name; a dict of sparsities with global scope.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope={scope!r} is not a pruning scope; expected one of {SCOPES}")
    if isinstance(sparsity, dict):
        if scope != "layer":
            raise ValueError("sparsity: a per-layer dict needs scope='layer'")
        names = list(sparsity)
    s = scores(model, criterion, hessian=hessian, names=names, seed=seed)
    if scope == "layer":
        per = sparsity if isinstance(sparsity, dict) else {n: sparsity for n in s}
        return {n: score_mask(s[n], check_sparsity(per[n], f"sparsity[{n!r}]")) for n in s}
    flat = np.concatenate([v.ravel() for v in s.values()])
    keep = top_k_mask(flat, kept_count(flat.size, sparsity))
    out, start = {}, 0
    for n, v in s.items():
        out[n] = keep[start:start + v.size].reshape(v.shape)
        start += v.size
    return out


def nm_masks(model, n: int = 2, m: int = 4, *, names=None) -> dict[str, np.ndarray]:
    """N:M masks along each layer's reduction axis: rows of a dense ``W`` (axis 0, ``x @ W``), and the
    flattened ``c_in x k x k`` of a conv kernel (the im2col GEMM's K, padded when ``m`` does not divide)."""
    params = model.parameters()
    out = {}
    for name in _names(model, names):
        w = params[name]
        if w.ndim == 2:
            out[name] = nm_mask(w, n, m, axis=0, pad=True)
        else:
            flat = w.reshape(w.shape[0], -1)
            out[name] = nm_mask(flat, n, m, axis=1, pad=True).reshape(w.shape)
    return out


def model_sparsity(model, names=None) -> dict[str, float]:
    """Fraction of exactly-zero entries of each pruned tensor, and ``"total"`` over all of them."""
    params = model.parameters()
    names = _names(model, names)
    out = {n: float(1.0 - np.count_nonzero(params[n]) / params[n].size) for n in names}
    size = sum(params[n].size for n in names)
    out["total"] = float(1.0 - sum(np.count_nonzero(params[n]) for n in names) / size)
    return out
