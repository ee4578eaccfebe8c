"""Figures of the collective simulator: a per-rank timeline and link utilisation, the widget view of
chapter 14 (algorithm, ranks, message size and topology in; time, bus bandwidth and the timeline out), and
axis labels in bytes and seconds for log-scale plots.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> fig = allreduce_view("ring", ranks=4, size_MiB=16, topology="ring with a slow link")
>>> print(fig.axes[0].get_title(loc="left"))
ring all-reduce of 16 MiB on ring(4) + slow link, 4 ranks
simulated 15.98 ms, closed form 1.60 ms, bus bandwidth 1.6 GB/s
>>> ranks_control("SVAIL PCIe node")
(True, "ranks fixed: the node's 8 GPUs")
"""

from __future__ import annotations

from scaledl.comm import cost, netsim
from scaledl.comm import topology as T
import numpy as np

from scaledl.comm import plan
from scaledl.comm.plan import H100_SXM, Layout, step_time

__all__ = ["VIEW_TOPOLOGIES", "FIXED_RANKS", "timeline_figure", "allreduce_view", "ranks_control",
           "allreduce_explorer", "bytes_axis", "seconds_axis", "data_parallel_view"]

VIEW_TOPOLOGIES = ("switch", "ring", "ring with a slow link", "SVAIL PCIe node", "SVAIL node, bad ring order",
                   "NVSwitch node", "2 NVSwitch nodes + InfiniBand")
# Topologies that model one machine as built: their number of GPUs is the hardware's, so the view's ranks
# argument does not apply to them (the explorer disables its slider and says why). name -> (ranks, why)
FIXED_RANKS = {"SVAIL PCIe node": (8, "the node's 8 GPUs"),
               "SVAIL node, bad ring order": (8, "the node's 8 GPUs"),
               "NVSwitch node": (8, "an HGX H100 board's 8 GPUs"),
               "2 NVSwitch nodes + InfiniBand": (16, "2 nodes of 8 GPUs")}
_COLORS = {"send": "tab:blue", "recv": "tab:orange", "reduce": "tab:green"}
# The generic switch and ring of the view use PCIe 3.0 x16 links, so that they compare with the SVAIL node.
_VIEW_LATENCY_s = 2 * T.PCIE_HOP_LATENCY_s
_FONT_PT = 10  # tick labels and legends: legible when the site scales a 12-inch figure to its text width


def timeline_figure(result: netsim.Result, *, ax=None, title: str = ""):
    """Each rank a row; its sends, receives and reductions as bars over time (ms).

    Up to 30 messages per row, each is its own bar with a thin white edge, so the rounds stay visible where
    they follow each other without a gap. The legend sits above the axes, outside the data, and names only what occurs.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 3.8))
    rows: dict = {}
    for rank, start, end, kind in result.timeline:
        rows.setdefault((rank, kind), []).append((start * 1e3, (end - start) * 1e3))
    offsets = {"send": -0.3, "recv": 0.0, "reduce": 0.3}
    # edges between messages only while they stay thinner than the bars (a few dozen rounds)
    edge = 0.4 if max((len(b) for b in rows.values()), default=0) <= 30 else 0.0
    for (rank, kind), bars in sorted(rows.items()):
        ax.broken_barh(bars, (rank + offsets[kind] - 0.13, 0.26), facecolor=_COLORS[kind], edgecolor="white",
                       linewidth=edge)
    kinds = [k for k in _COLORS if any(kind == k for _, kind in rows)]
    ranks = sorted({r for r, _ in rows})
    ax.set_yticks(ranks)
    if len(ranks) > 16:  # one label every few ranks keeps them from overlapping
        ax.set_yticklabels([str(r) if i % (len(ranks) // 8) == 0 else "" for i, r in enumerate(ranks)])
    ax.set_ylabel("rank")
    ax.set_xlabel("time (ms)")
    ax.set_xlim(0, max(result.time_s * 1e3, 1e-9) * 1.01)
    ax.invert_yaxis()
    ax.tick_params(labelsize=_FONT_PT)
    ax.legend(handles=[Patch(color=_COLORS[k], label=k) for k in kinds], loc="lower left",
              bbox_to_anchor=(0, 1.0), ncol=len(kinds), fontsize=_FONT_PT, frameon=False, borderaxespad=0.2)
    ax.set_title(title, fontsize=_FONT_PT + 1, loc="right" if title and kinds else "center")
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
    raise ValueError(f"topology: unknown topology {name!r}; expected one of {', '.join(VIEW_TOPOLOGIES)}")


def ranks_control(topology: str) -> tuple[bool, str]:
    """(disabled, description) for the ranks control when ``topology`` is selected.

    A topology of :data:`FIXED_RANKS` has as many ranks as its hardware, so the control is off and its label
    says how many and why; on the others the control sets the number of ranks.
    """
    if topology not in VIEW_TOPOLOGIES:
        raise ValueError(f"topology: unknown topology {topology!r}; expected one of {', '.join(VIEW_TOPOLOGIES)}")
    if topology in FIXED_RANKS:
        return True, f"ranks fixed: {FIXED_RANKS[topology][1]}"
    return False, "ranks"


def allreduce_view(algorithm: str = "ring", ranks: int = 8, size_MiB: float = 64.0, topology: str = "switch",
                   chunks: int = 1):
    """Widget view: simulate one all-reduce and draw its timeline beside the busiest links' utilisation.

    ``ranks`` sets the number of ranks of the switch and the rings; the machines of :data:`FIXED_RANKS` have
    their own number, which the title states. The title gives the simulated time, the closed form with the
    topology's fastest link (what the alpha-beta model would predict) and NCCL's bus bandwidth.
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
    fixed = ", fixed by the topology" if topology in FIXED_RANKS else ""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [2.2, 1]})
    timeline_figure(res, ax=ax1)
    ax1.set_title(f"{algorithm} all-reduce of {size_MiB:g} MiB on {net.graph['name']}, {p} ranks{fixed}\n"
                  f"simulated {res.time_s * 1e3:.2f} ms, closed form {closed * 1e3:.2f} ms, bus bandwidth "
                  f"{busbw / 1e9:.1f} GB/s", fontsize=_FONT_PT + 1, loc="left", pad=22)
    util = sorted(res.utilization().items(), key=lambda kv: -kv[1])[:10]
    ax2.barh([f"{u} -> {v}" for (u, v), _ in util], [100 * x for _, x in util], color="tab:gray")
    ax2.invert_yaxis()
    ax2.set_xlim(0, 100)
    ax2.set_xlabel("link busy (% of the all-reduce)")
    ax2.set_title("busiest links", fontsize=_FONT_PT + 1, pad=22)
    ax2.tick_params(labelsize=_FONT_PT)
    fig.tight_layout()
    return fig


def allreduce_explorer(*, algorithm: str = "ring", ranks: int = 8, size_MiB: float = 16.0,
                       topology: str = "SVAIL PCIe node", chunks: int = 1):
    """Chapter 14's explorer: :func:`allreduce_view` with one control per argument, the given defaults.

    Choosing a topology of :data:`FIXED_RANKS` disables the ranks slider and relabels it with the reason
    (:func:`ranks_control`); choosing another enables it again.
    """
    from scaledl.comm.cost import ALLREDUCE_ALGORITHMS
    from scaledl.widgets import Explorer, choice, log_slider, slider

    controls = dict(algorithm=choice(list(ALLREDUCE_ALGORITHMS), algorithm, description="algorithm"),
                    ranks=slider(ranks, 2, 32, description="ranks"),
                    size_MiB=log_slider(size_MiB, 0.001, 1024, description="MiB"),
                    topology=choice(list(VIEW_TOPOLOGIES), topology, description="topology"),
                    chunks=slider(chunks, 1, 16, description="pieces"))

    def follow(change):
        controls["ranks"].disabled, controls["ranks"].description = ranks_control(change["new"])

    follow({"new": topology})
    controls["topology"].observe(follow, names="value")
    return Explorer(allreduce_view, **controls)


def _log_ticks(axis, values, labels):
    from matplotlib.ticker import FixedLocator, NullFormatter

    lo, hi = axis.get_view_interval()
    keep = [(v, s) for v, s in zip(values, labels) if lo <= v <= hi]
    axis.set_major_locator(FixedLocator([v for v, _ in keep]))
    axis.set_ticklabels([s for _, s in keep])
    axis.set_minor_formatter(NullFormatter())


def bytes_axis(axis, *, step: int = 5) -> None:
    """Label a log-scale axis in B, KiB, MiB, GiB, TiB, one tick every ``2**step`` (32x by default).

    Call it after plotting (it keeps the ticks inside the current limits). ``axis`` is ``ax.xaxis`` or
    ``ax.yaxis``.
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"step: expected an int >= 1 (a power of two between ticks), got {step!r}")
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    values, labels = [], []
    for e in range(0, 10 * len(units), step):
        values.append(2.0**e)
        labels.append(f"{2**(e % 10)} {units[e // 10]}")
    _log_ticks(axis, values, labels)


def seconds_axis(axis) -> None:
    """Label a log-scale axis of seconds as 1 ns, 10 ns, ..., 1 us, ..., 1 s, ..., 1000 s, one per decade.

    Call it after plotting; ``axis`` is ``ax.xaxis`` or ``ax.yaxis``.
    """
    units = (("ns", -9), ("µs", -6), ("ms", -3), ("s", 0))
    values, labels = [], []
    for unit, e in units:
        for k in range(3 if unit != "s" else 4):
            values.append(10.0 ** (e + k))
            labels.append(f"{10 ** k} {unit}")
    _log_ticks(axis, values, labels)


def layout_view(params_B: float = 175.0, tp: int = 8, pp: int = 8, dp: int = 16, microbatches: int = 16):
    """Widget view: a model of ``params_B`` billion parameters on tp x pp x dp H100s; memory per GPU against
    80 GB, the step time split into compute, bubble and communication, and the bubble fraction."""
    import matplotlib.pyplot as plt

    lay = Layout(params_B * 1e9, int(tp), int(pp), int(dp), int(microbatches))
    try:
        r = step_time(lay)
    except ValueError as err:
        return f"not a valid layout: {err}"
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1, 2.4]})
    ax1.bar(["memory per GPU"], [r["memory_per_gpu_B"] / 1e9], color="tab:red" if not r["fits"] else "tab:green")
    ax1.axhline(H100_SXM.memory_B / 1e9, color="k", ls="--", lw=1)
    ax1.text(0, H100_SXM.memory_B / 1e9, " 80 GB", va="bottom", ha="center", fontsize=8)
    ax1.set_ylabel("GB (weights, grads, Adam)")
    parts = [("compute", r["compute_s"], "tab:blue"), ("bubble", r["bubble_s"], "tab:gray"),
             ("TP all-reduce", r["tp_comm_s"], "tab:orange"), ("DP all-reduce", r["dp_comm_s"], "tab:purple")]
    left = 0.0
    for label, value, color in parts:
        ax2.barh([0], [value], left=left, color=color, label=f"{label} {value:.3g} s")
        left += value
    ax2.set_yticks([])
    ax2.set_xlabel("seconds per step (4 M tokens)")
    ax2.legend(fontsize=8, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    fits = "fits" if r["fits"] else "does NOT fit"
    fig.suptitle(f"{params_B:g} B params ({r['layers']} layers, h = {r['hidden']}) on {r['gpus']} GPUs = "
                 f"TP {tp} x PP {pp} x DP {dp}: {r['memory_per_gpu_B'] / 1e9:.1f} GB/GPU ({fits}), step "
                 f"{r['step_s']:.3g} s, bubble {100 * r['bubble_fraction']:.1f} %", fontsize=10)
    fig.tight_layout()
    return fig


def data_parallel_view(algorithm: str = "ring", nics_per_node: int = plan.HGX_H100.compute_nics,
                       alpha_us: float = 5.0, batch: int = 8192, efficiency: float = 0.4):
    """Widget view of chapter 13, section 5: ResNet-50 with a fixed global ``batch`` on 1 to 1024 H100s at
    ``efficiency`` of dense BF16 peak, FP32 gradients all-reduced by ``algorithm`` (``plan.data_parallel_scaling``);
    the compute and the all-reduce per step against the GPUs, the crossover and the weak-scaling efficiency at
    1024 GPUs (``batch`` per 8 GPUs) in the title.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> title = data_parallel_view("tree")._suptitle.get_text()
    >>> title.split(": ")[1]
    'communication exceeds compute from 1024 GPUs on; weak scaling at 1024 GPUs 99 %'
    """
    import matplotlib.pyplot as plt

    gpus = 2 ** np.arange(0, 11)
    compute_1 = (plan.training_flop_per_example(plan.RESNET50_FORWARD_MULTIPLY_ADDS) * batch
                 / (efficiency * H100_SXM.dense_bf16_flops))
    comp, comm = plan.data_parallel_scaling(gpus, compute_1gpu_s=compute_1, gradient_B=4 * plan.RESNET50_PARAMS,
                                            nics_per_node=nics_per_node, alpha_s=alpha_us * 1e-6,
                                            algorithm=algorithm)
    cross = plan.crossover_gpus(gpus, comp, comm)
    c8 = comp[list(gpus).index(8)]
    weak = 100 * c8 / (c8 + comm[-1])
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.loglog(gpus, comp * 1e3, "o-", base=2, label="compute (halves)")
    ax.loglog(gpus[1:], comm[1:] * 1e3, "s-", base=2, label=f"{algorithm} all-reduce")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("ms per step")
    ax.legend(fontsize=8)
    where = f"from {cross} GPUs on" if cross else f"at no count up to {gpus[-1]} GPUs"
    fig.suptitle(f"{algorithm} all-reduce, {nics_per_node} NICs per node, alpha {alpha_us:g} us: communication "
                 f"exceeds compute {where}; weak scaling at {gpus[-1]} GPUs {weak:.0f} %", fontsize=9)
    fig.tight_layout()
    return fig
