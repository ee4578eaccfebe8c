""""Users at acceptable latency": the largest arrival rate whose latency percentile meets an SLO.

A latency percentile need not grow monotonically with the load: a batcher that waits for fuller batches
(``"dynamic"`` with a queue delay) is slower at light load, where batches fill slowly, than at moderate load.
So the search first scans a geometric grid of rates downwards from the server's capacity (the most it can
ever complete: ``max_batch / service(max_batch)`` requests per second) to find the highest grid rate that
meets the SLO, then bisects between it and the grid rate above. Every simulation uses the same seed, so the
arrivals are one sample path rescaled in time (common random numbers) and the answer is deterministic.

>>> from scaledl.serve import linear
>>> svc = linear(a_s=0.002, c_s=0.0005)
>>> one = max_rate_at_slo("single", service=svc, slo_s=0.050, n_requests=20_000)
>>> eager = max_rate_at_slo("batch_dispatch", service=svc, slo_s=0.050, n_requests=20_000, max_batch=64)
>>> round(one), round(eager), round(eager / one, 1)       # requests per second at p98 <= 50 ms
(364, 1737, 4.8)
"""

from __future__ import annotations

import numpy as np

from scaledl._args import positive
from scaledl.serve.simulate import _options, simulate
from scaledl.serve.service import service_table


def capacity_rps(policy: str, service, **policy_options) -> float:
    """The most requests per second ``policy`` can complete: full batches back to back."""
    mb = int(_options(policy, policy_options)["max_batch"])
    return mb / float(service_table(service, mb)[mb])


def max_rate_at_slo(policy: str, *, service, slo_s: float, percentile: float = 98.0, n_requests: int = 100_000,
                    seed: int = 0, arrivals="poisson", grid_points: int = 24, rtol: float = 1e-3,
                    **policy_options) -> float:
    """Largest rate (requests/s) at which the ``percentile`` latency of ``policy`` is at most ``slo_s``.

    For ``"adaptive"``, ``latency_objective_s`` defaults to ``slo_s`` (Clipper holds each batch to the SLO).

    Returns 0.0 when even the lightest load on the grid (capacity / 1000) misses the SLO, for example
    when ``service(1) > slo_s``.

    Args:
        policy, service, n_requests, seed, arrivals, **policy_options: as for :func:`simulate`.
        slo_s: the latency objective, seconds.
        percentile: which latency percentile must meet it (98: the p98 of the seed's "acceptable latency").
        grid_points: rates scanned between capacity / 1000 and capacity, geometrically spaced.
        rtol: relative width at which bisection stops.
    """
    slo_s = positive("slo_s", slo_s)
    if not 0 < percentile < 100:
        raise ValueError(f"percentile must be in (0, 100), got {percentile!r}")
    positive("rtol", rtol)
    if policy == "adaptive":
        policy_options.setdefault("latency_objective_s", slo_s)
    top = capacity_rps(policy, service, **policy_options)

    def meets(rate: float) -> bool:
        r = simulate(policy, rate=rate, service=service, n_requests=n_requests, seed=seed, arrivals=arrivals,
                     **policy_options)
        return r.percentile_s(percentile) <= slo_s

    grid = top * np.logspace(-3, 0, grid_points)[::-1]  # capacity first, downwards
    for hi, lo in zip(grid[:-1], grid[1:]):
        if meets(lo):
            break
    else:
        return 0.0
    if meets(hi):  # only possible at the capacity itself
        return float(hi)
    while hi - lo > rtol * lo:
        mid = float(np.sqrt(lo * hi))
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return float(lo)
