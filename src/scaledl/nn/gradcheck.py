"""Gradient checking: the hand-written backward passes against central finite differences in float64.

>>> import numpy as np
>>> from scaledl.nn import mlp
>>> rng = np.random.default_rng(0)
>>> err = max_gradient_error(mlp([5, 7, 3], seed=1), rng.standard_normal((4, 5)), np.array([0, 1, 2, 1]))
>>> err < 1e-7
True
"""

from __future__ import annotations

import numpy as np

from scaledl.nn.loss import softmax_cross_entropy


def numerical_gradients(model, x, labels, eps: float = 1e-6) -> dict[str, np.ndarray]:
    """d loss / d parameter by central differences, (L(w + eps) - L(w - eps)) / 2 eps, for every entry.

    Use a float64 copy of a small model (``model.astype(np.float64)``): the truncation error is O(eps^2)
    and the rounding error O(u / eps) with u = 2^-53, both ~1e-10 at eps = 1e-6.
    """
    out = {}
    for name, w in model.parameters().items():
        g = np.zeros_like(w)
        for i in np.ndindex(w.shape):
            keep = w[i]
            w[i] = keep + eps
            up, _ = softmax_cross_entropy(model.forward(x), labels)
            w[i] = keep - eps
            down, _ = softmax_cross_entropy(model.forward(x), labels)
            w[i] = keep
            g[i] = (up - down) / (2 * eps)
        out[name] = g
    return out


def max_gradient_error(model, x, labels, eps: float = 1e-6) -> float:
    """Largest |analytic - numerical| / max(1, |numerical|) over all parameters of a float64 copy of ``model``."""
    m64 = model.astype(np.float64)
    x = np.asarray(x, np.float64)
    _, analytic = m64.loss_and_gradients(x, labels)
    analytic = {k: v.copy() for k, v in analytic.items()}
    numeric = numerical_gradients(m64, x, labels, eps)
    return max(float(np.max(np.abs(analytic[k] - numeric[k]) / np.maximum(1.0, np.abs(numeric[k]))))
               for k in numeric)
