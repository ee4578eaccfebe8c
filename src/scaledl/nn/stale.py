"""Asynchronous SGD simulated by its one defining flaw: gradients computed on stale weights.

With N asynchronous workers (a parameter server without barriers), each update applies a gradient that
was computed on weights about N - 1 updates old. The standard model of this (e.g. Lian, Huang, Li and Liu,
"Asynchronous Parallel Stochastic Gradient for Nonconvex Optimization", NeurIPS 2015) is a fixed delay tau:

    w_{t+1} = w_t - lr g(w_{t - tau}),   with w_s = w_0 for s < 0.

:class:`StaleGradients` does exactly that as a ``grad_transform`` of :func:`scaledl.nn.train`: it queues
every step's gradient (computed on the current weights) and returns the one computed tau steps ago; for
the first tau steps that is the gradient at w_0. ``staleness=0`` is synchronous SGD, bit for bit.
A step skipped for non-finite gradients does not reach the transform, so it does not advance the queue.

>>> import numpy as np
>>> stale = StaleGradients(2)
>>> [float(stale({"w": np.float32([t])})["w"][0]) for t in range(5)]
[0.0, 0.0, 0.0, 1.0, 2.0]
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["StaleGradients", "train_stale"]


class StaleGradients:
    """A ``grad_transform`` delaying gradients by ``staleness`` steps (see the module docstring)."""

    def __init__(self, staleness: int):
        if isinstance(staleness, bool) or not isinstance(staleness, (int, np.integer)) or staleness < 0:
            raise ValueError(f"staleness must be a non-negative integer number of steps, got {staleness!r}")
        self.staleness = int(staleness)
        self.queue: deque = deque()

    def __call__(self, grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.staleness == 0:
            return grads
        # copy: the model reuses its gradient arrays on the next backward pass
        self.queue.append({k: v.copy() for k, v in grads.items()})
        if len(self.queue) > self.staleness:
            return self.queue.popleft()
        return self.queue[0]  # still filling: the gradient at w_0, as w_s = w_0 for s < 0


def train_stale(model, data, *, staleness: int, **train_options):
    """:func:`scaledl.nn.train` with every gradient ``staleness`` steps old; returns its History.

    >>> from scaledl.nn import SGD, mlp, teacher_student
    >>> data = teacher_student(400, 200, seed=0)
    >>> h = train_stale(mlp([16, 32, 4], seed=0), data, staleness=4, steps=60, batch_size=32,
    ...                 optimizer=SGD(lr=0.1, momentum=0.0))
    >>> h.steps
    60
    """
    from scaledl.nn.train import train

    if "grad_transform" in train_options:
        raise ValueError("grad_transform: train_stale sets its own; compose yours into StaleGradients instead")
    return train(model, data, grad_transform=StaleGradients(staleness), **train_options)
