"""One check per kernel and launch shape of the book, parametrized by size: shared by the GPU and simulator tiers.

tests/gpu/test_every_kernel_gpu.py runs every case at full odd sizes on a real GPU (``scaledl validate`` runs
that folder); tests/sim/test_every_kernel_sim.py runs the same bodies at tiny odd sizes on Numba's simulator,
so a GPU test is proven before any GPU runs it. Each check, like llm.c's dev/cuda drivers:

* launches the book's kernel directly, with the *GPU's* launch shape (threads per block, tile sizes) on both
  tiers: the launchers pick smaller shapes on the simulator, so these configurations were otherwise only
  compiled (tests/sim/test_*ptx*.py), never run against a reference;
* draws random data at sizes that are not multiples of the block and need more than one block;
* poisons every output (NaN, or a sentinel for integers) on the device before the launch, so an element
  the kernel skips fails the comparison;
* compares with an independent float64 NumPy (or ml_dtypes) reference, exactly where the kernel does exact
  arithmetic and otherwise within a bound derived from float32 epsilon times the length of the reduction;
* on a mismatch, names the first few (index, reference, got) triples.

Warp shuffles (``shfl_down_sync``) do not exist in Numba's simulator. :func:`emulated_warp_shuffles` adds a
strict model of them for the duration of a check (every lane of the warp must take part, full mask only), so
the shuffle reduction and shuffle SpMV run against NumPy on the simulator too; the hardware instruction itself
is only exercised on a GPU, and its PTX by tests/sim/test_ptx_compile.py and test_sparse_ptx.py.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import threading
from dataclasses import dataclass, field

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda

from scaledl.kernels.reference import gemm_reference, gemm_tolerance

EPS32 = float(np.finfo(np.float32).eps)  # 2**-23: one float32 rounding is at most eps32 / 2 relative
FULL_MASK = 0xFFFFFFFF
WARP = 32
SHOW = 5  # mismatches named in a failure message


# ----------------------------------------------------------------------------------------------- helpers
def on_gpu() -> bool:
    return scaledl.device.on_gpu()


def poisoned(shape, dtype=np.float32, value=np.nan):
    """A device array (a simulator array off a GPU) filled with ``value``: what the kernel skips stays so."""
    return cuda.to_device(np.full(shape, value, dtype))


def assert_within(got, ref, bound, what: str):
    """``|got - ref| <= bound`` everywhere, NaN (an unwritten, poisoned element) never; else name the first few."""
    got = np.asarray(got, np.float64)
    err = np.abs(got - np.asarray(ref, np.float64))
    bad = ~(err <= np.broadcast_to(bound, err.shape))  # NaN compares False: a poisoned element is bad
    if bad.any():
        idx = np.argwhere(bad)[:SHOW]
        triples = [(tuple(int(i) for i in ix), float(np.asarray(ref)[tuple(ix)]), float(got[tuple(ix)]))
                   for ix in idx]
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements off (index, reference, got): "
                             f"{triples}; bound there {float(np.broadcast_to(bound, err.shape)[tuple(idx[0])]):.3g}")


def assert_exact(got, ref, what: str):
    """Bit-for-bit equality (NaN equals NaN), naming the first few differences."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.dtype.kind == "f":
        same = (got.view(f"u{got.itemsize}") == ref.astype(got.dtype).view(f"u{got.itemsize}")) | (
            np.isnan(got) & np.isnan(ref))
    else:
        same = got == ref
    if not same.all():
        idx = np.argwhere(~same)[:SHOW]
        triples = [(tuple(int(i) for i in ix), ref[tuple(ix)].item(), got[tuple(ix)].item()) for ix in idx]
        raise AssertionError(f"{what}: {int((~same).sum())} of {same.size} differ (index, reference, got): {triples}")


def _cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@contextlib.contextmanager
def emulated_warp_shuffles():
    """Give the simulator a strict ``cuda.shfl_down_sync`` while the block runs (nothing on a GPU).

    Model: each lane posts its value, the block meets at a barrier, lane ``l`` reads lane ``l + delta`` of its
    own warp (its own value when that is past lane 31), the block meets again. A lane whose partner did not
    post (it skipped the shuffle or had exited) raises, as a full-mask shuffle would hang or read garbage on a
    GPU. The barrier is block-wide (the simulator has no warp barrier), which is right for kernels whose
    warps shuffle in step, or whose other warps have finished, as the book's do.
    """
    if on_gpu():
        yield
        return
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    def shfl_down_sync(self, mask, value, delta):
        if mask != FULL_MASK:
            raise NotImplementedError(f"the emulated shuffle takes the full mask only, got mask={mask:#x}")
        t = threading.current_thread()
        slots = t._manager.__dict__.setdefault("_shfl_slots", {})  # one dict per block
        slots[t.thread_id] = value
        t.syncthreads()
        lane = t.thread_id % WARP
        src = t.thread_id + delta
        if lane + delta < WARP:
            if src not in slots:
                raise RuntimeError(f"lane {lane} of warp {t.thread_id // WARP} (block {tuple(t.blockIdx)}) "
                                   f"shuffled with lane {lane + delta}, which did not take part")
            value = slots[src]
        t.syncthreads()
        del slots[t.thread_id]  # a lane that skips the next shuffle is noticed, not read stale
        return value

    had = "shfl_down_sync" in FakeCUDAModule.__dict__
    old = FakeCUDAModule.__dict__.get("shfl_down_sync")
    FakeCUDAModule.shfl_down_sync = shfl_down_sync
    try:
        yield
    finally:
        if had:
            FakeCUDAModule.shfl_down_sync = old
        else:
            del FakeCUDAModule.shfl_down_sync


# ------------------------------------------------------------------------------------------------- GEMM

def check_gemm(M, K, N, *, variant, seed=0, kernel=None):
    """GEMM v2 (tile 16), v3 to v8 (128 x 128 x 8, 8 x 8 per thread): the GPU's tilings, launched directly."""
    g = importlib.import_module("scaledl.kernels.gemm")  # the package exports a function of that name
    cfg = g.DEFAULT_TILING["cuda"][variant]
    kernel = kernel or g.kernel_for(variant, cfg)
    grid, block = g.launch_config(M, N, variant, cfg)
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    dC = poisoned((M, N))
    kernel[grid, block](cuda.to_device(A), cuda.to_device(B), dC)
    assert_within(dC.copy_to_host(), gemm_reference(A, B), gemm_tolerance(A, B), f"gemm {variant} {M}x{K}x{N}")


# ------------------------------------------------------------------------------------------- reduction
@functools.lru_cache(maxsize=None)
def _sum_kernels(threads: int):
    from scaledl.kernels.reduce import _make_kernels

    return dict(zip(("shared", "warp"), _make_kernels(threads)))


def check_sum(n, *, variant, blocks, threads=256, seed=0, kernel=None):
    """Two-pass sum (v1 shared tree or v2 warp shuffles) at the GPU's 256 threads per block.

    Bound: each thread adds ``ceil(n / (blocks threads))`` values in a row, then a tree of depth
    log2(threads); pass 2 adds ``ceil(blocks / threads)`` partials in a row and another tree: the float32
    error is at most (sum of those depths + 2) eps32 sum|x| (Higham 2002, sec. 4.2).
    """
    from scaledl.kernels.reduce import sum_reference

    kernel = kernel or _sum_kernels(threads)[variant]
    x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    partial, result = poisoned(blocks), poisoned(1)
    with emulated_warp_shuffles():
        kernel[blocks, threads](cuda.to_device(x), partial)
        kernel[1, threads](partial, result)
    depth = _cdiv(n, blocks * threads) + _cdiv(blocks, threads) + 2 * int(math.log2(threads)) + 2
    assert_within(result.copy_to_host(), [sum_reference(x)], depth * EPS32 * float(np.abs(x).astype(np.float64).sum()),
                  f"sum {variant} n={n} blocks={blocks}")


# ----------------------------------------------------------------------------------------- convolution
def check_conv(C, H, W, K, *, variant, seed=0):
    """Direct or Winograd F(2x2, 3x3) convolution through :func:`launch_conv2d` (8 x 8 blocks on both tiers).

    Bound: 9 C products summed in float32, plus Winograd's transforms (at most 16 more terms, each at most
    4 |x||w| in size): (9 C + 16) eps32 4 sum|w||x| (as tests/sim/test_streams_reduce_conv.py)."""
    from scaledl.kernels.conv import conv2d_reference, launch_conv2d, winograd_filter_transform

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((C, H, W), dtype=np.float32)
    w = rng.standard_normal((K, C, 3, 3), dtype=np.float32)
    filt = w if variant == "direct" else winograd_filter_transform(w)
    out = poisoned((K, H - 2, W - 2))
    launch_conv2d(variant, cuda.to_device(x), cuda.to_device(filt), out)
    mag = conv2d_reference(np.abs(x), np.abs(w))
    assert_within(out.copy_to_host(), conv2d_reference(x, w), (9 * C + 16) * EPS32 * 4 * mag,
                  f"conv {variant} C={C} {H}x{W} K={K}")


# ------------------------------------------------------------------------------------------- quantize
def _format_reference(x, fmt):
    """An independent reference: NumPy's own float16, ml_dtypes for the others (round to nearest even,
    saturating to the largest finite value as the kernel's default does)."""
    import ml_dtypes

    dtype = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
             "e5m2": ml_dtypes.float8_e5m2}[fmt]
    top = float(ml_dtypes.finfo(dtype).max)
    clipped = np.where(np.isnan(x), x, np.clip(x.astype(np.float64), -top, top))
    return clipped.astype(dtype).astype(np.float32)


def check_quantize(n, *, fmt, seed=0, variant="four"):
    """The elementwise quantizer (the book's, v3, unless ``variant`` says otherwise) onto fp16 / bf16 / FP8
    grids, 128 threads per block, the grid of ``quantize.launch_config``: bit-exact."""
    from scaledl.kernels.quantize import VARIANTS, launch_config
    from scaledl.numerics.formats import get_format

    spec = get_format(fmt)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 18, n))).astype(np.float32)  # subnormals to overflow
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    out = poisoned(n)
    VARIANTS[variant][launch_config(n, variant)](
        cuda.to_device(x), out, 1.0, 1.0, spec.man_bits, spec.emin, spec.max_value, spec.max_value)
    assert_exact(out.copy_to_host(), _format_reference(x, fmt), f"quantize {variant} {fmt} n={n}")


def check_fp16_ties(stride, *, seed=0, variant="four"):
    """The quantizer onto fp16 without saturation (a plain cast: overflow goes to inf) on every ``stride``-th
    fp16 bit pattern and on the midpoint between it and its upper neighbour (a tie, exact in float32), against
    NumPy's float16 cast, bit for bit. ``stride=1``: all 63488 finite halves and their ties."""
    from scaledl.kernels.quantize import VARIANTS, launch_config
    from scaledl.numerics.formats import get_format

    start = int(np.random.default_rng(seed).integers(stride))  # a different subset of the patterns per seed
    halves = np.arange(start, 1 << 16, stride, dtype=np.uint32).astype(np.uint16).view(np.float16)
    halves = halves[np.isfinite(halves)]
    up = np.nextafter(halves, np.float16(np.inf))
    ties = ((halves.astype(np.float64) + up.astype(np.float64)) / 2).astype(np.float32)
    x = np.concatenate([halves.astype(np.float32), ties[np.isfinite(ties)]])
    spec = get_format("fp16")
    out = poisoned(x.size)
    VARIANTS[variant][launch_config(x.size, variant)](
        cuda.to_device(x), out, 1.0, 1.0, spec.man_bits, spec.emin, spec.max_value, math.inf)
    assert_exact(out.copy_to_host(), x.astype(np.float16).astype(np.float32), f"fp16 ties stride={stride}")


# --------------------------------------------------------------------------------------------- logdot
def check_logdot(n, *, variant, frac_bits=3, threads=128, seed=0):
    """Binned log dot product v1 (global atomics) or v2 (shared bins, a few blocks): exact int64 bins.

    The kernels add into their bins, so these start at zero (no poison): a term skipped or added twice, or a
    bin left unflushed, still changes an exact integer."""
    from scaledl.kernels.logdot import VARIANTS, reference
    from scaledl.numerics.logarithmic import lns_encode

    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(n), rng.laplace(size=n) * 3
    a[rng.random(n) < 0.2] = 0
    sa, ca = lns_encode(a, int_bits=4, frac_bits=frac_bits)
    sb, cb = lns_encode(b, int_bits=4, frac_bits=frac_bits)
    ref = reference(sa, ca, sb, cb, frac_bits=frac_bits)
    bins = cuda.to_device(np.zeros(1 << frac_bits, np.int64))
    grid = _cdiv(n, threads) if variant == "v1" else min(_cdiv(n, threads), 3)  # v2: a grid-stride loop
    VARIANTS[variant][grid, threads](*(cuda.to_device(np.ascontiguousarray(v)) for v in (
        sa.astype(np.int8), ca.astype(np.int32), sb.astype(np.int8), cb.astype(np.int32))),
        np.int64(frac_bits), np.int64(ref.ei_min), bins)
    assert_exact(bins.copy_to_host(), ref.bins, f"logdot {variant} n={n}")


# ------------------------------------------------------------------------------------------ sparse
def skewed_csr(M, K, seed):
    """float32 CSR with a heavy-tailed row length (row 0 full: longer than two warps), every 7th row empty."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    lengths = np.minimum(K, rng.zipf(1.8, M) * 3)
    lengths[0] = K
    lengths[::7][1:] = 0
    rows = np.repeat(np.arange(M), lengths)
    cols = np.concatenate([rng.choice(K, k, replace=False) for k in lengths])
    return sp.csr_array((rng.standard_normal(rows.size).astype(np.float32), (rows, cols)), shape=(M, K))


def sparse_bound(A, X):
    """A float32 dot product of r terms: (r + 2) eps32 sum|a_j x_j| (Higham 2002, sec. 3.1), any order."""
    r = np.diff(A.indptr).reshape((-1,) + (1,) * (np.ndim(X) - 1))
    return (r + 2) * EPS32 * (abs(A).astype(np.float64) @ np.abs(np.asarray(X, np.float64)))


def check_spmv(M, K, *, variant, threads=256, seed=0):
    """CSR SpMV v2 (a warp per row, shared tree) or v3 (warp shuffles) at 256 threads, 8 rows per block."""
    from scaledl.kernels.spmv import csr_arrays, spmv_reference, spmv_v3_shuffle, warp_kernel

    A = skewed_csr(M, K, seed)
    x = np.random.default_rng(seed + 1).standard_normal(K, dtype=np.float32)
    kernel = warp_kernel(threads) if variant == "warp" else spmv_v3_shuffle
    y = poisoned(M)
    with emulated_warp_shuffles():
        kernel[_cdiv(M, threads // WARP), threads](*(cuda.to_device(a) for a in (*csr_arrays(A), x)), y)
    assert_within(y.copy_to_host(), spmv_reference(A, x), sparse_bound(A, x), f"spmv {variant} {M}x{K}")


def check_spmm(M, K, N, *, seed=0):
    """CSR SpMM, one thread per C[row, col], the GPU's 32 x 8 blocks."""
    from scaledl.kernels.spmv import SPMM_BLOCK, csr_arrays, spmm_reference, spmm_v1_row

    A = skewed_csr(M, K, seed)
    B = np.random.default_rng(seed + 1).standard_normal((K, N), dtype=np.float32)
    bx, by = SPMM_BLOCK["cuda"]
    C = poisoned((M, N))
    spmm_v1_row[(_cdiv(N, bx), _cdiv(M, by)), (bx, by)](*(cuda.to_device(a) for a in (*csr_arrays(A), B)), C)
    assert_within(C.copy_to_host(), spmm_reference(A, B), sparse_bound(A, B), f"spmm {M}x{K}x{N}")


def check_nm_gemm(M, K, N, *, variant, seed=0):
    """2:4 compressed GEMM v1 (16 x 16 blocks), v2 or v3 (16 x 16 tiles), K padded to whole groups of 4.

    Bound: float32 accumulation of the K/2 kept products, (K/2 + 2) eps32 sum|a_j b_j|."""
    from scaledl.kernels import nm_gemm as nm
    from scaledl.sparsity import compress_nm

    rng = np.random.default_rng(seed)
    values, meta = compress_nm(rng.standard_normal((M, K), dtype=np.float32), axis=1, pad=True)
    B = rng.standard_normal((K, N), dtype=np.float32)
    kernel, (bx, by) = nm.kernel_and_block(variant, "cuda")  # the GPU's launch shape on both tiers
    C = poisoned((M, N))
    kernel[(_cdiv(N, bx), _cdiv(M, by)), (bx, by)](*(cuda.to_device(a) for a in (values, meta, B)), C)
    bound = (values.shape[1] + 2) * EPS32 * nm.nm_gemm_reference(np.abs(values), meta, np.abs(B))
    assert_within(C.copy_to_host(), nm.nm_gemm_reference(values, meta, B), bound, f"nm_gemm {variant} {M}x{K}x{N}")


# ------------------------------------------------------------------------------------------------ RNN
def check_rnn(H, B, T, *, variant, threads=128, rows=None, seed=0):
    """RNN recurrence v1 (a launch per step), v2 (one persistent block) or v3 (persistent grid, ``rows`` of W
    per block; default: as many as fit in shared memory) at the GPU's 128 threads per block, tanh.

    Bound (tests/sim/test_rnn_kernels.py): each step adds (H + 6) eps32 (|W| |h| + |z|) + eps32; W's row sums
    are 0.9, so earlier errors shrink and the total stays below 10 times the largest step's."""
    from scaledl.kernels import rnn

    rng = np.random.default_rng(seed)
    W = rng.standard_normal((H, H))
    W *= 0.9 / np.abs(W).sum(axis=1).max()
    U, b = rng.standard_normal((H, 5)), 0.1 * rng.standard_normal(H)
    x, h0 = rng.standard_normal((T, B, 5)), 0.5 * rng.standard_normal((B, H))
    ref = rnn.rnn_reference(W, U, b, x, h0)
    z = (x @ U.T + b).astype(np.float32)
    states = np.full((T + 1, B, H), np.nan, np.float32)
    states[0] = h0
    dWT, dz, dstates = (cuda.to_device(a) for a in (np.ascontiguousarray(W.T, np.float32), z, states))
    if variant == "standard":
        for t in range(T):
            rnn.rnn_v1_standard[_cdiv(B * H, threads), threads](dWT, dz, dstates, t, 0)
    elif variant == "persistent_block":
        rnn.persistent_block_kernel(H)[1, threads](dWT, dz, dstates, 0)
    else:
        rows = rows or rnn.grid_slice_rows(H)
        rnn.persistent_grid_kernel(rows, H)[_cdiv(H, rows), threads](dWT, dz, dstates, 0)
    prev = np.concatenate((h0[None], ref[:-1]))
    step = (H + 6) * EPS32 * (np.abs(prev) @ np.abs(W).T + np.abs(x @ U.T + b)) + EPS32
    assert_within(dstates.copy_to_host()[1:], ref, 10 * step.max(), f"rnn {variant} H={H} B={B} T={T}")


# ------------------------------------------------------------------------------------------- smoke
def check_axpy(n, *, threads=256, seed=0, kernel=None):
    """The doctor's axpy: one product and one sum, each rounded once (or fused): 2 eps32 (|a x| + |y|)."""
    from scaledl.kernels.smoke import axpy

    kernel = kernel or axpy
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = poisoned(n)
    kernel[_cdiv(n, threads), threads](np.float32(2.5), cuda.to_device(x), cuda.to_device(y), out)
    ref = 2.5 * x.astype(np.float64) + y
    assert_within(out.copy_to_host(), ref, 2 * EPS32 * (2.5 * np.abs(x) + np.abs(y)), f"axpy n={n}")


# ------------------------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Case:
    """One kernel in one launch shape: the check, and its arguments on each tier (None: not on that tier)."""

    check: object
    sim: dict | None  # tiny odd sizes, more than one block (where the kernel has more than one)
    gpu: dict | None  # full odd sizes
    fixed: dict = field(default_factory=dict)  # arguments both tiers share (the variant)

    def run(self, tier: str):
        sizes = self.sim if tier == "sim" else self.gpu
        if sizes is None:
            raise ValueError(f"tier={tier!r}: this case does not run there")
        self.check(**self.fixed, **sizes)


CASES = {
    "gemm_tiled16": Case(check_gemm, dict(M=17, K=13, N=19), dict(M=1000, K=777, N=1023), dict(variant="tiled")),
    "gemm_regblock128": Case(check_gemm, dict(M=37, K=11, N=131), dict(M=1025, K=513, N=2049),
                             dict(variant="regblock")),
    # v4 to v8 (scaledl.kernels.gemm_ladder); with K and N multiples of 4 every row is 16-byte aligned, so v6 to
    # v8 take their 128-bit loads on a GPU (K = 513 takes the scalar fallback)
    **{f"gemm_{v}128": Case(check_gemm, dict(M=37, K=11, N=131), dict(M=1025, K=513, N=2049), dict(variant=v))
       for v in ("fixed_loads", "index32", "vec4", "unroll_k", "prefetch")},
    **{f"gemm_{v}128_aligned": Case(check_gemm, dict(M=37, K=12, N=132), dict(M=1025, K=516, N=2052),
                                    dict(variant=v)) for v in ("vec4", "unroll_k", "prefetch")},
    # n > 8 x 3 x 256: every thread makes a trip of eight loads (reduce.thread_sum), some a ragged end too
    "sum_shared256": Case(check_sum, dict(n=7001, blocks=3), dict(n=2**22 + 3, blocks=1001), dict(variant="shared")),
    "sum_warp256": Case(check_sum, dict(n=7001, blocks=3), dict(n=2**22 + 3, blocks=1001), dict(variant="warp")),
    "conv_direct": Case(check_conv, dict(C=2, H=11, W=21, K=2), dict(C=64, H=57, W=63, K=33), dict(variant="direct")),
    "conv_winograd": Case(check_conv, dict(C=3, H=21, W=20, K=2), dict(C=64, H=58, W=63, K=33),
                          dict(variant="winograd")),
    "quantize_fp16": Case(check_quantize, dict(n=301), dict(n=1_000_003), dict(fmt="fp16")),
    "quantize_bf16": Case(check_quantize, dict(n=301), dict(n=1_000_003), dict(fmt="bf16")),
    "quantize_e4m3": Case(check_quantize, dict(n=301), dict(n=1_000_003), dict(fmt="e4m3")),
    "quantize_e5m2": Case(check_quantize, dict(n=301), dict(n=1_000_003), dict(fmt="e5m2")),
    # n = 1501 on the simulator: 3 blocks of 128, so threads below 349 make a trip of four, the rest a ragged end
    "quantize_e4m3_trips": Case(check_quantize, dict(n=1501), dict(n=1 << 24), dict(fmt="e4m3")),
    "quantize_e4m3_v2": Case(check_quantize, dict(n=301), dict(n=1_000_003), dict(fmt="e4m3", variant="pow2")),
    "quantize_fp16_ties": Case(check_fp16_ties, dict(stride=509), dict(stride=1)),
    "logdot_v1": Case(check_logdot, dict(n=333, threads=64), dict(n=1_000_003), dict(variant="v1")),
    "logdot_v2": Case(check_logdot, dict(n=333, threads=64), dict(n=1_000_003), dict(variant="v2")),
    "spmv_warp256": Case(check_spmv, dict(M=19, K=70), dict(M=20011, K=4099), dict(variant="warp")),
    "spmv_shuffle": Case(check_spmv, dict(M=19, K=70), dict(M=20011, K=4099), dict(variant="shuffle")),
    "spmm_32x8": Case(check_spmm, dict(M=9, K=41, N=37), dict(M=3001, K=1025, N=257)),
    "nm_gemm_naive16": Case(check_nm_gemm, dict(M=17, K=41, N=19), dict(M=1001, K=1023, N=257),
                            dict(variant="naive")),
    "nm_gemm_tiled16": Case(check_nm_gemm, dict(M=17, K=41, N=19), dict(M=1001, K=1023, N=257),
                            dict(variant="tiled")),
    # K = 137: three of v3's 64-column tiles, the last one ragged
    "nm_gemm_decoded16": Case(check_nm_gemm, dict(M=17, K=137, N=19), dict(M=1001, K=1023, N=257),
                              dict(variant="decoded")),
    "rnn_standard128": Case(check_rnn, dict(H=13, B=11, T=3), dict(H=1001, B=3, T=20), dict(variant="standard")),
    "rnn_persistent_block128": Case(check_rnn, dict(H=13, B=11, T=3), dict(H=110, B=5, T=50),
                                    dict(variant="persistent_block")),
    # the simulator synchronises a grid of one block only: there all 13 rows sit in one block
    "rnn_persistent_grid128": Case(check_rnn, dict(H=13, B=3, T=3, rows=13), dict(H=1001, B=3, T=20),
                                   dict(variant="persistent_grid")),
    "axpy": Case(check_axpy, dict(n=300), dict(n=10_000_019)),
}
