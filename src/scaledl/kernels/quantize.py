"""Elementwise quantization on the GPU: each thread rounds values of a float32 array onto a float format's grid.

The reference is :func:`scaledl.numerics.quantize.quantize` (bit manipulation on float32 patterns, bit-exact
with ml_dtypes). The kernels compute the same thing a different way, by arithmetic, so agreeing with it is a
real check:

* ``v1 arith``: ``frexp`` gives the binade ``e`` of ``|x|`` (at least the format's ``emin``, which is what makes
  subnormals come out right); the grid spacing there is ``ulp = 2**(e - man_bits)``; ``|x| / ulp`` is exact in
  float64 (a power-of-two division), so its floor and remainder decide round-to-nearest-even directly. Values
  above the largest finite one saturate (or become inf/NaN with ``saturate=False``, like a plain cast).
* ``v2 pow2``: what changed: no float64 division. A GPU has no float64 divide instruction: ``a / ulp`` and the
  parity test ``r % 2`` (a float modulo, which divides too) each compile to a reciprocal estimate, Newton steps and
  a call to a slow path, together about half of v1's machine code (``scaledl kernels report``: two ``div.rn.f64`` in
  v1's PTX). Dividing by a power of two is scaling by its inverse, exactly: ``ldexp(a, man_bits - e)``; and ``r`` is
  an integer of at most ``man_bits + 1`` bits, so ``int(r) & 1`` is its parity. The same numbers, bit for bit. The
  first H200 run timed v1 (docs/gpu-runs/2026-11-26-nvidia-h200, bench-new-sections.log); v2 has not run on a GPU
  yet.
* ``v3 four`` (the book's kernel: :func:`quantize_into`, :func:`quantize_gpu`): what changed: four elements a loop
  trip, all four loaded before the first is rounded, in a grid-stride loop (:func:`launch_config` gives a block per
  ``THREADS_PER_BLOCK x 4`` elements). v2 has one 4-byte load in flight per thread, and a quantizer moves 8 bytes
  per element for a few dozen instructions, so memory latency, not arithmetic, sets its pace. On the same H200
  (tools/gpu_experiments.py, experiments.log) a copy with one element in flight per thread (a thread per element at
  256 a block, or a grid-stride loop of one) reached 64 to 74 % of ``cudaMemcpy``'s rate, and one with four per
  trip, loaded first, 95 % (:mod:`scaledl.kernels.bandwidth`). ``scaledl kernels report`` shows v3's four loads in
  flight (16 bytes a thread, v2's 4); the rounding is v2's, bit for bit (:func:`_round_pow2`); v3 has not run on a
  GPU yet.

Signed float formats with ties-to-even (fp16, bf16, tf32, e5m2, e4m3, e3m2, e2m3, e2m1) are supported.

>>> import numpy as np
>>> quantize_gpu(np.array([1.0625, 1.1875, 500.0, -0.3], np.float32), "e4m3").tolist()
[1.0, 1.25, 448.0, -0.3125]
"""

from __future__ import annotations

import math

import numpy as np

import scaledl.device  # noqa: F401  (takes the backend decision before numba.cuda is imported)
from numba import cuda

from scaledl.numerics.formats import FloatFormat, get_format
from scaledl.numerics.quantize import check_scale, exact_in_float32, narrow_to_float32

__all__ = ["quantize_reference", "quantize_v4_bits", "bits_kernel", "quantize_fp8_bits", "BITS_THREADS_PER_BLOCK",
           "quantize_v1_arith", "quantize_v2_pow2", "quantize_v3_four", "VARIANTS", "ELEMENTS_PER_TRIP",
           "launch_config", "quantize_into", "quantize_gpu", "THREADS_PER_BLOCK"]

THREADS_PER_BLOCK = 128  # an elementwise kernel only needs enough warps per SM to hide memory latency


def quantize_reference(x, fmt, *, scale=1.0, saturate=True) -> np.ndarray:
    """The specification: the library's CPU quantizer."""
    from scaledl.numerics.quantize import quantize

    return quantize(x, fmt, scale=scale, saturate=saturate)


@cuda.jit
def quantize_v1_arith(x, out, inv_scale, scale, man_bits, emin, max_value, overflow_value):
    """v1: one thread per element; round |x| / ulp to nearest even with floor and remainder (float64)."""
    i = cuda.grid(1)
    if i >= x.size:  # the grid is rounded up to whole blocks: guard the tail
        return
    v = x[i] * inv_scale
    if v != v:  # NaN stays NaN
        out[i] = x[i]
        return
    a = abs(v)
    if a == math.inf:
        q = overflow_value
    else:
        _, ex = math.frexp(a)  # a = f * 2**ex with f in [0.5, 1): the binade is ex - 1
        e = max(ex - 1, emin)
        ulp = math.ldexp(1.0, e - man_bits)
        t = a / ulp
        r = math.floor(t)
        rem = t - r
        if rem > 0.5 or (rem == 0.5 and r % 2 == 1):  # ties go to the even multiple of the ulp
            r += 1.0
        q = r * ulp
        if q > max_value:
            q = overflow_value
    if v < 0 or (v == 0 and math.copysign(1.0, v) < 0):
        q = -q
    out[i] = q * scale


@cuda.jit
def quantize_v2_pow2(x, out, inv_scale, scale, man_bits, emin, max_value, overflow_value):
    """v2: v1 without a float64 division: scale by the ulp's power of two with ldexp, parity from the integer."""
    i = cuda.grid(1)
    if i >= x.size:  # the grid is rounded up to whole blocks: guard the tail
        return
    v = x[i] * inv_scale
    if v != v:  # NaN stays NaN
        out[i] = x[i]
        return
    a = abs(v)
    if a == math.inf:
        q = overflow_value
    else:
        _, ex = math.frexp(a)  # a = f * 2**ex with f in [0.5, 1): the binade is ex - 1
        e = max(ex - 1, emin)  # at least emin: below it the grid spacing stays the subnormals'
        t = math.ldexp(a, man_bits - e)  # what changed: a / ulp (ulp = 2**(e - man_bits)) as an exact ldexp
        r = math.floor(t)
        rem = t - r
        # ties go to the even multiple of the ulp; what changed: r % 2 from the integer (r <= 2**(man_bits + 1))
        if rem > 0.5 or (rem == 0.5 and int(r) & 1 == 1):
            r += 1.0
        q = math.ldexp(r, e - man_bits)  # r * ulp, exact
        if q > max_value:
            q = overflow_value
    if v < 0 or (v == 0 and math.copysign(1.0, v) < 0):
        q = -q
    out[i] = q * scale


@cuda.jit(device=True)
def _round_pow2(xv, inv_scale, scale, man_bits, emin, max_value, overflow_value):
    """v2's rounding of one element (a device function: Numba inlines it into the kernel that calls it)."""
    v = xv * inv_scale
    if v != v:  # NaN stays NaN
        return xv
    a = abs(v)
    if a == math.inf:
        q = overflow_value
    else:
        _, ex = math.frexp(a)  # a = f * 2**ex with f in [0.5, 1): the binade is ex - 1
        e = max(ex - 1, emin)  # at least emin: below it the grid spacing stays the subnormals'
        t = math.ldexp(a, man_bits - e)  # a / ulp (ulp = 2**(e - man_bits)) as an exact ldexp
        r = math.floor(t)
        rem = t - r
        if rem > 0.5 or (rem == 0.5 and int(r) & 1 == 1):  # ties go to the even multiple of the ulp
            r += 1.0
        q = math.ldexp(r, e - man_bits)  # r * ulp, exact
        if q > max_value:
            q = overflow_value
    if v < 0 or (v == 0 and math.copysign(1.0, v) < 0):
        q = -q
    return q * scale


@cuda.jit
def quantize_v3_four(x, out, inv_scale, scale, man_bits, emin, max_value, overflow_value):
    """v3: v2's rounding, four elements a loop trip, all four loaded before the first is rounded (grid-stride)."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    n = x.size
    i = start
    while i + 3 * stride < n:  # what changed: four independent loads in flight before the first store waits
        x0 = x[i]
        x1 = x[i + stride]
        x2 = x[i + 2 * stride]
        x3 = x[i + 3 * stride]
        out[i] = _round_pow2(x0, inv_scale, scale, man_bits, emin, max_value, overflow_value)
        out[i + stride] = _round_pow2(x1, inv_scale, scale, man_bits, emin, max_value, overflow_value)
        out[i + 2 * stride] = _round_pow2(x2, inv_scale, scale, man_bits, emin, max_value, overflow_value)
        out[i + 3 * stride] = _round_pow2(x3, inv_scale, scale, man_bits, emin, max_value, overflow_value)
        i += 4 * stride
    while i < n:  # the ragged end: fewer than four elements left for this thread
        out[i] = _round_pow2(x[i], inv_scale, scale, man_bits, emin, max_value, overflow_value)
        i += stride


# In ladder order; quantize_into and quantize_gpu launch the last.
VARIANTS = {"arith": quantize_v1_arith, "pow2": quantize_v2_pow2, "four": quantize_v3_four}
ELEMENTS_PER_TRIP = {"arith": 1, "pow2": 1, "four": 4}  # elements a thread handles per launch slot


def launch_config(n: int, variant: str = "four", threads: int = THREADS_PER_BLOCK) -> tuple[int, int]:
    """``(blocks, threads)`` for ``n`` elements: a block per ``threads x ELEMENTS_PER_TRIP[variant]`` elements, so a
    thread of v1 or v2 rounds one element and a thread of v3 makes at most one trip of four (plus its ragged end).

    >>> launch_config(1000, "pow2"), launch_config(1000, "four")
    ((8, 128), (2, 128))

    Raises:
        ValueError: an unknown variant, or a thread count that is not a positive int.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not a quantize kernel; expected one of {tuple(VARIANTS)}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    per_block = int(threads) * ELEMENTS_PER_TRIP[variant]
    return max(1, (int(n) + per_block - 1) // per_block), int(threads)


def _launch_args(fmt, scale, saturate) -> tuple:
    """The kernel's scalar arguments after ``x`` and ``out``; a ValueError for a format or scale it cannot do."""
    spec = get_format(fmt)
    if not isinstance(spec, FloatFormat) or not spec.signed or spec.ties != "even":
        raise ValueError(f"fmt: the kernel handles signed float formats with ties to even, got {spec.name!r}")
    s = float(check_scale(scale))  # a scalar scale; per-block scales belong to a blocked kernel
    if saturate or not spec.has_nan:
        overflow = spec.max_value
    else:
        overflow = math.inf if spec.has_inf else math.nan
    return 1.0 / s, s, spec.man_bits, spec.emin, spec.max_value, overflow


def quantize_into(x, out, fmt, *, scale: float = 1.0, saturate: bool = True, threads: int = THREADS_PER_BLOCK,
                  variant: str = "four"):
    """Launch a quantize kernel (:data:`VARIANTS`; the book's, v3, by default) on 1-D float32 arrays already in
    place (device arrays on a GPU, no allocation and no copy), so that a benchmark times the kernel alone;
    returns ``out``.

    Raises:
        ValueError: as :func:`quantize_gpu`, an unknown variant, or ``x`` and ``out`` not 1-D arrays of one length.
        TypeError: ``x`` or ``out`` not float32.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not a quantize kernel; expected one of {tuple(VARIANTS)}")
    args = _launch_args(fmt, scale, saturate)
    for name, a in (("x", x), ("out", out)):
        if np.dtype(getattr(a, "dtype", None)) != np.float32:
            raise TypeError(f"{name} must be a float32 array, got {getattr(a, 'dtype', type(a).__name__)}")
    if len(x.shape) != 1 or tuple(out.shape) != tuple(x.shape):
        raise ValueError(f"x and out must be 1-D arrays of one length, got shapes {tuple(x.shape)} and "
                         f"{tuple(out.shape)}")
    if x.size:
        blocks, threads = launch_config(x.size, variant, threads)
        VARIANTS[variant][blocks, threads](x, out, *args)
    return out


def quantize_gpu(x, fmt, *, scale: float = 1.0, saturate: bool = True, threads: int = THREADS_PER_BLOCK,
                 variant: str = "four"):
    """Quantize an array with a quantize kernel (v3, :func:`quantize_v3_four`, by default); returns a float32
    array of ``x``'s shape. A float64 input is rounded once, as by the reference: divided by ``scale`` in float64
    and narrowed to float32 by rounding to odd on the host (:func:`scaledl.numerics.quantize.narrow_to_float32`),
    then rounded to the format by the kernel.

    Raises:
        ValueError: a format the kernel does not handle (integers, logarithmic, E8M0), a bad scale, or an
            unknown variant.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not a quantize kernel; expected one of {tuple(VARIANTS)}")
    _launch_args(fmt, scale, saturate)  # a bad format or scale fails before any copy
    arr = np.asarray(x)
    if exact_in_float32(arr.dtype):
        x32, s = np.ascontiguousarray(arr, dtype=np.float32).reshape(-1), None
    else:  # float64 (or a wide integer): divide in float64 and narrow to float32 rounded to odd, as the
        # reference does, so that the kernel's one rounding is the value's one rounding (no double rounding)
        s = check_scale(scale)
        y = arr.astype(np.float64).reshape(-1)
        x32 = narrow_to_float32(y if s == 1.0 else y / np.float64(s), fmt)
    # Poison the output: an element the kernel never writes stays NaN and fails any comparison.
    out = np.full(x32.shape, np.nan, dtype=np.float32)
    quantize_into(x32, out, fmt, scale=scale if s is None else 1.0, saturate=saturate, threads=threads,
                  variant=variant)
    if s is not None and s != 1.0:
        out = (out * s).astype(np.float32)
    return out.reshape(np.shape(x))


# ------------------------------------------------------------------------------------------- v4: bits
BITS_THREADS_PER_BLOCK = 256
U32 = np.uint32
I32 = np.int32


def bits_kernel(fmt: str = "e4m3", saturate: bool = True):
    """v4 bits: what changed: no float arithmetic at all. The kernel receives the float32 input as its uint32 bit
    pattern (a host-side view) and rounds it to an FP8 code with 32-bit integer operations only (the algorithm of
    :func:`scaledl.numerics.fp8_bits.fp8_bits_model`, bit-exact with ml_dtypes), writes one byte an element, and
    counts its grid-stride loop in int32. The format's constants are compile-time constants of the kernel (one
    kernel a format and overflow rule, cached).

    Raises:
        ValueError, TypeError: as :func:`scaledl.numerics.fp8_bits.fp8_params`.
    """
    from scaledl.numerics.fp8_bits import fp8_params

    key = (fmt, bool(saturate))
    if key not in _BITS_KERNELS:
        _BITS_KERNELS[key] = _make_bits_kernel(fp8_params(fmt, saturate))
    return _BITS_KERNELS[key]


_BITS_KERNELS: dict = {}


def _make_bits_kernel(p):
    SHIFT, HALF, REBIAS, MIN_NORMAL = U32(p.shift), U32(p.half), U32(p.rebias), U32(p.min_normal)
    SUB_BASE, SUB_CAP = U32(p.sub_base), U32(p.sub_base - 1)
    MAX_CODE, OVERFLOW, NAN = U32(p.max_code), U32(p.overflow_code), U32(p.nan_code)
    ONE, C23, C24, C31 = U32(1), U32(23), U32(24), U32(31)
    ABS, MANT, IMPLICIT, INF, SIGNBIT = U32(0x7FFFFFFF), U32(0x7FFFFF), U32(0x800000), U32(0x7F800000), U32(0x80)

    @cuda.jit
    def quantize_v4_bits(x, out):
        """v4: float32 bits -> FP8 code in 32-bit integer operations, int32 grid-stride loop, a byte out."""
        i = I32(cuda.threadIdx.x) + I32(cuda.blockIdx.x) * I32(cuda.blockDim.x)
        stride = I32(cuda.gridDim.x) * I32(cuda.blockDim.x)
        n = I32(x.size)
        while i < n:
            u = x[i]
            a = u & ABS
            r = ((a + HALF + ((a >> SHIFT) & ONE)) >> SHIFT) - REBIAS  # normal: round to nearest even, rebias
            if a < MIN_NORMAL:  # subnormal result: shift the significand (implicit bit set) by s <= 31
                sig = (a & MANT) | IMPLICIT
                s = min(SUB_BASE - min(a >> C23, SUB_CAP), C31)
                r = (sig + ((ONE << (s - ONE)) - ONE) + ((sig >> s) & ONE)) >> s
            if r > MAX_CODE:  # beyond the largest finite code, inf included
                r = OVERFLOW
            if a > INF:
                r = NAN
            out[i] = U8(r | ((u >> C24) & SIGNBIT))
            i += stride

    return quantize_v4_bits


U8 = np.uint8
quantize_v4_bits = bits_kernel("e4m3")  # the kernel table's entry: e4m3fn, saturating


def quantize_fp8_bits(x, fmt: str = "e4m3", *, saturate: bool = True, threads: int = BITS_THREADS_PER_BLOCK):
    """FP8 codes (uint8, ml_dtypes' float8_e4m3fn / float8_e5m2 bit patterns) of a float32 array, by
    :func:`bits_kernel`'s kernel (v4); ``saturate`` as in :func:`scaledl.numerics.fp8_bits.fp8_params`.
    ``out.view(ml_dtypes.float8_e4m3fn)`` reads them as numbers.

    Raises:
        TypeError: ``x`` not float32 (the kernel rounds a float32 once; narrow wider input first).
        ValueError: an unknown format, a thread count that is not a positive int, or more than 2**31 - 1 elements
            (the kernel's indices are int32).
    """
    kernel = bits_kernel(fmt, saturate)
    arr = np.asarray(x)
    if arr.dtype != np.float32:
        raise TypeError(f"x must be a float32 array, got {arr.dtype}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    if arr.size > np.iinfo(np.int32).max:
        raise ValueError(f"x has {arr.size} elements; the kernel's int32 indices reach {np.iinfo(np.int32).max}")
    bits = np.ascontiguousarray(arr).reshape(-1).view(np.uint32)
    out = np.full(bits.shape, 0x55, dtype=np.uint8)  # poisoned: 0x55 is a code no element of the tests maps to
    if bits.size:
        blocks = min((bits.size + threads - 1) // threads, 132 * 16)  # a grid-stride loop: a few waves at most
        kernel[blocks, int(threads)](bits, out)
    return out.reshape(arr.shape)
