"""Calibrations: how long one accelerator takes for one training step of one model, as the per-GPU batch changes.

A :class:`Calibration` is one accelerator training one model with one software stack. A step on per-GPU batch
b takes ``fixed_s + b x flop_per_sample / sustained_FLOPs`` seconds: a fixed part that does not grow with
the batch (kernel launches, the optimizer update, synchronisation) and a part per sample. Two measured
(batch, step) points give both (:meth:`Calibration.from_steps`: the fixed part is inferred, the intercept of
the line through them); one published throughput gives the per-sample part once the fixed part is assumed
(:meth:`Calibration.from_throughput`, with :func:`fixed_overhead_s`, a roofline of kernel launches and the
optimizer's memory traffic).
:mod:`scaledl.comm.cluster_model` adds the network to it.

>>> P100_RESNET50.fixed_measured, round(P100_RESNET50.fixed_s * 1e3, 1)      # TensorFlow, batch 32 and 64
(True, 36.0)
>>> round(fixed_overhead_s(kernels=RESNET50_KERNELS_PER_STEP, kernel_overhead_s=KERNEL_OVERHEAD_s,
...                        optimizer_B=SGD_MOMENTUM_FP32_B_PER_PARAM * RESNET50_PARAMS,
...                        memory_Bps=732e9) * 1e3, 2)                      # the roofline says 6 ms
5.95
"""

from __future__ import annotations

from dataclasses import dataclass

from scaledl.comm.plan import RESNET50_FORWARD_MULTIPLY_ADDS, RESNET50_PARAMS, training_flop_per_example
from scaledl.perf import hardware
from scaledl._args import count, nonnegative, positive

__all__ = ["Calibration", "fixed_overhead_s", "P100_RESNET50", "V100_RESNET50", "P100_TF_BENCHMARKS",
           "RESNET50_TRAIN_FLOP", "RESNET50_KERNELS_PER_STEP", "KERNEL_OVERHEAD_s", "SGD_MOMENTUM_FP32_B_PER_PARAM",
           "SGD_MOMENTUM_MIXED_B_PER_PARAM"]

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



def _fraction(name: str, value) -> float:
    v = nonnegative(name, value)
    if v > 1:
        raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")
    return v


def fixed_overhead_s(*, kernels: int, kernel_overhead_s: float, optimizer_B: float, memory_Bps: float) -> float:
    """A roofline of the part of a step that does not grow with the batch: ``kernels`` x
    ``kernel_overhead_s`` plus the optimizer's ``optimizer_B`` bytes of memory traffic at ``memory_Bps``.

    >>> round(fixed_overhead_s(kernels=525, kernel_overhead_s=10e-6, optimizer_B=20 * 25.6e6,
    ...                        memory_Bps=732e9) * 1e3, 2)     # ms: 5.25 + 0.70
    5.95
    """
    return (count("kernels", kernels) * nonnegative("kernel_overhead_s", kernel_overhead_s)
            + nonnegative("optimizer_B", optimizer_B) / positive("memory_Bps", memory_Bps))


@dataclass(frozen=True)
class Calibration:
    """One accelerator training one model with one software stack: a step on per-GPU batch b takes
    ``fixed_s + b x flop_per_sample / sustained_FLOPs`` seconds, so throughput b / t(b) rises towards
    sustained_FLOPs / flop_per_sample as b grows and falls as it shrinks. ``source`` says where the numbers
    come from; ``fixed_measured`` whether the fixed part was inferred from two measured batch sizes or assumed (a
    roofline of kernel launches and the optimizer update beside one published throughput)."""

    accelerator: str          # a name scaledl.perf.hardware knows
    model: str
    flop_per_sample: float    # training FLOP per sample (forward + backward)
    sustained_FLOPs: float    # FLOP/s at large batch, from published throughputs
    fixed_s: float            # seconds per step that do not grow with the batch
    source: str = ""
    fixed_measured: bool = False

    def __post_init__(self):
        hardware.get(self.accelerator)  # raises for an accelerator the book does not know
        positive("flop_per_sample", self.flop_per_sample)
        positive("sustained_FLOPs", self.sustained_FLOPs)
        nonnegative("fixed_s", self.fixed_s)
        if not isinstance(self.fixed_measured, bool):
            raise TypeError(f"fixed_measured must be True or False, got {self.fixed_measured!r}")

    @classmethod
    def from_throughput(cls, accelerator: str, model: str, *, flop_per_sample: float, batch: int,
                        samples_per_s: float, fixed_s: float, source: str = "") -> "Calibration":
        """The calibration whose curve passes through a published (``batch``, ``samples_per_s``) point, with
        an assumed ``fixed_s``."""
        b, rate = count("batch", batch), positive("samples_per_s", samples_per_s)
        busy = b / rate - nonnegative("fixed_s", fixed_s)
        if busy <= 0:
            raise ValueError(f"fixed_s must be below batch / samples_per_s = {b / rate!r} s, got {fixed_s!r}")
        return cls(accelerator, model, flop_per_sample, b * positive("flop_per_sample", flop_per_sample) / busy,
                   fixed_s, source)

    @classmethod
    def from_steps(cls, accelerator: str, model: str, *, flop_per_sample: float, points,
                   source: str = "") -> "Calibration":
        """The line through two measured (per-GPU batch, seconds of compute per step) ``points``: its slope
        is the seconds per sample, its intercept the fixed part: inferred, not measured (it also absorbs any
        cost per step the model leaves out).

        >>> c = Calibration.from_steps("P100", "ResNet-50", flop_per_sample=24.6e9,
        ...                            points=((32, 32 / 195.0), (64, 64 / 219.0)))
        >>> round(c.fixed_s * 1e3, 1), round(c.samples_per_s(32), 1), round(c.samples_per_s(64), 1)
        (36.0, 195.0, 219.0)

        Raises:
            ValueError: not two points, the same batch twice, a step that does not grow with the batch, or a
                negative intercept (the points contradict a fixed part plus a cost per sample).
        """
        pts = tuple(points)
        if len(pts) != 2 or any(not isinstance(pt, tuple) or len(pt) != 2 for pt in pts):
            raise ValueError(f"points must be two (batch, step_s) pairs, got {points!r}")
        (b1, t1), (b2, t2) = [(count("batch", b), positive("step_s", t)) for b, t in pts]
        if b1 == b2:
            raise ValueError(f"points must have two different batches, got {b1} twice")
        per_sample = (t2 - t1) / (b2 - b1)
        if per_sample <= 0:
            raise ValueError(f"points must have a step that grows with the batch, got {points!r}")
        fixed = t1 - b1 * per_sample
        if fixed < 0:
            raise ValueError(f"points must give a fixed part >= 0, got {fixed!r} s from {points!r}")
        fps = positive("flop_per_sample", flop_per_sample)
        return cls(accelerator, model, fps, fps / per_sample, fixed, source, fixed_measured=True)

    def compute_s(self, batch) -> float:
        """Seconds of one GPU's step on ``batch`` samples, without communication."""
        return self.fixed_s + count("batch", batch) * self.flop_per_sample / self.sustained_FLOPs

    def samples_per_s(self, batch) -> float:
        return count("batch", batch) / self.compute_s(batch)


# What TensorFlow's "Benchmarks" page (May 2017; tensorflow/tensorflow docs_src/performance/benchmarks.md,
# verified) measured on one P100 of a DGX-1, training on synthetic data, fp32: (model, batch, images/s).
P100_TF_BENCHMARKS = (("ResNet-50", 32, 195.0), ("ResNet-50", 64, 219.0),
                      ("Inception V3", 32, 128.0), ("Inception V3", 64, 142.0))


def _tf_points(model: str) -> tuple[tuple[int, float], ...]:
    return tuple((b, b / rate) for m, b, rate in P100_TF_BENCHMARKS if m == model)


# P100 SXM2, ResNet-50, fp32, TensorFlow 1.1 (tf_cnn_benchmarks): the line through the page's two batch sizes.
# Fixed part 36 ms, measured; ~6.1 TFLOP/s sustained at large batch, 58 % of the P100's 10.6 fp32 TFLOPS.
P100_RESNET50 = Calibration.from_steps(
    "P100 SXM2", "ResNet-50", flop_per_sample=RESNET50_TRAIN_FLOP, points=_tf_points("ResNet-50"),
    source="TensorFlow benchmarks (May 2017), DGX-1 P100, 1 GPU, synthetic data: 195 img/s at batch 32 and "
           "219 at batch 64 (verified); fixed part inferred from the two (the intercept)")
# V100 SXM2 16 GB, ResNet-50 v1.5, mixed precision (tensor cores): 1,200 images/s at batch 256 (NVIDIA
# DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, "Training performance: NVIDIA
# DGX-1 16GB (8x V100 16GB)", 1 GPU, mixed precision, pytorch-21.03 container, default batch 256 per GPU;
# verified. Earlier software was slower: the 2018 README of the same model, pytorch-18.09, gave 747 images/s).
# No second batch size is published for it, so the fixed part is the roofline of the P100's kernel count with
# 22 B/param at 900 GB/s (NVIDIA Tesla V100 datasheet): assumed. ~30 TFLOP/s sustained, 24 % of 125.
V100_RESNET50 = Calibration.from_throughput(
    "V100 SXM2", "ResNet-50", flop_per_sample=RESNET50_TRAIN_FLOP, batch=256, samples_per_s=1200.0,
    fixed_s=fixed_overhead_s(kernels=RESNET50_KERNELS_PER_STEP, kernel_overhead_s=KERNEL_OVERHEAD_s,
                             optimizer_B=SGD_MOMENTUM_MIXED_B_PER_PARAM * RESNET50_PARAMS,
                             memory_Bps=hardware.get("V100").memory_bandwidth_GBps * 1e9),
    source="NVIDIA DeepLearningExamples PyTorch ResNet-50 v1.5 README (pytorch-21.03), DGX-1 V100 16GB, 1 GPU, "
           "AMP: 1,200 img/s at batch 256 (verified); fixed part a roofline of kernel overheads and the SGD "
           "update (assumed: no second batch size is published)")
