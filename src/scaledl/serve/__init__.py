"""Serving: a discrete-event simulation of an inference server, its batching policies, and queueing theory.

==================  ===========================================================================
``arrivals``        Poisson and bursty (Markov-modulated) request arrivals
``service``         batch service times: ``linear(a, c)``, a layer stack's ``roofline``, ``measured``
``simulate``        ``simulate(policy, rate=, service=, n_requests=, seed=)``: single, batch_dispatch,
                    dynamic (Triton), adaptive (Clipper AIMD); latencies, batches, p50/p98/p99
``slo``             ``max_rate_at_slo``: the most users served at acceptable latency
``views``           ``users_at_slo`` table, latency percentiles against load, the chapter widget
``theory``          M/D/1 mean wait (Pollaczek-Khinchine) and the eager batcher's steady-state batch
``hook``            a policy as a Python function ``next_batch(waiting, busy, max_batch)`` (lab 07) and its check
``policy_specs``    the reference policies of lab 07 (``single_spec``, ``batch_dispatch_spec``)
``lifetime``        training against inference compute over a model's service life
==================  ===========================================================================

>>> from scaledl.serve import linear, md1_mean_wait_s, simulate
>>> r = simulate("single", rate=500.0, service=linear(0.001, 0.0), n_requests=200_000, seed=0)
>>> round(float(r.latency_s.mean() - 0.001) * 1e3, 2), round(md1_mean_wait_s(500.0, 0.001) * 1e3, 2)  # ms in queue
(0.51, 0.5)
"""

from scaledl._absent import left_out, missing
from scaledl.serve.arrivals import Bursty, poisson_arrivals
from scaledl.serve.service import line_through, linear, measured, roofline, service_table
from scaledl.serve.simulate import POLICIES, SimResult, simulate

# Lab 07's answers, each left out of some of its grading runs (scaledl._absent): the package imports all the same.
try:
    from scaledl.serve.slo import capacity_rps, max_rate_at_slo
except ModuleNotFoundError as err:
    left_out(err, globals())
try:
    from scaledl.serve.theory import eager_steady_batch, md1_mean_wait_s
except ModuleNotFoundError as err:
    left_out(err, globals())


def __getattr__(name):
    return missing(name, __name__, globals())


__all__ = ["Bursty", "poisson_arrivals", "line_through", "linear", "measured", "roofline", "service_table", "POLICIES",
           "SimResult", "simulate", "capacity_rps", "max_rate_at_slo", "eager_steady_batch", "md1_mean_wait_s"]
