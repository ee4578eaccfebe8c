"""Inputs and the reference for the bit-level FP8 quantizer's tests (tests/unit/test_fp8_bits.py and
tests/sim/test_quantize_bits_kernel.py): every class of float32 input, and ml_dtypes' cast."""

import ml_dtypes
import numpy as np

DTYPES = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def reference(x: np.ndarray, fmt: str, saturate: bool) -> np.ndarray:
    """ml_dtypes' cast, after clipping to the largest finite value where ``saturate`` (NaN stays NaN)."""
    dt = DTYPES[fmt]
    if saturate:
        big = float(ml_dtypes.finfo(dt).max)
        with np.errstate(invalid="ignore"):
            x = np.where(np.isnan(x), x, np.clip(x, -big, big)).astype(np.float32)
    return x.astype(dt).view(np.uint8)


def every_class(fmt: str) -> np.ndarray:
    """Normals, subnormals (float32's and the format's), every tie between neighbouring codes and the values just
    beside it, the largest finite value and just above, saturation, signed zeros, infinities, NaNs with payloads."""
    rng = np.random.default_rng(7)
    codes = np.arange(256, dtype=np.uint8).view(DTYPES[fmt]).astype(np.float32)
    finite = np.unique(codes[np.isfinite(codes)])
    mids = ((finite[1:].astype(np.float64) + finite[:-1]) / 2).astype(np.float32)  # exact in float32
    beside = np.concatenate([np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))])
    big = finite.max()
    specials = np.array([0.0, np.inf, big, np.nextafter(big, np.float32(np.inf)), big * 1.0625, big * 2, 3e38,
                         np.finfo(np.float32).max, np.finfo(np.float32).tiny, 1e-45], np.float32)
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7FA00000], np.uint32).view(np.float32)
    sub32 = rng.integers(1, 0x800000, 4096, dtype=np.uint32).view(np.float32)  # float32 subnormals
    anything = rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = (rng.standard_normal(8192) * big / 4).astype(np.float32)
    x = np.concatenate([finite, mids, beside, specials, nans, sub32, anything, near])
    return np.concatenate([x, -x])
