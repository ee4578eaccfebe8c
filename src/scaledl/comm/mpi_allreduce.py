"""The book's all-reduces over a real MPI, and how they compare with MPICH's ``MPI_Allreduce``. Functions taking
``comm`` run inside an MPI program (:func:`scaledl.comm.mpi.launch` starts one); mpi4py is imported only inside
the functions that need it. :mod:`scaledl.comm.mpi` gives these names too.

- :func:`ring_allreduce`: the ring written out with ``Sendrecv``, as a student writes it (lab 05's Task 2.1).
- :func:`schedule_allreduce`: any schedule played with ``Sendrecv`` (one partner in the round) or
  ``Isend``/``Irecv`` (several), so the same algorithm runs on NumPy, on the simulator and over MPI;
  :func:`rank_plan`: what one rank executes of it.
- :func:`time_allreduce`: ours against ``MPI_Allreduce``; :mod:`scaledl.comm.mpi_bench` prints the table.

Lab 05's grading run leaves this module out (:mod:`scaledl.course.view`); :func:`scaledl.comm.mpi.launch`, which
the grader's MPI runner needs, stays.
"""

from __future__ import annotations

import time

import numpy as np

from scaledl._optional import require
from scaledl.comm.algorithms import build
from scaledl.comm.two_level import hierarchical

__all__ = ["ring_allreduce", "rank_plan", "schedule_allreduce", "time_allreduce"]


def _mpi(purpose: str):
    """mpi4py's ``MPI`` module, or a ModuleNotFoundError naming the ``[mpi]`` extra."""
    return require("mpi4py.MPI", f"scaledl.comm.mpi_allreduce.{purpose}")


def ring_allreduce(comm, x: np.ndarray) -> np.ndarray:
    """Sum of ``x`` over the ranks of ``comm``, by a ring: p-1 steps of reduce-scatter, p-1 of all-gather.

    Step s: send block (rank - s) to the right neighbour, receive block (rank - s - 1) from the left one
    and add it in; then pass the finished blocks on the same way. Blocks differ in size by at most one
    element, so any length works, even one shorter than p.
    """
    p, rank = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True).ravel()
    if p == 1:
        return out
    b = [(i * out.size) // p for i in range(p + 1)]
    scratch = np.empty(b[1] - b[0] + 1, dtype=out.dtype)
    right, left = (rank + 1) % p, (rank - 1) % p
    for step in range(2 * (p - 1)):
        send = (rank - step) % p  # in the all-gather, the block finished one step earlier: same formula
        recv = (send - 1) % p
        n_recv = b[recv + 1] - b[recv]
        comm.Sendrecv(out[b[send]:b[send + 1]], dest=right, sendtag=step,
                      recvbuf=scratch[:n_recv], source=left, recvtag=step)
        if step < p - 1:
            out[b[recv]:b[recv + 1]] += scratch[:n_recv]
        else:
            out[b[recv]:b[recv + 1]] = scratch[:n_recv]
    return out


def rank_plan(schedule, rank: int) -> list[tuple[list, list]]:
    """(sends, receives) of ``rank`` in each round of ``schedule``: what one MPI process executes."""
    mine = []
    for rnd in schedule.rounds:
        sends = [t for t in rnd if t.src == rank]
        recvs = [t for t in rnd if t.dst == rank]
        mine.append((sends, recvs))
    return mine


def schedule_allreduce(comm, x: np.ndarray, algorithm: str = "ring", *, plan=None) -> np.ndarray:
    """Sum of ``x`` over the ranks of ``comm`` by playing ``algorithm``'s schedule with point-to-point calls.

    Receives land in scratch buffers and are applied after the round, so every send reads the state before
    the round, as in :func:`scaledl.comm.schedule.run`. Pass ``plan=rank_plan(schedule, rank)`` (what
    :func:`time_allreduce` does) to skip rebuilding the schedule on every call.
    """
    MPI = _mpi("schedule_allreduce")

    out = np.array(x, copy=True).ravel()
    rank = comm.Get_rank()
    if plan is None:
        plan = rank_plan(build(algorithm, comm.Get_size(), out.size), rank)
    # one scratch buffer for the whole call, cut per round: fresh pages every round cost page faults that
    # made a 2-rank Rabenseifner twice as slow as the ring at 16 MiB
    scratch = np.empty(max((sum(t.stop - t.start for t in r) for _, r in plan), default=0), dtype=out.dtype)
    for tag, (sends, recvs) in enumerate(plan):
        bufs, at = [], 0
        for t in recvs:
            bufs.append(scratch[at:at + t.stop - t.start])
            at += t.stop - t.start
        if len(sends) == 1 and len(recvs) == 1:
            s, r = sends[0], recvs[0]
            comm.Sendrecv(out[s.start:s.stop], dest=s.dst, sendtag=tag, recvbuf=bufs[0], source=r.src,
                          recvtag=tag)
        else:
            reqs = [comm.Irecv(buf, source=t.src, tag=tag) for t, buf in zip(recvs, bufs)]
            reqs += [comm.Isend(out[t.start:t.stop], dest=t.dst, tag=tag) for t in sends]
            MPI.Request.Waitall(reqs)
        for t, buf in zip(recvs, bufs):
            if t.op == "reduce":
                out[t.start:t.stop] += buf
            else:
                out[t.start:t.stop] = buf
    return out


def time_allreduce(comm, nbytes: int, algorithm: str = "ring", *, repeats: int = 5,
                   dtype=np.float32, ranks_per_node: int | None = None) -> tuple[float, float]:
    """(ours_s, mpich_s): seconds per all-reduce of ``nbytes`` by the book's ``algorithm`` and by
    ``MPI_Allreduce``, the slowest rank's time, best of ``repeats`` after a warm-up, checked equal.

    ``algorithm="hierarchical"`` is :func:`scaledl.comm.two_level.hierarchical` with ``ranks_per_node`` ranks
    on each host (rank = node x ranks_per_node + local, as ``-hosts a:g,b:g`` places them) and a ring across.
    """
    MPI = _mpi("time_allreduce")

    x = np.random.default_rng(comm.Get_rank()).integers(-8, 8, int(nbytes) // np.dtype(dtype).itemsize)
    x = x.astype(dtype)  # small integers: every summation order gives the same float, so results compare
    if algorithm == "ring":
        ours = lambda: ring_allreduce(comm, x)  # noqa: E731
    else:
        if algorithm == "hierarchical":
            g = int(ranks_per_node or 0)
            if g < 1 or comm.Get_size() % g:
                raise ValueError(f"ranks_per_node must divide the {comm.Get_size()} ranks for the hierarchical "
                                 f"all-reduce, got {ranks_per_node!r}")
            sched = hierarchical(comm.Get_size() // g, g, x.size)
        else:
            sched = build(algorithm, comm.Get_size(), x.size)
        plan = rank_plan(sched, comm.Get_rank())
        ours = lambda: schedule_allreduce(comm, x, plan=plan)  # noqa: E731
    ref = np.empty_like(x)
    theirs = lambda: comm.Allreduce(x, ref, op=MPI.SUM)  # noqa: E731
    best = []
    for fn in (ours, theirs):
        fn()
        times = []
        for _ in range(repeats):
            comm.Barrier()
            t0 = time.perf_counter()
            fn()
            times.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        best.append(min(times))
    if not np.array_equal(ours(), ref):
        raise AssertionError(f"{algorithm} all-reduce differs from MPI_Allreduce on rank {comm.Get_rank()}")
    return best[0], best[1]
