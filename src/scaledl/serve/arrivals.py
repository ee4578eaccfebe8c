"""Request arrival times: Poisson traffic and bursty (two-state Markov-modulated Poisson) traffic.

Both are generated for a unit mean rate and then divided by ``rate``, so one ``seed`` gives the same sample
path at every load, only compressed or stretched in time (common random numbers). That keeps a sweep over
rates smooth, and makes a queue's latency grow monotonically with the rate for a fixed seed.

>>> t = poisson_arrivals(1000.0, 100_000, seed=0)
>>> round(100_000 / t[-1])          # measured rate, requests per second: 1000 within 1/sqrt(n) = 0.3 %
1003
>>> bool(np.all(np.diff(t) >= 0)), bool(np.allclose(poisson_arrivals(10.0, 5, seed=1) / 100,
...                                                  poisson_arrivals(1000.0, 5, seed=1)))
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scaledl._args import count, positive


def poisson_arrivals(rate_rps: float, n_requests: int, seed: int = 0) -> np.ndarray:
    """``n_requests`` arrival times (seconds, float64, sorted) of a Poisson process of ``rate_rps``."""
    rate = positive("rate", rate_rps)
    n = count("n_requests", n_requests)
    gaps = np.random.default_rng(seed).exponential(1.0, n)  # unit-rate gaps, then scaled: see module docstring
    return np.cumsum(gaps) / rate


@dataclass(frozen=True)
class Bursty:
    """Two-state Markov-modulated Poisson traffic whose long-run mean rate is the ``rate`` it is given.

    The source alternates between a busy state, in which requests arrive ``peak_to_mean`` times faster than
    the mean rate, and a quiet state whose rate makes up the rest. The busy state holds ``busy_fraction`` of
    the time. Dwell times in each state are exponential; ``requests_per_burst`` is the mean number of
    requests that arrive during one busy period, so bursts scale with the load like everything else.

    Args:
        peak_to_mean: busy-state rate / mean rate; needs ``peak_to_mean * busy_fraction <= 1``.
        busy_fraction: fraction of time in the busy state, in (0, 1).
        requests_per_burst: mean requests per busy period (sets how long bursts last).
    """

    peak_to_mean: float = 4.0
    busy_fraction: float = 0.2
    requests_per_burst: float = 50.0

    def __post_init__(self):
        positive("peak_to_mean", self.peak_to_mean)
        positive("requests_per_burst", self.requests_per_burst)
        if not 0 < self.busy_fraction < 1:
            raise ValueError(f"busy_fraction must be in (0, 1), got {self.busy_fraction!r}")
        if self.peak_to_mean * self.busy_fraction > 1:
            raise ValueError(f"peak_to_mean * busy_fraction must be <= 1 (the busy state cannot carry more than "
                             f"all the traffic), got {self.peak_to_mean} * {self.busy_fraction}")

    def unit_rates(self) -> tuple[float, float]:
        """(busy, quiet) rates when the mean rate is 1."""
        busy = self.peak_to_mean
        quiet = (1 - busy * self.busy_fraction) / (1 - self.busy_fraction)
        return busy, quiet

    def arrivals(self, rate_rps: float, n_requests: int, seed: int = 0) -> np.ndarray:
        """``n_requests`` sorted arrival times in seconds at mean rate ``rate_rps``."""
        rate = positive("rate", rate_rps)
        n = count("n_requests", n_requests)
        rng = np.random.default_rng(seed)
        busy_rate, quiet_rate = self.unit_rates()
        mean_busy_s = self.requests_per_burst / busy_rate  # unit-rate time
        mean_quiet_s = mean_busy_s * (1 - self.busy_fraction) / self.busy_fraction
        chunks, start, got = [], 0.0, 0
        while got < n:  # whole cycles (busy then quiet) until enough requests; about two rounds
            cycles = max(16, int(1.2 * (n - got) / (busy_rate * mean_busy_s + quiet_rate * mean_quiet_s)) + 1)
            dwell = np.empty(2 * cycles)
            dwell[0::2] = rng.exponential(mean_busy_s, cycles)
            dwell[1::2] = rng.exponential(mean_quiet_s, cycles)
            rates = np.tile([busy_rate, quiet_rate], cycles)
            begin = start + np.concatenate(([0.0], np.cumsum(dwell)[:-1]))
            counts = rng.poisson(rates * dwell)
            offsets = rng.random(int(counts.sum())) * np.repeat(dwell, counts)
            times = np.sort(np.repeat(begin, counts) + offsets)
            chunks.append(times)
            got += times.size
            start = begin[-1] + dwell[-1]
        return np.concatenate(chunks)[:n] / rate


ARRIVALS = ("poisson", "bursty")


def arrival_times(arrivals, rate_rps: float, n_requests: int, seed: int) -> np.ndarray:
    """Dispatch on ``arrivals``: ``"poisson"``, ``"bursty"`` (default :class:`Bursty`) or a Bursty instance."""
    if isinstance(arrivals, Bursty):
        return arrivals.arrivals(rate_rps, n_requests, seed)
    if arrivals == "poisson":
        return poisson_arrivals(rate_rps, n_requests, seed)
    if arrivals == "bursty":
        return Bursty().arrivals(rate_rps, n_requests, seed)
    raise ValueError(f"arrivals={arrivals!r}; expected one of {ARRIVALS} or a Bursty(...) instance")
