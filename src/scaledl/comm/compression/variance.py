"""How noisy the unbiased quantisers are: their exact variance, the papers' bounds, and a Monte Carlo check.

TernGrad (Wen et al., "TernGrad: Ternary Gradients to Reduce Communication in Distributed Deep Learning",
NeurIPS 2017), one tensor, no clipping, scaler ``s = ||g||_inf``: ``g~_k = s sign(g_k) b_k`` with
``b_k ~ Bernoulli(|g_k| / s)``. Then ``E[g~_k] = g_k`` and ``E[g~_k^2] = s^2 |g_k| / s = s |g_k|``, so

    E ||g~||^2       = ||g||_inf ||g||_1                      (the second moment; Wen et al.'s gradient
                                                                bound is a bound on this product)
    E ||g~ - g||^2   = ||g||_inf ||g||_1 - ||g||_2^2          (the variance, each element s |g_k| - g_k^2)
                    <= ||g||_inf ||g||_1  <=  sqrt(n) ||g||_2^2.

QSGD (Alistarh, Grubic, Li, Tomioka and Vojnovic, "QSGD: Communication-Efficient SGD via Gradient
Quantization and Encoding", NeurIPS 2017) with ``s`` levels: one level is ``u = ||v||_2 / s``;
``r_i = |v_i| / u`` is rounded to a neighbouring integer, up with probability ``p_i = r_i - floor(r_i)``, so

    E ||Q(v) - v||^2 = u^2 sum_i p_i (1 - p_i)                (exact)
                    <= min(n / s^2, sqrt(n) / s) ||v||_2^2     (their Lemma 3.1).

The bound follows from ``p(1 - p) <= 1/4`` and ``p(1 - p) <= p <= r_i`` with
``sum r_i = s ||v||_1 / ||v||_2 <= s sqrt(n)``. The second term is tight (all ``|v_i|`` equal, ``s`` much
less than ``sqrt(n)``: every ``p_i`` is small); the first is loose by a factor of 4 (``p_i = 1/2`` gives
``n / (4 s^2)``), because the paper bounds ``p(1 - p)`` by 1 there. TernGrad is QSGD with one level and the
max norm in place of the 2-norm, which is why its bound reads ``||g||_inf ||g||_1``.

>>> import numpy as np
>>> g = np.array([3.0, -1.0, 0.0, 1.0])          # ||g||_inf 3, ||g||_1 5, ||g||_2^2 11
>>> terngrad_variance(g), terngrad_variance_bound(g)
(4.0, 15.0)
>>> v = np.ones(4)                               # ||v||_2 = 2; with s = 1 each |v_i| / u is 1/2
>>> qsgd_variance(v, 1), qsgd_variance_bound(v, 1)   # 4 x 1/4 x 2^2 ; min(4, 2) x 4
(4.0, 8.0)
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from scaledl.comm.compression.base import Compressor, check_grad

__all__ = ["terngrad_variance", "terngrad_variance_bound", "qsgd_variance", "qsgd_variance_bound",
           "VarianceEstimate", "measured_variance", "mean_of_draws", "QuantiserError", "quantiser_error"]


def _vector(g) -> np.ndarray:
    return check_grad(g).astype(np.float64).ravel()


def _levels(levels) -> int:
    if isinstance(levels, bool) or not isinstance(levels, numbers.Integral) or levels < 1:
        raise ValueError(f"levels must be a positive integer (s in QSGD), got {levels!r}")
    return int(levels)


def _draws(draws, name: str = "draws") -> int:
    if isinstance(draws, bool) or not isinstance(draws, numbers.Integral) or draws < 1:
        raise ValueError(f"{name}: expected a positive integer number of draws, got {draws!r}")
    return int(draws)


def terngrad_variance(g) -> float:
    """Exact ``E ||T(g) - g||^2`` of TernGrad without clipping: ``||g||_inf ||g||_1 - ||g||_2^2``."""
    a = np.abs(_vector(g))
    if a.size == 0:
        return 0.0
    # float64 and non-negative by construction: max(a) >= a_k, so each term s a_k - a_k^2 >= 0
    return float(np.sum(a.max() * a - a * a))


def terngrad_variance_bound(g) -> float:
    """``||g||_inf ||g||_1``: TernGrad's second moment ``E ||T(g)||^2``, hence a bound on its variance."""
    a = np.abs(_vector(g))
    return float(a.max() * a.sum()) if a.size else 0.0


def qsgd_variance(v, levels: int) -> float:
    """Exact ``E ||Q_s(v) - v||^2`` of QSGD with ``levels`` = s: ``u^2 sum p_i (1 - p_i)``, ``u = ||v||_2 / s``."""
    s = _levels(levels)
    x = _vector(v)
    norm = math.sqrt(float(np.sum(x * x)))
    if norm == 0:
        return 0.0
    unit = norm / s
    r = np.abs(x) / unit
    p = r - np.floor(r)
    return float(unit * unit * np.sum(p * (1 - p)))


def qsgd_variance_bound(v, levels: int) -> float:
    """Alistarh et al.'s Lemma 3.1: ``min(n / s^2, sqrt(n) / s) ||v||_2^2`` for QSGD with ``levels`` = s."""
    s = _levels(levels)
    x = _vector(v)
    n = x.size
    return float(min(n / s**2, math.sqrt(n) / s) * np.sum(x * x))


@dataclass(frozen=True)
class VarianceEstimate:
    """Mean of ``||decode(compress(g)) - g||^2`` over ``draws`` independent messages, with its standard error."""
    mean: float
    stderr: float
    draws: int


def measured_variance(compressor: Compressor, g, draws: int, *, around=None) -> VarianceEstimate:
    """Monte Carlo ``E ||Q(g) - c||^2``: ``draws`` messages of ``compressor`` for the same ``g``.

    ``c`` is ``around`` if given (e.g. TernGrad's clipped gradient, which its messages average to), else
    ``g``. The compressor should keep no state between calls (no error feedback), so the draws are
    independent; each call advances its random generator.
    """
    if not isinstance(compressor, Compressor):
        raise TypeError(f"compressor: expected a Compressor (make_compressor(...)), got {type(compressor).__name__}")
    if compressor.error_feedback:
        raise ValueError(f"compressor: {compressor.name!r} keeps error feedback, so its messages are not "
                         "independent draws of one quantiser; expected terngrad, qsgd or stochastic_round")
    g = check_grad(g)
    n = _draws(draws)
    c = g.astype(np.float64) if around is None else np.asarray(around, np.float64).reshape(g.shape)
    sq = np.array([np.sum(np.square(compressor.compress(g).decode().astype(np.float64) - c)) for _ in range(n)])
    stderr = float(sq.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    return VarianceEstimate(float(sq.mean()), stderr, n)


def mean_of_draws(compressor: Compressor, g, checkpoints, *, around=None) -> dict[int, float]:
    """``||mean of the first N messages - c|| / ||c||`` for each N in ``checkpoints`` (one run of messages).

    For an unbiased quantiser the expected squared distance is ``variance / N``, so the relative distance
    shrinks like ``1 / sqrt(N)``; ``c`` is ``around`` if given, else ``g`` (see :func:`measured_variance`).
    """
    if not isinstance(compressor, Compressor):
        raise TypeError(f"compressor: expected a Compressor (make_compressor(...)), got {type(compressor).__name__}")
    g = check_grad(g)
    marks = [_draws(n, "checkpoints") for n in checkpoints]
    if not marks or marks != sorted(set(marks)):
        raise ValueError(f"checkpoints: expected increasing positive integers, got {list(checkpoints)!r}")
    c = g.astype(np.float64) if around is None else np.asarray(around, np.float64).reshape(g.shape)
    norm = float(np.linalg.norm(c))
    if norm == 0:
        raise ValueError("g: the reference vector is zero, so a relative distance is undefined")
    total = np.zeros(g.shape, np.float64)
    out = {}
    for i in range(1, marks[-1] + 1):
        total += compressor.compress(g).decode()
        if i in marks:
            out[i] = float(np.linalg.norm(total / i - c) / norm)
    return out


@dataclass(frozen=True)
class QuantiserError:
    """Squared error ``||Q(g) - g||^2`` of one quantiser on one gradient, each relative to ``||g||^2``.

    ``one_draw``: the first message of a fresh compressor (what a single ``compress`` shows); ``measured``
    and ``stderr``: the mean over ``draws`` further messages and its standard error; ``exact``: the
    expectation from the formulas above; ``bound``: the paper's bound; ``bias``: ``||E Q(g) - g||^2``, the
    part clipping adds (TernGrad clips, then quantises ``clip(g)`` without bias), 0 when unbiased. For a
    clipped TernGrad ``exact`` and ``bound`` are the variance around ``clip(g)`` and Wen et al.'s
    ``||clip(g)||_inf ||clip(g)||_1``, each plus ``bias``: the error against ``g`` is the noise plus the shift.
    """
    one_draw: float
    measured: float
    stderr: float
    exact: float
    bound: float
    bias: float
    draws: int

    def mean_distance(self, draws: int) -> float:
        """Expected ``||mean of draws messages - g|| / ||g||`` (root mean square): the noise averages down as
        ``1 / draws``, the bias does not, ``sqrt((exact - bias) / draws + bias)``."""
        n = _draws(draws)
        return math.sqrt((self.exact - self.bias) / n + self.bias)


def quantiser_error(name: str, g, draws: int, *, seed: int = 0, **options) -> QuantiserError:
    """:class:`QuantiserError` of ``make_compressor(name, seed=seed, **options)`` on ``g`` (TernGrad or QSGD).

    Raises:
        ValueError: ``name`` other than "terngrad" or "qsgd", a zero ``g``, bad ``draws`` or options.
    """
    from scaledl.comm.compression import make_compressor

    if name not in ("terngrad", "qsgd"):
        raise ValueError(f"name: expected 'terngrad' or 'qsgd' (the quantisers with a published variance "
                         f"bound), got {name!r}")
    g = check_grad(g)
    n = _draws(draws)
    g64 = g.astype(np.float64)
    norm2 = float(np.sum(g64 * g64))
    if norm2 == 0:
        raise ValueError("g: expected a non-zero gradient (errors are reported relative to ||g||^2)")
    c = make_compressor(name, seed=seed, **options)
    if name == "terngrad":
        center = c.clipped(g)
        bias = float(np.sum((center - g64) ** 2))
        exact, bound = terngrad_variance(center) + bias, terngrad_variance_bound(center) + bias
    else:
        bias = 0.0
        exact, bound = qsgd_variance(g, c.levels), qsgd_variance_bound(g, c.levels)
    one = float(np.sum((c.compress(g).decode().astype(np.float64) - g64) ** 2))
    est = measured_variance(c, g, n)  # the same compressor's next draws: independent of the first
    return QuantiserError(one / norm2, est.mean / norm2, est.stderr / norm2, exact / norm2, bound / norm2,
                          bias / norm2, n)
