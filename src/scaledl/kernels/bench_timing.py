"""What every section of ``scaledl bench`` shares (:mod:`scaledl.kernels.bench`, :mod:`scaledl.kernels.bench_sections`):
a row of the table and the targets, timing with CUDA events (:func:`time_ms`) or behind a kernel that holds the
GPU (:func:`time_queued_ms`), and the check that runs before anything is timed. Both bench modules import it;
it imports neither (before, the two imported each other)."""

from __future__ import annotations

import statistics
import time
import warnings
from dataclasses import dataclass

import numpy as np

import scaledl.device
from numba import cuda, uint32
from numba.core.errors import NumbaPerformanceWarning

__all__ = ["TARGETS", "STREAM_INNER", "Row", "time_ms", "hold_kernel", "NotQueued", "HOLD_LIMIT_US",
           "time_queued_ms", "check_close", "poison"]

# fractions of the baseline: see the module docstring, and bench_sections' for "spmv" and "quantize"
TARGETS = {"gemm": 0.60, "stream": 0.85, "reduce": 0.85, "spmv": 0.70, "quantize": 0.85}
STREAM_INNER = 10  # launches per event pair for sub-millisecond kernels (see time_ms)


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    kernel: str
    size: str
    time_ms: float
    rate: float  # GFLOP/s or GB/s, per `unit`
    unit: str  # "GFLOP/s" or "GB/s"
    baseline: str
    ratio: float | None  # rate / baseline rate (None for the baseline rows themselves)
    target: float | None = None


def time_ms(fn, repeats: int, warmup: int = 3, inner: int = 1) -> float:
    """Median milliseconds per call of ``fn()``: ``repeats`` samples, each a pair of CUDA events around
    ``inner`` back-to-back calls (divided by ``inner``).

    Launches are asynchronous, so with ``inner > 1`` the Python cost of preparing launch ``i + 1`` overlaps
    with kernel ``i`` running; only the first launch's host overhead lands inside the events. Use it for
    kernels of well under a millisecond (streams, reductions), where one launch's host overhead (tens of
    microseconds in Numba) would otherwise be a visible part of the time.

    On the simulator, whose events record nothing, each sample is the wall-clock time of the (synchronous)
    simulated calls instead: a number about Python threads, never about hardware. It exists so that code
    written for a GPU can be run, and tested, without one.

    Raises:
        ValueError: ``repeats``, ``inner`` below 1 or ``warmup`` below 0.
    """
    from numba import cuda

    for name, v, least in (("repeats", repeats, 1), ("inner", inner, 1), ("warmup", warmup, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise ValueError(f"{name} must be an int >= {least}, got {v!r}")
    for _ in range(warmup):
        fn()
    cuda.synchronize()
    times = []
    for _ in range(repeats):
        if not scaledl.device.on_gpu():
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            times.append((time.perf_counter() - t0) * 1e3 / inner)
            continue
        start, stop = cuda.event(), cuda.event()  # pragma: no cover - needs a GPU
        start.record()
        for _ in range(inner):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop) / inner)
    return statistics.median(times)


@cuda.jit
def hold_kernel(microseconds):
    """Keep the GPU busy for about ``microseconds`` doing nothing (launch it as ``[1, 1]``): ``nanosleep`` of
    1 us at a time, which the hardware may cut short or stretch to twice that (PTX ISA, ``nanosleep``)."""
    for _ in range(microseconds):
        cuda.nanosleep(uint32(1000))


class NotQueued(RuntimeError):
    """:func:`time_queued_ms` could not queue a sample's calls while the GPU was held: a call waits for the
    GPU itself (a synchronous copy or allocation), so its time cannot be separated from the host's."""


HOLD_LIMIT_US = 200_000  # the longest hold tried before giving up (NotQueued)


def time_queued_ms(fn, repeats: int, warmup: int = 3, inner: int = STREAM_INNER) -> float:
    """Median milliseconds of GPU time per call of ``fn()``, the host's cost of each call left out.

    :func:`time_ms` times ``inner`` back-to-back calls between two events; when a call costs the host more
    than its kernel costs the GPU, the GPU waits for each launch and the events time the host. Here each
    sample first launches :func:`hold_kernel`, then records the start event, makes the ``inner`` calls and
    records the stop event while the hold still runs, so everything is queued before the GPU reaches the start
    event and the calls run back to back: the events see only the GPU's work (and the gaps between queued
    kernels, a microsecond or two). The same idea as NVBench's ``blocking_kernel`` (NVIDIA, *NVBench: CUDA
    Kernel Benchmarking Library*, GitHub, 2020), which warns that a held stream takes only a few dozen queued
    launches before the host blocks too: keep ``inner`` small (a call may launch several kernels).

    A sample counts only if its start event had not yet completed once the stop event was queued; otherwise
    the hold was too short, it is doubled and the sample repeated (the first hold: twice the host time of the
    warm-up calls). On the simulator, where events record nothing, it is :func:`time_ms`'s wall clock.

    Raises:
        ValueError: ``repeats``, ``inner`` below 1 or ``warmup`` below 0.
        NotQueued: no hold up to :data:`HOLD_LIMIT_US` let the calls queue (a call synchronises).
    """
    for name, v, least in (("repeats", repeats, 1), ("inner", inner, 1), ("warmup", warmup, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise ValueError(f"{name} must be an int >= {least}, got {v!r}")
    if not scaledl.device.on_gpu():
        return time_ms(fn, repeats, warmup=warmup, inner=inner)
    t0 = time.perf_counter()  # pragma: no cover - the rest needs a GPU
    for _ in range(warmup):
        fn()
    cuda.synchronize()
    per_call_us = (time.perf_counter() - t0) * 1e6 / max(warmup, 1)
    hold_us, times = max(100, int(2 * inner * per_call_us)), []
    while len(times) < repeats:
        start, stop = cuda.event(), cuda.event()
        with warnings.catch_warnings():  # a one-thread grid: Numba's low-occupancy warning is the point here
            warnings.simplefilter("ignore", NumbaPerformanceWarning)
            hold_kernel[1, 1](hold_us)
        start.record()
        for _ in range(inner):
            fn()
        stop.record()
        queued = not start.query()  # the GPU was still holding when the last call was queued
        stop.synchronize()
        if queued:
            times.append(cuda.event_elapsed_time(start, stop) / inner)
        elif hold_us >= HOLD_LIMIT_US:
            raise NotQueued(f"calls could not be queued behind a {hold_us} us hold: a call waits for the GPU, "
                            f"or {inner} calls launch more kernels than a held stream queues")
        else:
            hold_us *= 2
    return statistics.median(times)


def check_close(name: str, got, want, tol) -> None:
    """Raise RuntimeError listing the first ten (index, spec, got) triples where ``|got - want| > tol``.

    Scalars are checked as 1-element arrays (``np.argwhere`` of a 0-d array has no columns, so a failing
    scalar would otherwise report no bad index and pass)."""
    got, want = np.atleast_1d(np.asarray(got, np.float64)), np.atleast_1d(np.asarray(want, np.float64))
    bad = np.argwhere(~(np.abs(got - want) <= tol))
    if bad.size:
        shown = "; ".join(f"{tuple(int(j) for j in i)}: spec {float(want[tuple(i)])!r} got "
                          f"{float(got[tuple(i)])!r}" for i in bad[:10])
        raise RuntimeError(f"{name} does not match its reference ({len(bad)} elements): {shown}")


def poison(d_array) -> None:
    """Fill a device array with NaN before a checked launch, so an element the kernel never writes fails."""
    d_array.copy_to_device(np.full(d_array.shape, np.nan, np.float32))
