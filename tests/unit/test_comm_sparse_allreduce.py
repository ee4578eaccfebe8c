"""SparCML-style sparse all-reduce: exact sums, fill-in byte counts, the dense switch, and its timing."""

import numpy as np
import pytest

from scaledl.comm import simulate, topology
from scaledl.comm.compression import make_compressor
from scaledl.comm.compression.sparse_allreduce import break_even_density, sparse_allreduce


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6, 8])
def test_the_sum_is_exact_for_any_number_of_ranks(p):
    rng = np.random.default_rng(p)
    x = [np.where(rng.random(50) < 0.1, rng.integers(-9, 9, 50), 0).astype(np.float32) for _ in range(p)]
    out = sparse_allreduce(x)
    assert np.array_equal(out.result, np.sum(x, axis=0, dtype=np.float64))
    rounds = (p.bit_length() - 1) + 2 * (p != 1 << (p.bit_length() - 1))
    assert len(out.rounds) == rounds


def test_fill_in_grows_messages_until_the_dense_switch():
    n, p = 16, 8
    x = [np.zeros(n) for _ in range(p)]
    for r in range(p):
        x[r][2 * r:2 * r + 2] = 1.0  # 2 nonzeros each, disjoint: supports 2, 4, 8 -> dense at 8 of 16
    out = sparse_allreduce(x)
    per_round = [{nb for _, _, nb, _ in rnd} for rnd in out.rounds]
    assert per_round == [{2 * 8}, {4 * 8}, {16 * 4}]  # round 3: 8 nonzeros x 8 B = 64 B = dense, so dense
    assert [{d for *_, d in rnd} for rnd in out.rounds] == [{False}, {False}, {True}]
    assert out.nbytes == 8 * (16 + 32 + 64) and out.dense_nbytes == 3 * 8 * 64
    assert break_even_density() == 0.5 and break_even_density(2, 4) == pytest.approx(1 / 3)


def test_overlapping_supports_fill_in_less():
    x = [np.zeros(100) for _ in range(4)]
    for r in range(4):
        x[r][:5] = r + 1  # identical supports: no fill-in at all
    out = sparse_allreduce(x)
    assert {nb for rnd in out.rounds for _, _, nb, _ in rnd} == {5 * 8}
    assert out.result[:5].tolist() == [10.0] * 5


def test_accepts_topk_messages_and_the_schedule_times_on_the_simulator():
    rng = np.random.default_rng(0)
    msgs = [make_compressor("topk", ratio=0.01).compress(rng.standard_normal(1000).astype(np.float32))
            for _ in range(4)]
    out = sparse_allreduce(msgs)
    np.testing.assert_allclose(out.result, np.sum([m.decode() for m in msgs], axis=0), rtol=1e-6)
    sched = out.schedule()
    net = topology.switch(4, bandwidth_Bps=1e9, latency_s=1e-6)
    sim = simulate(sched, net, nbytes=sched.length)
    # Uncontended switch (latency_s is end to end, as in the netsim doctest): each round costs one latency
    # plus its largest message over the bandwidth
    want = sum(1e-6 + max(nb for _, _, nb, _ in rnd) / 1e9 for rnd in out.rounds)
    assert sim.time_s == pytest.approx(want, rel=1e-9)
    assert sum(v for (u, _), v in sim.link_bytes.items() if u != "switch") == out.nbytes


def test_errors():
    with pytest.raises(ValueError, match=r"one vector per rank, got none"):
        sparse_allreduce([])
    with pytest.raises(ValueError, match=r"one length expected, got lengths \[3, 4\]"):
        sparse_allreduce([np.zeros(3), np.zeros(4)])
    with pytest.raises(ValueError, match=r"expected 1-D vectors or SparseMessages, got an array of shape \(2, 2\)"):
        sparse_allreduce([np.zeros((2, 2))])
