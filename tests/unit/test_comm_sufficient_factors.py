"""Sufficient factors: byte counts, crossovers, and the server's dW equal to the worker's on random data."""

import numpy as np
import pytest

from scaledl.comm import sufficient_factors as sf


def test_bytes_and_crossover():
    assert sf.dense_gradient_bytes(4096, 9216) == 4096 * 9216 * 4
    assert sf.factor_bytes(4096, 9216, 256) == 256 * (4096 + 9216) * 4
    b = sf.crossover_batch(4096, 9216)  # AlexNet fc6
    assert b == pytest.approx(4096 * 9216 / 13312)
    assert sf.factor_bytes(4096, 9216, int(b)) < sf.dense_gradient_bytes(4096, 9216) < sf.factor_bytes(
        4096, 9216, int(b) + 1)
    # between half of min(m, n) and min(m, n)
    for m, n in [(1, 1), (10, 1000), (4096, 4096), (1000, 7)]:
        assert min(m, n) / 2 <= sf.crossover_batch(m, n) <= min(m, n)


def test_per_worker_bytes_schemes():
    m, n, b, p = 4096, 4096, 256, 8
    assert sf.per_worker_bytes("ps", m, n, batch=b, workers=p) == 2 * m * n * 4
    assert sf.per_worker_bytes("ps_factors", m, n, batch=b, workers=p) == (b * (m + n) + m * n) * 4
    assert sf.per_worker_bytes("sfb", m, n, batch=b, workers=p) == 2 * (p - 1) * b * (m + n) * 4
    bstar = sf.sfb_crossover_batch(m, n, p)
    assert bstar == pytest.approx(2048 / 7)
    lo, hi = int(bstar), int(bstar) + 1
    assert sf.per_worker_bytes("sfb", m, n, batch=lo, workers=p) < sf.per_worker_bytes("ps", m, n, batch=lo, workers=p)
    assert sf.per_worker_bytes("sfb", m, n, batch=hi, workers=p) > sf.per_worker_bytes("ps", m, n, batch=hi, workers=p)
    assert sf.sfb_crossover_batch(m, n, 1) == float("inf")


@pytest.mark.parametrize("seed,batch,m,n,workers", [(0, 7, 5, 3, 1), (1, 33, 17, 29, 4), (2, 1, 64, 1, 3)])
def test_server_gradient_from_factors_equals_workers_gradient(seed, batch, m, n, workers):
    rng = np.random.default_rng(seed)
    factors = [(rng.standard_normal((batch, m)), rng.standard_normal((batch, n))) for _ in range(workers)]
    worker = sum(sf.weight_gradient(d, x) for d, x in factors)  # what all-reducing dW would give
    server = sf.gradient_from_factors(factors)
    # independent reference: a triple loop in exact-enough float64 via math.fsum would be slow; the bound
    # is the one two summation orders of the same products can differ by
    bound = sf.rounding_bound(factors)
    assert server.shape == (m, n)
    assert np.all(np.abs(server - worker) <= bound)
    # the check can fail: a factor from one example dropped is far outside the bound
    wrong = sf.gradient_from_factors([(d[1:], x[1:]) for d, x in factors[:1]] + factors[1:]) if batch > 1 else \
        sf.gradient_from_factors(factors) + 1.0
    assert not np.all(np.abs(wrong - worker) <= bound)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="scheme='allreduce'; expected one of ps, ps_factors, sfb"):
        sf.per_worker_bytes("allreduce", 2, 2, batch=1, workers=2)
    with pytest.raises(ValueError, match="batch must be an int >= 1, got 0"):
        sf.factor_bytes(2, 2, 0)
    with pytest.raises(TypeError, match="m must be an int, got 2.5"):
        sf.crossover_batch(2.5, 2)
    with pytest.raises(ValueError, match=r"delta and x must be \(batch, m\) and \(batch, n\) with one batch"):
        sf.weight_gradient(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="factors must hold at least one"):
        sf.gradient_from_factors([])
