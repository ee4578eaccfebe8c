"""Lab 06's checks pass the correct top-k / error feedback / DGC / reducer and catch each classic bug."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaledl.labs import dgc_checks as D


# ----------------------------------------------------------------------- correct versions (the solution's)
def top_k(v, k):
    return np.sort(np.argsort(-np.abs(v), kind="stable")[:k])


class TopKEF:
    def __init__(self, ratio, *, bug=None):
        self.ratio, self.residuals, self.bug = ratio, {}, bug

    def compress(self, grad, key=""):
        r = self.residuals.setdefault(key, np.zeros_like(grad))
        k = max(1, math.ceil(self.ratio * grad.size))
        if self.bug == "k+1":
            k = min(grad.size, k + 1)
        if self.bug == "drop":
            r[...] = 0
        if self.bug == "from_grad":
            idx = top_k(grad.reshape(-1), k)
            r += grad
            flat = r.reshape(-1)
            values = flat[idx].copy()
            flat[idx] = 0
            return idx, values
        r += grad
        flat = r.reshape(-1)
        idx = top_k(flat, k)
        values = flat[idx].copy()
        if self.bug != "no_clear":
            flat[idx] = 0
        return idx, values


class DGCC:
    def __init__(self, ratio, momentum=0.9, masking=True, *, bug=None):
        self.ratio, self.momentum, self.masking, self.bug = ratio, momentum, masking, bug
        self.velocity, self.residuals = {}, {}

    def compress(self, grad, key=""):
        u = self.velocity.setdefault(key, np.zeros_like(grad))
        v = self.residuals.setdefault(key, np.zeros_like(grad))
        k = max(1, math.ceil(self.ratio * grad.size))
        if self.bug == "no_correction":
            u[...] = grad
        elif self.bug == "float64":
            u[...] = (np.float64(self.momentum) * u.astype(np.float64) + grad.astype(np.float64) * (1 + 1e-9))
        elif self.bug == "momentum_after":
            u += grad
            u *= np.float32(self.momentum)
        else:
            u *= np.float32(self.momentum)
            u += grad
        v += u
        flat = v.reshape(-1)
        idx = top_k(flat, k)
        values = flat[idx].copy()
        flat[idx] = 0
        if (self.masking and self.bug != "no_masking") or self.bug == "always_mask":
            u.reshape(-1)[idx] = 0
        return idx, values


def dgc(bug=None):
    return lambda ratio, momentum=0.9, masking=True: DGCC(ratio, momentum, masking, bug=bug)


class Reducer:
    def __init__(self, compressors, *, bug=None):
        self.compressors, self.sent_bytes, self.dense_bytes, self.bug = compressors, [], [], bug

    def __call__(self, worker_grads):
        out, sent = {}, 0
        for name in worker_grads[0]:
            total = np.zeros_like(worker_grads[0][name])
            for w, (c, grads) in enumerate(zip(self.compressors, worker_grads)):
                c = self.compressors[0] if self.bug == "one_compressor" else c
                idx, values = c.compress(grads[name], name if self.bug != "no_key" else "")
                dense = np.zeros(grads[name].size, np.float32)
                dense[idx] = values
                total += dense.reshape(grads[name].shape)
                sent += 4 * len(idx) if self.bug == "values_only" else 8 * len(idx)
            out[name] = total
        self.sent_bytes.append(sent)
        self.dense_bytes.append(len(worker_grads) * sum(4 * g.size for g in worker_grads[0].values()))
        return out


def _fail(r, words):
    assert not r.passed, str(r)
    assert any(words in h for h in r.hints), str(r)


# ------------------------------------------------------------------------------------------------ top-k
def test_correct_top_k_passes():
    r = D.check_top_k(top_k, report=None)
    assert r.passed and not r.hints, str(r)


@pytest.mark.parametrize("yours, words", [
    (lambda v, k: np.sort(np.argsort(-v, kind="stable")[:k]), "magnitude"),
    (lambda v, k: np.sort(len(v) - 1 - np.argsort(-np.abs(v[::-1]), kind="stable")[:k]), "ties"),
    (lambda v, k: np.argsort(-np.abs(v), kind="stable")[:k], "sorted"),
    (lambda v, k: np.sort(np.argsort(-np.abs(v), kind="stable")[:k + 1]), "exactly k"),
    (lambda v, k: np.sort(np.abs(v))[::-1][:k], "integer indices"),
])
def test_top_k_bugs_are_named(yours, words):
    _fail(D.check_top_k(yours, report=None), words)


def test_spec_top_k_is_independent_and_right():
    v = np.float32([0.5, -3, 3, 1, -1])
    assert D.spec_top_k(v, 3).tolist() == [1, 2, 3]
    assert D.spec_k(0.001, 10) == 1 and D.spec_k(0.001, 8192) == 9 and D.spec_k(1.0, 7) == 7


# --------------------------------------------------------------------------------------- error feedback
def test_correct_error_feedback_passes():
    r = D.check_error_feedback(TopKEF, report=None)
    assert r.passed and not r.hints, str(r)


@pytest.mark.parametrize("bug, words", [
    ("no_clear", "set the residual to 0"),
    ("drop", "is lost"),
    ("from_grad", "accumulated residual"),
    ("k+1", "k = ceil(ratio n)"),
])
def test_error_feedback_bugs_are_named(bug, words):
    r = D.check_error_feedback(lambda ratio: TopKEF(ratio, bug=bug), report=None)
    _fail(r, words)


def test_error_feedback_hand_case_prints_yours_and_spec():
    r = D.check_error_feedback(lambda ratio: TopKEF(ratio, bug="no_clear"), report=None)
    text = str(r)
    assert "FAIL hand" in text and "Yours:" in text and "Spec:" in text


def test_the_invariant_data_sum_exactly_in_float32():
    rng = np.random.default_rng(0)
    grads = D._ef_gradients(101, 12, rng)
    acc = np.zeros(101, np.float32)
    for g in grads:
        acc += g
    assert np.array_equal(acc.astype(np.float64), np.sum(np.asarray(grads, np.float64), axis=0))


# ------------------------------------------------------------------------------------------------- DGC
def test_correct_dgc_passes():
    r = D.check_dgc(dgc(), report=None)
    assert r.passed and not r.hints, str(r)


@pytest.mark.parametrize("bug, words", [
    ("no_correction", "raw gradient"),
    ("float64", "bit for bit"),
    ("no_masking", "momentum factor masking"),
    ("always_mask", "with masking off, u must keep"),
])
def test_dgc_bugs_are_named(bug, words):
    _fail(D.check_dgc(dgc(bug), report=None), words)


def test_dgc_momentum_after_the_add_fails():
    assert not D.check_dgc(dgc("momentum_after"), report=None).passed


def test_spec_dgc_hand_case():
    hand = [np.float32([1, -2, 0.5, 0.25]), np.float32([0.5, 1, -1, 2])]
    sent, u, v = D.spec_dgc(hand, 0.25, 0.5, masking=True)
    # step 1: u = g, v = g, send -2 at index 1; u[1] = 0
    assert sent[0].tolist() == [0, -2, 0, 0]
    # step 2: u = 0.5 [1, 0, .5, .25] + [.5, 1, -1, 2] = [1, 1, -.75, 2.125]; v = [1, 0, .5, .25] + u
    assert sent[1].tolist() == [0, 0, 0, 2.375] and u.tolist() == [1, 1, -0.75, 0] and v.tolist() == [2, 1, -0.25, 0]


# ------------------------------------------------------------------------------------------- not written
def _stub(*args, **kwargs):
    raise NotImplementedError("Task")


class _StubCompressor:
    def __init__(self, *args, **kwargs):
        self.residuals, self.velocity = {}, {}

    def compress(self, grad, key=""):
        raise NotImplementedError("Task 1.2")


@pytest.mark.parametrize("check, arg", [
    (D.check_top_k, _stub), (D.check_error_feedback, _StubCompressor), (D.check_dgc, _StubCompressor),
    (D.check_reducer, _stub),
])
def test_an_unwritten_task_reaches_the_notebooks_task_block(check, arg):
    """The stub's NotImplementedError goes through the check, untouched, to the notebook's ``with task(...)``
    block, which reports it as not answered yet (tests/unit/test_labs_unanswered.py)."""
    import io

    with pytest.raises(NotImplementedError, match="Task"):
        check(arg, report=io.StringIO())


# --------------------------------------------------------------------------------------------- reducer
def test_correct_reducer_passes():
    r = D.check_reducer(Reducer, report=None)
    assert r.passed and not r.hints, str(r)


@pytest.mark.parametrize("bug, words", [
    ("one_compressor", "compressors[w]"),
    ("no_key", "tensor's name as the key"),
    ("values_only", "8 bytes"),
])
def test_reducer_bugs_are_named(bug, words):
    _fail(D.check_reducer(lambda cs: Reducer(cs, bug=bug), report=None), words)


def test_compressed_training_check_on_a_short_run():
    from scaledl.nn import SGD, digits, mlp, train

    data = digits()
    red = Reducer([DGCC(0.01) for _ in range(2)])
    model = mlp([64, 16, 10], seed=0)
    h = train(model, data, steps=30, batch_size=32, workers=2, reducer=red, optimizer=SGD(lr=0.05, momentum=0.0))
    ok = D.check_compressed_training(model, data, red, steps=h.steps, target_accuracy=0.0, min_ratio=10,
                                     report=None)
    assert ok.passed, str(ok)
    assert D.compression_ratio(red) == pytest.approx(sum(red.dense_bytes) / sum(red.sent_bytes))
    strict = D.check_compressed_training(model, data, red, steps=h.steps, target_accuracy=1.01, min_ratio=1e6,
                                         report=None)
    assert not strict.passed and sum(line.startswith("FAIL ") for line in strict.lines) == 2
    stale = D.check_compressed_training(model, data, red, steps=h.steps - 1, target_accuracy=0.0, min_ratio=1,
                                        report=None)
    _fail(stale, "fresh reducer")


# --------------------------------------------------------------------------- the specification, by property
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), steps=st.integers(1, 8), ratio=st.floats(0.01, 1.0), seed=st.integers(0, 2**16))
def test_spec_topk_ef_keeps_the_invariant_exactly(n, steps, ratio, seed):
    grads = D._ef_gradients(n, steps, np.random.default_rng(seed))
    sent, residual = D.spec_topk_ef(grads, ratio)
    have = np.sum(np.asarray(sent, np.float64), axis=0) + residual
    assert np.array_equal(have, np.sum(np.asarray(grads, np.float64), axis=0))
    assert all(np.count_nonzero(s) <= D.spec_k(ratio, n) for s in sent)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), steps=st.integers(1, 10), momentum=st.sampled_from([0.0, 0.5, 0.9, 0.99]),
       seed=st.integers(0, 2**16))
def test_spec_dgc_at_ratio_one_is_momentum_sgd_and_with_masking_plain_sgd(n, steps, momentum, seed):
    from scaledl.nn.optim import SGD

    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(n).astype(np.float32) for _ in range(steps)]
    sent, _, v = D.spec_dgc(grads, 1.0, momentum, masking=False)
    opt = SGD(lr=0.1, momentum=momentum) if momentum else None
    for g, s in zip(grads, sent):
        if opt is not None:
            opt.step({"w": np.zeros(n, np.float32)}, {"w": g})
            assert np.array_equal(s, opt.velocity["w"])
        else:
            assert np.array_equal(s, g)
    assert not v.any()
    sent, u, _ = D.spec_dgc(grads, 1.0, momentum, masking=True)
    assert all(np.array_equal(s, g) for s, g in zip(sent, grads)) and not u.any()


def test_a_malformed_message_is_a_failure_that_says_what_was_expected():
    class Dense(TopKEF):
        def compress(self, grad, key=""):
            return grad.copy()

    r = D.check_error_feedback(Dense, report=None)
    assert not r.passed and "tuple (indices, values)" in str(r)
    r = D.check_dgc(lambda ratio, momentum=0.9, masking=True: Dense(ratio), report=None)
    assert not r.passed and "tuple (indices, values)" in str(r)
