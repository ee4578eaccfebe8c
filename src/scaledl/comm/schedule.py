"""All-reduce algorithms as schedules of point-to-point transfers, and an executor that moves real data.

A schedule is a list of rounds; a round is a list of :class:`Transfer` (rank ``src`` sends elements
``[start, stop)`` of its buffer to rank ``dst``, which adds them in, ``op="reduce"``, or overwrites,
``op="copy"``). Within a round every send reads the buffers as they were before the round, as
``MPI_Sendrecv`` does, so two ranks may swap and reduce the same range in one round. The same schedules
run here on NumPy buffers, on the network simulator (:mod:`scaledl.comm.netsim`) and over MPI
(:mod:`scaledl.comm.mpi_allreduce`). The two-level algorithms (hierarchical, 2-D torus) are built from these in
:mod:`scaledl.comm.two_level`.

The names live in two modules, found together here: the data model (:class:`Transfer`, :class:`Schedule`,
:func:`bounds`, :func:`relabel`, :func:`run`) in :mod:`scaledl.comm.transfers`, the algorithms (:func:`build`,
:func:`allreduce`, :func:`btree`, :func:`double_binary_tree`) in :mod:`scaledl.comm.algorithms`, which lab 05's
grading run of the ring leaves out; this module then still imports, with the data model only.

>>> import numpy as np
>>> bufs = [np.arange(5) * (r + 1) for r in range(3)]        # 3 ranks, 5 elements: 5 is not a multiple of 3
>>> allreduce(bufs, algorithm="ring")[2]
array([ 0,  6, 12, 18, 24])
>>> [len(r) for r in build("ring", 3, 5)]                    # 2 (p-1) rounds of p messages
[3, 3, 3, 3]
"""

from scaledl._absent import left_out, missing
from scaledl.comm.transfers import Schedule, Transfer, bounds, relabel, run

# Left out of lab 05's grading run (scaledl._absent): the module imports all the same, without these names.
# _ring stays here for chapter 14, which shows its source.
try:
    from scaledl.comm.algorithms import _ring, allreduce, btree, build, double_binary_tree  # noqa: F401
except ModuleNotFoundError as err:
    left_out(err, globals())


def __getattr__(name):
    return missing(name, __name__, globals())


__all__ = ["Transfer", "Schedule", "build", "relabel", "allreduce", "run", "bounds", "btree", "double_binary_tree"]
