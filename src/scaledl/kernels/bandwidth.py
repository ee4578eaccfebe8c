"""The two ceilings of a roofline: memory-streaming kernels (copy, scale, triad) and an FMA-throughput kernel.

A streaming kernel does almost no arithmetic per byte, so its time is set by memory bandwidth; the FMA kernel
touches memory once per thread and then runs long chains of fused multiply-adds in registers, so its time is
set by the arithmetic units. Their bytes and FLOPs per launch come from :func:`stream_bytes` and
:func:`fma_flops`, which is how ``scaledl bench`` turns a time into GB/s or GFLOP/s.

The streams follow the STREAM benchmark's names (McCalpin): copy ``c = a``, scale ``b = s c``, triad
``a = b + s c``. All kernels use a grid-stride loop, so any grid covers any length, and each loop trip
handles four elements a stride apart, loading all four before storing any: a thread with one load in flight
waits ~1 us of DRAM latency per element, and there are not enough threads to cover it. On an H200 (2026-11-26,
docs/gpu-runs) a one-element loop copied at 74 % of ``cudaMemcpy``'s rate and this one at 96 %
(tools/gpu_experiments.py).

>>> import numpy as np
>>> x = np.arange(5, dtype=np.float32)
>>> triad(np.zeros(5, np.float32), x, x, 2.0)
array([ 0.,  3.,  6.,  9., 12.], dtype=float32)
"""

from __future__ import annotations

import numpy as np

import scaledl.device
from numba import cuda

STREAM_OPS = ("copy", "scale", "triad")
STREAM_ARRAYS = {"copy": 2, "scale": 2, "triad": 3}  # arrays touched once each: bytes = arrays x n x 4
FMA_CHAINS = 8  # independent accumulators per thread: enough instruction-level parallelism to hide the
#                 ~4-cycle FMA latency (each chain depends on its own previous result)


# ------------------------------------------------------------------------------------------- references
def stream_reference(op: str, *arrays, s: float = 1.0) -> np.ndarray:
    """NumPy version of a stream op: copy(a) = a, scale(c) = s c, triad(b, c) = b + s c (float32)."""
    if op == "copy":
        return np.array(arrays[0], np.float32)
    if op == "scale":
        return (np.float32(s) * arrays[0]).astype(np.float32)
    if op == "triad":
        return (arrays[0] + np.float32(s) * arrays[1]).astype(np.float32)
    raise ValueError(f"op={op!r} is not a stream op; expected one of {STREAM_OPS}")


def fma_reference(n_threads: int, n_iter: int, x0: float, b: float, c: float) -> np.ndarray:
    """What :func:`fma_kernel` writes: each chain runs x <- fma(x, b, c) n_iter times; the sum over chains.

    Each step is computed in float64 (where a float32 product is exact) and rounded once to float32, as a
    fused multiply-add rounds; the eight equal chains then sum to 8 x exactly."""
    x, b, c = np.float32(x0), np.float32(b), np.float32(c)
    for _ in range(n_iter):
        x = np.float32(np.float64(x) * np.float64(b) + np.float64(c))
    per_chain = x
    return np.full(n_threads, np.float32(FMA_CHAINS) * per_chain, np.float32)


# ---------------------------------------------------------------------------------------------- kernels
@cuda.jit
def copy_kernel(dst, src):
    """copy: one load and one store per element, four elements per loop trip (see the module docstring)."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    n = dst.size
    i = start
    while i + 3 * stride < n:  # four independent loads in flight before the first store waits on one
        a0 = src[i]
        a1 = src[i + stride]
        a2 = src[i + 2 * stride]
        a3 = src[i + 3 * stride]
        dst[i] = a0
        dst[i + stride] = a1
        dst[i + 2 * stride] = a2
        dst[i + 3 * stride] = a3
        i += 4 * stride
    while i < n:  # the ragged end: fewer than four elements left for this thread
        dst[i] = src[i]
        i += stride


@cuda.jit
def scale_kernel(dst, src, s):
    """scale: copy plus one multiply per element (still far below one FLOP per byte)."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    n = dst.size
    i = start
    while i + 3 * stride < n:
        a0 = src[i]
        a1 = src[i + stride]
        a2 = src[i + 2 * stride]
        a3 = src[i + 3 * stride]
        dst[i] = s * a0
        dst[i + stride] = s * a1
        dst[i + 2 * stride] = s * a2
        dst[i + 3 * stride] = s * a3
        i += 4 * stride
    while i < n:
        dst[i] = s * src[i]
        i += stride


@cuda.jit
def triad_kernel(dst, b, c, s):
    """triad: two loads, one FMA, one store per element."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    n = dst.size
    i = start
    while i + 3 * stride < n:
        b0, c0 = b[i], c[i]
        b1, c1 = b[i + stride], c[i + stride]
        b2, c2 = b[i + 2 * stride], c[i + 2 * stride]
        b3, c3 = b[i + 3 * stride], c[i + 3 * stride]
        dst[i] = b0 + s * c0
        dst[i + stride] = b1 + s * c1
        dst[i + 2 * stride] = b2 + s * c2
        dst[i + 3 * stride] = b3 + s * c3
        i += 4 * stride
    while i < n:
        dst[i] = b[i] + s * c[i]
        i += stride


@cuda.jit
def fma_kernel(out, n_iter, x0, b, c):
    """FMA throughput: 8 independent chains x <- fma(x, b, c) in registers, one store per thread.

    The chains are separate scalars (not a local array) so they certainly live in registers; b and c arrive
    as run-time arguments, so the compiler cannot fold the chains away."""
    i = cuda.grid(1)
    x1 = x2 = x3 = x4 = x5 = x6 = x7 = x8 = x0
    for _ in range(n_iter):
        x1 = cuda.fma(x1, b, c)
        x2 = cuda.fma(x2, b, c)
        x3 = cuda.fma(x3, b, c)
        x4 = cuda.fma(x4, b, c)
        x5 = cuda.fma(x5, b, c)
        x6 = cuda.fma(x6, b, c)
        x7 = cuda.fma(x7, b, c)
        x8 = cuda.fma(x8, b, c)
    if i < out.size:
        out[i] = ((x1 + x2) + (x3 + x4)) + ((x5 + x6) + (x7 + x8))


# -------------------------------------------------------------------------------------------- launchers
STREAM_UNROLL = 4  # elements per loop trip of the stream kernels


def stream_launch_config(n: int) -> tuple[int, int]:
    """(blocks, threads): one block per ``threads x STREAM_UNROLL`` elements, so every thread makes at least
    one four-element trip where it can, capped (enough blocks to fill any GPU; the grid-stride loop does the
    rest)."""
    threads = 256 if scaledl.device.on_gpu() else 32  # the simulator pays per thread: keep blocks small
    max_blocks = 65_536 if scaledl.device.on_gpu() else 4
    per_block = threads * STREAM_UNROLL
    return max(1, min(max_blocks, (n + per_block - 1) // per_block)), threads


def _check_1d(name, x, n=None):
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {shape!r}")
    if np.dtype(x.dtype) != np.float32:
        raise TypeError(f"{name} must be float32, got dtype {x.dtype}")
    if n is not None and shape[0] != n:
        raise ValueError(f"{name} must have length {n} like the output, got {shape[0]}")


def _stream(kernel, dst, *srcs_and_scalar):
    n = dst.shape[0]
    blocks, threads = stream_launch_config(n)
    kernel[blocks, threads](dst, *srcs_and_scalar)
    return dst


def copy(dst, src):
    """dst[:] = src (float32, 1-D, NumPy or device arrays); returns dst."""
    _check_1d("dst", dst), _check_1d("src", src, dst.shape[0])
    return _stream(copy_kernel, dst, src)


def scale(dst, src, s: float):
    """dst[:] = s * src; returns dst."""
    _check_1d("dst", dst), _check_1d("src", src, dst.shape[0])
    return _stream(scale_kernel, dst, src, np.float32(s))


def triad(dst, b, c, s: float):
    """dst[:] = b + s * c; returns dst."""
    _check_1d("dst", dst), _check_1d("b", b, dst.shape[0]), _check_1d("c", c, dst.shape[0])
    return _stream(triad_kernel, dst, b, c, np.float32(s))


def stream_bytes(op: str, n: int) -> int:
    """Bytes one stream op moves over n float32 elements (each array read or written once)."""
    if op not in STREAM_ARRAYS:
        raise ValueError(f"op={op!r} is not a stream op; expected one of {STREAM_OPS}")
    return STREAM_ARRAYS[op] * n * 4


def fma_flops(n_threads: int, n_iter: int) -> int:
    """FLOPs of one :func:`fma_throughput` launch: an FMA counts as two (a multiply and an add)."""
    return 2 * n_threads * n_iter * FMA_CHAINS


def fma_throughput(n_threads: int, n_iter: int, *, x0: float = 0.0, b: float = 1.0, c: float = 1.0,
                   out=None, threads_per_block: int | None = None):
    """Launch :func:`fma_kernel` over ``n_threads`` threads for ``n_iter`` rounds; returns ``out``.

    With the defaults (x0=0, b=c=1) every chain counts 1, 2, 3, ..., exactly representable up to 2**24, so
    the result is checkable bit for bit: each thread writes ``FMA_CHAINS * n_iter``.

    Raises:
        ValueError: a non-positive thread count or a negative iteration count.
    """
    if not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
        raise ValueError(f"n_threads must be a positive int, got {n_threads!r}")
    if not isinstance(n_iter, (int, np.integer)) or n_iter < 0:
        raise ValueError(f"n_iter must be a non-negative int, got {n_iter!r}")
    tpb = threads_per_block or (256 if scaledl.device.on_gpu() else 32)
    if out is None:
        out = np.full(n_threads, np.nan, np.float32)
    blocks = (n_threads + tpb - 1) // tpb
    fma_kernel[blocks, tpb](out, np.int32(n_iter), np.float32(x0), np.float32(b), np.float32(c))
    return out


def measure_triad_GBps(n: int = 2**26, repeats: int = 20) -> float:
    """Bandwidth of the triad stream kernel on the GPU in use, GB/s (chapter 03's measured roofline:
    :func:`scaledl.perf.roofline.current_gpu_roofline`)."""
    from scaledl.kernels.bench_timing import time_ms

    b, c, dst = (cuda.to_device(np.ones(n, np.float32)) for _ in range(3))
    t_ms = time_ms(lambda: triad(dst, b, c, 2.0), repeats)
    return stream_bytes("triad", n) / (t_ms * 1e-3) / 1e9


def measure_fma_TFLOPS(n_threads: int = 2**21, n_iter: int = 4096, repeats: int = 10) -> float:
    """FP32 FMA throughput of :func:`fma_throughput` on the GPU in use, TFLOP/s."""
    from scaledl.kernels.bench_timing import time_ms

    out = cuda.device_array(n_threads, np.float32)
    t_ms = time_ms(lambda: fma_throughput(n_threads, n_iter, out=out), repeats)
    return fma_flops(n_threads, n_iter) / (t_ms * 1e-3) / 1e12
