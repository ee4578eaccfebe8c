"""Closed-form collective costs: hand-computed cases (powers of two and not), broadcasting, bus bandwidth,
argument errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaledl.comm import cost as C

EPS = np.finfo(np.float64).eps
A, B, G = 3e-6, 2e-10, 5e-11  # latency, s/byte (5 GB/s), s/byte of reduction
REL = 16 * EPS  # a handful of float64 roundings per formula


def t(alg, p, n, gamma=G):
    return C.allreduce_time(alg, p, n, alpha=A, beta=B, gamma=gamma)


# (p, floor lg p, p', folded): the MPICH fold adds one alpha + n beta + n gamma and one alpha + n beta
CASES = [(1, 0, 1, False), (2, 1, 2, False), (3, 1, 2, True), (4, 2, 4, False), (5, 2, 4, True),
         (6, 2, 4, True), (7, 2, 4, True), (8, 3, 8, False), (12, 3, 8, True), (1000, 9, 512, True)]


@pytest.mark.parametrize("p,lg,p2,folded", CASES)
def test_closed_forms_by_hand(p, lg, p2, folded):
    n = 1_048_576.0
    fold = (A + n * B + n * G) + (A + n * B) if folded else 0.0
    assert t("ring", p, n) == pytest.approx(2 * (p - 1) * A + 2 * n * (p - 1) / p * B + n * (p - 1) / p * G,
                                            rel=REL, abs=0)
    assert t("recursive_doubling", p, n) == pytest.approx(lg * (A + n * B + n * G) + fold, rel=REL, abs=0)
    assert t("rabenseifner", p, n) == pytest.approx(
        2 * lg * A + 2 * n * (p2 - 1) / p2 * B + n * (p2 - 1) / p2 * G + fold, rel=REL, abs=0)
    c = int(np.ceil(np.log2(p)))
    assert t("binomial", p, n) == pytest.approx(c * (A + n * B + n * G) + c * (A + n * B), rel=REL, abs=0)
    assert t("parameter_server", p, n) == pytest.approx(
        0.0 if p == 1 else 2 * A + n * min(B, G) + (p - 1) * n * max(B, G) + (p - 1) * n * B, rel=REL, abs=0)


def test_rabenseifner_non_power_of_two_matches_references_md():
    # REFERENCES.md: (2 floor(lg p) + 2) alpha + (2 (p'-1)/p' + 2) n beta + (1 + (p'-1)/p') n gamma
    p, p2, n = 6, 4, 1e6
    want = (2 * 2 + 2) * A + (2 * (p2 - 1) / p2 + 2) * n * B + (1 + (p2 - 1) / p2) * n * G
    assert t("rabenseifner", p, n) == pytest.approx(want, rel=REL)


def test_double_binary_tree():
    n = 1e6
    assert t("double_binary_tree", 1, n) == 0.0
    assert t("double_binary_tree", 2, n) == pytest.approx(2 * A + n * B + n / 2 * G, rel=REL)
    assert t("double_binary_tree", 16, n) == pytest.approx(2 * 4 * A + 2 * n * B + n * G, rel=REL)
    assert t("double_binary_tree", 17, n) == pytest.approx(2 * 5 * A + 2 * n * B + n * G, rel=REL)


def test_one_rank_and_empty_messages_cost_nothing_or_latency_only():
    for alg in C.ALLREDUCE_ALGORITHMS:
        assert t(alg, 1, 1e9) == 0.0
    assert t("ring", 4, 0, gamma=0.0) == 6 * A
    assert t("recursive_doubling", 8, 0) == 3 * A


def test_small_messages_favour_logarithmic_latency_large_favour_ring():
    p = 64
    assert t("recursive_doubling", p, 8) < t("ring", p, 8)
    assert t("ring", p, 1 << 28) < t("recursive_doubling", p, 1 << 28)
    assert t("rabenseifner", p, 1 << 28) < t("recursive_doubling", p, 1 << 28)


def test_reduce_scatter_plus_allgather_is_the_ring_allreduce():
    p, n = np.arange(1, 50), 3e6
    rs = C.reduce_scatter_time("ring", p, n, alpha=A, beta=B, gamma=G)
    ag = C.allgather_time("ring", p, n, alpha=A, beta=B)
    np.testing.assert_allclose(rs + ag, t("ring", p, n), rtol=REL)
    p = 2 ** np.arange(0, 11)
    rs = C.reduce_scatter_time("recursive_halving", p, n, alpha=A, beta=B, gamma=G)
    ag = C.allgather_time("recursive_doubling", p, n, alpha=A, beta=B)
    np.testing.assert_allclose(rs + ag, t("rabenseifner", p, n), rtol=REL)
    assert C.broadcast_time("binomial", 8, n, alpha=A, beta=B) == pytest.approx(3 * (A + n * B), rel=REL)


def test_vectorised_over_ranks_and_sizes():
    p = np.arange(1, 1025)[:, None]
    n = np.logspace(0, 30, 40, base=2)[None, :]
    for alg in C.ALLREDUCE_ALGORITHMS:
        table = C.allreduce_time(alg, p, n, alpha=A, beta=B, gamma=G)
        assert table.shape == (1024, 40) and table.dtype == np.float64
        # one row and one column agree with scalar calls: the broadcast did not mix axes
        assert table[4, 7] == t(alg, 5, float(n[0, 7]))
        assert table[1023, 39] == t(alg, 1024, float(n[0, 39]))
    assert isinstance(t("ring", 4, 10.0), float)


@given(p=st.integers(2, 4096), n=st.floats(1.0, 1e10), bw=st.floats(1e6, 1e12))
def test_bus_bandwidth_of_a_latency_free_ring_is_the_link_bandwidth(p, n, bw):
    s = C.allreduce_time("ring", p, n, alpha=0.0, beta=1 / bw)
    assert C.bus_bandwidth("allreduce", p, n, s) == pytest.approx(bw, rel=64 * EPS)
    s = C.allgather_time("ring", p, n, alpha=0.0, beta=1 / bw)
    assert C.bus_bandwidth("allgather", p, n, s) == pytest.approx(bw, rel=64 * EPS)


def test_bus_bandwidth_factors():
    assert C.bus_bandwidth("allreduce", 4, 100.0, 1.0) == 150.0
    assert C.bus_bandwidth("reduce_scatter", 4, 100.0, 1.0) == 75.0
    assert C.bus_bandwidth("broadcast", 4, 100.0, 1.0) == 100.0


def test_errors_name_argument_value_and_expectation():
    with pytest.raises(ValueError, match=r"p must be >= 1 .*got 0"):
        t("ring", 0, 10)
    with pytest.raises(ValueError, match=r"p must be >= 1"):
        t("ring", [4, -2], 10)
    with pytest.raises(ValueError, match=r"whole number of ranks, got 2.5"):
        t("ring", 2.5, 10)
    with pytest.raises(TypeError, match=r"p must be an int"):
        t("ring", "4", 10)
    with pytest.raises(ValueError, match=r"nbytes must be >= 0.*got -1"):
        t("ring", 4, -1)
    with pytest.raises(ValueError, match=r"unknown allreduce algorithm 'butterfly'; expected one of ring"):
        t("butterfly", 4, 10)
    with pytest.raises(ValueError, match=r"alpha must be >= 0.*got -1"):
        C.allreduce_time("ring", 4, 10, alpha=-1.0, beta=B)
    with pytest.raises(ValueError, match=r"power of two for 'recursive_halving', got p=6"):
        C.reduce_scatter_time("recursive_halving", [4, 6], 10, alpha=A, beta=B)
    with pytest.raises(ValueError, match=r"unknown bus-bandwidth op 'scan'"):
        C.bus_bandwidth("scan", 4, 10, 1.0)
    with pytest.raises(ValueError, match=r"seconds must be > 0"):
        C.bus_bandwidth("allreduce", 4, 10, 0.0)


def test_best_algorithm_switches_from_latency_to_bandwidth_optimal_with_size():
    n = np.array([8, 1 << 12, 1 << 26])
    assert C.best_algorithm(64, n, alpha=A, beta=B).tolist() == ["recursive_doubling", "recursive_doubling",
                                                                "rabenseifner"]
    assert C.best_algorithm(48, 1 << 26, alpha=A, beta=B) == "ring"  # the fold's extra 2 n beta loses
    assert C.best_algorithm(np.arange(1, 9)[:, None], n, alpha=A, beta=B).shape == (8, 3)
    with pytest.raises(ValueError, match=r"unknown allreduce algorithm 'fastest'"):
        C.best_algorithm(4, 8, alpha=A, beta=B, algorithms=("ring", "fastest"))


# (ranks per node, nodes, floor lg nodes): NCCL's tuner charges (ppn-1) hops inside a node and log2i(nNodes), rounded
# down, between nodes, each way (src/graph/tuning.cc, NCCL 2.30.7)
NCCL_TREE_CASES = [(1, 2, 1), (8, 1, 0), (8, 2, 1), (4, 3, 1), (8, 128, 7), (2, 1000, 9)]


@pytest.mark.parametrize("ppn,nodes,lg", NCCL_TREE_CASES)
def test_nccl_tree_latency_and_bandwidth_are_the_tuners_closed_form(ppn, nodes, lg):
    intra, inter = 0.7e-6, 5e-6  # distinct, so swapping the two kinds of hop fails
    latency = C.nccl_tree_allreduce_time(nodes, ppn, 0, intra_alpha=intra, inter_alpha=inter, beta=B)
    assert latency == pytest.approx(2 * ((ppn - 1) * intra + lg * inter), rel=REL)
    n = 1e8  # bandwidth: the tuner halves the tree's bus bandwidth, so 2 n beta whatever p is
    total = C.nccl_tree_allreduce_time(nodes, ppn, n, intra_alpha=intra, inter_alpha=inter, beta=B)
    assert total - latency == pytest.approx(2 * n * B, rel=REL)


def test_nccl_tree_of_one_rank_costs_nothing_and_checks_its_arguments():
    assert C.nccl_tree_allreduce_time(1, 1, 1e8, intra_alpha=A, inter_alpha=A, beta=B) == 0.0
    got = C.nccl_tree_allreduce_time(np.array([1, 2, 4]), 8, 0, intra_alpha=A, inter_alpha=A, beta=B)
    assert np.allclose(got, 2 * A * (7 + np.array([0, 1, 2])), rtol=REL)
    with pytest.raises(ValueError, match=r"nodes must be >= 1 .*got 0"):
        C.nccl_tree_allreduce_time(0, 8, 10, intra_alpha=A, inter_alpha=A, beta=B)
    with pytest.raises(ValueError, match=r"inter_alpha must be >= 0.*got -1"):
        C.nccl_tree_allreduce_time(2, 8, 10, intra_alpha=A, inter_alpha=-1.0, beta=B)
