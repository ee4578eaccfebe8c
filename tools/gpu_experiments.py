"""Experiments for a lent GPU: which register-blocked GEMM tiling and which copy kernel shape come closest to
their baselines (cuBLAS SGEMM; a device-to-device cudaMemcpy), each checked before it is timed.

Why: the first H200 run (docs/gpu-runs/2026-11-26-nvidia-h200) measured the book's v3 GEMM at 15 % of cuBLAS
and its copy kernel at 73 % of cudaMemcpy. One slot of device time cannot iterate, so this script times every
candidate in one go and prints a table (and JSON) from which the book's defaults are chosen.

Usage on the GPU machine: ``python tools/gpu_experiments.py OUT_DIR [SECTION ...]``, sections ``ladder`` (every
variant of scaledl.kernels.gemm, v1 to v8, beside the prediction of scaledl.kernels.kernel_model: v4 to v8 not yet run
on a GPU), ``gemm`` (v3's tilings), ``gemm2d`` (lab 02's 2-D thread block with its own k-step), ``gemmfixed`` (v3
with load loops of fixed length: not yet run on a GPU; the ladder's v4 is the version whose loads the compiler
really issues together), ``copy`` (copy kernel shapes), ``quantize`` (the e4m3 kernels v1, v2 without v1's float64
division, and v3, the book's, v2's rounding four elements a loop trip with all four loads in flight, each checked
bit for bit: v2 and v3 not yet run on a GPU), ``reduce`` (the two-pass sum with the one-element loop the H200 run
timed, against the book's eight loads per trip, at the bench's 2048 blocks and at 4096: not yet run on a GPU),
``ncu`` (one launch of each GEMM kernel, for Nsight Compute: ``ncu -k regex:regblock ... python
tools/gpu_experiments.py /tmp ncu``); all but ncu by default. On the simulator it runs at tiny sizes, which tests
the script itself.
"""

import functools
import json
import math
import sys

import numpy as np

import scaledl  # before numba.cuda: scaledl picks the backend
from numba import cuda, float32

from scaledl.kernels import bench
from scaledl.kernels.gemm import VARIANTS, gemm, regblock_kernel

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
SECTIONS = set(sys.argv[2:]) or {"ladder", "gemm", "copy", "gemm2d", "gemmfixed", "quantize", "reduce"}
PROFILE = "ncu" in SECTIONS  # under Nsight Compute: only the first config of each GEMM kernel, for its report
if PROFILE:
    SECTIONS |= {"gemm", "gemm2d"}
GPU = scaledl.device.on_gpu()  # on the simulator: a dry run at tiny sizes, to test this script itself
base = bench.cupy_baselines() if GPU else bench.HostBaselines()
dev = cuda.get_current_device()
SMS = dev.MULTIPROCESSOR_COUNT if GPU else 1
results = {"device": str(getattr(dev, "name", "simulator")), "gemm": [], "copy": [], "ladder": []}


def launch_shape(blocks, threads):
    """The simulator runs one Python thread per CUDA thread: tiny grids there."""
    return (blocks, threads) if GPU else (min(blocks, 2), min(threads, 32))


def kernel_facts(k):
    if not GPU:
        return {}
    facts = {}
    for key, getter in (("regs", k.get_regs_per_thread), ("local", k.get_local_mem_per_thread),
                        ("shared", k.get_shared_mem_per_block)):
        try:
            v = getter()  # one value per compiled signature
            facts[key] = next(iter(v.values())) if isinstance(v, dict) else v
        except Exception as err:  # a fact is not worth losing the timing
            facts[key] = f"{type(err).__name__}"
    return facts

def gemm_row(section, key, cfg, kernel, grid, block):
    """Check ``kernel[grid, block](dA, dB, dC)`` against cuBLAS's product (output poisoned), then time it;
    record the row (or why it could not run) and print it."""
    row = {key: cfg}
    try:
        dC.copy_to_device(np.full((n, n), np.nan, np.float32))
        kernel[grid, block](dA, dB, dC)
        cuda.synchronize()
        got = dC.copy_to_host()
        err = float(np.nanmax(np.abs(got - ref)))
        if np.isnan(got).any() or err > tol:
            row["error"] = f"wrong result: max |diff| {err:.3g} (tol {tol:.3g})"
        else:
            t = bench.time_ms(lambda: kernel[grid, block](dA, dB, dC), 10)
            threads = block if isinstance(block, int) else block[0] * block[1]
            row.update(ms=t, tflops=flops / t / 1e9, ratio=t_blas / t, threads=threads, **kernel_facts(kernel))
    except Exception as err:  # a config the compiler or the launch rejects: record it, go on
        row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    results["gemm"].append(row)
    print(section, json.dumps(row), flush=True)


# ------------------------------------------------------------------ GEMM tilings of v3 at 4096^3
n = 4096 if GPU else 37
rng = np.random.default_rng(0)
A = rng.standard_normal((n, n), dtype=np.float32)
B = rng.standard_normal((n, n), dtype=np.float32)
dA, dB, dC = cuda.to_device(A), cuda.to_device(B), cuda.device_array((n, n), np.float32)
run_blas, blas_result = base.gemm(dA, dB)
run_blas()
ref = blas_result()
t_blas = bench.time_ms(run_blas, 10)
flops = 2 * n**3
print(f"cuBLAS SGEMM {n}^3: {t_blas:.3f} ms, {flops / t_blas / 1e9:,.1f} TFLOP/s", flush=True)  # FLOP / ms / 1e9
results["cublas_ms"] = t_blas
# ------------------------------------------------------------------ the ladder v1 to v8 at its default tilings
if "ladder" in SECTIONS:
    from scaledl.kernels import kernel_model

    predicted = {p.name: p for p in kernel_model.ladder_predictions()}
    for i, variant in enumerate(VARIANTS):
        name = f"gemm_v{i + 1}_{variant}"
        row = {"variant": name}
        try:
            dC.copy_to_device(np.full((n, n), np.nan, np.float32))
            gemm(dA, dB, variant=variant, out=dC)
            cuda.synchronize()
            got = dC.copy_to_host()
            err = float(np.nanmax(np.abs(got - ref)))
            if np.isnan(got).any() or err > 1e-3 * float(np.abs(ref).max()):
                row["error"] = f"wrong result: max |diff| {err:.3g}"
            else:
                t = bench.time_ms(lambda: gemm(dA, dB, variant=variant, out=dC), 10)
                row.update(ms=t, tflops=flops / t / 1e9, ratio=t_blas / t)
        except Exception as err:  # a variant the compiler or the launch rejects: record it, go on
            row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        p = predicted[name]
        row.update(predicted_of_peak=p.expected, predicted_ceiling=p.ceiling, predicted_limit=p.limit,
                   predicted_of_cublas=p.expected_of_cublas)
        results["ladder"].append(row)
        print("ladder", json.dumps(row), flush=True)

CONFIGS = [(128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (128, 128, 32, 8, 8), (128, 64, 16, 8, 4),
           (64, 128, 16, 4, 8), (128, 128, 16, 8, 4), (128, 128, 16, 4, 4), (64, 64, 8, 4, 4),
           (64, 64, 16, 4, 4), (64, 64, 32, 4, 4), (64, 64, 64, 4, 4), (128, 128, 8, 4, 8),
           (32, 32, 32, 2, 2), (64, 64, 16, 8, 8), (128, 64, 32, 8, 8)]
if not GPU:
    CONFIGS = [(16, 16, 8, 2, 2), (16, 8, 4, 2, 2)]
CONFIGS = CONFIGS[:1] if PROFILE else CONFIGS
tol = 1e-3 * float(np.abs(ref).max())
for cfg in CONFIGS if "gemm" in SECTIONS else []:
    bm, bn, bk, tm, tn = cfg
    row = {"config": cfg}
    try:
        kw = dict(block_m=bm, block_n=bn, block_k=bk, thread_m=tm, thread_n=tn)
        dC.copy_to_device(np.full((n, n), np.nan, np.float32))
        gemm(dA, dB, variant="regblock", out=dC, **kw)
        cuda.synchronize()
        err = float(np.nanmax(np.abs(dC.copy_to_host() - ref)))
        if not math.isfinite(err) or np.isnan(dC.copy_to_host()).any() or err > tol:
            row["error"] = f"wrong result: max |diff| {err:.3g} (tol {tol:.3g})"
        else:
            t = bench.time_ms(lambda: gemm(dA, dB, variant="regblock", out=dC, **kw), 10)
            row.update(ms=t, tflops=flops / t / 1e9, ratio=t_blas / t, threads=(bm // tm) * (bn // tn),
                       **kernel_facts(regblock_kernel(*cfg)))
    except Exception as err:  # a config the compiler or the launch rejects: record it, go on
        row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    results["gemm"].append(row)
    print("gemm", json.dumps(row), flush=True)


# ------------------------------------------------------------------ v3 with a 2-D thread block (lab 02's shape)
@functools.lru_cache(maxsize=None)
def regblock_2d(T, R, BK):
    """Lab 02's register-blocked kernel with its k-step BK set apart from the patch side BM = T * R: a T x T
    block of threads, thread (tx, ty) owns rows ty + i T and columns tx + j T of the BM x BM patch."""
    BM = T * R

    @cuda.jit
    def gemm_regblock_2d(A, B, C):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BM), float32)
        acc = cuda.local.array((R, R), float32)
        a_reg = cuda.local.array(R, float32)
        b_reg = cuda.local.array(R, float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BM
        M, K, N = A.shape[0], A.shape[1], B.shape[1]
        for i in range(R):
            for j in range(R):
                acc[i, j] = float32(0.0)
        for k0 in range(0, K, BK):
            for r in range(ty, BM, T):
                for c in range(tx, BK, T):
                    ga, gk = row0 + r, k0 + c
                    sA[r, c] = A[ga, gk] if ga < M and gk < K else float32(0.0)
            for r in range(ty, BK, T):
                for c in range(tx, BM, T):
                    gk, gb = k0 + r, col0 + c
                    sB[r, c] = B[gk, gb] if gk < K and gb < N else float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(R):
                    a_reg[i] = sA[ty + i * T, k]
                for j in range(R):
                    b_reg[j] = sB[k, tx + j * T]
                for i in range(R):
                    for j in range(R):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(R):
            for j in range(R):
                r, c = row0 + ty + i * T, col0 + tx + j * T
                if r < M and c < N:
                    C[r, c] = acc[i, j]

    return gemm_regblock_2d


CONFIGS_2D = [(16, 4, 64), (16, 4, 32), (16, 4, 16), (16, 8, 16), (16, 8, 32), (8, 8, 32), (32, 2, 32),
              (16, 2, 32), (8, 4, 32)] if GPU else [(4, 2, 4), (4, 2, 8)]
CONFIGS_2D = CONFIGS_2D[:1] if PROFILE else CONFIGS_2D
for T, R, BK in CONFIGS_2D if "gemm2d" in SECTIONS else []:
    side = -(-n // (T * R))
    gemm_row("gemm2d", "config_2d", (T, R, BK), regblock_2d(T, R, BK), (side, side), (T, T))

# ------------------------------------------------------------------ v3 with load loops of fixed length
@functools.lru_cache(maxsize=None)
def regblock_fixed_loads(BM, BN, BK, TM, TN):
    """The book's v3 (scaledl.kernels.gemm.regblock_kernel) with one change: each thread's tile loads run
    ``for l in range(LOADS)`` (a compile-time trip count, so the loop unrolls and all its loads are in flight
    together) instead of ``for idx in range(tid, BM * BK, NT)``. The 2026-11-26 profile of v3: 8 warps per SM
    stalled on global loads issued one at a time. Candidate for the next lent GPU."""
    RM, RN = BM // TM, BN // TN
    NT = RM * RN
    PAD = 4
    SA_COLS = BM + PAD
    LOADS_A = (BM * BK + NT - 1) // NT
    LOADS_B = (BK * BN + NT - 1) // NT

    @cuda.jit
    def gemm_v3_fixed_loads(A, B, C):
        sA = cuda.shared.array((BK, SA_COLS), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        tid = cuda.threadIdx.x
        tr = tid // RN
        tc = tid % RN
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for k0 in range(0, K, BK):
            for l in range(LOADS_A):
                idx = tid + l * NT
                if idx < BM * BK:
                    m = idx // BK
                    k = idx % BK
                    r = row0 + m
                    kk = k0 + k
                    sA[k, m] = A[r, kk] if (r < M and kk < K) else float32(0.0)
            for l in range(LOADS_B):
                idx = tid + l * NT
                if idx < BK * BN:
                    k = idx // BN
                    n = idx % BN
                    kk = k0 + k
                    c = col0 + n
                    sB[k, n] = B[kk, c] if (kk < K and c < N) else float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):
                    a_reg[i] = sA[k, tr + i * RM]
                for j in range(TN):
                    b_reg[j] = sB[k, tc + j * RN]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + tr + i * RM
            for j in range(TN):
                c = col0 + tc + j * RN
                if r < M and c < N:
                    C[r, c] = acc[i, j]

    return gemm_v3_fixed_loads


CONFIGS_FIXED = [(128, 128, 8, 8, 8), (64, 64, 16, 4, 4), (64, 64, 32, 4, 4), (128, 64, 16, 8, 4),
                 (128, 128, 16, 8, 8)] if GPU else [(16, 16, 8, 2, 2), (16, 8, 4, 2, 2)]
for cfg in CONFIGS_FIXED if "gemmfixed" in SECTIONS else []:
    BM_, BN_, BK_, TM_, TN_ = cfg
    gemm_row("gemmfixed", "config_fixed_loads", cfg, regblock_fixed_loads(*cfg),
             (-(-n // BN_), -(-n // BM_)), (BM_ // TM_) * (BN_ // TN_))

# ------------------------------------------------------------------ copy kernel shapes, 2**27 float32
N = 2**27 if GPU else 256
a = rng.standard_normal(N, dtype=np.float32)
da, dc = cuda.to_device(a), cuda.device_array(N, np.float32)
run_memcpy = base.copy(da, dc)
t_mem = bench.time_ms(run_memcpy, 20, inner=10)
gbps = lambda t: 2 * 4 * N / t / 1e6  # noqa: E731  (bytes read + written per ms -> GB/s)
print(f"cudaMemcpy D2D: {t_mem:.4f} ms, {gbps(t_mem):,.0f} GB/s", flush=True)
results["memcpy_ms"] = t_mem


@cuda.jit
def copy_stride(dst, src):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dst.size, stride):
        dst[i] = src[i]


@cuda.jit
def copy_one(dst, src):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]


@cuda.jit
def copy_wide(dst, src):  # the same kernel, typed for 8- or 16-byte elements (views of the float32 arrays)
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, dst.size, stride):
        dst[i] = src[i]


def variant(name, kernel, blocks, threads, d, s):
    if blocks * threads == N:  # one element per thread: the grid must cover the array
        blocks, threads = (blocks, threads) if GPU else (N // 32, 32)
    else:
        blocks, threads = launch_shape(blocks, threads)
    row = {"variant": name, "blocks": blocks, "threads": threads}
    try:
        dc.copy_to_device(np.full(N, np.nan, np.float32))
        kernel[blocks, threads](d, s)
        cuda.synchronize()
        if not np.array_equal(dc.copy_to_host(), a):
            row["error"] = "wrong result"
        else:
            t = bench.time_ms(lambda: kernel[blocks, threads](d, s), 20, inner=10)
            row.update(ms=t, GBps=gbps(t), ratio=t_mem / t, **kernel_facts(kernel))
    except Exception as err:
        row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    results["copy"].append(row)
    print("copy", json.dumps(row), flush=True)


from scaledl.kernels import bandwidth as bw  # noqa: E402

if "copy" not in SECTIONS:
    variant = lambda *args: None  # noqa: E731
variant("stride, 65536 x 256 (book before 2026-11-26)", copy_stride, 65536, 256, dc, da)
variant("book's copy_kernel now (4 per trip), its launch", bw.copy_kernel, *bw.stream_launch_config(N), dc, da)
variant("one per thread, 256", copy_one, N // 256, 256, dc, da)
variant("one per thread, 512", copy_one, N // 512, 512, dc, da)
variant("one per thread, 1024", copy_one, N // 1024, 1024, dc, da)
for waves in (4, 8, 16, 32):
    variant(f"stride, {waves} blocks/SM x 256", copy_stride, SMS * waves, 256, dc, da)
variant("book's copy_kernel (4 per trip), 16 blocks/SM x 256", bw.copy_kernel, SMS * 16, 256, dc, da)
d64, s64 = dc.view(np.uint64), da.view(np.uint64)
variant("uint64 view, stride 65536 x 256", copy_wide, 65536, 256, d64, s64)
d128, s128 = dc.view(np.complex128), da.view(np.complex128)
variant("complex128 view (16 B), stride 65536 x 256", copy_wide, 65536, 256, d128, s128)
variant("complex128 view (16 B), 16 blocks/SM x 256", copy_wide, SMS * 16, 256, d128, s128)


# ------------------------------------------- e4m3 quantize: v1, v2 (no division), v3 (four loads in flight)
if "quantize" in SECTIONS:
    from scaledl.kernels.quantize import VARIANTS as QUANTIZE
    from scaledl.kernels.quantize import quantize_into, quantize_reference

    NQ = 2**27 if GPU else 300
    xq = (rng.standard_normal(NQ) * 64).astype(np.float32)
    xq[:6] = np.array([0.0, -0.0, 1.0625, 464.0, -2.0**-10, 1e30], np.float32)  # ties, saturation, subnormal
    want = np.asarray(quantize_reference(xq, "e4m3"), np.float32).view(np.uint32)
    dx, dq = cuda.to_device(xq), cuda.device_array(NQ, np.float32)
    q_gbps = lambda t: 8 * NQ / t / 1e6  # noqa: E731  (4 bytes read, 4 written per element)
    for i, v in enumerate(QUANTIZE):
        launch = functools.partial(quantize_into, dx, dq, "e4m3", variant=v)
        row = {"quantize": f"v{i + 1} {v}" + (" (book)" if v == list(QUANTIZE)[-1] else "")}
        try:
            dq.copy_to_device(np.full(NQ, np.nan, np.float32))
            launch()
            cuda.synchronize()
            if not np.array_equal(dq.copy_to_host().view(np.uint32), want):
                row["error"] = "not bit-exact against quantize_reference"
            else:
                t = bench.time_ms(launch, 20, inner=10)
                row.update(ms=t, GBps=q_gbps(t), ratio_to_memcpy=q_gbps(t) / gbps(t_mem))
        except Exception as err:
            row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        results.setdefault("quantize", []).append(row)
        print("quantize", json.dumps(row), flush=True)


# ------------------------------------------------------------------ the two-pass sum: one load a trip against eight
@cuda.jit
def sum_before(x, partial):
    """scaledl.kernels.reduce.sum_v1_shared as the H200 run timed it (2026-11-26): a one-element range loop (the
    compiler unrolled it four times), then the same shared-memory tree; 256 threads."""
    buf = cuda.shared.array(256, float32)
    tid = cuda.threadIdx.x
    acc = float32(0.0)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        acc += x[i]
    buf[tid] = acc
    cuda.syncthreads()
    half = 128
    while half > 0:
        if tid < half:
            buf[tid] += buf[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = buf[0]


if "reduce" in SECTIONS:
    from scaledl.kernels import reduce as red

    NR = 2**27 if GPU else 3001
    xr = rng.standard_normal(NR, dtype=np.float32)
    exact = red.sum_reference(xr)
    tol = NR * np.finfo(np.float32).eps * float(np.abs(xr).sum())
    dxr, result = cuda.to_device(xr), cuda.device_array(1, np.float32)
    kernels = {"one a trip (H200 run's v1)": sum_before, "v1 shared, eight a trip (book)": red.sum_v1_shared}
    if GPU:
        kernels["v2 warp, eight a trip (book)"] = red.sum_v2_warp
    threads = 256 if GPU else 32
    for blocks in ((2048, 4096) if GPU else (3,)):
        partial = cuda.device_array(blocks, np.float32)
        for name, k in kernels.items():
            if k is sum_before and not GPU:
                continue  # its block is 256 threads: too many for the simulator's dry run
            run = lambda k=k: (k[blocks, threads](dxr, partial), k[1, threads](partial, result))  # noqa: E731
            row = {"sum": name, "blocks": blocks}
            try:
                result.copy_to_device(np.full(1, np.nan, np.float32))
                run()
                got = float(result.copy_to_host()[0])
                if not abs(got - exact) <= tol:
                    row["error"] = f"wrong sum {got} (exact {exact}, tol {tol:.3g})"
                else:
                    t = bench.time_ms(run, 20, inner=10)
                    row.update(ms=t, GBps=4 * NR / t / 1e6, ratio_to_memcpy=(4 * NR / t / 1e6) / gbps(t_mem),
                               **kernel_facts(k))
            except Exception as err:
                row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            results.setdefault("reduce", []).append(row)
            print("reduce", json.dumps(row), flush=True)

with open(f"{out_dir}/experiments.json", "w") as f:
    json.dump(results, f, indent=1)
print("experiments done", flush=True)
