"""``scaledl bench``: check every kernel variant against its reference, then time it on a real GPU.

For each kernel: one checked run at a size that fills the chip, then warm-up launches, then the median of
many launches timed with CUDA events, and the same for a baseline measured in the same process: cuBLAS SGEMM
through CuPy (TF32 off) for the GEMMs, CuPy's device-to-device copy for the streams and the FMA kernel's
reference row, CuPy's sum for the reduction. The table gives time, GFLOP/s or GB/s, and the ratio to the
baseline. Targets (printed beside the ratio): register-blocked GEMM at 4096^3 >= 60 % of cuBLAS (aim 85 %),
streams and the reduction >= 85 % of the copy bandwidth.

The four later sections (``spmv``, ``nm``, ``rnn``, ``quantize``) live in :mod:`scaledl.kernels.bench_sections`.
Where one call costs the host more than the kernel costs the GPU (SpMV at low density: tens of microseconds of
Python and library work per call), back-to-back launches between two events still time the host; there
:func:`time_queued_ms` queues the launches behind a kernel that holds the GPU, so the events time only the GPU.

On the simulator it prints one line and returns 2: timings of simulated threads mean nothing. The
measuring functions themselves still run there (``time_ms`` falls back to the wall clock, and the baselines
are an object with a few methods, so a test can pass NumPy and SciPy stand-ins for CuPy): tests/sim runs the
whole bench at tiny sizes, so a GPU session finds the plumbing already exercised.

Usage: ``scaledl bench [--quick] [--repeats N]``. ``scaledl validate`` calls :func:`measure` for the same
rows as data (on the simulator with :class:`HostBaselines` at :data:`DRY_RUN_SIZES`).
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np

import scaledl.device
from numba import cuda, uint32
from numba.core.errors import NumbaPerformanceWarning
from scaledl._optional import install_command

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


@dataclass(frozen=True)
class Sizes:
    """The problem sizes and repeat count of one bench run."""

    n_gemm: int  # the GEMMs are n^3
    n_stream: int  # float32 elements per stream array
    fma_threads: int
    fma_iter: int
    repeats: int  # timed samples per kernel (median)
    stream_inner: int = STREAM_INNER  # launches per timed sample of the sub-millisecond kernels
    # the defaults of the later sections are the dry run's: odd sizes, one block or a few
    n_spmv: int = 9  # side of the square CSR matrix
    spmv_densities: tuple[float, ...] = (0.2, 0.6)  # fractions of stored non-zeros, increasing
    nm_shape: tuple[int, int, int] = (7, 13, 9)  # M, K, N of the 2:4 GEMM (K not a multiple of 4 or 16)
    rnn_hiddens: tuple[int, ...] = (7,)
    rnn_batch: int = 3
    rnn_steps: int = 3  # time steps per timed launch (the standard variant launches once per step)
    warmup: int = 3  # untimed launches before the samples, in the sections after "fma"


# Odd sizes (no multiple of a tile or a block) and one sample each: a dry run checks plumbing, not speed.
DRY_RUN_SIZES = Sizes(n_gemm=11, n_stream=97, fma_threads=40, fma_iter=16, repeats=1, stream_inner=1,
                      n_spmv=9, spmv_densities=(0.2, 0.6), nm_shape=(7, 13, 9), rnn_hiddens=(7,), rnn_batch=3,
                      rnn_steps=3, warmup=0)  # warmup 0: a simulated launch of a 64-thread block takes ~0.1 s


def gpu_sizes(quick: bool, repeats: int | None = None) -> Sizes:  # pragma: no cover - needs a GPU
    """The sizes ``scaledl bench`` uses on the current GPU (``quick``: smaller and fewer repeats)."""
    from numba import cuda

    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    return Sizes(n_gemm=1024 if quick else 4096,
                 n_stream=2**24 if quick else 2**27,  # 2**27 floats = 512 MiB per array: far beyond any L2
                 fma_threads=sms * 2048 * 4, fma_iter=4096,  # 4 full waves of resident threads
                 repeats=repeats or (5 if quick else 30),
                 n_spmv=2047 if quick else 8191,  # 8191^2 float32 = 268 MB dense: the GEMV streams from DRAM
                 # CSR moves 8 bytes per non-zero (value, index), dense GEMV 4 per element: the crossover
                 # lies near 0.5 (an H200 still ran CSR faster at 0.5), so 0.7 brackets it
                 spmv_densities=(0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.7),
                 nm_shape=(1023, 1023, 1025) if quick else (4095, 4095, 4097),  # K: 2:4 groups padded
                 rnn_hiddens=(100, 1152, 2048),  # 100: the one-block variant fits (hidden <= 110)
                 rnn_batch=4, rnn_steps=64)


SECTIONS = ("gemm", "streams", "fma", "spmv", "nm", "rnn", "quantize")


def measure(section: str, baselines, sizes: Sizes) -> list[Row]:
    """The checked and timed rows of one ``section`` of the bench (see :data:`SECTIONS`).

    Raises:
        ValueError: ``section`` is not one of :data:`SECTIONS`.
        RuntimeError: a kernel or a baseline does not match its reference (nothing after it is timed).
    """
    if section == "gemm":
        return bench_gemm(baselines, sizes.n_gemm, sizes.repeats)
    if section == "streams":
        return bench_streams(baselines, sizes.n_stream, sizes.repeats, inner=sizes.stream_inner)
    if section == "fma":
        return bench_fma(sizes.repeats, n_threads=sizes.fma_threads, n_iter=sizes.fma_iter)
    # lazily: bench_sections imports Row, time_ms, _check, ... from this module
    from scaledl.kernels import bench_sections as later

    if section == "spmv":
        return later.bench_spmv(baselines, sizes.n_spmv, sizes.spmv_densities, sizes.repeats,
                                inner=sizes.stream_inner, warmup=sizes.warmup)
    if section == "nm":
        return later.bench_nm(baselines, sizes.nm_shape, sizes.repeats, warmup=sizes.warmup)
    if section == "rnn":
        return later.bench_rnn(sizes.rnn_hiddens, sizes.rnn_batch, sizes.rnn_steps, sizes.repeats,
                               inner=sizes.stream_inner, warmup=sizes.warmup)
    if section == "quantize":
        return later.bench_quantize(baselines, sizes.n_stream, sizes.repeats, inner=sizes.stream_inner,
                                    warmup=sizes.warmup)
    raise ValueError(f"section must be one of {SECTIONS}, got {section!r}")


def format_table(rows: list[Row], header: str = "") -> str:
    """The bench table as fixed-width text (tested without a GPU)."""
    cols = ("kernel", "size", "time (ms)", "rate", "baseline", "ratio", "target")
    body = []
    for r in rows:
        ratio = "" if r.ratio is None else f"{100 * r.ratio:.0f} %"
        target = ""
        if r.target is not None and r.ratio is not None:
            target = f">= {100 * r.target:.0f} % {'ok' if r.ratio >= r.target else 'MISSED'}"
        body.append((r.kernel, r.size, f"{r.time_ms:.3f}", f"{r.rate:,.0f} {r.unit}", r.baseline, ratio, target))
    widths = [max(len(c), *(len(b[i]) for b in body)) if body else len(c) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()
    out = [header] if header else []
    out += [line, "-" * len(line)]
    out += ["  ".join(v.ljust(w) for v, w in zip(b, widths)).rstrip() for b in body]
    return "\n".join(out)


def no_gpu_message() -> str:
    return f"scaledl bench needs a CUDA GPU; this machine runs the simulator ({scaledl.device.reason()})"


def _import_cupy():
    import os

    os.environ["CUPY_TF32"] = "0"  # CuPy reads it at import: plain FP32 cuBLAS (no TF32), like our kernels
    try:
        import cupy

        return cupy
    except ImportError:
        return None


# ------------------------------------------------------------------------------------------ GPU timing
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


def cupy_baselines() -> CupyBaselines | None:
    """:class:`CupyBaselines` on CuPy with TF32 off, or None where CuPy is missing (the simulator's machines)."""
    cp = _import_cupy()
    return None if cp is None else CupyBaselines(cp)


class CupyBaselines:
    """The baselines every kernel is compared with, measured in the same process through CuPy.

    Each method takes device arrays (Numba's; CuPy wraps them without a copy through
    ``__cuda_array_interface__``) and returns what the bench times. The bench needs nothing else from CuPy,
    so tests substitute NumPy stand-ins with the same methods and run the bench on the simulator.
    """

    gemm_name, copy_name, sum_name = "cuBLAS SGEMM (CuPy)", "copy (CuPy)", "sum (CuPy)"
    spmv_name, gemv_name = "cuSPARSE SpMV (CuPy)", "cuBLAS GEMV (CuPy)"

    def __init__(self, cp):
        self.cp = cp

    def gemm(self, dA, dB):  # pragma: no cover - needs a GPU
        """``(run, result)``: ``run()`` computes A @ B with cuBLAS SGEMM into a preallocated output (TF32 off:
        see _import_cupy), ``result()`` copies that output to the host."""
        cp = self.cp
        cA, cB = cp.asarray(dA), cp.asarray(dB)
        out = cp.matmul(cA, cB)
        return (lambda: cp.matmul(cA, cB, out=out)), (lambda: cp.asnumpy(out))

    def copy(self, src, dst):  # pragma: no cover - needs a GPU
        """``run()``: a device-to-device cudaMemcpyAsync of ``src`` into ``dst``."""
        cs, cd = self.cp.asarray(src), self.cp.asarray(dst)
        return lambda: cd.data.copy_from_device_async(cs.data, cs.nbytes)

    def sum(self, x):  # pragma: no cover - needs a GPU
        """``run()``: CuPy's own sum of ``x`` (a CUB reduction)."""
        cx = self.cp.asarray(x)
        return lambda: self.cp.sum(cx)

    def spmv(self, indptr, indices, data, x, shape):  # pragma: no cover - needs a GPU
        """``(run, result)``: ``run()`` computes A @ x with cuSPARSE for the CSR matrix of the three device
        arrays, ``result()`` computes it once more and copies it to the host."""
        import cupyx.scipy.sparse

        cp = self.cp  # built for CUDA >= 11, CuPy's CSR @ vector is cuSPARSE's SpMV (its CUB path is off)
        A = cupyx.scipy.sparse.csr_matrix((cp.asarray(data), cp.asarray(indices), cp.asarray(indptr)),
                                          shape=shape)
        cx = cp.asarray(x)
        return (lambda: A.dot(cx)), (lambda: cp.asnumpy(A.dot(cx)))

    def gemv(self, dA, dx):  # pragma: no cover - needs a GPU
        """``(run, result)``: ``run()`` computes the dense A @ x with cuBLAS, ``result()`` once more, to the
        host."""
        cp = self.cp
        cA, cx = cp.asarray(dA), cp.asarray(dx)
        return (lambda: cp.matmul(cA, cx)), (lambda: cp.asnumpy(cp.matmul(cA, cx)))


class HostBaselines:
    """NumPy and SciPy stand-ins for :class:`CupyBaselines` (same methods, done on the host): a dry run of the
    bench on the simulator checks every kernel against them; their times mean nothing."""

    gemm_name, copy_name, sum_name = "numpy matmul (dry run)", "numpy copy (dry run)", "numpy sum (dry run)"
    spmv_name, gemv_name = "scipy CSR @ x (dry run)", "numpy A @ x (dry run)"

    def gemm(self, dA, dB):
        A, B = dA.copy_to_host(), dB.copy_to_host()
        out = A @ B
        return (lambda: np.matmul(A, B, out=out)), (lambda: out.copy())

    def copy(self, src, dst):
        return lambda: dst.copy_to_device(src)

    def sum(self, x):
        host = x.copy_to_host()
        return lambda: host.sum()

    def spmv(self, indptr, indices, data, x, shape):
        import scipy.sparse as sp

        A = sp.csr_array((data.copy_to_host(), indices.copy_to_host(), indptr.copy_to_host()), shape=shape)
        host = x.copy_to_host()
        return (lambda: A @ host), (lambda: A @ host)

    def gemv(self, dA, dx):
        A, x = dA.copy_to_host(), dx.copy_to_host()
        out = A @ x
        return (lambda: np.matmul(A, x, out=out)), (lambda: out.copy())


def _check(name: str, got, want, tol) -> None:
    """Raise RuntimeError listing the first ten (index, spec, got) triples where ``|got - want| > tol``.

    Scalars are checked as 1-element arrays (``np.argwhere`` of a 0-d array has no columns, so a failing
    scalar would otherwise report no bad index and pass)."""
    got, want = np.atleast_1d(np.asarray(got, np.float64)), np.atleast_1d(np.asarray(want, np.float64))
    bad = np.argwhere(~(np.abs(got - want) <= tol))
    if bad.size:
        shown = "; ".join(f"{tuple(int(j) for j in i)}: spec {float(want[tuple(i)])!r} got "
                          f"{float(got[tuple(i)])!r}" for i in bad[:10])
        raise RuntimeError(f"{name} does not match its reference ({len(bad)} elements): {shown}")


def bench_gemm(baselines, n: int, repeats: int) -> list[Row]:
    """Check the three GEMM variants against the baseline's product at ``n^3``, then time them and it."""
    from numba import cuda

    from scaledl.kernels.gemm import gemm

    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    dC = cuda.device_array((n, n), np.float32)
    run_ref, ref_result = baselines.gemm(dA, dB)
    flops = 2 * n**3
    t_ref = time_ms(run_ref, repeats)
    rows = [Row(baselines.gemm_name, f"{n}^3", t_ref, flops / t_ref / 1e6, "GFLOP/s", "-", None)]
    # every result, the baseline's too, against the float64 product: float32 accumulation of n products
    # errs by at most (n + 2) eps (|A| @ |B|), elementwise
    exact = A.astype(np.float64) @ B.astype(np.float64)
    tol = (n + 2) * np.finfo(np.float32).eps * (np.abs(A) @ np.abs(B))
    _check("the baseline GEMM", ref_result(), exact, tol)
    for variant in ("naive", "tiled", "regblock"):
        _poison(dC)
        gemm(dA, dB, variant=variant, out=dC)
        _check(f"gemm {variant}", dC.copy_to_host(), exact, tol)
        t = time_ms(lambda: gemm(dA, dB, variant=variant, out=dC), repeats)
        rate = flops / t / 1e6
        rows.append(Row(f"gemm {variant}", f"{n}^3", t, rate, "GFLOP/s", "cuBLAS", rate / rows[0].rate,
                        TARGETS["gemm"] if variant == "regblock" else None))
    return rows


def time_gemms_beside_baseline(runs: dict, dA, dB, baselines, repeats: int = 10) -> list[Row]:
    """Time the baseline's GEMM of ``dA @ dB`` and then each ``runs[name]()`` (a GEMM of the same operands, done
    by the caller's kernel) in this process, one after the other: rows as :func:`bench_gemm`'s, each with
    its rate over the baseline's measured here. A notebook that times its own kernels uses it, so that its
    share of cuBLAS is not a ratio against a cuBLAS timed in another process. Nothing is checked here: the
    caller checks its kernels first."""
    M, K = dA.shape
    N = dB.shape[1]
    flops, size = 2 * M * N * K, (f"{M}^3" if M == N == K else f"{M}x{K}x{N}")
    run_ref, _ = baselines.gemm(dA, dB)
    t_ref = time_ms(run_ref, repeats)
    rows = [Row(baselines.gemm_name, size, t_ref, flops / t_ref / 1e6, "GFLOP/s", "-", None)]
    for name, fn in runs.items():
        t = time_ms(fn, repeats)
        rows.append(Row(name, size, t, flops / t / 1e6, "GFLOP/s", baselines.gemm_name, t_ref / t))
    return rows


def _poison(d_array) -> None:
    """Fill a device array with NaN before a checked launch, so an element the kernel never writes fails."""
    d_array.copy_to_device(np.full(d_array.shape, np.nan, np.float32))


def bench_streams(baselines, n: int, repeats: int, inner: int | None = None) -> list[Row]:
    """Check copy/scale/triad and the reduction(s) at ``n`` float32 elements, then time them against the
    baseline's device-to-device copy (and show the baseline's own sum); ``inner``: launches per timed sample
    (default :data:`STREAM_INNER`)."""
    from numba import cuda

    from scaledl.kernels import bandwidth as bw
    from scaledl.kernels.reduce import _max_blocks, reduce_sum, reduce_sum_into, sum_reference

    inner = STREAM_INNER if inner is None else inner
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array(n, np.float32)
    run_copy = baselines.copy(da, dc)
    _poison(dc)
    run_copy()
    cuda.synchronize()
    _check("the baseline copy", dc.copy_to_host(), a, 0.0)
    t_copy = time_ms(run_copy, repeats, inner=inner)
    copy_GBps = bw.stream_bytes("copy", n) / t_copy / 1e6
    rows = [Row(baselines.copy_name, f"{n:,}", t_copy, copy_GBps, "GB/s", "-", None)]
    s = 3.0
    runs = {"copy": (lambda: bw.copy(dc, da), a),
            "scale": (lambda: bw.scale(dc, da, s), bw.stream_reference("scale", a, s=s)),
            "triad": (lambda: bw.triad(dc, da, db, s), bw.stream_reference("triad", a, b, s=s))}
    for op, (fn, want) in runs.items():
        _poison(dc)
        fn()
        _check(op, dc.copy_to_host(), want, 2 * np.finfo(np.float32).eps * (np.abs(want) + 1))
        t = time_ms(fn, repeats, inner=inner)
        rate = bw.stream_bytes(op, n) / t / 1e6
        rows.append(Row(op, f"{n:,}", t, rate, "GB/s", baselines.copy_name, rate / copy_GBps, TARGETS["stream"]))
    # the warp-shuffle finish needs real shuffles: the simulator has none (reduce.resolve_variant)
    exact_sum, sum_tol = sum_reference(a), n * np.finfo(np.float32).eps * float(np.abs(a).sum())
    for variant in ("shared", "warp") if scaledl.device.on_gpu() else ("shared",):
        _check(f"sum {variant}", float(reduce_sum(da, variant)), exact_sum, sum_tol)
        blocks = min(2048, _max_blocks())  # on a GPU 2048 x 256 threads: several full waves on any current one
        partial, result = cuda.device_array(blocks, np.float32), cuda.device_array(1, np.float32)
        t = time_ms(lambda: reduce_sum_into(da, partial, result, variant), repeats,
                    inner=inner)  # no allocation, no copy back
        _check(f"sum {variant} (timed launch)", float(result.copy_to_host()[0]), exact_sum, sum_tol)
        rate = n * 4 / t / 1e6
        rows.append(Row(f"sum {variant}", f"{n:,}", t, rate, "GB/s", baselines.copy_name, rate / copy_GBps,
                        TARGETS["reduce"]))
    run_sum = baselines.sum(da)
    t_sum = time_ms(run_sum, repeats, inner=inner)
    rows.append(Row(baselines.sum_name, f"{n:,}", t_sum, n * 4 / t_sum / 1e6, "GB/s", baselines.copy_name,
                    n * 4 / t_sum / 1e6 / copy_GBps))
    return rows


def bench_fma(repeats: int, n_threads: int, n_iter: int) -> list[Row]:
    """Check the FMA kernel exactly, then time it (no baseline: it measures the arithmetic ceiling)."""
    from numba import cuda

    from scaledl.kernels import bandwidth as bw

    out = cuda.device_array(n_threads, np.float32)
    _poison(out)
    bw.fma_throughput(n_threads, n_iter, out=out)
    _check("fma", out.copy_to_host(), bw.fma_reference(n_threads, n_iter, 0.0, 1.0, 1.0), 0.0)
    t = time_ms(lambda: bw.fma_throughput(n_threads, n_iter, out=out), repeats)
    flops = bw.fma_flops(n_threads, n_iter)
    return [Row("fma throughput", f"{n_threads:,} thr x {n_iter}", t, flops / t / 1e6, "GFLOP/s", "-", None)]


def main(argv: list[str] | None = None, out=sys.stdout) -> int:
    """Entry point of ``scaledl bench``. Returns 0 on success, 2 without a GPU or without CuPy."""
    parser = argparse.ArgumentParser(prog="scaledl bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    parser.add_argument("--repeats", type=int, default=None, help="timed launches per kernel (median)")
    args = parser.parse_args(argv or [])
    if not scaledl.device.on_gpu():
        print(no_gpu_message(), file=out)
        return 2
    cp = _import_cupy()
    if cp is None:
        print("scaledl bench needs CuPy for its baselines (cuBLAS, device copy); install the package's cu12 or "
              f"cu13 extra, to match your CUDA driver: {install_command('cu12')}", file=out)
        return 2
    sizes = gpu_sizes(args.quick, args.repeats)  # pragma: no cover - the rest needs a GPU
    repeats = sizes.repeats
    info = scaledl.device.gpu_info()
    baselines = CupyBaselines(cp)
    rows = [row for section in SECTIONS for row in measure(section, baselines, sizes)]
    header = (f"scaledl bench on {info.name} (compute capability {info.compute_capability[0]}."
              f"{info.compute_capability[1]}), {datetime.date.today().isoformat()}; median of {repeats} "
              f"launches after warm-up, CUDA events")
    print(format_table(rows, header), file=out)
    return 0
