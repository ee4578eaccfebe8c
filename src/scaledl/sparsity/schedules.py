"""Prune-and-retrain schedules: one-shot, iterative, and gradual (Zhu and Gupta's cubic ramp).

* **one-shot**: prune to the target once, then retrain with the mask fixed (the recipe NVIDIA uses for 2:4,
  Mishra et al. 2021).
* **iterative**: ``rounds`` rounds of prune-then-retrain, each removing the same fraction of what is left,
  ``s_r = 1 - (1 - s)^(r / R)`` (Han, Pool, Tran and Dally, "Learning both Weights and Connections for
  Efficient Neural Networks", NeurIPS 2015, prune and retrain repeatedly).
* **gradual**: during training, every ``prune_every`` steps the sparsity follows

      s_t = s_f + (s_i - s_f) (1 - (t - t_0) / (n dt))^3,   t_0 <= t <= t_0 + n dt

  (Zhu and Gupta, "To prune, or not to prune: exploring the efficacy of pruning for model compression",
  arXiv:1710.01878, 2017, eq. 1): fast pruning while many weights are redundant, slow near the end.

All use the masks :class:`scaledl.nn.Sequential` keeps through training; the masks are nested.

>>> [round(cubic_sparsity(t, 0.9, begin_step=0, end_step=100), 4) for t in (0, 50, 100, 200)]
[0.0, 0.7875, 0.9, 0.9]
>>> [round(s, 4) for s in iterative_sparsities(0.875, 3)]
[0.5, 0.75, 0.875]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scaledl.nn.train import History, evaluate, train
from scaledl.sparsity.masks import check_sparsity
from scaledl.sparsity.prune import model_sparsity, prunable, prune_masks
from scaledl.sparsity.saliency import hessian_diagonal

SCHEDULES = ("one-shot", "iterative", "gradual")


def cubic_sparsity(step: int, final_sparsity: float, *, initial_sparsity: float = 0.0, begin_step: int = 0,
                   end_step: int) -> float:
    """Zhu and Gupta's sparsity at ``step``: ``initial`` before ``begin_step``, ``final`` after ``end_step``."""
    s_f, s_i = check_sparsity(final_sparsity, "final_sparsity"), check_sparsity(initial_sparsity,
                                                                                 "initial_sparsity")
    if not end_step > begin_step:
        raise ValueError(f"end_step must be > begin_step={begin_step}, got {end_step!r}")
    if step <= begin_step:
        return s_i
    if step >= end_step:
        return s_f
    frac = (step - begin_step) / (end_step - begin_step)
    return s_f + (s_i - s_f) * (1.0 - frac) ** 3


def iterative_sparsities(final_sparsity: float, rounds: int) -> list[float]:
    """Sparsity after each of ``rounds`` rounds, each removing the same fraction of the remaining weights."""
    s = check_sparsity(final_sparsity, "final_sparsity")
    if not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    return [1.0 - (1.0 - s) ** (r / rounds) for r in range(1, rounds + 1)]


@dataclass
class PruneRun:
    """What a prune-and-retrain run measured, one entry per pruning event."""

    schedule: str
    step: list[int] = field(default_factory=list)  # training steps done when the pruning happened
    sparsity: list[float] = field(default_factory=list)  # achieved sparsity of the pruned tensors
    accuracy_pruned: list[float] = field(default_factory=list)  # test accuracy right after pruning
    history: list[History] = field(default_factory=list)  # the retraining phases

    @property
    def final_accuracy(self) -> float:
        return self.history[-1].test_accuracy[-1]


def prune_and_retrain(model, data, sparsity: float, *, schedule: str = "one-shot", steps: int = 200,
                      rounds: int = 4, prune_every: int = 10, ramp: float = 0.75, scope: str = "layer",
                      criterion: str = "magnitude", hessian_samples: int = 128, seed: int = 0,
                      **train_kwargs) -> PruneRun:
    """Prune the (trained) ``model`` in place to ``sparsity`` and retrain it for ``steps`` steps in all.

    Args:
        model, data: a trained :class:`scaledl.nn.Sequential` and its :class:`~scaledl.nn.Dataset`.
        sparsity: the final fraction of pruned weights, in [0, 1).
        schedule: ``"one-shot"``, ``"iterative"`` (``rounds`` equal retraining phases) or ``"gradual"``
            (cubic ramp over the first ``ramp`` of the steps, pruning every ``prune_every`` steps).
        scope, criterion: as :func:`~scaledl.sparsity.prune.prune_masks`; OBD re-estimates the Hessian
            diagonal on the first ``hessian_samples`` training samples at each pruning.
        seed: training seed (phase ``r`` uses ``seed + r``) and the random criterion's seed.
        **train_kwargs: passed to :func:`scaledl.nn.train` (optimizer, batch_size, ...).

    Raises:
        ValueError: an unknown schedule, bad sparsity, steps, rounds or ramp.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r} is not a pruning schedule; expected one of {SCHEDULES}")
    check_sparsity(sparsity)
    for name, v in (("steps", steps), ("rounds", rounds), ("prune_every", prune_every)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not 0 < ramp <= 1:
        raise ValueError(f"ramp must be in (0, 1], got {ramp!r}")
    run = PruneRun(schedule)
    done = [0]

    def prune_to(s):
        hessian = None
        if criterion == "obd":
            n = min(hessian_samples, data.n_train)
            hessian = hessian_diagonal(model, data.x_train[:n], names=prunable(model))
        model.set_masks({**model.masks, **prune_masks(model, s, scope=scope, criterion=criterion,
                                                      hessian=hessian, seed=seed + len(run.step))})
        run.step.append(done[0])
        run.sparsity.append(model_sparsity(model)["total"])
        run.accuracy_pruned.append(evaluate(model, data.x_test, data.y_test)[1])

    if schedule == "gradual":
        end = max(1, int(ramp * steps))

        def callback(step, m, hist):
            done[0] = step
            if step <= end and (step % prune_every == 0 or step == end):  # the ramp ends on an event
                prune_to(cubic_sparsity(step, sparsity, begin_step=0, end_step=end))

        run.history.append(train(model, data, steps=steps, seed=seed, callback=callback, **train_kwargs))
        return run
    targets = [sparsity] if schedule == "one-shot" else iterative_sparsities(sparsity, rounds)
    per_phase = [steps // len(targets) + (r < steps % len(targets)) for r in range(len(targets))]
    for r, (s, n_steps) in enumerate(zip(targets, per_phase)):
        prune_to(s)
        if n_steps:
            run.history.append(train(model, data, steps=n_steps, seed=seed + r, **train_kwargs))
            done[0] += n_steps
    return run
