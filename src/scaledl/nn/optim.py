"""SGD with momentum and weight decay, and learning-rate schedules (constant, step decay, warm-up, cosine).

The update, for each parameter w with gradient g (PyTorch's convention):

    g <- g + weight_decay * w        (only for weights: arrays with 2 or more dimensions, not biases)
    v <- momentum * v + g
    w <- w - lr_t * v,   lr_t = lr * schedule(step)

A schedule is any function ``step -> factor``; the helpers below build the common ones.

>>> import numpy as np
>>> opt = SGD(lr=0.25, momentum=0.0)
>>> w = {"fc.W": np.ones((1, 1), np.float32)}
>>> opt.step(w, {"fc.W": np.full((1, 1), 2.0, np.float32)})
>>> float(w["fc.W"][0, 0])
0.5
>>> f = warmup(5, then=step_decay(every=100, gamma=0.1))
>>> [round(f(s), 2) for s in (0, 4, 5, 105)]
[0.2, 1.0, 1.0, 0.1]
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

Schedule = Callable[[int], float]


def constant() -> Schedule:
    return lambda step: 1.0


def step_decay(every: int, gamma: float = 0.1) -> Schedule:
    """Multiply the rate by ``gamma`` every ``every`` steps."""
    if every < 1:
        raise ValueError(f"every: expected a positive number of steps, got {every!r}")
    return lambda step: gamma ** (step // every)


def warmup(steps: int, then: Schedule | None = None) -> Schedule:
    """Linear warm-up over ``steps`` steps (factor (s+1)/steps), then ``then`` counted from the end of it.

    Goyal et al. 2017 warm up over 5 epochs when they scale the learning rate with a large minibatch.
    """
    if steps < 0:
        raise ValueError(f"steps: expected a non-negative number of warm-up steps, got {steps!r}")
    after = then or constant()
    return lambda step: (step + 1) / steps if step < steps else after(step - steps)


def cosine(total_steps: int, floor: float = 0.0) -> Schedule:
    """Half a cosine from 1 down to ``floor`` over ``total_steps`` steps."""
    if total_steps < 1:
        raise ValueError(f"total_steps: expected a positive integer, got {total_steps!r}")
    return lambda step: floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps))


class SGD:
    """Stochastic gradient descent with momentum and decoupled-from-bias weight decay.

    Args:
        lr: base learning rate (> 0).
        momentum: in [0, 1).
        weight_decay: L2 coefficient (>= 0), applied to weights (ndim >= 2) only.
        schedule: ``step -> factor`` multiplying ``lr``; constant by default.
    """

    def __init__(self, lr: float = 0.1, momentum: float = 0.9, weight_decay: float = 0.0,
                 schedule: Schedule | None = None):
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr: expected a positive learning rate, got {lr!r}")
        if not (0 <= momentum < 1):
            raise ValueError(f"momentum: expected a value in [0, 1), got {momentum!r}")
        if not weight_decay >= 0:
            raise ValueError(f"weight_decay: expected a non-negative value, got {weight_decay!r}")
        self.lr, self.momentum, self.weight_decay = float(lr), float(momentum), float(weight_decay)
        self.schedule = schedule or constant()
        self.velocity: dict[str, np.ndarray] = {}
        self.steps = 0

    def lr_at(self, step: int) -> float:
        return self.lr * self.schedule(step)

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        """Update ``params`` in place from ``grads`` (same names, same shapes)."""
        lr = np.float32(self.lr_at(self.steps))
        for name, w in params.items():
            g = grads[name]
            if g.shape != w.shape:
                raise ValueError(f"grads[{name!r}]: shape {g.shape} does not match the parameter's shape {w.shape}")
            if self.weight_decay and w.ndim >= 2:
                g = g + np.asarray(self.weight_decay, w.dtype) * w
            if self.momentum:
                v = self.velocity.get(name)
                if v is None:
                    v = self.velocity[name] = np.zeros_like(w)
                v *= np.asarray(self.momentum, w.dtype)
                v += g
                g = v
            w -= lr.astype(w.dtype) * g
        self.steps += 1
