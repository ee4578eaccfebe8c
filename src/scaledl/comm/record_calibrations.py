"""The calibrations and node descriptions behind :mod:`scaledl.comm.record_runs`.

A calibration is one accelerator training one model with one software stack (:class:`~scaledl.comm.
cluster_model.Calibration`), never one run. Where two batch sizes of the same software were measured, the
fixed part of a step is inferred (the intercept of the line through the two points, :meth:`Calibration.
from_steps`: it also absorbs any per-step cost, per node or per GPU, that the model's closed forms miss);
otherwise it is a roofline of kernel launches and the optimizer update, assumed (:meth:`Calibration.
from_throughput`).

MLPerf's submissions run code that no single-GPU benchmark publishes, so their calibrations come from the
submissions themselves, each from two points of one round (:data:`MLPERF_POINTS`), and predict the other rounds
and sizes:

  - A100 80GB, NVIDIA's MXNet code of v1.1 (21.09): one DGX A100 at 408 per GPU, and 8 DGX A100 at 51 per
    GPU, whose all-reduce (the model's own closed form, fully exposed: one Horovod group) is taken off its
    step first. It predicts v1.0 (21.05), v2.0 (22.04) and v1.1's larger systems.
  - H100, NVIDIA's MXNet code of v3.0 (23.04): one DGX H100 at 400, 8 DGX H100 at 50; predicts 64 and 96.
  - A100 40GB in Dell's 4-GPU XE8545 (v2.0): one node at 256 per GPU (four logs) and at 204, from the only
    log there is at 204, whose run_stop status is "aborted": named as such wherever it is used
    (``CalibrationPoint.aborted``; the rows predicted with it say so). The same line without it, through 2
    XE8545 at 204 instead (:data:`A100_40GB_DELL_2NODES`), puts 17 ms in the intercept: the 2-node run's
    per-step costs beyond the modelled all-reduce, which an intercept absorbs.

Beside each, :func:`calibration_alone`: the straight line t(b) = a + c b through the same two logged steps,
their all-reduce left in, and no network at all: the simplest model with the same inputs, which the cluster
model must beat (:mod:`scaledl.comm.record_scores`).

>>> round(A100_MLPERF.fixed_s * 1e3, 1), round(A100_MLPERF.samples_per_s(408))
(3.8, 3300)
>>> fitted_batches(A100_MLPERF)
(51, 408)
"""

from __future__ import annotations

from dataclasses import dataclass

from scaledl.comm import mlperf, mlperf_logs, topology
from scaledl.comm.calibration import (KERNEL_OVERHEAD_s, P100_RESNET50, P100_TF_BENCHMARKS, RESNET50_KERNELS_PER_STEP,
                                      RESNET50_TRAIN_FLOP, SGD_MOMENTUM_FP32_B_PER_PARAM, Calibration,
                                      fixed_overhead_s)
from scaledl.comm.cluster_model import DataParallelRun, predict
from scaledl.comm.plan import FLOP_PER_MULTIPLY_ADD, TRAIN_OVER_FORWARD
from scaledl.perf import hardware

__all__ = ["P100_INCEPTION3", "P100_PCIE_RESNET50", "A100_MLPERF", "H100_MLPERF", "A100_40GB_DELL",
           "INCEPTION3_PARAMS", "INCEPTION3_TRAIN_FLOP", "DGX_A100", "DGX_H100", "XE8545", "NODES",
           "MLPERF_BUCKET_B", "mlperf_run", "ETHERNET_LATENCY_s", "CalibrationPoint", "MLPERF_POINTS",
           "calibration_alone", "fitted_batches", "node_name", "A100_40GB_DELL_2NODES"]

# GPU to GPU over Ethernet through the hosts' network stacks: an assumed order of magnitude (TCP or RoCE
# through a top-of-rack switch is a few to tens of microseconds), not a measurement of these clusters.
ETHERNET_LATENCY_s = 10e-6

# Inception V3: 23.9 M parameters (Keras Applications table, keras.io/api/applications); "about 5 billion
# multiply-adds" per 299x299 image (Szegedy et al., "Rethinking the Inception Architecture", CVPR 2016,
# section 1).
INCEPTION3_PARAMS = 23.9e6
INCEPTION3_TRAIN_FLOP = FLOP_PER_MULTIPLY_ADD * TRAIN_OVER_FORWARD * 5e9

# P100 SXM2, Inception V3, fp32, TensorFlow (the same page as P100_RESNET50): the line through 128 images/s
# at batch 32 and 142 at batch 64; its intercept (49 ms) is inferred.
P100_INCEPTION3 = Calibration.from_steps(
    "P100 SXM2", "Inception V3", flop_per_sample=INCEPTION3_TRAIN_FLOP,
    points=tuple((b, b / rate) for m, b, rate in P100_TF_BENCHMARKS if m == "Inception V3"),
    source="TensorFlow benchmarks (May 2017), DGX-1 P100, 1 GPU, synthetic data: 128 img/s at batch 32 and "
           "142 at batch 64 (verified); fixed part inferred from the two (the line's intercept)")

# P100 PCIe (Preferred Networks' MN-1, Akiba et al. 2017), ResNet-50, Chainer. No throughput of this part and
# software is published; assumed: the SXM2 line of P100_RESNET50 with its per-sample time scaled by the fp32
# peaks' ratio 10.6 / 9.3 (the same chip at a lower boost clock), its fixed part kept.
P100_PCIE_RESNET50 = Calibration(
    "P100 PCIe 16GB", "ResNet-50", RESNET50_TRAIN_FLOP,
    P100_RESNET50.sustained_FLOPs * hardware.get("P100 PCIe").fp32_TFLOPS / hardware.get("P100").fp32_TFLOPS,
    P100_RESNET50.fixed_s, "assumed: P100_RESNET50 (TensorFlow, SXM2) with the per-sample time scaled by the "
    "fp32 peaks, 10.6 / 9.3; the fixed part kept", fixed_measured=False)

# The nodes of the MLPerf submissions, from their system descriptions (the JSON beside each result, quoted in
# scaledl.comm.mlperf_logs): links per GPU and direction. fp16 gradients (mixed precision) are assumed.
DGX_A100 = dict(gpus_per_node=8, intra_Bps=300e9, nics_per_node=8, nic_Bps=200e9 / 8, gradient_bytes=2)
DGX_H100 = dict(gpus_per_node=8, intra_Bps=topology.NVLINK4_H100_Bps, nics_per_node=8, nic_Bps=400e9 / 8,
                gradient_bytes=2)
# Dell XE8545: 4 A100 SXM4 joined by NVLink 3 (four 25 GB/s links between each pair, 100 GB/s a direction,
# the HGX A100 4-GPU board), two HDR NICs of 200 Gb/s.
XE8545 = dict(gpus_per_node=4, intra_Bps=100e9, nics_per_node=2, nic_Bps=200e9 / 8, gradient_bytes=2)
NODES = {"DGX A100": DGX_A100, "DGX H100": DGX_H100, "XE8545": XE8545}


def node_name(node: dict) -> str:
    """The name of one of :data:`NODES`."""
    for name, n in NODES.items():
        if n == node:
            return name
    raise ValueError(f"node must be one of NODES ({', '.join(NODES)}), got {node!r}")
# Horovod's fusion buffer in every config (HOROVOD_FUSION_THRESHOLD=67108864) holds all 51 MB of fp16
# gradients, and MXNET_HOROVOD_NUM_GROUPS=1 makes it one group after the backward pass: one bucket, no overlap.
MLPERF_BUCKET_B = 64 * 2 ** 20


def mlperf_run(sub: mlperf.Submission, calibration: Calibration, node: dict, **changes) -> DataParallelRun:
    """The cluster model's run of an MLPerf submission: its GPUs and per-GPU batch on ``node``, hierarchical
    all-reduce (a ring across nodes, or the switches where the submission used SHARP: ``changes``), one
    bucket, no overlap."""
    kw = dict(node, gpus=sub.gpus, batch=sub.per_gpu_batch, algorithm="hierarchical", bucket_B=MLPERF_BUCKET_B)
    kw.update(changes)
    return DataParallelRun(calibration, **kw)


@dataclass(frozen=True)
class CalibrationPoint:
    """One logged MLPerf run a calibration goes through: the submission, its node type (a name of
    :data:`NODES`), the per-GPU batch and the logged step (its all-reduce included)."""

    submission: mlperf.Submission
    node: str
    batch: int
    step_s: float
    aborted: bool = False      # from logs whose run_stop status is "aborted" (no other log at this point)

    @property
    def gpus(self) -> int:
        return self.submission.gpus

    def matches(self, node: str, gpus: int, batch: int) -> bool:
        """Whether a run of ``gpus`` GPUs on ``node`` at ``batch`` per GPU repeats this point's configuration."""
        return (node, gpus, batch) == (self.node, self.gpus, self.batch)


def _point(round_: str, system: str, node: str, global_batch: int | None = None, *,
           allow_aborted: bool = False) -> CalibrationPoint:
    """A calibration point from the successful logs of ``system`` (at ``global_batch``, default the
    submission's); an aborted-only batch raises unless ``allow_aborted`` (:func:`scaledl.comm.mlperf.step_s_at`)."""
    sub = mlperf.submission(round_, system)
    if global_batch is None:
        if sub.aborted_only:
            raise ValueError(f"{round_} {system}: every log is aborted; not a calibration point")
        return CalibrationPoint(sub, node, sub.per_gpu_batch, sub.step_s)
    rec = next(r for r in mlperf_logs.SYSTEMS if (r["round"], r["system"]) == (round_, system))
    aborted = all(r.get("status") == mlperf.ABORTED for r in rec["runs"] if r["global_batch"] == global_batch)
    return CalibrationPoint(sub, node, global_batch // sub.gpus,
                            mlperf.step_s_at(round_, system, global_batch, allow_aborted=allow_aborted), aborted)


def _from_points(accelerator: str, model: str, points: tuple[CalibrationPoint, ...], source: str) -> Calibration:
    """A line through two logged steps, each less its own all-reduce (fully exposed: it does not depend on the
    calibration, so any will do to compute it)."""
    steps = []
    for pt in points:
        comm = predict(mlperf_run(pt.submission, P100_RESNET50, NODES[pt.node], batch=pt.batch)).allreduce_s
        steps.append((pt.batch, pt.step_s - comm))
    return Calibration.from_steps(accelerator, model, flop_per_sample=RESNET50_TRAIN_FLOP, points=tuple(steps),
                                  source=source)


_A100_POINTS = (_point("v1.1", "dgxa100_ngc21.09_mxnet", "DGX A100"),
                _point("v1.1", "dgxa100_n8_ngc21.09_mxnet", "DGX A100"))
_H100_POINTS = (_point("v3.0", "dgxh100_ngc23.04_mxnet", "DGX H100"),
                _point("v3.0", "dgxh100_n8_ngc23.04_mxnet", "DGX H100"))
_DELL_POINTS = (_point("v2.0", "XE8545x4A100-SXM-40GB", "XE8545"),
                _point("v2.0", "XE8545x4A100-SXM-40GB", "XE8545", 816, allow_aborted=True))

A100_MLPERF = _from_points(
    "A100", "ResNet-50 v1.5, NVIDIA MLPerf MXNet 21.09", _A100_POINTS,
    "MLPerf Training v1.1 result logs, NVIDIA: 1 DGX A100 at 408 per GPU and 8 DGX A100 at 51 per GPU, each "
    "step less its modelled all-reduce")
H100_MLPERF = _from_points(
    "H100 SXM", "ResNet-50 v1.5, NVIDIA MLPerf MXNet 23.04", _H100_POINTS,
    "MLPerf Training v3.0 result logs, NVIDIA: 1 DGX H100 at 400 per GPU and 8 DGX H100 at 50 per GPU, each "
    "step less its modelled all-reduce")
A100_40GB_DELL = _from_points(
    "A100 40GB", "ResNet-50 v1.5, Dell MLPerf MXNet 22.04", _DELL_POINTS,
    "MLPerf Training v2.0 result logs, Dell: one XE8545 (4 A100 40GB) at 256 per GPU (four runs) and at 204 "
    "(its only log there, aborted), each step less its modelled all-reduce")

# Dell's calibration without the aborted log: one XE8545 at 256 and 2 XE8545 at 204 (four successful logs),
# as NVIDIA's are made. No row uses it; it shows how much Dell's scores depend on that one log
# (scaledl.comm.record_scores.with_calibration).
_DELL_2NODES_POINTS = (_DELL_POINTS[0], _point("v2.0", "2xXE8545x4A100-SXM-40GB", "XE8545"))
A100_40GB_DELL_2NODES = _from_points(
    "A100 40GB", "ResNet-50 v1.5, Dell MLPerf MXNet 22.04 (no aborted log)", _DELL_2NODES_POINTS,
    "MLPerf Training v2.0 result logs, Dell: one XE8545 at 256 per GPU and 2 XE8545 at 204, each step less its "
    "modelled all-reduce")

MLPERF_POINTS: dict[Calibration, tuple[CalibrationPoint, ...]] = {
    A100_MLPERF: _A100_POINTS, H100_MLPERF: _H100_POINTS, A100_40GB_DELL: _DELL_POINTS,
    A100_40GB_DELL_2NODES: _DELL_2NODES_POINTS}
"""The two logged runs behind each MLPerf calibration (A100_40GB_DELL_2NODES: a what-if no row uses)."""

# The single-GPU benchmarks' batches, for the calibrations fitted to them (P100 PCIe borrows the SXM2 line).
_BENCHMARK_BATCHES = {P100_RESNET50: (32, 64), P100_INCEPTION3: (32, 64), P100_PCIE_RESNET50: (32, 64)}


def fitted_batches(calibration: Calibration) -> tuple[int, int] | None:
    """The smallest and largest per-GPU batch the calibration was fitted at; None for a calibration with one
    published point (its fixed part assumed)."""
    if calibration in MLPERF_POINTS:
        batches = [pt.batch for pt in MLPERF_POINTS[calibration]]
        return min(batches), max(batches)
    return _BENCHMARK_BATCHES.get(calibration)


def calibration_alone(calibration: Calibration) -> Calibration:
    """The calibration alone: the line t(b) = a + c b through the calibration's two logged steps as logged
    (their all-reduce left in), with no network. A calibration made on one GPU has no network in it, so it
    is its own calibration alone.

    >>> alone = calibration_alone(A100_MLPERF)
    >>> pt = MLPERF_POINTS[A100_MLPERF][1]
    >>> round(alone.compute_s(pt.batch) * 1e3, 2), round(pt.step_s * 1e3, 2)   # 8 DGX A100 at 51 per GPU
    (19.58, 19.58)
    """
    if not isinstance(calibration, Calibration):
        raise TypeError(f"calibration must be a Calibration, got {type(calibration).__name__}")
    points = MLPERF_POINTS.get(calibration)
    if points is None:
        return calibration
    return Calibration.from_steps(calibration.accelerator, calibration.model,
                                  flop_per_sample=calibration.flop_per_sample,
                                  points=tuple((pt.batch, pt.step_s) for pt in points),
                                  source=f"the calibration alone: the line through {calibration.source}, "
                                         "steps as logged")


# The roofline fixed part, for comparison with the inferred ones: 525 kernels x 10 us and the SGD update.
ROOFLINE_FIXED_P100_s = fixed_overhead_s(kernels=RESNET50_KERNELS_PER_STEP, kernel_overhead_s=KERNEL_OVERHEAD_s,
                                         optimizer_B=SGD_MOMENTUM_FP32_B_PER_PARAM * 25.6e6,
                                         memory_Bps=hardware.get("P100").memory_bandwidth_GBps * 1e9)
