"""Two-level all-reduce schedules, built from :mod:`scaledl.comm.algorithms`' one-level ones: the hierarchical
all-reduce (reduce-scatter inside each group of ranks, an all-reduce across the groups on each shard, all-gather
inside the groups; Horovod's and NCCL's across nodes), the 2-D torus of Mikami et al. (2018), and the same
rounds as arrays for the simulator's fast path (:func:`hierarchical_rounds`).
"""

from __future__ import annotations

import numpy as np

from scaledl.comm.cost import ALLREDUCE_ALGORITHMS
from scaledl._args import count
from scaledl.comm.transfers import Schedule, Transfer, _round, bounds

__all__ = ["hierarchical", "torus_2d", "hierarchical_rounds"]


def _two_level(nodes: int, g: int, length: int, inter: str) -> list:
    """Reduce-scatter by ring inside every group of g consecutive ranks, all-reduce by ``inter`` across the
    groups among the ranks that hold the same shard, all-gather by ring inside the groups. The groups of a
    phase run side by side: round k of the phase holds round k of every group."""
    from scaledl.comm.algorithms import _BUILDERS  # here: lab 05's grading run leaves the algorithms out

    b = bounds(length, g)
    rounds = []
    for s in range(g - 1):  # as in _ring: afterwards local rank i holds the group's sum of block (i + 1) mod g
        rounds.append(_round(Transfer(base + i, base + (i + 1) % g, b[(i - s) % g], b[(i - s) % g + 1], "reduce")
                             for base in range(0, nodes * g, g) for i in range(g)))
    local: dict[int, list] = {}  # the inter-node algorithm on each shard length (at most two lengths occur)
    phase = []
    for i in range(g):
        lo, hi = b[(i + 1) % g], b[(i + 1) % g + 1]
        if hi - lo not in local:
            local[hi - lo] = _BUILDERS[inter](nodes, hi - lo) if nodes > 1 else []
        phase.append([[Transfer(t.src * g + i, t.dst * g + i, t.start + lo, t.stop + lo, t.op) for t in rnd]
                      for rnd in local[hi - lo]])
    for k in range(max(map(len, phase), default=0)):
        rounds.append(tuple(t for group in phase if k < len(group) for t in group[k]))
    for s in range(g - 1):  # all-gather inside each group, as in _ring
        rounds.append(_round(Transfer(base + i, base + (i + 1) % g, b[(i + 1 - s) % g], b[(i + 1 - s) % g + 1],
                                      "copy") for base in range(0, nodes * g, g) for i in range(g)))
    return [r for r in rounds if r]


def hierarchical(nodes: int, ranks_per_node: int, length: int, *, inter: str = "ring") -> Schedule:
    """Hierarchical all-reduce over ``nodes`` x ``ranks_per_node`` ranks (rank = node x ranks_per_node + local):
    a ring reduce-scatter inside each node leaves local rank i with the node's sum of one shard (1/g of the
    buffer, g = ranks_per_node); the ranks holding the same shard, one per node, all-reduce it across the
    nodes by ``inter`` (any of :data:`scaledl.comm.cost.ALLREDUCE_ALGORITHMS`); a ring all-gather inside each
    node spreads the shards. Every NIC then carries 1/g of the buffer, and the g inter-node all-reduces run
    at once. This is Horovod's hierarchical all-reduce (NCCL reduce-scatter, MPI all-reduce, NCCL
    all-gather; Sergeev and Del Balso, "Horovod: fast and easy distributed deep learning in TensorFlow",
    arXiv:1802.05799, 2018; the three-phase form is in the horovod repository since its pull request 411,
    2018). Jia et al., "Highly Scalable Deep Learning Training System with Mixed-Precision: Training ImageNet
    in Four Minutes", arXiv:1807.11205, 2018, also all-reduce in two levels, inside groups of GPUs and then
    across the groups.

    >>> from scaledl.comm.schedule import run
    >>> sched = hierarchical(3, 4, 24)              # 3 nodes x 4 GPUs
    >>> len(sched), sched.transfers                 # 3 + 4 + 3 rounds; 12 messages each
    (10, 120)
    >>> run(sched, [np.full(24, r) for r in range(12)])[7][:3]
    array([66, 66, 66])

    Raises:
        ValueError: nodes or ranks_per_node < 1, length < 0, an unknown inter-node algorithm.
    """
    if inter not in ALLREDUCE_ALGORITHMS:
        raise ValueError(f"inter must be an allreduce algorithm, one of {', '.join(ALLREDUCE_ALGORITHMS)}; "
                         f"got {inter!r}")
    nodes, g = count("nodes", nodes, 1), count("ranks_per_node", ranks_per_node, 1)
    length = count("length", length, 0)
    return Schedule(f"hierarchical({inter})", nodes * g, length, tuple(_two_level(nodes, g, length, inter)))


def torus_2d(rows: int, cols: int, length: int) -> Schedule:
    """2D-torus all-reduce over a ``rows`` x ``cols`` grid (rank = row x cols + col): reduce-scatter by ring
    along every row, all-reduce by ring along every column among the ranks holding the same shard,
    all-gather by ring along every row (Mikami et al., "Massively Distributed SGD: ImageNet/ResNet-50
    Training in a Flash", arXiv:1811.05233, 2018). The bandwidth term is the flat ring's, 2 n (p-1)/p, but
    the rounds are 2 (rows + cols - 2) instead of 2 (p - 1).

    >>> from scaledl.comm.schedule import run
    >>> sched = torus_2d(3, 5, 15)
    >>> len(sched), sched.transfers                 # 2 (5-1) row rounds + 2 (3-1) column rounds
    (12, 180)
    >>> int(run(sched, [np.full(15, r) for r in range(15)])[14][-1])   # 0 + 1 + ... + 14
    105

    Raises:
        ValueError: rows or cols < 1, length < 0.
    """
    rows, cols, length = count("rows", rows, 1), count("cols", cols, 1), count("length", length, 0)
    return Schedule("torus_2d", rows * cols, length, tuple(_two_level(rows, cols, length, "ring")))


def _ring_arrays(q: int, length: int):
    """:func:`_ring`'s rounds on ranks 0 .. q-1 as arrays (src, dst, start, stop, is_reduce), empties kept."""
    i = np.arange(q)
    b = np.asarray(bounds(length, q), dtype=np.int64)
    for is_reduce, shift in ((True, 0), (False, 1)):
        for s in range(q - 1):
            blk = (i + shift - s) % q
            yield i, (i + 1) % q, b[blk], b[blk + 1], np.full(q, is_reduce)


def _as_arrays(rnd) -> tuple:
    a = np.array([(t.src, t.dst, t.start, t.stop, t.op == "reduce") for t in rnd], dtype=np.int64).reshape(-1, 5)
    return a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4].astype(bool)


def hierarchical_rounds(nodes: int, ranks_per_node: int, length: int, *, inter: str = "ring"):
    """The rounds of :func:`hierarchical` as arrays ``(src, dst, start, stop, is_reduce)``, one tuple per round
    in the same order, without a :class:`Transfer` per message: at 512 nodes x 8 GPUs the schedule is 4.2
    million messages, which as objects take seconds to build and, at about 200 bytes each, 0.8 GB to hold. The format of
    :func:`scaledl.comm.fastsim.ring_rounds`; :func:`torus_2d` is ``inter="ring"`` on its rows.

    >>> [len(r[0]) for r in hierarchical_rounds(3, 4, 24)]        # as len(hierarchical(3, 4, 24)) rounds
    [12, 12, 12, 12, 12, 12, 12, 12, 12, 12]

    Raises:
        ValueError: as :func:`hierarchical`.
    """
    if inter not in ALLREDUCE_ALGORITHMS:
        raise ValueError(f"inter must be an allreduce algorithm, one of {', '.join(ALLREDUCE_ALGORITHMS)}; "
                         f"got {inter!r}")
    nodes, g = count("nodes", nodes, 1), count("ranks_per_node", ranks_per_node, 1)
    length = count("length", length, 0)
    b = np.asarray(bounds(length, g), dtype=np.int64)

    def keep(src, dst, start, stop, is_reduce):
        k = stop > start
        return (src, dst, start, stop, is_reduce) if k.all() else (src[k], dst[k], start[k], stop[k], is_reduce[k])

    def intra(phase_rounds):
        base = np.repeat(np.arange(nodes) * g, g)
        for src, dst, start, stop, is_reduce in phase_rounds:
            yield keep(base + np.tile(src, nodes), base + np.tile(dst, nodes), np.tile(start, nodes),
                       np.tile(stop, nodes), np.tile(is_reduce, nodes))

    ring = list(_ring_arrays(g, length)) if g > 1 else []
    out = [r for r in intra(ring[:g - 1])]
    local: dict[int, list] = {}  # the inter-node algorithm's rounds on each shard length, as arrays
    shards = []
    for i in range(g):
        lo, hi = int(b[(i + 1) % g]), int(b[(i + 1) % g + 1])
        if hi - lo not in local:
            if nodes == 1:
                local[hi - lo] = []
            elif inter == "ring":
                local[hi - lo] = list(_ring_arrays(nodes, hi - lo))
            else:  # the other algorithms' rounds over the nodes are short (a few per lg nodes): convert them
                from scaledl.comm.algorithms import _BUILDERS

                local[hi - lo] = [_as_arrays(rnd) for rnd in _BUILDERS[inter](nodes, hi - lo)]
        shards.append((i, lo, local[hi - lo]))
    for k in range(max((len(r) for _, _, r in shards), default=0)):
        parts = [(r[k][0] * g + i, r[k][1] * g + i, r[k][2] + lo, r[k][3] + lo, r[k][4])
                 for i, lo, r in shards if k < len(r)]
        out.append(keep(*(np.concatenate(col) for col in zip(*parts))))
    out += [r for r in intra(ring[g - 1:])]
    return [r for r in out if len(r[0])]
