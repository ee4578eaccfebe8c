"""Data-parallel training whose gradients are summed by the book's ring all-reduce, simulated or over MPI.

Worker (rank) k computes the gradient of its shard of each minibatch, weighted by n_k / B as in
:mod:`scaledl.nn.parallel`; the gradients, flattened into one float32 vector, are summed by a ring
all-reduce. Floating-point addition is not associative, so the sum depends on its order; the ring fixes
that order (block c is accumulated starting from rank c + 1 and going round), and
:func:`ring_reducer` (a reducer for :func:`scaledl.nn.train`) and :func:`mpi_train` (one rank's loop over
MPI) add in exactly the same order. The two therefore give bitwise the same weights, and both differ in the
last bits from the worker-order sum of :func:`scaledl.nn.parallel.sum_reducer`.

>>> import numpy as np
>>> g = [{"w": np.float32([1, 2, 3])}, {"w": np.float32([10, 20, 30])}]
>>> ring_reducer(g)["w"].tolist()
[11.0, 22.0, 33.0]
"""

from __future__ import annotations

import numpy as np

from scaledl.comm.schedule import allreduce

__all__ = ["flatten", "unflatten", "ring_reducer", "mpi_train"]


def flatten(grads: dict[str, np.ndarray]) -> np.ndarray:
    """All arrays of ``grads`` in one 1-D vector, in the dict's order (the model's layer order)."""
    return np.concatenate([g.ravel() for g in grads.values()]) if grads else np.zeros(0, np.float32)


def unflatten(vector: np.ndarray, like: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The inverse of :func:`flatten`: arrays shaped as those of ``like``, cut from ``vector``."""
    out, at = {}, 0
    for name, g in like.items():
        out[name] = vector[at:at + g.size].reshape(g.shape)
        at += g.size
    return out


def ring_reducer(worker_grads: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """A :mod:`scaledl.nn.parallel` reducer: the ring all-reduce of :mod:`scaledl.comm.schedule` on the
    workers' flattened gradients (every worker ends with the same vector; rank 0's is returned)."""
    summed = allreduce([flatten(g) for g in worker_grads], algorithm="ring")[0]
    return unflatten(summed, worker_grads[0])


def mpi_train(comm, model, data, *, steps: int, batch_size: int = 32, optimizer=None, seed: int = 0):
    """This rank's part of data-parallel SGD over ``comm``: the loop of :func:`scaledl.nn.train` (same
    shuffling, sharding, skipping and update) with its shard's gradient and an MPI ring all-reduce.

    Trains ``model`` in place and returns the per-step mean losses (the same on every rank). Only plain
    float32 SGD: no precision policy, masks or gradient transform.
    """
    from threadpoolctl import threadpool_limits

    from scaledl.comm.mpi import ring_allreduce
    from scaledl.nn.optim import SGD
    from scaledl.nn.parallel import check_workers

    workers, rank = comm.Get_size(), comm.Get_rank()
    n = data.n_train
    batch_size = min(int(batch_size), n)
    check_workers(workers, batch_size)
    steps_per_epoch = -(-n // batch_size)
    optimizer = optimizer or SGD(lr=0.05, momentum=0.9)
    rng = np.random.default_rng(seed)
    params, losses = model.parameters(), []
    order = np.empty(0, int)
    with threadpool_limits(limits=1, user_api="blas"):  # as train(): one BLAS thread, the same kernels
        for step in range(int(steps)):
            if step % steps_per_epoch == 0:
                order = rng.permutation(n)
            i = (step % steps_per_epoch) * batch_size
            idx = order[i:i + batch_size]
            if len(idx) < workers:  # as train(): a trailing batch too small to shard is skipped
                continue
            xs = np.array_split(data.x_train[idx], workers)[rank]
            ys = np.array_split(data.y_train[idx], workers)[rank]
            loss, grads = model.loss_and_gradients(xs, ys, scale=len(xs) / len(idx))
            summed = unflatten(ring_allreduce(comm, flatten(grads)), grads)
            losses.append(comm.allreduce(loss * len(xs) / len(idx)))
            if all(np.isfinite(g).all() for g in summed.values()):
                optimizer.step(params, summed)
    return losses
