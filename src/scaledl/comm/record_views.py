"""Figures of the record runs (:mod:`scaledl.comm.record_runs`): the model's scaling curve of a run as its
network and algorithm change (chapter 16's explorer), and the model's skill over the best of its three trivial
baselines, row by row (:mod:`scaledl.comm.record_scores`).

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> fig = view_skill()
>>> [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
['NVIDIA DGX', 'Dell XE8545', 'weak scaling']
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from scaledl.comm.cluster_model import ALGORITHMS, DataParallelRun, predict
from scaledl.comm.record_runs import record

__all__ = ["node_doublings", "scaling_curve", "view_scaling", "view_skill"]


def node_doublings(per_node: int, up_to: int) -> list[int]:
    """GPU counts from one node of ``per_node`` GPUs, doubling, up to ``up_to``, and ``up_to`` itself when it
    is not on the way (1088 GPUs in nodes of 4: 4, 8, ..., 1024, 1088)."""
    if isinstance(per_node, bool) or not isinstance(per_node, numbers.Integral) or per_node < 1:
        raise ValueError(f"per_node must be a positive int, got {per_node!r}")
    if isinstance(up_to, bool) or not isinstance(up_to, numbers.Integral) or up_to < per_node:
        raise ValueError(f"up_to must be an int >= per_node={per_node}, got {up_to!r}")
    counts = [per_node * 2 ** k for k in range(int(math.log2(up_to // per_node)) + 1)]
    return counts if counts[-1] == up_to else counts + [int(up_to)]


def scaling_curve(run: DataParallelRun, gpu_counts) -> np.ndarray:
    """The model's scaling efficiency of ``run`` at each GPU count (whole nodes), against its baseline."""
    if not isinstance(run, DataParallelRun):
        raise TypeError(f"run must be a DataParallelRun, got {type(run).__name__}")
    counts = list(gpu_counts)
    if not counts:
        raise ValueError("gpu_counts must hold at least one GPU count, got none")
    return np.array([predict(run.replace(gpus=g)).efficiency for g in counts])


def view_scaling(nic_Gbit_s: float = 50.0, algorithm: str = "hierarchical", max_gpus: int = 256,
                 name: str = "Goyal et al. 2017"):
    """Scaling efficiency against GPU count for the run ``name`` with its NIC at ``nic_Gbit_s`` per link and
    ``algorithm``, from one node to ``max_gpus`` GPUs (doubling), with the measured figure marked.

    Raises:
        ValueError: nic_Gbit_s not positive, an unknown algorithm or name, max_gpus below one node.
    """
    import matplotlib.pyplot as plt

    r = record(name)
    if isinstance(nic_Gbit_s, bool) or not isinstance(nic_Gbit_s, numbers.Real) or not nic_Gbit_s > 0:
        raise ValueError(f"nic_Gbit_s must be a positive number, got {nic_Gbit_s!r}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}")
    per_node = r.run.gpus_per_node
    if isinstance(max_gpus, bool) or not isinstance(max_gpus, numbers.Integral) or max_gpus < per_node:
        raise ValueError(f"max_gpus must be an int >= gpus_per_node={per_node}, got {max_gpus!r}")
    run = r.run.replace(nic_Bps=nic_Gbit_s * 1e9 / 8, algorithm=algorithm)
    counts = node_doublings(per_node, max_gpus)
    eff = scaling_curve(run, counts)
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(counts, eff * 100, "o-", label=f"model: {nic_Gbit_s:g} Gb/s per NIC, {algorithm}")
    if r.measured.efficiency is not None:
        ax.plot([r.run.gpus], [r.measured.efficiency * 100], "k*", ms=12, label=f"published ({r.name})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("scaling efficiency against one node (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"{r.name}: {r.run.calibration.accelerator}, {r.run.batch} per GPU")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def view_skill(rows=None):
    """Skill over the best baseline of each scored row (:mod:`scaledl.comm.record_scores`): the best
    baseline's absolute error minus the model's, on the efficiency in points (left) and on the step in % of the
    measured step (right), one bar per row, coloured by group; the grey band is the margin within which the
    model has not shown it beats the baseline (GOALS["margin_points"])."""
    import matplotlib.pyplot as plt

    from scaledl.comm import record_scores as rs
    from scaledl.comm.record_runs import GOALS

    rows = [s for s in (rs.scores() if rows is None else rows) if s.status == "scored"]
    colours = {"NVIDIA DGX": "tab:green", "Dell XE8545": "tab:blue", "weak scaling": "tab:gray"}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    names = [s.name.replace("MLPerf ", "") for s in rows]
    y = np.arange(len(rows))[::-1]
    margin = 100 * GOALS["margin_points"]
    for ax, family, unit in ((axes[0], "efficiency", "points of efficiency"), (axes[1], "step", "% of the step")):
        skill = [getattr(s, family).skill if getattr(s, family) is not None else None for s in rows]
        for yi, s, k in zip(y, rows, skill):
            if k is not None:
                ax.barh(yi, 100 * k, color=colours[rs.group(s)])
        ax.axvspan(-margin, margin, color="0.9", zorder=0)
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xlabel(f"skill over the best baseline ({unit})")
    axes[0].set_yticks(y, names, fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    axes[1].legend(handles, list(colours), fontsize=8, loc="lower right")
    axes[0].set_title("efficiency", fontsize=10)
    axes[1].set_title("step time", fontsize=10)
    fig.tight_layout()
    return fig
