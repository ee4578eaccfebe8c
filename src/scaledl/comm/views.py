"""Figures of the collective simulator: a per-rank timeline and link utilisation, and the widget view of
chapter 14 (algorithm, ranks, message size and topology in; time, bus bandwidth and the timeline out).

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> fig = allreduce_view("ring", ranks=4, size_MiB=16, topology="ring with a slow link")
>>> fig.axes[0].get_title()
'ring all-reduce, 16 MiB on ring(4) + slow link: 15.98 ms (closed form 1.60 ms), bus bandwidth 1.6 GB/s'
"""

from __future__ import annotations

from scaledl.comm import cost, netsim
from scaledl.comm import topology as T

__all__ = ["VIEW_TOPOLOGIES", "timeline_figure", "allreduce_view"]

VIEW_TOPOLOGIES = ("switch", "ring", "ring with a slow link", "SVAIL PCIe node", "SVAIL node, bad ring order",
                   "NVSwitch node", "2 NVSwitch nodes + InfiniBand")
_COLORS = {"send": "tab:blue", "recv": "tab:orange", "reduce": "tab:green"}
# The generic switch and ring of the view use PCIe 3.0 x16 links, so that they compare with seed 001's node.
_VIEW_LATENCY_s = 2 * T.PCIE_HOP_LATENCY_s


def timeline_figure(result: netsim.Result, *, ax=None, title: str = ""):
    """Each rank a row; its sends, receives and reductions as bars over time (ms)."""
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 3.5))
    rows: dict = {}
    for rank, start, end, kind in result.timeline:
        rows.setdefault((rank, kind), []).append((start * 1e3, (end - start) * 1e3))
    offsets = {"send": -0.3, "recv": 0.0, "reduce": 0.3}
    for (rank, kind), bars in sorted(rows.items()):
        ax.broken_barh(bars, (rank + offsets[kind] - 0.12, 0.24), color=_COLORS[kind])
    for kind, color in _COLORS.items():
        ax.bar(0, 0, color=color, label=kind)
    ranks = sorted({r for r, _ in rows})
    ax.set_yticks(ranks)
    ax.set_ylabel("rank")
    ax.set_xlabel("time (ms)")
    ax.invert_yaxis()
    ax.legend(loc="upper right", fontsize=8, ncol=3)
    ax.set_title(title)
    return fig if fig is not None else ax.figure


def _topology(name: str, ranks: int):
    bw, lat = T.PCIE3_X16_Bps, _VIEW_LATENCY_s
    if name == "switch":
        return T.switch(ranks, bandwidth_Bps=bw, latency_s=lat), None
    if name == "ring":
        return T.ring(ranks, bandwidth_Bps=bw, latency_s=lat), None
    if name == "ring with a slow link":
        g = T.with_links(T.ring(ranks, bandwidth_Bps=bw, latency_s=lat), {(0, 1): {"bandwidth_Bps": bw / 10}})
        g.graph["name"] += " + slow link"
        return g, None
    if name == "SVAIL PCIe node":
        return T.svail_pcie_node(), None
    if name == "SVAIL node, bad ring order":
        return T.svail_pcie_node(), [0, 4, 1, 5, 2, 6, 3, 7]
    if name == "NVSwitch node":
        return T.nvswitch_node(), None
    if name == "2 NVSwitch nodes + InfiniBand":
        return T.multi_node(2), None
    raise ValueError(f"unknown topology {name!r}; expected one of {', '.join(VIEW_TOPOLOGIES)}")


def allreduce_view(algorithm: str = "ring", ranks: int = 8, size_MiB: float = 64.0, topology: str = "switch",
                   chunks: int = 1):
    """Widget view: simulate one all-reduce and draw its timeline beside the busiest links' utilisation.

    The node topologies have 8 (or 16) GPUs whatever ``ranks`` says. The title gives the simulated time,
    the closed form with the topology's fastest link (what the alpha-beta model would predict) and NCCL's
    bus bandwidth.
    """
    import matplotlib.pyplot as plt
    import networkx as nx

    net, order = _topology(topology, int(ranks))
    p = net.graph["ranks"]
    nbytes = float(size_MiB) * 2**20
    res = netsim.simulate_allreduce(algorithm, net, nbytes, order=order, chunks=int(chunks))
    # the model's alpha: rank 0 to rank 1's route latency; its beta: the fastest link, as if all were alike
    alpha = nx.shortest_path_length(net, 0, 1, weight="latency_s") if p > 1 else 0.0
    beta = 1 / max(bw for _, _, bw in net.edges(data="bandwidth_Bps")) if p > 1 else 0.0
    closed = cost.allreduce_time(algorithm, p, nbytes, alpha=alpha, beta=beta)
    busbw = cost.bus_bandwidth("allreduce", p, nbytes, res.time_s) if res.time_s > 0 else float("nan")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [2.2, 1]})
    timeline_figure(res, ax=ax1, title=f"{algorithm} all-reduce, {size_MiB:g} MiB on {net.graph['name']}: "
                    f"{res.time_s * 1e3:.2f} ms (closed form {closed * 1e3:.2f} ms), bus bandwidth "
                    f"{busbw / 1e9:.1f} GB/s")
    util = sorted(res.utilization().items(), key=lambda kv: -kv[1])[:12]
    ax2.barh([f"{u}->{v}" for (u, v), _ in util], [100 * x for _, x in util], color="tab:gray")
    ax2.invert_yaxis()
    ax2.set_xlim(0, 100)
    ax2.set_xlabel("link busy (% of the all-reduce)")
    ax2.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return fig

