"""The student-facing policy loop (lab 07): it reproduces the compiled simulator exactly for the reference
policies, and its check names each classic batch-dispatch bug."""

import numpy as np
import pytest

from scaledl.serve import linear, simulate
from scaledl.labs.batch_checks import check_batch_policy
from scaledl.serve.hook import batch_dispatch_spec, run_policy, single_spec

SERVICE = linear(0.002, 0.0005)


@pytest.mark.parametrize("rate", [50.0, 800.0, 3000.0])
@pytest.mark.parametrize("policy,spec,max_batch", [("single", single_spec, 1),
                                                    ("batch_dispatch", batch_dispatch_spec, 64),
                                                    ("batch_dispatch", batch_dispatch_spec, 5)])
def test_reference_policies_reproduce_simulate_exactly(policy, spec, max_batch, rate):
    opts = {} if policy == "single" else {"max_batch": max_batch}
    want = simulate(policy, rate=rate, service=SERVICE, n_requests=5000, seed=2, **opts)
    got = run_policy(spec, rate=rate, service=SERVICE, n_requests=5000, max_batch=max_batch, seed=2)
    np.testing.assert_array_equal(got.batch_size, want.batch_size)
    np.testing.assert_array_equal(got.latency_s, want.latency_s)  # same sums in the same order: same bits
    assert got.overlapping == 0 and got.unserved == 0


def correct(waiting, busy, max_batch):
    return 0 if busy else min(waiting, max_batch)


def cap_plus_one(waiting, busy, max_batch):
    return 0 if busy else min(waiting, max_batch + 1)


def cap_minus_one(waiting, busy, max_batch):
    return 0 if busy else min(waiting, max(max_batch - 1, 1))


def ignores_busy(waiting, busy, max_batch):
    return min(waiting, max_batch)


def full_batches_only(waiting, busy, max_batch):
    return max_batch if not busy and waiting >= max_batch else 0


def test_check_passes_the_correct_policy():
    assert check_batch_policy(correct, n_requests=5000, report=None).passed


@pytest.mark.parametrize("policy,hint", [
    (cap_plus_one, "never more"),
    (cap_minus_one, "max_batch - 1"),
    (ignores_busy, "dispatching while busy"),
    (full_batches_only, "never dispatching a partial batch"),
])
def test_check_names_each_classic_bug(policy, hint):
    r = check_batch_policy(policy, n_requests=5000, report=None)
    assert not r.passed
    assert any(hint in h for h in r.hints), r.hints
    assert "Yours" in str(r) and "Spec" in str(r) or "never served" in str(r)
    with pytest.raises(AssertionError, match="did not pass|FAIL"):
        r.raise_if_failed()


def test_a_single_server_cannot_overlap_and_stalls_are_counted():
    r = run_policy(ignores_busy, rate=800.0, service=SERVICE, n_requests=2000)
    assert r.overlapping > 0
    r = run_policy(full_batches_only, rate=50.0, service=SERVICE, n_requests=2001, max_batch=4)
    assert r.unserved == 1 and np.isinf(r.latency_s[-1])


def test_errors():
    with pytest.raises(ValueError, match="returned 3: a batch must take between 0 and the 1 waiting"):
        run_policy(lambda w, b, m: 3, rate=10.0, service=SERVICE, n_requests=10)
    with pytest.raises(TypeError, match="returned None"):
        run_policy(lambda w, b, m: None, rate=10.0, service=SERVICE, n_requests=10)
    with pytest.raises(TypeError, match=r"returned 1.0 \(float\); expected an int"):
        run_policy(lambda w, b, m: 1.0, rate=10.0, service=SERVICE, n_requests=10)
    with pytest.raises(TypeError, match="next_batch must be a function"):
        run_policy(3, rate=10.0, service=SERVICE, n_requests=10)
    with pytest.raises(ValueError, match="rate must be a positive finite number, got -1"):
        run_policy(correct, rate=-1.0, service=SERVICE, n_requests=10)
    with pytest.raises(ValueError, match="max_batch must be an int >= 1, got 0"):
        run_policy(correct, rate=1.0, service=SERVICE, n_requests=10, max_batch=0)
    with pytest.raises(ValueError, match=r"service\(1\) = 0.0"):
        run_policy(correct, rate=1.0, service=lambda b: 0.0, n_requests=10)
    r = check_batch_policy(lambda w, b, m: w + 1 if not b else 0, n_requests=200, report=None)
    assert not r.passed and "ValueError" in str(r)
