"""A synthetic sequence task for CTC: handwritten digits laid side by side, read left to right.

Each *strip* is ``digits_per_strip`` 8x8 digit images from :func:`scaledl.nn.digits`, separated by random gaps
of empty columns, so where one digit ends and the next begins is not given: exactly the situation CTC is for.
A model reads the strip as a sequence of frames (a window of ``window`` columns, moved ``stride`` columns at a
time), gives each frame log-probabilities over 11 classes (blank = 0, digit ``d`` = class ``d + 1``), and is
trained with :func:`scaledl.nn.ctc.ctc_loss` on the digit sequence alone. Greedy decoding (most likely class
per frame, repeats merged, blanks dropped) reads the strip back.

>>> task = digit_strips(n_train=300, n_test=100, seed=0)
>>> task.x_train.shape, task.y_train[0]          # (strips, frames, 8 x 8 window features): 3 digits each
((300, 13, 64), array([1, 3, 5]))
>>> best = [2, 2, 0, 2, 4, 4]                    # most likely class per frame: digit 1, 1, blank, 1, 3, 3
>>> greedy_decode(np.log(np.eye(N_CLASSES)[best] + 1e-3))   # the blank keeps the two 1s apart
[1, 1, 3]

Training (:func:`train_ctc_reader`, 300 strips, 12 epochs, a few seconds) reads about 70 % of unseen strips
exactly right; chance is 1 in 1,000.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scaledl.nn.ctc import ctc_loss

BLANK = 0
N_CLASSES = 11  # blank + ten digits


@dataclass(frozen=True)
class StripTask:
    """Framed strips and their digit sequences. ``x_*``: (strips, frames, window x 8) float32."""

    x_train: np.ndarray
    y_train: np.ndarray  # (strips, digits_per_strip): the digits, 0..9
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_frames(self) -> int:
        return self.x_train.shape[1]


def _strips(images, labels, n, k, max_gap, rng):
    width = 8 * k + max_gap * (k + 1)  # every strip padded to the widest possible
    out = np.zeros((n, 8, width), np.float32)
    picks = rng.integers(0, len(images), size=(n, k))
    for i in range(n):
        col = rng.integers(0, max_gap + 1)
        for j in range(k):
            out[i, :, col:col + 8] = images[picks[i, j]]
            col += 8 + rng.integers(0, max_gap + 1)
    return out, labels[picks]


def _frames(strips, window, stride):
    n, h, w = strips.shape
    starts = range(0, w - window + 1, stride)
    return np.stack([strips[:, :, s:s + window].reshape(n, h * window) for s in starts], axis=1)


def digit_strips(n_train: int = 1000, n_test: int = 300, *, digits_per_strip: int = 3, max_gap: int = 2,
                 window: int = 8, stride: int = 2, seed: int = 0) -> StripTask:
    """Strips built from the digits' own train and test images (no test image appears in a training strip)."""
    from scaledl.nn.data import digits

    if not 1 <= window <= 8 * digits_per_strip or stride < 1:
        raise ValueError(f"window must be in [1, {8 * digits_per_strip}] and stride >= 1, got window={window}, "
                         f"stride={stride}")
    d = digits()
    rng = np.random.default_rng(seed)
    xs = d.x_train.reshape(-1, 8, 8), d.x_test.reshape(-1, 8, 8)
    tr, ytr = _strips(xs[0], d.y_train, n_train, digits_per_strip, max_gap, rng)
    te, yte = _strips(xs[1], d.y_test, n_test, digits_per_strip, max_gap, rng)
    return StripTask(_frames(tr, window, stride), ytr, _frames(te, window, stride), yte)


def strip_image(frames: np.ndarray, *, window: int = 8, stride: int = 2) -> np.ndarray:
    """The 8-row strip back from its frames (one strip's ``(frames, 8 x window)`` features), for drawing.

    Frame ``f`` covers columns ``f stride .. f stride + window - 1``; its first ``stride`` columns are new.
    """
    n_frames = frames.shape[0]
    if frames.shape != (n_frames, 8 * window) or not 1 <= stride <= window:
        raise ValueError(f"frames must have shape (frames, {8 * window}) for window={window} and 1 <= stride <= "
                         f"window, got shape {frames.shape} and stride={stride}")
    f = frames.reshape(n_frames, 8, window)
    return np.concatenate([f[i, :, :stride] for i in range(n_frames - 1)] + [f[-1]], axis=1)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64 with :mod:`scaledl.nn.ops`'s exp and log (the same bits on every CPU)."""
    from scaledl.nn import ops

    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = ops.exp(z)
    total = e[..., :1].copy()
    for k in range(1, e.shape[-1]):  # classes added first to last: one fixed order
        total += e[..., k:k + 1]
    return z - ops.log(total)


def greedy_decode(log_probs: np.ndarray) -> list[int]:
    """Best class per frame, repeats merged, blanks dropped, classes turned back into digits."""
    best = np.argmax(log_probs, axis=-1)
    keep = np.concatenate(([True], best[1:] != best[:-1])) & (best != BLANK)
    return [int(c) - 1 for c in best[keep]]


def sequence_accuracy(model, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of strips whose greedy decoding is exactly their digit sequence."""
    n, T, F = x.shape
    lp = log_softmax(model.predict(x.reshape(n * T, F))).reshape(n, T, N_CLASSES)
    return float(np.mean([greedy_decode(lp[i]) == list(y[i]) for i in range(n)]))


def train_ctc_reader(task: StripTask, *, hidden: int = 128, epochs: int = 10, batch_size: int = 32,
                     lr: float = 0.05, momentum: float = 0.9, seed: int = 0):
    """Train a per-frame MLP (window features -> hidden -> 11 classes) with the CTC loss.

    Each frame's logits go through a log-softmax; the CTC gradient with respect to the log-probabilities
    becomes ``softmax + grad`` with respect to the logits (see :mod:`scaledl.nn.ctc`), averaged over the strips
    of the minibatch, and back-propagates through the model as usual.

    Returns:
        ``(model, history)``: history holds one dict per epoch (mean training CTC loss, test sequence accuracy).
    """
    from scaledl.nn import ops
    from scaledl.nn.model import mlp
    from scaledl.nn.optim import SGD

    n, T, F = task.x_train.shape
    model = mlp([F, hidden, N_CLASSES], seed=seed)
    opt = SGD(lr=lr, momentum=momentum)
    rng = np.random.default_rng(seed)
    history = []
    for epoch in range(epochs):
        order = rng.permutation(n)
        losses = []
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            logits = model.forward(task.x_train[idx].reshape(len(idx) * T, F))
            lp = log_softmax(logits).reshape(len(idx), T, N_CLASSES)
            dlogits = np.empty_like(lp)
            for i, strip in enumerate(idx):
                nll, grad = ctc_loss(lp[i], task.y_train[strip] + 1, blank=BLANK)
                losses.append(nll)
                dlogits[i] = (ops.exp(lp[i]) + grad) / len(idx)
            model.backward(dlogits.reshape(len(idx) * T, N_CLASSES).astype(logits.dtype))
            opt.step(model.parameters(), model.gradients())
        history.append({"epoch": epoch + 1, "train_ctc_loss": float(np.mean(losses)),
                        "test_sequence_accuracy": sequence_accuracy(model, task.x_test, task.y_test)})
    return model, history
