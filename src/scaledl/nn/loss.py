"""Softmax cross-entropy, the loss every classifier in the book trains on, and accuracy.

The softmax is computed in float64 and its gradient returned in float32 (or the logits' wider dtype),
whatever precision the layers emulate: exponentials of half-precision logits overflow and underflow easily,
which is why mixed-precision recipes keep the softmax in FP32.

>>> import numpy as np
>>> loss, dlogits = softmax_cross_entropy(np.zeros((2, 4), np.float32), np.array([0, 3]))
>>> round(float(loss), 4), dlogits.shape          # log(4) = 1.3863 for uniform logits
(1.3863, (2, 4))
"""

from __future__ import annotations

import numpy as np

from scaledl.nn.ops import softmax_cross_entropy_rows


def check_labels(labels, n_classes: int, n_samples: int | None = None, *, name: str = "labels") -> np.ndarray:
    """``labels`` as an int64 vector, or a ValueError naming what is wrong with it."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name}: expected a 1-D integer array, got shape {labels.shape} dtype {labels.dtype}")
    if n_samples is not None and labels.shape[0] != n_samples:
        raise ValueError(f"{name}: shape {labels.shape} does not match the {n_samples} samples "
                         f"(expected ({n_samples},))")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        bad = labels[(labels < 0) | (labels >= n_classes)][0]
        raise ValueError(f"{name}: value {int(bad)} is outside the class range [0, {n_classes - 1}]")
    return labels.astype(np.int64, copy=False)


def softmax_cross_entropy(logits: np.ndarray, labels) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of ``softmax(logits)`` against integer labels, and its gradient.

    Args:
        logits: (batch, n_classes) scores.
        labels: (batch,) integers in [0, n_classes).

    Returns:
        ``(loss, dlogits)``: the mean loss as a Python float and d loss / d logits, shape (batch, n_classes),
        equal to ``(softmax(logits) - onehot(labels)) / batch``.

    Raises:
        ValueError: logits not 2-D, labels of another length, or a label outside the class range.
    """
    logits = np.asarray(logits)
    if logits.ndim != 2:
        raise ValueError(f"logits: expected shape (batch, n_classes), got {logits.shape}")
    n, c = logits.shape
    labels = check_labels(labels, c, n)
    z = logits.astype(np.promote_types(logits.dtype, np.float32), copy=False)
    # Log-sum-exp per row in float64 with exp and log built from basic operations (scaledl.nn.ops):
    # NumPy's float32 exp and log differ in the last bit between SIMD paths, and training amplifies that.
    loss, dlogits = softmax_cross_entropy_rows(z, labels)
    return float(loss), dlogits


def accuracy(logits: np.ndarray, labels) -> float:
    """Fraction of rows whose largest logit is at the label."""
    logits = np.asarray(logits)
    labels = check_labels(labels, logits.shape[1], logits.shape[0])
    return float((logits.argmax(axis=1) == labels).mean())
