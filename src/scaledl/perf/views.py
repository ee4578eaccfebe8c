"""The performance chapters' figures and explorers: the demand for training compute, the time to train a model and
Huang's factors (chapter 01), the roofline and a layer on it (chapter 03), the energy of a multiply-add (chapter
05), a DGX POD's hours and developers (chapter 19, text). Each draws what :mod:`scaledl.perf`'s models compute and
imports matplotlib inside the function, so importing a model never loads it (ARCHITECTURE.md, the views rule).
"""

from __future__ import annotations

import math

import numpy as np

from scaledl._args import positive
from scaledl.perf import hardware
from scaledl.perf.cluster import (DGX1_POD, DGX1_READ_CACHE_TB, DGX2_POD, FOOTNOTE_EPOCHS, FOOTNOTE_IMAGES_PER_S,
                                  TEN_GBE_MBps, developers_per_pod, experiment_hours, input_bandwidth_MBps)
from scaledl.perf.demand import ESTIMATES, LANDMARKS, TWO_WEEK_SERVERS, two_week_budget_pf_days
from scaledl.perf.energy import (BREAKDOWN_PRECISIONS, GPU_INSTRUCTION_OVERHEAD_pJ, HMMA, INSTRUCTIONS,
                                 SEED002_BREAKDOWN, mac_energy, overhead_share, overhead_share_vs_ops, tile_reuse)
from scaledl.perf.huang import SEED_TOTAL, decomposition
from scaledl.perf.roofline import POINT_MARKER_AREA_PT2, Point, Roofline, dense_layer, roofline_of
from scaledl.perf.training import (PETAFLOP_DAY_FLOP, SECONDS_PER_DAY, TWO_WEEKS_S, _check_count, _check_utilization,
                                   _count, format_duration, training_time_s)
from scaledl.plotting import label_points


def demand_figure(count: int = 8, utilization: float = 0.4):
    """Landmark models' training compute (PF-days, log) against year, with what a server does in two weeks."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    styles = {"000": ("o", "tab:orange", "Dally, ScaledML talk (2018)"),
              "003": ("s", "tab:green", "NVIDIA, HPC-workload slides (2018)"),
              "002": ("D", "tab:blue", "Dally, Trends lecture (2023)")}
    # the seeds share years and sometimes values: shift each seed's markers sideways so none hides another
    shift = {"000": -0.15, "003": 0.15, "002": 0.0}
    for seed, (marker, color, label) in styles.items():
        pts = [m for m in LANDMARKS if m.seed == seed]
        ax.scatter([m.year + shift[seed] for m in pts], [m.pf_days for m in pts], marker=marker, color=color,
                   s=45, label=label, zorder=3)
        for m in pts:
            x = m.year + shift[seed]
            short = m.model.replace("Deep Speech 2", "DS2")
            if seed == "000":
                ax.annotate(short, (x, m.pf_days), xytext=(-6, -4), textcoords="offset points", fontsize=7,
                            ha="right", va="top")
            elif seed == "003":
                ax.annotate(short, (x, m.pf_days), xytext=(6, 2), textcoords="offset points", fontsize=7,
                            ha="left", va="bottom", color=color)
            else:
                ax.annotate(short, (x, m.pf_days), xytext=(-6, 3), textcoords="offset points", fontsize=8,
                            ha="right", va="bottom", color=color)
    for m in ESTIMATES:
        ax.scatter([m.year + 0.15], [m.pf_days], marker="*", s=110, facecolors="none", edgecolors="tab:red",
                   label=f"{m.model}, {m.note}", zorder=3)
    years = [y for y, _ in TWO_WEEK_SERVERS]
    budget = [two_week_budget_pf_days(d, count, utilization) for _, d in TWO_WEEK_SERVERS]
    ax.step(years + [2024], budget + budget[-1:], where="post", color="gray", lw=1.5,
            label=f"{count} of the newest GPU, two weeks at {utilization:.0%} of peak")
    ax.set_yscale("log")
    ax.set_ylim(top=1e8)
    ax.set_xlabel("year (DS2 = Deep Speech 2)")
    ax.set_ylabel("training compute (petaflop/s-days, log scale)")
    ax.set_title("Training compute of landmark models, as the source documents give it")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def breakdown_view(onchip_tile: int = 627, local_reuse: float = 4.0, precision: str = "int8 (IMMA)"):
    """Widget view: the energy split of a tiled GEMM next to the 2023 talk's 47 / 47 / 6 %, and how the data
    movement share falls as the on-chip tile (square, ``onchip_tile`` outputs a side) grows.

    Returns a matplotlib Figure whose title states the three shares.
    """
    import matplotlib.pyplot as plt

    if precision not in BREAKDOWN_PRECISIONS:
        raise ValueError(f"precision={precision!r}; expected one of {sorted(BREAKDOWN_PRECISIONS)}")
    ins, nbytes = BREAKDOWN_PRECISIONS[precision]
    mac = ins.math_energy_pJ_per_mac
    here = mac_energy(mac, nbytes, local_reuse, tile_reuse(onchip_tile)).shares
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 1.3]})
    rows = [("Dally 2023", SEED002_BREAKDOWN), ("model", here)]
    colors = {"math": "tab:blue", "memories": "tab:orange", "data movement": "tab:green"}
    for y, (label, sh) in enumerate(rows):
        left = 0.0
        for part, color in colors.items():
            ax1.barh(y, 100 * sh[part], left=left, color=color, label=part if y == 0 else None)
            if sh[part] > 0.04:
                ax1.text(left + 50 * sh[part], y, f"{100 * sh[part]:.0f} %", ha="center", va="center")
            left += 100 * sh[part]
    ax1.set_yticks([0, 1], [r[0] for r in rows])
    ax1.set_xlabel("share of energy per MAC (%)")
    ax1.set_xlim(0, 100)
    ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=8)
    tiles = np.unique(np.logspace(0, 4, 80).astype(int))
    moves = [mac_energy(mac, nbytes, local_reuse, tile_reuse(int(t))).shares["data movement"] for t in tiles]
    ax2.loglog(tiles, 100 * np.array(moves), label="data movement share")
    ax2.axhline(100 * SEED002_BREAKDOWN["data movement"], color="grey", ls=":", label="Dally 2023: 6 %")
    ax2.axvline(onchip_tile, color="k", ls="--", lw=1)
    ax2.set_xlabel("on-chip tile (outputs per side)")
    ax2.set_ylabel("data movement share (%)")
    ax2.legend(fontsize=8)
    ax2.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"{precision}, tile {onchip_tile:.0f}, local reuse {local_reuse:.3g}: "
                 f"math {100 * here['math']:.0f} %, "
                 f"memories {100 * here['memories']:.0f} %, data movement {100 * here['data movement']:.0f} %")
    fig.tight_layout()
    return fig


def overhead_view(ops_per_instruction: float = 128, overhead_pJ: float = GPU_INSTRUCTION_OVERHEAD_pJ,
                  math_pJ_per_op: float = HMMA.math_energy_pJ_per_op):
    """Widget view: overhead share against operations per instruction, with the four instructions marked.

    Returns a matplotlib Figure whose title states the share at ``ops_per_instruction``.
    """
    import matplotlib.pyplot as plt

    n = np.logspace(0, 4, 200)
    share = overhead_share_vs_ops(n, math_pJ_per_op, overhead_pJ)
    here = float(overhead_share_vs_ops(ops_per_instruction, math_pJ_per_op, overhead_pJ))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.semilogx(n, 100 * share, label=f"model: {overhead_pJ:g} pJ overhead, {math_pJ_per_op:.3g} pJ/op")
    for ins in INSTRUCTIONS:
        s = overhead_share(ins.math_energy_pJ, overhead_pJ)
        ax.scatter([ins.ops], [100 * s], zorder=3)
        ax.annotate(f"{ins.name} ({ins.math_energy_pJ:g} pJ)", (ins.ops, 100 * s), textcoords="offset points",
                    xytext=(5, 5))
    ax.axvline(ops_per_instruction, color="grey", ls=":")
    ax.set_xlabel("operations per instruction")
    ax.set_ylabel("overhead share of instruction energy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{ops_per_instruction:.0f} ops/instruction: {100 * here:.1f} % of the energy is overhead")
    ax.legend(loc="upper right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def factors_figure(total: float = SEED_TOTAL):
    """Cumulative product of the decomposition's factors on a log axis, ending at the total."""
    import matplotlib.pyplot as plt

    factors = decomposition(total)
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    level = 1.0
    for i, f in enumerate(factors):
        color = "tab:gray" if "residual" in f.name else "tab:blue"
        ax.bar(i, level * f.gain - level, bottom=level, color=color)
        ax.text(i, level * f.gain * 1.15, f"x{f.gain:.3g}", ha="center", fontsize=9)
        level *= f.gain
    ax.bar(len(factors), level - 1, bottom=1, color="tab:red")
    ax.text(len(factors), level * 1.15, f"{level:.4g}", ha="center", fontsize=9)
    ax.set_xticks(range(len(factors) + 1), [f.name.replace(" (", "\n(") for f in factors] + ["total"],
                  fontsize=7)
    ax.set_yscale("log")
    ax.set_ylim(0.8, level * 4)
    ax.set_ylabel("cumulative gain over Kepler fp32 (log)")
    ax.set_title("Huang's law, decomposed: stated factors (blue) and the residual (gray)")
    fig.tight_layout()
    return fig


def plot_roofline(rooflines, points=(), *, ax=None, title: str | None = None,
                  intensity_range=(1 / 16, 4096)):
    """Draw one or more rooflines on log-log axes, with named points; returns the Figure.

    Each point is drawn at its achieved rate when it has one, otherwise on the first roofline's roof.
    """
    import matplotlib.pyplot as plt

    if isinstance(rooflines, Roofline):
        rooflines = [rooflines]
    rooflines = list(rooflines)
    if not rooflines:
        raise ValueError("rooflines must hold at least one Roofline")
    lo, hi = intensity_range
    if not (0 < lo < hi):
        raise ValueError(f"intensity_range must be (low, high) with 0 < low < high, got {intensity_range!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
    else:
        fig = ax.figure
    I = np.logspace(math.log10(lo), math.log10(hi), 400)
    for r in rooflines:
        line, = ax.loglog(I, r.attainable_TFLOPS(I), lw=2,
                          label=f"{r.name}: {r.peak_TFLOPS:g} TFLOP/s, {r.bandwidth_GBps:g} GB/s")
        ridge = r.ridge_point_FLOP_per_byte
        if lo <= ridge <= hi:
            ax.axvline(ridge, color=line.get_color(), ls=":", lw=1)
    first = rooflines[0]
    xs, ys = [], []
    for p in points:
        y = p.achieved_TFLOPS if p.achieved_TFLOPS is not None else first.attainable_TFLOPS(
            p.intensity_FLOP_per_byte)
        marker = "o" if p.achieved_TFLOPS is not None else "D"
        ax.scatter([p.intensity_FLOP_per_byte], [y], marker=marker, zorder=3, s=POINT_MARKER_AREA_PT2)
        xs.append(p.intensity_FLOP_per_byte)
        ys.append(y)
    ax.set_xlabel("arithmetic intensity (FLOP / byte of DRAM traffic)")
    ax.set_ylabel("attainable rate (TFLOP/s)")
    ax.set_xlim(lo, hi)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    # Placed last, on the final layout: clear of each other, the markers, the legend and (where it can) the roofs.
    label_points(ax, xs, ys, [p.label for p in points], sizes=POINT_MARKER_AREA_PT2, fontsize=9)
    return fig


def training_time_view(flops: float = PETAFLOP_DAY_FLOP, device: str = "A100 SXM4 80GB", count: int = 8,
                       utilization: float = 0.4, precision: str = "best"):
    """The widget's view: time to train ``flops`` on ``count`` of every device in the table.

    One horizontal bar per device (log scale), the chosen device highlighted and labelled, a line at two
    weeks. ``precision="best"`` gives each device its fastest training precision (bf16/fp16/tf32/fp32);
    a fixed precision leaves out devices that lack it.

    Returns:
        A matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    chosen = hardware.get(device)
    flops = positive("flops", flops, what="a positive number of floating-point operations")
    count = _check_count(count)
    utilization = _check_utilization(utilization)
    if precision != "best" and precision not in hardware.PRECISIONS:
        raise ValueError(f"precision={precision!r} must be 'best' or one of {hardware.PRECISIONS}")

    rows = []
    for dev in hardware.devices():
        p = dev.best_training_precision if precision == "best" else precision
        if p in dev.precisions:
            rows.append((dev, p, training_time_s(flops, dev, count, utilization, p)))

    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.6))
    labels = [f"{d.name} ({p})" for d, p, _ in rows]
    times_days = [t / SECONDS_PER_DAY for _, _, t in rows]
    colors = ["tab:red" if d is chosen else "tab:blue" for d, _, _ in rows]
    ax.barh(range(len(rows)), times_days, color=colors)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(TWO_WEEKS_S / SECONDS_PER_DAY, color="k", ls="--", lw=1)
    ax.text(TWO_WEEKS_S / SECONDS_PER_DAY, -0.7, " two weeks", fontsize=8, va="bottom")
    ax.set_xlabel("training time (days, log scale)")
    picked = [r for r in rows if r[0] is chosen]
    if picked:
        _, p, t = picked[0]
        title = (f"{flops:.3g} FLOP = {_count(flops / PETAFLOP_DAY_FLOP, 'PF-days')} on {count} x {chosen.name} ({p}) "
                 f"at {utilization:.0%}: {format_duration(t)}")
    else:
        title = f"{chosen.name} has no {precision} rate; other devices at {count} x, {utilization:.0%}"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def layer_view(layer_size: int = 1024, batch: int = 64, precision: str = "fp16",
               device: str = "V100 SXM2"):
    """Widget view: where a square dense layer at this batch sits on ``device``'s roofline.

    Draws the roofline, the layer at batch 1 (GEMV) and at ``batch``, and says in the title whether it is
    memory or compute bound and what fraction of peak the roofline allows.
    """
    r = roofline_of(device, precision)
    gemv = dense_layer(layer_size, layer_size, 1, precision)
    gemm = dense_layer(layer_size, layer_size, batch, precision)
    frac = r.attainable_TFLOPS(gemm.intensity_FLOP_per_byte) / r.peak_TFLOPS
    points = [Point(f"batch 1: {gemv.intensity_FLOP_per_byte:.2f} FLOP/B", gemv.intensity_FLOP_per_byte),
              Point(f"batch {batch}: {gemm.intensity_FLOP_per_byte:.1f} FLOP/B", gemm.intensity_FLOP_per_byte)]
    title = (f"{layer_size}x{layer_size} layer, batch {batch}, {precision} on {r.name.rsplit(' ', 1)[0]}: "
             f"{r.bound(gemm.intensity_FLOP_per_byte)} bound, at most {100 * frac:.0f} % of peak")
    return plot_roofline(r, points, title=title, intensity_range=(1 / 8, 8192))


def _pod(pod: str):
    if pod not in ("DGX-1", "DGX-2"):
        raise ValueError(f"pod={pod!r}; expected 'DGX-1' or 'DGX-2'")
    return DGX1_POD if pod == "DGX-1" else DGX2_POD


def view_pod_labels(*, pod: str = "DGX-1", **_values) -> dict[str, str]:
    """The explorer's label for its rate, which follows the POD chosen (``Explorer(..., describe=)``): the
    slider is one DGX-1's rate, and with a DGX-2 chosen the label says that the DGX-2 runs at twice it.

    >>> view_pod_labels(pod="DGX-2")
    {'images_per_s': 'images/s per DGX-1 (a DGX-2 runs at twice it)'}
    """
    _pod(pod)
    return {"images_per_s": "images/s per DGX-1" + ("" if pod == "DGX-1" else " (a DGX-2 runs at twice it)")}


def view_pod(images: float = 300_000, epochs: float = FOOTNOTE_EPOCHS, images_per_s: float = FOOTNOTE_IMAGES_PER_S,
             KB_per_image: float = 500.0, pod: str = "DGX-1") -> str:
    """The chapter's explorer: one experiment's hours, the developers a POD serves, and its input bandwidth.

    ``images_per_s`` is one DGX-1's rate; a DGX-2 is taken at twice it (perfect scaling, the best case).

    >>> print(view_pod().splitlines()[0])
    one experiment on one DGX-1: 300,000 images x 120 epochs at 480 images/s = 20.8 h
    """
    p = _pod(pod)
    rate = images_per_s * (1 if pod == "DGX-1" else 2)
    hours = experiment_hours(images, epochs=epochs, images_per_s=rate)
    per_day = 1 if pod == "DGX-1" else 2  # the slides: one experiment per DGX-1 per day, two per DGX-2
    claim = f"one {pod}/developer/{'experiment' if per_day == 1 else '2 experiments'}/day"
    server_days = hours / 24
    bw = input_bandwidth_MBps(rate, KB_per_image * 1e3)
    return "\n".join([
        f"one experiment on one {pod}: {images:,.0f} images x {epochs:g} epochs at {rate:g} images/s"
        + ("" if pod == "DGX-1" else f" (twice {images_per_s:g} per DGX-1)") + f" = {hours:.1f} h",
        f"the slide's '{claim}' {'holds' if hours <= 24 / per_day else 'fails'}; at {server_days:.2f} "
        f"server-days per experiment the POD's {p.servers} servers serve {developers_per_pod(p, server_days):.1f} "
        f"developers at two experiments a day",
        f"input: {bw:,.0f} MB/s per server, {p.servers * bw:,.0f} MB/s for the POD = "
        f"{p.servers * bw / TEN_GBE_MBps:.1f}x one 10 GbE link; the dataset is {images * KB_per_image / 1e6:,.0f} GB "
        f"({'fits' if images * KB_per_image * 1e3 <= DGX1_READ_CACHE_TB * 1e12 else 'does not fit'} a DGX-1's "
        f"{DGX1_READ_CACHE_TB:.2f} TB read cache)",
    ])
