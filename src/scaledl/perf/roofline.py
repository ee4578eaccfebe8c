"""The roofline model: how fast a kernel can run given how many FLOPs it does per byte it moves.

A device has two ceilings: a peak arithmetic rate ``P`` (FLOP/s) and a memory bandwidth ``W`` (byte/s). A
kernel with arithmetic intensity ``I`` (FLOPs per byte of DRAM traffic) cannot run faster than either
ceiling allows, so its attainable rate is ``min(P, W I)`` (Williams, Waterman, Patterson, "Roofline: an
insightful visual performance model for multicore architectures", CACM 2009). The two meet at the *ridge
point* ``I* = P / W``: below it the kernel is memory bound, above it compute bound.

>>> from scaledl.perf import hardware
>>> v100 = roofline_of(hardware.get("V100"), "fp32")
>>> round(v100.ridge_point_FLOP_per_byte, 2), v100.attainable_TFLOPS(1.0), v100.bound(1.0)
(17.44, 0.9, 'memory')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scaledl._args import positive as _positive

# Bytes one element occupies in memory. TF32 is an arithmetic mode: its operands are stored as FP32.
POINT_MARKER_AREA_PT2 = 40  # the named points' markers in plot_roofline (scatter's s)

BYTES_PER_ELEMENT = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


def _intensities(intensity) -> np.ndarray:
    I = np.asarray(intensity, dtype=float)
    if np.any(~(I > 0)):
        raise ValueError(f"intensity must be positive (FLOP per byte), got {intensity!r}")
    return I


@dataclass(frozen=True)
class Roofline:
    """Two ceilings of one device at one precision.

    Args:
        name: what to call it in plots ("V100 SXM2 fp32", "this GPU, measured").
        peak_TFLOPS: the arithmetic ceiling, TFLOP/s (TOPS for integer precisions).
        bandwidth_GBps: the memory ceiling, GB/s (10^9 bytes per second).
        source: where the ceilings come from ("datasheet", "measured", ...).
    """

    name: str
    peak_TFLOPS: float
    bandwidth_GBps: float
    source: str = "datasheet"

    def __post_init__(self):
        _positive("peak_TFLOPS", self.peak_TFLOPS)
        _positive("bandwidth_GBps", self.bandwidth_GBps)

    @property
    def ridge_point_FLOP_per_byte(self) -> float:
        """The intensity at which the two ceilings meet: peak / bandwidth."""
        return self.peak_TFLOPS * 1e12 / (self.bandwidth_GBps * 1e9)

    def attainable_TFLOPS(self, intensity):
        """``min(peak, bandwidth x intensity)`` in TFLOP/s; ``intensity`` in FLOP/byte (scalar or array)."""
        I = _intensities(intensity)
        out = np.minimum(self.peak_TFLOPS, self.bandwidth_GBps * 1e9 * I / 1e12)
        return float(out) if out.ndim == 0 else out

    def bound(self, intensity: float) -> str:
        """``"memory"`` below the ridge point, ``"compute"`` at or above it."""
        return "memory" if _intensities(intensity) < self.ridge_point_FLOP_per_byte else "compute"

    def time_s(self, flops: float, bytes_moved: float) -> float:
        """Lower bound on the run time: the larger of compute time and memory time."""
        f, b = _positive("flops", flops), _positive("bytes_moved", bytes_moved)
        return max(f / (self.peak_TFLOPS * 1e12), b / (self.bandwidth_GBps * 1e9))


def roofline_of(device, precision: str = "fp32", *, sparse: bool = False) -> Roofline:
    """The datasheet roofline of a device of :mod:`scaledl.perf.hardware` (a Device or its name)."""
    from scaledl.perf import hardware

    d = hardware.get(device)
    peak = d.peak_TFLOPS(precision, sparse=sparse)
    label = f"{d.name} {precision}{' sparse' if sparse else ''}"
    return Roofline(label, peak, d.memory_bandwidth_GBps, source=d.citation)


def measured_roofline(name: str, peak_TFLOPS: float, bandwidth_GBps: float) -> Roofline:
    """A roofline from ceilings you measured (an FMA-throughput kernel, a streaming-bandwidth kernel)."""
    return Roofline(name, peak_TFLOPS, bandwidth_GBps, source="measured")


@dataclass(frozen=True)
class Point:
    """A kernel placed on a roofline: its intensity and, when measured, the rate it reached."""

    label: str
    intensity_FLOP_per_byte: float
    achieved_TFLOPS: float | None = None  # None: drawn on the roof (what it could reach at best)

    def __post_init__(self):
        _positive("intensity_FLOP_per_byte", self.intensity_FLOP_per_byte)
        if self.achieved_TFLOPS is not None:
            _positive("achieved_TFLOPS", self.achieved_TFLOPS)


# ------------------------------------------------------------------------------------- layers as GEMMs
@dataclass(frozen=True)
class LayerGemm:
    """A fully connected layer ``Y = W X`` on a minibatch, as the GEMM it is.

    ``W`` is ``n_out x n_in`` and ``X`` holds ``batch`` columns, so the GEMM is M = n_out, N = batch,
    K = n_in. Traffic is the least any kernel can move: each of W, X and Y crosses DRAM once.
    """

    n_in: int
    n_out: int
    batch: int
    bytes_per_element: int

    @property
    def flops(self) -> int:
        return 2 * self.n_out * self.n_in * self.batch  # one multiply and one add per weight per sample

    @property
    def bytes_moved(self) -> int:
        elements = self.n_out * self.n_in + self.n_in * self.batch + self.n_out * self.batch
        return elements * self.bytes_per_element

    @property
    def intensity_FLOP_per_byte(self) -> float:
        return self.flops / self.bytes_moved


def dense_layer(n_in: int, n_out: int, batch: int = 1, precision: str = "fp32") -> LayerGemm:
    """The GEMM of a dense layer (``batch = 1`` is a matrix-vector product, GEMV).

    >>> round(dense_layer(4096, 4096, 1, "fp16").intensity_FLOP_per_byte, 4)   # GEMV: n / (n + 2) FLOP/byte in fp16
    0.9995
    >>> round(dense_layer(4096, 4096, 512, "fp16").intensity_FLOP_per_byte, 1)
    409.6
    """
    for name, v in (("n_in", n_in), ("n_out", n_out), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if precision not in BYTES_PER_ELEMENT:
        raise ValueError(f"precision={precision!r}; expected one of {sorted(BYTES_PER_ELEMENT)}")
    return LayerGemm(int(n_in), int(n_out), int(batch), BYTES_PER_ELEMENT[precision])


CONV_PADDINGS = ("same", "valid")


@dataclass(frozen=True)
class ConvLayer:
    """A stride-1 2-D convolution on a minibatch, with the least traffic any kernel moves.

    ``c_out x c_in x kernel x kernel`` weights are applied at each of the ``height x width`` *output*
    positions of each of ``batch`` images: ``2 c_out c_in k^2 h w b`` FLOPs. Traffic counts the input, the
    weights and the output once each, as a kernel with perfect on-chip reuse would move them. ``padding``
    says what the input in memory is:

    * ``"same"``: zero padding is implicit (a kernel tests the bounds and uses 0), so the input read is
      ``h x w`` per channel, the same size as the output;
    * ``"valid"``: the input is already padded in memory, ``(h + k - 1) x (w + k - 1)`` per channel: what
      :func:`scaledl.kernels.conv.conv2d` and the Winograd kernel read.

    Lowered to a GEMM by im2col this is M = c_out, N = h w b, K = c_in k^2; the im2col matrix repeats each
    input element up to k^2 times, so a kernel that materialises it moves more than this.
    """

    c_in: int
    c_out: int
    height: int
    width: int
    kernel: int
    batch: int
    bytes_per_element: int
    padding: str = "same"

    @property
    def weights(self) -> int:
        return self.c_out * self.c_in * self.kernel**2

    @property
    def input_elements(self) -> int:
        halo = 0 if self.padding == "same" else self.kernel - 1
        return self.batch * self.c_in * (self.height + halo) * (self.width + halo)

    @property
    def output_elements(self) -> int:
        return self.batch * self.c_out * self.height * self.width

    @property
    def flops(self) -> int:
        """A multiply and an add per filter tap, per input channel, per output value."""
        return 2 * self.weights * self.height * self.width * self.batch

    @property
    def bytes_moved(self) -> int:
        return (self.input_elements + self.weights + self.output_elements) * self.bytes_per_element

    @property
    def intensity_FLOP_per_byte(self) -> float:
        return self.flops / self.bytes_moved

    @property
    def weight_reuse(self) -> int:
        """Multiply-adds each weight takes part in: every output position of every image."""
        return self.height * self.width * self.batch

    def as_dense(self) -> LayerGemm:
        """The fully connected layer holding the same weights (``c_in k^2`` inputs, ``c_out`` outputs), at the
        same batch and precision: each of its weights is used once per sample instead of ``h w`` times."""
        return LayerGemm(self.c_in * self.kernel**2, self.c_out, self.batch, self.bytes_per_element)


def conv_layer(c_in: int, c_out: int, height: int, width: int, kernel: int = 3, batch: int = 1,
               precision: str = "fp32", padding: str = "same") -> ConvLayer:
    """The traffic-minimal model of a stride-1 ``kernel x kernel`` convolution with a ``height x width`` output.

    Each weight is used at every output position, so a convolution reuses its weights ``height x width``
    times more than the dense layer with the same weights (Catanzaro's SVAIL slides: "Convolutional layers
    even more compute bound"). Chapter 03 uses ``"same"`` padding; chapters 04 and 06 use ``"valid"``, the input
    their kernels read.

    >>> round(conv_layer(256, 256, 56, 56, 3, 1, "fp16").intensity_FLOP_per_byte, 1)
    842.5
    >>> round(conv_layer(256, 256, 56, 56, 3, 1, "fp16").as_dense().intensity_FLOP_per_byte, 3)  # same weights
    0.996
    >>> layer = conv_layer(64, 64, 56, 56, padding="valid")   # fp32, a 58 x 58 padded input
    >>> layer.flops, round(layer.intensity_FLOP_per_byte, 1), layer.weight_reuse
    (231211008, 127.6, 3136)

    Raises:
        ValueError: a size that is not a positive integer, an unknown precision or padding.
    """
    for name, v in (("c_in", c_in), ("c_out", c_out), ("height", height), ("width", width), ("kernel", kernel),
                    ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if precision not in BYTES_PER_ELEMENT:
        raise ValueError(f"precision={precision!r}; expected one of {sorted(BYTES_PER_ELEMENT)}")
    if padding not in CONV_PADDINGS:
        raise ValueError(f"padding={padding!r}; expected one of {list(CONV_PADDINGS)}")
    return ConvLayer(int(c_in), int(c_out), int(height), int(width), int(kernel), int(batch),
                     BYTES_PER_ELEMENT[precision], padding)


def batch_for_intensity(n: int, target_FLOP_per_byte: float, bytes_per_element: int) -> float:
    """Smallest batch at which a square ``n x n`` layer reaches ``target`` intensity (inf if it never does).

    From 2 n^2 b / ((n^2 + 2 n b) e) = I: b = I e n / (2 n - 2 I e); impossible when I >= n / e.
    """
    I, e = _positive("target_FLOP_per_byte", target_FLOP_per_byte), _positive("bytes_per_element",
                                                                               bytes_per_element)
    if I * e >= n:
        return math.inf
    return I * e * n / (2 * n - 2 * I * e)


def current_gpu_roofline(measure_bandwidth_GBps, measure_peak_TFLOPS, name: str = "this GPU, measured"):
    """The roofline of the GPU in use, from two measuring functions; None on the simulator.

    ``measure_bandwidth_GBps()`` and ``measure_peak_TFLOPS()`` time a streaming kernel and an FMA kernel
    (lab 01 has you write both). On the simulator timings say nothing about hardware, so nothing is measured.
    """
    from scaledl import device

    if not device.on_gpu():
        return None
    return measured_roofline(name, measure_peak_TFLOPS(), measure_bandwidth_GBps())


def measure_triad_GBps(n: int = 2**26, repeats: int = 20) -> float:
    """Moved to :func:`scaledl.kernels.bandwidth.measure_triad_GBps` (a measurement: ``perf`` holds the models);
    this name stays for chapter 03 copies released before the move."""
    from scaledl.kernels.bandwidth import measure_triad_GBps as measured

    return measured(n, repeats)


def measure_fma_TFLOPS(n_threads: int = 2**21, n_iter: int = 4096, repeats: int = 10) -> float:
    """Moved to :func:`scaledl.kernels.bandwidth.measure_fma_TFLOPS`; this name stays for chapter 03 copies
    released before the move."""
    from scaledl.kernels.bandwidth import measure_fma_TFLOPS as measured

    return measured(n_threads, n_iter, repeats)


def __getattr__(name: str):
    """``roofline.plot_roofline``, as lab 01 was released calling it; the figure lives in :mod:`scaledl.perf.views`
    (ARCHITECTURE.md, the views rule), imported on first use so that importing this model loads no matplotlib."""
    if name == "plot_roofline":
        from scaledl.perf.views import plot_roofline

        return plot_roofline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
