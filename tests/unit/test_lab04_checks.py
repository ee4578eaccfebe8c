"""Lab 04's checks catch the classic pruning bugs and name them; the correct functions pass."""

import numpy as np
import pytest

from scaledl.labs import sparse_checks as S
from scaledl.sparsity import compress_nm, magnitude_mask, nm_mask


def _ranked(w, s, *, count=lambda n, s: n - round(s * n), kind="stable", signed=False):
    key = w.ravel() if signed else np.abs(w).ravel()
    order = np.argsort(-key, kind=kind)
    keep = np.zeros(w.size, bool)
    keep[order[:count(w.size, s)]] = True
    return keep.reshape(w.shape)


def test_correct_pruning_passes():
    r = S.check_magnitude_pruning(lambda w, s: magnitude_mask(w, s), report=None)
    assert r.passed and r.hints == [], str(r)
    assert S.check_magnitude_pruning(_ranked, report=None).passed


@pytest.mark.parametrize("yours, words", [
    (lambda w, s: _ranked(w, s, count=lambda n, s: n - int(s * n)), "off by rounding"),
    (lambda w, s: _ranked(w, s, count=lambda n, s: n - int(np.ceil(s * n))), "off by rounding"),
    (lambda w, s: np.abs(w) >= np.sort(np.abs(w).ravel())[::-1][max(w.size - round(s * w.size) - 1, 0)],
     "threshold"),
    (lambda w, s: _ranked(w[::-1, ::-1], s)[::-1, ::-1], "lower flat index"),  # ties to the higher index
    (lambda w, s: _ranked(w, s, signed=True), "magnitude |w|"),
])
def test_each_pruning_bug_is_named(yours, words):
    r = S.check_magnitude_pruning(yours, report=None)
    assert not r.passed
    assert any(words in h for h in r.hints), str(r)


def _nm_by_hand(w, axis, *, stable=True, keep_by_value=False):
    g = np.moveaxis(w, axis, -1)
    shape = g.shape
    groups = g.reshape(*shape[:-1], -1, 4)
    key = -groups if keep_by_value else -np.abs(groups)
    if not stable:
        key = key[..., ::-1]
    idx = np.argsort(key, axis=-1, kind="stable")[..., :2]
    if not stable:
        idx = 3 - idx
    mask = np.zeros(groups.shape, bool)
    np.put_along_axis(mask, idx, True, axis=-1)
    return np.moveaxis(mask.reshape(shape), -1, axis)


def test_correct_nm_passes():
    assert S.check_nm_mask(lambda w, axis: nm_mask(w, 2, 4, axis=axis), report=None).passed
    r = S.check_nm_mask(_nm_by_hand, report=None)
    assert r.passed, str(r)


@pytest.mark.parametrize("yours, words", [
    (lambda w, axis: _nm_by_hand(w, 1 - axis) if w.shape[1 - axis] % 4 == 0 else _nm_by_hand(w, axis),
     "wrong axis"),
    (lambda w, axis: _nm_by_hand(w, axis, stable=False), "lower index"),
    (lambda w, axis: np.abs(w) >= np.median(np.abs(w)), "exactly 2"),
])
def test_each_nm_bug_is_named(yours, words):
    r = S.check_nm_mask(yours, report=None)
    assert not r.passed
    assert any(words in h for h in r.hints), str(r)


def test_compression_check():
    assert S.check_compress_24(lambda w: compress_nm(w, axis=1), report=None).passed

    def swapped(w):  # idx1 | idx0 << 2: the nibble's two indices swapped
        v, m = compress_nm(w, axis=1)
        m = m.astype(np.int64)
        out = np.zeros_like(m)
        for g in range(4):
            nib = (m >> (4 * g)) & 0xF
            out |= (((nib & 3) << 2) | (nib >> 2)) << (4 * g)
        return v, out.astype(np.uint16)

    r = S.check_compress_24(swapped, report=None)
    assert not r.passed and any("idx0 | idx1 << 2" in h for h in r.hints)
    r = S.check_compress_24(lambda w: (compress_nm(w, axis=1)[0][:, ::-1], compress_nm(w, axis=1)[1]), report=None)
    assert not r.passed and any("order of their positions" in h for h in r.hints)


def test_spmv_inputs_have_empty_rows_and_odd_sizes():
    rng = np.random.default_rng(0)
    indptr, indices, data, x = S.spmv_inputs((37, 29, 0.3), rng)
    assert indptr.size == 38 and (np.diff(indptr) == 0).any() and x.size == 29
    assert np.all(data != 0)
