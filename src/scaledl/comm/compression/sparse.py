"""Sparsifying compressors: top-k with local accumulation, and Deep Gradient Compression.

Top-k with local accumulation (error feedback): add the gradient to what was not sent before, send the k
largest magnitudes, keep the rest. What was sent plus the residual is then always the sum of the gradients.

DGC (Lin, Han, Mao, Wang and Dally, "Deep Gradient Compression: Reducing the Communication Bandwidth for
Distributed Training", ICLR 2018) adds four parts to it, each switchable for ablations:

- momentum correction: accumulate the velocity, u <- m u + g, v <- v + u, send sparse(v), and run the
  optimizer *without* momentum (``SGD(momentum=0)``): the momentum lives here;
- local gradient clipping: scale each tensor's gradient to norm at most ``clip_norm`` N^(-1/2), N workers,
  before it is accumulated (the sum of N such gradients then has the norm budget of one);
- momentum factor masking: zero u and v where sent, so stale momentum does not push a coordinate again;
- sparsity warm-up: density ratio^((e + 1)/(E + 1)) in epoch e < E (the reference code's exponential
  schedule); with ratio 0.001 and E = 4 that is 74.9 %, 93.7 %, 98.4 %, 99.6 %, then 99.9 % sparsity
  (the paper lists 75, 93.75, 98.4375, 99.6, 99.9 %, whose first three are 1 - 4^-(e+1) exactly; the two
  schedules differ by at most 0.12 points, in epoch 0).

Top-k selection is exact (the k largest; among equal magnitudes at the threshold the lowest indices, so the
choice does not depend on which partition algorithm NumPy dispatches to on this CPU) or ``sampled``: a
threshold from the k-th largest of a random sample (``sample_fraction``, 1 % by default as in the paper), then
the k largest of the candidates above it
when there are more than k, or just the candidates when there are fewer (the rest accumulate locally).

With nothing dropped (ratio 1) and masking off, DGC is dense momentum SGD exactly: v = u every step. With
masking on it zeroes u wherever it sends, so at ratio 1 it is plain SGD: masking only makes sense with
sparsity.

>>> import numpy as np
>>> c = TopK(ratio=0.5)
>>> c.compress(np.float32([1, -4, 2, 0.5])).decode().tolist(), c.residual.tolist()
([0.0, -4.0, 2.0, 0.0], [1.0, 0.0, 0.0, 0.5])
>>> [round(100 * (1 - DGC.warmup_density(0.001, e, 4)), 1) for e in range(5)]
[74.9, 93.7, 98.4, 99.6, 99.9]
"""

from __future__ import annotations

import math

import numpy as np

from scaledl.comm.compression.base import Compressor, check_ratio
from scaledl.comm.compression.message import SparseMessage

__all__ = ["TopK", "DGC", "select_topk"]

DGC_SAMPLE_FRACTION = 0.01  # Lin et al. 2018, sec. 3 (and their code): the threshold from a ~1 % sample


def select_topk(magnitude: np.ndarray, k: int, rng=None, sample_fraction: float | None = None) -> np.ndarray:
    """Sorted flat indices of (about) the ``k`` largest entries of ``magnitude`` (1-D, non-negative).

    Exact when ``sample_fraction`` is None; else the sampled threshold of the module docstring, which may
    return fewer than k indices, never more.

    >>> select_topk(np.array([3.0, 1.0, 4.0, 1.0, 5.0]), 2).tolist()
    [2, 4]
    """
    n = magnitude.size
    if k >= n:
        return np.arange(n, dtype=np.uint32)
    if sample_fraction is None:
        idx = _largest(magnitude, k)
    else:
        m = min(n, max(k, math.ceil(sample_fraction * n)))
        sample = magnitude[rng.integers(0, n, m)]
        k_sample = min(m, max(1, math.ceil(k * m / n)))
        threshold = np.partition(sample, m - k_sample)[m - k_sample]
        idx = np.flatnonzero(magnitude >= threshold)
        if idx.size > k:
            idx = idx[_largest(magnitude[idx], k)]
    return np.sort(idx).astype(np.uint32)


def _largest(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest of ``values`` (0 < k < size), ties at the k-th largest value broken
    towards the lowest index. ``np.argpartition`` breaks ties however its algorithm happens to, and NumPy
    picks that algorithm by CPU (SIMD sorting networks where the CPU has them): equal magnitudes are common
    in gradients (two input pixels that are equal over a whole batch give equal weight gradients), and a
    different tie choice sends different elements and changes the training from there on."""
    t = np.partition(values, values.size - k)[values.size - k]  # the k-th largest value: the same everywhere
    above = np.flatnonzero(values > t)
    return np.concatenate([above, np.flatnonzero(values == t)[:k - above.size]])


class TopK(Compressor):
    """Top-k sparsification with local accumulation (error feedback).

    Args:
        ratio: fraction of the elements sent, in (0, 1]; k = ceil(ratio n), at least 1.
        sampled: pick k by the sampled threshold instead of exactly.
        seed: for the sample.
    """

    name = "topk"
    error_feedback = True

    def __init__(self, ratio: float = 0.01, *, sampled: bool = False, sample_fraction: float = DGC_SAMPLE_FRACTION,
                 seed=0):
        super().__init__(seed)
        self.ratio = check_ratio(ratio)
        self.sample_fraction = check_ratio(sample_fraction, "sample_fraction") if sampled else None

    def _compress(self, g, key):
        acc = self._state(self.residuals, key, g)
        acc += g
        flat = acc.reshape(-1)
        idx = select_topk(np.abs(flat), self._k(self.ratio, flat.size), self.rng, self.sample_fraction)
        msg = SparseMessage(g.shape, idx, flat[idx].copy())
        flat[idx] = 0
        return msg


class DGC(Compressor):
    """Deep Gradient Compression (see the module docstring); use with ``SGD(momentum=0)`` when
    ``momentum_correction`` is on.

    Args:
        ratio: final density (fraction sent) in (0, 1]; 0.001 is the paper's 99.9 % sparsity.
        momentum: m of the momentum correction, in [0, 1).
        momentum_correction: accumulate u (True) or the raw gradient (False, then use an optimizer with
            momentum).
        local_accumulation: keep what was not sent (True) or drop it (False).
        masking: momentum factor masking.
        clip_norm: local clipping threshold before the N^-1/2 scaling; None switches clipping off.
        workers: N, for the clipping threshold.
        warmup_epochs: E epochs of exponentially rising sparsity (0: off); needs ``steps_per_epoch``.
        steps_per_epoch: compress() calls per key in one epoch.
        sampled, sample_fraction, seed: top-k by the sampled threshold.
    """

    name = "dgc"
    error_feedback = True

    def __init__(self, ratio: float = 0.001, *, momentum: float = 0.9, momentum_correction: bool = True,
                 local_accumulation: bool = True, masking: bool = True, clip_norm: float | None = None,
                 workers: int = 1, warmup_epochs: int = 4, steps_per_epoch: int | None = None,
                 sampled: bool = False, sample_fraction: float = DGC_SAMPLE_FRACTION, seed=0):
        super().__init__(seed)
        self.ratio = check_ratio(ratio)
        if not (0 <= momentum < 1):
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        if clip_norm is not None and not (clip_norm > 0 and math.isfinite(clip_norm)):
            raise ValueError(f"clip_norm must be a positive finite norm or None (no clipping), got {clip_norm!r}")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer (N in the N^-1/2 clipping), got {workers!r}")
        if not isinstance(warmup_epochs, int) or warmup_epochs < 0:
            raise ValueError(f"warmup_epochs must be a non-negative integer, got {warmup_epochs!r}")
        if warmup_epochs and (not isinstance(steps_per_epoch, int) or steps_per_epoch < 1):
            raise ValueError(f"steps_per_epoch must be a positive integer when warmup_epochs={warmup_epochs} "
                             f"(the warm-up counts epochs), got {steps_per_epoch!r}; or set warmup_epochs=0")
        self.momentum, self.momentum_correction = float(momentum), bool(momentum_correction)
        self.local_accumulation, self.masking = bool(local_accumulation), bool(masking)
        self.clip_norm, self.workers = clip_norm, workers
        self.warmup_epochs, self.steps_per_epoch = warmup_epochs, steps_per_epoch
        self.sample_fraction = check_ratio(sample_fraction, "sample_fraction") if sampled else None
        self.velocity: dict[str, np.ndarray] = {}  # u, per key; self.residuals holds v, what is not yet sent

    @staticmethod
    def warmup_density(ratio: float, epoch: int, warmup_epochs: int) -> float:
        """Density in ``epoch``: ratio^((epoch + 1)/(warmup_epochs + 1)) during the warm-up, then ratio."""
        return ratio ** ((epoch + 1) / (warmup_epochs + 1)) if epoch < warmup_epochs else ratio

    def density(self, key: str = "") -> float:
        """The fraction the next compress() of ``key`` sends."""
        if not self.warmup_epochs:
            return self.ratio
        return self.warmup_density(self.ratio, self.calls.get(key, 0) // self.steps_per_epoch, self.warmup_epochs)

    def _compress(self, g, key):
        if self.clip_norm is not None:
            limit = self.clip_norm / math.sqrt(self.workers)
            norm = float(np.sqrt(np.sum(np.square(g, dtype=np.float64))))
            if norm > limit:
                g = g * g.dtype.type(limit / norm)
        if self.momentum_correction:
            u = self._state(self.velocity, key, g)
            u *= u.dtype.type(self.momentum)
            u += g
        else:
            u = g
        v = self._state(self.residuals, key, g)
        if self.local_accumulation:
            v += u
        else:
            v[...] = u
        flat = v.reshape(-1)
        idx = select_topk(np.abs(flat), self._k(self.density(key), flat.size), self.rng, self.sample_fraction)
        msg = SparseMessage(g.shape, idx, flat[idx].copy())
        if self.local_accumulation:
            flat[idx] = 0
        else:
            flat[...] = 0
        if self.masking and self.momentum_correction:
            u.reshape(-1)[idx] = 0
        return msg
