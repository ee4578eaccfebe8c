"""Closed forms the serving simulator must reproduce: the M/D/1 queue and the eager batcher's steady state.

* M/D/1 (Poisson arrivals at ``lambda``, a fixed service time ``1 / mu``, one server): the
  Pollaczek-Khinchine formula gives the mean time in queue ``W_q = rho / (2 mu (1 - rho))``, ``rho = lambda /
  mu`` (e.g. Kleinrock, "Queueing Systems, Volume 1: Theory", Wiley 1975, section 5.7).
* Eager batching with service ``a + c b``: a batch that takes ``T`` seconds finds about ``lambda T``
  requests waiting when it ends, so the batch size settles where ``b = lambda (a + c b)``:
  ``b* = lambda a / (1 - lambda c)``, finite only while ``lambda c < 1`` (each request must cost less server
  time than the gap between requests). Exactly, the mean over batches obeys
  ``E[b] = (lambda a + p0) / (1 - lambda c)``, where ``p0`` is the fraction of batches that found the queue
  empty and started with one request; ``p0`` is negligible once ``lambda a`` is a few requests.

>>> round(md1_mean_wait_s(rate=800.0, service_s=0.001) * 1e3, 3)      # rho = 0.8: 2 ms in queue
2.0
>>> round(eager_steady_batch(rate=2000.0, a_s=0.010, c_s=0.0002), 2)
33.33
"""

from __future__ import annotations

import math

from scaledl._args import positive


def md1_mean_wait_s(rate: float, service_s: float) -> float:
    """Mean time in queue (not counting service) of an M/D/1 queue; ``rate x service_s < 1`` required."""
    lam, s = positive("rate", rate), positive("service_s", service_s)
    rho = lam * s
    if rho >= 1:
        raise ValueError(f"rate x service_s = {rho:g} must be < 1: the queue has no steady state at that load")
    return rho * s / (2 * (1 - rho))


def eager_steady_batch(rate: float, a_s: float, c_s: float) -> float:
    """Steady-state batch ``lambda a / (1 - lambda c)`` of eager batching with service ``a + c b``."""
    lam, a = positive("rate", rate), positive("a_s", a_s)
    if not (c_s >= 0 and math.isfinite(c_s)):
        raise ValueError(f"c_s must be a finite number >= 0, got {c_s!r}")
    if lam * c_s >= 1:
        raise ValueError(f"rate x c_s = {lam * c_s:g} must be < 1: batches grow without bound at that load")
    return lam * a / (1 - lam * c_s)
