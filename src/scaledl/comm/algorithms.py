"""The all-reduce algorithms as schedules (:mod:`scaledl.comm.transfers`): ring, recursive doubling and
Rabenseifner (folded to a power of two as MPICH folds them), binomial tree, parameter server and NCCL's double
binary tree; :func:`build` makes one, :func:`allreduce` plays it on NumPy buffers. :mod:`scaledl.comm.schedule`
gives these names beside the data model; the two-level algorithms are :mod:`scaledl.comm.two_level`.

It holds lab 05's answers (the ring, :func:`build`, :func:`allreduce`), which the lab's grading run leaves out
(:mod:`scaledl.course.view`): nothing the lab needs imports this module at module level.

>>> import numpy as np
>>> bufs = [np.arange(5) * (r + 1) for r in range(3)]        # 3 ranks, 5 elements: 5 is not a multiple of 3
>>> allreduce(bufs, algorithm="ring")[2]
array([ 0,  6, 12, 18, 24])
>>> [len(r) for r in build("ring", 3, 5)]                    # 2 (p-1) rounds of p messages
[3, 3, 3, 3]
"""

from __future__ import annotations

import numpy as np

from scaledl._args import count
from scaledl.comm.cost import ALLREDUCE_ALGORITHMS
from scaledl.comm.transfers import Schedule, Transfer, _round, bounds, run

__all__ = ["build", "allreduce", "btree", "double_binary_tree"]


def _ring(p: int, n: int) -> list:
    b = bounds(n, p)
    rounds = []
    for s in range(p - 1):  # reduce-scatter: after it rank i holds the sum of block (i + 1) mod p
        rounds.append(_round(Transfer(i, (i + 1) % p, b[(i - s) % p], b[(i - s) % p + 1], "reduce")
                             for i in range(p)))
    for s in range(p - 1):  # all-gather: pass the finished blocks on around the ring
        rounds.append(_round(Transfer(i, (i + 1) % p, b[(i + 1 - s) % p], b[(i + 1 - s) % p + 1], "copy")
                             for i in range(p)))
    return rounds


def _fold(p: int):
    """MPICH's fold to p' = 2^floor(lg p): (p', rank of each survivor's new index, fold round, unfold round)."""
    p2 = 1 << (p.bit_length() - 1)
    rem = p - p2
    old = [2 * i + 1 for i in range(rem)] + list(range(2 * rem, p))  # new rank -> old rank
    return p2, old, rem


def _folded(p: int, n: int, body) -> list:
    p2, old, rem = _fold(p)
    rounds = [_round(Transfer(2 * i, 2 * i + 1, 0, n, "reduce") for i in range(rem))] if rem else []
    for rnd in body(p2, n):
        rounds.append(_round(Transfer(old[t.src], old[t.dst], t.start, t.stop, t.op) for t in rnd))
    if rem:
        rounds.append(_round(Transfer(2 * i + 1, 2 * i, 0, n, "copy") for i in range(rem)))
    return rounds


def _recursive_doubling(p2: int, n: int) -> list:
    rounds, mask = [], 1
    while mask < p2:
        rounds.append(_round(Transfer(r, r ^ mask, 0, n, "reduce") for r in range(p2)))
        mask <<= 1
    return rounds


def _rabenseifner(p2: int, n: int) -> list:
    b = bounds(n, p2)
    lo, hi = [0] * p2, [p2] * p2  # the block range each rank is still responsible for
    rounds, mask = [], p2 >> 1
    while mask:  # reduce-scatter by recursive halving: keep one half, send the other to the partner
        rnd = []
        for r in range(p2):
            mid = (lo[r] + hi[r]) // 2
            send = (lo[r], mid) if r & mask else (mid, hi[r])
            rnd.append(Transfer(r, r ^ mask, b[send[0]], b[send[1]], "reduce"))
        for r in range(p2):
            mid = (lo[r] + hi[r]) // 2
            lo[r], hi[r] = (mid, hi[r]) if r & mask else (lo[r], mid)
        rounds.append(_round(rnd))
        mask >>= 1
    mask = 1
    while mask < p2:  # all-gather by recursive doubling: swap what each has, the ranges double
        rounds.append(_round(Transfer(r, r ^ mask, b[lo[r]], b[hi[r]], "copy") for r in range(p2)))
        lo, hi = [min(lo[r], lo[r ^ mask]) for r in range(p2)], [max(hi[r], hi[r ^ mask]) for r in range(p2)]
        mask <<= 1
    return rounds


def _binomial(p: int, n: int) -> list:
    rounds, mask = [], 1
    while mask < p:  # reduce to rank 0: in round k, rank r = mask mod 2 mask sends its subtree's sum down
        rounds.append(_round(Transfer(r, r - mask, 0, n, "reduce") for r in range(mask, p, 2 * mask)))
        mask <<= 1
    mask >>= 1
    while mask:  # broadcast from rank 0 along the same tree, largest subtree first
        rounds.append(_round(Transfer(r, r + mask, 0, n, "copy") for r in range(0, p - mask, 2 * mask)))
        mask >>= 1
    return rounds


def _parameter_server(p: int, n: int) -> list:
    if p == 1:
        return []
    return [_round(Transfer(r, 0, 0, n, "reduce") for r in range(1, p)),
            _round(Transfer(0, r, 0, n, "copy") for r in range(1, p))]


def btree(p: int, rank: int) -> tuple[int, list[int]]:
    """(parent, children) of ``rank`` in NCCL's binary tree over ``p`` ranks (src/graph/trees.cc,
    ``ncclGetBtree``): rank 0 is the root with one child; parent -1 for the root.

    >>> [btree(8, r) for r in (0, 4, 2, 1)]
    [(-1, [4]), (0, [2, 6]), (4, [1, 3]), (2, [])]
    """
    bit = 1
    while bit < p and not (bit & rank):
        bit <<= 1
    if rank == 0:
        return -1, ([bit >> 1] if p > 1 else [])
    up = (rank ^ bit) | (bit << 1)
    if up >= p:
        up = rank ^ bit
    low = bit >> 1
    children = [rank - low] if low else []
    while low and rank + low >= p:
        low >>= 1
    if low:
        children.append(rank + low)
    return up, children


def double_binary_tree(p: int) -> list[list[int]]:
    """The parents of NCCL's two trees: tree 0 is :func:`btree`; tree 1 is its mirror (rank -> p-1-rank)
    for even p, or the same tree shifted by one rank for odd p, so most ranks are leaves in one tree.

    >>> double_binary_tree(4)
    [[-1, 2, 0, 2], [1, 3, 1, -1]]
    """
    tree0 = [btree(p, r)[0] for r in range(p)]
    if p % 2 == 0:
        tree1 = [-1 if tree0[p - 1 - r] < 0 else p - 1 - tree0[p - 1 - r] for r in range(p)]
    else:
        tree1 = [-1 if tree0[(r - 1) % p] < 0 else (tree0[(r - 1) % p] + 1) % p for r in range(p)]
    return [tree0, tree1]


def _double_binary_tree(p: int, n: int) -> list:
    half = bounds(n, 2)
    up: dict[int, list] = {}
    down: dict[int, list] = {}
    for t, parent in enumerate(double_binary_tree(p)):
        start, stop = half[t], half[t + 1]
        height, depth = [0] * p, [0] * p
        for r in sorted(range(p), key=lambda r: _depth(parent, r), reverse=True):
            if parent[r] >= 0:
                height[parent[r]] = max(height[parent[r]], height[r] + 1)
        for r in range(p):
            depth[r] = _depth(parent, r)
        for r in range(p):
            if parent[r] >= 0:  # a rank sends up once all its children have, and receives at its depth
                up.setdefault(height[r], []).append(Transfer(r, parent[r], start, stop, "reduce"))
                down.setdefault(depth[r], []).append(Transfer(parent[r], r, start, stop, "copy"))
    return ([_round(up[k]) for k in sorted(up)] + [_round(down[k]) for k in sorted(down)])


def _depth(parent: list[int], r: int) -> int:
    d = 0
    while parent[r] >= 0:
        r, d = parent[r], d + 1
    return d


_BUILDERS = {
    "ring": _ring,
    "recursive_doubling": lambda p, n: _folded(p, n, _recursive_doubling),
    "rabenseifner": lambda p, n: _folded(p, n, _rabenseifner),
    "binomial": _binomial,
    "parameter_server": _parameter_server,
    "double_binary_tree": _double_binary_tree,
}


def build(algorithm: str, p: int, length: int) -> Schedule:
    """The schedule of ``algorithm`` for ``p`` ranks and buffers of ``length`` elements.

    Raises:
        ValueError: unknown algorithm, p < 1 or length < 0.
    """
    if algorithm not in _BUILDERS:
        raise ValueError(f"unknown allreduce algorithm {algorithm!r}; expected one of "
                         f"{', '.join(ALLREDUCE_ALGORITHMS)}")
    p, length = count("p", p, 1), count("length", length, 0)
    rounds = [r for r in _BUILDERS[algorithm](p, length) if r] if p > 1 else []
    return Schedule(algorithm, p, length, tuple(rounds))


def allreduce(buffers, algorithm: str = "ring") -> list[np.ndarray]:
    """Every rank's result of an all-reduce (sum) of ``buffers``, one 1-D array per rank, by ``algorithm``.

    Raises:
        ValueError: an empty list, buffers that are not 1-D or of different lengths, an unknown algorithm.
        TypeError: buffers of different dtypes.
    """
    buffers = [np.asarray(b) for b in buffers]
    if not buffers:
        raise ValueError("buffers must hold one array per rank, got an empty list")
    shapes = [b.shape for b in buffers]
    if any(len(s) != 1 for s in shapes) or len(set(shapes)) != 1:
        raise ValueError(f"buffers must be 1-D arrays of one length, got shapes {shapes}")
    dtypes = sorted({str(b.dtype) for b in buffers})
    if len(dtypes) > 1:
        raise TypeError(f"buffers must share one dtype (a reduction adds them in place), got {dtypes}")
    return run(build(algorithm, len(buffers), shapes[0][0]), buffers)
