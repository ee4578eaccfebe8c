"""The later sections of ``scaledl bench``: the book's other kernels against what a practitioner would call.

:func:`scaledl.kernels.bench.measure` dispatches ``spmv``, ``nm``, ``rnn`` and ``quantize`` here; the rows,
the checks (:func:`~scaledl.kernels.bench._check` on poisoned outputs before anything is timed), the timer
and the targets are :mod:`scaledl.kernels.bench`'s.

* ``spmv``: the CSR SpMV variants against cuSPARSE (CuPy's ``csr_matrix @ x``), and cuBLAS dense GEMV as a
  second reference, at an 8191^2 matrix at densities from 0.001 to 0.7. Rates count the useful ``2 nnz``
  FLOPs for every row, so a ratio is cuSPARSE's time over the row's. Target: the best variant >= 70 % of
  cuSPARSE. A crossover row gives the density at which the fastest CSR variant stops beating dense GEMV.
  Each call costs the host tens of microseconds (a Numba launch; CuPy's cuSPARSE call), more than the kernel
  at low density: the first H200 run (2026-11-26) timed back-to-back calls, and from density 0.001 to 0.1
  cuSPARSE's and the warp kernels' times sat on a 37-65 us floor while the non-zeros grew 100x, so its ratios
  there compared hosts. The kernels are now timed queued behind a kernel that holds the GPU
  (:func:`~scaledl.kernels.bench.time_queued_ms`), and the per-call floor gets rows of its own ("..., per
  call", at the lowest density, calls back to back as before). The dense GEMV runs on rows padded to a
  multiple of 32 floats (:func:`padded_rows`): with 8191-float rows, as in the first run, three rows in four
  start off a 16-byte boundary, where a GPU's widest vector loads cannot be used.
* ``nm``: the 2:4 compressed GEMM against its dense twin, the book's tiled GEMM with the same tile on the
  decompressed matrix (ratio: the twin's time over the row's, the speedup of skipping half the multiplies),
  with cuBLAS SGEMM on the same dense matrix for scale.
* ``rnn``: the persistent RNN kernels against the standard one (a launch per step), ``steps`` steps at
  batch 4; rate in steps per second, ratio the speedup. The one-block kernel runs only where W fits one
  block's shared memory (hidden <= 110).
* ``quantize``: the e4m3 quantize kernel, checked bit for bit, as GB/s moved against the copy. Target: 85 %.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

import scaledl.device
from scaledl.kernels.bench_timing import TARGETS, NotQueued, Row, time_ms, time_queued_ms
from scaledl.kernels.bench_timing import check_close as _check
from scaledl.kernels.bench_timing import poison as _poison
from scaledl.kernels.reference import gemm_reference, gemm_tolerance

QUANTIZE_BLOCK = 2**20  # distinct random inputs of the quantize check, repeated up to the stream size


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


def padded_rows(dense, x, multiple: int = 32):
    """``(A, x)`` for a dense GEMV on aligned rows: ``dense`` with zero columns appended up to a multiple of
    ``multiple`` floats (32 floats: 128 bytes, a cache line, so every row starts on one) and ``x`` with as
    many zeros. ``A @ x`` equals ``dense @ x`` exactly (the added products are 0 * 0).

    >>> A, x = padded_rows(np.ones((3, 5), np.float32), np.ones(5, np.float32), multiple=4)
    >>> A.shape, x.shape, float((A @ x)[0])
    ((3, 8), (8,), 5.0)

    Raises:
        ValueError: ``dense`` is not 2-D, ``x`` does not match its columns, or ``multiple`` is below 1.
    """
    dense, x = np.asarray(dense), np.asarray(x)
    if dense.ndim != 2 or x.shape != (dense.shape[1],):
        raise ValueError(f"dense must be 2-D and x match its columns, got shapes {dense.shape} and {x.shape}")
    if isinstance(multiple, bool) or not isinstance(multiple, int) or multiple < 1:
        raise ValueError(f"multiple must be an int >= 1, got {multiple!r}")
    n = dense.shape[1]
    ld = -(-n // multiple) * multiple
    A = np.zeros((dense.shape[0], ld), dense.dtype)
    A[:, :n] = dense
    return A, np.concatenate((x, np.zeros(ld - n, x.dtype)))


def bench_spmv(baselines, n: int, densities, repeats: int, inner: int = 1, warmup: int = 3) -> list[Row]:
    """Check the CSR SpMV variants, the baseline's sparse product and its dense GEMV (on rows padded by
    :func:`padded_rows`) against float64 at an ``n x n`` matrix at each density, then time them with
    :func:`~scaledl.kernels.bench.time_queued_ms`, which leaves each call's host cost out; then the crossover
    density where the fastest CSR variant stops beating the dense GEMV; then, at the lowest density, each
    one's time per call with the host's cost in (:func:`~scaledl.kernels.bench.time_ms`, calls back to back):
    the floor under any timing of single calls.

    Every rate counts the useful work, ``2 nnz`` FLOPs, the dense GEMV's too, so a ratio (rate over the sparse
    baseline's rate) is the baseline's time over the kernel's: above 100 % the kernel beats it. A call that
    cannot be queued (it waits for the GPU itself) is timed per call instead, and its row says so.
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
    dx_padded = cuda.to_device(padded_rows(np.zeros((1, n), np.float32), x)[1])
    rows, fastest_ms, dense_ms, floor_rows = [], [], [], []

    def kernel_ms(fn):
        """GPU time per call and a note for the row's name ("" when the calls could be queued)."""
        try:
            return time_queued_ms(fn, repeats, warmup=warmup, inner=inner), ""
        except NotQueued:
            return time_ms(fn, repeats, inner=inner, warmup=warmup), " (per call: not queued)"

    def floor_row(name, fn, size):
        t = time_ms(fn, repeats, inner=inner, warmup=warmup)
        return Row(f"{name}, per call", size, t, 1e3 / t, "calls/s", "-", None)

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
        t_ref, note = kernel_ms(run_ref)
        rows.append(Row(baselines.spmv_name + note, size, t_ref, flops / t_ref / 1e6, "GFLOP/s", "-", None))
        run_dense, dense_result = baselines.gemv(cuda.to_device(padded_rows(dense, x)[0]), dx_padded)
        _check(f"the dense GEMV at density {density:g}", dense_result(), exact, tol)
        t_dense, note = kernel_ms(run_dense)
        rows.append(Row(baselines.gemv_name + note, size, t_dense, flops / t_dense / 1e6, "GFLOP/s",
                        baselines.spmv_name, t_ref / t_dense))
        lowest = density == densities[0]
        if lowest:
            floor_rows += [floor_row(baselines.spmv_name, run_ref, size),
                           floor_row(baselines.gemv_name, run_dense, size)]
        times = []
        for variant in variants:
            _poison(dy)
            spmv_into(indptr, indices, data, dx, dy, variant)
            _check(f"spmv {variant} at density {density:g}", dy.copy_to_host(), exact, tol)
            run = lambda: spmv_into(indptr, indices, data, dx, dy, variant)  # noqa: E731
            t, note = kernel_ms(run)
            times.append(t)
            rows.append(Row(f"spmv {variant}{note}", size, t, flops / t / 1e6, "GFLOP/s", baselines.spmv_name,
                            t_ref / t, TARGETS["spmv"] if variant == targeted else None))
            if lowest:
                floor_rows.append(floor_row(f"spmv {variant}", run, size))
        fastest_ms.append(min(times))
        dense_ms.append(t_dense)
    cross = crossover_density(densities, fastest_ms, dense_ms)
    # the row's rate is the crossover in stored non-zeros per row (clipped to the measured range)
    rows.append(Row("crossover vs dense GEMV", crossover_text(cross, densities), statistics.median(dense_ms),
                    min(cross, densities[-1]) * n, "nnz/row", baselines.gemv_name, None))
    return rows + floor_rows


# ------------------------------------------------------------------------------------------- 2:4 GEMM
def _nm_launch(variant: str, d_values, d_meta, dB, dC):
    """``run()``: one launch of the 2:4 GEMM on device arrays, with the grid and block that
    :func:`scaledl.kernels.nm_gemm.nm_gemm` uses (which itself takes host arrays and copies them each call)."""
    from scaledl.kernels.nm_gemm import kernel_and_block

    kernel, (bx, by) = kernel_and_block(variant)
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
    exact, tol = gemm_reference(A, B), gemm_tolerance(A, B)  # as bench_gemm; the pruned zeros add nothing
    dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.device_array((M, N), np.float32)
    dV, dMeta = cuda.to_device(np.ascontiguousarray(values)), cuda.to_device(np.ascontiguousarray(meta))
    size, flops, tile = f"{M}x{K}x{N}", 2 * M * N * K, TILE[scaledl.device.backend()]
    twin = "gemm tiled (dense twin)"
    _poison(dC)
    gemm(dA, dB, variant="tiled", out=dC, tile=tile)
    _check(twin, dC.copy_to_host(), exact, tol)
    t_twin = time_ms(lambda: gemm(dA, dB, variant="tiled", out=dC, tile=tile), repeats, warmup=warmup)
    rows = [Row(twin, size, t_twin, flops / t_twin / 1e6, "GFLOP/s", "-", None)]
    for variant in ("tiled", "decoded", "naive"):  # v2, v3, v1
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
