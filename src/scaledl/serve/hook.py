"""A policy as a plain Python function: the event loop lab 07 hands to students, and the checks behind it.

:func:`scaledl.serve.simulate` compiles its policies into one Numba loop, which is fast but not a place to
write a policy of your own. Here the policy is a function the loop calls at every event (a request arrives,
or a batch finishes)::

    next_batch(waiting, busy, max_batch) -> how many of the waiting requests to start now (0: none)

``waiting`` is how many requests are queued, ``busy`` whether a batch is running. The loop starts the
``k`` oldest waiting requests as one batch taking ``service(k)`` seconds. Nothing stops a policy from
starting a batch while another runs, or one larger than ``max_batch``, or from leaving requests waiting
forever: the loop records each of those (``overlapping``, ``batch_size``, ``unserved``), because they are
the bugs :func:`check_batch_policy` is there to catch.

The loop is plain Python, about 1 us of overhead per event plus the policy's own cost: 100,000 requests in
about half a second. Events that coincide are taken arrivals first, which is how the compiled loop counts a
request arriving exactly when the server frees up, so a correct policy reproduces :func:`simulate`'s
batches and latencies exactly (same seed, same arrivals). The reference policies (``single_spec``,
``batch_dispatch_spec``) are :mod:`scaledl.serve.policy_specs`, also found here.

>>> from scaledl.serve import linear
>>> r = run_policy(batch_dispatch_spec, rate=2000.0, service=linear(0.010, 0.0002), n_requests=20_000,
...                max_batch=64)
>>> round(r.mean_batch, 1), r.overlapping, r.unserved           # the same as simulate("batch_dispatch", ...)
(33.6, 0, 0)
"""

from __future__ import annotations

import heapq
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from scaledl._absent import left_out, missing
from scaledl._args import count, positive
from scaledl.serve.arrivals import arrival_times

try:  # lab 07's Task 1.1-1.2 answers (scaledl.serve.policy_specs), left out of their grading run (scaledl._absent)
    from scaledl.serve.policy_specs import batch_dispatch_spec, single_spec  # noqa: F401
except ModuleNotFoundError as err:
    left_out(err, globals())


def __getattr__(name):
    return missing(name, __name__, globals())


@dataclass(frozen=True, eq=False)
class PolicyRun:
    """What :func:`run_policy` saw. Latencies of unserved requests are ``inf``.

    Attributes:
        latency_s: per request, arrival order. batch_size, batch_start_s: per batch, in start order.
        overlapping: batches started while another was still running (a single server cannot do that).
        unserved: requests still waiting when the last event had passed (the policy never started them).
    """

    arrival_s: np.ndarray = field(repr=False)
    latency_s: np.ndarray = field(repr=False)
    batch_size: np.ndarray = field(repr=False)
    batch_start_s: np.ndarray = field(repr=False)
    overlapping: int
    unserved: int

    @property
    def mean_batch(self) -> float:
        return float(self.batch_size.mean()) if self.batch_size.size else 0.0

    def percentile_s(self, q: float) -> float:
        return float(np.percentile(self.latency_s, q))


def run_policy(next_batch, *, rate: float, service, n_requests: int, max_batch: int = 64, seed: int = 0,
               arrivals="poisson") -> PolicyRun:
    """Serve ``n_requests`` Poisson (or bursty) arrivals at ``rate`` with the policy ``next_batch``.

    Raises:
        TypeError: ``next_batch`` or ``service`` is not callable, or the policy returns a non-integer.
        ValueError: the policy asks for a negative batch or for more requests than are waiting; ``rate``,
            ``n_requests`` or ``max_batch`` out of range; a non-positive service time.
    """
    if not callable(next_batch):
        raise TypeError(f"next_batch must be a function (waiting, busy, max_batch) -> int, got {next_batch!r}")
    if not callable(service):
        raise TypeError(f"service must be a callable batch -> seconds, got {service!r}")
    rate = positive("rate", rate)
    n = count("n_requests", n_requests)
    max_batch = count("max_batch", max_batch)
    arrival = arrival_times(arrivals, rate, n, seed)
    arr = arrival.tolist()  # Python floats: indexing a list is several times faster than a NumPy array
    times: dict[int, float] = {}
    finish = [math.inf] * n
    sizes, starts = [], []
    running: list[float] = []  # end times of the batches in flight (a heap)
    a = h = 0  # next arrival; oldest waiting request
    overlapping = 0
    inf = math.inf
    while a < n or running:
        t_arr = arr[a] if a < n else inf
        if running and running[0] < t_arr:
            t = heapq.heappop(running)
        else:
            t = t_arr
            a += 1
        busy = bool(running)
        k = next_batch(a - h, busy, max_batch)
        if k is None:
            raise TypeError(f"next_batch({a - h}, {busy}, {max_batch}) returned None; expected an int "
                            f"(did the function forget its return?)")
        if k:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise TypeError(f"next_batch({a - h}, {busy}, {max_batch}) returned {k!r} "
                                f"({type(k).__name__}); expected an int")
            if not 0 < k <= a - h:
                raise ValueError(f"next_batch({a - h}, {busy}, {max_batch}) returned {k}: a batch must take "
                                 f"between 0 and the {a - h} waiting requests")
            k = int(k)
            if k not in times:
                s = service(k)
                if not (isinstance(s, (int, float, np.integer, np.floating)) and s > 0 and math.isfinite(s)):
                    raise ValueError(f"service({k}) = {s!r}: service times must be positive finite seconds")
                times[k] = float(s)
            end = t + times[k]
            overlapping += busy
            finish[h:h + k] = [end] * k
            h += k
            sizes.append(k)
            starts.append(t)
            heapq.heappush(running, end)
    latency = np.asarray(finish) - arrival
    return PolicyRun(arrival, latency, np.asarray(sizes, np.int64), np.asarray(starts), overlapping, n - h)


# The check of a student's policy (lab 07) is :mod:`scaledl.labs.batch_checks`: checks live in ``labs``, above
# the models (ARCHITECTURE.md). These two names stay for lab 07 copies released before the move.
def policy_hint(waiting: int, busy: bool, max_batch: int, got, want: int) -> str:
    """Moved to :func:`scaledl.labs.batch_checks.policy_hint`."""
    from scaledl.labs.batch_checks import policy_hint as moved

    return moved(waiting, busy, max_batch, got, want)


def check_batch_policy(next_batch, *, n_requests: int = 20_000, seed: int = 0, report=None):
    """Moved to :func:`scaledl.labs.batch_checks.check_batch_policy`."""
    from scaledl.labs.batch_checks import check_batch_policy as moved

    return moved(next_batch, n_requests=n_requests, seed=seed, report=sys.stdout if report is None else report)
