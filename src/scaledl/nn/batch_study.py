"""Large-batch training studies for chapter 16: steps to a target against batch size, warm-up, staleness.

Shallue, Lee, Antognini, Sohl-Dickstein, Frostig and Dahl, "Measuring the Effects of Data Parallelism on
Neural Network Training" (JMLR 2019) measure, for each batch size B, the fewest training steps that reach
a target (the learning rate tuned per batch size). The curve has three regimes: perfect scaling (doubling
B halves the steps), diminishing returns, and maximal data parallelism (more B no longer helps).
McCandlish et al. (2018) model it as S = S_min (1 + B_noise / B); :func:`fit_steps_model` fits that.

Everything here trains with :func:`scaledl.nn.train`, so every number is bitwise reproducible on any CPU.

>>> from scaledl.nn import digits
>>> r = run(digits(), batch_size=64, lr=0.05, target=0.9, max_steps=200)
>>> r.reached, r.steps_to_target <= 200
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scaledl.nn.large_batch import gradual_warmup
from scaledl.nn.model import mlp
from scaledl.nn.optim import SGD
from scaledl.nn.stale import StaleGradients
from scaledl.nn.train import train
from scaledl._args import count

__all__ = ["SIZES", "Run", "run", "sweep", "best_per_batch", "fit_steps_model", "ordered_sum", "bits_differ",
           "shuffled_sum_reducer", "implied_throughput"]

SIZES = (64, 64, 10)   # the digits MLP of this chapter: small enough that a run takes a fraction of a second
DIVERGED_LOSS = 1e3    # a minibatch loss above this (or not finite) counts as divergence and stops the run


@dataclass(frozen=True)
class Run:
    """One training run: the settings and what it measured."""
    batch_size: int
    lr: float
    seed: int
    steps: int                     # steps taken (stopped at the target, at max_steps, or at divergence)
    steps_to_target: int | None    # first evaluation reaching the target (None: never)
    final_accuracy: float
    diverged: bool
    warmup_epochs: float = 0.0
    staleness: int = 0
    epochs: float = 0.0            # steps taken / steps per epoch (a trailing partial batch is a step)
    eval_step: tuple = field(default=(), repr=False)
    test_accuracy: tuple = field(default=(), repr=False)

    @property
    def reached(self) -> bool:
        return self.steps_to_target is not None


def run(data, *, batch_size: int, lr: float, max_steps: int, target: float | None = None, momentum: float = 0.9,
        warmup_epochs: float = 0.0, base_batch_size: int | None = None, staleness: int = 0, seed: int = 0,
        sizes=SIZES, eval_every: int | None = None, workers: int = 1, reducer=None) -> Run:
    """Train a fresh ``mlp(sizes, seed=seed)`` on ``data`` and report steps to ``target`` test accuracy.

    Args:
        batch_size, lr, momentum: the SGD settings (``lr`` is the rate after warm-up).
        max_steps: at most this many steps.
        target: stop at the first evaluation with test accuracy >= target (None: run ``max_steps``).
        warmup_epochs: Goyal et al.'s gradual warm-up from ``lr * base_batch_size / batch_size`` up to ``lr``
            over this many epochs (0: none). ``base_batch_size`` defaults to 32.
        staleness: gradients delayed by this many steps (asynchronous SGD, :mod:`scaledl.nn.stale`).
        eval_every: test-set evaluation interval in steps (default: about 1/32 epoch, at least 1, so small
            and large batches are timed at similar resolution in samples, and large ones at every step).
        workers, reducer: simulated data-parallel workers and their reducer (see :func:`scaledl.nn.train`).

    Raises:
        ValueError: non-positive batch size or max_steps, a learning rate that is not positive, a
            negative warm-up, or a target outside (0, 1].
    """
    batch_size, max_steps = count("batch_size", batch_size), count("max_steps", max_steps)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be a positive finite learning rate, got {lr!r}")
    if target is not None and not (0 < target <= 1):
        raise ValueError(f"target must be an accuracy in (0, 1], got {target!r}")
    if not (warmup_epochs >= 0 and math.isfinite(warmup_epochs)):
        raise ValueError(f"warmup_epochs must be a non-negative number of epochs, got {warmup_epochs!r}")
    b = min(batch_size, data.n_train)
    steps_per_epoch = -(-data.n_train // b)
    schedule = None
    if warmup_epochs > 0:
        base = base_batch_size or 32
        schedule = gradual_warmup(b / base, max(1, round(warmup_epochs * steps_per_epoch)))
    optimizer = SGD(lr=float(lr), momentum=momentum, schedule=schedule)
    every = eval_every or max(1, steps_per_epoch // 32)
    diverged = []

    def stop_if_diverged(step, model, hist):
        loss = hist.step_loss[-1]
        if not math.isfinite(loss) or loss > DIVERGED_LOSS or hist.skipped_steps:
            diverged.append(step)
            return True
        return False

    extra = {} if reducer is None else {"reducer": reducer}
    h = train(mlp(list(sizes), seed=seed), data, steps=max_steps, batch_size=b, optimizer=optimizer, seed=seed,
              eval_every=every, target_accuracy=target, callback=stop_if_diverged, workers=workers,
              grad_transform=StaleGradients(staleness) if staleness else None, **extra)
    r = Run(b, float(lr), seed, h.steps, h.steps_to_target, h.test_accuracy[-1], bool(diverged),
            float(warmup_epochs), int(staleness), h.steps / steps_per_epoch, tuple(h.eval_step),
            tuple(h.test_accuracy))
    return r


def sweep(data, batch_sizes, lrs, *, target: float, max_samples: int, seeds=(0,), prune: bool = True,
          **options) -> list[Run]:
    """Every (batch size, learning rate, seed) run, each allowed ``max_samples`` samples (at least 2 steps).

    With ``prune`` (the default), a run is also stopped once it has taken ``len(seeds)`` times the best mean
    steps to target found so far at its batch size: its learning rate's mean over the seeds can then no
    longer be the best, so :func:`best_per_batch` is unchanged and the sweep is much faster.
    """
    max_samples = count("max_samples", max_samples)
    if not len(batch_sizes) or not len(lrs) or not len(seeds):
        raise ValueError("batch_sizes, lrs and seeds must each be non-empty")
    runs = []
    for b in batch_sizes:
        best = math.inf
        for lr in lrs:
            cap = max(2, max_samples // b)
            if prune and best < math.inf:
                cap = min(cap, int(len(seeds) * best))
            group = [run(data, batch_size=b, lr=lr, target=target, seed=s, max_steps=cap, **options)
                     for s in seeds]
            runs += group
            if all(r.reached for r in group):
                best = min(best, float(np.mean([r.steps_to_target for r in group])))
    return runs


def best_per_batch(runs: list[Run]) -> dict[int, tuple[float, float, list[int]]]:
    """{batch size: (best lr, mean steps to target over seeds, the seeds' steps)} for the learning rate
    whose runs all reached the target in the fewest mean steps; batch sizes with no such lr are left out."""
    groups: dict[tuple[int, float], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.batch_size, r.lr), []).append(r)
    best: dict[int, tuple[float, float, list[int]]] = {}
    for (b, lr), rs in sorted(groups.items()):
        if not all(r.reached for r in rs):
            continue
        steps = [r.steps_to_target for r in rs]
        mean = float(np.mean(steps))
        if b not in best or mean < best[b][1]:
            best[b] = (lr, mean, steps)
    return best


def fit_steps_model(batch_sizes, steps) -> tuple[float, float]:
    """(S_min, B_noise) of McCandlish et al.'s S = S_min (1 + B_noise / B), least squares in relative error.

    S is linear in 1/B: S = S_min + (S_min B_noise) / B; each point is weighted by 1/S so that small step
    counts at large batches count as much as large ones.

    >>> B = np.array([8, 32, 128, 512]); S = 10 * (1 + 64 / B)
    >>> tuple(round(v, 6) for v in fit_steps_model(B, S))
    (10.0, 64.0)
    """
    B, S = np.asarray(batch_sizes, dtype=np.float64), np.asarray(steps, dtype=np.float64)
    if B.shape != S.shape or B.size < 2 or np.any(B <= 0) or np.any(S <= 0):
        raise ValueError(f"batch_sizes and steps must be equal-length positive arrays with at least 2 points, "
                         f"got {batch_sizes!r} and {steps!r}")
    A = np.stack([np.ones_like(B), 1 / B], axis=1) / S[:, None]
    (s_min, slope), *_ = np.linalg.lstsq(A, np.ones_like(S), rcond=None)
    return float(s_min), float(slope / s_min)


# --- determinism ---------------------------------------------------------------------------------------

def ordered_sum(arrays, order) -> np.ndarray:
    """Element-wise float32 sum of ``arrays`` taken one at a time in ``order`` (a permutation of indices):
    the reduction an all-reduce performs, in a chosen order. Every addition is one IEEE float32 rounding."""
    order = list(order)
    if sorted(order) != list(range(len(arrays))):
        raise ValueError(f"order must be a permutation of range({len(arrays)}), got {order!r}")
    out = np.array(arrays[order[0]], dtype=np.float32, copy=True)
    for i in order[1:]:
        out += np.asarray(arrays[i], dtype=np.float32)
    return out


def bits_differ(a, b) -> float:
    """Fraction of the float32 elements of ``a`` and ``b`` whose bit patterns differ."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}")
    return float(np.mean(a.view(np.uint32) != b.view(np.uint32))) if a.size else 0.0


def shuffled_sum_reducer(seed: int):
    """A reducer summing the workers' gradients in a fresh random order every step, as atomics or a
    reduction tree that depends on arrival times do. Seeded here so that the book can show its effect."""
    rng = np.random.default_rng(seed)

    def reduce(worker_grads):
        order = rng.permutation(len(worker_grads))
        return {name: ordered_sum([g[name] for g in worker_grads], order) for name in worker_grads[0]}

    return reduce


# --- throughput -----------------------------------------------------------------------------------------

def implied_throughput(*, images_per_epoch: int, epochs: float, seconds: float, gpus: int,
                       train_flop_per_image: float, peak_flop_per_s: float) -> dict[str, float]:
    """What a reported training time implies: images/s overall and per GPU, achieved FLOP/s per GPU and
    the fraction of ``peak_flop_per_s`` it is.

    >>> t = implied_throughput(images_per_epoch=1000, epochs=2, seconds=10, gpus=4, train_flop_per_image=1e9,
    ...                        peak_flop_per_s=1e11)
    >>> t["images_per_s"], t["images_per_s_per_gpu"], t["utilisation"]
    (200.0, 50.0, 0.5)
    """
    for name, v in (("images_per_epoch", images_per_epoch), ("epochs", epochs), ("seconds", seconds),
                    ("gpus", gpus), ("train_flop_per_image", train_flop_per_image),
                    ("peak_flop_per_s", peak_flop_per_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    ips = images_per_epoch * epochs / seconds
    per_gpu = ips / gpus
    achieved = per_gpu * train_flop_per_image
    return {"images_per_s": ips, "images_per_s_per_gpu": per_gpu, "flop_per_s_per_gpu": achieved,
            "utilisation": achieved / peak_flop_per_s}


# --- the widget's view -----------------------------------------------------------------------------------

_DATA = []


def _digits():
    if not _DATA:
        from scaledl.nn.data import digits

        _DATA.append(digits())
    return _DATA[0]
