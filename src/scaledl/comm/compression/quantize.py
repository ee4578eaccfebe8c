"""Quantizing compressors: 1-bit SGD, TernGrad, QSGD and k-bit stochastic rounding.

- 1-bit SGD (Seide, Fu, Droppo, Li and Yu, "1-Bit Stochastic Gradient Descent and its Application to
  Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014): send the sign of g + r, decoded per
  column as the mean of that column's non-negative or of its negative entries; keep the error
  r <- g + r - decoded (error feedback). Biased, which is why it needs the feedback. A tensor's columns are
  its last axis (a vector is one column).
- TernGrad (Wen, Xu, Yan, Wu, Wang, Chen and Li, "TernGrad: Ternary Gradients to Reduce Communication in
  Distributed Deep Learning", NeurIPS 2017): g~ = s sign(g) b, s = max|g| per tensor (layer-wise),
  b ~ Bernoulli(|g|/s); unbiased. Its gradient clipping to 2.5 standard deviations (``clip_sigmas``) comes
  first and trades a little bias for a smaller s. Not Li and Liu's Ternary Weight Networks (2016), which
  ternarise the weights. Each worker sends its own scaler here; the paper's scaler sharing across workers
  (one more max-all-reduce) is not modelled.
- QSGD (Alistarh, Grubic, Li, Tomioka and Vojnovic, "QSGD: Communication-Efficient SGD via Gradient
  Quantization and Encoding", NeurIPS 2017): Q_s(v_i) = |v|_2 sgn(v_i) xi_i, xi_i = (l + 1)/s with
  probability s|v_i|/|v|_2 - l, else l/s; unbiased. Encoded with a fixed width (a sign bit and
  ceil(lg(s + 1)) level bits), not the paper's Elias code.
- Stochastic rounding (Gupta, Agrawal, Gopalakrishnan and Narayanan, "Deep Learning with Limited Numerical
  Precision", ICML 2015): k-bit fixed point, rounded up with probability equal to the remainder. The step is
  max|g| / (2^(k-1) - 1) per tensor, so nothing saturates and the rounding stays unbiased.

>>> import numpy as np
>>> g = np.float32([0.5, -0.25, 1.0, 0.0])
>>> m = TernGrad(clip_sigmas=None).compress(g)
>>> m.nbytes, set(np.abs(m.decode()).tolist()) <= {0.0, 1.0}     # 4 x 2 bits + a 4 B scaler
(5, True)
>>> c = StochasticRound(bits=2)                                 # codes -1, 0, 1 times max|g|
>>> np.mean([c.compress(np.float32([0.6, -0.2, 1.0])).decode() for _ in range(4000)], axis=0).round(1)
array([ 0.6, -0.2,  1. ], dtype=float32)
"""

from __future__ import annotations

import math

import numpy as np

from scaledl.comm.compression.base import Compressor
from scaledl.comm.compression.message import ScaledMessage, SignMessage

__all__ = ["OneBit", "TernGrad", "QSGD", "StochasticRound"]

TERNGRAD_CLIP_SIGMAS = 2.5  # Wen et al. 2017, sec. 3.3: clip to 2.5 sigma of the layer's gradient


def _columns(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1]) if a.ndim >= 2 else a.reshape(-1, 1)


def _f32_up(x: float) -> np.float32:
    """``x`` rounded up to float32: a scaler sent as float32 must not shrink, or codes would overflow."""
    y = np.float32(x)
    return np.nextafter(y, np.float32(np.inf)) if float(y) < x else y


def _stochastic_levels(x: np.ndarray, rng) -> np.ndarray:
    """floor(x) + 1 with probability x - floor(x), else floor(x): E = x."""
    low = np.floor(x)
    return low + (rng.random(x.shape) < (x - low))


class OneBit(Compressor):
    """1-bit SGD with error feedback; see the module docstring."""

    name = "onebit"
    error_feedback = True

    def _compress(self, g, key):
        acc = self._state(self.residuals, key, g)
        acc += g
        cols = _columns(acc)
        positive = cols >= 0
        n_pos = positive.sum(axis=0)
        n_neg = cols.shape[0] - n_pos
        # float64 sums: the reconstruction values must not depend on the summation's SIMD path
        high = (np.where(positive, cols, 0).sum(axis=0, dtype=np.float64) / np.maximum(n_pos, 1)).astype(g.dtype)
        low = (np.where(positive, 0, cols).sum(axis=0, dtype=np.float64) / np.maximum(n_neg, 1)).astype(g.dtype)
        msg = SignMessage(g.shape, positive, high, low)
        acc -= msg.decode()
        return msg


class TernGrad(Compressor):
    """TernGrad; ``clip_sigmas=None`` switches its clipping off (then exactly unbiased)."""

    name = "terngrad"

    def __init__(self, *, clip_sigmas: float | None = TERNGRAD_CLIP_SIGMAS, seed=0):
        super().__init__(seed)
        if clip_sigmas is not None and not (clip_sigmas > 0 and math.isfinite(clip_sigmas)):
            raise ValueError(f"clip_sigmas must be a positive number of standard deviations or None, "
                             f"got {clip_sigmas!r}")
        self.clip_sigmas = clip_sigmas

    def clipped(self, g) -> np.ndarray:
        """What is ternarised: ``g`` in float64, clipped to ``clip_sigmas`` standard deviations if set.

        TernGrad is unbiased for this array, so its mean over many messages is ``clipped(g)``, not ``g``.
        """
        g64 = np.asarray(g).astype(np.float64)
        if self.clip_sigmas is not None and g64.size:
            limit = self.clip_sigmas * g64.std()
            g64 = np.clip(g64, -limit, limit)
        return g64

    def _compress(self, g, key):
        g64 = self.clipped(g)
        s = float(np.abs(g64).max()) if g.size else 0.0
        s32 = _f32_up(s)
        if s32 == 0:
            return ScaledMessage(g.shape, np.zeros(g.shape, np.int8), s32, bits=2)
        keep = self.rng.random(g.shape) < np.abs(g64) / float(s32)
        return ScaledMessage(g.shape, (np.sign(g64) * keep).astype(np.int8), s32, bits=2)


class QSGD(Compressor):
    """QSGD with ``levels`` = s quantization levels per sign (s >= 1)."""

    name = "qsgd"

    def __init__(self, levels: int = 16, *, seed=0):
        super().__init__(seed)
        if isinstance(levels, bool) or not isinstance(levels, int) or levels < 1:
            raise ValueError(f"levels must be a positive integer (s in QSGD), got {levels!r}")
        self.levels = levels
        self.bits = 1 + math.ceil(math.log2(levels + 1))

    def _compress(self, g, key):
        g64 = g.astype(np.float64)
        norm = float(np.sqrt(np.sum(np.square(g64))))
        if norm == 0:
            return ScaledMessage(g.shape, np.zeros(g.shape, np.int32), np.float32(0), bits=self.bits)
        unit = _f32_up(norm / self.levels)  # |v|_2 / s, the value of one level; |v_i| / unit <= s
        xi = _stochastic_levels(np.abs(g64) / float(unit), self.rng)
        return ScaledMessage(g.shape, (np.sign(g64) * xi).astype(np.int32), unit, bits=self.bits)


class StochasticRound(Compressor):
    """k-bit fixed point with stochastic rounding (k >= 2: a sign and at least one magnitude level)."""

    name = "stochastic_round"

    def __init__(self, bits: int = 8, *, seed=0):
        super().__init__(seed)
        if isinstance(bits, bool) or not isinstance(bits, int) or not 2 <= bits <= 32:
            raise ValueError(f"bits must be an integer in [2, 32], got {bits!r}")
        self.bits = bits
        self.top = 2 ** (bits - 1) - 1  # the largest code: symmetric range, no saturation

    def _compress(self, g, key):
        g64 = g.astype(np.float64)
        amax = float(np.abs(g64).max()) if g.size else 0.0
        step = _f32_up(amax / self.top)
        if step == 0:
            return ScaledMessage(g.shape, np.zeros(g.shape, np.int64), step, bits=self.bits)
        codes = np.clip(_stochastic_levels(g64 / float(step), self.rng), -self.top, self.top)
        return ScaledMessage(g.shape, codes.astype(np.int64), step, bits=self.bits)
