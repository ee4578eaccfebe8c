"""A cluster model of a data-parallel training run: step time, samples per second and scaling efficiency.

One frozen :class:`DataParallelRun` describes the run: the accelerator's calibration for the model
(:class:`Calibration`: its sustained FLOP/s and a fixed per-step overhead, so that throughput falls as the
per-GPU batch shrinks), the GPU count and GPUs per node, the link inside a node, the NICs of a node, the
gradient bytes, the per-GPU batch, the all-reduce algorithm, the gradient buckets and whether they overlap
the backward pass. :func:`predict` adds up

    compute(b)  = fixed_s + b x flop_per_sample / sustained_FLOPs          (one GPU, per-GPU batch b)
    allreduce   = the gradients in buckets of bucket_B bytes, each bucket a whole all-reduce (its latency
                  paid again), from the closed forms of :mod:`scaledl.comm.cost` or played on
                  :func:`scaledl.comm.topology.cluster` by :mod:`scaledl.comm.netsim` (``simulate=True``)
    exposed     = without overlap, all of it, after the backward pass; with ``overlap=True``, what is left
                  after the backward pass ends when each bucket starts as soon as its gradients exist and
                  the buckets go through the network one at a time (:func:`exposed_allreduce_s`)
    step        = compute + exposed

The backward pass is the last ``backward_fraction`` of the compute and produces the gradient bytes at an even
rate (an assumption: real networks produce their last layers' gradients first, and those layers hold most
of the parameters of a ResNet). So the last bucket can never hide: its all-reduce starts when the backward
pass ends, and one bucket of all the gradients is never hidden at all. Two more assumptions make the overlap
optimistic: every bucket gets the same slot of the backward pass (1/K of it), a smaller remainder bucket
included, and communication does not slow the backward pass (on a GPU, NCCL's kernels and copies share the SMs
and the memory bandwidth with it: one reason runs that overlap lose more than this model says).

The efficiency is the per-GPU throughput of the run against a baseline of the same run on
``reference_gpus`` GPUs (by default one node; 1 for a paper that measures against one GPU) at
``reference_batch`` per GPU (by default the run's own batch). It factors into what the smaller per-GPU batch
costs (``batch_efficiency``: one GPU's compute-only throughput at b against that at reference_batch) and what
the communication costs (``communication_efficiency`` of the run against that of the baseline):

    efficiency = batch_efficiency x communication_efficiency / node_communication_efficiency
    loss_to_batch = 1 - batch_efficiency,  loss_to_communication = batch_efficiency - efficiency

Calibrations are per accelerator, model and software, never per run: either two measured (batch, step time)
points (:meth:`Calibration.from_steps`: the fixed part is inferred, an intercept) or one published throughput
with the fixed part from a roofline of kernel launches and the optimizer update (:meth:`Calibration.from_throughput`:
the fixed part is assumed). Links are end to end: ``intra_latency_s`` is GPU to GPU inside a node,
``nic_latency_s`` GPU to GPU between nodes. Which links each algorithm uses:

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
(0.844, 0.0)
>>> q = predict(run.replace(reference_batch=64))          # against one node at 64 per GPU
>>> round(q.efficiency, 3), round(q.loss_to_batch, 3), round(q.loss_to_communication, 3)
(0.735, 0.11, 0.156)
>>> one = predict(run.replace(overlap=True))              # one bucket: nothing can hide
>>> one.hidden_s, round(one.efficiency, 3)
(0.0, 0.844)
>>> round(predict(run.replace(overlap=True, bucket_B=1e6)).efficiency, 3)   # 1 MB buckets behind the backward
0.998
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from scaledl._args import count, nonnegative, positive
from scaledl.comm import cost, netsim, topology, two_level
from scaledl.comm.calibration import (KERNEL_OVERHEAD_s, P100_RESNET50, P100_TF_BENCHMARKS,  # noqa: F401
                                      RESNET50_KERNELS_PER_STEP, RESNET50_TRAIN_FLOP, V100_RESNET50, Calibration,
                                      _fraction, fixed_overhead_s)
from scaledl.comm.plan import RESNET50_PARAMS

__all__ = ["ALGORITHMS", "INTER_ALGORITHMS", "DataParallelRun", "Prediction", "predict", "exposed_allreduce_s",
           "communication_only", "SIMULATE_MAX_GPUS",
           # from scaledl.comm.calibration, which this module extends with the network
           "Calibration", "fixed_overhead_s", "P100_RESNET50", "V100_RESNET50", "RESNET50_TRAIN_FLOP",
           "RESNET50_KERNELS_PER_STEP", "KERNEL_OVERHEAD_s", "P100_TF_BENCHMARKS"]

ALGORITHMS = ("ring", "hierarchical", "torus_2d", "double_binary_tree")
# Across nodes, for "hierarchical": MPICH's and NCCL's algorithms, or "in_network": the switches reduce
# (Mellanox SHARP; Graham et al., "Scalable Hierarchical Aggregation Protocol (SHArP): A Hardware Architecture
# for Efficient Data Reduction", COMHPC workshop at SC 2016), so each GPU's share goes up the switch tree once
# and comes back once: 2 alpha_nic + n/g beta_nic, whatever the node count. Closed form only.
INTER_ALGORITHMS = cost.ALLREDUCE_ALGORITHMS + ("in_network",)
# netsim's fast path handles a few thousand ranks in seconds; beyond this, use the closed forms.
SIMULATE_MAX_GPUS = 4096


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
    reference_batch: int | None = None                      # per GPU of the baseline; None: batch
    reference_gpus: int | None = None                       # GPUs of the baseline; None: one node
    algorithm: str = "hierarchical"
    inter_algorithm: str = "ring"                           # across nodes, for "hierarchical"
    torus_cols: int | None = None                           # for "torus_2d"; None: gpus_per_node
    overlap: bool = False                                   # buckets start while the backward pass runs
    backward_fraction: float = 2 / 3                        # of the compute, the backward pass
    bucket_B: float | None = None                           # None: one bucket of all the gradients

    def __post_init__(self):
        if not isinstance(self.calibration, Calibration):
            raise TypeError(f"calibration must be a Calibration, got {self.calibration!r}")
        g, n = count("gpus", self.gpus), count("gpus_per_node", self.gpus_per_node)
        if g > n and g % n:
            raise ValueError(f"gpus must be <= gpus_per_node={n} or a multiple of it (whole nodes), got {g}")
        k = count("nics_per_node", self.nics_per_node)
        if n % k:
            raise ValueError(f"nics_per_node must divide gpus_per_node={n} (each NIC serves the same number "
                             f"of GPUs), got {k}")
        positive("intra_Bps", self.intra_Bps, allow_inf=True)
        positive("nic_Bps", self.nic_Bps, allow_inf=True)
        nonnegative("intra_latency_s", self.intra_latency_s)
        nonnegative("nic_latency_s", self.nic_latency_s)
        positive("params", self.params)
        count("gradient_bytes", self.gradient_bytes)
        count("batch", self.batch)
        if self.reference_batch is not None:
            count("reference_batch", self.reference_batch)
        if self.reference_gpus is not None:
            r = count("reference_gpus", self.reference_gpus)
            if r > min(g, n):
                raise ValueError(f"reference_gpus must be at most one node (gpus_per_node={n}) and at most "
                                 f"gpus={g}, got {r}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {self.algorithm!r}")
        if self.inter_algorithm not in INTER_ALGORITHMS:
            raise ValueError(f"inter_algorithm must be one of {', '.join(INTER_ALGORITHMS)}; got "
                             f"{self.inter_algorithm!r}")
        if self.torus_cols is not None:
            c = count("torus_cols", self.torus_cols)
            if c % n or g % c:
                raise ValueError(f"torus_cols must be a multiple of gpus_per_node={n} that divides gpus={g}, "
                                 f"got {c}")
        if not isinstance(self.overlap, bool):
            raise TypeError(f"overlap must be True or False, got {self.overlap!r}")
        _fraction("backward_fraction", self.backward_fraction)
        if self.bucket_B is not None:
            positive("bucket_B", self.bucket_B)

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

    def baseline(self) -> "DataParallelRun":
        """The baseline: this run on reference_gpus GPUs (one node by default) at reference_batch per GPU."""
        return self.replace(gpus=self.reference_gpus or self.gpus_in_node, batch=self.reference_batch or self.batch,
                            torus_cols=None)


@dataclass(frozen=True)
class Prediction:
    step_s: float
    samples_per_s: float
    efficiency: float                      # per-GPU throughput against one node at reference_batch
    compute_s: float
    allreduce_s: float                     # all buckets, as if nothing hid
    hidden_s: float                        # allreduce_s - exposed_s
    exposed_s: float                       # what the step waits for after the backward pass
    batch_efficiency: float
    communication_efficiency: float        # compute_s / step_s
    node_communication_efficiency: float   # the same for the baseline
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
    if run.algorithm == "hierarchical" and run.inter_algorithm == "in_network":
        inside = float(cost.hierarchical_allreduce_time(1, g, nbytes, intra_alpha=a_i, intra_beta=b_i,
                                                        inter_alpha=0.0, inter_beta=0.0))
        return inside + (2 * a_e + nbytes / g * b_e * share if nodes > 1 else 0.0)
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
    if run.algorithm == "hierarchical" and run.inter_algorithm == "in_network":
        raise ValueError("inter_algorithm='in_network' has no netsim schedule (switches that reduce); use "
                         "simulate=False")
    if run.gpus > SIMULATE_MAX_GPUS:
        raise ValueError(f"gpus must be <= {SIMULATE_MAX_GPUS} to simulate, got {run.gpus}; use simulate=False")
    topo = _topology(run)
    g, nodes = run.gpus_in_node, run.nodes
    if run.algorithm in ("ring", "double_binary_tree"):
        return netsim.simulate_allreduce(run.algorithm, topo, nbytes, timeline=False).time_s
    if run.algorithm == "hierarchical":
        length = g * math.lcm(nodes, 1 << (nodes.bit_length() - 1), 2)
        sched = two_level.hierarchical(nodes, g, length, inter=run.inter_algorithm)
    else:
        cols = (run.torus_cols or g) if nodes > 1 else g
        rows = run.gpus // cols
        sched = two_level.torus_2d(rows, cols, cols * rows * 2)
    return netsim.simulate(sched, topo, nbytes=nbytes, timeline=False).time_s


def _buckets(run: DataParallelRun) -> list[float]:
    """The bucket sizes in bytes, in the order the backward pass fills them: full buckets, then the rest."""
    total = run.gradient_B
    bucket = total if run.bucket_B is None else min(run.bucket_B, total)
    full = math.floor(total / bucket)
    rest = total - full * bucket
    return [bucket] * full + ([rest] if rest > 1e-9 * total else [])


def exposed_allreduce_s(bucket_s, backward_s: float) -> float:
    """Seconds the step waits after its backward pass, when bucket k (of equal byte counts in ``bucket_s``'s
    order, ``bucket_s[k]`` seconds of all-reduce each) can start only when the backward pass has produced its
    gradients (at (k+1)/K of ``backward_s``, an even rate) and after bucket k-1 has left the network. A smaller
    last bucket gets the same slot as the others, and the all-reduce is assumed not to slow the backward pass.

    >>> exposed_allreduce_s([0.1], 1.0)              # one bucket: all of it after the backward pass
    0.1
    >>> exposed_allreduce_s([0.1] * 4, 1.0)          # short buckets: only the last one shows
    0.1
    >>> round(exposed_allreduce_s([0.5] * 4, 1.0), 6)   # network-bound: 0.25 + 4 x 0.5 - 1
    1.25
    """
    times = [nonnegative("bucket_s", t) for t in bucket_s]
    backward = nonnegative("backward_s", backward_s)
    if not times:
        return 0.0
    gap = backward / len(times)          # between two buckets' gradients being ready
    late = 0.0                           # how long after its gradients were ready a bucket leaves the network
    for i, t in enumerate(times):
        late = (max(0.0, late - gap) if i else 0.0) + t
    return late                          # the last bucket's gradients are ready when the backward pass ends


def _bucket_times(run: DataParallelRun, simulate: bool) -> list[float]:
    one = _simulated if simulate else _closed_form
    sizes = _buckets(run)
    cache = {n: one(run, n) for n in set(sizes)}
    return [cache[n] for n in sizes]


def _step(run: DataParallelRun, simulate: bool) -> tuple[float, float, float, float]:
    compute = run.calibration.compute_s(run.batch)
    times = _bucket_times(run, simulate)
    comm = float(sum(times))
    exposed = exposed_allreduce_s(times, run.backward_fraction * compute) if run.overlap else comm
    return compute + exposed, compute, comm, exposed


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
    step, compute, comm, exposed = _step(run, simulate)
    base = run.baseline()
    base_step, base_compute, _, _ = _step(base, simulate)
    cal = run.calibration
    batch_eff = cal.samples_per_s(run.batch) / cal.samples_per_s(base.batch)
    comm_eff, node_eff = compute / step, base_compute / base_step
    eff = (run.batch / step) / (base.batch / base_step)
    return Prediction(step_s=step, samples_per_s=run.gpus * run.batch / step, efficiency=eff, compute_s=compute,
                      allreduce_s=comm, hidden_s=comm - exposed, exposed_s=exposed, batch_efficiency=batch_eff,
                      communication_efficiency=comm_eff, node_communication_efficiency=node_eff,
                      loss_to_batch=1 - batch_eff, loss_to_communication=batch_eff - eff,
                      method="netsim" if simulate else "closed_form")


def communication_only(run: DataParallelRun, *, reference_step_s: float | None = None) -> tuple[float, float]:
    """The trivial model the cluster model must beat: (step seconds, efficiency) when the compute per sample
    is the baseline's and every all-reduce is charged in full after it (chapter 14's closed forms, no
    overlap, no small-batch fall-off). The baseline's step is ``reference_step_s`` where it was measured,
    else the calibration's step at reference_batch with its own all-reduce.

    >>> run = DataParallelRun(P100_RESNET50, gpus=256, gpus_per_node=8, nic_Bps=50e9 / 8, batch=32,
    ...                       reference_batch=64)
    >>> step, eff = communication_only(run)               # half the baseline's compute, no fixed part
    >>> round(step * 1e3, 1), round(eff, 3), round(predict(run).efficiency, 3)
    (187.0, 0.805, 0.735)
    """
    if not isinstance(run, DataParallelRun):
        raise TypeError(f"run must be a DataParallelRun, got {type(run).__name__}")
    base = run.baseline()
    if reference_step_s is None:
        base_step = base.calibration.compute_s(base.batch) + sum(_bucket_times(base, False))
    else:
        base_step = positive("reference_step_s", reference_step_s)
    per_sample = (base_step - sum(_bucket_times(base, False))) / base.batch
    if per_sample <= 0:
        raise ValueError(f"reference_step_s must exceed the baseline's own all-reduce, got {reference_step_s!r}")
    step = run.batch * per_sample + sum(_bucket_times(run, False))
    return step, (run.batch / step) / (base.batch / base_step)
