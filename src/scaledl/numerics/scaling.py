"""Choosing the scale of a quantizer: max scaling, percentile, an MSE sweep, and OCTAV's iteration.

A quantizer with scale ``s`` represents ``[-s * fmt.max_value, s * fmt.max_value]``; the *clip* point is
``c = s * fmt.max_value``. Every chooser here returns the scale (what :func:`~scaledl.numerics.quantize.quantize`
takes); :func:`octav_clip` returns the clip point and its iterates.

* :func:`max_scale`: no value clips (``c = max |x|``). No clipping noise, but the grid is spread over outliers.
* :func:`percentile_scale`: ``c`` = a percentile of ``|x|``; the rest saturates.
* :func:`mse_scale`: try clip points from ``lo * max|x|`` to ``max|x|`` and keep the one with the smallest
  mean squared error, measured with the real quantizer.
* :func:`octav_scale` / :func:`octav_clip`: the fixed-point iteration of OCTAV (Sakr et al., "Optimal Clipping
  and Magnitude-aware Differentiation for Improved Quantization-aware Training", ICML 2022), as Dally's
  lecture "Trends in Deep Learning Hardware" (2023) presents it, for a B-bit uniform quantizer whose noise
  is ``c**2 * 4**-B / 3`` inside the range plus ``(|x| - c)**2`` outside::

      c_{n+1} = E[|X| 1{|X| > c_n}] / ( (4**-B / 3) E[1{|X| <= c_n}] + E[1{|X| > c_n}] )

  The constant ``4**-B / 3 = step**2 / 12 / c**2`` assumes a step of ``2c / 2**B``. A signed integer grid
  scaled so that its largest code ``2**(B-1) - 1`` lands on ``c`` (``quantize(x, "int4", scale=c / 7)``) has
  the larger step ``c / 7`` and 1.31x that noise at 4 bits; ``octav_clip(..., max_code=7)`` uses the true
  step, and :func:`octav_scale` always does. Setting the derivative of the expected noise to zero, minus
  one term (``c**2 k f(c)``, with ``f`` the density of ``|X|``), gives ``c = that ratio`` with ``c`` on both
  sides; iterating it converges in a handful of steps.

>>> import numpy as np
>>> x = np.random.default_rng(0).standard_normal(100_000)
>>> round(max_scale(x, "int8") * 127, 3) == round(float(np.abs(x).max()), 3)
True
>>> c, hist = octav_clip(x, bits=4)
>>> round(c, 2), len(hist) < 30
(2.58, True)
"""

from __future__ import annotations

import numpy as np

from scaledl.numerics.formats import IntFormat, get_format
from scaledl.numerics.quantize import quantize

__all__ = ["max_scale", "percentile_scale", "mse_scale", "clip_mse", "octav_clip", "octav_noise_constant",
           "octav_scale", "CHOOSERS",
           "choose_scale"]


def _abs_values(x) -> np.ndarray:
    a = np.abs(np.asarray(x, dtype=np.float64)).ravel()
    if a.size == 0:
        raise ValueError("x is empty; a scale needs at least one value")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"x must be finite to choose a scale; it holds {np.count_nonzero(~np.isfinite(a))} "
                         "NaN/inf value(s)")
    return a


def _scale_for_clip(clip: float, fmt) -> float:
    # An all-zero tensor has no range to fit; any positive scale represents it exactly, so pick 1.
    return float(clip) / get_format(fmt).max_value if clip > 0 else 1.0


def max_scale(x, fmt) -> float:
    """The scale that maps ``max |x|`` to the format's largest value: nothing clips."""
    return _scale_for_clip(_abs_values(x).max(), fmt)


def percentile_scale(x, fmt, percentile: float = 99.9) -> float:
    """The scale that maps the ``percentile``-th percentile of ``|x|`` to the largest value.

    Raises:
        ValueError: ``percentile`` outside (0, 100].
    """
    if not (0 < percentile <= 100):
        raise ValueError(f"percentile must be in (0, 100], got {percentile!r}")
    return _scale_for_clip(np.percentile(_abs_values(x), percentile), fmt)


def clip_mse(x, fmt, clips) -> np.ndarray:
    """Mean squared quantization error of ``x`` in ``fmt`` for each clip point in ``clips`` (float64 array)."""
    x = np.asarray(x, dtype=np.float64)
    spec = get_format(fmt)
    clips = np.atleast_1d(np.asarray(clips, dtype=np.float64))
    if np.any(~np.isfinite(clips) | (clips <= 0)):
        raise ValueError(f"clips must be finite and > 0, got {clips!r}")
    return np.array([np.mean((quantize(x, spec, scale=c / spec.max_value).astype(np.float64) - x) ** 2)
                     for c in clips])


def mse_scale(x, fmt, *, n_candidates: int = 100, lo: float = 0.05) -> float:
    """The scale whose clip point, among ``n_candidates`` from ``lo * max|x|`` to ``max|x|``, minimises the MSE.

    Raises:
        ValueError: ``n_candidates < 2`` or ``lo`` outside (0, 1).
    """
    if not isinstance(n_candidates, (int, np.integer)) or n_candidates < 2:
        raise ValueError(f"n_candidates must be an int >= 2, got {n_candidates!r}")
    if not (0 < lo < 1):
        raise ValueError(f"lo must be in (0, 1), got {lo!r}")
    a = _abs_values(x)
    amax = a.max()
    if amax == 0:
        return 1.0
    clips = amax * np.linspace(lo, 1.0, n_candidates)
    return _scale_for_clip(clips[int(np.argmin(clip_mse(x, fmt, clips)))], fmt)


def octav_noise_constant(bits: int, max_code: int | None = None) -> float:
    """Rounding noise per unit ``clip**2`` of a uniform grid: ``(step / clip)**2 / 12``.

    ``max_code=None`` is OCTAV's model, a step of ``2 clip / 2**bits`` (``4**-bits / 3``); an integer
    ``max_code`` is a grid whose step is ``clip / max_code`` (the clip point maps to that code).

    >>> octav_noise_constant(4) * 768, round(octav_noise_constant(4, max_code=7) / octav_noise_constant(4), 4)
    (1.0, 1.3061)
    """
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 32:
        raise ValueError(f"bits must be an int in [1, 32], got {bits!r}")
    if max_code is None:
        return 4.0 ** -bits / 3.0
    if isinstance(max_code, bool) or not isinstance(max_code, (int, np.integer)) or max_code < 1:
        raise ValueError(f"max_code must be a positive int (the integer code the clip point maps to), "
                         f"got {max_code!r}")
    return 1.0 / (12.0 * float(max_code) ** 2)


def octav_clip(x, bits: int, *, iters: int = 50, c0: float | None = None, rtol: float = 1e-6,
               max_code: int | None = None):
    """OCTAV's optimal clip point for a ``bits``-bit uniform quantizer of ``x``.

    Args:
        x: the values (any shape); only ``|x|`` matters.
        bits: B in the noise model ``c**2 4**-B / 3``.
        iters: at most this many steps; stops early when a step changes ``c`` by less than ``rtol * c``.
        c0: the starting point; default ``mean |x|`` (must lie below ``max |x|``, or no value clips and the
            numerator is zero).
        max_code: ``None`` (default) for OCTAV's own model, a step of ``2c / 2**bits``; or the integer code the
            clip point maps to in the real quantizer, whose step is then ``c / max_code`` (7 for
            ``quantize(x, "int4", scale=c / 7)``, 15 for ``"uint4"``). See :func:`octav_noise_constant`.
    Returns:
        ``(clip, history)``: the final clip point and the list of iterates starting with ``c0``.
    Raises:
        ValueError: bits outside [1, 32], ``max_code`` not a positive int, non-positive ``c0``, or non-finite
        ``x``.

    >>> x = np.random.default_rng(0).laplace(size=100_000)
    >>> round(octav_clip(x, 4)[0], 2), round(octav_clip(x, 4, max_code=7)[0], 2)
    (5.04, 4.81)
    """
    noise = octav_noise_constant(bits, max_code)  # rounding noise per unit clip**2
    a = _abs_values(x)
    if a.max() == 0:
        return 0.0, [0.0]
    c = float(a.mean()) if c0 is None else float(c0)
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"c0 must be finite and > 0, got {c0!r}")
    history = [c]
    for _ in range(iters):
        over = a > c
        if not np.any(over):  # nothing clips: c is above max|x|; restart from below
            c = float(a.mean())
            history.append(c)
            continue
        new = a[over].sum() / (noise * np.count_nonzero(~over) + np.count_nonzero(over))
        history.append(float(new))
        done = abs(new - c) <= rtol * c
        c = float(new)
        if done:
            break
    return c, history


def octav_scale(x, fmt="int8", **kwargs) -> float:
    """The scale from :func:`octav_clip` for an integer format (clip / largest integer).

    The clip point maps to the format's largest integer, so OCTAV is given that grid's true step,
    ``clip / max_value`` (``max_code=max_value``): ``c / 7`` for int4, ``c / 15`` for uint4 (whose 16 levels
    all lie on [0, c]), rather than its model's ``2c / 2**B``.

    Raises:
        ValueError: ``fmt`` is not an integer format (OCTAV's noise model is that of a uniform grid).
    """
    spec = get_format(fmt)
    if not isinstance(spec, IntFormat):
        raise ValueError(f"fmt: OCTAV's noise model assumes a uniform integer grid; got {spec.name!r}")
    kwargs.setdefault("max_code", int(spec.max_value))
    clip, _ = octav_clip(x, spec.bits, **kwargs)
    return _scale_for_clip(clip, spec)


CHOOSERS = {"max": max_scale, "percentile": percentile_scale, "mse": mse_scale, "octav": octav_scale}


def choose_scale(x, fmt, method: str = "max", **kwargs) -> float:
    """Dispatch to a chooser by name: ``"max"``, ``"percentile"``, ``"mse"`` or ``"octav"``."""
    if method not in CHOOSERS:
        raise ValueError(f"method must be one of {sorted(CHOOSERS)}, got {method!r}")
    return CHOOSERS[method](x, fmt, **kwargs)
