"""A SparCML-style sparse all-reduce: messages grow by fill-in as they are reduced, and turn dense past
the break-even density.

Renggli, Ashkboos, Aghagolzadeh, Alistarh and Hoefler, "SparCML: High-Performance Sparse Communication
for Machine Learning", SC 2019. Each rank starts with a sparse vector (top-k's or DGC's message, or an
array whose nonzeros are its support). Recursive doubling pairs rank r with r XOR 2^j in round j; each
sends its current vector and adds the partner's. The support of a partial sum is the union of its parts'
supports, so messages grow round by round (fill-in). A sparse message costs nnz (value + index) bytes and a
dense one n value bytes, so past the density value/(value + index) (one half for float32 values and uint32
indices) the dense form is smaller: a rank switches then, and stays dense. A number of ranks that is not a
power of two is folded first as MPICH folds it (:mod:`scaledl.comm.schedule`): the first 2 rem ranks pair
up, the odd one reduces, and gets the result back at the end.

This is the recursive-doubling variant (SparCML's choice for small data); its split-allgather variant for
large data is not modelled. The vectors are reduced for real (``result``), so the byte counts come from the
actual supports, and :meth:`SparseAllreduce.schedule` turns the messages into a schedule the network
simulator can time (one buffer element per byte).

>>> import numpy as np
>>> x = [np.zeros(16) for _ in range(4)]
>>> for r in range(4): x[r][3 * r:3 * r + 3] = 1.0        # 3 nonzeros each, disjoint supports
>>> out = sparse_allreduce(x)
>>> [[nb for _, _, nb, _ in rnd] for rnd in out.rounds]  # 3 x 8 B, then 6 x 8 B = 48 B < 16 x 4 B
[[24, 24, 24, 24], [48, 48, 48, 48]]
>>> out.nbytes, out.dense_nbytes, int(out.result.sum())
(288, 512, 12)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scaledl.comm.compression.message import INDEX_NBYTES, SparseMessage
from scaledl.comm.transfers import Schedule, Transfer

__all__ = ["SparseAllreduce", "sparse_allreduce", "break_even_density"]


def break_even_density(value_nbytes: int = 4, index_nbytes: int = INDEX_NBYTES) -> float:
    """The density above which a dense vector is smaller than (value, index) pairs: v / (v + i)."""
    return value_nbytes / (value_nbytes + index_nbytes)


@dataclass
class SparseAllreduce:
    """What :func:`sparse_allreduce` did."""
    result: np.ndarray   # the sum, which every rank ends with
    rounds: list         # per round, (src, dst, nbytes, dense) for every message
    n: int               # elements of the vector
    value_nbytes: int
    copy_last: bool = False  # the last round returns the result to folded ranks (copies, not reductions)

    @property
    def nbytes(self) -> int:
        """Bytes sent by all ranks together."""
        return sum(nb for rnd in self.rounds for _, _, nb, _ in rnd)

    @property
    def dense_nbytes(self) -> int:
        """Bytes the same messages would take if all were dense (the dense all-reduce)."""
        return sum(len(rnd) for rnd in self.rounds) * self.n * self.value_nbytes

    def schedule(self, p: int | None = None) -> Schedule:
        """The messages as a :class:`~scaledl.comm.schedule.Schedule` whose elements are bytes; time it with
        ``netsim.simulate(s, topology, nbytes=s.length)``. An empty message is sent as one byte (it still
        costs a latency)."""
        p = p or 1 + max(max(s, d) for rnd in self.rounds for s, d, _, _ in rnd)
        length = max(1, max((nb for rnd in self.rounds for _, _, nb, _ in rnd), default=1))
        last = len(self.rounds) - 1
        rounds = tuple(tuple(Transfer(s, d, 0, max(nb, 1), "copy" if i == last and self.copy_last else "reduce")
                             for s, d, nb, _ in rnd) for i, rnd in enumerate(self.rounds))
        return Schedule("sparcml", p, length, rounds)


def _as_dense(x) -> np.ndarray:
    if isinstance(x, SparseMessage):
        return x.decode().astype(np.float64).ravel()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"inputs: expected 1-D vectors or SparseMessages, got an array of shape {a.shape}")
    return a.copy()


def sparse_allreduce(inputs: list, *, value_nbytes: int = 4, index_nbytes: int = INDEX_NBYTES) -> SparseAllreduce:
    """Sum ``inputs`` (one per rank: 1-D arrays, zeros outside the support, or SparseMessages) SparCML's way,
    in float64 (sums of float32 inputs are then exact for up to 2^29 ranks of similar magnitude).

    Raises:
        ValueError: no inputs, vectors of different lengths, or non-positive byte widths.
    """
    if not inputs:
        raise ValueError("inputs: expected one vector per rank, got none")
    if value_nbytes < 1 or index_nbytes < 1:
        raise ValueError(f"value_nbytes and index_nbytes must be positive, got {value_nbytes}, {index_nbytes}")
    data = [_as_dense(x) for x in inputs]
    n = data[0].size
    if any(d.size != n for d in data):
        raise ValueError(f"inputs: vectors of one length expected, got lengths {sorted({d.size for d in data})}")
    p = len(data)
    support = [d != 0 for d in data]
    dense = [False] * p
    limit = break_even_density(value_nbytes, index_nbytes) * n

    def message(r):
        nnz = int(support[r].sum())
        if not dense[r] and nnz >= limit:
            dense[r] = True
        return (n * value_nbytes if dense[r] else nnz * (value_nbytes + index_nbytes)), dense[r]

    def exchange(pairs):
        sent = [(s, d, *message(s)) for s, d in pairs]
        snapshot = {s: (data[s].copy(), support[s].copy()) for s, _ in pairs}
        for s, d in pairs:
            data[d] += snapshot[s][0]
            support[d] |= snapshot[s][1]
            message(d)  # the receiver turns dense if its sum passed the break-even density
        return sent

    p2 = 1 << (p.bit_length() - 1)
    rem = p - p2
    survivors = [2 * i + 1 for i in range(rem)] + list(range(2 * rem, p))
    rounds = []
    if rem:
        rounds.append(exchange([(2 * i, 2 * i + 1) for i in range(rem)]))
    mask = 1
    while mask < p2:
        rounds.append(exchange([(survivors[i], survivors[i ^ mask]) for i in range(p2)]))
        mask <<= 1
    if rem:  # give the folded ranks the result: a copy, not a reduction
        sent = [(2 * i + 1, 2 * i, *message(2 * i + 1)) for i in range(rem)]
        for i in range(rem):
            data[2 * i] = data[2 * i + 1].copy()
        rounds.append(sent)
    return SparseAllreduce(data[0], rounds, n, value_nbytes, copy_last=bool(rem))
