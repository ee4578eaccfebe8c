"""Optimal Brain Damage: the saliency 0.5 h_ii w_i^2, and the Hessian diagonal of a model estimated from data.

OBD (LeCun, Denker and Solla, "Optimal Brain Damage", Advances in Neural Information Processing Systems 2,
NIPS 1989) expands the loss to second order around a trained minimum, drops the off-diagonal terms of the
Hessian and the gradient term (zero at a minimum), and predicts that removing weight ``i`` raises the loss by
``s_i = 0.5 h_ii w_i^2``. Magnitude pruning is the special case ``h_ii = const``.

The Hessian diagonal comes from :func:`hessian_diagonal`. Its default, ``method="fisher"``, is the diagonal
of the Gauss-Newton matrix, which for softmax cross-entropy equals the Fisher information:

    G = E_x [ J^T (diag(p) - p p^T) J ] = E_x E_{c ~ p(.|x)} [ g_c g_c^T ],  g_c = d(-log p_c)/dw,

so ``G_ii = E_x sum_c p_c g_{c,i}^2``, computed exactly (one backward pass per class per sample). Why this
one: it is what OBD itself used (a Levenberg-Marquardt/Gauss-Newton diagonal, which drops the
second-derivative-of-the-network term), it is never negative (so every saliency is >= 0 and ranks cleanly),
and for a network with no hidden layer it *is* the Hessian. Hutchinson's estimator ``E[v * Hv]`` would give
the full Hessian's diagonal but needs Hessian-vector products that :mod:`scaledl.nn` does not have, and is
noisy and can go negative. ``method="empirical"`` squares the gradient of the true label only
(``E_x g_y^2``): cheaper (one backward pass per sample) but biased away from a minimum.

>>> import numpy as np
>>> obd_saliency(np.array([1.0, -2.0, 3.0]), np.array([4.0, 1.0, 0.0]))
array([2., 2., 0.])
"""

from __future__ import annotations

import numpy as np

from scaledl.sparsity.masks import check_weights

METHODS = ("fisher", "empirical")


def obd_saliency(w, hessian_diag) -> np.ndarray:
    """``0.5 * hessian_diag * w**2`` in float64: the loss increase OBD predicts for removing each weight.

    Raises:
        ValueError: shapes differ, non-finite values, or a negative Hessian diagonal entry (the saliency
            of a weight at a minimum cannot be negative; a negative estimate means the estimator is wrong).
    """
    w = check_weights(w, "w").astype(np.float64)
    h = check_weights(hessian_diag, "hessian_diag").astype(np.float64)
    if w.shape != h.shape:
        raise ValueError(f"hessian_diag: shape {h.shape} does not match the weights' shape {w.shape}")
    if (h < 0).any():
        raise ValueError(f"hessian_diag must be >= 0 (OBD assumes a minimum), got min {h.min()}")
    return 0.5 * h * w * w


def _softmax64(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def hessian_diagonal(model, x, y=None, *, method: str = "fisher", names=None) -> dict[str, np.ndarray]:
    """Estimate the diagonal of the Hessian of the mean cross-entropy of ``model`` on ``(x, y)``.

    Args:
        model: a :class:`scaledl.nn.Sequential` (its parameters are not changed; its cached activations and
            ``gradients()`` are overwritten).
        x: inputs, one per row (or image). y: labels; needed by ``method="empirical"`` only.
        method: ``"fisher"`` (exact Gauss-Newton/Fisher diagonal, C backward passes per sample) or
            ``"empirical"`` (squared gradient of the true label, one backward pass per sample).
        names: the parameters to return (default: all).

    Returns:
        ``{parameter name: float64 array}`` of the parameters' shapes, all entries >= 0.

    Raises:
        ValueError: an unknown method or parameter name, empirical without labels, or no samples.

    >>> from scaledl.nn import mlp
    >>> model = mlp([3, 2], seed=0)
    >>> h = hessian_diagonal(model, np.ones((4, 3), np.float32))
    >>> sorted(h), bool((h["fc1.W"] >= 0).all())
    (['fc1.W', 'fc1.b'], True)
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not a Hessian estimator; expected one of {METHODS}")
    params = model.parameters()
    names = list(params) if names is None else list(names)
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ValueError(f"names: unknown parameters {unknown}; the model has {sorted(params)}")
    x = np.asarray(x)
    if len(x) == 0:
        raise ValueError("x: expected at least one sample, got none")
    if method == "empirical":
        if y is None:
            raise ValueError("y: method='empirical' needs the labels")
        y = np.asarray(y)
        if y.shape != (len(x),):
            raise ValueError(f"y: expected {len(x)} labels, got shape {y.shape}")
    total = {n: np.zeros(params[n].shape, np.float64) for n in names}
    for i in range(len(x)):
        logits = model.forward(x[i:i + 1])
        p = _softmax64(logits)[0]
        classes = range(len(p)) if method == "fisher" else [int(y[i])]
        for c in classes:
            weight = p[c] if method == "fisher" else 1.0
            if weight == 0.0:
                continue
            d = p.copy()
            d[c] -= 1.0  # d(-log p_c)/d logits = p - e_c
            model.backward(d[None, :].astype(logits.dtype))
            grads = model.gradients()
            for n in names:
                g = grads[n].astype(np.float64)
                total[n] += weight * g * g
    return {n: t / len(x) for n, t in total.items()}
