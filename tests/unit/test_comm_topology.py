"""Topologies: ranks and link attributes, the routes that matter (SVAIL's cross-domain traffic over QPI,
NVSwitch inside a node, InfiniBand between nodes), per-link overrides, errors."""

import networkx as nx
import pytest

from scaledl.comm import topology as T


def test_constants_recompute():
    assert T.PCIE3_X16_Bps == pytest.approx(15.75e9, rel=1e-3)
    assert T.NVLINK4_H100_Bps == 450e9  # 900 GB/s is both directions together
    assert T.IB_NDR_Bps == 50e9
    assert T.QPI_9_6GTs_Bps == 19.2e9


def test_switch_and_ring():
    g = T.switch(5, bandwidth_Bps=2e9, latency_s=4e-6)
    assert g.graph["ranks"] == 5 and g.number_of_edges() == 10
    path = nx.shortest_path(g, 1, 3, weight="latency_s")
    assert path == [1, "switch", 3]
    assert sum(g.edges[e]["latency_s"] for e in zip(path, path[1:])) == 4e-6
    r = T.ring(5, bandwidth_Bps=2e9, latency_s=1e-6)
    assert r.number_of_edges() == 10 and r.has_edge(4, 0) and r.has_edge(0, 4)
    assert T.ring(2, bandwidth_Bps=1e9, latency_s=0).number_of_edges() == 2
    assert T.ring(1, bandwidth_Bps=1e9, latency_s=0).number_of_edges() == 0


def test_svail_node_routes_cross_domain_traffic_over_the_cpus():
    g = T.svail_pcie_node()
    assert g.graph["ranks"] == 8
    assert nx.shortest_path(g, 1, 2, weight="latency_s") == [1, "plx0", 2]  # peer to peer inside a domain
    assert nx.shortest_path(g, 2, 5, weight="latency_s") == [2, "plx0", "cpu0", "cpu1", "plx1", 5]
    assert g.edges["cpu0", "cpu1"]["bandwidth_Bps"] == T.QPI_9_6GTs_Bps
    assert g.edges["plx0", "cpu0"]["bandwidth_Bps"] == T.PCIE3_X16_Bps  # one x16 uplink for four GPUs


def test_nvswitch_and_multi_node():
    g = T.nvswitch_node()
    assert g.graph["ranks"] == 8 and g.edges[3, "switch"]["bandwidth_Bps"] == T.NVLINK4_H100_Bps
    m = T.multi_node(3, 4)
    assert m.graph["ranks"] == 12
    assert nx.shortest_path(m, 4, 7, weight="latency_s") == [4, "nvswitch1", 7]
    assert nx.shortest_path(m, 1, 9, weight="latency_s") == [1, "ib", 9]
    assert m.edges[1, "ib"]["bandwidth_Bps"] == T.IB_NDR_Bps


def test_with_links_overrides_one_cable_and_leaves_the_original():
    base = T.ring(4, bandwidth_Bps=1e9, latency_s=1e-6)
    slow = T.with_links(base, {(1, 2): {"bandwidth_Bps": 1e8, "latency_s": 5e-6}})
    assert slow.edges[1, 2]["bandwidth_Bps"] == 1e8 and slow.edges[2, 1]["latency_s"] == 5e-6
    assert base.edges[1, 2]["bandwidth_Bps"] == 1e9
    one_way = T.with_links(base, {(1, 2): {"bandwidth_Bps": 1e8}}, both_directions=False)
    assert one_way.edges[2, 1]["bandwidth_Bps"] == 1e9


def test_from_graph_turns_an_undirected_graph_into_duplex_links():
    h = nx.path_graph(3)
    h.edges[0, 1]["bandwidth_Bps"] = 5e9
    g = T.from_graph(h, bandwidth_Bps=1e9, latency_s=1e-6)
    assert g.graph["ranks"] == 3 and g.edges[1, 0]["bandwidth_Bps"] == 5e9 and g.edges[2, 1]["bandwidth_Bps"] == 1e9
    assert T.make("ring", p=3, bandwidth_Bps=1e9, latency_s=0).graph["ranks"] == 3


def test_errors():
    with pytest.raises(ValueError, match=r"unknown topology 'torus'; expected one of switch"):
        T.make("torus", p=4)
    with pytest.raises(ValueError, match=r"p must be >= 1 .*got 0"):
        T.switch(0, bandwidth_Bps=1e9, latency_s=0)
    with pytest.raises(ValueError, match=r"bandwidth_Bps must be a positive finite number, got -1"):
        T.switch(2, bandwidth_Bps=-1, latency_s=0)
    with pytest.raises(ValueError, match=r"latency_s must be a finite number >= 0"):
        T.ring(3, bandwidth_Bps=1e9, latency_s=-1e-6)
    with pytest.raises(ValueError, match=r"link 0 -> 2 is not in topology"):
        T.with_links(T.ring(4, bandwidth_Bps=1e9, latency_s=0), {(0, 2): {"bandwidth_Bps": 1.0}})
    with pytest.raises(ValueError, match=r"bandwidth_Bps or latency_s, got 'speed'"):
        T.with_links(T.ring(4, bandwidth_Bps=1e9, latency_s=0), {(0, 1): {"speed": 1.0}})
    with pytest.raises(ValueError, match=r"no bandwidth_Bps/latency_s and no default"):
        T.from_graph(nx.path_graph(3))
    with pytest.raises(ValueError, match=r"rank 0 cannot reach \[2, 3\]"):
        T.from_graph(nx.Graph([(0, 1), (2, 3)]), bandwidth_Bps=1e9, latency_s=0)
    with pytest.raises(ValueError, match=r"integer rank nodes 0 .. p-1"):
        T.from_graph(nx.Graph([(1, 2)]), bandwidth_Bps=1e9, latency_s=0)


def test_ring_order_finds_the_one_crossing_ring_when_ranks_are_interleaved():
    # the SVAIL node with its GPUs numbered alternately across the two peer-to-peer domains
    node = T.svail_pcie_node()
    relabel = {gpu: (2 * gpu if gpu < 4 else 2 * (gpu - 4) + 1) for gpu in range(8)}
    shuffled = T.from_graph(nx.relabel_nodes(node, relabel))
    natural = T.ring_seconds_per_byte(shuffled, range(8))
    order = T.ring_order(shuffled)
    assert natural == pytest.approx(4 / T.PCIE3_X16_Bps)  # every edge crosses: 4 per direction per uplink
    assert T.ring_seconds_per_byte(shuffled, order) == pytest.approx(1 / T.PCIE3_X16_Bps)
    assert sorted(order) == list(range(8)) and order[0] == 0


def test_ring_order_greedy_beyond_the_exhaustive_size_keeps_nodes_together():
    cluster = T.multi_node(3, 4)  # 12 ranks: nearest neighbour by latency
    order = T.ring_order(cluster)
    assert [r // 4 for r in order] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert T.ring_seconds_per_byte(cluster, order) == pytest.approx(1 / T.IB_NDR_Bps)
    assert T.ring_order(T.switch(2, bandwidth_Bps=1e9, latency_s=0)) == [0, 1]
