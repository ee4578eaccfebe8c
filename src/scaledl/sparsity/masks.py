"""Pruning masks with an exact count: magnitude (per tensor, row or column), N:M, random, and top-k of a score.

Every mask here keeps an exact number of entries, never "everything above a threshold": a threshold keeps
all the ties at the boundary, so the density drifts with the data. The rules, fixed because chapters, labs
and tests rely on them:

* a group of ``n`` entries pruned to ``sparsity`` keeps exactly ``n - round(sparsity * n)`` (Python's
  ``round``, which rounds half to even: 5 entries at 50 % keep 3);
* ties keep the lower flat index (a stable sort of the negated score);
* N:M keeps the ``n`` largest magnitudes of every ``m`` consecutive entries along ``axis``, the reduction
  axis of the layer (ties again to the lower index).

>>> import numpy as np
>>> w = np.array([[0.1, -3.0, 2.0, 0.5], [1.0, 1.0, -1.0, 0.2]])
>>> magnitude_mask(w, 0.5).astype(int)
array([[0, 1, 1, 0],
       [1, 1, 0, 0]])
>>> nm_mask(w, 2, 4, axis=1).astype(int)
array([[0, 1, 1, 0],
       [1, 1, 0, 0]])
"""

from __future__ import annotations

import math

import numpy as np

PER = ("tensor", "row", "column")


# --------------------------------------------------------------------------------------------- checks
def check_sparsity(sparsity, name: str = "sparsity") -> float:
    """``sparsity`` as a float in [0, 1), or a TypeError/ValueError naming it (1 would prune everything)."""
    if isinstance(sparsity, bool) or not isinstance(sparsity, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number in [0, 1), got {sparsity!r} ({type(sparsity).__name__})")
    if not (0 <= sparsity < 1):
        raise ValueError(f"{name} must be in [0, 1) (the fraction of weights removed), got {sparsity!r}")
    return float(sparsity)


def check_weights(w, name: str = "w") -> np.ndarray:
    """``w`` as a finite real NumPy array, or a TypeError/ValueError naming it."""
    a = np.asarray(w)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {a.dtype}")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{name} must be finite, got {a[tuple(bad)]} at index {tuple(int(i) for i in bad)}")
    return a


def check_nm(n, m) -> tuple[int, int]:
    """``(n, m)`` as ints with 1 <= n <= m, or an error naming the bad one."""
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if n > m:
        raise ValueError(f"n={n} > m={m}: a group of m={m} entries cannot keep n={n} of them")
    return int(n), int(m)


def kept_count(size: int, sparsity: float) -> int:
    """How many of ``size`` entries survive pruning to ``sparsity``: ``size - round(sparsity * size)``.

    >>> kept_count(10, 0.3), kept_count(5, 0.5), kept_count(7, 0.0)
    (7, 3, 7)
    """
    return int(size) - int(round(check_sparsity(sparsity) * size))


# ---------------------------------------------------------------------------------------------- top-k
def top_k_mask(scores: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the ``k`` largest ``scores`` (flattened order; ties keep the lower flat index)."""
    flat = np.asarray(scores).ravel()
    if not 0 <= k <= flat.size:
        raise ValueError(f"k must be in [0, {flat.size}], got {k!r}")
    order = np.argsort(-flat, kind="stable")  # stable: among equal scores the lower index comes first
    keep = np.zeros(flat.size, bool)
    keep[order[:k]] = True
    return keep.reshape(np.shape(scores))


def score_mask(scores, sparsity: float, *, per: str = "tensor") -> np.ndarray:
    """Keep the highest ``scores`` at exactly ``sparsity`` in each group (``per`` tensor, row or column).

    The engine behind :func:`magnitude_mask`; any saliency (OBD, random) can be passed as ``scores``.
    """
    s = check_weights(scores, "scores")
    sparsity = check_sparsity(sparsity)
    if per not in PER:
        raise ValueError(f"per={per!r} is not a pruning granularity; expected one of {PER}")
    if per == "tensor":
        return top_k_mask(s, kept_count(s.size, sparsity))
    if s.ndim != 2:
        raise ValueError(f"per={per!r} needs a 2-D weight matrix, got shape {s.shape}")
    rows = s if per == "row" else s.T
    mask = np.stack([top_k_mask(r, kept_count(r.size, sparsity)) for r in rows]) if rows.shape[0] else \
        np.zeros(rows.shape, bool)
    return mask if per == "row" else mask.T


def magnitude_mask(w, sparsity: float, *, per: str = "tensor") -> np.ndarray:
    """Boolean mask keeping the largest ``|w|``: exactly ``n - round(sparsity * n)`` of each group of ``n``.

    Args:
        w: the weights (any shape for ``per="tensor"``, 2-D for ``"row"`` and ``"column"``).
        sparsity: the fraction removed, in [0, 1).
        per: ``"tensor"`` (one group), ``"row"`` (each row pruned to the same sparsity) or ``"column"``.

    Raises:
        ValueError: sparsity outside [0, 1), non-finite weights, an unknown ``per``, or a row/column
            granularity on an array that is not 2-D.
        TypeError: a sparsity that is not a number, or weights that are not real numbers.

    >>> magnitude_mask(np.array([3.0, -1.0, 0.5, 1.0]), 0.5)  # |-1| ties |1|: the lower index is kept
    array([ True,  True, False, False])
    """
    return score_mask(np.abs(check_weights(w)), sparsity, per=per)


def random_mask(shape, sparsity: float, *, seed: int = 0) -> np.ndarray:
    """The baseline: exactly ``n - round(sparsity * n)`` entries kept, chosen uniformly at random."""
    shape = tuple(np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
    return top_k_mask(np.random.default_rng(seed).random(shape), kept_count(math.prod(shape), sparsity))


def density(mask_or_w) -> float:
    """Fraction of non-zero (True) entries.

    >>> density(np.array([1.0, 0.0, 0.0, 2.0]))
    0.5
    """
    a = np.asarray(mask_or_w)
    return float(np.count_nonzero(a) / a.size) if a.size else 0.0


# ------------------------------------------------------------------------------------------------ N:M
def nm_groups(w, m: int, axis: int, pad: bool) -> tuple[np.ndarray, int]:
    """``w`` moved so that ``axis`` is last, zero-padded (if allowed) and reshaped to ``(..., K/m, m)``.

    Returns ``(groups, K)`` with ``K`` the original length of ``axis``.

    Raises:
        ValueError: ``axis`` out of range, or its length not a multiple of ``m`` while ``pad`` is False.
    """
    a = np.asarray(w)
    if not isinstance(axis, (int, np.integer)) or not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis={axis!r} is out of range for an array of shape {a.shape}")
    a = np.moveaxis(a, axis, -1)
    K = a.shape[-1]
    if K % m:
        if not pad:
            raise ValueError(f"axis {axis} has length {K}, not a multiple of m={m}; pass pad=True to pad "
                             f"it with zeros to {K + (-K) % m}")
        a = np.concatenate([a, np.zeros(a.shape[:-1] + ((-K) % m,), a.dtype)], axis=-1)
    return a.reshape(a.shape[:-1] + (a.shape[-1] // m, m)), K


def nm_positions(w, n: int = 2, m: int = 4, *, axis: int = -1, pad: bool = False) -> np.ndarray:
    """Positions (0..m-1, ascending) of the ``n`` kept entries of every group: shape ``(..., K/m, n)``,
    ``axis`` moved last. Ties keep the lower position."""
    n, m = check_nm(n, m)
    groups, _ = nm_groups(np.abs(check_weights(w)), m, axis, pad)
    order = np.argsort(-groups, axis=-1, kind="stable")[..., :n]  # stable: ties keep the lower index
    return np.sort(order, axis=-1)


def nm_mask(w, n: int = 2, m: int = 4, *, axis: int = -1, pad: bool = False) -> np.ndarray:
    """Boolean mask keeping the ``n`` largest ``|w|`` of every ``m`` consecutive entries along ``axis``.

    For 2:4 the two largest magnitudes are also the pair with the largest sum of magnitudes, the rule of
    NVIDIA's ASP (Mishra et al. 2021). ``axis`` should be the layer's reduction axis: 0 for a
    :class:`~scaledl.nn.Dense` weight (``x @ W``), the last one for a row-major ``M x K`` operand as the
    sparse tensor cores read it.

    Args:
        w: weights. n, m: keep ``n`` of every ``m`` (2:4 by default). axis: the grouping axis.
        pad: allow a length that ``m`` does not divide (the last group is padded with zeros, which lose
            every tie, so it keeps ``n`` real entries when it has that many).

    Raises:
        ValueError: ``n > m``, non-positive n or m, non-finite weights, bad ``axis``, or a length ``m`` does
            not divide without ``pad``.

    >>> nm_mask(np.array([0.0, 5.0, 0.0, 5.0, 1.0]), 1, 2, pad=True).astype(int)
    array([0, 1, 0, 1, 1])
    """
    a = check_weights(w)
    pos = nm_positions(a, n, m, axis=axis, pad=pad)
    groups = np.zeros(pos.shape[:-1] + (m,), bool)
    np.put_along_axis(groups, pos, True, axis=-1)
    moved_shape = np.moveaxis(a, axis, -1).shape
    flat = groups.reshape(groups.shape[:-2] + (-1,))[..., :moved_shape[-1]]
    return np.moveaxis(flat, -1, axis)
