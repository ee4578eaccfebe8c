"""Quantize v4 (bit-level FP8, 32-bit integer operations) on the simulator: bit-exact with its NumPy model and
with ml_dtypes at sizes that are not a multiple of the block, on random data and every special class, into
poisoned outputs."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from scaledl.kernels.quantize import quantize_fp8_bits
from scaledl.numerics.fp8_bits import fp8_bits_model

pytestmark = pytest.mark.sim

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared fp8_cases module
from fp8_cases import every_class, reference  # noqa: E402


@pytest.mark.parametrize("fmt, saturate, n, threads", [("e4m3", True, 301, 64), ("e5m2", False, 37, 32),
                                                       ("e4m3", False, 97, 32), ("e5m2", True, 1, 32)])
def test_the_kernel_matches_its_model_and_ml_dtypes(fmt, saturate, n, threads):
    rng = np.random.default_rng(n)
    pool = every_class(fmt)
    x = rng.choice(pool, n).astype(np.float32)
    x[: min(n, 6)] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0625], np.float32)[: min(n, 6)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the simulator's uint32 wrap on the path not kept
        got = quantize_fp8_bits(x, fmt, saturate=saturate, threads=threads)
    assert got.dtype == np.uint8 and got.shape == x.shape
    want = reference(x, fmt, saturate)
    assert np.array_equal(got, fp8_bits_model(x.view(np.uint32), fmt, saturate))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="x must be a float32 array"):
        quantize_fp8_bits(np.zeros(3))
    with pytest.raises(ValueError, match="threads must be a positive int"):
        quantize_fp8_bits(np.zeros(3, np.float32), threads=0)
    with pytest.raises(ValueError, match="fmt="):
        quantize_fp8_bits(np.zeros(3, np.float32), "e2m5")
