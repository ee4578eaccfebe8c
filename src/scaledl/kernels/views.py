"""View functions for the explorers of Chapters 04 (GEMM traffic) and 06 (Winograd), plain and testable.

Each takes plain values and returns a matplotlib Figure; :class:`scaledl.widgets.Explorer` binds them to
sliders in the chapters.
"""

from __future__ import annotations

import numpy as np

from scaledl.kernels.gemm import PAD
from scaledl.kernels.gemm_traffic import gemm_traffic
from scaledl.kernels.occupancy import H100_SXM, launch_waves, occupancy
from scaledl.kernels.winograd import conv2d_direct_in, conv2d_winograd_in, multiplies_per_tile
from scaledl.kernels.rnn_traffic import ON_CHIP, PERSISTENT_RNN_HIDDEN_TITAN_X, rnn_step_traffic

FLOAT_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}


def traffic_figure(n: int = 4096, tile: int = 16, block: int = 128, ridge_FLOP_per_byte: float | None = None):
    """Bars of global bytes moved and arithmetic intensity for the three GEMM variants at ``n^3``.

    Args:
        n: the matrix size (C is n x n, K = n).
        tile: v2's tile.
        block: v3's block_m = block_n (block_k 8, 8 x 8 per thread where block allows, else 1 x 1).
        ridge_FLOP_per_byte: draw a device's ridge point on the intensity axis (None: no line).
    """
    import matplotlib.pyplot as plt

    if n < 1 or tile < 1 or block < 1:
        raise ValueError(f"n, tile and block must be >= 1, got n={n}, tile={tile}, block={block}")
    per_thread = 8 if block % 8 == 0 else 1
    t = [gemm_traffic(n, n, n, "naive"),
         gemm_traffic(n, n, n, "tiled", tile=tile),
         gemm_traffic(n, n, n, "regblock", block_m=block, block_n=block, block_k=8, thread_m=per_thread,
                      thread_n=per_thread)]
    labels = ["v1 naive", f"v2 tiled {tile}", f"v3 regblock {block}"]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax0.bar(labels, [x.bytes / 1e9 for x in t], color=["tab:red", "tab:orange", "tab:green"])
    ax0.axhline(t[0].compulsory_bytes / 1e9, color="k", ls="--", lw=1, label="each matrix once")
    ax0.set_yscale("log")
    ax0.set_ylabel("global-memory traffic (GB)")
    ax0.set_title(f"bytes loaded + stored, {n}^3 float32 GEMM")
    ax0.legend()
    ax1.bar(labels, [x.arithmetic_intensity_flop_per_byte for x in t],
            color=["tab:red", "tab:orange", "tab:green"])
    if ridge_FLOP_per_byte:
        ax1.axhline(ridge_FLOP_per_byte, color="k", ls=":", lw=1, label="ridge point")
        ax1.legend()
    ax1.set_yscale("log")
    ax1.set_ylabel("arithmetic intensity (FLOP/byte)")
    ax1.set_title("FLOPs per byte of global traffic")
    fig.tight_layout()
    return fig


def launch_figure(n: int = 1000, block: int = 128, registers_per_thread: int = 128, per_thread: int = 8):
    """Block slots kept busy and outputs kept, for v3 GEMMs of ``n' x n'`` outputs on an H100 SXM, n' = 64..8192.

    Args:
        n: the size to mark (C is n x n).
        block: v3's block_m = block_n.
        registers_per_thread: v3's registers per thread (``scaledl kernels report``; sets how many blocks fit
            on an SM).
        per_thread: thread_m = thread_n (so a block has (block / per_thread)^2 threads).

    Returns:
        A Figure, or a sentence saying why the combination cannot launch (too many threads or registers).

    Raises:
        ValueError: a block that does not divide into per-thread patches.
    """
    import matplotlib.pyplot as plt

    if n < 1 or block < 1 or per_thread < 1 or block % per_thread:
        raise ValueError(f"need n >= 1 and block a multiple of per_thread >= 1, got n={n}, block={block}, "
                         f"per_thread={per_thread}")
    threads = (block // per_thread) ** 2
    if threads > 1024:  # a combination the widget offers but no GPU can launch: say so instead of drawing
        return (f"A {block} x {block} block with {per_thread} x {per_thread} outputs per thread needs {threads} "
                f"threads, and a block may have at most 1024: choose more outputs per thread or a smaller block.")
    smem_bytes = 4 * 8 * (block + PAD + block)  # the A tile (padded, gemm.PAD) and the B tile, block_k = 8
    occ = occupancy(threads, registers_per_thread, smem_bytes)
    if occ.blocks_per_sm == 0:
        return (f"{threads} threads x {registers_per_thread} registers = {threads * registers_per_thread:,} "
                f"registers, more than the {H100_SXM.registers:,} of an SM: this block cannot run at all.")
    sizes = np.unique(np.concatenate([np.geomspace(64, 8192, 400).astype(int), 2 ** np.arange(6, 14), [n]]))
    waves = [launch_waves(int(m), int(m), block, block, occ.blocks_per_sm) for m in sizes]
    here = launch_waves(n, n, block, block, occ.blocks_per_sm)
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.plot(sizes, [100 * w.sm_utilisation for w in waves], label="block slots busy (waves)")
    ax.plot(sizes, [100 * w.useful_fraction for w in waves], label="outputs kept (tiles)", alpha=0.8)
    ax.axvline(n, color="k", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 105)
    ax.set_xlabel("matrix size n (C is n x n)")
    ax.set_ylabel("percent")
    ax.set_title(f"v3 {block} x {block} blocks, {threads} threads, {occ.blocks_per_sm} per SM "
                 f"({occ.limited_by}); at n = {n}: {here.blocks} blocks, {100 * here.sm_utilisation:.0f} % busy",
                 fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def winograd_error(m: int, dtype_name: str, channels: int = 4, size: int = 24, seed: int = 0,
                   scaling: str = "integer", points=None) -> float:
    """Largest error of F(m x m, 3 x 3) in ``dtype_name``, relative to the largest output magnitude.

    Inputs and filters are standard normal; the reference is direct convolution in float64. ``m = 0`` means
    direct convolution in the same dtype (the baseline to compare with). ``points`` and ``scaling`` choose
    the interpolation points and where the transforms' constants go (``winograd_matrices``); an overflow
    returns ``inf``.
    """
    if dtype_name not in FLOAT_DTYPES:
        raise ValueError(f"dtype_name={dtype_name!r} is not one of {sorted(FLOAT_DTYPES)}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((channels, size, size))
    w = rng.standard_normal((2, channels, 3, 3))
    ref = conv2d_direct_in(x, w, np.float64)
    dt = FLOAT_DTYPES[dtype_name]
    with np.errstate(over="ignore", invalid="ignore"):
        y = (conv2d_direct_in(x, w, dt) if m == 0
             else conv2d_winograd_in(x, w, m, dt, scaling=scaling, points=points))
    err = np.abs(y.astype(np.float64) - ref)
    return float(np.max(err)) / float(np.max(np.abs(ref))) if np.all(np.isfinite(err)) else float("inf")


def winograd_tradeoff_figure(dtype_name: str = "float16", channels: int = 4, max_m: int = 6,
                             scaling: str = "fractional"):
    """Multiply saving over direct convolution and measured error, for F(m x m, 3 x 3), m = 1 .. max_m,
    with the transforms' constants placed by ``scaling`` (``winograd_matrices``)."""
    import matplotlib.pyplot as plt

    ms = np.arange(1, max_m + 1)
    saving = [multiplies_per_tile(m, 3, direct=True) / multiplies_per_tile(m, 3) for m in ms]
    errors = [winograd_error(int(m), dtype_name, channels, scaling=scaling) for m in ms]
    base = winograd_error(0, dtype_name, channels)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax0.plot(ms, saving, "o-")
    ax0.set_xlabel("output tile m (F(m x m, 3 x 3))")
    ax0.set_ylabel("multiplies saved (direct / Winograd)")
    ax0.set_title("the saving grows towards 9x")
    finite = [(m, e) for m, e in zip(ms, errors) if np.isfinite(e)]
    ax1.semilogy([m for m, _ in finite], [e for _, e in finite], "o-", color="tab:red", label="Winograd")
    overflowed = [int(m) for m, e in zip(ms, errors) if not np.isfinite(e)]
    if overflowed:
        ax1.text(0.98, 0.5, f"m = {', '.join(map(str, overflowed))}: overflow ({dtype_name} range exceeded)",
                 transform=ax1.transAxes, ha="right", color="tab:red")
    ax1.set_xlim(0.5, max_m + 0.5)
    ax0.set_xticks(ms)
    ax1.set_xticks(ms)
    ax1.axhline(base, color="k", ls="--", lw=1, label="direct, same dtype")
    ax1.set_xlabel("output tile m")
    ax1.set_ylabel("max |error| / max |output|")
    ax1.set_title(f"error in {dtype_name}, {channels} input channels, {scaling} B^T")
    ax1.legend()
    fig.tight_layout()
    return fig


def view_rnn_step(hidden: int = PERSISTENT_RNN_HIDDEN_TITAN_X, batch: int = 4, device: str = "GTX Titan X",
                  precision: str = "fp32", steps: int = 100, sync_us: float = 0.0):
    """The chapter's explorer: time per step, standard vs persistent, and whether ``W`` fits on chip.

    Returns a matplotlib Figure: left, the roofline time of one step of each kernel (with the grid barrier
    ``sync_us`` added to the persistent one); right, ``W``'s bytes against the device's register file and
    shared memory.
    """
    import matplotlib.pyplot as plt

    if device not in ON_CHIP:
        raise ValueError(f"device={device!r}; expected one of {sorted(ON_CHIP)}")
    s = rnn_step_traffic(hidden, batch, steps=steps, precision=precision, device=device, sync_s=sync_us * 1e-6)
    chip = ON_CHIP[device]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    times = [1e6 * s.standard_time_s, 1e6 * s.persistent_time_s]
    a.bar(["standard", "persistent"], times, color=["C0", "C1"])
    for i, t in enumerate(times):
        a.text(i, t, f"{t:.3g} us\n{[s.standard_TFLOPS, s.persistent_TFLOPS][i]:.3g} TFLOP/s", ha="center",
               va="bottom", fontsize=8)
    a.set(ylabel="time per step (us)", ylim=(0, 1.35 * max(times)),
          title=f"{device}: hidden {hidden}, batch {batch}, {precision}")
    sizes = [s.weight_bytes, chip.register_file_bytes, chip.shared_bytes]
    fits = s.weight_bytes <= chip.register_file_bytes + chip.shared_bytes
    b.barh(["W", "register file", "shared memory"], [x / 2**20 for x in sizes], color=["C3" if not fits else "C2",
                                                                                       "gray", "silver"])
    b.set(xlabel="MiB", title="W fits on chip" if fits else "W does NOT fit on chip")
    fig.tight_layout()
    return fig
