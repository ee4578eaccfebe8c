"""CTC loss against brute-force enumeration of every alignment, finite differences, and the impossible case."""

import itertools
import warnings

import numpy as np
import pytest

from scaledl.nn import ctc_loss
from scaledl.nn.ctc import min_frames


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def collapse(path, blank):
    merged = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
    return [k for k in merged if k != blank]


def brute_force(log_probs, labels, blank):
    """p(labels) and the per-frame class posteriors, by enumerating all C^T paths."""
    T, C = log_probs.shape
    p, emits = 0.0, np.zeros((T, C))
    for path in itertools.product(range(C), repeat=T):
        if collapse(path, blank) == list(labels):
            prob = np.exp(sum(log_probs[t, k] for t, k in enumerate(path)))
            p += prob
            emits[np.arange(T), path] += prob
    return p, emits


CASES = [  # (T, C, labels, blank): repeats, skips, an empty target, a blank that is not class 0
    (1, 2, [1], 0), (3, 2, [1], 0), (4, 3, [1, 2], 0), (4, 3, [1, 1], 0), (5, 3, [2, 1, 2], 0),
    (5, 3, [1, 1, 1], 0), (3, 3, [], 0), (4, 3, [0, 1], 2), (5, 4, [3, 1, 3, 3], 0), (6, 3, [1, 2, 1], 0),
]


@pytest.mark.parametrize("T, C, labels, blank", CASES)
def test_matches_brute_force(T, C, labels, blank):
    lp = log_softmax(np.random.default_rng(T * 10 + C).standard_normal((T, C)) * 2)
    nll, grad = ctc_loss(lp, labels, blank=blank)
    p, emits = brute_force(lp, labels, blank)
    if p == 0:  # too few frames for this target (case (5, 3, [1, 1, 1]) needs exactly 5: feasible)
        assert nll == np.inf
        return
    # both are sums of at most 3^6 positive terms in float64: agreement to ~1e-13 relative
    assert nll == pytest.approx(-np.log(p), rel=1e-12)
    np.testing.assert_allclose(grad, -emits / p, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(grad.sum(axis=1), -1.0, rtol=1e-12)  # each frame emits exactly one class


@pytest.mark.parametrize("labels", [[1, 2, 2, 3], [3], [1, 2, 1, 2, 1]])
def test_gradient_matches_finite_differences(labels):
    rng = np.random.default_rng(len(labels))
    lp = log_softmax(rng.standard_normal((9, 4)))
    _, grad = ctc_loss(lp, labels)
    h = 1e-6  # central differences in float64: truncation O(h^2) ~ 1e-12, rounding O(eps / h) ~ 1e-10
    fd = np.zeros_like(lp)
    for idx in np.ndindex(lp.shape):
        up, down = lp.copy(), lp.copy()
        up[idx] += h
        down[idx] -= h
        fd[idx] = (ctc_loss(up, labels)[0] - ctc_loss(down, labels)[0]) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-8)


def test_logit_gradient_is_softmax_plus_grad():
    z = np.random.default_rng(0).standard_normal((7, 3))
    _, g = ctc_loss(log_softmax(z), [1, 2])
    h, fd = 1e-6, np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        up, down = z.copy(), z.copy()
        up[idx] += h
        down[idx] -= h
        fd[idx] = (ctc_loss(log_softmax(up), [1, 2])[0] - ctc_loss(log_softmax(down), [1, 2])[0]) / (2 * h)
    np.testing.assert_allclose(np.exp(log_softmax(z)) + g, fd, rtol=0, atol=1e-8)


@pytest.mark.parametrize("T, labels", [(2, [1, 1]), (4, [1, 1, 1]), (2, [1, 2, 1]), (1, [2, 2])])
def test_impossible_alignment_is_inf_not_nan(T, labels):
    lp = log_softmax(np.random.default_rng(1).standard_normal((T, 3)))
    assert T < min_frames(labels)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        nll, grad = ctc_loss(lp, labels)
    assert nll == np.inf and np.array_equal(grad, np.zeros_like(lp))


def test_exactly_enough_frames_and_zero_probabilities():
    lp = np.log(np.full((3, 2), 0.5))
    nll, _ = ctc_loss(lp, [1, 1])  # one path: 1 b 1
    assert nll == pytest.approx(3 * np.log(2), rel=1e-15)
    lp = np.array([[0.0, -np.inf], [-np.inf, 0.0]])  # frame 0 surely blank, frame 1 surely label 1
    nll, grad = ctc_loss(lp, [1])
    assert nll == 0.0 and np.array_equal(grad, [[-1.0, 0.0], [0.0, -1.0]])
    assert ctc_loss(lp, [1, 1])[0] == np.inf


def test_long_sequences_do_not_underflow():
    lp = log_softmax(np.random.default_rng(2).standard_normal((2000, 5)))  # p ~ 1e-900: zero in float64
    nll, grad = ctc_loss(lp, [1, 2, 3, 4] * 50)
    assert np.isfinite(nll) and nll > 745 and np.all(np.isfinite(grad))


def test_errors():
    lp = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"log_probs must have shape \(T, C\).*got shape \(4,\)"):
        ctc_loss(np.zeros(4), [1])
    with pytest.raises(TypeError, match="log_probs must be a floating-point array, got dtype int64"):
        ctc_loss(np.zeros((4, 3), np.int64), [1])
    with pytest.raises(ValueError, match="log_probs must be finite or -inf"):
        ctc_loss(np.full((4, 3), np.nan), [1])
    with pytest.raises(ValueError, match=r"labels must be class indices in \[0, 3\) other than blank=0, got 0"):
        ctc_loss(lp, [1, 0])
    with pytest.raises(ValueError, match=r"labels must be class indices in \[0, 3\) other than blank=0, got 3"):
        ctc_loss(lp, [3])
    with pytest.raises(ValueError, match=r"blank must be a class index in \[0, 3\), got 5"):
        ctc_loss(lp, [1], blank=5)
    with pytest.raises(TypeError, match="labels must be a 1-D sequence of integer class indices"):
        ctc_loss(lp, [1.5])


def test_logaddexp_matches_numpy_and_handles_minus_inf():
    """The CPU-independent log-sum-exp (ops.exp / ops.log) agrees with NumPy's within a few float64 ulp."""
    from scaledl.nn.ctc import _logaddexp

    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(1000) * 30, rng.standard_normal(1000) * 30
    assert np.allclose(_logaddexp(a, b), np.logaddexp(a, b), rtol=8 * np.finfo(np.float64).eps,
                       atol=8 * np.finfo(np.float64).eps)  # log(1 + x) without log1p: absolute error ~ eps near 0
    with np.errstate(all="raise"):
        got = _logaddexp(np.array([-np.inf, -np.inf, 0.0]), np.array([-np.inf, 1.5, -np.inf]))
    assert got[0] == -np.inf and got[1] == 1.5 and got[2] == 0.0


def test_package_brute_force_matches_the_tests_own():
    from scaledl.nn.ctc import collapse, ctc_brute_force

    lp = log_softmax(np.random.default_rng(7).standard_normal((5, 3)) * 2)
    nll, grad, n = ctc_brute_force(lp, [1, 2])
    p, emits = brute_force(lp, [1, 2], 0)
    assert nll == pytest.approx(-np.log(p), rel=1e-12) and n > 0
    np.testing.assert_allclose(grad, -emits / p, rtol=1e-10, atol=1e-14)
    assert ctc_brute_force(lp[:2], [1, 1]) [0] == np.inf and collapse([2, 2, 0, 2]) == [2, 2]
    with pytest.raises(ValueError, match="C\\*\\*T = 243 paths, more than max_paths=100"):
        ctc_brute_force(lp, [1], max_paths=100)
