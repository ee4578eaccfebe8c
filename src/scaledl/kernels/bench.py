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
import sys
from dataclasses import dataclass

import numpy as np

import scaledl.device
from numba import cuda

from scaledl._args import count_arg, UsageError
from scaledl._optional import install_command
from scaledl.kernels.bench_timing import (HOLD_LIMIT_US, STREAM_INNER, TARGETS, NotQueued, Row,  # noqa: F401
                                          hold_kernel, time_ms, time_queued_ms)
from scaledl.kernels.bench_timing import check_close as _check
from scaledl.kernels.bench_timing import poison as _poison
from scaledl.kernels.reference import gemm_reference, gemm_tolerance


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
    from scaledl.kernels import bench_sections as later  # lazily: its sections import SpMV, 2:4, RNN kernels

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
    raise UsageError(f"section must be one of {SECTIONS}, got {section!r}")


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


def bench_gemm(baselines, n: int, repeats: int) -> list[Row]:
    """Check the three GEMM variants against the baseline's product at ``n^3``, then time them and it."""

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
    # every result, the baseline's too, against the float64 product, within the float32 rounding bound
    exact, tol = gemm_reference(A, B), gemm_tolerance(A, B)
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


def bench_streams(baselines, n: int, repeats: int, inner: int | None = None) -> list[Row]:
    """Check copy/scale/triad and the reduction(s) at ``n`` float32 elements, then time them against the
    baseline's device-to-device copy (and show the baseline's own sum); ``inner``: launches per timed sample
    (default :data:`STREAM_INNER`)."""

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
    parser.add_argument("--repeats", type=count_arg, default=None, help="timed launches per kernel (median)")
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
