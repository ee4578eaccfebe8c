"""Bandwidth, FMA-throughput, reduction and convolution kernels against NumPy at odd sizes, outputs poisoned."""

import math

import numpy as np
import pytest

from scaledl.kernels import bandwidth as bw
from scaledl.kernels.conv import conv2d, conv2d_reference, conv_multiplies
from scaledl.kernels.reduce import reduce_sum, resolve_variant, sum_reference

pytestmark = pytest.mark.sim
EPS32 = float(np.finfo(np.float32).eps)


def _poisoned(n):
    return np.full(n, np.nan, np.float32)


@pytest.mark.parametrize("n", [1, 33, 1001])  # 1001 > 4 blocks x 32 threads: the grid-stride loop must wrap
def test_streams_exact(n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    # the simulator rounds s*c and then b + s*c, exactly like NumPy float32: equality is expected
    assert np.array_equal(bw.copy(_poisoned(n), a), a)
    assert np.array_equal(bw.scale(_poisoned(n), a, 3.0), bw.stream_reference("scale", a, s=3.0))
    assert np.array_equal(bw.triad(_poisoned(n), a, b, -0.5), bw.stream_reference("triad", a, b, s=-0.5))


def test_stream_errors_and_bytes():
    with pytest.raises(ValueError, match="src must have length 3 like the output, got 4"):
        bw.copy(_poisoned(3), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="src must be float32, got dtype float64"):
        bw.copy(_poisoned(3), np.zeros(3))
    with pytest.raises(ValueError, match="op='add' is not a stream op"):
        bw.stream_bytes("add", 3)
    assert bw.stream_bytes("triad", 10) == 120 and bw.stream_bytes("copy", 10) == 80


def test_fma_counts_exactly():
    out = bw.fma_throughput(37, 25)  # 37 threads: a partial second block
    assert np.array_equal(out, bw.fma_reference(37, 25, 0.0, 1.0, 1.0))
    assert out[0] == bw.FMA_CHAINS * 25
    assert bw.fma_flops(37, 25) == 2 * 37 * 25 * bw.FMA_CHAINS
    with pytest.raises(ValueError, match="n_threads must be a positive int, got 0"):
        bw.fma_throughput(0, 1)


def test_fma_nontrivial_chain():
    # x <- x/2 + 1 from 0 converges to 2; every step is exact in binary floating point
    out = bw.fma_throughput(5, 12, x0=0.0, b=0.5, c=1.0)
    assert np.array_equal(out, bw.fma_reference(5, 12, 0.0, 0.5, 1.0))


@pytest.mark.parametrize("n", [1, 31, 1000, 4099])
def test_sum_within_float32_bound(n):
    x = np.random.default_rng(n).standard_normal(n, dtype=np.float32)
    got = float(reduce_sum(x, "shared"))
    # float32 summation error <= (depth of the addition tree + grid-stride run length) eps sum|x|
    bound = (n + 10) * EPS32 * float(np.abs(x).sum()) / 4 + 1e-30
    assert abs(got - sum_reference(x)) <= bound


@pytest.mark.parametrize("n", [3, 385, 1023, 3079])  # below, at and past one trip of eight loads per thread
def test_sum_poisoned_partials_every_block_writes(n):
    """reduce.thread_sum takes eight elements a stride apart per trip, then the ragged end one at a time: with
    3 blocks of 32 threads (stride 96) every n here leaves a ragged end, and the larger two need full trips."""
    from scaledl.kernels.reduce import reduce_sum_into

    x = np.random.default_rng(n).standard_normal(n, dtype=np.float32)
    partial, result = np.full(3, np.nan, np.float32), np.full(1, np.nan, np.float32)
    reduce_sum_into(x, partial, result, "shared")
    assert not np.isnan(partial).any()  # a block that never wrote its partial would leave NaN
    bound = (n // 96 + 2 * 5 + 4) * EPS32 * float(np.abs(x).astype(np.float64).sum())  # run + two trees
    assert abs(float(result[0]) - sum_reference(x)) <= bound


def test_sum_refuses_arrays_past_32_bit_indices():
    from types import SimpleNamespace

    from scaledl.kernels.reduce import MAX_ELEMENTS, reduce_sum_into

    with pytest.raises(ValueError, match=r"x has 2147483648 elements; the kernels index in 32 bits, at most 21474836"):
        reduce_sum_into(SimpleNamespace(shape=(MAX_ELEMENTS,)), np.zeros(1, np.float32), np.zeros(1, np.float32))


def test_sum_exact_on_integers_and_deterministic():
    x = np.arange(1, 2050, dtype=np.float32)  # partial sums stay below 2**24: every addition is exact
    assert float(reduce_sum(x)) == 2049 * 2050 / 2
    y = np.random.default_rng(0).standard_normal(777, dtype=np.float32)
    assert reduce_sum(y) == reduce_sum(y)  # two passes, fixed order: the same bits every time


def test_sum_variant_errors():
    with pytest.raises(RuntimeError, match="simulator implements no warp shuffles"):
        resolve_variant("warp")
    assert resolve_variant("auto") == "shared"
    with pytest.raises(ValueError, match="variant='tree' is not a reduction variant"):
        reduce_sum(np.ones(3, np.float32), "tree")
    with pytest.raises(ValueError, match=r"blocks must be an int in \[1, 4\], got 9"):
        reduce_sum(np.ones(3, np.float32), blocks=9)


@pytest.mark.parametrize("variant", ["direct", "winograd"])
@pytest.mark.parametrize("C,H,W,K", [(3, 11, 9, 2), (1, 3, 3, 1), (2, 6, 8, 3), (4, 19, 10, 1)])
def test_conv_matches_reference(variant, C, H, W, K):
    rng = np.random.default_rng(C * H * W)
    x = rng.standard_normal((C, H, W)).astype(np.float32)
    w = rng.standard_normal((K, C, 3, 3)).astype(np.float32)
    out = np.full((K, H - 2, W - 2), np.nan, np.float32)
    y = conv2d(x, w, variant, out=out)
    ref = conv2d_reference(x, w)
    # 9 C products summed in float32, plus for Winograd the transforms' additions (at most ~16 terms of
    # size |x||w|): bound by (terms) eps sum|w||x|
    mag = conv2d_reference(np.abs(x), np.abs(w))
    assert np.all(np.abs(y - ref) <= (9 * C + 16) * EPS32 * 4 * mag + 1e-30)


def test_direct_conv_rectangular_filter():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 9)).astype(np.float32)
    w = rng.standard_normal((2, 2, 2, 5)).astype(np.float32)
    y = conv2d(x, w, "direct")
    assert np.allclose(y, conv2d_reference(x, w), rtol=0, atol=64 * EPS32 * np.abs(x).max() * np.abs(w).max())


def test_conv_errors_and_counts():
    x = np.zeros((2, 5, 5), np.float32)
    with pytest.raises(ValueError, match="w has 3 input channels but x has 2"):
        conv2d(x, np.zeros((1, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="implements F\\(2x2, 3x3\\); got a 5x5 filter"):
        conv2d(x, np.zeros((1, 2, 5, 5), np.float32), "winograd")
    with pytest.raises(TypeError, match="x must be float32"):
        conv2d(x.astype(np.float64), np.zeros((1, 2, 3, 3), np.float32))
    assert conv_multiplies(1, 1, 2, 2, "direct") / conv_multiplies(1, 1, 2, 2, "winograd") == 36 / 16
    assert math.isclose(conv_multiplies(8, 8, 64, 64, "direct") / conv_multiplies(8, 8, 64, 64, "winograd"), 2.25)


def test_launch_conv2d_with_pretransformed_filter_matches_conv2d():
    # what a benchmark times: the filter transformed once, then launches only
    from scaledl.kernels.conv import launch_conv2d, winograd_filter_transform

    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 9, 8)).astype(np.float32)  # 7 x 6 outputs: an odd tile row
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    for variant, filt in (("direct", w), ("winograd", winograd_filter_transform(w))):
        out = launch_conv2d(variant, x, filt, np.full((2, 7, 6), np.nan, np.float32))
        assert np.array_equal(out, conv2d(x, w, variant))  # same kernel, same inputs: the same bits
