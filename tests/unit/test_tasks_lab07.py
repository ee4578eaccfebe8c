"""Lab 07's graded tasks: each judge accepts a correct answer, rejects the classic bugs and hostile results."""

import sys
from pathlib import Path

import numpy as np
import pytest

from scaledl.course import exchange
from scaledl.course.tasks import get
from scaledl.serve import eager_steady_batch, max_rate_at_slo, md1_mean_wait_s
from scaledl.serve.hook import batch_dispatch_spec, run_policy, single_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared task_helpers module
from task_helpers import graded, rejected  # noqa: E402

SEEDS = (0, 1, 2)


def _users_ref(policy, service, slo_s, max_batch):
    """The library's answer (it simulates batch dispatch itself, the policy the task is graded with)."""
    assert policy is batch_dispatch_spec  # produce hands over the reference policy
    return max_rate_at_slo("batch_dispatch", service=service, slo_s=slo_s, n_requests=20_000, max_batch=max_batch)


def _users_bisect(policy, service, slo_s, max_batch, q=98.0):
    """The lab's own bisection over the student's event loop, at the ``q``-th latency percentile."""
    def meets(rate):
        r = run_policy(policy, rate=rate, service=service, n_requests=20_000, max_batch=max_batch, seed=0)
        return r.percentile_s(q) <= slo_s

    lo, hi = 0.0, max_batch / service(max_batch)
    if meets(hi):
        return hi
    while hi - lo > 1e-3 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo


CORRECT = {
    "task_1_1": lambda: {"batch_dispatch": batch_dispatch_spec},
    "task_1_2": lambda: {"md1_wait": md1_mean_wait_s, "one_at_a_time": single_spec},
    "task_2_1": lambda: {"steady_batch": eager_steady_batch},
    "task_3_1": lambda: {"max_users": _users_ref},
}


def _run(grade_id, ns, seed=0):
    return graded("lab07", grade_id, ns, seed)


def _rejects(grade_id, ns, match, seed=0):
    rejected(*_run(grade_id, ns, seed), match)


# (a) a correct answer passes on several seeds and at the notebook's local seed
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_judge_accepts_a_correct_answer(grade_id, seed):
    task, inp, out = _run(grade_id, CORRECT[grade_id](), seed)
    task.judge(inp, out)


@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_judge_accepts_a_correct_answer_at_the_local_seed(grade_id):
    task = get("lab07", grade_id)
    _, inp, out = _run(grade_id, CORRECT[grade_id](), task.local_seed)
    task.judge(inp, out)


@pytest.mark.parametrize("seed", SEEDS)
def test_task_3_1_accepts_the_labs_own_bisection(seed):
    task, inp, out = _run("task_3_1", {"max_users": _users_bisect}, seed)
    task.judge(inp, out)


# (b) the classic bugs
def test_task_1_1_rejects_dispatching_while_busy_an_off_by_one_cap_and_full_batches_only():
    _rejects("task_1_1", {"batch_dispatch": lambda w, busy, mb: min(w, mb)},
             r"Task 1\.1: batch_dispatch\(\d+, True, \d+\): Yours [1-9]\d*, Spec 0")
    _rejects("task_1_1", {"batch_dispatch": lambda w, busy, mb: 0 if busy else min(w, max(mb - 1, 1))},
             r"Task 1\.1: batch_dispatch")
    _rejects("task_1_1", {"batch_dispatch": lambda w, busy, mb: mb if not busy and w >= mb else 0},
             r"Task 1\.1: batch_dispatch")
    _rejects("task_1_1", {"batch_dispatch": lambda w, busy, mb: None}, r"Task 1\.1: .*Yours 'None'")


def test_task_1_1_catches_a_policy_that_is_right_on_the_table_but_not_while_serving():
    calls = [0]

    def cheat(w, busy, mb):  # right for the first calls (the table), then an off-by-one cap
        calls[0] += 1
        return batch_dispatch_spec(w, busy, mb if calls[0] <= 100 or mb == 1 else mb - 1)

    _rejects("task_1_1", {"batch_dispatch": cheat}, r"Task 1\.1: rate \d+ req/s, max_batch=\d+: the first "
                                                     r"different batch is number \d+: Yours \d+, Spec \d+")


def test_task_1_1_shows_the_event_loops_refusal():
    calls = [0]

    def too_many(w, busy, mb):
        calls[0] += 1
        return w + 1 if calls[0] > 100 and not busy else batch_dispatch_spec(w, busy, mb)

    task, inp, out = _run("task_1_1", {"batch_dispatch": too_many})
    assert "error_0" in out and "batch_size_0" not in out
    with pytest.raises(AssertionError, match=r"Task 1\.1: rate \d+ req/s, max_batch=\d+: ValueError: next_batch"):
        task.judge(inp, out)


def test_task_1_1_rejects_overlapping_and_unserved_counts():
    task, inp, good = _run("task_1_1", CORRECT["task_1_1"]())
    for key, match in (("overlapping_2", "started while another was running"), ("unserved_0", "never served")):
        with pytest.raises(AssertionError, match=rf"Task 1\.1: .*{match}"):
            task.judge(inp, {**good, key: 3})


def test_task_1_2_rejects_a_missing_factor_two_and_a_policy_that_starts_while_busy():
    wrong_wait = lambda r, s: r * s * s / (1 - r * s)
    _rejects("task_1_2", {"md1_wait": wrong_wait, "one_at_a_time": single_spec},
             r"Task 1\.2: md1_wait\(.*\): Yours .*, Spec")
    _rejects("task_1_2", {"md1_wait": md1_mean_wait_s, "one_at_a_time": lambda w, busy, mb: min(w, 1)},
             r"Task 1\.2: one_at_a_time\(\d+, True, 1\): Yours 1, Spec 0")
    _rejects("task_1_2", {"md1_wait": md1_mean_wait_s, "one_at_a_time": lambda w, busy, mb: 0 if busy else 1},
             r"Task 1\.2: one_at_a_time\(0, False, 1\): Yours 1, Spec 0")


def test_task_2_1_rejects_a_sign_error():
    _rejects("task_2_1", {"steady_batch": lambda r, a, c: r * a / (1 + r * c)},
             r"Task 2\.1: steady_batch\(.*\): Yours .*, Spec")


def test_task_3_1_rejects_the_median_and_the_capacity():
    p50 = lambda policy, svc, slo, mb: _users_bisect(policy, svc, slo, mb, q=50.0)
    _rejects("task_3_1", {"max_users": p50}, r"Task 3\.1: service .* Yours \d+\.\d req/s, Spec \d+\.\d req/s")
    _rejects("task_3_1", {"max_users": lambda policy, svc, slo, mb: mb / svc(mb)}, r"Task 3\.1")


# (c) hostile results
def _junk(value):
    yield "missing", None
    yield "a string", "junk"
    yield "None", None
    yield "a huge number", 1e308
    yield "NaN", float("nan")
    yield "a bool", True
    yield "a nested list", [[1, 2], [3]]
    yield "a wrong shape", np.zeros((2, 3))
    if isinstance(value, np.ndarray):
        yield "all zeros", np.zeros_like(value)
        yield "all NaN", np.full(value.shape, np.nan)
        yield "one element too many", np.concatenate([value.ravel(), value.ravel()[:1]])
        yield "huge values", np.full(value.shape, 1e300)
    if isinstance(value, list):
        yield "all zeros", [0] * len(value)
        yield "all True", [True] * len(value)
        yield "one too few", value[:-1]
        yield "as floats", np.asarray(value, np.float64)


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and \
            a.dtype.kind == b.dtype.kind and np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_judge_rejects_hostile_outputs(grade_id):
    task, inp, good = _run(grade_id, CORRECT[grade_id]())
    for key, value in good.items():
        for label, bad in _junk(value):
            out = dict(good)
            if label == "missing":
                del out[key]
            elif _same(bad, value):
                continue  # the junk happens to be the right answer
            else:
                out[key] = bad
            with pytest.raises(AssertionError, match=task.title):
                task.judge(inp, exchange.roundtrip(out))


# (d) fresh inputs per grading run
@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_make_inputs_differs_between_seeds(grade_id):
    task = get("lab07", grade_id)
    a, b = task.make_inputs(np.random.default_rng(1)), task.make_inputs(np.random.default_rng(2))
    assert a.keys() == b.keys()
    assert any(a[k] != b[k] for k in a)


def test_task_1_1_inputs_cover_every_kind_of_queue():
    inp = get("lab07", "task_1_1").make_inputs(np.random.default_rng(0))
    rows = inp["table"]
    assert any(busy for _, busy, _ in rows) and any(w == 0 and not busy for w, busy, _ in rows)
    assert any(w > mb and not busy for w, busy, mb in rows) and any(w == mb and not busy for w, busy, mb in rows)
    assert [c["max_batch"] for c in inp["loads"]][-1] == 1


@pytest.mark.parametrize("seed", range(8))
def test_task_3_1_rejects_the_p90_near_miss_on_every_draw(seed):
    """The SLO read at p90 instead of p98 lies within 1 % of the answer at loose objectives (4 batches: 39
    draws in 60); the judge's three objectives of 2 to 3 batches catch it on every draw."""
    p90 = lambda policy, svc, slo, mb: _users_bisect(policy, svc, slo, mb, q=90.0)  # noqa: E731
    _rejects("task_3_1", {"max_users": p90}, r"Task 3\.1: service .* p98 <= .* Yours \d+\.\d req/s", seed)
