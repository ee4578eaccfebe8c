"""Service-time models: how long the server takes to run one batch of ``b`` requests.

Three kinds, all callables ``service(b) -> seconds`` for a positive integer batch ``b``:

* :func:`linear` ``a + c b``: a fixed cost per batch (weight reads, launch overheads) plus a cost per
  request. The eager batcher's steady state has a closed form for it (:mod:`scaledl.serve.theory`).
* :func:`roofline` of a stack of dense layers: each layer takes ``max(FLOPs / peak, bytes / bandwidth)``
  (:mod:`scaledl.perf.roofline`). At batch 1 every layer is a GEMV that reads all its weights to do two
  FLOPs per weight, so it is memory bound and the time hardly grows with the batch until the batch passes
  the ridge point and the layers turn compute bound.
* :func:`measured`: a table of times measured on a GPU, interpolated linearly between measured batches.

:func:`service_table` evaluates any of them at ``b = 1..max_batch`` once and checks that every time is a
positive finite number that does not decrease as the batch grows.

>>> s = linear(a_s=0.010, c_s=0.001)
>>> s(1), s(20)
(0.011, 0.03)
>>> stack = roofline([(1152, 1152)] * 3, device="GTX Titan X", precision="fp32")   # a small RNN-like stack
>>> round(stack(1) * 1e6, 1), round(stack(16) * 1e6, 1)   # microseconds: 16x the work in 1.03x the time
(47.4, 48.6)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scaledl._args import positive


@dataclass(frozen=True)
class Linear:
    """``a_s + c_s b`` seconds for a batch of ``b``."""

    a_s: float
    c_s: float

    def __call__(self, b):
        return self.a_s + self.c_s * b


def linear(a_s: float, c_s: float) -> Linear:
    """Service ``a_s + c_s b``: ``a_s > 0`` seconds per batch, ``c_s >= 0`` seconds per request."""
    positive("a_s", a_s)
    if isinstance(c_s, bool) or not isinstance(c_s, (int, float, np.integer, np.floating)) or not (
            c_s >= 0 and math.isfinite(c_s)):
        raise ValueError(f"c_s must be a finite number >= 0 (seconds per request), got {c_s!r}")
    return Linear(float(a_s), float(c_s))


@dataclass(frozen=True)
class Roofline:
    """A stack of dense layers ``(n_in, n_out)`` timed on a roofline, plus a fixed overhead per batch."""

    layers: tuple[tuple[int, int], ...]
    device: str
    precision: str
    overhead_s: float
    bytes_per_request: float = 0.0

    def __call__(self, b: int) -> float:
        from scaledl.perf.roofline import dense_layer, roofline_of

        roof = roofline_of(self.device, self.precision)
        layers = (dense_layer(n_in, n_out, int(b), self.precision) for n_in, n_out in self.layers)
        private_s = b * self.bytes_per_request / (roof.bandwidth_GBps * 1e9)  # nothing shared: no reuse
        return self.overhead_s + sum(roof.time_s(g.flops, g.bytes_moved) for g in layers) + private_s


def roofline(layers, *, device: str = "H100 SXM", precision: str = "fp16", overhead_s: float = 0.0,
             bytes_per_request: float = 0.0) -> Roofline:
    """Service time of a dense layer stack from ``device``'s datasheet roofline (a lower bound on a real GPU).

    ``bytes_per_request`` is memory traffic that batching cannot share, read once per request at full
    bandwidth: an LLM decode step's KV cache (``2 x layers x context x d_model x bytes`` per sequence), whose
    attention is a GEMV per sequence however large the batch. It keeps a decode step memory bound as the
    batch grows, where the weights alone would turn compute bound.

    Args:
        layers: ``[(n_in, n_out), ...]``, one pair per layer (an RNN step is one ``(hidden, hidden)`` layer).
        device: a name known to :mod:`scaledl.perf.hardware`.
        precision: the weights' and activations' precision (``"fp16"``, ``"fp32"``, ...).
        overhead_s: fixed time added to every batch (kernel launches, host work); >= 0.
        bytes_per_request: unshared bytes each request reads (see above); >= 0.

    >>> d, L, ctx = 4096, 32, 2048      # a 7B-class decoder (d_model 4096, 32 layers), 2,048 tokens of context
    >>> step = roofline([(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)] * L, device="H100 SXM",
    ...                 bytes_per_request=2 * L * ctx * d * 2)
    >>> [round(step(b) * 1e3, 2) for b in (1, 16, 64)]      # ms: 12.9 GB of weights, then 1.07 GB of KV each
    [4.17, 8.99, 24.44]
    """
    pairs = tuple((int(a), int(b)) for a, b in layers)
    if not pairs:
        raise ValueError("layers must hold at least one (n_in, n_out) pair, got none")
    if not (overhead_s >= 0 and math.isfinite(overhead_s)):
        raise ValueError(f"overhead_s must be a finite number >= 0, got {overhead_s!r}")
    if not (bytes_per_request >= 0 and math.isfinite(bytes_per_request)):
        raise ValueError(f"bytes_per_request must be a finite number >= 0, got {bytes_per_request!r}")
    model = Roofline(pairs, device, precision, float(overhead_s), float(bytes_per_request))
    model(1)  # fails here, with the roofline module's message, on a bad layer, device or precision
    return model


@dataclass(frozen=True)
class Measured:
    """Times measured at some batch sizes, interpolated linearly in between."""

    batch_sizes: tuple[int, ...]
    times_s: tuple[float, ...]

    def __call__(self, b: int) -> float:
        lo, hi = self.batch_sizes[0], self.batch_sizes[-1]
        if not lo <= b <= hi:
            raise ValueError(f"batch {b} is outside the measured range [{lo}, {hi}]; measure it or lower "
                             f"max_batch")
        return float(np.interp(b, self.batch_sizes, self.times_s))


def measured(batch_sizes, times_s) -> Measured:
    """Service from measurements: ``times_s[i]`` seconds at batch ``batch_sizes[i]`` (increasing sizes)."""
    b = np.asarray(batch_sizes)
    t = np.asarray(times_s, dtype=float)
    if b.ndim != 1 or b.size == 0 or b.shape != t.shape:
        raise ValueError(f"batch_sizes and times_s must be 1-D of the same non-zero length, got shapes "
                         f"{b.shape} and {t.shape}")
    if not np.issubdtype(b.dtype, np.integer) or b[0] < 1 or np.any(np.diff(b) <= 0):
        raise ValueError(f"batch_sizes must be positive integers in increasing order, got {list(batch_sizes)}")
    _check_times(t, b)
    return Measured(tuple(int(x) for x in b), tuple(float(x) for x in t))


def _check_times(t: np.ndarray, b: np.ndarray) -> None:
    bad = np.flatnonzero(~(np.isfinite(t) & (t > 0)))
    if bad.size:
        i = bad[0]
        raise ValueError(f"service({b[i]}) = {float(t[i])!r}: service times must be positive finite seconds")
    drop = np.flatnonzero(np.diff(t) < 0)
    if drop.size:
        i = drop[0]
        raise ValueError(f"service({b[i + 1]}) = {float(t[i + 1])!r} < service({b[i]}) = {float(t[i])!r}: "
                         f"service times must "
                         f"not decrease as the batch grows")


def service_table(service, max_batch: int) -> np.ndarray:
    """``table[b] = service(b)`` for ``b = 1..max_batch`` (``table[0]`` unused, 0.0), float64, checked.

    Raises:
        TypeError: ``service`` is not callable or returns something that is not a real number.
        ValueError: a time that is not positive and finite, or that is smaller than at a smaller batch.
    """
    if not callable(service):
        raise TypeError(f"service must be a callable batch -> seconds (linear(a, c), roofline(...), "
                        f"measured(...)), got {service!r}")
    table = np.zeros(max_batch + 1)
    for b in range(1, max_batch + 1):
        t = service(b)
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)):
            raise TypeError(f"service({b}) must return a number of seconds, got {t!r} ({type(t).__name__})")
        table[b] = t
    _check_times(table[1:], np.arange(1, max_batch + 1))
    return table


@dataclass(frozen=True)
class LineFit:
    """The simplest service model a measurement supports: ``t(b) = a + c b`` through two of its points, scored on
    the others (:func:`line_through`)."""

    a_s: float
    c_s: float
    fitted_at: tuple[int, int]
    errors: dict[int, float]  # batch -> (line - measured) / measured, at the sizes not fitted

    @property
    def mean_abs_error(self) -> float:
        return float(np.mean([abs(e) for e in self.errors.values()])) if self.errors else float("nan")


def line_through(curve: Measured, b0: int = 1, b1: int = 64) -> LineFit:
    """The line through ``curve`` at batch ``b0`` and ``b1``, and its relative error at every other measured
    batch: the baseline a service model (a roofline, a simulator) must beat with the same measurements.

    >>> fit = line_through(measured([1, 2, 4, 8], [1.0, 1.5, 2.0, 4.0]), 1, 8)
    >>> round(fit.a_s, 4), round(fit.c_s, 4), {b: round(e, 3) for b, e in fit.errors.items()}
    (0.5714, 0.4286, {2: -0.048, 4: 0.143})
    """
    if not isinstance(curve, Measured):
        raise TypeError(f"curve: expected measured(batch_sizes, times_s), got {type(curve).__name__}")
    sizes = curve.batch_sizes
    if b0 not in sizes or b1 not in sizes or b0 >= b1:
        raise ValueError(f"b0={b0!r}, b1={b1!r}: expected two measured batch sizes, b0 < b1, from {list(sizes)}")
    t0, t1 = curve(b0), curve(b1)
    c = (t1 - t0) / (b1 - b0)
    a = t0 - c * b0
    errors = {b: (a + c * b - t) / t for b, t in zip(sizes, curve.times_s) if b not in (b0, b1)}
    return LineFit(a, c, (b0, b1), errors)
