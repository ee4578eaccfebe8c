"""What a route through a topology costs: one message's alpha and beta along its route
(:func:`path_alpha_beta`). Topologies are :mod:`scaledl.comm.topology`'s graphs (which re-exports it); routes are
latency-shortest, as :mod:`scaledl.comm.netsim` takes them. What a ring costs, and the ring order that minimises
it, are :mod:`scaledl.comm.ring_fit`."""

from __future__ import annotations

import networkx as nx

__all__ = ["path_alpha_beta"]


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
