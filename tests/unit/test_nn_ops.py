"""scaledl.nn.ops: fixed-order products and basic-operation exp/log, the same bits on any CPU."""

import os
import subprocess
import sys

import numpy as np
import pytest

from scaledl.nn import ops


def sequential_product(a, b):
    """The specification: out[i, j] = (((0 + a[i,0] b[0,j]) + a[i,1] b[1,j]) + ...), one term at a time.

    Written with element-wise NumPy operations only (correctly rounded, so CPU-independent)."""
    dtype = np.result_type(a, b)
    out = np.zeros((a.shape[0], b.shape[1]), dtype)
    for p in range(a.shape[1]):
        out = out + a[:, p:p + 1].astype(dtype) * b[p:p + 1, :].astype(dtype)
    return out


# Odd shapes: a row left over from the 2-row blocks, k not a multiple of the 4-step blocks, narrow outputs
# that take the transposed path (n < 32 < m), a single row and column, an empty inner dimension.
SHAPES = [(1, 1, 1), (3, 5, 7), (5, 7, 3), (33, 13, 17), (37, 9, 10), (64, 31, 40), (2, 4, 33), (7, 0, 5)]


@pytest.mark.parametrize("m, k, n", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_adds_in_the_specified_order_bit_for_bit(m, k, n, dtype):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    got = ops.matmul(a, b)
    assert got.dtype == dtype and got.flags.c_contiguous and got.shape == (m, n)
    np.testing.assert_array_equal(got, sequential_product(a, b))


def test_matmul_accepts_transposed_and_strided_views():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((9, 6)).astype(np.float32)
    w = rng.standard_normal((11, 6)).astype(np.float32)
    np.testing.assert_array_equal(ops.matmul(x, w.T), sequential_product(x, np.ascontiguousarray(w.T)))
    np.testing.assert_array_equal(ops.matmul(x.T, x), sequential_product(np.ascontiguousarray(x.T), x))
    np.testing.assert_array_equal(ops.matmul(x[::2], w.T[:, 1::3]),
                                  sequential_product(x[::2], np.ascontiguousarray(w.T[:, 1::3])))


def test_matmul_is_close_to_float64_within_float32_rounding():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    b = rng.standard_normal((300, 50)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = (300 + 2) * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b))  # Higham's
    assert np.all(np.abs(ops.matmul(a, b) - exact) <= bound)


def test_matmul_dtypes():
    assert ops.matmul(np.ones((2, 3), np.int64), np.ones((3, 2), np.int32)).dtype == np.float64
    assert ops.matmul(np.ones((2, 3), np.float16), np.ones((3, 2), np.float16)).dtype == np.float32
    assert ops.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float64)).dtype == np.float64


def test_matmul_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"inner dimensions differ, shapes \(2, 3\) and \(4, 5\)"):
        ops.matmul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"expected 2-D arrays, got shapes \(3,\) and \(3, 1\)"):
        ops.matmul(np.ones(3), np.ones((3, 1)))
    with pytest.raises(TypeError, match="a: expected a real floating-point or integer array, got dtype complex"):
        ops.matmul(np.ones((2, 2), complex), np.ones((2, 2)))


def test_sum_rows_adds_row_after_row():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((37, 11)).astype(np.float32)
    expected = np.zeros(11, np.float32)
    for row in a:
        expected = expected + row
    np.testing.assert_array_equal(ops.sum_rows(a), expected)
    with pytest.raises(ValueError, match=r"expected a 2-D array, got shape \(3,\)"):
        ops.sum_rows(np.ones(3))


def ulps(got, ref):
    """Distance in units in the last place of float64 (ref's spacing)."""
    return np.abs(got - ref) / np.spacing(np.abs(ref))


def test_exp_and_log_within_two_ulp_of_libm():
    # Bound: Cody-Waite reduction is exact to 2**-60 and the degree-13 Taylor polynomial's truncation is
    # below 2**-60; Horner's rounding errors stay under 1.5 ulp; libm's own error is under 1 ulp.
    x = np.concatenate([np.linspace(-700, 700, 200_001), np.random.default_rng(4).uniform(-1, 1, 100_000)])
    assert ulps(ops.exp(x), np.exp(x)).max() <= 2
    y = np.exp(np.random.default_rng(5).uniform(-700, 700, 200_000))
    y = np.concatenate([y, 1 + np.random.default_rng(6).uniform(-1e-3, 1e-3, 10_000)])
    ref = np.log(y)
    assert np.max(np.abs(ops.log(y) - ref) / np.maximum(np.spacing(np.abs(ref)), np.spacing(1.0))) <= 2


def test_exp_log_special_values_and_dtypes():
    assert ops.exp(np.array([-np.inf, np.inf, 800.0, -800.0])).tolist() == [0.0, np.inf, np.inf, 0.0]
    assert np.isnan(ops.exp(np.nan)) and np.isnan(ops.log(-1.0)) and np.isnan(ops.log(np.nan))
    assert ops.log(np.array([0.0, np.inf, 1.0])).tolist() == [-np.inf, np.inf, 0.0]
    assert float(ops.exp(0.0)) == 1.0 and float(ops.log(1.0)) == 0.0
    x32 = np.random.default_rng(7).standard_normal(100_000).astype(np.float32) * 20
    e32 = ops.exp(x32)
    assert e32.dtype == np.float32 and e32.shape == x32.shape
    # float64 inside, one rounding to float32: equal to the correctly rounded result except (at most) at a
    # float32 rounding boundary closer than 2 float64 ulp, which is vanishingly rare.
    ref32 = np.exp(x32.astype(np.float64)).astype(np.float32)
    assert np.mean(e32 == ref32) > 0.9999 and np.all(np.abs(e32 - ref32) <= np.spacing(np.abs(ref32)))
    assert ops.log(np.ones((2, 3), np.float32)).shape == (2, 3)


def test_softmax_cross_entropy_matches_float64():
    from scaledl.nn.loss import softmax_cross_entropy

    rng = np.random.default_rng(8)
    z = (rng.standard_normal((33, 10)) * 5).astype(np.float32)
    y = rng.integers(0, 10, 33)
    loss, d = softmax_cross_entropy(z, y)
    z64 = z.astype(np.float64) - z.max(1, keepdims=True)
    p = np.exp(z64) / np.exp(z64).sum(1, keepdims=True)
    assert abs(loss - np.mean(-np.log(p[np.arange(33), y]))) < 1e-12
    ref = p.copy()
    ref[np.arange(33), y] -= 1
    assert d.dtype == np.float32 and np.max(np.abs(d - ref / 33)) <= 2 * np.finfo(np.float32).eps


TRAIN_AND_HASH = """
import hashlib, numpy as np
from scaledl.nn import SGD, digits, mlp, small_cnn, train
d = digits()
h = hashlib.sha256()
for model, data in ((mlp([64, 48, 10], seed=0), d), (small_cnn(seed=0), d.as_images())):
    train(model, data, steps=12, batch_size=16, optimizer=SGD(lr=0.05, momentum=0.9), seed=0)
    for name, w in sorted(model.parameters().items()):
        h.update(name.encode()); h.update(np.ascontiguousarray(w).tobytes())
print(h.hexdigest())
"""


def test_training_gives_the_same_bits_with_a_generic_cpu_and_plain_blas(tmp_path):
    """The emulated-CPU notebook test in miniature: an MLP and a CNN trained here and as a plainer x86-64."""
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "OPENBLAS_CORETYPE")}
    runs = []
    for extra in ({}, {**ops.plain_cpu_env(), "NUMBA_CACHE_DIR": str(tmp_path)}):
        out = subprocess.run([sys.executable, "-c", TRAIN_AND_HASH], env={**base, **extra},
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        runs.append(out.stdout.split()[-1])
    assert runs[0] == runs[1]
