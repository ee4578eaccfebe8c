"""The compressor interface: per-worker state, argument checks, and the residual of error feedback.

A compressor belongs to one worker. ``compress(grad, key)`` encodes that worker's gradient of the tensor
named ``key`` (one state per key: DGC's velocity of ``fc1.W`` is not that of ``fc1.b``) and returns a
:class:`~scaledl.comm.compression.message.Message`. Error-feedback compressors keep what they did not send
in ``residuals[key]``; ``residual`` is all of them flattened in the order the keys were first seen (just the
array when one tensor is compressed).

Non-finite gradients are *refused*: ``compress`` raises ValueError and leaves the state untouched, because
one inf folded into a residual or a velocity would poison every later message. The data-parallel reducer
(:mod:`scaledl.comm.compression.reducer`) checks first and *skips* compression for such a step.

>>> import numpy as np
>>> c = Identity()
>>> c.compress(np.float32([1, 2])).nbytes
8
>>> c.compress(np.float32([1, np.inf]))
Traceback (most recent call last):
...
ValueError: grad: 1 of 2 values are not finite: refused, as they would poison the compressor's state
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from scaledl.comm.compression.message import DenseMessage, Message

__all__ = ["Compressor", "Identity", "check_ratio", "check_grad"]


def check_ratio(ratio, name: str = "ratio") -> float:
    """``ratio`` (the fraction of elements sent) as a float in (0, 1], else ValueError/TypeError."""
    if isinstance(ratio, bool) or not isinstance(ratio, numbers.Real):
        raise TypeError(f"{name} must be a number in (0, 1] (the fraction of elements sent), got {ratio!r}")
    if not (0 < ratio <= 1):
        raise ValueError(f"{name} must be in (0, 1] (the fraction of elements sent), got {ratio!r}")
    return float(ratio)


def check_grad(grad) -> np.ndarray:
    """``grad`` as a floating-point ndarray with only finite values, else TypeError/ValueError."""
    g = np.asarray(grad)
    if not np.issubdtype(g.dtype, np.floating):
        raise TypeError(f"grad: expected a floating-point array, got dtype {g.dtype}")
    bad = g.size - int(np.isfinite(g).sum())
    if bad:
        raise ValueError(f"grad: {bad} of {g.size} values are not finite: refused, as they would poison the "
                         f"compressor's state")
    return g


class Compressor:
    """One worker's compressor. Subclasses implement ``_compress(g, key) -> Message``."""

    name = "base"
    error_feedback = False

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.residuals: dict[str, np.ndarray] = {}
        self.calls: dict[str, int] = {}  # compress() calls per key: a step count for schedules (DGC warm-up)

    def compress(self, grad, key: str = "") -> Message:
        """Encode ``grad`` (this worker's gradient of tensor ``key``); see the module docstring."""
        g = check_grad(grad)
        msg = self._compress(g, key)
        self.calls[key] = self.calls.get(key, 0) + 1
        return msg

    def _compress(self, g: np.ndarray, key: str) -> Message:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def residual(self) -> np.ndarray:
        """What error feedback has not sent yet, flattened over keys (AttributeError without error feedback)."""
        if not self.error_feedback:
            raise AttributeError(f"the {self.name!r} compressor keeps no residual (no error feedback)")
        if len(self.residuals) == 1:
            return next(iter(self.residuals.values()))
        return np.concatenate([r.ravel() for r in self.residuals.values()]) if self.residuals else np.zeros(0)

    def _state(self, store: dict, key: str, like: np.ndarray) -> np.ndarray:
        s = store.get(key)
        if s is None or s.shape != like.shape:
            if s is not None:
                raise ValueError(f"grad: shape {like.shape} for key {key!r} differs from the shape {s.shape} "
                                 f"this compressor saw before; use one key per tensor")
            s = store[key] = np.zeros_like(like)
        return s

    @staticmethod
    def _k(ratio: float, n: int) -> int:
        """Elements to send: ceil(ratio n), at least one (a nonempty tensor always sends something)."""
        return min(n, max(1, math.ceil(ratio * n))) if n else 0


class Identity(Compressor):
    """No compression: the dense float32 tensor (the baseline every ratio is measured against)."""

    name = "none"

    def _compress(self, g, key):
        return DenseMessage(g.copy())
