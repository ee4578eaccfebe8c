"""A resolution curriculum on the digits: learn from 4x4 images first, then grow the network to 8x8.

Progressive GANs (Karras, Aila, Laine and Lehtinen, "Progressive Growing of GANs for Improved Quality,
Stability, and Variation", ICLR 2018) train a generator and discriminator at 4x4 pixels, then add layers that
double the resolution, up to 1024x1024; Dally (ScaledML 2018) calls it a curriculum: "we learn the simple
things first before going to the more complex", and a faster way to a given result than training the full
network from scratch. This module runs the same idea on the book's classifier, small enough to repeat over
seeds:

* stage 1 trains ``mlp([16, hidden, 10])`` on the digits average-pooled to 4x4 (each input is the mean of a
  2x2 block of pixels);
* the network is then *grown* to 8x8 inputs without changing what it computes: with the pooling matrix
  ``P`` (64 x 16, ``P[i, j] = 1/4`` when pixel ``i`` lies in block ``j``), ``pool(x) @ W4 = x @ (P @ W4)``, so
  the first layer becomes ``W8 = P @ W4`` (dividing by 4 is exact in binary floating point) and the other
  layers are copied;
* stage 2 trains the grown network on the full 8x8 digits.

The cost is counted in training FLOPs (6 per weight per sample: forward, and two products backward), so a
4x4 step, whose first layer is 4 times smaller, is cheaper than an 8x8 one, as ProGAN's low-resolution stages
are.

>>> x = np.arange(64, dtype=np.float32).reshape(1, 64)
>>> pool2(x).reshape(4, 4)[0].tolist()              # (0 + 1 + 8 + 9) / 4, ...
[4.5, 6.5, 8.5, 10.5]
>>> bool(np.array_equal(pool2(x), x @ pooling_matrix()))
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from scaledl.nn.data import Dataset
from scaledl.nn.model import mlp


def pooling_matrix() -> np.ndarray:
    """``P`` (64, 16) with ``x_8x8 @ P`` the 2x2 average pool of flattened 8x8 images (row-major)."""
    P = np.zeros((64, 16), np.float32)
    for r in range(8):
        for c in range(8):
            P[8 * r + c, 4 * (r // 2) + c // 2] = 0.25
    return P


def pool2(x: np.ndarray) -> np.ndarray:
    """Average 2x2 blocks of flattened 8x8 images: (n, 64) -> (n, 16), added in one fixed order."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] != 64:
        raise ValueError(f"x must have shape (n, 64) (flattened 8x8 images), got shape {x.shape}")
    im = x.reshape(-1, 4, 2, 4, 2)
    s = ((im[:, :, 0, :, 0] + im[:, :, 0, :, 1]) + im[:, :, 1, :, 0]) + im[:, :, 1, :, 1]
    return (s * x.dtype.type(0.25)).reshape(-1, 16)


def low_resolution(data: Dataset) -> Dataset:
    """The digits average-pooled to 4x4 (train and test)."""
    return replace(data, x_train=pool2(data.x_train), x_test=pool2(data.x_test), name=f"{data.name} 4x4",
                   image_shape=(1, 4, 4))


def grow(model4, hidden: list[int], n_classes: int = 10):
    """The 8x8 network that computes on ``x`` exactly what ``model4`` computes on ``pool2(x)``."""
    model8 = mlp([64, *hidden, n_classes], seed=0)
    for small, big in zip(model4.layers, model8.layers):
        if not hasattr(small, "params"):
            continue
        for k, v in small.params.items():
            big.params[k] = v.copy()
    first = model8.layers[0]
    first.params["W"] = pooling_matrix() @ model4.layers[0].params["W"]  # exact: each entry is W4 / 4
    return model8


def training_flops(sizes: list[int], samples: int) -> int:
    """FLOPs to train an MLP of ``sizes`` on ``samples`` samples: 6 per weight per sample."""
    return 6 * samples * sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))


@dataclass(frozen=True)
class Run:
    """Test accuracy (on the full-resolution test set) against cumulative training FLOPs."""

    flops: np.ndarray
    accuracy: np.ndarray
    switch_flops: float | None  # where the curriculum grew the network (None: no curriculum)

    def flops_to(self, target: float) -> float | None:
        """FLOPs at the first evaluation reaching ``target`` accuracy, or None."""
        hit = np.nonzero(self.accuracy >= target)[0]
        return float(self.flops[hit[0]]) if hit.size else None


def _check(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {v!r}")


def run(data: Dataset, *, low_steps: int, high_steps: int, hidden: int = 64, batch_size: int = 32,
        lr: float = 0.05, eval_every: int = 25, seed: int = 0) -> Run:
    """``low_steps`` at 4x4 then ``high_steps`` at 8x8 (``low_steps=0``: no curriculum, same seed)."""
    from scaledl.nn.optim import SGD
    from scaledl.nn.train import train

    _check("low_steps", low_steps)
    _check("high_steps", high_steps)
    if low_steps + high_steps == 0:
        raise ValueError("low_steps + high_steps must be positive, got 0 and 0")
    flops, acc, switch = [0.0], [], None
    if low_steps:
        small = mlp([16, hidden, data.n_classes], seed=seed)
        acc.append(_accuracy(small, low_resolution(data)))
        h = train(small, low_resolution(data), steps=low_steps, batch_size=batch_size,
                  optimizer=SGD(lr=lr, momentum=0.9), seed=seed, eval_every=eval_every)
        per_step = training_flops([16, hidden, data.n_classes], batch_size)
        flops += [per_step * s for s in h.eval_step]
        acc += h.test_accuracy
        switch = flops[-1]
        model = grow(small, [hidden], data.n_classes)
    else:
        model = mlp([64, hidden, data.n_classes], seed=seed)
        acc.append(_accuracy(model, data))
    if high_steps:
        h = train(model, data, steps=high_steps, batch_size=batch_size, optimizer=SGD(lr=lr, momentum=0.9),
                  seed=seed + 1000 if low_steps else seed, eval_every=eval_every)
        per_step = training_flops([64, hidden, data.n_classes], batch_size)
        base = flops[-1]
        flops += [base + per_step * s for s in h.eval_step]
        acc += h.test_accuracy
    return Run(np.array(flops), np.array(acc), switch)


def _accuracy(model, data):
    from scaledl.nn.train import evaluate

    return evaluate(model, data.x_test, data.y_test)[1]
