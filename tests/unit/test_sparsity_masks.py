"""Pruning masks, 2:4 compression and OBD: exact counts, the N:M pattern, bit-exact metadata, round trips."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from scaledl.nn import Dense, Sequential, mlp
from scaledl.sparsity import (compress_nm, decompress_nm, hessian_diagonal, kept_count, magnitude_mask,
                              metadata_words, nm_mask, obd_saliency, random_mask)
from scaledl.sparsity.nm import pack_indices, unpack_indices

# Small integers make ties common, which is where the rounding and tie rules are tested.
tied = st.integers(-3, 3).map(float)
sparsities = st.floats(0.0, 0.999, allow_nan=False)


def _boundary_ok(values, mask):
    """Every kept |value| >= every dropped one, and equal magnitudes at the boundary keep lower indices."""
    a, m = np.abs(values).ravel(), mask.ravel()
    if m.all() or not m.any():
        return True
    lo_kept, hi_dropped = a[m].min(), a[~m].max()
    if lo_kept < hi_dropped:
        return False
    if lo_kept == hi_dropped:  # a tie across the boundary: all kept ties precede all dropped ties
        kept_ties, dropped_ties = np.flatnonzero(m & (a == lo_kept)), np.flatnonzero(~m & (a == lo_kept))
        return kept_ties.max() < dropped_ties.min()
    return True


@settings(max_examples=150, deadline=None)
@given(arrays(np.float64, array_shapes(min_dims=1, max_dims=3, max_side=9), elements=tied), sparsities)
def test_magnitude_mask_exact_count_largest_kept_ties_low(w, s):
    mask = magnitude_mask(w, s)
    assert mask.dtype == bool and mask.shape == w.shape
    assert mask.sum() == w.size - round(s * w.size)
    assert _boundary_ok(w, mask)


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, array_shapes(min_dims=2, max_dims=2, max_side=9), elements=tied), sparsities,
       st.sampled_from(["row", "column"]))
def test_magnitude_mask_per_row_and_column(w, s, per):
    mask = magnitude_mask(w, s, per=per)
    groups = zip(w, mask) if per == "row" else zip(w.T, mask.T)
    for values, m in groups:
        assert m.sum() == values.size - round(s * values.size)
        assert _boundary_ok(values, m)


def test_rounding_is_half_to_even_and_ties_exact():
    # 5 entries at 50 %: round(2.5) = 2 removed, 3 kept; 7 at 50 %: round(3.5) = 4 removed, 3 kept
    assert magnitude_mask(np.arange(1.0, 6.0), 0.5).tolist() == [False, False, True, True, True]
    assert kept_count(7, 0.5) == 3 and kept_count(6, 0.5) == 3 and kept_count(10, 0.3) == 7
    # all equal: the kept ones are the first by flat index
    assert magnitude_mask(np.ones((2, 3)), 0.5).tolist() == [[True, True, True], [False, False, False]]
    assert magnitude_mask(-np.ones((2, 3)), 0.5, per="column").tolist() == [[True] * 3, [False] * 3]


def test_random_mask_exact_and_seeded():
    m = random_mask((7, 11), 0.6, seed=3)
    assert m.sum() == 77 - round(0.6 * 77)
    assert np.array_equal(m, random_mask((7, 11), 0.6, seed=3))
    assert not np.array_equal(m, random_mask((7, 11), 0.6, seed=4))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 4), st.data())
def test_nm_mask_pattern(rows, groups, m, data):
    n = data.draw(st.integers(1, m))
    axis = data.draw(st.sampled_from([0, 1, -1]))
    shape = (groups * m, rows) if axis == 0 else (rows, groups * m)
    w = data.draw(arrays(np.float64, shape, elements=tied))
    mask = nm_mask(w, n, m, axis=axis)
    g_w = np.moveaxis(w, axis, -1).reshape(-1, m)
    g_m = np.moveaxis(mask, axis, -1).reshape(-1, m)
    assert (g_m.sum(axis=1) == n).all()  # exactly n kept, so at most n non-zeros in w * mask
    assert (np.count_nonzero(g_w * g_m, axis=1) <= n).all()
    for values, kept in zip(g_w, g_m):
        assert _boundary_ok(values, kept)


def test_nm_mask_axis_matters():
    w = np.array([[1.0, 2.0, 3.0, 4.0], [8.0, 7.0, 6.0, 5.0], [0.0, 0.0, 9.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    assert nm_mask(w, axis=1).astype(int).tolist() == [[0, 0, 1, 1], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0]]
    # down the columns: column 0 is (1, 8, 0, 1), so 8 and the first 1 (the tie goes to row 0)
    assert nm_mask(w, axis=0).astype(int).tolist() == [[1, 1, 0, 1], [1, 1, 1, 1], [0, 0, 1, 0], [0, 0, 0, 0]]


def test_nm_mask_padding():
    w = np.array([[5.0, 0.0, 1.0, 2.0, 3.0, 0.0]])  # 6 = 4 + 2: the last group is padded with two zeros
    assert nm_mask(w, pad=True).astype(int).tolist() == [[1, 0, 0, 1, 1, 1]]


# ------------------------------------------------------------------------------------------ 2:4 metadata
# The encoding of one group of 4 (a nibble, idx0 | idx1 << 2), as PyTorch's CUTLASS conversion lists it
# (torch/sparse/_semi_structured_conversions.py): one line per kept pair.
NIBBLE = {
    (0, 1): 0b0100,
    (0, 2): 0b1000,
    (1, 2): 0b1001,
    (0, 3): 0b1100,
    (1, 3): 0b1101,
    (2, 3): 0b1110,
}


@pytest.mark.parametrize("pair, code", sorted(NIBBLE.items()))
def test_metadata_nibble_per_pair(pair, code):
    group = np.zeros((1, 4))
    group[0, list(pair)] = [2.0, 3.0]
    values, meta = compress_nm(group)
    assert values.tolist() == [[2.0, 3.0]] and meta.dtype == np.uint16 and meta.tolist() == [[code]]


def test_metadata_word_little_endian_four_groups():
    pairs = [(0, 1), (2, 3), (1, 2), (0, 3), (1, 3)]  # 20 columns: one full word and one partial
    row = np.zeros((1, 20))
    for g, (a, b) in enumerate(pairs):
        row[0, 4 * g + a], row[0, 4 * g + b] = g + 1.0, -(g + 1.0)
    values, meta = compress_nm(row)
    assert meta.shape == (1, 2) == (1, metadata_words(20))
    assert hex(int(meta[0, 0])) == "0xc9e4"  # group 0 in bits 0-3 ... group 3 in bits 12-15
    assert int(meta[0, 1]) == 0b1101  # the partial word: zero bits above the last group
    assert values[0].tolist() == [1, -1, 2, -2, 3, -3, 4, -4, 5, -5]
    assert int(meta[0, 0]) & 0xFF == NIBBLE[(0, 1)] | NIBBLE[(2, 3)] << 4  # a byte holds two groups


def test_compressed_size_is_56_25_percent_of_fp16():
    w = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float16)
    values, meta = compress_nm(w)
    assert values.dtype == np.float16 and (values.nbytes + meta.nbytes) / w.nbytes == 0.5625


@settings(max_examples=80, deadline=None)
@given(array_shapes(min_dims=1, max_dims=3, max_side=11), st.sampled_from([(2, 4), (1, 2), (1, 4), (2, 8),
                                                                         (3, 5), (4, 4)]), st.data())
def test_round_trip(shape, nm, data):
    n, m = nm
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    w = data.draw(arrays(np.float32, shape, elements=st.floats(-4, 4, width=32)))
    values, meta = compress_nm(w, n, m, axis=axis, pad=True)
    back = decompress_nm(values, meta, w.shape, n, m, axis=axis, pad=True)
    assert back.dtype == w.dtype and np.array_equal(back, w * nm_mask(w, n, m, axis=axis, pad=True))
    assert np.array_equal(compress_nm(back, n, m, axis=axis, pad=True)[0], values)


def test_pack_unpack_inverse():
    idx = np.random.default_rng(1).integers(0, 8, (3, 13))
    assert np.array_equal(unpack_indices(pack_indices(idx, 8), 13, 8), idx)  # 3 bits, 5 per word


# ----------------------------------------------------------------------------------------------- OBD
def test_obd_hand_computed():
    w, h = np.array([1.0, -2.0, 3.0, 0.5]), np.array([4.0, 1.0, 0.0, 8.0])
    s = obd_saliency(w, h)
    assert s.tolist() == [2.0, 2.0, 0.0, 1.0]  # 0.5 * 4 * 1, 0.5 * 1 * 4, 0, 0.5 * 8 * 0.25
    # magnitude would prune 0.5 first; OBD prunes the weight of zero curvature, 3.0
    assert magnitude_mask(w, 0.25).tolist() == [True, True, True, False]
    assert magnitude_mask(s, 0.25).tolist() == [True, True, False, True]


def _linear_model(d, c, seed):
    return Sequential([Dense(d, c, rng=np.random.default_rng(seed), name="fc1", dtype=np.float64)])


def test_fisher_is_the_exact_hessian_of_a_linear_softmax_model():
    # With no hidden layer the Gauss-Newton matrix is the Hessian:
    # d2 L / dW_ic^2 = mean_n x_ni^2 p_nc (1 - p_nc), d2 L / db_c^2 = mean_n p_nc (1 - p_nc).
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 5))
    model = _linear_model(5, 3, 1)
    model.parameters()["fc1.b"][:] = rng.standard_normal(3)
    h = hessian_diagonal(model, x)
    z = x @ model.parameters()["fc1.W"] + model.parameters()["fc1.b"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    v = p * (1 - p)
    np.testing.assert_allclose(h["fc1.W"], (x * x).T @ v / 9, rtol=1e-12)  # float64 rounding only
    np.testing.assert_allclose(h["fc1.b"], v.mean(0), rtol=1e-12)


def test_empirical_fisher_is_mean_squared_per_sample_gradient():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 3, 6)
    model = mlp([4, 5, 3], seed=0).astype(np.float64)
    h = hessian_diagonal(model, x, y, method="empirical")
    expect = sum(model.loss_and_gradients(x[i:i + 1], y[i:i + 1])[1]["fc1.W"] ** 2 for i in range(6)) / 6
    np.testing.assert_allclose(h["fc1.W"], expect, rtol=1e-12)


# -------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("s, exc, msg", [
    (1.0, ValueError, r"sparsity must be in \[0, 1\) .* got 1.0"),
    (-0.1, ValueError, r"sparsity must be in \[0, 1\) .* got -0.1"),
    (True, TypeError, "sparsity must be a number in .* got True"),
    ("half", TypeError, "sparsity must be a number in .* got 'half'"),
])
def test_bad_sparsity(s, exc, msg):
    with pytest.raises(exc, match=msg):
        magnitude_mask(np.ones(4), s)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"w must be finite, got nan at index \(1,\)"):
        magnitude_mask(np.array([1.0, np.nan]), 0.5)
    with pytest.raises(ValueError, match=r"w must be finite, got inf at index \(0, 1\)"):
        nm_mask(np.array([[1.0, np.inf, 0, 0]]))
    with pytest.raises(ValueError, match="n=3 > m=2: a group of m=2 entries cannot keep n=3"):
        nm_mask(np.ones(4), 3, 2)
    with pytest.raises(ValueError, match="axis 1 has length 6, not a multiple of m=4; pass pad=True"):
        compress_nm(np.ones((2, 6)), axis=1)
    with pytest.raises(ValueError, match="axis=2 is out of range for an array of shape"):
        nm_mask(np.ones((4, 4)), axis=2)
    with pytest.raises(ValueError, match="per='block' is not a pruning granularity"):
        magnitude_mask(np.ones(4), 0.5, per="block")
    with pytest.raises(ValueError, match=r"per='row' needs a 2-D weight matrix, got shape \(4,\)"):
        magnitude_mask(np.ones(4), 0.5, per="row")
    with pytest.raises(TypeError, match="w must be a real numeric array, got dtype complex128"):
        magnitude_mask(np.ones(4, complex), 0.5)


def test_bad_decompress_and_obd():
    values, meta = compress_nm(np.arange(8.0).reshape(1, 8))
    with pytest.raises(ValueError, match="values: expected shape with axis -1 of length 4"):
        decompress_nm(values[:, :3], meta, (1, 8))
    with pytest.raises(ValueError, match="metadata: expected uint16"):
        decompress_nm(values, meta.astype(np.int32), (1, 8))
    with pytest.raises(ValueError, match="metadata: positions must be ascending within each group"):
        decompress_nm(values, np.array([[0x0041]], np.uint16), (1, 8))  # group 0 claims positions (1, 0)
    with pytest.raises(ValueError, match=r"hessian_diag: shape \(2,\) does not match the weights' shape \(3,\)"):
        obd_saliency(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="hessian_diag must be >= 0"):
        obd_saliency(np.ones(2), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="method='hutchinson' is not a Hessian estimator"):
        hessian_diagonal(mlp([2, 2]), np.ones((1, 2), np.float32), method="hutchinson")
    with pytest.raises(ValueError, match="y: method='empirical' needs the labels"):
        hessian_diagonal(mlp([2, 2]), np.ones((1, 2), np.float32), method="empirical")
