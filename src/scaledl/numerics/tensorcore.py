"""Tensor Core arithmetic emulated in NumPy: FP16 inputs, exact products, FP32 accumulation.

A Volta tensor core computes ``D = A @ B + C`` on 4x4 tiles per clock: A and B in FP16, C and D in FP32 (the
warp-level instructions, ``mma.m8n8k4`` and later shapes in :data:`WARP_MMA_SHAPES`, are made of such steps;
the book calls the 4x4x4 step "HMMA" after the talk). This module emulates that arithmetic bit for bit
*under a stated model*:

1. inputs are rounded to FP16 (round to nearest even, as ``np.float16`` does);
2. each product ``a * b`` of two FP16 numbers is exact in FP32 (11-bit x 11-bit significands need 22 bits,
   FP32 has 24; exponents from 2^-48 to 2^32 sit well inside FP32's range), so products are formed in FP32
   without any rounding;
3. the four products of a dot are added to the accumulator *one at a time, in order k = 0, 1, 2, 3*, each
   addition rounded to nearest FP32.

The real hardware does step 3 differently: measurements (Fasi, Higham, Mikaitis, Pranesh, "Numerical
behavior of NVIDIA tensor cores", PeerJ Computer Science, 2021) show the V100 adds the four products and C
in one multi-operand adder, aligned to the largest exponent and truncated, not rounded. The model here is
the textbook one; it has the same error *order* (unit roundoff of FP32 per accumulation step) without
claiming the hardware's exact bits.

Three GEMMs are compared in :func:`accumulation_errors`: FP32 in / FP32 accumulate, HMMA style (FP16 in /
FP32 accumulate) and pure FP16 (FP16 in, every fused multiply-add rounded to FP16).

>>> import numpy as np
>>> ones = np.ones((1, 4096), np.float32)
>>> float(hmma_gemm(ones, ones.T)[0, 0]), float(fp16_gemm(ones, ones.T)[0, 0])
(4096.0, 2048.0)
"""

from __future__ import annotations

import math

import numpy as np

from scaledl._optional import install_command

MMA_TILE = 4  # a Volta tensor core computes a 4x4x4 product per clock (Dally, ScaledML 2018): hardware, not ISA

# What one warp-level instruction computes, M x N x K, from NVIDIA's PTX ISA (mma and wgmma). Volta's
# mma.m8n8k4 is computed by each of the warp's four quad-pairs (so 4 x 8x8x4 per warp instruction); Turing's
# int8 shape is m8n8k16 (not 8x8x8); Hopper's wgmma is issued by a warpgroup of four warps, with N any
# multiple of 8 up to 256, and K = 16 for FP16/BF16, K = 32 for FP8 (e4m3/e5m2).
WARP_MMA_SHAPES = {
    "Volta mma.m8n8k4 (FP16)": (8, 8, 4),
    "Turing mma.m8n8k16 (int8)": (8, 8, 16),
    "Ampere mma.m16n8k16 (FP16)": (16, 8, 16),
    "Hopper wgmma.m64nNk16 (FP16), N = 8": (64, 8, 16),
    "Hopper wgmma.m64nNk16 (FP16), N = 256": (64, 256, 16),
    "Hopper wgmma.m64nNk32 (FP8), N = 256": (64, 256, 32),
}
FP16_EPS = float(np.finfo(np.float16).eps)  # 2^-10
FP32_EPS = float(np.finfo(np.float32).eps)  # 2^-23
TF32_MANTISSA_BITS = 10  # TensorFloat-32: FP32's 8 exponent bits, FP16's 10 mantissa bits (NVIDIA A100)


def _matrix(name: str, x, ndim: int = 2) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.floating) and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
    return a


def _check_gemm(A, B):
    A, B = _matrix("A", A), _matrix("B", B)
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"A is {A.shape} and B is {B.shape}: A's columns ({A.shape[1]}) must equal B's rows "
                         f"({B.shape[0]})")
    return A, B


def to_fp16(x) -> np.ndarray:
    """Round to FP16 (nearest even); values beyond 65504 become inf, as a hardware conversion does."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float16)


def round_to_tf32(x) -> np.ndarray:
    """Round FP32 values to TF32 (10 mantissa bits, nearest even), returned as float32.

    Adds half an ulp of TF32 (plus the tie-breaking bit) to the FP32 bit pattern and clears the 13 low bits.

    >>> float(round_to_tf32(np.float32(1 + 2**-11)))   # a tie: rounds to the even neighbour 1.0
    1.0
    >>> float(round_to_tf32(np.float32(1 + 3 * 2**-11)))
    1.001953125
    """
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    # Every operand a uint64: NumPy 1.x promotes uint64 with a Python int to float64 (no shifts on floats).
    drop, one = np.uint64(23 - TF32_MANTISSA_BITS), np.uint64(1)
    finite = np.isfinite(x)
    lsb = (bits >> drop) & one
    rounded = ((bits + (one << (drop - one)) - one + lsb) >> drop) << drop
    out = np.where(finite, rounded, bits).astype(np.uint32).view(np.float32)
    return out.reshape(x.shape)


def hmma_4x4x4(A, B, C) -> np.ndarray:
    """One HMMA: ``D = A @ B + C`` for 4x4 tiles (A, B rounded to FP16, C and D FP32).

    Follows the module's stated model: exact FP32 products, added to ``C[i, j]`` in order k = 0..3 with
    FP32 rounding after each addition.

    Raises:
        ValueError: a tile is not 4x4.
    """
    for name, t in (("A", A), ("B", B), ("C", C)):
        if np.shape(t) != (MMA_TILE, MMA_TILE):
            raise ValueError(f"{name} must be a {MMA_TILE}x{MMA_TILE} tile, got shape {np.shape(t)}")
    return _mma_accumulate(to_fp16(A).astype(np.float32), to_fp16(B).astype(np.float32),
                           np.asarray(C, dtype=np.float32).copy())


def _mma_accumulate(a32: np.ndarray, b32: np.ndarray, acc: np.ndarray) -> np.ndarray:
    # a32 (M x K) and b32 (K x N) hold FP16 values widened to FP32; acc (M x N) is FP32 and is updated.
    for k in range(a32.shape[1]):
        acc += np.multiply.outer(a32[:, k], b32[k, :])  # exact products; one FP32 rounding per add
    return acc


def hmma_gemm(A, B, C=None) -> np.ndarray:
    """``A @ B (+ C)`` as a sequence of HMMAs: FP16 inputs, FP32 accumulation along K in order.

    Tiling into 4x4x4 steps does not change the result in this model (each output still receives its K
    products one at a time, in order), so the loop runs over K directly; :func:`hmma_4x4x4` is the
    single-instruction version and the tests check the two agree.
    """
    A, B = _check_gemm(A, B)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32) if C is None else np.array(C, np.float32)
    if acc.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"C has shape {acc.shape}; expected {(A.shape[0], B.shape[1])}")
    with np.errstate(over="ignore", invalid="ignore"):
        return _mma_accumulate(to_fp16(A).astype(np.float32), to_fp16(B).astype(np.float32), acc)


def fp32_gemm(A, B) -> np.ndarray:
    """FP32 inputs, FP32 accumulation in the same order as :func:`hmma_gemm` (a CUDA-core SGEMM).

    Unlike a fused multiply-add, each product is rounded to FP32 before it is added.
    """
    A, B = _check_gemm(A, B)
    a, b = A.astype(np.float32), B.astype(np.float32)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc += np.multiply.outer(a[:, k], b[k, :])
    return acc


def tf32_gemm(A, B) -> np.ndarray:
    """TF32 tensor-core GEMM model: inputs rounded to TF32, exact products, FP32 accumulation in order."""
    A, B = _check_gemm(A, B)
    a, b = round_to_tf32(A).astype(np.float64), round_to_tf32(B).astype(np.float64)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(a.shape[1]):
        # 11-bit x 11-bit products are exact in float64 (and in FP32 when in range); round once when adding
        acc = (acc.astype(np.float64) + np.multiply.outer(a[:, k], b[k, :])).astype(np.float32)
    return acc


def fp16_gemm(A, B) -> np.ndarray:
    """Pure FP16: inputs in FP16 and each step ``acc = fp16(acc + a * b)`` (a fused multiply-add, HFMA).

    The sum is formed in float64 and rounded once to FP16. float64 holds it exactly unless the two terms
    are more than about 2^31 apart in magnitude; then the small one is far below FP16's half-ulp of the
    large one and the FP16 result is the same, except in the corner case of a product lying exactly on an
    FP16 rounding tie (random data does not produce it).
    """
    A, B = _check_gemm(A, B)
    a, b = to_fp16(A).astype(np.float64), to_fp16(B).astype(np.float64)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(a.shape[1]):
            acc = (acc.astype(np.float64) + np.multiply.outer(a[:, k], b[k, :])).astype(np.float16)
    return acc


GEMMS = {
    "FP32 in, FP32 acc": fp32_gemm,
    "TF32 in, FP32 acc": tf32_gemm,
    "FP16 in, FP32 acc (HMMA)": hmma_gemm,
    "FP16 in, FP16 acc (HFMA)": fp16_gemm,
}


def relative_error(approx, exact) -> float:
    """max |approx - exact| / max |exact| (a norm-wise error that ignores single near-zero entries)."""
    approx, exact = np.asarray(approx, np.float64), np.asarray(exact, np.float64)
    scale = np.max(np.abs(exact))
    if scale == 0:
        raise ValueError("exact is all zeros; a relative error is undefined")
    return float(np.max(np.abs(approx - exact)) / scale)


def accumulation_errors(Ks, *, M: int = 16, N: int = 16, seed: int = 0, distribution: str = "uniform"):
    """Relative error of each GEMM in :data:`GEMMS` against a float64 reference, for each K in ``Ks``.

    Data: ``uniform`` draws from [0, 1) (all products positive, so errors add up: the worst case for
    accumulation); ``normal`` draws zero-mean values, whose partial sums stay small.

    Returns:
        dict mapping each GEMM's name to a list of errors (one per K), plus ``"FP16 rounding of inputs only"``:
        the float64 product of the FP16-rounded inputs, i.e. the error no accumulator can remove.
    """
    Ks = [int(k) for k in Ks]
    if not Ks or min(Ks) < 1:
        raise ValueError(f"Ks must be positive integers, got {Ks!r}")
    rng = np.random.default_rng(seed)
    draw = {"uniform": lambda s: rng.random(s), "normal": lambda s: rng.standard_normal(s)}
    if distribution not in draw:
        raise ValueError(f"distribution={distribution!r}; expected one of {sorted(draw)}")
    out = {name: [] for name in GEMMS}
    out["FP16 rounding of inputs only"] = []
    for K in Ks:
        A, B = draw[distribution]((M, K)), draw[distribution]((K, N))
        A, B = A.astype(np.float32), B.astype(np.float32)
        exact = A.astype(np.float64) @ B.astype(np.float64)
        for name, gemm in GEMMS.items():
            out[name].append(relative_error(gemm(A, B), exact))
        rounded = to_fp16(A).astype(np.float64) @ to_fp16(B).astype(np.float64)
        out["FP16 rounding of inputs only"].append(relative_error(rounded, exact))
    return out


def padded_efficiency(shape, tile) -> float:
    """Useful multiply-adds over those a tiled engine performs when every dimension is padded to its tile.

    ``shape`` and ``tile`` are (M, N, K) triples. A 4x4x4 MMA pads a 1000 x 1000 x 1000 GEMM by nothing
    (1000 = 250 x 4); a 128 x 128 array with K = 1 tile depth pads 1000 to 1024 in two dimensions.

    >>> round(padded_efficiency((1000, 1000, 1000), (128, 128, 1)), 4)
    0.9537
    """
    if len(shape) != len(tile):
        raise ValueError(f"shape {shape!r} and tile {tile!r} must have the same number of dimensions")
    for name, t in (("shape", shape), ("tile", tile)):
        if any(int(v) != v or v < 1 for v in t):
            raise ValueError(f"{name} must hold positive integers, got {t!r}")
    useful = math.prod(shape)
    done = math.prod(math.ceil(s / t) * t for s, t in zip(shape, tile))
    return useful / done


def best_padded_efficiency(shape, tiles) -> float:
    """:func:`padded_efficiency` with the best of several tiles, as a GEMM library picks a block tile per
    problem size.

    >>> round(best_padded_efficiency((130, 130, 130), [(128, 128, 32), (32, 32, 32)]), 4)
    0.5364
    """
    tiles = list(tiles)
    if not tiles:
        raise ValueError("tiles must name at least one (M, N, K) tile, got none")
    return max(padded_efficiency(shape, t) for t in tiles)


# ------------------------------------------------------------------------------ measured on a real GPU
TENSOR_CORE_MODES = ("fp32", "tf32", "fp16")


def measure_cupy_gemm_TFLOPS(n: int = 8192, mode: str = "fp32", *, repeats: int = 20) -> float:
    """Time an ``n x n x n`` cuBLAS GEMM through CuPy and return TFLOP/s (GPU only; median of ``repeats``).

    Modes: ``fp32`` (CUDA cores: cuBLAS compute type 32F, TF32 not allowed), ``tf32`` (FP32 data, TF32
    tensor cores, compute capability 8.0 and later), ``fp16`` (FP16 data, FP32 accumulation on the tensor
    cores from compute capability 7.0; CuPy picks the tensor-core algorithm for FP16 there).

    Timing: three untimed warm-up calls (cuBLAS chooses and loads its kernel), then ``repeats`` calls each
    timed by a pair of CUDA events on the stream, and the median.

    Raises:
        ValueError: unknown mode, or ``n``/``repeats`` not positive.
        RuntimeError: no GPU (the simulator backend), CuPy missing, or a mode the GPU lacks (TF32 before
            compute capability 8.0, where CuPy would silently fall back to plain FP32).
    """
    from scaledl import device

    if mode not in TENSOR_CORE_MODES:
        raise ValueError(f"mode={mode!r}; expected one of {TENSOR_CORE_MODES}")
    for name, v in (("n", n), ("repeats", repeats)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not device.on_gpu():
        raise RuntimeError(f"measuring tensor-core throughput needs a CUDA GPU; this process runs the "
                           f"simulator ({device.reason()})")
    try:
        import cupy
        from cupy._core import _routines_linalg as cupy_linalg
    except ImportError as err:
        raise RuntimeError(f"CuPy is needed to time cuBLAS: {install_command('cu12')} (or cu13)") from err
    cc = device.gpu_info().compute_capability
    if mode == "tf32" and cc < (8, 0):
        raise RuntimeError(f"TF32 needs compute capability 8.0 or later; this GPU has {cc[0]}.{cc[1]}")
    dtype = cupy.float16 if mode == "fp16" else cupy.float32
    # CuPy keys the cuBLAS compute type by the output's dtype; only FP32 outputs need setting. 32F lets
    # cuBLAS use no TF32 (it would need FAST_TF32 or the TF32 math mode, which CuPy does not set).
    previous = cupy_linalg.get_compute_type(np.float32)
    cupy_linalg.set_compute_type(np.float32, cupy_linalg.COMPUTE_TYPE_TF32 if mode == "tf32"
                                 else cupy_linalg.COMPUTE_TYPE_FP32)
    try:
        rng = cupy.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=cupy.float32).astype(dtype)
        b = rng.standard_normal((n, n), dtype=cupy.float32).astype(dtype)
        c = cupy.matmul(a, b)
        for _ in range(2):  # warm-up: cuBLAS picks its kernel and loads it; clocks ramp up
            cupy.matmul(a, b, out=c)
        cupy.cuda.Device().synchronize()
        times_ms = []
        for _ in range(repeats):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            cupy.matmul(a, b, out=c)
            stop.record()
            stop.synchronize()
            times_ms.append(cupy.cuda.get_elapsed_time(start, stop))
    finally:
        cupy_linalg.set_compute_type(np.float32, previous)
    return 2 * n**3 / (float(np.median(times_ms)) * 1e-3) / 1e12
