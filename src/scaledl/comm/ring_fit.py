"""How well a ring fits a topology: a ring's slowest-link bound (:func:`ring_seconds_per_byte`) and the ring order
that minimises it (:func:`ring_order`), as NCCL's topology search scores rings. Topologies are
:mod:`scaledl.comm.topology`'s graphs (which re-exports both); routes are latency-shortest, as
:mod:`scaledl.comm.netsim` takes them.

These are lab 05's Task 3.1-3.2 answers, which the lab's grading run leaves out (:mod:`scaledl.course.view`):
:func:`scaledl.comm.routes.path_alpha_beta` and the topologies stay.
"""

from __future__ import annotations

import itertools

import networkx as nx

__all__ = ["ring_seconds_per_byte", "ring_order"]


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
