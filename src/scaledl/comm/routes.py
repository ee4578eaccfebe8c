"""What a route through a topology costs: one message's alpha and beta along its route
(:func:`path_alpha_beta`), a ring's slowest-link bound (:func:`ring_seconds_per_byte`) and the ring order
that minimises it (:func:`ring_order`). Topologies are :mod:`scaledl.comm.topology`'s graphs (which re-exports
these); routes are latency-shortest, as :mod:`scaledl.comm.netsim` takes them."""

from __future__ import annotations

import itertools

import networkx as nx

__all__ = ["path_alpha_beta", "ring_seconds_per_byte", "ring_order"]


def path_alpha_beta(topology: nx.DiGraph, src, dst) -> tuple[float, float]:
    """(alpha_s, beta_s_per_B) of one uncontended message from ``src`` to ``dst`` in the simulator: the
    latencies of its route add up and, pieces cutting through, the slowest link sets the rate, so n bytes
    take alpha + n beta. The route is the latency-shortest path, as :mod:`scaledl.comm.netsim` takes.

    >>> from scaledl.comm.topology import cluster, svail_pcie_node
    >>> a, b = path_alpha_beta(cluster(2, 8), 0, 8)     # two nodes on one leaf: 2 x 1.5 us, NDR's 50 GB/s
    >>> round(a * 1e6, 3), round(1 / b / 1e9, 3)
    (3.0, 50.0)

    Raises:
        ValueError: src or dst not in the topology, or no route between them.
    """
    for name, v in (("src", src), ("dst", dst)):
        if v not in topology:
            raise ValueError(f"{name} must be a node of topology {topology.graph.get('name')!r}, got {v!r}")
    if src == dst:
        return 0.0, 0.0
    try:
        path = nx.shortest_path(topology, src, dst, weight="latency_s")
    except nx.NetworkXNoPath:
        raise ValueError(f"no route from {src!r} to {dst!r} in {topology.graph.get('name')!r}") from None
    links = [topology.edges[e] for e in zip(path, path[1:])]
    return sum(d["latency_s"] for d in links), 1 / min(d["bandwidth_Bps"] for d in links)


def ring_seconds_per_byte(topology: nx.DiGraph, order) -> float:
    """The slowest-link bound of a ring through ``order``: each ring edge order[i] -> order[i+1] is routed
    by latency, and a link that k edges share can give each 1/k of its bandwidth, so a ring all-reduce of
    n bytes takes at least 2 (p-1)/p n times this.

    >>> from scaledl.comm.topology import svail_pcie_node
    >>> node = svail_pcie_node()
    >>> round(1 / ring_seconds_per_byte(node, range(8)) / 1e9, 2)  # GB/s: PCIe x16, nothing shared
    15.75
    >>> round(1 / ring_seconds_per_byte(node, [0, 4, 1, 5, 2, 6, 3, 7]) / 1e9, 2)  # 4 edges share an uplink
    3.94
    """
    return _ring_cost(topology, list(order), {})


def _ring_cost(topology, order, paths: dict) -> float:
    load: dict = {}
    for a, b in zip(order, order[1:] + order[:1]):
        if a == b:
            continue
        if (a, b) not in paths:
            path = nx.shortest_path(topology, a, b, weight="latency_s")
            paths[a, b] = list(zip(path, path[1:]))
        for e in paths[a, b]:
            load[e] = load.get(e, 0) + 1
    return max((k / topology.edges[e]["bandwidth_Bps"] for e, k in load.items()), default=0.0)


def ring_order(topology: nx.DiGraph, *, exhaustive_up_to: int = 8) -> list[int]:
    """A ring order over the topology's ranks with the smallest :func:`ring_seconds_per_byte`, what NCCL's
    topology detection does when it searches for rings. Every order (rank 0 first) is tried up to
    ``exhaustive_up_to`` ranks; beyond that, nearest neighbour by route latency from rank 0.

    >>> from scaledl.comm.topology import svail_pcie_node
    >>> ring_order(svail_pcie_node())  # one crossing between the peer-to-peer domains each way
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    p = topology.graph["ranks"]
    if p <= 2:
        return list(range(p))
    if p <= exhaustive_up_to:
        paths: dict = {}
        best = min(((0, *rest) for rest in itertools.permutations(range(1, p))),
                   key=lambda order: _ring_cost(topology, list(order), paths))
        return list(best)
    dist = dict(nx.all_pairs_dijkstra_path_length(topology, weight="latency_s"))
    order, left = [0], set(range(1, p))
    while left:
        nxt = min(left, key=lambda r: (dist[order[-1]][r], r))
        order.append(nxt)
        left.remove(nxt)
    return order
