"""The binned logarithmic dot-product kernels against the NumPy reference: bit-exact int64 accumulators."""

import numpy as np
import pytest

from scaledl.kernels.logdot import VARIANTS, logdot, reference
from scaledl.numerics.logarithmic import lns_encode

pytestmark = pytest.mark.sim

POISON = np.int64(0x5A5A5A5A5A5A)  # a sentinel the launcher must clear before accumulating


def _pair(n, frac_bits, seed, int_bits=4):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(n), rng.laplace(size=n) * 3
    a[rng.random(n) < 0.2] = 0  # zeros must not be counted
    sa, ca = lns_encode(a, int_bits=int_bits, frac_bits=frac_bits)
    sb, cb = lns_encode(b, int_bits=int_bits, frac_bits=frac_bits)
    return sa, ca, sb, cb


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("n, frac_bits", [(1, 3), (127, 3), (129, 2), (333, 3), (301, 5)])
def test_kernel_bins_equal_reference(variant, n, frac_bits):
    sa, ca, sb, cb = _pair(n, frac_bits, seed=n)
    ref = reference(sa, ca, sb, cb, frac_bits=frac_bits)
    out = np.full(1 << frac_bits, POISON)
    got = logdot(sa, ca, sb, cb, frac_bits=frac_bits, variant=variant, threads=64, out=out)
    assert got.ei_min == ref.ei_min
    np.testing.assert_array_equal(got.bins, ref.bins)  # integer sums: exact in any order
    assert got.value() == ref.value()


def test_v2_with_more_blocks_than_needed_and_one_block():
    sa, ca, sb, cb = _pair(200, 3, seed=7)
    ref = reference(sa, ca, sb, cb, frac_bits=3)
    for blocks in (1, 5):
        got = logdot(sa, ca, sb, cb, frac_bits=3, variant="v2", threads=32, blocks=blocks)
        np.testing.assert_array_equal(got.bins, ref.bins)


def test_all_zero_and_empty_inputs():
    z = np.zeros(50, np.int8)
    c = np.zeros(50, np.int32)
    assert not logdot(z, c, z, c, frac_bits=3).bins.any()
    e8, e32 = np.zeros(0, np.int8), np.zeros(0, np.int32)
    assert logdot(e8, e32, e8, e32, frac_bits=3).value() == 0.0


def test_launcher_errors():
    sa, ca, sb, cb = _pair(10, 3, seed=1)
    with pytest.raises(ValueError, match="variant must be one of"):
        logdot(sa, ca, sb, cb, frac_bits=3, variant="v9")
    with pytest.raises(ValueError, match=r"frac_bits must be an int in \[0, 8\], got 9"):
        logdot(sa, ca, sb, cb, frac_bits=9)
    with pytest.raises(ValueError, match="1-D of one length"):
        logdot(sa[:5], ca[:5], sb, cb, frac_bits=3)
