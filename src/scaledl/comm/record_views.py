"""Figures of the record runs (:mod:`scaledl.comm.record_runs`): the model's scaling curve of a run as its
network and algorithm change (chapter 16's explorer), and the predictions against the measurements beside
the two trivial baselines.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> fig = view_skill()
>>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()][:3]
['cluster model', 'communication only', 'perfect scaling']
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from scaledl.comm.cluster_model import ALGORITHMS, DataParallelRun, predict
from scaledl.comm.record_runs import RECORD_RUNS, record

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


def view_skill(runs=RECORD_RUNS):
    """Predicted against measured, for every scored row: efficiencies (left) and step times (right), for the
    cluster model, communication only and perfect scaling; the diagonal is a perfect prediction."""
    import matplotlib.pyplot as plt

    scored = [r for r in runs if r.scored]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    eff = [r for r in scored if r.measured.efficiency is not None]
    step = [r for r in scored if r.measured.step_s is not None and r.measured.reference_step_s is not None]
    x = np.array([100 * r.measured.efficiency for r in eff])
    for label, style, ys in (("cluster model", "o", [r.efficiency_error for r in eff]),
                             ("communication only", "s", [r.communication_only_error for r in eff]),
                             ("perfect scaling", "^", [r.perfect_error for r in eff])):
        left.plot(x, x + 100 * np.array(ys), style, ms=5, label=label)
    left.plot([0, 100], [0, 100], "k:", lw=1)
    left.set_xlabel("measured scaling efficiency (%)")
    left.set_ylabel("predicted (%)")
    left.set_xlim(30, 102)
    left.set_ylim(30, 102)
    left.legend(fontsize=8, loc="lower right")
    t = np.array([1e3 * r.measured.step_s for r in step])
    for label, style, errs in (("cluster model", "o", [r.step_error for r in step]),
                               ("communication only", "s", [r.communication_only_step_error for r in step]),
                               ("perfect scaling", "^", [r.perfect_step_error for r in step])):
        right.plot(t, t * (1 + np.array(errs)), style, ms=5, label=label)
    lo, hi = 0.5 * t.min(), 1.5 * t.max()
    right.plot([lo, hi], [lo, hi], "k:", lw=1)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("measured step (ms)")
    right.set_ylabel("predicted step (ms)")
    left.set_title(f"{len(eff)} efficiencies", fontsize=10)
    right.set_title(f"{len(step)} step times (MLPerf logs)", fontsize=10)
    fig.tight_layout()
    return fig
