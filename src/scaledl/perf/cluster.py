"""From one GPU to a rack, a cluster and an accelerator: the sizing arithmetic of NVIDIA's 2018 slides, checked.

NVIDIA's slides "Deep Learning is an HPC Workload" (2018, seed 003) size a *DGX POD*, one 35 kW rack of DGX
servers, storage and switches, by developers and experiments: "One DGX-1/developer/experiment/day", where an
experiment is (footnote, verbatim) "300,000 0.5M images * 120 epochs @ 480 images/sec Resnet-18 backbone
detection network". This module recomputes the rack units, the power, the hours an experiment takes and the
input bandwidth it needs; and holds the literature figures that chapter 19 sets against accelerators.

>>> round(experiment_hours(500_000), 1), round(experiment_hours(300_000), 1)   # 120 epochs at 480 images/s
(34.7, 20.8)
>>> DGX1_POD.rack_units, DGX2_POD.rack_units                                   # (min, max) with 1-2 RU of IB
((41, 42), (44, 45))
>>> SATURN_V.gpus, SATURN_V.fp16_tensor_PFLOPS
(5280, 660.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scaledl._args import positive

# ---------------------------------------------------------------------------------------------- servers
V100_FP16_TENSOR_TFLOPS = 125.0  # NVIDIA Tesla V100 datasheet (SXM2): 125 TFLOPS "deep learning"


@dataclass(frozen=True)
class Server:
    """A DGX server: its height, GPUs and maximum power."""

    name: str
    rack_units: int
    gpus: int
    power_kW: float
    citation: str

    @property
    def fp16_tensor_PFLOPS(self) -> float:
        return self.gpus * V100_FP16_TENSOR_TFLOPS / 1000


DGX1 = Server("DGX-1 (V100)", 3, 8, 3.5, "NVIDIA DGX-1 datasheet (2018): 8 Tesla V100, 3 RU, 3,500 W maximum")
DGX2 = Server("DGX-2", 10, 16, 10.0, "NVIDIA DGX-2 datasheet (2018): 16 Tesla V100 32 GB, 12 NVSwitches, 2 PFLOPS, "
              "10 RU, 10 kW")


# ---------------------------------------------------------------------------------------------- the POD
@dataclass(frozen=True)
class Pod:
    """One DGX POD rack as seed 003 lists it."""

    server: Server
    servers: int
    rack_height_RU: int
    developers_claimed: str
    storage_servers: int = 12          # "Twelve storage servers (12 x 1 RU = 12 RU)"
    management_switch_RU: int = 1      # "10 GbE (min) storage and management switch (1 RU)"
    ib_switch_RU: tuple = (1, 2)       # "Mellanox 100 Gbps intrarack high speed network switches (1 or 2 RU)"
    rack_power_kW: float = 35.0        # "Reference Architecture in a Single 35 kW High-Density Rack"

    @property
    def rack_units(self) -> tuple[int, int]:
        """Height of everything listed, with the smaller and the larger IB switch."""
        base = self.servers * self.server.rack_units + self.storage_servers + self.management_switch_RU
        return base + self.ib_switch_RU[0], base + self.ib_switch_RU[1]

    @property
    def server_power_kW(self) -> float:
        return self.servers * self.server.power_kW

    @property
    def gpus(self) -> int:
        return self.servers * self.server.gpus


DGX1_POD = Pod(DGX1, 9, 42, "five developers; one to two DGX-1 per developer; two experiments per developer per day")
DGX2_POD = Pod(DGX2, 3, 48, "at least three developers; one DGX-2 per developer; two experiments per developer per "
                            "day")

# The footnote's experiment.
FOOTNOTE_EPOCHS = 120
FOOTNOTE_IMAGES_PER_S = 480.0  # on one DGX-1, ResNet-18 backbone detection network
EXPERIMENTS_PER_DEVELOPER_DAY = 2


def experiment_hours(images: float, *, epochs: float = FOOTNOTE_EPOCHS,
                     images_per_s: float = FOOTNOTE_IMAGES_PER_S) -> float:
    """Hours of one training run: ``images x epochs / images_per_s``."""
    return positive("images", images) * positive("epochs", epochs) / positive("images_per_s", images_per_s) / 3600


def developers_per_pod(pod: Pod, server_days_per_experiment: float) -> float:
    """Developers a POD keeps busy at two experiments a day each, when one experiment takes
    ``server_days_per_experiment`` server-days (1 for the DGX-1 slide, 1/2 for the DGX-2 one)."""
    positive("server_days_per_experiment", server_days_per_experiment)
    return pod.servers / (EXPERIMENTS_PER_DEVELOPER_DAY * server_days_per_experiment)


# ---------------------------------------------------------------------------------------------- clusters
@dataclass(frozen=True)
class Cluster:
    name: str
    nodes: int
    server: Server

    @property
    def gpus(self) -> int:
        return self.nodes * self.server.gpus

    @property
    def fp16_tensor_PFLOPS(self) -> float:
        return self.nodes * self.server.fp16_tensor_PFLOPS


SATURN_V = Cluster("DGX SATURNV (Volta)", 660, DGX1)  # seed 003: "660 Nodes with a total of 5280 Volta GPUs",
#                                                       "660 PFLOPs for AI training"


# ---------------------------------------------------------------------------------------------- input
def input_bandwidth_MBps(images_per_s: float, bytes_per_image: float) -> float:
    """Bytes a training job must read per second (MB/s, 1 MB = 1e6 B), before decoding and augmentation."""
    return positive("images_per_s", images_per_s) * positive("bytes_per_image", bytes_per_image) / 1e6


TEN_GBE_MBps = 10e9 / 8 / 1e6       # one 10 GbE link, the POD's storage network minimum: 1,250 MB/s
EDR_IB_100G_MBps = 100e9 / 8 / 1e6  # one 100 Gb/s InfiniBand link: 12,500 MB/s
DGX1_READ_CACHE_TB = 4 * 1.92       # DGX-1 datasheet: 4 x 1.92 TB SSD in RAID 0, used as a read cache


# ---------------------------------------------------------------------------------------------- accelerators
# FPGA against ASIC: Dally's round number and Kuon and Rose's measurements are defined once, in
# scaledl.perf.accelerators (chapter 05 uses them too): TALK_FPGA_OVER_ASIC, KUON_ROSE_FPGA2006,
# KUON_ROSE_TCAD2007.


@dataclass(frozen=True)
class ChipResult:
    """One published efficiency point of an accelerator test chip."""

    workload: str
    TOPS_per_W: float
    supply_V: float


KELLER_CITATION = ("Keller et al., 'A 17-95.6 TOPS/W Deep Learning Inference Accelerator with Per-Vector Scaled "
                   "4-bit Quantization for Transformers in 5nm', VLSI 2022; extended in IEEE JSSC 2023")
KELLER_4BIT_LAYER = ChipResult("4-bit benchmarking layer", 95.6, 0.46)
KELLER_BERT_BASE = ChipResult("BERT-Base (4-bit, per-vector scaled)", 38.7, 0.67)


def tops_per_W(tops: float, watts: float) -> float:
    """Efficiency of a chip running at ``tops`` (tera-operations per second) and ``watts``."""
    return positive("tops", tops) / positive("watts", watts)


def overhead_share(overhead_pJ: float, useful_pJ: float) -> float:
    """Fraction of an instruction's energy spent on overhead rather than the operation."""
    o, u = positive("overhead_pJ", overhead_pJ), positive("useful_pJ", useful_pJ)
    return o / (o + u)


def ops_to_amortise(overhead_pJ: float, useful_pJ: float, target_share: float = 0.5) -> int:
    """Operations one instruction must do so that overhead is at most ``target_share`` of its energy."""
    o, u = positive("overhead_pJ", overhead_pJ), positive("useful_pJ", useful_pJ)
    if not 0 < target_share < 1:
        raise ValueError(f"target_share must be in (0, 1), got {target_share!r}")
    return math.ceil(o * (1 - target_share) / (target_share * u))


# NVIDIA Research's accelerators that seed 002 names, with the comparisons their papers' abstracts make.
EIE_VS_GPU = {"speed": 13.0, "energy_efficiency": 3400.0}  # Han et al., "EIE: Efficient Inference Engine on
#   Compressed Deep Neural Network", ISCA 2016: vs a GPU running the same uncompressed network
SCNN_VS_DENSE = {"performance": 2.7, "energy": 2.3}  # Parashar et al., "SCNN: An Accelerator for
#   Compressed-sparse Convolutional Neural Networks", ISCA 2017: vs a comparably provisioned dense accelerator
