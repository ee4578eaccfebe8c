"""scaledl.numerics.fp8_bits: the integer algorithm of the bit-level FP8 kernel (quantize v4), bit-exact with
ml_dtypes' float32 -> float8 cast on every class of input; all 2^32 patterns where SCALEDL_EXHAUSTIVE=1."""

import os

import sys
from pathlib import Path

import numpy as np
import pytest

from scaledl.numerics.fp8_bits import FP8_FORMATS, fp8_bits_model, fp8_params

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared fp8_cases module
from fp8_cases import every_class, reference  # noqa: E402

@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("fmt", FP8_FORMATS)
def test_every_class_of_float32_matches_ml_dtypes_bit_for_bit(fmt, saturate):
    x = every_class(fmt)
    got, want = fp8_bits_model(x.view(np.uint32), fmt, saturate), reference(x, fmt, saturate)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(x.view(np.uint32)[i])), hex(got[i]), hex(want[i])) for i in bad[:5]]


def test_the_classes_cover_what_they_claim():
    x = every_class("e4m3")
    assert np.isnan(x).sum() >= 8 and np.isinf(x).sum() == 2 and (np.signbit(x) & (x == 0)).any()
    assert (np.abs(x[np.isfinite(x)]) > 448).any() and ((np.abs(x) > 0) & (np.abs(x) < 2.0**-6)).sum() > 100


def test_a_model_that_rounds_ties_away_would_fail():
    # the test above can fail: ties at 1.0625 (between 1 and 1.125) go to even (1.0), not away from zero
    x = np.array([1.0625, 1.1875], np.float32)
    assert list(fp8_bits_model(x.view(np.uint32), "e4m3")) == [0x38, 0x3A]  # 1.0 and 1.25: both even codes


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="fmt='e3m4'"):
        fp8_params("e3m4")
    with pytest.raises(TypeError, match="saturate must be a bool"):
        fp8_params("e4m3", saturate=1)
    with pytest.raises(TypeError, match="bits must be a uint32 array"):
        fp8_bits_model(np.zeros(3, np.float32), "e4m3")


@pytest.mark.skipif(os.environ.get("SCALEDL_EXHAUSTIVE") != "1",
                    reason="all 2^32 float32 patterns take about 10 minutes: SCALEDL_EXHAUSTIVE=1 runs them")
@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("fmt", FP8_FORMATS)
def test_all_2_32_float32_bit_patterns(fmt, saturate):
    chunk = np.uint64(1 << 24)
    for start in range(0, 1 << 32, 1 << 24):
        bits = (np.arange(chunk, dtype=np.uint64) + np.uint64(start)).astype(np.uint32)
        got, want = fp8_bits_model(bits, fmt, saturate), reference(bits.view(np.float32), fmt, saturate)
        assert np.array_equal(got, want), f"first mismatch at {hex(int(bits[np.argmax(got != want)]))}"
