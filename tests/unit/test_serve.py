"""The serving simulator against queueing theory (M/D/1, the eager batcher's steady state), its policies'
defining behaviour, the SLO search, and its errors.

Statistical tolerances: a simulated mean is compared with theory to within 4 standard errors, the standard
error estimated by batch means (the run cut into 40 consecutive blocks, whose means are nearly independent
when each block spans many relaxation times of the queue). Four standard errors makes a false alarm rarer than
1 in 10,000 per comparison, and every run is seeded, so a pass is reproducible.
"""

import math

import numpy as np
import pytest

from scaledl.serve import (Bursty, capacity_rps, eager_steady_batch, linear, max_rate_at_slo, md1_mean_wait_s,
                           measured, poisson_arrivals, roofline, service_table, simulate)


def batch_means_se(x, blocks=40):
    """Standard error of the mean of a correlated series, from the spread of its block means."""
    m = np.asarray(x)[: len(x) // blocks * blocks].reshape(blocks, -1).mean(axis=1)
    return float(m.std(ddof=1) / math.sqrt(blocks))


@pytest.mark.parametrize("rho", [0.3, 0.5, 0.7, 0.9])
def test_single_matches_md1_pollaczek_khinchine(rho):
    service_s = 0.002
    rate = rho / service_s
    r = simulate("single", rate=rate, service=linear(service_s, 0.0), n_requests=1_000_000, seed=int(10 * rho))
    wait_s = r.latency_s[50_000:] - service_s  # drop the start-up transient from an empty queue
    theory_s = md1_mean_wait_s(rate, service_s)
    assert abs(wait_s.mean() - theory_s) <= 4 * batch_means_se(wait_s), (wait_s.mean(), theory_s)
    assert np.all(r.batch_size == 1) and r.throughput_rps == pytest.approx(rate, rel=0.01)


def test_single_is_lindleys_recursion():
    """W_{n+1} = max(0, W_n + S - A_{n+1}), solved independently as a running minimum of a random walk."""
    rate, service_s = 900.0, 0.001
    r = simulate("single", rate=rate, service=linear(service_s, 0.0), n_requests=5001, seed=3)
    walk = np.concatenate(([0.0], np.cumsum(service_s - np.diff(r.arrival_s))))
    wait_s = walk - np.minimum.accumulate(walk)
    np.testing.assert_allclose(r.latency_s - service_s, wait_s, rtol=0, atol=1e-12)  # rounding of sums of ~1 s


@pytest.mark.parametrize("rate", [500.0, 2000.0, 3500.0])
def test_eager_batch_matches_steady_state(rate):
    a_s, c_s = 0.010, 0.0002  # lambda a = 5 .. 35 requests arrive during the fixed part of a batch
    r = simulate("batch_dispatch", rate=rate, service=linear(a_s, c_s), n_requests=400_000, seed=7,
                 max_batch=4096)
    b = r.batch_size[200:]
    assert b.max() < 4096  # the cap never binds, as the closed form assumes
    # exact renewal identity: E[b] = (lambda a + p0) / (1 - lambda c), p0 = share of batches of one that
    # started on an empty queue (a batch of one is the only way to start after idling)
    p0 = float(np.mean(r.batch_start_s[200:] == r.arrival_s[np.cumsum(r.batch_size)[199:-1]]))
    se = batch_means_se(b)
    assert abs(b.mean() - (rate * a_s + p0) / (1 - rate * c_s)) <= 4 * se
    # the closed form ignores p0 <= P(no arrival in a) = exp(-lambda a)
    bias = math.exp(-rate * a_s) / (1 - rate * c_s)
    assert abs(b.mean() - eager_steady_batch(rate, a_s, c_s)) <= 4 * se + bias


def test_dynamic_without_delay_or_preferred_sizes_is_batch_dispatch():
    kw = dict(rate=1500.0, service=linear(0.004, 0.0003), n_requests=50_000, seed=11)
    eager = simulate("batch_dispatch", max_batch=16, **kw)
    dyn = simulate("dynamic", max_batch=16, **kw)
    assert np.array_equal(eager.latency_s, dyn.latency_s) and np.array_equal(eager.batch_size, dyn.batch_size)


def test_dynamic_sends_preferred_sizes_or_waits_out_the_delay():
    delay_s = 0.003
    r = simulate("dynamic", rate=1200.0, service=linear(0.002, 0.0002), n_requests=30_000, seed=5, max_batch=8,
                 preferred_batch_sizes=(4,), max_queue_delay_s=delay_s)
    oldest_s = r.arrival_s[np.concatenate(([0], np.cumsum(r.batch_size)[:-1]))]
    prev_end_s = np.concatenate(([0.0], (r.batch_start_s + 0.002 + 0.0002 * r.batch_size)[:-1]))
    timed_out_s = np.maximum(oldest_s + delay_s, prev_end_s)  # when the delay, or the busy server, lets it go
    preferred = np.isin(r.batch_size, (4, 8))
    # a batch of another size went exactly when its oldest request's delay ran out (or the server freed up)
    np.testing.assert_allclose(r.batch_start_s[~preferred], timed_out_s[~preferred], rtol=0, atol=1e-12)
    assert np.all(r.batch_start_s <= timed_out_s + 1e-12)  # and none went later than that
    assert 0.05 < np.mean(~preferred) < 0.95 and np.any(r.batch_size == 4)


def test_dynamic_at_light_load_holds_each_request_for_the_delay():
    delay_s, t1 = 0.005, 0.0021
    r = simulate("dynamic", rate=1.0, service=linear(0.002, 0.0001), n_requests=2000, seed=2, max_batch=32,
                 max_queue_delay_s=delay_s)
    assert r.p50_s == pytest.approx(delay_s + t1, abs=1e-12)  # alone in the queue: wait the delay, then serve


def test_adaptive_settles_at_the_largest_batch_within_the_slo():
    svc, slo_s = linear(0.002, 0.001), 0.0205  # service(18) = 20 ms meets the objective, service(19) does not
    r = simulate("adaptive", rate=5000.0, service=svc, n_requests=60_000, seed=4, max_batch=64,
                 latency_objective_s=slo_s)
    late = r.batch_size[len(r.batch_size) // 2:-20]  # overloaded: the queue stays full (until the last few
    # batches, dropped), so the cap alone decides the batch
    # additive increase from 17.1 reaches 19 (over the objective), then x 0.9 back to 17.1: sizes 17, 18, 19
    assert set(np.unique(late)) == {17, 18, 19}
    assert np.mean(late == 19) == pytest.approx(1 / 3, abs=0.01)


def test_max_rate_at_slo_brackets_the_boundary():
    svc, slo_s = linear(0.002, 0.0005), 0.050
    rate = max_rate_at_slo("single", service=svc, slo_s=slo_s, n_requests=20_000, rtol=1e-3)
    at = simulate("single", rate=rate, service=svc, n_requests=20_000, seed=0)
    above = simulate("single", rate=rate * 1.002, service=svc, n_requests=20_000, seed=0)
    assert at.p98_s <= slo_s < above.p98_s
    assert rate < capacity_rps("single", svc) == pytest.approx(1 / 0.0025)
    eager = max_rate_at_slo("batch_dispatch", service=svc, slo_s=slo_s, n_requests=20_000, max_batch=64)
    assert 4 < eager / rate < 5  # this service curve gives Seed 001's "4x more users at acceptable latency"
    assert max_rate_at_slo("single", service=linear(0.1, 0.0), slo_s=0.05, n_requests=1000) == 0.0


def test_service_models():
    gemv = roofline([(4096, 4096)], device="H100 SXM", precision="fp16")
    weights_s = 4096 * 4096 * 2 / 3.35e12  # batch 1: the weights cross HBM once (H100 SXM: 3.35 TB/s)
    assert gemv(1) == pytest.approx(weights_s, rel=0.01)
    table = service_table(gemv, 1024)[1:]
    assert np.all(np.diff(table) >= 0) and table[-1] / table[0] > 2  # compute bound by batch 1024
    kv = roofline([(4096, 4096)], device="H100 SXM", precision="fp16", bytes_per_request=1e9)
    assert kv(8) - kv(4) == pytest.approx(4 * 1e9 / 3.35e12, rel=1e-3)  # unshared bytes grow with the batch
    with pytest.raises(ValueError, match="bytes_per_request must be a finite number >= 0, got -1"):
        roofline([(8, 8)], bytes_per_request=-1)
    m = measured([1, 4, 16], [1e-3, 2e-3, 5e-3])
    assert m(10) == pytest.approx(3.5e-3)
    with pytest.raises(ValueError, match="batch 17 is outside the measured range"):
        m(17)


def test_bursty_traffic_keeps_its_mean_rate_and_clumps():
    t = Bursty(peak_to_mean=4.0, busy_fraction=0.2, requests_per_burst=50).arrivals(100.0, 200_000, seed=0)
    assert 200_000 / t[-1] == pytest.approx(100.0, rel=0.05)  # a few hundred bursts: a few % of noise
    counts = np.bincount((t / 0.1).astype(int))[:-1]  # requests per 100 ms, 10 expected
    p = np.bincount((poisson_arrivals(100.0, 200_000, seed=0) / 0.1).astype(int))[:-1]
    assert counts.var() / counts.mean() > 5 and p.var() / p.mean() == pytest.approx(1.0, abs=0.05)
    r = simulate("batch_dispatch", rate=100.0, service=linear(0.002, 0.001), n_requests=20_000, arrivals="bursty")
    q = simulate("batch_dispatch", rate=100.0, service=linear(0.002, 0.001), n_requests=20_000)
    assert r.p99_s > q.p99_s


def test_errors():
    svc = linear(0.001, 0.0)
    with pytest.raises(ValueError, match="rate must be a positive finite number, got 0"):
        simulate("single", rate=0, service=svc, n_requests=10)
    with pytest.raises(ValueError, match="rate must be a positive finite number, got -5.0"):
        simulate("single", rate=-5.0, service=svc, n_requests=10)
    with pytest.raises(ValueError, match=r"policy='fifo' is not a batching policy; expected one of"):
        simulate("fifo", rate=1.0, service=svc, n_requests=10)
    with pytest.raises(ValueError, match=r"service\(3\) = 0.0: service times must be positive"):
        simulate("batch_dispatch", rate=1.0, service=lambda b: 0.0 if b == 3 else 1.0, n_requests=10, max_batch=4)
    with pytest.raises(ValueError, match=r"service\(2\) = 0.5 < service\(1\) = 1.0: service times must not "
                                         r"decrease as the batch grows"):
        simulate("batch_dispatch", rate=1.0, service=lambda b: 1.0 / b, n_requests=10, max_batch=4)
    with pytest.raises(ValueError, match=r"service\(1\) = nan"):
        simulate("single", rate=1.0, service=lambda b: float("nan"), n_requests=10)
    with pytest.raises(TypeError, match=r"service\(1\) must return a number of seconds, got 'fast'"):
        simulate("single", rate=1.0, service=lambda b: "fast", n_requests=10)
    with pytest.raises(TypeError, match="service must be a callable"):
        simulate("single", rate=1.0, service=0.001, n_requests=10)
    with pytest.raises(TypeError, match="policy 'single' takes no option 'max_batch'"):
        simulate("single", rate=1.0, service=svc, n_requests=10, max_batch=4)
    with pytest.raises(TypeError, match="policy 'adaptive' needs latency_objective_s"):
        simulate("adaptive", rate=1.0, service=svc, n_requests=10)
    with pytest.raises(ValueError, match=r"preferred_batch_sizes must be integers in \[1, max_batch=8\], got \(16,\)"):
        simulate("dynamic", rate=1.0, service=svc, n_requests=10, max_batch=8, preferred_batch_sizes=(16,))
    with pytest.raises(ValueError, match="max_queue_delay_s must be a finite number >= 0, got -1"):
        simulate("dynamic", rate=1.0, service=svc, n_requests=10, max_queue_delay_s=-1)
    with pytest.raises(ValueError, match="n_requests must be an int >= 1, got 0"):
        simulate("single", rate=1.0, service=svc, n_requests=0)
    with pytest.raises(ValueError, match="arrivals='uniform'"):
        simulate("single", rate=1.0, service=svc, n_requests=10, arrivals="uniform")
    with pytest.raises(ValueError, match="rate x service_s = 1.2 must be < 1"):
        md1_mean_wait_s(1200.0, 0.001)
    with pytest.raises(ValueError, match="rate x c_s = 1 must be < 1"):
        eager_steady_batch(1000.0, 0.01, 0.001)
    with pytest.raises(ValueError, match="c_s must be a finite number >= 0"):
        linear(0.001, -1e-3)
    with pytest.raises(ValueError, match="peak_to_mean \\* busy_fraction must be <= 1"):
        Bursty(peak_to_mean=6.0, busy_fraction=0.2)
    with pytest.raises(ValueError, match="batch_sizes must be positive integers in increasing order"):
        measured([4, 2], [1e-3, 2e-3])
    with pytest.raises(ValueError, match=r"percentile must be in \(0, 100\), got 100"):
        max_rate_at_slo("single", service=svc, slo_s=0.01, percentile=100)


def test_users_at_slo_table_and_view():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from scaledl.serve.views import serving_view, users_at_slo

    svc = linear(0.002, 0.001)  # adaptive holds each batch to 20 ms: batch <= 18, below max_batch
    rows = users_at_slo(svc, 0.020, n_requests=10_000, max_batch=32)
    by = {r["policy"]: r for r in rows}
    assert by["single"]["vs_single"] == 1.0 and by["batch_dispatch"]["vs_single"] > 1
    assert by["adaptive"]["max_rate_rps"] == max_rate_at_slo("adaptive", service=svc, slo_s=0.020, n_requests=10_000,
                                                             max_batch=32, latency_objective_s=0.020)
    fig = serving_view("batch_dispatch", slo_ms=50, n_requests=5000)
    title = fig.axes[0].get_title()
    assert title.startswith("linear, batch_dispatch:") and "vs single" in title and title.endswith("x)")
    plt.close(fig)


def test_the_line_through_two_measured_points_is_exact_on_a_linear_curve_and_scores_the_rest():
    from scaledl.serve import line_through

    sizes = [1, 2, 4, 8, 16, 32, 64, 128]
    fit = line_through(measured(sizes, [0.002 + 0.0005 * b for b in sizes]))
    assert fit.a_s == pytest.approx(0.002) and fit.c_s == pytest.approx(0.0005) and fit.fitted_at == (1, 64)
    assert set(fit.errors) == {2, 4, 8, 16, 32, 128} and fit.mean_abs_error == pytest.approx(0, abs=1e-12)
    # a curve that bends (flat, then linear, as a GEMM that fills the GPU at 32) is missed where it bends
    bent = [max(0.010, 0.0005 * b) for b in sizes]
    fit = line_through(measured(sizes, np.maximum.accumulate(bent)))
    c = (0.032 - 0.010) / 63  # through (1, 10 ms) and (64, 32 ms)
    assert fit.c_s == pytest.approx(c) and fit.a_s == pytest.approx(0.010 - c)
    assert fit.errors[8] == pytest.approx(7 * c / 0.010)  # +24 %: the line rises where the GPU is not yet full
    assert fit.errors[128] == pytest.approx((0.010 + 127 * c - 0.064) / 0.064)  # -15 %: and falls short beyond 64


@pytest.mark.parametrize("b0, b1", [(1, 3), (64, 1), (2, 2)])
def test_the_line_needs_two_measured_sizes_in_order(b0, b1):
    from scaledl.serve import line_through

    with pytest.raises(ValueError, match=f"b0={b0}, b1={b1}"):
        line_through(measured([1, 2, 64], [1.0, 2.0, 3.0]), b0, b1)
    with pytest.raises(TypeError, match="curve"):
        line_through([1.0, 2.0])
