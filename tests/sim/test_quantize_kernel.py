"""The elementwise quantization kernel against the library's bit-manipulation quantizer (and so ml_dtypes)."""

import numpy as np
import pytest

from scaledl.kernels.quantize import quantize_gpu
from scaledl.numerics.quantize import quantize

pytestmark = pytest.mark.sim

FORMATS = ["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "fp16", "bf16"]


def _cases(n=301):  # 301: not a multiple of the 128-thread block, so the tail guard matters
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))).astype(np.float32)
    hard = np.array([1.0625, 1.1875, 464.0, 465.0, 2.0**-10, 1.5 * 2.0**-9, 2.5, 3.5, 5.0, 0.25, 0.75, 61440.0,
                     -0.0, 0.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    return np.concatenate([x, hard])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("saturate", [True, False])
def test_kernel_matches_the_library(fmt, saturate):
    x = _cases()
    got, want = quantize_gpu(x, fmt, saturate=saturate), quantize(x, fmt, saturate=saturate)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
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
