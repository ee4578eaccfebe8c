"""Compressed gradient exchange as a reducer for :func:`scaledl.nn.train`, with its byte accounting.

:func:`compressed_reducer` gives one compressor per simulated worker (the list position is the worker, so
error feedback and momentum correction keep per-worker state across steps). Each step, every worker
compresses each of its tensors, and the reducer adds the decoded messages in worker order, as the receiver
of an all-gather of the messages would. It records the encoded bytes each worker sent, so a chapter can
report the real compression ratio and time the exchange with :mod:`scaledl.comm.cost` or
:mod:`scaledl.comm.netsim`.

:func:`scaledl.nn.train` calls a reducer only when ``workers > 1``; with one worker it would silently
train uncompressed, so call the reducer yourself there (as the tests do) or use two or more workers.

A step whose gradients are not all finite (an fp16 overflow) is *skipped*: nothing is compressed, no
state changes, and the plain sum is returned, which :func:`scaledl.nn.train` then drops as it does any
non-finite step (``History.skipped_steps``).

>>> import numpy as np
>>> red = compressed_reducer("topk", workers=2, ratio=0.25)
>>> out = red([{"w": np.float32([1, 4, 0, 0])}, {"w": np.float32([0, 0, 3, 2])}])
>>> out["w"].tolist(), red.step_nbytes[-1], red.compression_ratio     # each: 1 value + 1 index
([0.0, 4.0, 3.0, 0.0], [8, 8], 2.0)
>>> red.exchange_time_s(alpha=1e-6, beta=1e-9), red.dense_time_s(alpha=1e-6, beta=1e-9)  # 1 alpha + 8 B beta
([1.008e-06], [2.016e-06])
"""

from __future__ import annotations

import numpy as np

from scaledl.comm.compression.base import Compressor
from scaledl.comm.cost import allgather_time, allreduce_time

__all__ = ["CompressedReducer", "compressed_reducer"]


class CompressedReducer:
    """A reducer over ``compressors`` (one per worker); see the module docstring.

    Attributes:
        step_nbytes: per reduced step, the encoded bytes each worker sent (a list per step).
        dense_nbytes: per reduced step, the float32 bytes one worker's uncompressed gradient takes.
        skipped: steps passed through uncompressed because a gradient was not finite.
    """

    def __init__(self, compressors: list[Compressor]):
        if not compressors or not all(isinstance(c, Compressor) for c in compressors):
            raise TypeError(f"compressors: expected a nonempty list of Compressor, one per worker, got {compressors!r}")
        self.compressors = list(compressors)
        self.step_nbytes: list[list[int]] = []
        self.dense_nbytes: list[int] = []
        self.skipped = 0

    def __call__(self, worker_grads: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        if len(worker_grads) != len(self.compressors):
            raise ValueError(f"worker_grads: {len(worker_grads)} workers' gradients for "
                             f"{len(self.compressors)} compressors; train with workers={len(self.compressors)}")
        if not all(np.isfinite(g).all() for grads in worker_grads for g in grads.values()):
            self.skipped += 1
            out = {k: v.copy() for k, v in worker_grads[0].items()}
            for grads in worker_grads[1:]:
                for k, v in grads.items():
                    out[k] += v
            return out
        sent = [0] * len(self.compressors)
        out = {}
        for name in worker_grads[0]:
            total = None
            for w, (c, grads) in enumerate(zip(self.compressors, worker_grads)):
                msg = c.compress(grads[name], key=name)
                sent[w] += msg.nbytes
                decoded = msg.decode().astype(grads[name].dtype, copy=False)
                total = decoded if total is None else total + decoded
            out[name] = total
        self.step_nbytes.append(sent)
        self.dense_nbytes.append(sum(4 * g.size for g in worker_grads[0].values()))
        return out

    def exchange_time_s(self, *, alpha: float, beta: float) -> list[float]:
        """Seconds each step's exchange takes under the alpha-beta model: a ring all-gather of the messages,
        each padded to the step's largest (compressed messages cannot be summed on the way, as a ring
        all-reduce sums dense blocks; :mod:`scaledl.comm.compression.sparse_allreduce` is the alternative)."""
        p = len(self.compressors)
        return [float(allgather_time("ring", p, p * max(s), alpha=alpha, beta=beta)) for s in self.step_nbytes]

    def dense_time_s(self, *, alpha: float, beta: float) -> list[float]:
        """Seconds each step's uncompressed float32 gradient takes with a ring all-reduce, for comparison."""
        p = len(self.compressors)
        return [float(allreduce_time("ring", p, n, alpha=alpha, beta=beta)) for n in self.dense_nbytes]

    @property
    def total_nbytes(self) -> int:
        """Encoded bytes sent by all workers over all steps."""
        return int(sum(sum(s) for s in self.step_nbytes))

    @property
    def compression_ratio(self) -> float:
        """Uncompressed float32 bytes over encoded bytes, over all workers and steps (nan before a step)."""
        dense = len(self.compressors) * sum(self.dense_nbytes)
        return dense / self.total_nbytes if self.total_nbytes else float("nan")


def compressed_reducer(name: str, workers: int, *, seed: int = 0, **options) -> CompressedReducer:
    """A :class:`CompressedReducer` of ``workers`` compressors ``make_compressor(name, **options)``, each
    with its own random stream spawned from ``seed``; DGC's clipping is told ``workers`` unless given."""
    from scaledl.comm.compression import make_compressor

    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    seeds = np.random.SeedSequence(seed).spawn(int(workers))
    if name == "dgc":
        options.setdefault("workers", int(workers))
    return CompressedReducer([make_compressor(name, seed=s, **options) for s in seeds])
