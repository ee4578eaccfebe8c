"""The record data-parallel runs, predicted by :mod:`scaledl.comm.cluster_model` and held against what was published.

Each :class:`RecordRun` describes one published run as a :class:`~scaledl.comm.cluster_model.DataParallelRun`
(every hardware constant with its source in ``hardware``), the figure its authors published (a
:class:`Published`: the value, what kind of figure it is, the paper and the table or figure it comes from, and
how it was checked), and computes the model's prediction with :func:`~scaledl.comm.cluster_model.predict`
(closed forms) and the relative error. Figures of two kinds:

  - ``"efficiency"``: per-GPU throughput of the run against one node, as the papers define scaling efficiency
    (the model's :attr:`Prediction.efficiency`);
  - ``"samples_per_s"``: images per second over the whole run, from a time to train: epochs x 1,281,167
    ImageNet images / seconds. That figure includes everything the run spent (evaluation, input pipeline,
    start-up) and the model only the training steps, so it over-predicts by what those cost.

A row whose error passes its tolerance carries the ``reason`` (what the model leaves out), so that a change
to the model that fixes it shows up in the tests. Calibrations stay per accelerator and model
(:data:`~scaledl.comm.cluster_model.P100_RESNET50`, :data:`~scaledl.comm.cluster_model.V100_RESNET50` and the two
below), never per run.

>>> goyal = RECORD_RUNS[0]
>>> goyal.name, goyal.published.kind, goyal.published.value
('Goyal et al. 2017', 'efficiency', 0.9)
>>> round(goyal.predicted, 2), f"{goyal.error:+.0%}", goyal.within_tolerance
(0.83, '-8%', True)
>>> [r.name for r in RECORD_RUNS if not r.within_tolerance]
['Akiba et al. 2017, 15 minutes', 'MLPerf v0.7, NVIDIA, 768 A100']
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from scaledl.comm import topology
from scaledl.comm.cluster_model import (ALGORITHMS, KERNEL_OVERHEAD_s, P100_RESNET50, RESNET50_KERNELS_PER_STEP,
                                        RESNET50_TRAIN_FLOP, SGD_MOMENTUM_FP32_B_PER_PARAM,
                                        SGD_MOMENTUM_MIXED_B_PER_PARAM, V100_RESNET50, Calibration,
                                        DataParallelRun, Prediction, fixed_overhead_s, predict)
from scaledl.comm.plan import FLOP_PER_MULTIPLY_ADD, RESNET50_PARAMS, TRAIN_OVER_FORWARD
from scaledl.perf import hardware
from scaledl.perf.progress import IMAGENET_TRAIN_IMAGES

__all__ = ["TOLERANCE", "FIGURE_KINDS", "Published", "RecordRun", "RECORD_RUNS", "record", "table",
           "node_doublings", "scaling_curve", "view_scaling", "A100_RESNET50", "P100_INCEPTION3",
           "INCEPTION3_PARAMS", "ETHERNET_LATENCY_s", "P100_BATCH32_CHECK"]

# The tolerance the chapter states: a prediction within 25 % of the published figure counts as a hit.
TOLERANCE = 0.25
FIGURE_KINDS = ("efficiency", "samples_per_s")

# GPU to GPU over Ethernet through the hosts' network stacks: an assumed order of magnitude (TCP or RoCE
# through a top-of-rack switch is a few to tens of microseconds), not a measurement of these clusters.
ETHERNET_LATENCY_s = 10e-6

# Inception V3: 23.9 M parameters (Keras Applications table, keras.io/api/applications); "about 5 billion
# multiply-adds" per 299x299 image (Szegedy et al., "Rethinking the Inception Architecture", CVPR 2016,
# section 1). Kernels per training step: 94 convolutions, each with a batch norm and a ReLU, plus pools and
# concatenations, ~300 forward, x 3 with the backward pass: an estimate in the way of
# RESNET50_KERNELS_PER_STEP, not a profile.
INCEPTION3_PARAMS = 23.9e6
INCEPTION3_TRAIN_FLOP = FLOP_PER_MULTIPLY_ADD * TRAIN_OVER_FORWARD * 5e9
INCEPTION3_KERNELS_PER_STEP = 900


def _fixed_s(kernels: int, bytes_per_param: int, params: float, accelerator: str) -> float:
    return fixed_overhead_s(kernels=kernels, kernel_overhead_s=KERNEL_OVERHEAD_s, optimizer_B=bytes_per_param * params,
                            memory_Bps=hardware.get(accelerator).memory_bandwidth_GBps * 1e9)


# P100, Inception V3, fp32: 142 images/s at batch 64 on one P100 of a DGX-1 (TensorFlow "Benchmarks" page,
# May 2017, training on synthetic data, in tensorflow/tensorflow docs_src/performance/benchmarks.md; verified
# offline). The same page gives 128 images/s at batch 32 (see P100_BATCH32_CHECK for ResNet-50).
P100_INCEPTION3 = Calibration.from_throughput(
    "P100 SXM2", "Inception V3", flop_per_sample=INCEPTION3_TRAIN_FLOP, batch=64, samples_per_s=142.0,
    fixed_s=_fixed_s(INCEPTION3_KERNELS_PER_STEP, SGD_MOMENTUM_FP32_B_PER_PARAM, INCEPTION3_PARAMS, "P100"),
    source="TensorFlow benchmarks (May 2017), DGX-1 P100, 1 GPU, synthetic data: 142 img/s at batch 64 "
           "(verified offline); fixed part a roofline of kernel overheads and the SGD update")
# What the same TensorFlow page measured at batch 32 on one P100, against which the calibrations' small-batch
# fall can be checked (the roofline fixed part under-estimates it): (model, batch, images/s).
P100_BATCH32_CHECK = (("ResNet-50", 32, 195.0), ("Inception V3", 32, 128.0))
# A100 80GB SXM4, ResNet-50 v1.5, mixed precision: 2,180 images/s at batch 256 on one GPU of a DGX A100
# (NVIDIA DeepLearningExamples, MxNet/Classification/RN50v1.5/README.md, "Training performance: NVIDIA DGX
# A100 (8x A100 80GB)", mxnet-20.12 container, `benchmark.py -n 1 -b 256 --dtype float16`; verified offline).
A100_RESNET50 = Calibration.from_throughput(
    "A100", "ResNet-50", flop_per_sample=RESNET50_TRAIN_FLOP, batch=256, samples_per_s=2180.0,
    fixed_s=_fixed_s(RESNET50_KERNELS_PER_STEP, SGD_MOMENTUM_MIXED_B_PER_PARAM, RESNET50_PARAMS, "A100"),
    source="NVIDIA DeepLearningExamples MXNet ResNet-50 v1.5 README, DGX A100 80GB, 1 GPU, AMP: 2,180 img/s "
           "at batch 256 (verified offline); fixed part a roofline of kernel overheads and the SGD update")

# MLPerf Training v0.7 (2020), closed division, NVIDIA, ResNet-50 on MXNet, from the result logs in
# github.com/mlcommons/training_results_v0.7 (NVIDIA/results/<system>/resnet/result_0.txt; read offline):
# run_start to run_stop in seconds, the last epoch_num, and the per-GPU batch of the system's config file
# (NVIDIA/benchmarks/resnet/implementations/mxnet/config_*.sh).
MLPERF07_N96 = dict(gpus=768, batch=45, epochs=59, seconds=63.181)    # dgxa100_n96: 96 DGX A100, batch 34,560
MLPERF07_N1 = dict(gpus=8, batch=408, epochs=41, seconds=2366.663)    # dgxa100: 1 DGX A100, batch 3,264


def _samples_per_s(epochs: int, seconds: float) -> float:
    return epochs * IMAGENET_TRAIN_IMAGES / seconds


@dataclass(frozen=True)
class Published:
    """A published figure: its ``value``, its ``kind`` (one of FIGURE_KINDS), where it comes from (authors,
    title, venue, year, table or figure) and how it was checked (``verified``)."""

    value: float
    kind: str
    source: str
    verified: str

    def __post_init__(self):
        if self.kind not in FIGURE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(FIGURE_KINDS)}; got {self.kind!r}")
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real):
            raise TypeError(f"value must be a number, got {self.value!r} ({type(self.value).__name__})")
        if not (math.isfinite(self.value) and self.value > 0):
            raise ValueError(f"value must be a positive finite number, got {self.value!r}")
        if self.kind == "efficiency" and self.value > 1:
            raise ValueError(f"value must be a fraction in (0, 1] for an efficiency, got {self.value!r}")
        for name in ("source", "verified"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise ValueError(f"{name} must be a non-empty string, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class RecordRun:
    """One published run: ``run`` as the cluster model sees it, the ``published`` figure, where each hardware
    constant comes from (``hardware``), and, for a row whose error passes ``tolerance``, the ``reason``."""

    name: str
    run: DataParallelRun
    published: Published
    hardware: str
    reason: str = ""
    tolerance: float = TOLERANCE

    def __post_init__(self):
        if not isinstance(self.run, DataParallelRun):
            raise TypeError(f"run must be a DataParallelRun, got {type(self.run).__name__}")
        if not isinstance(self.published, Published):
            raise TypeError(f"published must be a Published, got {type(self.published).__name__}")
        if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, numbers.Real) \
                or not 0 < self.tolerance < 1:
            raise ValueError(f"tolerance must be a fraction in (0, 1), got {self.tolerance!r}")
        if not isinstance(self.reason, str):
            raise TypeError(f"reason must be a str, got {self.reason!r}")

    @property
    def prediction(self) -> Prediction:
        return predict(self.run)

    @property
    def predicted(self) -> float:
        """The model's value of the published figure's kind."""
        p = self.prediction
        return p.efficiency if self.published.kind == "efficiency" else p.samples_per_s

    @property
    def error(self) -> float:
        """(predicted - published) / published."""
        return (self.predicted - self.published.value) / self.published.value

    @property
    def within_tolerance(self) -> bool:
        return abs(self.error) <= self.tolerance


_GOYAL = ("Goyal, Dollar, Girshick, Noordhuis, Wesolowski, Kyrola, Tulloch, Jia and He, \"Accurate, Large "
          "Minibatch SGD: Training ImageNet in 1 Hour\", arXiv:1706.02677, 2017")
_AKIBA = ("Akiba, Suzuki and Fukuda, \"Extremely Large Minibatch SGD: Training ResNet-50 on ImageNet in 15 "
          "Minutes\", arXiv:1711.04325, 2017")
_MIKAMI = ("Mikami, Suganuma, U-chupala, Tanaka and Kageyama, \"ImageNet/ResNet-50 Training in 224 Seconds\", "
           "arXiv:1811.05233, 2018")
_NVIDIA_BLOG = ("reproduced in NVIDIA's blog post \"Sony Breaks ResNet-50 Training Record with NVIDIA V100 Tensor "
                "Core GPUs\" (developer.nvidia.com, 2018), read offline")
_HOROVOD = ("Sergeev and Del Balso, \"Horovod: fast and easy distributed deep learning in TensorFlow\", "
            "arXiv:1802.05799, 2018")
_MLPERF = ("MLPerf Training v0.7 (MLCommons, 2020), closed division, NVIDIA; result logs in "
           "github.com/mlcommons/training_results_v0.7")

# The runs with two published figures each: one description, two rows.
_AKIBA_RUN = DataParallelRun(P100_RESNET50, gpus=1024, gpus_per_node=8, nics_per_node=2, nic_Bps=56e9 / 8,
                             batch=32, gradient_bytes=2, algorithm="hierarchical")
_MLPERF_RUN = DataParallelRun(A100_RESNET50, gpus=MLPERF07_N96["gpus"], gpus_per_node=8, intra_Bps=300e9,
                              nics_per_node=8, nic_Bps=200e9 / 8, batch=MLPERF07_N96["batch"], gradient_bytes=2,
                              algorithm="hierarchical", bucket_B=64 * 2 ** 20)

RECORD_RUNS: tuple[RecordRun, ...] = (
    RecordRun(
        "Goyal et al. 2017",
        DataParallelRun(P100_RESNET50, gpus=256, gpus_per_node=8, nic_Bps=50e9 / 8,
                        nic_latency_s=ETHERNET_LATENCY_s, batch=32, algorithm="hierarchical",
                        inter_algorithm="rabenseifner"),
        Published(0.90, "efficiency", f"{_GOYAL}, abstract: ~90 % scaling efficiency from 8 to 256 GPUs",
                  "abstract read offline (arXiv listing); the ~ is theirs"),
        "256 P100 (abstract), 8 per server with NVLink and one 50 Gb/s Ethernet NIC per server (Mikami et al. "
        "2018, table of scaling efficiencies, '50Gbit Ethernet'; 8 per server from memory of section 5); batch "
        "8192 / 256 = 32 per GPU (abstract); recursive halving and doubling between servers (Goyal et al., "
        "section 4, from memory); overlap of all-reduce and backward pass not modelled; Ethernet latency "
        "assumed (ETHERNET_LATENCY_s)"),
    RecordRun(
        "Akiba et al. 2017",
        _AKIBA_RUN,
        Published(0.80, "efficiency", f"{_MIKAMI}, table of GPU scaling efficiencies (Akiba et al.: 1024 P100, "
                  "InfiniBand FDR, 80 %)", f"{_NVIDIA_BLOG}; Akiba et al.'s own text not read offline"),
        "1024 P100 (abstract), 128 nodes of 8 with two FDR InfiniBand links of 56 Gb/s each (NVIDIA GTC 2018 "
        "slides, as chapter 16 cites them; 'Infiniband FDR' in Mikami et al.'s table); batch 32k / 1024 = 32 "
        "per GPU (abstract); fp16 gradients (from memory, not verified offline); NVLink 1 links of 20 GB/s "
        "inside the node (topology.NVLINK1_P100_LINK_Bps)"),
    RecordRun(
        "Akiba et al. 2017, 15 minutes",
        _AKIBA_RUN,
        Published(_samples_per_s(90, 15 * 60), "samples_per_s", f"{_AKIBA}, abstract: 90 epochs in 15 minutes "
                  "on 1024 P100 = 90 x 1,281,167 images / 900 s", "abstract read offline (arXiv listing)"),
        "as the row above",
        reason="input pipeline and protocol overheads: the 15 minutes hold everything the run spent "
               "(evaluation, data loading, start-up, the optimizer switch), and Chainer's speed per GPU is not "
               "TensorFlow's of the calibration, whose own batch-32 figure the roofline fixed part already "
               "over-predicts (P100_BATCH32_CHECK)"),
    RecordRun(
        "Mikami et al. 2018",
        DataParallelRun(V100_RESNET50, gpus=1088, gpus_per_node=4, intra_Bps=2 * 25e9, nics_per_node=2,
                        nic_Bps=100e9 / 8, batch=32, gradient_bytes=2, algorithm="torus_2d"),
        Published(0.9162, "efficiency", f"{_MIKAMI}, table of GPU scaling efficiencies (this work: 1088 V100, "
                  "InfiniBand EDR x2, 91.62 %)", _NVIDIA_BLOG),
        "ABCI nodes of 4 V100 SXM2 with two EDR InfiniBand links of 100 Gb/s ('Infiniband EDR x2' in the "
        "table); two NVLink 2 links of 25 GB/s between each pair of the node's GPUs (NVIDIA V100 whitepaper "
        "2017 for the link; the pairing from memory); batch 34k / 1088 ~ 32 per GPU (the table's batch "
        "'34K->68K' is for 2176 GPUs; per-GPU batch of this measurement not verified offline); fp16 "
        "gradients (from memory); 2D-torus with one node per row"),
    RecordRun(
        "Horovod (Sergeev and Del Balso 2018)",
        DataParallelRun(P100_INCEPTION3, gpus=128, gpus_per_node=4, intra_Bps=topology.PCIE3_X16_Bps,
                        intra_latency_s=2 * topology.PCIE_HOP_LATENCY_s, nic_Bps=25e9 / 8,
                        nic_latency_s=ETHERNET_LATENCY_s, params=INCEPTION3_PARAMS, batch=64,
                        algorithm="ring", overlap=1.0, bucket_B=64 * 2 ** 20),
        Published(0.88, "efficiency", f"{_HOROVOD}, figure comparing Horovod with standard distributed "
                  "TensorFlow on 25 GbE TCP: 88 % scaling efficiency for Inception V3 and ResNet-101 on 128 "
                  "GPUs", "the paper's text not read offline: through a third-party summary of the paper "
                  "(rajatbisht.net) and Horovod's README of October 2017 (32 servers of 4 Pascal GPUs, 25 Gb/s "
                  "RoCE: 90 %), read offline"),
        "32 servers of 4 Pascal GPUs and one 25 Gb/s NIC (Horovod README, 2017); the GPUs on PCIe 3 x16 inside "
        "the server (assumed); batch 64 per GPU (Horovod docs/benchmarks, tf_cnn_benchmarks command, shown for "
        "ResNet-101); ring all-reduce over all GPUs (NCCL 2); Tensor Fusion buckets of 64 MB that overlap the "
        "backward pass (README: 'interleave communication and computation'); against one server of 4 GPUs, "
        "where the paper's figure is against one GPU"),
    RecordRun(
        "MLPerf v0.7, NVIDIA, 768 A100",
        _MLPERF_RUN.replace(reference_batch=MLPERF07_N1["batch"]),
        Published((_samples_per_s(MLPERF07_N96["epochs"], MLPERF07_N96["seconds"]) / MLPERF07_N96["gpus"])
                  / (_samples_per_s(MLPERF07_N1["epochs"], MLPERF07_N1["seconds"]) / MLPERF07_N1["gpus"]),
                  "efficiency", f"{_MLPERF}: per-GPU images/s of 96 DGX A100 (59 epochs in 63.2 s at 45 per "
                  "GPU) against 1 DGX A100 (41 epochs in 2,367 s at 408 per GPU), first run of each",
                  "result logs and config files read offline"),
        "DGX A100: 8 A100 on NVSwitch, 300 GB/s per GPU and direction (NVIDIA DGX A100 datasheet, from "
        "memory), 8 HDR InfiniBand NICs of 200 Gb/s (same, from memory); batch 45 and 408 per GPU, fp16 "
        "gradients, Horovod fusion buffer of 64 MB and no overlap of all-reduce and backward pass "
        "(config_DGXA100_multi_96x8x45.sh: 'no NCCL and BWD overlap', MXNET_HOROVOD_NUM_GROUPS=1)",
        reason="small-batch overheads: at 45 images per GPU the step costs more than the roofline fixed part "
               "(kernel launches and the optimizer update) says, so the model's batch efficiency is too high; "
               "the measured times also hold the evaluation every 4 epochs, which weighs more in a 63 s run "
               "than in a 40-minute one"),
    RecordRun(
        "MLPerf v0.7, time to train",
        _MLPERF_RUN,
        Published(_samples_per_s(MLPERF07_N96["epochs"], MLPERF07_N96["seconds"]), "samples_per_s",
                  f"{_MLPERF}, dgxa100_n96 result_0: 59 epochs in 63.2 s = 59 x 1,281,167 images / 63.181 s",
                  "result log read offline"),
        "as the row above"),
)


def record(name: str) -> RecordRun:
    """The row of RECORD_RUNS called ``name``."""
    for r in RECORD_RUNS:
        if r.name == name:
            return r
    raise ValueError(f"name must be one of {[r.name for r in RECORD_RUNS]}; got {name!r}")


def _figure(kind: str, value: float) -> str:
    return f"{value:.0%}" if kind == "efficiency" else f"{value / 1e3:,.0f}k img/s"


def table(runs=RECORD_RUNS) -> str:
    """The rows as text: run, hardware, published figure, prediction, error, and a mark where the error
    passes the tolerance."""
    lines = [f"{'run':<38} {'GPUs':>5} {'per node':>8} {'NIC':>9} {'algorithm':<13} {'published':>13} "
             f"{'predicted':>13} {'error':>6}"]
    for r in runs:
        run, pub = r.run, r.published
        nic = f"{run.nics_per_node}x{run.nic_Bps * 8 / 1e9:.0f}Gb/s"
        mark = "" if r.within_tolerance else "  > tolerance"
        lines.append(f"{r.name:<38} {run.gpus:>5} {run.gpus_per_node:>8} {nic:>9} {run.algorithm:<13} "
                     f"{_figure(pub.kind, pub.value):>13} {_figure(pub.kind, r.predicted):>13} "
                     f"{r.error:>+6.0%}{mark}")
    return "\n".join(lines)


def node_doublings(per_node: int, up_to: int) -> list[int]:
    """GPU counts from one node of ``per_node`` GPUs, doubling, up to ``up_to``, and ``up_to`` itself when it
    is not on the way (1088 GPUs in nodes of 4: 4, 8, ..., 1024, 1088)."""
    if isinstance(per_node, bool) or not isinstance(per_node, numbers.Integral) or per_node < 1:
        raise ValueError(f"per_node must be a positive int, got {per_node!r}")
    if isinstance(up_to, bool) or not isinstance(up_to, numbers.Integral) or up_to < per_node:
        raise ValueError(f"up_to must be an int >= per_node={per_node}, got {up_to!r}")
    counts = [per_node * 2 ** k for k in range(int(math.log2(up_to // per_node)) + 1)]
    return counts if counts[-1] == up_to else counts + [int(up_to)]


def scaling_curve(run: DataParallelRun, gpu_counts) -> np.ndarray:
    """The model's scaling efficiency of ``run`` at each GPU count (whole nodes), against one node."""
    if not isinstance(run, DataParallelRun):
        raise TypeError(f"run must be a DataParallelRun, got {type(run).__name__}")
    counts = list(gpu_counts)
    if not counts:
        raise ValueError("gpu_counts must hold at least one GPU count, got none")
    return np.array([predict(run.replace(gpus=g)).efficiency for g in counts])


def view_scaling(nic_Gbps: float = 50.0, algorithm: str = "hierarchical", max_gpus: int = 256,
                 name: str = "Goyal et al. 2017"):
    """Scaling efficiency against GPU count for the run ``name`` with its NIC at ``nic_Gbps`` per link and
    ``algorithm``, from one node to ``max_gpus`` GPUs (doubling), with the published figure marked.

    Raises:
        ValueError: nic_Gbps not positive, an unknown algorithm or name, max_gpus below one node.
    """
    import matplotlib.pyplot as plt

    r = record(name)
    if isinstance(nic_Gbps, bool) or not isinstance(nic_Gbps, numbers.Real) or not nic_Gbps > 0:
        raise ValueError(f"nic_Gbps must be a positive number, got {nic_Gbps!r}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}")
    per_node = r.run.gpus_per_node
    if isinstance(max_gpus, bool) or not isinstance(max_gpus, numbers.Integral) or max_gpus < per_node:
        raise ValueError(f"max_gpus must be an int >= gpus_per_node={per_node}, got {max_gpus!r}")
    run = r.run.replace(nic_Bps=nic_Gbps * 1e9 / 8, algorithm=algorithm)
    counts = node_doublings(per_node, max_gpus)
    eff = scaling_curve(run, counts)
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(counts, eff * 100, "o-", label=f"model: {nic_Gbps:g} Gb/s per NIC, {algorithm}")
    if r.published.kind == "efficiency":
        ax.plot([r.run.gpus], [r.published.value * 100], "k*", ms=12, label=f"published ({r.name})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("scaling efficiency against one node (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"{r.name}: {r.run.calibration.accelerator}, {r.run.batch} per GPU")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig

