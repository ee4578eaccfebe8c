"""Collective communication (Part V): the alpha-beta-gamma cost models, all-reduce algorithms as schedules
that move real data, an event-driven network simulator on topologies, and the same collectives over MPI.

- :mod:`scaledl.comm.cost`: closed forms (ring, recursive doubling, Rabenseifner, binomial, parameter
  server, NCCL's double binary tree; reduce-scatter, all-gather, broadcast) and NCCL's bus bandwidth.
- :mod:`scaledl.comm.schedule`: each algorithm as rounds of point-to-point transfers; ``allreduce`` (the data
  model in :mod:`scaledl.comm.transfers`, the algorithms in :mod:`scaledl.comm.algorithms`).
- :mod:`scaledl.comm.topology`: switch, ring, the SVAIL PCIe node, an NVSwitch node, NVLink + InfiniBand
  clusters, any networkx graph with per-link overrides.
- :mod:`scaledl.comm.netsim`: ``simulate(schedule, topology)``: time, link load and a per-rank timeline.
- :mod:`scaledl.comm.mpi`: ping-pong alpha and beta, ``launch`` (mpiexec with a timeout);
  :mod:`scaledl.comm.mpi_allreduce`: the schedules over mpi4py ``Sendrecv`` (also found in ``mpi``);
  :mod:`scaledl.comm.mpi_bench`: ours against MPICH's ``MPI_Allreduce`` (``python -m scaledl.comm.mpi_bench``).
  They import mpi4py only when called.
- :mod:`scaledl.comm.hosts`: where the ranks run (this machine, a host list or hostfile over ssh, Slurm);
  :mod:`scaledl.comm.netns`: an emulated cluster of network namespaces with shaped links;
  :mod:`scaledl.comm.cluster_bench`: ``scaledl bench mpi``, a network measured across hosts against the
  simulator on the matching topology.
- :mod:`scaledl.comm.dataparallel`: data-parallel SGD whose gradients a ring sums, as a reducer for
  :func:`scaledl.nn.train` and over MPI (``mpi_train``), bitwise the same.
- :mod:`scaledl.comm.compression`: gradient compressors (top-k, DGC, 1-bit SGD, TernGrad, QSGD, stochastic
  rounding) with real encoded sizes, and a compressed reducer; :mod:`scaledl.comm.compression.sparse_allreduce`:
  SparCML's sparse all-reduce with fill-in and the dense switch.
- :mod:`scaledl.comm.interconnect`: one DGX-2 against two DGX-1 (bisection, all-reduce, all-to-all, Amdahl),
  CPU-GPU links (PCIe against POWER9's NVLink 2).
- :mod:`scaledl.comm.views`: timeline and link-utilisation figures; ``allreduce_view`` for a widget.

>>> import numpy as np
>>> from scaledl import comm
>>> comm.allreduce([np.arange(3), np.ones(3, dtype=int)], algorithm="rabenseifner")[1]
array([1, 2, 3])
>>> net = comm.topology.switch(8, bandwidth_Bps=1e9, latency_s=1e-6)
>>> sim = comm.simulate(comm.schedule.build("ring", 8, 8), net, nbytes=1e6)
>>> round(sim.time_s, 9) == round(comm.allreduce_time("ring", 8, 1e6, alpha=1e-6, beta=1e-9), 9)
True
"""

from scaledl._absent import left_out, missing
from scaledl.comm import cost, netsim, schedule, topology
from scaledl.comm.cost import (allgather_time, allreduce_time, broadcast_time, bus_bandwidth,
                               reduce_scatter_time)
from scaledl.comm.netsim import Result, simulate
from scaledl.comm.transfers import Schedule, Transfer

try:  # lab 05's answers, left out of its grading run (scaledl._absent): the package imports without them
    from scaledl.comm.algorithms import allreduce, build
except ModuleNotFoundError as err:
    left_out(err, globals())


def __getattr__(name):
    return missing(name, __name__, globals())


__all__ = ["cost", "schedule", "topology", "netsim", "allreduce_time", "reduce_scatter_time", "allgather_time",
           "broadcast_time", "bus_bandwidth", "Schedule", "Transfer", "build", "allreduce", "Result", "simulate"]
