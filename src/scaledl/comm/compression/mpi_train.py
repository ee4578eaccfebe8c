"""Compressed data-parallel training over real MPI ranks: the same arithmetic as the simulated workers.

:func:`mpi_train_compressed` is one rank's loop of :func:`scaledl.nn.train` (same shuffling, sharding,
skipping and update) in which the rank computes only its shard's gradient, compresses it with its own
compressor (seeded as :func:`~scaledl.comm.compression.reducer.compressed_reducer` seeds worker ``rank``),
all-gathers the messages, and adds the decoded messages in rank order, exactly as the simulated reducer adds
them in worker order. The weights, and so the test accuracy, are therefore bitwise those of
:func:`scaledl.comm.compression.views.train_compressed` with the same options.

``python -m scaledl.comm.compression.mpi_train JSON`` under ``mpiexec -n P`` runs it on the digits MLP and
rank 0 prints one JSON line; :func:`run` launches that and parses it.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

__all__ = ["mpi_train_compressed", "run"]


def mpi_train_compressed(comm, model, data, name: str, *, epochs: int, batch_size: int = 64, lr: float = 0.05,
                         momentum: float = 0.9, seed: int = 0, **options) -> dict:
    """Train ``model`` in place on this rank's shards; returns the bytes this rank sent, the dense bytes,
    the exchanges and the seconds spent in the all-gathers (the same on every rank but the seconds)."""
    from threadpoolctl import threadpool_limits

    from scaledl.comm.compression import make_compressor
    from scaledl.comm.compression.views import calls_per_epoch
    from scaledl.comm.dataparallel import rank_shards
    from scaledl.nn.optim import SGD
    from scaledl.nn.parallel import check_workers

    workers, rank = comm.Get_size(), comm.Get_rank()
    n = data.n_train
    batch_size = min(int(batch_size), n)
    check_workers(workers, batch_size)
    steps_per_epoch = -(-n // batch_size)
    options = dict(options)
    if name == "dgc":
        options.setdefault("steps_per_epoch", calls_per_epoch(n, batch_size, workers))
        options.setdefault("momentum", momentum)
        options.setdefault("workers", workers)
    compressor = make_compressor(name, seed=np.random.SeedSequence(seed).spawn(workers)[rank], **options)
    own_momentum = name == "dgc" and options.get("momentum_correction", True)
    optimizer = SGD(lr=lr, momentum=0.0 if own_momentum else momentum)
    params = model.parameters()
    sent = exchanges = 0
    comm_s = 0.0
    with threadpool_limits(limits=1, user_api="blas"):  # as train(): one BLAS thread, the same kernels
        for xs, ys, share in rank_shards(data, steps=int(epochs) * steps_per_epoch, batch_size=batch_size,
                                         workers=workers, rank=rank, seed=seed):
            _, grads = model.loss_and_gradients(xs, ys, scale=share)
            finite = all(np.isfinite(g).all() for g in grads.values())
            if not comm.allreduce(finite, op=_land(comm)):  # as the reducer: a non-finite step is skipped
                continue
            summed = {}
            for key, g in grads.items():
                msg = compressor.compress(g, key=key)
                sent += msg.nbytes
                t = time.perf_counter()
                msgs = comm.allgather(msg)
                comm_s += time.perf_counter() - t
                total = None
                for m in msgs:  # rank order, as the simulated reducer's worker order
                    decoded = m.decode().astype(g.dtype, copy=False)
                    total = decoded if total is None else total + decoded
                summed[key] = total
            exchanges += 1
            optimizer.step(params, summed)
    dense = sum(4 * p.size for p in params.values())
    return {"sent_nbytes": sent, "dense_nbytes": dense, "exchanges": exchanges, "comm_s": comm_s}


def _land(comm):
    from mpi4py import MPI

    return MPI.LAND


def run(ranks: int, name: str = "dgc", *, epochs: int = 10, batch_size: int = 64, seed: int = 0,
        sizes=(64, 128, 10), timeout_s: float = 120.0, hosts=None, **options) -> dict:
    """Launch ``mpiexec -n ranks`` on the digits MLP; returns rank 0's result: ``accuracy`` (the final test
    accuracy), ``ratio`` (dense bytes / bytes sent by all ranks), ``exchanges``, ``wall_s`` and ``comm_s``
    (seconds, which vary). ``hosts`` spreads the ranks over machines (:func:`scaledl.comm.mpi.launch`)."""
    from scaledl.comm.mpi import launch

    spec = dict(name=name, epochs=epochs, batch_size=batch_size, seed=seed, sizes=list(sizes), options=options)
    out = launch(int(ranks), ["-m", "scaledl.comm.compression.mpi_train", json.dumps(spec)], timeout_s=timeout_s,
                 hosts=hosts)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"mpi_train printed no result; output:\n{out[-2000:]}")
    return json.loads(lines[-1])


def _main(spec: dict) -> None:
    from mpi4py import MPI

    from scaledl.nn import digits, evaluate, mlp

    comm = MPI.COMM_WORLD
    data = digits()
    model = mlp(list(spec["sizes"]), seed=spec["seed"])
    t = time.perf_counter()
    got = mpi_train_compressed(comm, model, data, spec["name"], epochs=spec["epochs"],
                               batch_size=spec["batch_size"], seed=spec["seed"], **spec["options"])
    wall = time.perf_counter() - t
    sent = comm.allreduce(got["sent_nbytes"])
    if comm.Get_rank() == 0:
        _, acc = evaluate(model, data.x_test, data.y_test)
        ratio = comm.Get_size() * got["exchanges"] * got["dense_nbytes"] / sent
        print(json.dumps({"ranks": comm.Get_size(), "accuracy": acc, "ratio": ratio,
                          "exchanges": got["exchanges"], "wall_s": wall, "comm_s": got["comm_s"]}), flush=True)


if __name__ == "__main__":
    _main(json.loads(sys.argv[1]))
