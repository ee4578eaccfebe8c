"""Schedules move real data: every algorithm's all-reduce equals the exact sum for any p and length
(integers, so "exact" means bit-equal), message counts match the closed forms' round counts, and NCCL's
double binary tree is two spanning trees."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaledl.comm import cost as C
from scaledl.comm import schedule as S

ALGS = C.ALLREDUCE_ALGORITHMS


@settings(max_examples=60, deadline=None)
@given(alg=st.sampled_from(ALGS), p=st.integers(1, 19), n=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_allreduce_is_the_exact_sum(alg, p, n, seed):
    rng = np.random.default_rng(seed)
    bufs = [rng.integers(-(2**40), 2**40, n) for _ in range(p)]
    want = np.sum(bufs, axis=0, dtype=np.int64)
    out = S.allreduce(bufs, algorithm=alg)
    assert len(out) == p
    for rank, got in enumerate(out):
        assert np.array_equal(got, want), f"{alg} p={p} n={n} rank {rank}: {got} != {want}"


@pytest.mark.parametrize("alg", ALGS)
@pytest.mark.parametrize("p,n", [(7, 3), (8, 5), (13, 100), (32, 31)])
def test_float64_small_integers_are_exact_and_inputs_untouched(alg, p, n):
    rng = np.random.default_rng(p * n)
    bufs = [rng.integers(-1000, 1000, n).astype(np.float64) for _ in range(p)]
    copies = [b.copy() for b in bufs]
    out = S.allreduce(bufs, alg)
    for got in out:
        assert np.array_equal(got, np.sum(copies, axis=0))
    for b, c in zip(bufs, copies):
        assert np.array_equal(b, c)  # the executor works on copies


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8, 12, 16])
def test_round_counts_match_the_closed_forms(p):
    n = 64 * p  # every block non-empty, so no round is dropped
    lg, c = int(C.floor_lg(p)), int(C.ceil_lg(p))
    folded = 2 if p & (p - 1) else 0
    assert len(S.build("ring", p, n)) == 2 * (p - 1)
    assert len(S.build("recursive_doubling", p, n)) == lg + folded
    assert len(S.build("rabenseifner", p, n)) == 2 * lg + folded
    assert len(S.build("binomial", p, n)) == 2 * c
    assert len(S.build("parameter_server", p, n)) == 2
    ring = S.build("ring", p, n)
    assert ring.transfers == 2 * p * (p - 1)
    # each ring message carries one block of about n/p elements
    assert {t.stop - t.start for r in ring for t in r} == {n // p}


def test_empty_blocks_send_nothing():
    sched = S.build("ring", 5, 2)  # three of five blocks are empty
    assert all(t.stop > t.start for r in sched for t in r)
    assert S.build("ring", 4, 0).rounds == ()
    assert S.build("ring", 1, 10).rounds == ()


@pytest.mark.parametrize("p", list(range(1, 34)))
def test_double_binary_tree_is_two_spanning_trees_of_depth_ceil_lg_p(p):
    for parent in S.double_binary_tree(p):
        assert parent.count(-1) == 1
        for r in range(p):  # every rank reaches the root, so no cycles, and the depth is logarithmic
            d, x = 0, r
            while parent[x] >= 0:
                x, d = parent[x], d + 1
                assert d <= p
            assert d <= int(C.ceil_lg(p))
        for r in range(p):
            kids = [c for c in range(p) if parent[c] == r]
            assert len(kids) <= 2
    if p > 2:  # almost every rank is interior in at most one tree
        interior = [set(r for r in par if r >= 0) for par in S.double_binary_tree(p)]
        assert len(interior[0] & interior[1]) <= 1


def test_btree_matches_nccl_for_eight_ranks():
    # NCCL's btree for 8 ranks: 0 -> 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}
    assert [S.btree(8, r)[0] for r in range(8)] == [-1, 2, 4, 2, 0, 6, 4, 6]


def test_errors():
    with pytest.raises(ValueError, match=r"empty list"):
        S.allreduce([])
    with pytest.raises(ValueError, match=r"one length, got shapes \[\(3,\), \(4,\)\]"):
        S.allreduce([np.zeros(3), np.zeros(4)])
    with pytest.raises(TypeError, match=r"one dtype .*got \['float64', 'int64'\]"):
        S.allreduce([np.zeros(3), np.zeros(3, dtype=np.int64)])
    with pytest.raises(ValueError, match=r"1-D arrays"):
        S.allreduce([np.zeros((2, 2))])
    with pytest.raises(ValueError, match=r"unknown allreduce algorithm 'butterfly'"):
        S.allreduce([np.zeros(3)], algorithm="butterfly")
    with pytest.raises(ValueError, match=r"p must be an int >= 1, got 0"):
        S.build("ring", 0, 4)
    with pytest.raises(ValueError, match=r"length must be an int >= 0, got -1"):
        S.build("ring", 2, -1)
    with pytest.raises(TypeError, match=r"p must be an int, got 2.0"):
        S.build("ring", 2.0, 4)
