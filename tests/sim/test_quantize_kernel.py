"""The elementwise quantization kernels against the library's bit-manipulation quantizer and ml_dtypes.

Every kernel (v1, which divides in float64; v2, which does not; v3, the book's, v2's rounding four elements a loop
trip) on every class of float32 input, bit for bit, at sizes that are not a multiple of the 128-thread block,
outputs poisoned; v3 also at grids small enough that each thread makes several trips of four and a ragged end.
"""

import ml_dtypes
import numpy as np
import pytest

from scaledl.kernels.quantize import VARIANTS, quantize_gpu, quantize_into
from scaledl.numerics.formats import get_format
from scaledl.numerics.quantize import quantize

pytestmark = pytest.mark.sim

FORMATS = ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "fp16", "bf16"]
F32 = np.float32


def _cases(n=301):  # 301: not a multiple of the 128-thread block, so the tail guard matters
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))).astype(np.float32)
    hard = np.array([1.0625, 1.1875, 464.0, 465.0, 2.0**-10, 1.5 * 2.0**-9, 2.5, 3.5, 5.0, 0.25, 0.75, 61440.0,
                     -0.0, 0.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    return np.concatenate([x, hard])


def float32_classes(fmt: str, n: int = 601, seed: int = 0) -> np.ndarray:
    """Every class of float32 input for ``fmt``, both signs, ``n`` values (odd: not a multiple of a block):

    * the format's own values, subnormals included, and the ties between neighbours (exact in float32), with
      the float32 just below and just above each tie (the rounding direction flips there);
    * the overflow boundary: the largest value, the tie above it, the float32 either side of that tie;
    * float32 subnormals (the smallest, a middling one), the largest float32, signed zeros, infinities, NaN;
    * then random values over a wide range of binades.
    """
    spec = get_format(fmt)
    mags = spec.magnitudes().astype(np.float64)  # the format's non-negative values, ascending, 0 first
    # keep the bottom and top of the grid and a few binades between: fp16/bf16 have thousands of values
    one = np.searchsorted(mags, 1.0)  # and the neighbours of 1, where a tie's even side is easy to check by hand
    keep = np.unique(np.concatenate([mags[:12], mags[-12:], mags[one - 2:one + 3], mags[:: max(1, mags.size // 24)]]))
    ties = (keep[:-1] + np.diff(keep) / 2).astype(F32)  # exact: one bit more than the format's mantissa
    up = mags[-1] + 2.0 ** (np.floor(np.log2(mags[-1])) - spec.man_bits)  # the next grid value past the largest
    overflow_tie = F32((mags[-1] + up) / 2)
    special = np.array([0.0, 1e-45, 1e-40, 3.4028235e38, np.inf, np.nan, mags[-1], overflow_tie, 1e30], F32)
    near = np.concatenate([ties, [overflow_tie]])
    base = np.concatenate([keep.astype(F32), ties, np.nextafter(near, F32(0)), np.nextafter(near, F32(np.inf)),
                           special])
    base = np.concatenate([base, -base])  # -0.0, -inf, NaN with its sign bit set
    if base.size > n - 16:
        raise ValueError(f"n={n} leaves too little room after {base.size} chosen values")
    rng = np.random.default_rng(seed)
    k = n - base.size
    rand = (rng.standard_normal(k) * np.exp2(rng.uniform(-40, 40, k))).astype(F32)
    return np.concatenate([base, rand])


def _same_bits(got, want):
    """Bit for bit, NaN matching any NaN (the kernel passes a NaN's payload through)."""
    return (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("saturate", [True, False])
def test_every_float32_class_bit_exact(variant, fmt, saturate):
    x = float32_classes(fmt)
    out = np.full(x.size, np.nan, F32)  # poisoned: an element the kernel skips stays NaN and fails below
    quantize_into(x, out, fmt, saturate=saturate, variant=variant)
    want = quantize(x, fmt, saturate=saturate)
    same = _same_bits(out, want)
    assert same.all(), list(zip(x[~same][:10], want[~same][:10], out[~same][:10]))
    if saturate:  # and against ml_dtypes itself: clip to the largest value, then its round-to-nearest-even cast
        spec = get_format(fmt)
        dtype = np.float16 if fmt == "fp16" else getattr(ml_dtypes, spec.ml_dtypes_name)
        ref = np.where(np.isnan(x), x, np.clip(x.astype(np.float64), -spec.max_value, spec.max_value))
        ref = ref.astype(dtype).astype(F32)
        # a format without NaN (FP6, FP4): ml_dtypes makes NaN a zero, the library keeps it NaN (its choice)
        same = _same_bits(out, ref) | (np.isnan(x) & (not spec.has_nan))
        assert same.all(), list(zip(x[~same][:10], ref[~same][:10], out[~same][:10]))


@pytest.mark.parametrize("fmt", ["e4m3", "fp16"])
@pytest.mark.parametrize("threads", [128, 32])
def test_v3_trips_of_four_and_the_ragged_end_bit_exact(fmt, threads):
    """One block for 601 elements: at 128 threads each thread makes one trip of four (elements i to i + 384) and
    the first 89 a ragged one more; at 32, several trips of four, then the ragged end. launch_config's grid (a
    block per 512 elements) leaves most odd sizes to the ragged loop alone, so this is where the trips are checked."""
    from scaledl.kernels.quantize import _launch_args

    x = float32_classes(fmt)
    out = np.full(x.size, np.nan, F32)
    VARIANTS["four"][1, threads](x, out, *_launch_args(fmt, 1.0, True))
    want = quantize(x, fmt)
    same = _same_bits(out, want)
    assert same.all(), list(zip(np.flatnonzero(~same)[:10], x[~same][:10], want[~same][:10], out[~same][:10]))


def test_the_cases_cover_every_class():
    x = float32_classes("e4m3")
    tiny = np.finfo(F32).tiny
    assert x.size % 128 and np.isnan(x).sum() == 2 and np.isposinf(x).any() and np.isneginf(x).any()
    assert {0.0, -0.0} <= set(x[x == 0].tolist()) and np.signbit(x[x == 0]).any() and (~np.signbit(x[x == 0])).any()
    assert ((np.abs(x) < tiny) & (x != 0)).sum() >= 4  # float32 subnormals, both signs
    assert (np.abs(x) > 448).sum() >= 6 and 464.0 in x and np.nextafter(F32(464), F32(0)) in x  # overflow tie
    assert 1.0625 in x and 2.0**-10 in x  # a tie to even at 1, and one between the two smallest subnormals


def test_the_kernels_agree_with_each_other_on_random_data():
    x = (np.random.default_rng(3).standard_normal(1001) * 64).astype(F32)
    assert _same_bits(quantize_gpu(x, "e4m3", variant="arith"), quantize_gpu(x, "e4m3")).all()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("saturate", [True, False])
def test_kernel_matches_the_library(fmt, saturate):
    x = _cases()
    got, want = quantize_gpu(x, fmt, saturate=saturate), quantize(x, fmt, saturate=saturate)
    same = _same_bits(got, want)
    assert same.all(), list(zip(x[~same][:10], want[~same][:10], got[~same][:10]))


def test_kernel_with_a_scale_and_a_2d_shape():
    x = np.random.default_rng(1).standard_normal((7, 9)).astype(np.float32)
    np.testing.assert_array_equal(quantize_gpu(x, "e2m1", scale=0.25), quantize(x, "e2m1", scale=0.25))


def test_kernel_rejects_formats_it_does_not_handle():
    with pytest.raises(ValueError, match="signed float formats with ties to even, got 'int8'"):
        quantize_gpu(np.ones(3), "int8")
    with pytest.raises(ValueError, match="got 'e8m0'"):
        quantize_gpu(np.ones(3), "e8m0")
    with pytest.raises(ValueError, match="scale must be finite and > 0"):
        quantize_gpu(np.ones(3), "e4m3", scale=0)
    with pytest.raises(ValueError, match=r"variant='v9' is not a quantize kernel; expected one of "
                                         r"\('arith', 'pow2', 'four'\)"):
        quantize_gpu(np.ones(3), "e4m3", variant="v9")


def float64_near_ties(fmt: str, scale: float = 1.0, n: int = 301, seed: int = 2) -> np.ndarray:
    """float64 values whose quotient by ``scale`` a float32 detour rounds wrongly: ties of the format nudged by
    2**-40 either way (each lands on the tie in float32), the ties themselves, and random values; ``n`` odd."""
    spec = get_format(fmt)
    mags = spec.magnitudes().astype(np.float64)
    mags = mags[:: max(1, mags.size // 40)]
    ties = mags[:-1] + np.diff(mags) / 2
    base = np.concatenate([ties, ties * (1 + 2.0**-40), ties * (1 - 2.0**-40)])
    base = np.concatenate([base, -base])
    rng = np.random.default_rng(seed)
    k = n - base.size
    return np.concatenate([base, rng.standard_normal(k) * np.exp2(rng.uniform(-8, 8, k))]) * scale


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m1", "bf16"])
@pytest.mark.parametrize("scale", [1.0, 0.25, 0.3])
def test_float64_inputs_round_once_like_the_library(fmt, scale):
    """The host wrapper narrows float64 to float32 by rounding to odd, so the kernel's rounding is the only one:
    bit for bit the library's (which ml_dtypes 0.7 agrees with), not the float32 detour."""
    x = float64_near_ties(fmt, scale)
    got, want = quantize_gpu(x, fmt, scale=scale), quantize(x, fmt, scale=scale)
    same = _same_bits(got, want)
    assert same.all(), list(zip(x[~same][:10], want[~same][:10], got[~same][:10]))
    if scale != 0.3:  # with a power-of-two scale the float32 detour lands on the ties (0.3's quotient does not)
        detour = quantize(x.astype(F32), fmt, scale=scale)
        assert not _same_bits(got, detour).all()  # the cases reach the values a double rounding gets wrong
