"""Connectionist temporal classification (CTC) loss and its gradient, by forward-backward in log space.

CTC (Graves, Fernandez, Gomez, Schmidhuber, "Connectionist Temporal Classification: Labelling Unsegmented
Sequence Data with Recurrent Neural Networks", ICML 2006) scores a label sequence ``l`` against ``T`` frames of
per-class log-probabilities without saying which frame emits which label: it sums the probability of every
*alignment*, a path of one class per frame that reads ``l`` once repeats are merged and blanks removed. The
sum runs over the extended sequence ``l'`` (a blank before, between and after the labels, ``2 |l| + 1``
states):

* forward: ``alpha_t(s) = (alpha_{t-1}(s) + alpha_{t-1}(s-1) [+ alpha_{t-1}(s-2)]) y_t(l'_s)``, the skip
  allowed when ``l'_s`` is not blank and differs from ``l'_{s-2}`` (two equal labels in a row need a
  blank between them);
* ``p(l | x) = alpha_T(|l'|) + alpha_T(|l'| - 1)`` (ending on the last label or the trailing blank);
* backward: ``beta_t(s)``, the probability of the frames after ``t`` given state ``s`` at ``t`` (here without
  ``y_t``, so ``alpha_t(s) beta_t(s)`` is the probability of all paths through ``s`` at ``t``).

Baidu's warp-ctc runs the same recursion in parallel on a GPU; :mod:`scaledl.perf.warp_ctc` holds what its
README measured. Everything here is carried as logarithms, which keeps long sequences from underflowing; the
log-sum-exp uses :mod:`scaledl.nn.ops`'s ``exp`` and ``log`` (not NumPy's, whose last bit depends on the CPU),
so a model trained with this loss learns the same weights on every machine. A state that no path reaches is
``-inf``, and a label sequence no alignment can produce (it needs more frames than ``T``: one per label plus
one blank between each pair of equal neighbours) has loss ``+inf`` and a zero gradient, never NaN.

The gradient is with respect to the *log-probabilities*: ``d nll / d log y_t(k) = -sum_{s: l'_s = k}
alpha_t(s) beta_t(s) / p``, minus the posterior probability that frame ``t`` emits ``k``. When the
log-probabilities are a log-softmax of logits ``z``, each row of it sums to -1 and the gradient with respect
to ``z`` is ``softmax(z) + grad``.

>>> import numpy as np
>>> log_probs = np.log(np.full((3, 2), 0.5))      # 3 frames, blank and one label, each with probability 1/2
>>> nll, grad = ctc_loss(log_probs, [1])
>>> float(np.exp(-nll)) * 2**3                    # paths that read "1": 1bb b1b bb1 11b b11 111, not bbb 1b1
6.0
>>> grad[:, 1]                                    # minus P(frame t emits the label): 3/6, 4/6, 3/6
array([-0.5       , -0.66666667, -0.5       ])
>>> ctc_loss(log_probs, [1, 1, 1])[0]             # "111" needs 5 frames
inf
"""

from __future__ import annotations

import numpy as np

from scaledl.nn import ops


def _logaddexp(a, b):
    """``log(e**a + e**b)`` element-wise in float64, ``-inf`` where both are; CPU-independent (``ops``)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    m = np.maximum(a, b)
    d = np.minimum(a, b) - np.where(m > -np.inf, m, 0.0)  # <= 0, -inf where either is -inf (never inf - inf)
    return m + ops.log(1.0 + ops.exp(d))


def _check(log_probs, labels, blank):
    lp = np.asarray(log_probs)
    if lp.ndim != 2 or lp.shape[0] < 1 or lp.shape[1] < 2:
        raise ValueError(f"log_probs must have shape (T, C) with T >= 1 frames and C >= 2 classes, got shape "
                         f"{lp.shape}")
    if not np.issubdtype(lp.dtype, np.floating):
        raise TypeError(f"log_probs must be a floating-point array, got dtype {lp.dtype}")
    lp = lp.astype(np.float64)
    if np.any(np.isnan(lp) | (lp == np.inf)):
        raise ValueError("log_probs must be finite or -inf (probability 0); it holds NaN or +inf")
    C = lp.shape[1]
    if isinstance(blank, bool) or not isinstance(blank, (int, np.integer)) or not 0 <= blank < C:
        raise ValueError(f"blank must be a class index in [0, {C}), got {blank!r}")
    lab = np.asarray(labels)
    if lab.ndim != 1 or (lab.size and not np.issubdtype(lab.dtype, np.integer)):
        raise TypeError(f"labels must be a 1-D sequence of integer class indices, got {labels!r}")
    lab = lab.astype(np.int64)
    bad = lab[(lab < 0) | (lab >= C) | (lab == blank)]
    if bad.size:
        raise ValueError(f"labels must be class indices in [0, {C}) other than blank={blank}, got {int(bad[0])}")
    return lp, lab


def min_frames(labels) -> int:
    """Frames the shortest alignment of ``labels`` needs: one per label, plus a blank between equal neighbours.

    >>> min_frames([1, 1, 2]), min_frames([])
    (4, 0)
    """
    lab = np.asarray(labels)
    return int(lab.size + np.count_nonzero(lab[1:] == lab[:-1]))


def ctc_loss(log_probs, labels, *, blank: int = 0) -> tuple[float, np.ndarray]:
    """Negative log-likelihood ``-log p(labels | x)`` under CTC, and its gradient with respect to ``log_probs``.

    Args:
        log_probs: ``(T, C)`` log-probabilities (usually a log-softmax over ``C`` classes, blank included).
        labels: the target, class indices without blanks (may be empty).
        blank: the blank's class index.

    Returns:
        ``(nll, grad)``: a float (``inf`` when no alignment fits in ``T`` frames) and a float64 ``(T, C)``
        array (zeros in that case).

    Raises:
        ValueError / TypeError: a bad shape, dtype, label, blank, or NaN / +inf log-probabilities.
    """
    lp, lab = _check(log_probs, labels, blank)
    T = lp.shape[0]
    ext = np.full(2 * lab.size + 1, blank, np.int64)  # l': blank, l1, blank, l2, ..., blank
    ext[1::2] = lab
    S = ext.size
    skip = np.zeros(S, bool)  # may state s be entered from s - 2?
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    emit = lp[:, ext]  # (T, S): log y_t(l'_s)
    neg = np.full(2, -np.inf)

    alpha = np.full((T, S), -np.inf)
    alpha[0, :2] = emit[0, :2]
    for t in range(1, T):
        a = alpha[t - 1]
        from_prev = np.concatenate((neg[:1], a))[:S]  # alpha_{t-1}(s - 1)
        from_skip = np.where(skip, np.concatenate((neg, a))[:S], -np.inf)  # alpha_{t-1}(s - 2)
        alpha[t] = _logaddexp(_logaddexp(a, from_prev), from_skip) + emit[t]
    log_p = _logaddexp(alpha[T - 1, S - 1], alpha[T - 1, S - 2]) if S > 1 else alpha[T - 1, 0]
    if log_p == -np.inf:
        return float("inf"), np.zeros_like(lp)

    beta = np.full((T, S), -np.inf)
    beta[T - 1, S - 2:] = 0.0
    for t in range(T - 2, -1, -1):
        e = beta[t + 1] + emit[t + 1]
        to_next = np.concatenate((e[1:], neg[:1]))  # from state s + 1
        to_skip = np.concatenate((np.where(skip, e, -np.inf)[2:], neg))[:S]  # from s + 2, if it allows the skip
        beta[t] = _logaddexp(_logaddexp(e, to_next), to_skip)

    posterior = ops.exp(alpha + beta - log_p)  # (T, S): probability of being in state s at frame t
    grad = np.zeros_like(lp)
    np.add.at(grad.T, ext, -posterior.T)  # states sharing a class (every blank) add up
    return float(-log_p), grad


def collapse(path, blank: int = 0) -> list[int]:
    """CTC's many-to-one map from a path (one class per frame) to labels: merge repeats, then drop blanks.

    >>> collapse([0, 1, 1, 0, 1, 2, 2]), collapse([1, 1, 1])
    ([1, 1, 2], [1])
    """
    merged = [int(k) for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
    return [k for k in merged if k != blank]


def ctc_brute_force(log_probs, labels, *, blank: int = 0, max_paths: int = 100_000) -> tuple[float, np.ndarray, int]:
    """The CTC loss by definition: enumerate all ``C**T`` paths and add up those that collapse to ``labels``.

    Returns ``(nll, grad, n_alignments)`` like :func:`ctc_loss` plus the number of paths that read ``labels``.
    Exponential in ``T``: for checking the recursion on tiny cases only (``C**T <= max_paths``).
    """
    import itertools

    lp, lab = _check(log_probs, labels, blank)
    T, C = lp.shape
    if C ** T > max_paths:
        raise ValueError(f"log_probs of shape {lp.shape} has C**T = {C ** T} paths, more than max_paths={max_paths}")
    target, p, emits, n = list(lab), 0.0, np.zeros((T, C)), 0
    for path in itertools.product(range(C), repeat=T):
        if collapse(path, blank) == target:
            prob = float(ops.exp(lp[np.arange(T), path].sum()))
            p, n = p + prob, n + 1
            emits[np.arange(T), path] += prob
    if p == 0.0:
        return float("inf"), np.zeros_like(lp), n
    return float(-ops.log(p)), -emits / p, n
