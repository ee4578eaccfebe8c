"""Catanzaro's all-reduce table (OpenMPI against SVAIL's own all-reduce) and a model of what could give it.

The table is from Bryan Catanzaro, "Scaling Deep Learning", slides, Baidu SVAIL, about 2016. It gives GPU
counts, two times and a gain, and nothing else: no unit, no message size, no network, no OpenMPI version.
Two facts can still be read from it:

- The gains recompute from the times (:func:`recomputed_gains`).
- Both times *fall* as GPUs are added. An all-reduce of a fixed ``n`` bytes per rank cannot: every
  algorithm moves at least 2 (p-1)/p n bytes through each rank's link, which grows with p. So the bytes each
  GPU reduces must shrink as p grows (a fixed total, strong scaling), or the times are totals over fewer
  all-reduces (a fixed amount of training data, p times fewer steps per GPU). The two are indistinguishable
  from the table; :func:`staged_vs_ring` assumes n = n_4 x 4 / p, which covers both.

:func:`staged_vs_ring` is a two-mechanism model of the gain, with every constant an assumption stated here:

- "ours": a topology-aware ring (GPU peer-to-peer inside a node, one InfiniBand crossing per node): the
  alpha-beta ring time with beta the slowest link on the ring (PCIe inside a node, the NIC across nodes).
- "staged": the same ring, but every step copies the block to host memory, moves it through host memory
  (or the NIC), copies it back, and reduces it on the CPU, one after the other, with a larger software
  latency. This is what an MPI without GPU-direct support did with GPU buffers in 2015-2016.

The ratio then has three regimes: inside a node the staging overhead over PCIe peer-to-peer, across nodes the
staging overhead over the shared InfiniBand bottleneck (smaller), and at many GPUs (small per-GPU messages) the
ratio of the two software latencies.

>>> [round(g, 1) for g in recomputed_gains()]
[21.4, 19.8, 15.5, 6.1, 2.3, 3.8]
"""

from __future__ import annotations

import numpy as np

from scaledl.comm.topology import PCIE3_X16_Bps

__all__ = ["SVAIL_ALLREDUCE_TABLE", "IB_FDR_4X_Bps", "HOST_COPY_Bps", "CPU_REDUCE_Bps", "recomputed_gains",
           "staged_vs_ring"]

# (GPUs, OpenMPI all-reduce, SVAIL's all-reduce, gain as printed): Catanzaro, "Scaling Deep Learning", SVAIL
# slides (~2016). The times have no unit in the slides.
SVAIL_ALLREDUCE_TABLE = (
    (4, 55359.1, 2587.4, 21.4),
    (8, 48881.6, 2470.9, 19.8),
    (16, 21562.6, 1393.7, 15.5),
    (32, 8191.8, 1339.6, 6.1),
    (64, 1395.2, 611.0, 2.3),
    (128, 1602.1, 422.6, 3.8),
)
# InfiniBand FDR 4x, the common cluster network of 2015-2016: 14.0625 Gb/s x 4 lanes x 64/66 encoding / 8
# bits = 6.8 GB/s per direction (InfiniBand Trade Association roadmap; approximate).
IB_FDR_4X_Bps = 14.0625e9 * 4 * 64 / 66 / 8
# A host-memory copy (MPI's shared-memory transport copies twice through a bounce buffer) and a one-core float32
# sum that streams two inputs and one output from DRAM: orders of magnitude for a 2015 Xeon, assumptions of
# the model, not measurements.
HOST_COPY_Bps = 5e9
CPU_REDUCE_Bps = 2e9


def recomputed_gains(table=SVAIL_ALLREDUCE_TABLE) -> list[float]:
    """OpenMPI time / SVAIL time for each row (the slides print them rounded to 0.1)."""
    return [openmpi / ours for _, openmpi, ours, _ in table]


def staged_vs_ring(p, *, bytes_at_4: float, alpha_ring_s: float = 10e-6, alpha_staged_s: float = 40e-6,
                   gpus_per_node: int = 8, pcie_Bps: float = PCIE3_X16_Bps, nic_Bps: float = IB_FDR_4X_Bps,
                   host_copy_Bps: float = HOST_COPY_Bps, cpu_reduce_Bps: float = CPU_REDUCE_Bps):
    """(ours_s, staged_s): the model's all-reduce times for ``p`` GPUs (an int or an array), per-GPU bytes
    ``bytes_at_4 x 4 / p``; see the module docstring for the mechanisms.

    Inside a node (p <= gpus_per_node) the ring's bottleneck is a PCIe link and the staged ring's bytes
    cross PCIe twice, a host copy and a CPU sum; across nodes the NIC replaces PCIe peer-to-peer for ours and
    the host copy for the staged ring.

    >>> ours, staged = staged_vs_ring(4, bytes_at_4=1e9, alpha_ring_s=0, alpha_staged_s=0)
    >>> round(float(staged / ours), 2)  # (2 / PCIe + 1 / host copy + 1 / CPU sum) / (1 / PCIe)
    13.03

    Raises:
        ValueError: p < 1, or a size, latency or bandwidth that is negative (bandwidths: not positive).
    """
    p = np.asarray(p)
    if p.size and (not np.all(p == np.floor(p)) or np.min(p) < 1):
        raise ValueError(f"p must hold whole numbers of GPUs >= 1, got {p.tolist()}")
    for name, value in (("bytes_at_4", bytes_at_4), ("alpha_ring_s", alpha_ring_s),
                        ("alpha_staged_s", alpha_staged_s)):
        if not value >= 0:
            raise ValueError(f"{name} must be >= 0, got {value!r}")
    for name, value in (("pcie_Bps", pcie_Bps), ("nic_Bps", nic_Bps), ("host_copy_Bps", host_copy_Bps),
                        ("cpu_reduce_Bps", cpu_reduce_Bps), ("gpus_per_node", gpus_per_node)):
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    pf = p.astype(np.float64)
    n = bytes_at_4 * 4 / pf
    inside = pf <= gpus_per_node
    beta_ours = np.where(inside, 1 / pcie_Bps, 1 / nic_Bps)
    beta_staged = 2 / pcie_Bps + 1 / cpu_reduce_Bps + np.where(inside, 1 / host_copy_Bps, 1 / nic_Bps)
    steps, share = 2 * (pf - 1), 2 * (pf - 1) / pf * n
    ours = steps * alpha_ring_s + share * beta_ours
    staged = steps * alpha_staged_s + share * beta_staged
    return (float(ours), float(staged)) if p.ndim == 0 else (ours, staged)
