"""The all-reduce algorithms of the record runs: hierarchical (Horovod; Jia et al. 2018), 2D-torus (Mikami et
al. 2018) and NCCL's double binary tree at scale, and the multi-node clusters they run on.

- Schedules move real data: on random int64 buffers every rank ends with the exact sum (bit-equal), at odd
  rank counts, odd lengths and non-power-of-two node counts.
- On an uncontended topology the simulator reproduces the closed forms of scaledl.comm.cost to float64
  rounding (tolerance: a few hundred additions of similar numbers, 1e-12 relative, as test_comm_netsim).
- The cluster topology has the degrees and the bisection bandwidth it claims, and an oversubscribed spine
  slows the cross-node step by exactly its ratio.
"""

import networkx as nx
import numpy as np
import pytest

from scaledl.comm import cost as C
from scaledl.comm import netsim as N
from scaledl.comm import schedule as S
from scaledl.comm import two_level as TL
from scaledl.comm import topology as T

REL = 1e-12
EXACT = ("ring", "recursive_doubling", "rabenseifner", "binomial", "parameter_server")  # as test_comm_netsim


def exact_sum_everywhere(sched, seed=0):
    rng = np.random.default_rng(seed)
    bufs = [rng.integers(-(2**40), 2**40, sched.length) for _ in range(sched.p)]
    want = np.sum(bufs, axis=0, dtype=np.int64)
    out = S.run(sched, bufs)
    bad = [r for r, got in enumerate(out) if not np.array_equal(got, want)]
    return bad


@pytest.mark.parametrize("inter", C.ALLREDUCE_ALGORITHMS)
@pytest.mark.parametrize("nodes,g", [(3, 4), (5, 8), (7, 3), (1, 5), (6, 1), (2, 2)])
@pytest.mark.parametrize("length", [0, 1, 7, 37, 101])
def test_hierarchical_is_the_exact_sum(inter, nodes, g, length):
    sched = TL.hierarchical(nodes, g, length, inter=inter)
    assert sched.p == nodes * g and sched.length == length
    assert exact_sum_everywhere(sched, seed=nodes * 1000 + g * 100 + length) == []


@pytest.mark.parametrize("rows,cols", [(3, 5), (5, 3), (1, 7), (7, 1), (2, 2), (4, 6)])
@pytest.mark.parametrize("length", [1, 15, 53])
def test_torus_2d_is_the_exact_sum(rows, cols, length):
    assert exact_sum_everywhere(TL.torus_2d(rows, cols, length), seed=rows * cols + length) == []


def test_the_check_catches_a_missing_message():
    sched = TL.hierarchical(3, 4, 24)
    rounds = list(sched.rounds)
    rounds[4] = rounds[4][1:]  # one inter-node message lost
    broken = S.Schedule(sched.algorithm, sched.p, sched.length, tuple(rounds))
    assert exact_sum_everywhere(broken) != []


@pytest.mark.parametrize("nodes,g", [(3, 4), (5, 8), (7, 3)])
def test_hierarchical_round_and_message_counts(nodes, g):
    n = g * nodes * 4  # every block non-empty
    sched = TL.hierarchical(nodes, g, n)
    p = nodes * g
    assert len(sched) == 2 * (g - 1) + 2 * (nodes - 1)
    assert sched.transfers == p * (2 * (g - 1) + 2 * (nodes - 1))
    inter = sched.rounds[g - 1:g - 1 + 2 * (nodes - 1)]
    assert all(t.src % g == t.dst % g and t.src // g != t.dst // g for r in inter for t in r)  # same shard
    intra = sched.rounds[:g - 1] + sched.rounds[-(g - 1):] if g > 1 else ()
    assert all(t.src // g == t.dst // g for r in intra for t in r)  # only the node's NVLink
    # a rank sends 1/g of its buffer per intra round and 1/(g N) per inter round
    assert {t.stop - t.start for r in intra for t in r} == {n // g}
    assert {t.stop - t.start for r in inter for t in r} == {n // (g * nodes)}


@pytest.mark.parametrize("inter", C.ALLREDUCE_ALGORITHMS)
@pytest.mark.parametrize("nodes,g,length", [(3, 4, 37), (5, 8, 101), (7, 3, 7), (1, 5, 9), (6, 1, 13), (4, 3, 2)])
def test_hierarchical_rounds_are_the_schedule_as_arrays(inter, nodes, g, length):
    want = TL.hierarchical(nodes, g, length, inter=inter).rounds
    got = TL.hierarchical_rounds(nodes, g, length, inter=inter)
    assert len(got) == len(want)
    for k, (arrays, rnd) in enumerate(zip(got, want)):
        as_list = [S.Transfer(int(a), int(b), int(c), int(d), "reduce" if e else "copy")
                   for a, b, c, d, e in zip(*arrays)]
        assert as_list == list(rnd), f"round {k}"


def test_torus_2d_is_the_hierarchical_schedule_on_rows():
    assert TL.torus_2d(3, 5, 60).rounds == TL.hierarchical(3, 5, 60, inter="ring").rounds
    assert len(TL.torus_2d(3, 5, 60)) == 2 * (5 - 1) + 2 * (3 - 1)


@pytest.mark.parametrize("p", [3, 5, 7, 9, 63, 127, 255, 257, 1000, 1023, 1025, 4095, 4096])
def test_double_binary_tree_at_scale(p):
    trees = S.double_binary_tree(p)
    for parent in trees:
        g = nx.DiGraph((r, parent[r]) for r in range(p) if parent[r] >= 0)
        g.add_nodes_from(range(p))
        assert nx.is_arborescence(g.reverse())  # one root, every rank reaches it
        assert nx.dag_longest_path_length(g) <= int(C.ceil_lg(p))
        assert max(d for _, d in g.in_degree()) <= 2
    interior = [set(r for r in par if r >= 0) for par in trees]
    assert len(interior[0] & interior[1]) <= 1  # almost every rank is a leaf in one of the trees
    for length in (2, 3):
        assert exact_sum_everywhere(S.build("double_binary_tree", p, length), seed=p) == []


def test_double_binary_tree_at_scale_stays_near_its_pipelined_closed_form():
    # With messages cut into 64 pieces the trees come within 30 % of the pipelined bound at 64 ranks
    # (cost.allreduce_time's docstring) and within 35 % at 255: the gap (FIFO links that carry a rank's
    # reduce and broadcast pieces both) grows slowly with the depth, and the bound is never beaten.
    alpha, beta, n = 2e-6, 1e-9, 1e8
    ratio = {}
    for p in (64, 255):
        net = T.switch(p, bandwidth_Bps=1 / beta, latency_s=alpha)
        got = N.simulate(S.build("double_binary_tree", p, 2), net, nbytes=n, chunks=64, timeline=False).time_s
        ratio[p] = got / C.allreduce_time("double_binary_tree", p, n, alpha=alpha, beta=beta)
    assert 1 <= ratio[64] <= 1.30 and 1 <= ratio[255] <= 1.35
    assert ratio[255] - ratio[64] < 0.1


def _hier_length(nodes, g):
    p2 = 1 << (nodes.bit_length() - 1)
    return g * nodes * p2 * 2  # every shard's every block the same size, for every inter algorithm


@pytest.mark.parametrize("inter", EXACT)
@pytest.mark.parametrize("nodes,g", [(3, 4), (5, 8), (7, 3), (4, 2)])
@pytest.mark.parametrize("gamma", [0.0, 4e-11])  # reduction faster than InfiniBand, slower than NVLink
def test_hierarchical_on_nvlink_and_infiniband_equals_its_closed_form(inter, nodes, g, gamma):
    net = T.multi_node(nodes, g)  # each GPU its own NIC into a non-blocking switch: nothing contends
    a_i, b_i = T.path_alpha_beta(net, 0, 1 % g)
    a_e, b_e = T.path_alpha_beta(net, 0, g)
    assert (a_i, a_e) == (2 * T.NVLINK_HOP_LATENCY_s, 2 * T.IB_HOP_LATENCY_s)
    n = 3e7
    got = N.simulate(TL.hierarchical(nodes, g, _hier_length(nodes, g), inter=inter), net, nbytes=n,
                     gamma=gamma, timeline=False).time_s
    want = C.hierarchical_allreduce_time(nodes, g, n, intra_alpha=a_i, intra_beta=b_i, inter_alpha=a_e,
                                         inter_beta=b_e, gamma=gamma, inter=inter)
    assert got == pytest.approx(want, rel=REL)


@pytest.mark.parametrize("nodes,g,k", [(3, 4, 4), (5, 8, 8), (7, 3, 3)])
def test_hierarchical_across_a_non_blocking_spine_equals_its_closed_form(nodes, g, k):
    net = T.cluster(nodes, g, nics_per_node=k, nodes_per_leaf=1)  # every inter-node message crosses the spine
    a_e, b_e = T.path_alpha_beta(net, 0, g)
    assert a_e == pytest.approx(2 * T.IB_HOP_LATENCY_s + 2 * T.SPINE_HOP_LATENCY_s, rel=REL)
    assert b_e == 1 / T.IB_NDR_Bps
    a_i, b_i = T.path_alpha_beta(net, 0, g - 1)
    n = 3e7
    got = N.simulate(TL.hierarchical(nodes, g, _hier_length(nodes, g)), net, nbytes=n, timeline=False).time_s
    want = C.hierarchical_allreduce_time(nodes, g, n, intra_alpha=a_i, intra_beta=b_i, inter_alpha=a_e,
                                         inter_beta=b_e)
    assert got == pytest.approx(want, rel=REL)
    # the flat ring over the same cluster pays the NIC for 2 (p-1)/p n, the hierarchical for 2 (N-1)/(N g) n
    assert want < C.allreduce_time("ring", nodes * g, n, alpha=a_e, beta=b_e)


@pytest.mark.parametrize("rows,cols", [(3, 5), (5, 3), (2, 3), (4, 4), (1, 6)])
@pytest.mark.parametrize("gamma", [0.0, 3e-10])
def test_torus_2d_on_a_torus_equals_its_closed_form(rows, cols, gamma):
    alpha, beta, n = 2e-6, 1e-9, 3e6
    net = T.torus(rows, cols, bandwidth_Bps=1 / beta, latency_s=alpha)
    got = N.simulate(TL.torus_2d(rows, cols, rows * cols * 4), net, nbytes=n, gamma=gamma).time_s
    want = C.torus_2d_allreduce_time(rows, cols, n, alpha=alpha, beta=beta, gamma=gamma)
    assert got == pytest.approx(want, rel=REL)
    # the same bandwidth term as a flat ring, fewer latencies
    ring = C.allreduce_time("ring", rows * cols, n, alpha=alpha, beta=beta, gamma=gamma)
    assert ring - want == pytest.approx(2 * (rows * cols - 1 - (rows + cols - 2)) * alpha, rel=1e-9)


def test_closed_forms_by_hand():
    # hierarchical, ring across 4 nodes of 8: 2*7*0.5 us + 2*8e6*7/8/450e9 s + 2*3*3 us + 2*1e6*3/4/50e9 s
    t = C.hierarchical_allreduce_time(4, 8, 8e6, intra_alpha=0.5e-6, intra_beta=1 / 450e9,
                                      inter_alpha=3e-6, inter_beta=1 / 50e9)
    assert t == pytest.approx(7e-6 + 14e6 / 450e9 + 18e-6 + 1.5e6 / 50e9, rel=REL)
    # one node: a ring all-reduce over NVLink; one GPU per node: the inter algorithm on the whole buffer
    kw = dict(intra_alpha=1e-6, intra_beta=1e-10, inter_alpha=5e-6, inter_beta=1e-9, gamma=1e-11)
    assert C.hierarchical_allreduce_time(1, 8, 1e6, **kw) == pytest.approx(
        C.allreduce_time("ring", 8, 1e6, alpha=1e-6, beta=1e-10, gamma=1e-11), rel=REL)
    assert C.hierarchical_allreduce_time(6, 1, 1e6, inter="rabenseifner", **kw) == pytest.approx(
        C.allreduce_time("rabenseifner", 6, 1e6, alpha=5e-6, beta=1e-9, gamma=1e-11), rel=REL)
    # vectorised over nodes and sizes
    grid = C.hierarchical_allreduce_time(np.array([[2], [16]]), 8, np.array([1e3, 1e9]), **kw)
    assert grid.shape == (2, 2) and grid[1, 1] > grid[0, 1] > grid[0, 0]
    # torus: 2 (r + c - 2) alpha + 2 n (p-1)/p beta
    assert C.torus_2d_allreduce_time(3, 5, 1.5e6, alpha=1e-6, beta=1e-9) == pytest.approx(
        12e-6 + 2 * 1.5e6 * 14 / 15 * 1e-9, rel=REL)


def test_cluster_degrees_and_bisection():
    nodes, g, k, per_leaf = 8, 8, 4, 2
    for r in (1, 2, 4):
        net = T.cluster(nodes, g, nics_per_node=k, nodes_per_leaf=per_leaf, oversubscription=r)
        assert net.graph["ranks"] == nodes * g and net.graph["leaves"] == 4
        assert net.graph["uplinks_per_leaf"] == per_leaf * k // r
        assert net.in_degree("nvswitch3") == net.out_degree("nvswitch3") == g
        assert net.in_degree("leaf2") == net.out_degree("leaf2") == per_leaf * k  # the NIC cables
        assert net.in_degree("spine") == net.out_degree("spine") == 4 * per_leaf * k // r
        assert net.in_degree("nic5.1:tx") == g // k  # the GPUs that share this NIC
        # bisection: cut the cluster between leaves {0, 1} and {2, 3}; the spine ports carry 1/r of the NICs
        flow = net.copy()
        for rank in range(nodes * g):
            if rank // g // per_leaf < 2:
                flow.add_edge("A", rank)
            else:
                flow.add_edge(rank, "B")
        cut = nx.maximum_flow_value(flow, "A", "B", capacity="bandwidth_Bps")
        injection = nodes // 2 * k * T.IB_NDR_Bps  # what half the NICs can send
        assert cut == pytest.approx(injection / r, rel=REL)
    # defaults: a DGX H100 cluster, 8 NICs per node, 4 nodes per leaf (32 NDR ports down)
    dgx = T.make("cluster", nodes=9)
    assert (dgx.graph["nics_per_node"], dgx.graph["nodes_per_leaf"], dgx.graph["leaves"]) == (8, 4, 3)
    assert T.PCIE5_X16_Bps == pytest.approx(63.0e9, rel=1e-3)
    assert T.path_alpha_beta(dgx, 0, 8)[1] == 1 / T.IB_NDR_Bps  # the NIC, not PCIe 5, is the narrow link
    # one leaf: no spine; routes stay inside a node on NVLink and cross the leaf between nodes
    one = T.cluster(3, 4)
    assert "spine" not in one and one.graph["uplinks_per_leaf"] == 0
    assert nx.shortest_path(one, 4, 7, weight="latency_s") == [4, "nvswitch1", 7]
    assert nx.shortest_path(one, 1, 9, weight="latency_s") == [1, "nic0.1:tx", "leaf0.in1", "leaf0", "leaf0.out9",
                                                                "nic2.1:rx", 9]


@pytest.mark.parametrize("g,k", [(8, 8), (8, 2)])
def test_oversubscription_slows_the_cross_node_step_by_its_ratio(g, k):
    # Two nodes on two leaves. In the hierarchical all-reduce's cross-node step every GPU swaps its shard
    # (n/g bytes) with its counterpart on the other node: each NIC carries g/k shards, and a spine 1:r leaves
    # the leaf k/r up-ports for all g shards, g r/k each, so the step's bandwidth time is r (g/k) (n/g) beta.
    n, length = 8e7, 2 * g
    times = {}
    for r in (1, 2, 4):
        if k % r:
            continue  # fewer up-ports than one: the cluster refuses it
        net = T.cluster(2, g, nics_per_node=k, nodes_per_leaf=1, oversubscription=r)
        assert net.graph["uplinks_per_leaf"] == k // r
        sched = TL.hierarchical(2, g, length, inter="recursive_doubling")
        cross = S.Schedule("cross-node step", sched.p, length, sched.rounds[g - 1:-(g - 1)])
        assert len(cross) == 1 and all(t.src // g != t.dst // g for t in cross.rounds[0])
        alpha, beta = T.path_alpha_beta(net, 0, g)
        times[r] = N.simulate(cross, net, nbytes=n, timeline=False).time_s - alpha
        assert times[r] == pytest.approx(r * (g // k) * n / g * beta, rel=1e-9)
    assert sorted(times) == ([1, 2, 4] if k == 8 else [1, 2])
    for r in times:
        assert times[r] / times[1] == pytest.approx(r, rel=1e-9)
    # the whole all-reduce slows by less: its NVLink phases do not cross the spine
    full = {r: N.simulate(TL.hierarchical(2, g, length), T.cluster(2, g, nics_per_node=k, nodes_per_leaf=1,
                                                                   oversubscription=r), nbytes=n).time_s
            for r in (1, 2)}
    assert 1.05 < full[2] / full[1] < 2


def test_errors_name_argument_value_and_expectation():
    with pytest.raises(ValueError, match=r"nodes must be an int >= 1, got 0"):
        TL.hierarchical(0, 4, 8)
    with pytest.raises(ValueError, match=r"ranks_per_node must be an int >= 1, got -2"):
        TL.hierarchical(3, -2, 8)
    with pytest.raises(TypeError, match=r"length must be an int, got 2.5"):
        TL.hierarchical(3, 4, 2.5)
    with pytest.raises(ValueError, match=r"inter must be an allreduce algorithm, one of ring, .*got 'hypercube'"):
        TL.hierarchical(3, 4, 8, inter="hypercube")
    with pytest.raises(ValueError, match=r"cols must be an int >= 1, got 0"):
        TL.torus_2d(3, 0, 8)
    kw = dict(intra_alpha=1e-6, intra_beta=1e-10, inter_alpha=5e-6, inter_beta=1e-9)
    with pytest.raises(ValueError, match=r"ranks_per_node must be >= 1 \(a number of ranks\), got 0"):
        C.hierarchical_allreduce_time(2, 0, 1e6, **kw)
    with pytest.raises(ValueError, match=r"nodes must be a whole number of ranks, got 2.5"):
        C.hierarchical_allreduce_time(2.5, 4, 1e6, **kw)
    with pytest.raises(ValueError, match=r"inter_beta must be >= 0 and finite, got -1"):
        C.hierarchical_allreduce_time(2, 4, 1e6, **{**kw, "inter_beta": -1})
    with pytest.raises(ValueError, match=r"unknown inter-node allreduce algorithm 'mesh'"):
        C.hierarchical_allreduce_time(2, 4, 1e6, inter="mesh", **kw)
    with pytest.raises(ValueError, match=r"rows must be >= 1 \(a number of ranks\), got 0"):
        C.torus_2d_allreduce_time(0, 4, 1e6, alpha=1e-6, beta=1e-9)
    with pytest.raises(ValueError, match=r"nics_per_node must divide gpus_per_node=8 .*got 3"):
        T.cluster(2, 8, nics_per_node=3)
    with pytest.raises(ValueError, match=r"oversubscription must be >= 1 .*got 0.5"):
        T.cluster(4, 8, oversubscription=0.5)
    with pytest.raises(ValueError, match=r"oversubscription must be >= 1 and divide the 32 NIC cables .*got 3"):
        T.cluster(8, 8, oversubscription=3)
    with pytest.raises(ValueError, match=r"nic_Bps must be a positive finite number, got 0"):
        T.cluster(2, 8, nic_Bps=0)
    with pytest.raises(ValueError, match=r"nodes_per_leaf must be an int >= 1, got 0"):
        T.cluster(2, 8, nodes_per_leaf=0)
    with pytest.raises(ValueError, match=r"rows must be an int >= 1, got 0"):
        T.torus(0, 3, bandwidth_Bps=1e9, latency_s=0)
    with pytest.raises(ValueError, match=r"dst must be a node of topology .*got 99"):
        T.path_alpha_beta(T.cluster(2, 4), 0, 99)
