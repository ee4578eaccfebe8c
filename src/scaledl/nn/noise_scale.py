"""The gradient noise scale: McCandlish et al.'s unbiased two-batch estimators and B_simple.

McCandlish, Kaplan, Amodei and the OpenAI Dota Team, "An Empirical Model of Large-Batch Training"
(arXiv:1812.06162, 2018), appendix A. With per-sample gradients of mean G and covariance Sigma, a batch of
B samples drawn independently (with replacement) has E|G_B|^2 = |G|^2 + tr(Sigma)/B. Two batch sizes
B_small < B_big give unbiased estimates of both terms:

    |G|^2     ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
    tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)

and the simple noise scale B_simple = tr(Sigma)/|G|^2, which predicts the critical batch size: below it,
doubling the batch nearly halves the steps; above it, it hardly helps. The ratio of two unbiased
estimates is biased, so, as the paper does, average each estimate over many pairs *before* dividing.
In data-parallel training the pair comes for free: one worker's gradient (B_small) and the all-reduced one.

>>> est = noise_scale(g_small_sq=5.0, g_big_sq=2.0, b_small=1, b_big=4)  # |G|^2 = 1, tr(Sigma) = 4
>>> est.g_sq, est.trace_sigma, est.b_simple
(1.0, 4.0, 4.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scaledl._args import count

__all__ = ["NoiseScale", "noise_scale", "measure_noise_scale"]


@dataclass(frozen=True)
class NoiseScale:
    """The estimates: |G|^2, tr(Sigma) and B_simple = tr(Sigma)/|G|^2 (inf when |G|^2 <= 0)."""
    g_sq: float
    trace_sigma: float
    b_simple: float


def noise_scale(g_small_sq, g_big_sq, b_small: int, b_big: int) -> NoiseScale:
    """The two-batch estimators from squared gradient norms (scalars, or arrays averaged first).

    Args:
        g_small_sq: |G_B_small|^2, the squared norm of gradients of batches of ``b_small`` samples.
        g_big_sq: |G_B_big|^2, likewise for ``b_big`` samples.
        b_small, b_big: the batch sizes, b_small < b_big.

    Raises:
        ValueError: batch sizes that are not positive integers with b_small < b_big, or norms that are
            negative, non-finite or empty.
    """
    b_small, b_big = count("b_small", b_small), count("b_big", b_big)
    if b_small >= b_big:
        raise ValueError(f"b_small must be smaller than b_big, got b_small={b_small}, b_big={b_big}")
    means = []
    for name, v in (("g_small_sq", g_small_sq), ("g_big_sq", g_big_sq)):
        a = np.asarray(v, dtype=np.float64)
        if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError(f"{name} must be finite non-negative squared norms, got {v!r}")
        means.append(float(a.mean()))
    small, big = means
    g_sq = (b_big * big - b_small * small) / (b_big - b_small)
    trace = (small - big) / (1 / b_small - 1 / b_big)
    return NoiseScale(g_sq, trace, trace / g_sq if g_sq > 0 else math.inf)


def measure_noise_scale(model, data, *, b_small: int, b_big: int, pairs: int = 32, seed: int = 0) -> NoiseScale:
    """Estimate the noise scale of ``model`` (at its current weights) on ``data``'s training set.

    Draws ``pairs`` batches of each size with replacement (the estimators assume independent samples),
    computes their mean-loss gradients, and feeds the squared norms (float64) to :func:`noise_scale`.
    """
    pairs = count("pairs", pairs)
    if count("b_small", b_small) >= count("b_big", b_big):
        raise ValueError(f"b_small must be smaller than b_big, got b_small={b_small}, b_big={b_big}")
    rng = np.random.default_rng(seed)
    sq = {b_small: [], b_big: []}
    for _ in range(pairs):
        for b in (b_small, b_big):
            idx = rng.integers(0, data.n_train, b)
            _, grads = model.loss_and_gradients(data.x_train[idx], data.y_train[idx])
            sq[b].append(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads.values()))
    return noise_scale(sq[b_small], sq[b_big], b_small, b_big)
