"""Interconnects of 2018: one DGX-2 against two DGX-1, and POWER9's NVLink to the CPU against PCIe.

NVIDIA's slides "Deep Learning is an HPC Workload" (2018) show "over 2x higher performance with NVSwitch,
DGX-2 vs multi-system interconnect", and "IBM POWER9 architecture, CPU-GPU fast connection with NVLink2".
This module puts the hardware numbers behind both into the book's alpha-beta cost model
(:mod:`scaledl.comm.cost`): a collective's time is latency plus bytes over the bottleneck bandwidth.

>>> round(bisection_Bps(DGX2_16) / bisection_Bps(TWO_DGX1_16))   # NVIDIA: "24X ... than 4X InfiniBand ports"
24
>>> round(allreduce_seconds(TWO_DGX1_16, 1e9) / allreduce_seconds(DGX2_16, 1e9), 2)   # 1 GB, bandwidth-bound
3.0
"""

from __future__ import annotations

from dataclasses import dataclass

from scaledl.comm.cost import allreduce_time
from scaledl.comm.topology import IB_HOP_LATENCY_s, NVLINK_HOP_LATENCY_s, PCIE3_X16_Bps
from scaledl._args import positive

__all__ = ["NVLINK2_LINK_Bps", "V100_NVLINKS", "NVSWITCH_PORTS", "DGX2_NVSWITCHES", "EDR_IB_PORT_Bps",
           "DGX1_IB_PORTS", "DGX2_IB_PORTS",
           "PCIE3_X16_Bps", "PCIE4_X16_Bps", "AC922_4GPU_LINKS_PER_GPU", "AC922_6GPU_LINKS_PER_GPU",
           "POWER9_DDR4_Bps", "System", "DGX2_16", "TWO_DGX1_16", "bisection_Bps", "allreduce_seconds",
           "alltoall_seconds", "job_speedup", "comm_share_for", "HostLink", "HOST_LINKS", "transfer_seconds",
           "hiding_batch"]

# NVLink 2 (V100): 25 GB/s per link and direction, six links per GPU: 150 GB/s per direction, 300 GB/s both
# ways (NVIDIA, "NVIDIA Tesla V100 GPU Architecture", whitepaper, 2017).
NVLINK2_LINK_Bps = 25e9
V100_NVLINKS = 6
# NVSwitch: 18 NVLink ports of 50 GB/s both ways, a fully connected crossbar (NVIDIA, "NVIDIA NVSwitch: The
# World's Highest-Bandwidth On-Node Switch", technical overview, 2018). DGX-2: 12 NVSwitches, six on each of
# two baseboards of eight GPUs; each GPU sends one link to each switch of its board (DGX-2 datasheet, 2018).
NVSWITCH_PORTS = 18
DGX2_NVSWITCHES = 12
# InfiniBand EDR: 100 Gb/s per port and direction. A DGX-1 has four EDR ports (DGX-1 datasheet, 2018: "4X IB
# EDR"), a DGX-2 eight (DGX-2 datasheet: "8X 100 Gb/sec InfiniBand/100 GigE").
EDR_IB_PORT_Bps = 100e9 / 8
DGX1_IB_PORTS = 4
DGX2_IB_PORTS = 8
# PCIe 4.0 x16 per direction: 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s (PCI-SIG, PCIe Base Specification
# 4.0, 2017); PCIe 3.0 x16 (15.75 GB/s) comes from scaledl.comm.topology, where it is cited.
PCIE4_X16_Bps = 16e9 * 16 * 128 / 130 / 8
# IBM Power System AC922: NVLink 2 between each POWER9 and its V100s, three links per GPU in the four-GPU model
# (8335-GTG: 75 GB/s per direction, "150 GB/s" both ways) and two in the six-GPU model (8335-GTW, Summit's
# node: 50 GB/s per direction) (A. B. Caldeira, "IBM Power System AC922 Introduction and Technical Overview",
# IBM Redpaper REDP-5472, 2018).
AC922_4GPU_LINKS_PER_GPU = 3
AC922_6GPU_LINKS_PER_GPU = 2
# POWER9 memory per socket: 8 DDR4 channels at 2666 MT/s x 8 bytes = 170.6 GB/s (same Redpaper; approximate:
# the peak of the DIMMs, sustained bandwidth is lower).
POWER9_DDR4_Bps = 8 * 2666e6 * 8


@dataclass(frozen=True)
class System:
    """GPUs on ``nodes`` servers: each GPU's bandwidth into its server's fabric, each server's to the others."""

    name: str
    nodes: int
    gpus_per_node: int
    gpu_fabric_Bps: float  # per GPU and direction, into the server's NVLink fabric
    node_network_Bps: float  # per server and direction, all its InfiniBand ports together (unused if nodes == 1)
    latency_s: float  # one ring step: across the fabric in one server, through NIC and switch between servers

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


# One DGX-2: 16 V100, each with its six NVLinks into the NVSwitch fabric, non-blocking; a step crosses two
# NVLink hops (GPU to switch to GPU).
DGX2_16 = System("one DGX-2 (NVSwitch)", 1, 16, V100_NVLINKS * NVLINK2_LINK_Bps, DGX2_IB_PORTS * EDR_IB_PORT_Bps,
                 2 * NVLINK_HOP_LATENCY_s)
# Two DGX-1 (V100), joined by their four EDR ports each. Inside a DGX-1 the hybrid cube mesh gives each GPU at
# most its six links (150 GB/s); taking that upper bound favours the DGX-1s, so the ratios below are lower
# bounds on the DGX-2's advantage. A step between servers crosses NIC, switch and NIC.
TWO_DGX1_16 = System("two DGX-1 + InfiniBand", 2, 8, V100_NVLINKS * NVLINK2_LINK_Bps,
                     DGX1_IB_PORTS * EDR_IB_PORT_Bps, 2 * IB_HOP_LATENCY_s)


def bisection_Bps(system: System) -> float:
    """Bytes per second, one direction, across a cut through the middle of the 16 GPUs: half the GPUs' fabric
    bandwidth in one server, the InfiniBand of one server between two."""
    if system.nodes == 1:
        return system.gpus // 2 * system.gpu_fabric_Bps
    return system.nodes // 2 * system.node_network_Bps


def _bus_Bps(system: System) -> float:
    # A ring over servers crosses each server's boundary once each way; NCCL runs one ring per NIC, so the
    # traffic 2 (p-1)/p n per rank leaves each server through all its ports together.
    if system.nodes == 1:
        return system.gpu_fabric_Bps
    return min(system.gpu_fabric_Bps, system.node_network_Bps)


def allreduce_seconds(system: System, nbytes: float) -> float:
    """Ring all-reduce of ``nbytes`` per GPU: 2 (p-1) alpha + 2 (p-1)/p n / bus bandwidth (comm.cost)."""
    positive("nbytes", nbytes)
    return allreduce_time("ring", system.gpus, nbytes, alpha=system.latency_s, beta=1 / _bus_Bps(system))


def alltoall_seconds(system: System, nbytes: float) -> float:
    """All-to-all: each GPU holds ``nbytes`` and sends 1/p of it to every GPU, all at once. One latency plus the
    slower of each GPU's port, (p-1)/p n over its fabric bandwidth, and each server's network, which carries
    its GPUs' share for the other servers: gpus_per_node x n x (p - gpus_per_node)/p."""
    n = positive("nbytes", nbytes)
    p, g = system.gpus, system.gpus_per_node
    port = (p - 1) / p * n / system.gpu_fabric_Bps
    network = 0.0 if system.nodes == 1 else g * n * (p - g) / p / system.node_network_Bps
    return system.latency_s + max(port, network)


def job_speedup(comm_share: float, comm_speedup: float) -> float:
    """Amdahl: a job that spends ``comm_share`` of its time communicating (not overlapped), when only the
    communication gets ``comm_speedup`` times faster: 1 / ((1 - f) + f / r)."""
    f, r = comm_share, positive("comm_speedup", comm_speedup)
    if not 0 <= f <= 1:
        raise ValueError(f"comm_share must be in [0, 1], got {f!r}")
    return 1 / ((1 - f) + f / r)


def comm_share_for(target_speedup: float, comm_speedup: float) -> float:
    """The communication share a job needs for ``target_speedup``: f = (1 - 1/S) / (1 - 1/r); above 1 (never)
    when the target is at or beyond r."""
    s, r = positive("target_speedup", target_speedup), positive("comm_speedup", comm_speedup)
    if r <= 1:
        raise ValueError(f"comm_speedup must be > 1 for any speedup, got {r!r}")
    return (1 - 1 / s) / (1 - 1 / r)


# ---------------------------------------------------------------------------------------------- host links
@dataclass(frozen=True)
class HostLink:
    """A CPU-GPU link, bandwidth per GPU and direction (peak; measured copies reach less)."""

    name: str
    Bps: float


HOST_LINKS = (
    HostLink("PCIe 3.0 x16 (x86 servers of 2018)", PCIE3_X16_Bps),
    HostLink("PCIe 4.0 x16", PCIE4_X16_Bps),
    HostLink("NVLink 2, 2 links (AC922, 6 GPUs)", AC922_6GPU_LINKS_PER_GPU * NVLINK2_LINK_Bps),
    HostLink("NVLink 2, 3 links (AC922, 4 GPUs)", AC922_4GPU_LINKS_PER_GPU * NVLINK2_LINK_Bps),
)


def transfer_seconds(nbytes: float, link: HostLink) -> float:
    """Seconds to move ``nbytes`` one way over ``link`` at its peak (bandwidth-bound: latency left out)."""
    return positive("nbytes", nbytes) / link.Bps


def hiding_batch(peak_flops: float, link: HostLink, *, bytes_per_weight: float = 2.0) -> float:
    """Examples (tokens) per step a layer needs before streaming its weights from host memory hides behind its
    math: each weight brings ``bytes_per_weight`` bytes and does one multiply-add (2 FLOP) per example, so the
    transfer hides when 2 B / bytes_per_weight >= peak_flops / bandwidth."""
    return positive("bytes_per_weight", bytes_per_weight) * positive("peak_flops", peak_flops) / (2 * link.Bps)
