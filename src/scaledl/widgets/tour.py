"""Views for Chapter 00's tour: how a 1-D launch covers n elements, and what the simulator costs."""

from __future__ import annotations

import math


def launch_geometry(n: int, threads_per_block: int) -> dict[str, int | float]:
    """Blocks needed to cover ``n`` elements with ``threads_per_block`` threads each, and the idle tail.

    >>> launch_geometry(100, 32)
    {'blocks': 4, 'threads': 128, 'idle_threads': 28, 'idle_fraction': 0.21875}
    """
    for name, value in (("n", n), ("threads_per_block", threads_per_block)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if threads_per_block > 1024:
        raise ValueError(f"threads_per_block={threads_per_block} exceeds CUDA's limit of 1024 threads per block")
    blocks = math.ceil(n / threads_per_block)
    threads = blocks * threads_per_block
    return {"blocks": blocks, "threads": threads, "idle_threads": threads - n,
            "idle_fraction": (threads - n) / threads}


def launch_view(n: int = 100, threads_per_block: int = 32):
    """A figure: one row of cells per block, busy threads filled, the idle tail hatched."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    g = launch_geometry(n, threads_per_block)
    shown_blocks = min(g["blocks"], 12)
    fig, ax = plt.subplots(figsize=(8, 0.45 * shown_blocks + 1.5))
    names = []
    for b in range(shown_blocks):
        block = g["blocks"] - shown_blocks + b  # show the last blocks: that is where the tail is
        busy = min(threads_per_block, n - block * threads_per_block)
        ax.add_patch(Rectangle((0, b), busy, 0.8, color="tab:blue"))
        ax.add_patch(Rectangle((busy, b), threads_per_block - busy, 0.8, fill=False, hatch="///",
                               edgecolor="tab:red"))
        names.append(f"block {block}")
    # A thread index is never negative: the axis starts at 0, and the block names are the y tick labels.
    ax.set_xlim(0, threads_per_block)
    ax.set_ylim(-0.2, shown_blocks)
    ax.set_yticks([b + 0.4 for b in range(shown_blocks)], names, fontsize=8)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("thread index within the block (threadIdx.x)")
    ax.set_title(f"n = {n}, {threads_per_block} threads per block: {g['blocks']} blocks\n"
                 f"{g['idle_threads']} idle threads (hatched) must skip the work: the bounds guard", fontsize=11)
    fig.tight_layout()
    return fig
