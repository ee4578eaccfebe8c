"""A cluster model of a data-parallel training run: step time, samples per second and scaling efficiency.

One frozen :class:`DataParallelRun` describes the run: the accelerator's calibration for the model
(:class:`Calibration`: its sustained FLOP/s and a fixed per-step overhead, so that throughput falls as the
per-GPU batch shrinks), the GPU count and GPUs per node, the link inside a node, the NICs of a node, the
gradient bytes, the per-GPU batch, the all-reduce algorithm and how much of the all-reduce hides behind the
backward pass. :func:`predict` adds up

    compute(b)  = fixed_s + b x flop_per_sample / sustained_FLOPs          (one GPU, per-GPU batch b)
    allreduce   = the gradients in buckets of bucket_B bytes, each bucket a whole all-reduce (its latency
                  paid again), from the closed forms of :mod:`scaledl.comm.cost` or played on
                  :func:`scaledl.comm.topology.cluster` by :mod:`scaledl.comm.netsim` (``simulate=True``)
    hidden      = min(overlap x allreduce, backward_fraction x compute)     (backward ~ 2/3 of the step)
    step        = compute + allreduce - hidden

and compares the GPUs' throughput with one node of the same run at ``reference_batch`` per GPU (by default
the run's own batch). The efficiency factors into what the smaller per-GPU batch costs
(``batch_efficiency``: one GPU's compute-only throughput at b against that at reference_batch) and what the
communication costs (``communication_efficiency`` of the run against that of the one-node baseline):

    efficiency = batch_efficiency x communication_efficiency / node_communication_efficiency
    loss_to_batch = 1 - batch_efficiency,  loss_to_communication = batch_efficiency - efficiency

Calibrations are per accelerator and model, never per run. Links are end to end: ``intra_latency_s`` is
GPU to GPU inside a node, ``nic_latency_s`` GPU to GPU between nodes. Which links each algorithm uses:

  - ``ring``: one ring over all GPUs, node after node, so one GPU per node sends through a NIC at a time;
    every step lasts as long as its slower message: 2 (p-1) max(alpha_nic + n/p beta_nic,
    alpha_intra + n/p beta_intra).
  - ``hierarchical``: ring reduce-scatter in the node, ``inter_algorithm`` across nodes on 1/g of the
    buffer, ring all-gather in the node (:func:`scaledl.comm.cost.hierarchical_allreduce_time`). The g
    inter-node all-reduces run at once, so g / nics_per_node of them share each NIC: its beta is
    multiplied by that share.
  - ``torus_2d`` (Mikami et al. 2018): rows of ``torus_cols`` GPUs (a multiple of gpus_per_node; default one
    node) reduce-scatter and all-gather by ring, columns all-reduce by ring across nodes, every GPU of a node
    at once (the NIC share as above). With one node per row it is the hierarchical ring.
  - ``double_binary_tree`` (NCCL): :func:`scaledl.comm.cost.allreduce_time`'s pipelined bound, with the
    larger latency and the slower link of the two.

With GPUs sharing a NIC (nics_per_node < gpus_per_node) the closed forms charge the share on the NIC's
bandwidth and the latency once per message: an upper bound on what netsim shows, where messages queued on one
NIC overlap their latencies; the two meet when the buckets are bandwidth-bound.

>>> run = DataParallelRun(P100_RESNET50, gpus=256, gpus_per_node=8, nic_Bps=50e9 / 8, batch=32)
>>> p = predict(run)
>>> round(p.efficiency, 3), round(p.loss_to_batch, 3)   # against one node at the same batch
(0.832, 0.0)
>>> q = predict(run.replace(reference_batch=64))          # against one node at 64 per GPU
>>> round(q.efficiency, 3), round(q.loss_to_batch, 3), round(q.loss_to_communication, 3)
(0.793, 0.02, 0.187)
>>> round(predict(run.replace(overlap=1.0, bucket_B=1e6)).efficiency, 3)   # hidden behind the backward pass
1.0
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

from scaledl.comm import cost, netsim, schedule, topology
from scaledl.comm.plan import RESNET50_FORWARD_MULTIPLY_ADDS, RESNET50_PARAMS, training_flop_per_example
from scaledl.perf import hardware

__all__ = ["ALGORITHMS", "Calibration", "DataParallelRun", "Prediction", "predict", "fixed_overhead_s",
           "P100_RESNET50", "V100_RESNET50", "RESNET50_TRAIN_FLOP", "RESNET50_KERNELS_PER_STEP",
           "KERNEL_OVERHEAD_s", "SIMULATE_MAX_GPUS"]

ALGORITHMS = ("ring", "hierarchical", "torus_2d", "double_binary_tree")
# netsim's fast path handles a few thousand ranks in seconds; beyond this, use the closed forms.
SIMULATE_MAX_GPUS = 4096

# ResNet-50 training FLOP per 224x224 image: 2 x 3 x 4.1 G multiply-adds (scaledl.comm.plan, where the
# multiply-adds are cited) = 24.6 GFLOP.
RESNET50_TRAIN_FLOP = training_flop_per_example(RESNET50_FORWARD_MULTIPLY_ADDS)
# Kernels in one ResNet-50 training step, counted from the architecture (He et al. 2016, table 1): forward
# 53 convolutions + 53 batch norms + 49 ReLUs + 16 residual adds + pool, fc, softmax ~ 175; backward about
# twice that; ~525 in all. An estimate of this model, not a profile.
RESNET50_KERNELS_PER_STEP = 525
# What a kernel costs beyond its arithmetic (launch, ramp-up and tail of a small grid): ~10 us. Approximate,
# from memory (CUDA launch latency is ~5 us; the rest is an assumption of this model).
KERNEL_OVERHEAD_s = 10e-6
# Bytes per parameter of one SGD-with-momentum update: read w, g, v and write w, v in fp32 = 20 B; with
# mixed precision add the fp16 weight copy written (2 B) and fp32 master weights: 22 B. Counted, not measured.
SGD_MOMENTUM_FP32_B_PER_PARAM = 20
SGD_MOMENTUM_MIXED_B_PER_PARAM = 22


def _positive(name: str, value, *, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    if not (value > 0 and (allow_inf or math.isfinite(value))):
        what = "a positive number (math.inf allowed)" if allow_inf else "a positive finite number"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return float(value)


def _nonnegative(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _fraction(name: str, value) -> float:
    v = _nonnegative(name, value)
    if v > 1:
        raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")
    return v


def _count(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def fixed_overhead_s(*, kernels: int, kernel_overhead_s: float, optimizer_B: float, memory_Bps: float) -> float:
    """A roofline of the part of a step that does not grow with the batch: ``kernels`` x
    ``kernel_overhead_s`` plus the optimizer's ``optimizer_B`` bytes of memory traffic at ``memory_Bps``.

    >>> round(fixed_overhead_s(kernels=525, kernel_overhead_s=10e-6, optimizer_B=20 * 25.6e6,
    ...                        memory_Bps=732e9) * 1e3, 2)     # ms: 5.25 + 0.70
    5.95
    """
    return (_count("kernels", kernels) * _nonnegative("kernel_overhead_s", kernel_overhead_s)
            + _nonnegative("optimizer_B", optimizer_B) / _positive("memory_Bps", memory_Bps))


@dataclass(frozen=True)
class Calibration:
    """One accelerator training one model: a step on per-GPU batch b takes
    ``fixed_s + b x flop_per_sample / sustained_FLOPs`` seconds, so throughput b / t(b) rises towards
    sustained_FLOPs / flop_per_sample as b grows and falls as it shrinks. ``source`` says where the numbers
    come from."""

    accelerator: str          # a name scaledl.perf.hardware knows
    model: str
    flop_per_sample: float    # training FLOP per sample (forward + backward)
    sustained_FLOPs: float    # FLOP/s at large batch, from a published single-GPU throughput
    fixed_s: float            # seconds per step that do not grow with the batch
    source: str = ""

    def __post_init__(self):
        hardware.get(self.accelerator)  # raises for an accelerator the book does not know
        _positive("flop_per_sample", self.flop_per_sample)
        _positive("sustained_FLOPs", self.sustained_FLOPs)
        _nonnegative("fixed_s", self.fixed_s)

    @classmethod
    def from_throughput(cls, accelerator: str, model: str, *, flop_per_sample: float, batch: int,
                        samples_per_s: float, fixed_s: float, source: str = "") -> "Calibration":
        """The calibration whose curve passes through a published (``batch``, ``samples_per_s``) point."""
        b, rate = _count("batch", batch), _positive("samples_per_s", samples_per_s)
        busy = b / rate - _nonnegative("fixed_s", fixed_s)
        if busy <= 0:
            raise ValueError(f"fixed_s must be below batch / samples_per_s = {b / rate!r} s, got {fixed_s!r}")
        return cls(accelerator, model, flop_per_sample, b * _positive("flop_per_sample", flop_per_sample) / busy,
                   fixed_s, source)

    def compute_s(self, batch) -> float:
        """Seconds of one GPU's step on ``batch`` samples, without communication."""
        return self.fixed_s + _count("batch", batch) * self.flop_per_sample / self.sustained_FLOPs

    def samples_per_s(self, batch) -> float:
        return _count("batch", batch) / self.compute_s(batch)


# P100 SXM2, ResNet-50, fp32. Published single-GPU throughput: 219 images/s at batch 64 (TensorFlow
# "Benchmarks" page, May 2017, one P100 of a DGX-1, training on synthetic data; tensorflow/tensorflow
# docs_src/performance/benchmarks.md, verified). Fixed part: 525 kernels x 10 us + 20 B/param x 25.6 M params at
# the P100's 732 GB/s (NVIDIA Tesla P100 datasheet, 2016, via scaledl.perf.hardware) = 5.95 ms. Gives ~5.5
# TFLOP/s sustained, 52 % of the P100's 10.6 fp32 TFLOPS. The same page measured 195 images/s at batch 32, where
# this curve gives 215: the roofline fixed part under-estimates what a small batch costs.
P100_RESNET50 = Calibration.from_throughput(
    "P100 SXM2", "ResNet-50", flop_per_sample=RESNET50_TRAIN_FLOP, batch=64, samples_per_s=219.0,
    fixed_s=fixed_overhead_s(kernels=RESNET50_KERNELS_PER_STEP, kernel_overhead_s=KERNEL_OVERHEAD_s,
                             optimizer_B=SGD_MOMENTUM_FP32_B_PER_PARAM * RESNET50_PARAMS,
                             memory_Bps=hardware.get("P100").memory_bandwidth_GBps * 1e9),
    source="TensorFlow benchmarks (May 2017), DGX-1 P100, 1 GPU, synthetic data: 219 img/s at batch 64 "
           "(verified); fixed part a roofline of kernel overheads and the SGD update")
# V100 SXM2 16 GB, ResNet-50 v1.5, mixed precision (tensor cores): 1,200 images/s at batch 256 (NVIDIA
# DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training performance: NVIDIA
# DGX-1 16GB (8x V100 16GB)", 1 GPU, mixed precision, pytorch-21.03 container, default batch 256 per GPU;
# verified. Earlier software was slower: the 2018 README of the same model, pytorch-18.09, gave 747 images/s).
# Fixed part as for the P100 with 22 B/param at 900 GB/s (NVIDIA Tesla V100 datasheet). Gives ~30 TFLOP/s
# sustained, 24 % of the 125 tensor TFLOPS.
V100_RESNET50 = Calibration.from_throughput(
    "V100 SXM2", "ResNet-50", flop_per_sample=RESNET50_TRAIN_FLOP, batch=256, samples_per_s=1200.0,
    fixed_s=fixed_overhead_s(kernels=RESNET50_KERNELS_PER_STEP, kernel_overhead_s=KERNEL_OVERHEAD_s,
                             optimizer_B=SGD_MOMENTUM_MIXED_B_PER_PARAM * RESNET50_PARAMS,
                             memory_Bps=hardware.get("V100").memory_bandwidth_GBps * 1e9),
    source="NVIDIA DeepLearningExamples PyTorch ResNet-50 v1.5 README (pytorch-21.03), DGX-1 V100 16GB, 1 GPU, "
           "AMP: 1,200 img/s at batch 256 (verified); fixed part a roofline of kernel overheads and the SGD "
           "update")


@dataclass(frozen=True)
class DataParallelRun:
    """A data-parallel training run. Bandwidths in bytes per second (math.inf allowed for a what-if),
    latencies in seconds, end to end from GPU to GPU."""

    calibration: Calibration
    gpus: int
    gpus_per_node: int = 8
    intra_Bps: float = topology.NVLINK1_P100_LINK_Bps      # one link per ring hop inside the node
    intra_latency_s: float = 2 * topology.NVLINK_HOP_LATENCY_s
    nics_per_node: int = 1
    nic_Bps: float = topology.IB_NDR_Bps
    nic_latency_s: float = 2 * topology.IB_HOP_LATENCY_s
    params: float = RESNET50_PARAMS
    gradient_bytes: int = 4                                 # per parameter: 4 fp32, 2 fp16
    batch: int = 32                                         # per GPU
    reference_batch: int | None = None                      # per GPU of the one-node baseline; None: batch
    algorithm: str = "hierarchical"
    inter_algorithm: str = "ring"                           # across nodes, for "hierarchical"
    torus_cols: int | None = None                           # for "torus_2d"; None: gpus_per_node
    overlap: float = 0.0                                    # fraction of the all-reduce that may hide
    backward_fraction: float = 2 / 3                        # of the compute, the part it may hide behind
    bucket_B: float | None = None                           # None: one bucket of all the gradients

    def __post_init__(self):
        if not isinstance(self.calibration, Calibration):
            raise TypeError(f"calibration must be a Calibration, got {self.calibration!r}")
        g, n = _count("gpus", self.gpus), _count("gpus_per_node", self.gpus_per_node)
        if g > n and g % n:
            raise ValueError(f"gpus must be <= gpus_per_node={n} or a multiple of it (whole nodes), got {g}")
        k = _count("nics_per_node", self.nics_per_node)
        if n % k:
            raise ValueError(f"nics_per_node must divide gpus_per_node={n} (each NIC serves the same number "
                             f"of GPUs), got {k}")
        _positive("intra_Bps", self.intra_Bps, allow_inf=True)
        _positive("nic_Bps", self.nic_Bps, allow_inf=True)
        _nonnegative("intra_latency_s", self.intra_latency_s)
        _nonnegative("nic_latency_s", self.nic_latency_s)
        _positive("params", self.params)
        _count("gradient_bytes", self.gradient_bytes)
        _count("batch", self.batch)
        if self.reference_batch is not None:
            _count("reference_batch", self.reference_batch)
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {self.algorithm!r}")
        if self.inter_algorithm not in cost.ALLREDUCE_ALGORITHMS:
            raise ValueError(f"inter_algorithm must be one of {', '.join(cost.ALLREDUCE_ALGORITHMS)}; got "
                             f"{self.inter_algorithm!r}")
        if self.torus_cols is not None:
            c = _count("torus_cols", self.torus_cols)
            if c % n or g % c:
                raise ValueError(f"torus_cols must be a multiple of gpus_per_node={n} that divides gpus={g}, "
                                 f"got {c}")
        _fraction("overlap", self.overlap)
        _fraction("backward_fraction", self.backward_fraction)
        if self.bucket_B is not None:
            _positive("bucket_B", self.bucket_B)

    def replace(self, **changes) -> "DataParallelRun":
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    @property
    def gpus_in_node(self) -> int:
        """GPUs per node that the run uses (fewer than gpus_per_node when it fits in one node)."""
        return min(self.gpus, self.gpus_per_node)

    @property
    def gradient_B(self) -> float:
        return self.params * self.gradient_bytes

    def one_node(self) -> "DataParallelRun":
        """The baseline: one node of this run at reference_batch per GPU."""
        return self.replace(gpus=self.gpus_in_node, batch=self.reference_batch or self.batch, torus_cols=None)


@dataclass(frozen=True)
class Prediction:
    step_s: float
    samples_per_s: float
    efficiency: float                      # per-GPU throughput against one node at reference_batch
    compute_s: float
    allreduce_s: float                     # all buckets, as if nothing hid
    hidden_s: float
    batch_efficiency: float
    communication_efficiency: float        # compute_s / step_s
    node_communication_efficiency: float   # the same for the one-node baseline
    loss_to_batch: float
    loss_to_communication: float
    method: str                            # "closed_form" or "netsim"


def _beta(bandwidth: float) -> float:
    return 0.0 if math.isinf(bandwidth) else 1.0 / bandwidth


def _ring_s(p: int, nbytes: float, inter: tuple[float, float], intra: tuple[float, float]) -> float:
    """A ring whose every step has a message on an inter-node link and, if nodes hold more than one of its
    ranks, on intra-node links; the step lasts as long as the slower: 2 (p-1) max over links of
    (alpha + n/p beta)."""
    return max(float(cost.allreduce_time("ring", p, nbytes, alpha=a, beta=b)) for a, b in (inter, intra))


def _closed_form(run: DataParallelRun, nbytes: float) -> float:
    g, nodes = run.gpus_in_node, run.nodes
    a_i, b_i = run.intra_latency_s, _beta(run.intra_Bps)
    a_e, b_e = run.nic_latency_s, _beta(run.nic_Bps)
    share = g / run.nics_per_node   # GPUs of a node that send through one NIC at once
    if run.gpus == 1:
        return 0.0
    if run.algorithm == "ring":
        return _ring_s(run.gpus, nbytes, (a_i, b_i) if nodes == 1 else (a_e, b_e), (a_i, b_i))
    if run.algorithm == "double_binary_tree":
        alpha, beta = (a_i, b_i) if nodes == 1 else (max(a_i, a_e), max(b_i, b_e))
        return float(cost.allreduce_time(run.algorithm, run.gpus, nbytes, alpha=alpha, beta=beta))
    if run.algorithm == "hierarchical":
        return float(cost.hierarchical_allreduce_time(nodes, g, nbytes, intra_alpha=a_i, intra_beta=b_i,
                                                      inter_alpha=a_e, inter_beta=b_e * share,
                                                      inter=run.inter_algorithm))
    cols = (run.torus_cols or g) if nodes > 1 else g       # torus_2d
    rows = run.gpus // cols
    row = _ring_s(cols, nbytes, (a_i, b_i) if cols == g else (a_e, b_e), (a_i, b_i))
    col = float(cost.allreduce_time("ring", rows, nbytes / cols, alpha=a_e, beta=b_e * share))
    return row + col


def _topology(run: DataParallelRun):
    for name in ("intra_Bps", "nic_Bps"):
        if math.isinf(getattr(run, name)):
            raise ValueError(f"{name} must be finite to simulate, got {getattr(run, name)!r}")
    return topology.cluster(run.nodes, run.gpus_in_node, nics_per_node=min(run.nics_per_node, run.gpus_in_node),
                            nodes_per_leaf=run.nodes, nvlink_Bps=run.intra_Bps,
                            nvlink_latency_s=run.intra_latency_s / 2, nic_Bps=run.nic_Bps,
                            nic_latency_s=run.nic_latency_s / 2, pcie_Bps=run.nic_Bps)


def _simulated(run: DataParallelRun, nbytes: float) -> float:
    if run.gpus == 1:
        return 0.0
    if run.gpus > SIMULATE_MAX_GPUS:
        raise ValueError(f"gpus must be <= {SIMULATE_MAX_GPUS} to simulate, got {run.gpus}; use simulate=False")
    topo = _topology(run)
    g, nodes = run.gpus_in_node, run.nodes
    if run.algorithm in ("ring", "double_binary_tree"):
        return netsim.simulate_allreduce(run.algorithm, topo, nbytes, timeline=False).time_s
    if run.algorithm == "hierarchical":
        length = g * math.lcm(nodes, 1 << (nodes.bit_length() - 1), 2)
        sched = schedule.hierarchical(nodes, g, length, inter=run.inter_algorithm)
    else:
        cols = (run.torus_cols or g) if nodes > 1 else g
        rows = run.gpus // cols
        sched = schedule.torus_2d(rows, cols, cols * rows * 2)
    return netsim.simulate(sched, topo, nbytes=nbytes, timeline=False).time_s


def _allreduce_s(run: DataParallelRun, simulate: bool) -> float:
    """All buckets one after the other, each paying its own latency."""
    one = _simulated if simulate else _closed_form
    total = run.gradient_B
    bucket = total if run.bucket_B is None else min(run.bucket_B, total)
    full = math.floor(total / bucket)
    rest = total - full * bucket
    t = full * one(run, bucket)
    if rest > 1e-9 * total:
        t += one(run, rest)
    return t


def _step(run: DataParallelRun, simulate: bool) -> tuple[float, float, float, float]:
    compute = run.calibration.compute_s(run.batch)
    comm = _allreduce_s(run, simulate)
    hidden = min(run.overlap * comm, run.backward_fraction * compute)
    return compute + comm - hidden, compute, comm, hidden


def predict(run: DataParallelRun, *, simulate: bool = False) -> Prediction:
    """Step time, samples per second and scaling efficiency of ``run``; see the module docstring.
    ``simulate=True`` plays each bucket's all-reduce on :func:`scaledl.comm.topology.cluster` with
    :mod:`scaledl.comm.netsim` (up to SIMULATE_MAX_GPUS GPUs; bucket count x one simulation each size).

    Raises:
        TypeError: run not a DataParallelRun, simulate not a bool.
        ValueError: simulate=True with more than SIMULATE_MAX_GPUS GPUs or an infinite bandwidth.
    """
    if not isinstance(run, DataParallelRun):
        raise TypeError(f"run must be a DataParallelRun, got {type(run).__name__}")
    if not isinstance(simulate, bool):
        raise TypeError(f"simulate must be True or False, got {simulate!r}")
    step, compute, comm, hidden = _step(run, simulate)
    base = run.one_node()
    base_step, base_compute, _, _ = _step(base, simulate)
    cal = run.calibration
    batch_eff = cal.samples_per_s(run.batch) / cal.samples_per_s(base.batch)
    comm_eff, node_eff = compute / step, base_compute / base_step
    eff = (run.batch / step) / (base.batch / base_step)
    return Prediction(step_s=step, samples_per_s=run.gpus * run.batch / step, efficiency=eff, compute_s=compute,
                      allreduce_s=comm, hidden_s=hidden, batch_efficiency=batch_eff,
                      communication_efficiency=comm_eff, node_communication_efficiency=node_eff,
                      loss_to_batch=1 - batch_eff, loss_to_communication=batch_eff - eff,
                      method="netsim" if simulate else "closed_form")
