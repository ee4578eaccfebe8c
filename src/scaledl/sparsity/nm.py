"""N:M compression: the kept values plus their positions packed as NVIDIA's sparse tensor cores read them.

The format, for 2:4 (Mishra et al. 2021, "Accelerating Sparse Deep Neural Networks", arXiv:2104.08378):

* ``values``: the ``n`` kept entries of every group of ``m`` consecutive entries along the reduction axis, in
  ascending position order, so the axis shrinks from ``K`` to ``K n / m`` (half for 2:4);
* ``metadata``: each kept value's position in its group as a ``b``-bit index (``b = 2`` for ``m = 4``),
  packed little-endian into 16-bit words: index ``j`` of a row sits in bits ``b (j mod 8) ...`` of word
  ``j // 8``. For 2:4 a group's two indices make one nibble, ``idx0 | idx1 << 2`` with ``idx0 < idx1``
  (keeping positions 0 and 1 is ``0b0100``, 2 and 3 is ``0b1110``), and a 16-bit word holds four groups,
  i.e. 16 dense columns; a byte holds two groups.

This is the logical metadata matrix (``M x K/16`` int16 words for an ``M x K`` half-precision operand)
that PyTorch builds in ``torch/sparse/_semi_structured_conversions.py`` (``meta_4 = idxs0 | idxs1 << 2``,
four nibbles per int16, the first group in the low bits) before handing it to CUTLASS; the tests check
that table nibble by nibble. Where a group has fewer than two non-zeros, any two positions covering them
are valid: this module keeps the lowest-index zeros (PyTorch picks other pairs; both decode to the same
matrix). Not implemented here: CUTLASS then *reorders* the words in memory (its
``ColumnMajorInterleaved<2>`` layout, ``reorder_meta()`` in ``tools/util/include/cutlass/util/
host_reorder.h``) so that each thread of a warp finds its words together; that permutation changes where
words live, not what they say. The int8 format (32-bit words, 8 groups each) is not modelled either. For
other ``m`` the same scheme is used with ``b = ceil(log2 m)`` bits and ``16 // b`` indices per word (no
hardware reads those).

A row whose length ``m`` does not divide is padded with zeros when ``pad=True``; a final word that is not
full is padded with zero bits.

>>> import numpy as np
>>> w = np.array([[0.0, 3.0, 0.0, -1.0, 2.0, 5.0, 0.0, 0.0]])
>>> values, meta = compress_nm(w)
>>> values
array([[ 3., -1.,  2.,  5.]])
>>> [hex(int(x)) for x in meta[0]]  # group 0 keeps (1, 3): 0b1101; group 1 keeps (0, 1): 0b0100
['0x4d']
>>> np.array_equal(decompress_nm(values, meta, w.shape), w)
True
"""

from __future__ import annotations

import numpy as np

from scaledl.sparsity.masks import check_nm, check_weights, nm_groups, nm_positions

WORD_BITS = 16  # the sparse tensor cores' metadata word for 16-bit operands (fp16, bf16)


def index_bits(m: int) -> int:
    """Bits per position index within a group of ``m``: 2 for 2:4 (the hardware's), ``ceil(log2 m)`` else."""
    return max(1, (int(m) - 1).bit_length())


def indices_per_word(m: int) -> int:
    """Position indices packed in one 16-bit metadata word (8 for 2:4: four groups of two)."""
    return WORD_BITS // index_bits(m)


def metadata_words(K: int, n: int = 2, m: int = 4) -> int:
    """16-bit metadata words per row of ``K`` dense entries (``K`` rounded up to whole groups).

    >>> metadata_words(16), metadata_words(64), metadata_words(18)
    (1, 4, 2)
    """
    kept = -(-int(K) // m) * n
    return -(-kept // indices_per_word(m))


def pack_indices(idx: np.ndarray, m: int) -> np.ndarray:
    """Pack the last axis of ``idx`` (integers in [0, m)) into little-endian uint16 words."""
    b, per = index_bits(m), indices_per_word(m)
    count = idx.shape[-1]
    words = -(-count // per)
    padded = np.zeros(idx.shape[:-1] + (words * per,), np.uint32)
    padded[..., :count] = idx
    shifts = (np.arange(per, dtype=np.uint32) * b)
    packed = (padded.reshape(idx.shape[:-1] + (words, per)) << shifts).sum(axis=-1)
    return packed.astype(np.uint16)


def unpack_indices(words: np.ndarray, count: int, m: int) -> np.ndarray:
    """The first ``count`` indices held in the last axis of the uint16 ``words``."""
    b, per = index_bits(m), indices_per_word(m)
    shifts = np.arange(per, dtype=np.uint32) * b
    idx = (words.astype(np.uint32)[..., None] >> shifts) & ((1 << b) - 1)
    return idx.reshape(words.shape[:-1] + (-1,))[..., :count].astype(np.int64)


def compress_nm(w, n: int = 2, m: int = 4, *, axis: int = -1, pad: bool = False):
    """Keep the ``n`` largest ``|w|`` of every ``m`` along ``axis``; return ``(values, metadata)``.

    Args:
        w: the weights (need not be N:M sparse yet: the smaller entries are dropped, as :func:`nm_mask`).
        n, m: N:M (2:4 by default). axis: the reduction axis, along which groups run.
        pad: allow a length ``m`` does not divide (zero padding; pass the same flag to decompress).

    Returns:
        ``values``: ``w``'s dtype and shape with ``axis`` of length ``ceil(K / m) * n``;
        ``metadata``: uint16, ``w``'s shape with ``axis`` of length :func:`metadata_words`.

    Raises:
        ValueError: as :func:`~scaledl.sparsity.masks.nm_mask`.
    """
    a = check_weights(w)
    n, m = check_nm(n, m)
    pos = nm_positions(a, n, m, axis=axis, pad=pad)  # (..., G, n), axis moved last
    groups, _ = nm_groups(a, m, axis, pad)  # (..., G, m)
    values = np.take_along_axis(groups, pos, axis=-1)
    values = values.reshape(values.shape[:-2] + (-1,))
    meta = pack_indices(pos.reshape(pos.shape[:-2] + (-1,)), m)
    return np.moveaxis(values, -1, axis), np.moveaxis(meta, -1, axis)


def decompress_nm(values, metadata, shape, n: int = 2, m: int = 4, *, axis: int = -1,
                  pad: bool = False) -> np.ndarray:
    """The dense array of ``shape`` that :func:`compress_nm` turned into ``(values, metadata)``.

    Raises:
        ValueError: shapes that do not match ``shape`` and N:M, or metadata whose positions are not
            ascending within a group or not below ``m``.
    """
    n, m = check_nm(n, m)
    shape = tuple(int(s) for s in shape)
    if not isinstance(axis, (int, np.integer)) or not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis={axis!r} is out of range for shape {shape}")
    K = shape[axis]
    if K % m and not pad:
        raise ValueError(f"shape[{axis}] = {K} is not a multiple of m={m}; pass pad=True if it was padded")
    G = -(-K // m)
    moved = shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
    v = np.moveaxis(np.asarray(values), axis, -1)
    if v.shape != moved + (G * n,):
        raise ValueError(f"values: expected shape with axis {axis} of length {G * n} (others {moved}), "
                         f"got {np.shape(values)}")
    meta = np.moveaxis(np.asarray(metadata), axis, -1)
    if meta.dtype != np.uint16 or meta.shape != moved + (metadata_words(K, n, m),):
        raise ValueError(f"metadata: expected uint16 with axis {axis} of length {metadata_words(K, n, m)}, "
                         f"got {meta.dtype} of shape {np.shape(metadata)}")
    pos = unpack_indices(meta, G * n, m).reshape(moved + (G, n))
    if (pos >= m).any() or (np.diff(pos, axis=-1) <= 0).any():
        raise ValueError(f"metadata: positions must be ascending within each group and below m={m}")
    dense = np.zeros(moved + (G, m), v.dtype)
    np.put_along_axis(dense, pos, v.reshape(moved + (G, n)), axis=-1)
    dense = dense.reshape(moved + (G * m,))[..., :K]
    return np.moveaxis(dense, -1, axis)
