"""``scaledl bench``: check every kernel variant against its reference, then time it on a real GPU.

For each kernel: one checked run at a size that fills the chip, then warm-up launches, then the median of
many launches timed with CUDA events, and the same for a baseline measured in the same process: cuBLAS SGEMM
through CuPy (TF32 off) for the GEMMs, CuPy's device-to-device copy for the streams and the FMA kernel's
reference row, CuPy's sum for the reduction. The table gives time, GFLOP/s or GB/s, and the ratio to the
baseline. Targets (printed beside the ratio): register-blocked GEMM at 4096^3 >= 60 % of cuBLAS (aim 85 %),
streams and the reduction >= 85 % of the copy bandwidth.

The later sections compare the book's other kernels with what a practitioner would otherwise call:

* ``spmv``: the CSR SpMV variants against cuSPARSE (CuPy's ``csr_matrix @ x``), and cuBLAS dense GEMV as a
  second reference, at an 8191^2 matrix at densities from 0.001 to 0.7. Rates count the useful ``2 nnz``
  FLOPs for every row, so a ratio is cuSPARSE's time over the row's. Target: the best variant >= 70 % of
  cuSPARSE. A last row gives the density at which the fastest CSR variant stops beating dense GEMV. At the
  lowest densities every call takes tens of microseconds of launch overhead, so those ratios compare hosts.
* ``nm``: the 2:4 compressed GEMM against its dense twin, the book's tiled GEMM with the same tile on the
  decompressed matrix (ratio: the twin's time over the row's, the speedup of skipping half the multiplies),
  with cuBLAS SGEMM on the same dense matrix for scale.
* ``rnn``: the persistent RNN kernels against the standard one (a launch per step), ``steps`` steps at
  batch 4; rate in steps per second, ratio the speedup. The one-block kernel runs only where W fits one
  block's shared memory (hidden <= 110).
* ``quantize``: the e4m3 quantize kernel, checked bit for bit, as GB/s moved against the copy. Target: 85 %.

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
import math
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

import scaledl.device

TARGETS = {"gemm": 0.60, "stream": 0.85, "reduce": 0.85,  # fraction of the baseline (see module docstring)
           "spmv": 0.70, "quantize": 0.85}
STREAM_INNER = 10  # launches per event pair for sub-millisecond kernels (see time_ms)
QUANTIZE_BLOCK = 2**20  # distinct random inputs of the quantize check, repeated up to the stream size


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
    if section == "spmv":
        return bench_spmv(baselines, sizes.n_spmv, sizes.spmv_densities, sizes.repeats, inner=sizes.stream_inner,
                          warmup=sizes.warmup)
    if section == "nm":
        return bench_nm(baselines, sizes.nm_shape, sizes.repeats, warmup=sizes.warmup)
    if section == "rnn":
        return bench_rnn(sizes.rnn_hiddens, sizes.rnn_batch, sizes.rnn_steps, sizes.repeats,
                         inner=sizes.stream_inner, warmup=sizes.warmup)
    if section == "quantize":
        return bench_quantize(baselines, sizes.n_stream, sizes.repeats, inner=sizes.stream_inner,
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


# ------------------------------------------------------------------------------------------------ SpMV
def crossover_density(densities, sparse_ms, dense_ms) -> float:
    """The density at which a sparse kernel stops beating a dense one, from times measured at ``densities``.

    Between the last density where the sparse time is below the dense time and the first where it is not,
    the answer is interpolated linearly in the density (the sparse time grows with the non-zeros, the dense
    one does not). Returns ``0.0`` when the sparse kernel loses already at the lowest density (the crossover
    lies below the measured range) and ``math.inf`` when it wins at every one (above the range).

    >>> crossover_density([0.1, 0.3], [1.0, 3.0], [2.0, 2.0])
    0.2

    Raises:
        ValueError: empty lists or lists of different lengths, densities not increasing within (0, 1], a
            time that is not positive and finite.
    """
    d, s, t = (np.asarray(v, np.float64) for v in (densities, sparse_ms, dense_ms))
    if d.ndim != 1 or not d.size or s.shape != d.shape or t.shape != d.shape:
        raise ValueError(f"densities, sparse_ms and dense_ms must be non-empty lists of one length, got "
                         f"lengths {np.size(d)}, {np.size(s)} and {np.size(t)}")
    if not (np.all(np.diff(d) > 0) and d[0] > 0 and d[-1] <= 1):
        raise ValueError(f"densities must increase within (0, 1], got {list(densities)}")
    for name, v in (("sparse_ms", s), ("dense_ms", t)):
        if not np.all(np.isfinite(v) & (v > 0)):
            raise ValueError(f"{name} must be positive finite times, got {list(v)}")
    lost = np.flatnonzero(s >= t)
    if not lost.size:
        return math.inf
    i = int(lost[0])
    if i == 0:
        return 0.0
    behind_before, behind_after = s[i - 1] - t[i - 1], s[i] - t[i]  # < 0 (sparse ahead), >= 0
    return float(d[i - 1] + (d[i] - d[i - 1]) * behind_before / (behind_before - behind_after))


def crossover_text(density: float, densities) -> str:
    """:func:`crossover_density`'s answer for the table: ``"< 0.001"`` and ``"> 0.5"`` outside the range."""
    if density == 0.0:
        return f"< {densities[0]:g}"
    if math.isinf(density):
        return f"> {densities[-1]:g}"
    return f"{density:.2g}"


def bench_spmv(baselines, n: int, densities, repeats: int, inner: int = 1, warmup: int = 3) -> list[Row]:
    """Check the CSR SpMV variants, the baseline's sparse product and its dense GEMV against float64 at an
    ``n x n`` matrix at each density, then time them; then the crossover density where the fastest CSR
    variant stops beating the dense GEMV.

    Every rate counts the useful work, ``2 nnz`` FLOPs, the dense GEMV's too, so a ratio (rate over the sparse
    baseline's rate) is the baseline's time over the kernel's: above 100 % the kernel beats it.
    """
    import scipy.sparse as sp
    from numba import cuda

    from scaledl.kernels.spmv import csr_arrays, resolve_variant, spmv_into, spmv_reference

    variants = ("row", "warp", "shuffle") if scaledl.device.on_gpu() else ("row", "warp")  # no shuffles here
    targeted = resolve_variant("auto")  # the book's best: the GPU.md goal is about it
    rng = np.random.default_rng(2)
    keep = rng.random((n, n), dtype=np.float32)  # entry (i, j) is stored at density d when keep[i, j] < d
    values = rng.standard_normal((n, n), dtype=np.float32)
    x = rng.standard_normal(n, dtype=np.float32)
    dx, dy = cuda.to_device(x), cuda.device_array(n, np.float32)
    rows, fastest_ms, dense_ms = [], [], []
    for density in densities:
        mask = keep < density
        dense = np.where(mask, values, np.float32(0.0))
        stored = np.flatnonzero(mask)  # row-major, so already in CSR order (4x faster than csr_array(dense))
        row_starts = np.concatenate(([0], np.cumsum(np.count_nonzero(mask, axis=1)))).astype(np.int32)
        A = sp.csr_array((values.ravel()[stored], (stored % n).astype(np.int32), row_starts), shape=(n, n))
        size, flops = f"{n}^2 at {density:g}", 2 * A.nnz
        exact = spmv_reference(A, x)
        # a float32 sum of at most n products errs by at most (n + 2) eps (|A| @ |x|), in any order
        tol = (n + 2) * np.finfo(np.float32).eps * (abs(A).astype(np.float64) @ np.abs(x.astype(np.float64)))
        indptr, indices, data = (cuda.to_device(a) for a in csr_arrays(A))
        run_ref, ref_result = baselines.spmv(indptr, indices, data, dx, (n, n))
        _check(f"the baseline SpMV at density {density:g}", ref_result(), exact, tol)
        t_ref = time_ms(run_ref, repeats, inner=inner, warmup=warmup)
        rows.append(Row(baselines.spmv_name, size, t_ref, flops / t_ref / 1e6, "GFLOP/s", "-", None))
        run_dense, dense_result = baselines.gemv(cuda.to_device(dense), dx)
        _check(f"the dense GEMV at density {density:g}", dense_result(), exact, tol)
        t_dense = time_ms(run_dense, repeats, inner=inner, warmup=warmup)
        rows.append(Row(baselines.gemv_name, size, t_dense, flops / t_dense / 1e6, "GFLOP/s",
                        baselines.spmv_name, t_ref / t_dense))
        times = []
        for variant in variants:
            _poison(dy)
            spmv_into(indptr, indices, data, dx, dy, variant)
            _check(f"spmv {variant} at density {density:g}", dy.copy_to_host(), exact, tol)
            t = time_ms(lambda: spmv_into(indptr, indices, data, dx, dy, variant), repeats, inner=inner,
                        warmup=warmup)
            times.append(t)
            rows.append(Row(f"spmv {variant}", size, t, flops / t / 1e6, "GFLOP/s", baselines.spmv_name,
                            t_ref / t, TARGETS["spmv"] if variant == targeted else None))
        fastest_ms.append(min(times))
        dense_ms.append(t_dense)
    cross = crossover_density(densities, fastest_ms, dense_ms)
    # the row's rate is the crossover in stored non-zeros per row (clipped to the measured range)
    rows.append(Row("crossover vs dense GEMV", crossover_text(cross, densities), statistics.median(dense_ms),
                    min(cross, densities[-1]) * n, "nnz/row", baselines.gemv_name, None))
    return rows


# ------------------------------------------------------------------------------------------- 2:4 GEMM
def _nm_launch(variant: str, d_values, d_meta, dB, dC):
    """``run()``: one launch of the 2:4 GEMM on device arrays, with the grid and block that
    :func:`scaledl.kernels.nm_gemm.nm_gemm` uses (which itself takes host arrays and copies them each call)."""
    from scaledl.kernels.nm_gemm import BLOCK, TILE, nm_gemm_v1, tiled_kernel

    backend = scaledl.device.backend()
    if variant == "naive":
        kernel, (bx, by) = nm_gemm_v1, BLOCK[backend]
    else:
        t = TILE[backend]
        kernel, (bx, by) = tiled_kernel(t), (t, t)
    M, N = dC.shape
    grid = ((N + bx - 1) // bx, (M + by - 1) // by)
    return lambda: kernel[grid, (bx, by)](d_values, d_meta, dB, dC)


def bench_nm(baselines, shape: tuple[int, int, int], repeats: int, warmup: int = 3) -> list[Row]:
    """Check the 2:4 GEMM variants and their dense twin (the book's tiled GEMM, same tile, on the decompressed
    matrix) against float64 at ``shape = (M, K, N)``, then time them and the baseline's GEMM on the same
    dense matrix. Rates are dense-equivalent (``2 M N K`` FLOPs for every row), so a ratio is the dense
    twin's time over the row's: above 100 % the 2:4 kernel wins."""
    from numba import cuda

    from scaledl.kernels.gemm import gemm
    from scaledl.kernels.nm_gemm import TILE
    from scaledl.sparsity import compress_nm, decompress_nm

    M, K, N = shape
    rng = np.random.default_rng(3)
    values, meta = compress_nm(rng.standard_normal((M, K), dtype=np.float32), axis=1, pad=True)  # prunes to 2:4
    A = np.ascontiguousarray(decompress_nm(values, meta, (M, K), axis=1, pad=True), np.float32)  # twin's A
    B = rng.standard_normal((K, N), dtype=np.float32)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    tol = (K + 2) * np.finfo(np.float32).eps * (np.abs(A) @ np.abs(B))  # as bench_gemm; the zeros add nothing
    dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.device_array((M, N), np.float32)
    dV, dMeta = cuda.to_device(np.ascontiguousarray(values)), cuda.to_device(np.ascontiguousarray(meta))
    size, flops, tile = f"{M}x{K}x{N}", 2 * M * N * K, TILE[scaledl.device.backend()]
    twin = "gemm tiled (dense twin)"
    _poison(dC)
    gemm(dA, dB, variant="tiled", out=dC, tile=tile)
    _check(twin, dC.copy_to_host(), exact, tol)
    t_twin = time_ms(lambda: gemm(dA, dB, variant="tiled", out=dC, tile=tile), repeats, warmup=warmup)
    rows = [Row(twin, size, t_twin, flops / t_twin / 1e6, "GFLOP/s", "-", None)]
    for variant in ("tiled", "naive"):
        run = _nm_launch(variant, dV, dMeta, dB, dC)
        _poison(dC)
        run()
        _check(f"2:4 gemm {variant}", dC.copy_to_host(), exact, tol)
        t = time_ms(run, repeats, warmup=warmup)
        rows.append(Row(f"2:4 gemm {variant}", size, t, flops / t / 1e6, "GFLOP/s", twin, t_twin / t))
    run_ref, ref_result = baselines.gemm(dA, dB)
    _check("the baseline GEMM on the dense 2:4 matrix", ref_result(), exact, tol)
    t_ref = time_ms(run_ref, repeats, warmup=warmup)
    rows.append(Row(baselines.gemm_name, size, t_ref, flops / t_ref / 1e6, "GFLOP/s", twin, t_twin / t_ref))
    return rows


# ------------------------------------------------------------------------------------------------- RNN
def rnn_variants(hidden: int) -> tuple[str, ...]:
    """The RNN variants that can run at ``hidden`` here: the one-block kernel only while W fits one block's
    shared memory (hidden <= 110), the grid kernel on the simulator only while it needs one block."""
    from scaledl.kernels import rnn

    fits_block = 4 * hidden * hidden <= rnn.STATIC_SHARED_BYTES
    grid_ok = scaledl.device.on_gpu() or rnn.grid_slice_rows(hidden) >= hidden
    return tuple(v for v, ok in zip(rnn.VARIANTS, (True, fits_block, grid_ok)) if ok)


def bench_rnn(hiddens, batch: int, steps: int, repeats: int, inner: int = 1, warmup: int = 3) -> list[Row]:
    """Check each RNN variant against the float64 recurrence at every hidden size (outputs poisoned by
    :func:`~scaledl.kernels.rnn.rnn_forward`), then time ``steps`` steps of it on device arrays. Rate: steps
    per second; ratio: the standard kernel's time over the variant's (the persistent kernels' speedup)."""
    from numba import cuda

    from scaledl.kernels import rnn

    on_gpu, eps, rows = scaledl.device.on_gpu(), np.finfo(np.float32).eps, []
    for H in hiddens:
        rng = np.random.default_rng(H)
        W = rng.standard_normal((H, H))
        W *= 0.9 / np.abs(W).sum(axis=1).max()  # row sums of |W| <= 0.9: the recurrence shrinks old errors
        U, b = rng.standard_normal((H, 7)), 0.1 * rng.standard_normal(H)
        x, h0 = rng.standard_normal((steps, batch, 7)), 0.5 * rng.standard_normal((batch, H))
        ref = rnn.rnn_reference(W, U, b, x, h0)
        # the bound of tests/sim/test_rnn_kernels.py: each step's float32 error, at most 10 times over
        prev = np.concatenate((h0[None], ref[:-1]))
        tol = 10 * ((H + 6) * eps * (np.abs(prev) @ np.abs(W).T + np.abs(x @ U.T + b)) + eps).max()
        WT = cuda.to_device(np.ascontiguousarray(W.astype(np.float32).T))  # as rnn_forward prepares them
        z = cuda.to_device((x @ U.T + b).astype(np.float32))
        states = np.zeros((steps + 1, batch, H), np.float32)
        states[0] = h0
        states = cuda.to_device(states)
        size, t_standard = f"H={H}, batch {batch}, {steps} steps", None
        for variant in rnn_variants(H):
            try:
                got = rnn.rnn_forward(W, U, b, x, h0, variant=variant)
            except ValueError as err:  # e.g. more grid blocks than this GPU holds at once
                raise RuntimeError(f"rnn {variant} cannot run at hidden={H}: {err}") from err
            _check(f"rnn {variant} (hidden {H})", got, ref, tol)
            t = time_ms(lambda: rnn._launch(variant, WT, z, states, 0, on_gpu), repeats, inner=inner,
                        warmup=warmup)
            t_standard = t if variant == "standard" else t_standard
            rows.append(Row(f"rnn {variant}", size, t, steps / t * 1e3, "steps/s",
                            "-" if variant == "standard" else "rnn standard",
                            None if variant == "standard" else t_standard / t))
    return rows


# -------------------------------------------------------------------------------------------- quantize
def bench_quantize(baselines, n: int, repeats: int, inner: int = 1, warmup: int = 3) -> list[Row]:
    """Check the e4m3 quantize kernel bit for bit against the library's quantizer at ``n`` float32 elements
    (a poisoned output; ties, saturation, subnormals and signed zeros included), then time it as GB/s moved
    (4 bytes read, 4 written per element: it writes the rounded values as float32) against the baseline's
    copy, which moves the same bytes."""
    from numba import cuda

    from scaledl.kernels import bandwidth as bw
    from scaledl.kernels.quantize import quantize_into, quantize_reference

    rng = np.random.default_rng(4)
    m = min(n, QUANTIZE_BLOCK)  # one random block repeated: the host's part stays small at 2**27 elements
    block = (rng.standard_normal(m) * np.exp2(rng.uniform(-12, 10, m))).astype(np.float32)  # 2**-12 .. past 448
    special = np.array([0.0, -0.0, 1.0625, 464.0, -2.0**-10, 1e30], np.float32)  # ties to even, saturation
    block[:min(m, special.size)] = special[:m]
    x, want = np.resize(block, n), np.resize(quantize_reference(block, "e4m3"), n)
    dx, dout = cuda.to_device(x), cuda.device_array(n, np.float32)
    run_copy = baselines.copy(dx, dout)
    _poison(dout)
    run_copy()
    cuda.synchronize()
    _check("the baseline copy", dout.copy_to_host(), x, 0.0)
    t_copy = time_ms(run_copy, repeats, inner=inner, warmup=warmup)
    moved = bw.stream_bytes("copy", n)
    copy_GBps = moved / t_copy / 1e6
    rows = [Row(baselines.copy_name, f"{n:,}", t_copy, copy_GBps, "GB/s", "-", None)]
    _poison(dout)
    quantize_into(dx, dout, "e4m3")
    _check("quantize e4m3 (float32 bit patterns)", dout.copy_to_host().view(np.uint32), want.view(np.uint32), 0)
    t = time_ms(lambda: quantize_into(dx, dout, "e4m3"), repeats, inner=inner, warmup=warmup)
    rate = moved / t / 1e6
    rows.append(Row("quantize e4m3", f"{n:,}", t, rate, "GB/s", baselines.copy_name, rate / copy_GBps,
                    TARGETS["quantize"]))
    return rows


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
        print("scaledl bench needs CuPy for its baselines (cuBLAS, device copy); install it with "
              "`pip install scaledl[cu12]` or `pip install scaledl[cu13]` to match your CUDA driver", file=out)
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
