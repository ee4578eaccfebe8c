"""Simulated data-parallel training: shard a minibatch over N workers, reduce their gradients.

Worker k gets a contiguous shard of n_k samples of the minibatch of B (``np.array_split``: shards differ
by at most one sample) and computes the gradient of its shard's mean loss times n_k / B. With that
weighting the *sum* over workers is exactly the minibatch-mean gradient a single worker would compute, so
the reducer is an all-reduce-sum, as in MPI and NCCL. A reducer is any function taking the list of the
workers' gradient dicts (worker order) and returning one dict; gradient compression with per-worker
state (error feedback, momentum correction) fits here, because the list position identifies the worker.

>>> import numpy as np
>>> g = [{"w": np.float32([1, 2])}, {"w": np.float32([3, 4])}]
>>> sum_reducer(g)["w"].tolist()
[4.0, 6.0]
"""

from __future__ import annotations

from typing import Callable

import numpy as np

Grads = dict[str, np.ndarray]
Reducer = Callable[[list[Grads]], Grads]


def sum_reducer(worker_grads: list[Grads]) -> Grads:
    """The exact all-reduce: the element-wise sum of every worker's gradient, in worker order."""
    out = {name: g.copy() for name, g in worker_grads[0].items()}
    for grads in worker_grads[1:]:
        for name, g in grads.items():
            out[name] += g
    return out


def check_workers(workers, batch_size: int | None = None) -> int:
    """``workers`` as a positive int; ValueError if it is not, or if a batch cannot give each one a sample."""
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers: expected a positive integer number of workers, got {workers!r}")
    if batch_size is not None and batch_size < workers:
        raise ValueError(f"batch_size: {batch_size} is smaller than workers={workers}; every worker needs at "
                         f"least one sample of each minibatch")
    return int(workers)


def data_parallel_gradients(model, x, y, workers: int, reducer: Reducer = sum_reducer,
                            scale: float = 1.0) -> tuple[float, Grads]:
    """Loss and reduced gradient of one minibatch computed by ``workers`` simulated workers.

    Returns the minibatch's mean loss (the n_k-weighted mean of the shards' losses) and ``reducer`` applied
    to the workers' gradients (each a copy, so a reducer may keep or modify them).
    """
    workers = check_workers(workers, len(x))
    total = len(x)
    losses, per_worker = [], []
    for xs, ys in zip(np.array_split(x, workers), np.array_split(y, workers)):
        loss, grads = model.loss_and_gradients(xs, ys, scale=scale * len(xs) / total)
        losses.append(loss * len(xs) / total)
        per_worker.append({k: v.copy() for k, v in grads.items()})
    return float(sum(losses)), reducer(per_worker)
