"""Schedules as data: a :class:`Transfer`, a :class:`Schedule` of rounds of them, the blocks a buffer is cut
into (:func:`bounds`), a schedule played by other ranks (:func:`relabel`), and the executor that moves real data
(:func:`run`). The algorithms that build schedules are :mod:`scaledl.comm.algorithms`; both are found in
:mod:`scaledl.comm.schedule`, as the chapters import them.

A schedule is a list of rounds; a round is a list of :class:`Transfer` (rank ``src`` sends elements
``[start, stop)`` of its buffer to rank ``dst``, which adds them in, ``op="reduce"``, or overwrites,
``op="copy"``). Within a round every send reads the buffers as they were before the round, as
``MPI_Sendrecv`` does, so two ranks may swap and reduce the same range in one round.

>>> import numpy as np
>>> swap = Schedule("swap", 2, 3, ((Transfer(0, 1, 0, 3, "reduce"), Transfer(1, 0, 0, 3, "reduce")),))
>>> run(swap, [np.arange(3), np.ones(3, dtype=int)])[0]
array([1, 2, 3])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Transfer", "Schedule", "bounds", "relabel", "run"]


@dataclass(frozen=True)
class Transfer:
    """Rank ``src`` sends its elements ``[start, stop)`` to rank ``dst``, which reduces (adds) or copies."""
    src: int
    dst: int
    start: int
    stop: int
    op: str  # "reduce" or "copy"


@dataclass(frozen=True)
class Schedule:
    """An algorithm's rounds for ``p`` ranks and buffers of ``length`` elements."""
    algorithm: str
    p: int
    length: int
    rounds: tuple[tuple[Transfer, ...], ...]

    def __iter__(self):
        return iter(self.rounds)

    def __len__(self) -> int:
        return len(self.rounds)

    @property
    def transfers(self) -> int:
        """How many point-to-point messages the schedule sends."""
        return sum(len(r) for r in self.rounds)


def bounds(length: int, parts: int) -> list[int]:
    """Split ``length`` elements into ``parts`` contiguous blocks whose sizes differ by at most one.

    >>> bounds(5, 3), bounds(2, 4)
    ([0, 1, 3, 5], [0, 0, 1, 1, 2])
    """
    return [(i * length) // parts for i in range(parts + 1)]


def _round(transfers) -> tuple[Transfer, ...]:
    return tuple(t for t in transfers if t.stop > t.start)  # a rank with an empty block sends nothing


def relabel(schedule: Schedule, order) -> Schedule:
    """The same schedule with algorithm rank i played by physical rank ``order[i]``: a ring in another
    order, which is how NCCL fits a ring to a topology.

    >>> from scaledl.comm.algorithms import build
    >>> relabel(build("ring", 3, 3), [0, 2, 1]).rounds[0][0]
    Transfer(src=0, dst=2, start=0, stop=1, op='reduce')

    Raises:
        ValueError: ``order`` is not a permutation of 0 .. p-1.
    """
    order = [int(r) for r in order]
    if sorted(order) != list(range(schedule.p)):
        raise ValueError(f"order must be a permutation of 0 .. {schedule.p - 1}, got {order}")
    rounds = tuple(tuple(Transfer(order[t.src], order[t.dst], t.start, t.stop, t.op) for t in rnd)
                   for rnd in schedule.rounds)
    return Schedule(schedule.algorithm, schedule.p, schedule.length, rounds)


def run(schedule: Schedule, buffers: list[np.ndarray]) -> list[np.ndarray]:
    """Execute ``schedule`` on copies of ``buffers`` (one per rank); the rounds in order, each round's
    sends read before any of its receives land. Returns the buffers after the last round."""
    out = [np.array(b, copy=True) for b in buffers]
    for rnd in schedule.rounds:
        sent = [out[t.src][t.start:t.stop].copy() for t in rnd]
        for t, data in zip(rnd, sent):
            if t.op == "reduce":
                out[t.dst][t.start:t.stop] += data
            else:
                out[t.dst][t.start:t.stop] = data
    return out
