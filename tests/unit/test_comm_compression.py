"""scaledl.comm.compression: unbiasedness, error-feedback invariants, DGC vs momentum SGD, sizes, errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaledl.comm.compression import (DGC, CompressedReducer, compressed_reducer, make_compressor)
from scaledl.nn import SGD, mlp, teacher_student, train

UNBIASED = [("terngrad", {"clip_sigmas": None}), ("qsgd", {"levels": 4}), ("stochastic_round", {"bits": 3})]


@pytest.mark.parametrize("name,options", UNBIASED)
def test_unbiased_quantizers_average_to_the_gradient(name, options):
    rng = np.random.default_rng(1)
    g = rng.standard_normal(37).astype(np.float32)
    c = make_compressor(name, seed=2, **options)
    draws = 4000
    dec = np.array([c.compress(g).decode() for _ in range(draws)], np.float64)
    # Each coordinate's mean is a sum of independent bounded draws: its standard error is the sample std
    # over sqrt(draws). 5 standard errors: a 1-in-1.7-million miss per coordinate if unbiased (fixed seed, so
    # the test is deterministic; a bias of a quarter of the spread would fail it).
    se = dec.std(axis=0) / math.sqrt(draws) + 1e-12
    z = np.abs(dec.mean(axis=0) - g) / se
    assert z.max() < 5, (name, z.max())
    # and the test can fail: a biased version (every draw scaled by 1.05) is caught
    assert (np.abs(1.05 * dec.mean(axis=0) - g) / se).max() > 5


def test_terngrad_clipping_is_biased_and_bounds_the_scaler():
    g = np.float32([100.0] + [1.0] * 99)
    m = make_compressor("terngrad", seed=0).compress(g)
    assert float(m.scale) <= 2.5 * g.astype(np.float64).std() * (1 + 1e-6)
    assert set(np.unique(m.codes).tolist()) <= {-1, 0, 1}


@pytest.mark.parametrize("name", ["topk", "onebit"])
def test_error_feedback_sent_plus_residual_is_the_sum_of_gradients(name):
    rng = np.random.default_rng(0)
    c = make_compressor(name, **({"ratio": 0.1} if name == "topk" else {}))
    grads = rng.standard_normal((25, 7, 5)).astype(np.float64)
    sent = np.zeros((7, 5))
    for t, g in enumerate(grads):
        sent += c.compress(g).decode().astype(np.float64)
        # float64 state: the invariant holds to float64 rounding of 25 additions
        np.testing.assert_allclose(sent + c.residual, grads[:t + 1].sum(axis=0), rtol=0, atol=1e-12)


def test_topk_on_integers_is_exact_and_sends_the_largest():
    c = make_compressor("topk", ratio=0.3)
    g = np.float32([[1, -7, 2], [5, 0, -3], [4, 1, 1]])
    msg = c.compress(g)
    assert msg.indices.tolist() == [1, 3, 6] and msg.values.tolist() == [-7, 5, 4]
    assert np.array_equal(msg.decode() + c.residual, g)
    msg2 = c.compress(g)  # residual 2 + 2, -3 - 3 are now the largest with fresh -7, 5, 4
    assert np.array_equal(msg2.decode() + c.residual, 2 * g - msg.decode())


def test_sampled_topk_sends_at_most_k_and_keeps_the_invariant():
    rng = np.random.default_rng(3)
    c = make_compressor("topk", ratio=0.01, sampled=True, seed=4)
    total = np.zeros(5001)
    sent = np.zeros(5001)
    for _ in range(5):
        g = rng.standard_normal(5001)
        total += g
        m = c.compress(g)
        assert 0 < m.nnz <= math.ceil(0.01 * 5001)
        sent += m.decode()
    np.testing.assert_allclose(sent + c.residual, total, rtol=0, atol=1e-12)


def test_dgc_with_nothing_dropped_is_dense_momentum_sgd_bitwise():
    """One worker through the reducer + SGD without momentum == SGD with momentum, bit for bit."""
    data = teacher_student(300, 100, seed=0)
    red = compressed_reducer("dgc", workers=1, ratio=1.0, masking=False, warmup_epochs=0)
    a, b = mlp([16, 12, 4], seed=3), mlp([16, 12, 4], seed=3)
    opt_a, opt_b = SGD(lr=0.1, momentum=0.9), SGD(lr=0.1, momentum=0.0)
    order = np.random.default_rng(0).permutation(data.n_train)
    for step in range(10):
        idx = order[step * 30:(step + 1) * 30]
        _, grads = a.loss_and_gradients(data.x_train[idx], data.y_train[idx])
        opt_a.step(a.parameters(), grads)
        _, grads = b.loss_and_gradients(data.x_train[idx], data.y_train[idx])
        opt_b.step(b.parameters(), red([{k: v.copy() for k, v in grads.items()}]))
    for k, w in a.parameters().items():
        assert np.array_equal(w, b.parameters()[k]), k


def test_dgc_ratio_one_over_several_workers_is_momentum_sgd_on_exact_values():
    rng = np.random.default_rng(5)
    workers, m = 4, 0.5
    cs = [DGC(1.0, momentum=m, masking=False, warmup_epochs=0) for _ in range(workers)]
    u = np.zeros(9)
    for _ in range(6):
        gs = rng.integers(-8, 8, (workers, 9)) / 4.0  # dyadic values: every sum and product below is exact
        sent = sum(c.compress(g).decode() for c, g in zip(cs, gs))
        u = m * u + gs.sum(axis=0)
        assert np.array_equal(sent, u)
    # masking at ratio 1 zeroes the momentum every step: plain SGD
    c = DGC(1.0, momentum=m, masking=True, warmup_epochs=0)
    for g in gs:
        assert np.array_equal(c.compress(g).decode(), g)


def test_dgc_momentum_correction_invariant_and_masking():
    rng = np.random.default_rng(6)
    c = DGC(0.2, momentum=0.9, warmup_epochs=0, masking=True)
    u, v = np.zeros(20), np.zeros(20)
    for _ in range(8):
        g = rng.standard_normal(20)
        u = 0.9 * u + g  # u <- m u + g ; v <- v + u ; what is sent plus the new v is the old v plus u
        v = v + u
        msg = c.compress(g)
        np.testing.assert_allclose(msg.decode() + c.residual, v, rtol=0, atol=1e-12)
        assert msg.nnz == 4 and np.all(c.residual[msg.indices] == 0)
        assert np.all(c.velocity[""][msg.indices] == 0)  # momentum factor masking
        u[msg.indices] = 0
        v = c.residual.copy()


def test_dgc_warmup_densities_match_the_paper_and_are_used_per_epoch():
    paper_sparsity = [75, 93.75, 98.4375, 99.6, 99.9]  # Lin et al. 2018, sec. 4
    ours = [100 * (1 - DGC.warmup_density(0.001, e, 4)) for e in range(5)]
    # the reference code's ratio^((e+1)/5) is the paper's 4^-(e+1) only approximately: 0.12 points off at most
    assert np.abs(np.subtract(ours, paper_sparsity)).max() == pytest.approx(0.1189, abs=1e-4)
    c = DGC(0.001, warmup_epochs=4, steps_per_epoch=2)
    g = np.ones(4000)
    nnz = [c.compress(g).nnz for _ in range(10)]
    assert nnz == [math.ceil(DGC.warmup_density(0.001, s // 2, 4) * 4000) for s in range(10)]
    assert nnz[-1] == 4


def test_dgc_local_clipping_scales_with_workers():
    c = DGC(1.0, momentum=0.0, clip_norm=2.0, workers=4, warmup_epochs=0, masking=False)
    out = c.compress(np.array([3.0, 4.0])).decode()  # norm 5 clipped to 2 / sqrt(4) = 1
    np.testing.assert_allclose(out, [0.6, 0.8], rtol=1e-15)


def test_dgc_without_local_accumulation_drops_what_it_does_not_send():
    c = DGC(0.5, momentum_correction=False, local_accumulation=False, warmup_epochs=0)
    c.compress(np.array([1.0, 5.0]))
    assert c.compress(np.array([1.0, 0.0])).decode().tolist() == [1.0, 0.0]
    assert c.residual.tolist() == [0.0, 0.0]


def test_encoded_sizes():
    g = np.linspace(-1, 1, 100, dtype=np.float32).reshape(10, 10)
    assert make_compressor("none").compress(g).nbytes == 400
    assert make_compressor("topk", ratio=0.05).compress(g).nbytes == 5 * (4 + 4)
    assert make_compressor("onebit").compress(g).nbytes == 13 + 4 * 2 * 10  # ceil(100/8) + 2 per column
    assert make_compressor("terngrad").compress(g).nbytes == 25 + 4          # 2 bits each + scaler
    assert make_compressor("qsgd", levels=4).compress(g).nbytes == 50 + 4    # 1 + ceil(lg 5) = 4 bits
    assert make_compressor("qsgd", levels=1).compress(g).nbytes == 25 + 4    # sign + 1 level bit
    assert make_compressor("stochastic_round", bits=5).compress(g).nbytes == 63 + 4


def test_reducer_accounts_bytes_and_trains():
    data = teacher_student(400, 100, seed=1)
    model = mlp([16, 16, 4], seed=0)
    red = compressed_reducer("dgc", workers=4, ratio=0.05, warmup_epochs=0, seed=1)
    h = train(model, data, steps=30, batch_size=40, workers=4, reducer=red, optimizer=SGD(lr=0.1, momentum=0.0))
    n = sum(w.size for w in model.parameters().values())
    k_total = sum(math.ceil(0.05 * w.size) for w in model.parameters().values())
    assert len(red.step_nbytes) == 30 and all(s == [8 * k_total] * 4 for s in red.step_nbytes)
    assert red.compression_ratio == pytest.approx(4 * n / (8 * k_total))
    assert h.step_loss[-1] < h.step_loss[0]
    assert all(c.workers == 4 for c in red.compressors)  # N for the N^-1/2 clipping threshold


def test_exchange_times_follow_the_alpha_beta_model():
    red = compressed_reducer("topk", workers=4, ratio=0.01)
    rng = np.random.default_rng(0)
    red([{"w": rng.standard_normal(1000).astype(np.float32)} for _ in range(4)])
    alpha, beta = 1e-5, 1e-9  # each worker sends 10 values + 10 indices = 80 B; the ring moves 3 of 4 parts
    assert red.exchange_time_s(alpha=alpha, beta=beta) == [pytest.approx(3 * alpha + 3 * 80 * beta)]
    assert red.dense_time_s(alpha=alpha, beta=beta) == [pytest.approx(6 * alpha + 2 * 3000 * beta)]


def test_sampled_dgc_sends_at_most_k():
    c = DGC(0.01, warmup_epochs=0, sampled=True, seed=1)
    rng = np.random.default_rng(2)
    for _ in range(5):
        m = c.compress(rng.standard_normal(3000))
        assert 0 < m.nnz <= 30


def test_reducer_skips_non_finite_steps_without_touching_state():
    red = compressed_reducer("topk", workers=2, ratio=0.5)
    red([{"w": np.float32([1, 2])}, {"w": np.float32([3, 4])}])
    before = [c.residual.copy() for c in red.compressors]
    out = red([{"w": np.float32([np.inf, 2])}, {"w": np.float32([3, 4])}])
    assert red.skipped == 1 and not np.isfinite(out["w"]).all() and len(red.step_nbytes) == 1
    assert all(np.array_equal(b, c.residual) for b, c in zip(before, red.compressors))
    with pytest.raises(ValueError, match=r"3 workers' gradients for 2 compressors"):
        red([{"w": np.zeros(2, np.float32)}] * 3)


def test_errors():
    with pytest.raises(ValueError, match=r"unknown compressor 'zip'; expected one of"):
        make_compressor("zip")
    for bad in (0, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"ratio must be in \(0, 1\]"):
            make_compressor("topk", ratio=bad)
    with pytest.raises(TypeError, match=r"ratio must be a number"):
        make_compressor("dgc", ratio="0.1")
    with pytest.raises(ValueError, match=r"grad: 1 of 3 values are not finite: refused"):
        make_compressor("qsgd").compress(np.float32([1, np.nan, 2]))
    with pytest.raises(TypeError, match=r"expected a floating-point array, got dtype int64"):
        make_compressor("topk").compress(np.arange(3))
    with pytest.raises(ValueError, match=r"steps_per_epoch must be a positive integer when warmup_epochs=4"):
        make_compressor("dgc")
    with pytest.raises(TypeError, match=r"'qsgd' compressor: .*unexpected keyword"):
        make_compressor("qsgd", ratio=0.1)
    with pytest.raises(ValueError, match=r"levels must be a positive integer"):
        make_compressor("qsgd", levels=0)
    with pytest.raises(ValueError, match=r"bits must be an integer in \[2, 32\], got 1"):
        make_compressor("stochastic_round", bits=1)
    with pytest.raises(AttributeError, match=r"keeps no residual"):
        make_compressor("qsgd").residual
    c = make_compressor("topk")
    c.compress(np.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(4,\) for key ''"):
        c.compress(np.zeros(4))
    with pytest.raises(TypeError, match=r"nonempty list of Compressor"):
        CompressedReducer([])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), steps=st.integers(1, 6), ratio=st.floats(0.01, 1.0), seed=st.integers(0, 2**16),
       name=st.sampled_from(["topk", "dgc-no-momentum"]))
def test_property_error_feedback_invariant_on_integers(n, steps, ratio, seed, name):
    """Small integers in float64: every addition is exact, so the invariant holds with equality."""
    rng = np.random.default_rng(seed)
    c = (make_compressor("topk", ratio=ratio) if name == "topk" else
         DGC(ratio, momentum_correction=False, warmup_epochs=0))
    sent = np.zeros(n)
    total = np.zeros(n)
    for _ in range(steps):
        g = rng.integers(-50, 50, n).astype(np.float64)
        total += g
        m = c.compress(g)
        assert m.nnz == min(n, max(1, math.ceil(ratio * n)))
        sent += m.decode()
        assert np.array_equal(sent + c.residual, total)
