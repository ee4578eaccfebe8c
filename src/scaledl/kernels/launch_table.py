"""Every kernel the book launches on a GPU, at the shape it is launched with there: one table, for the static report.

Each entry names the kernel (``kernel(module)``, at the GPU's tiling), its threads per block (``threads(module)``,
read from the launcher or the config it uses, never retyped where one exists) and its argument types as a
launch with C-contiguous arrays specialises them. Both callables run in the process that compiles for the GPU
(:mod:`scaledl.kernels.static_report`), where the backend is "cuda", so ``scaledl.device.on_gpu()`` is true and
the launchers' GPU branches apply. A kernel added to the book belongs here; ``scaledl kernels report --list``
prints the names.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

__all__ = ["KernelEntry", "kernel_table"]


@dataclass(frozen=True)
class KernelEntry:
    """A kernel the book launches on a GPU. ``kernel`` and ``threads`` take the imported ``module`` and run
    in the compile process, where the backend is "cuda", so the launchers' GPU shapes apply there."""

    name: str
    module: str
    kernel: Callable
    threads: Callable  # threads per block of the GPU launch: an int or a (x, y) tuple
    signature: str  # Numba types of the arguments, as a launch with C-contiguous arrays specialises them


F1, F2 = "float32[::1]", "float32[:, ::1]"
I1 = "int32[::1]"


def _default(func, name):
    """A launcher's default for one keyword: where a GPU launch's block size is written down."""
    return inspect.signature(func).parameters[name].default


def kernel_table() -> tuple[KernelEntry, ...]:
    """Every kernel the book launches on a GPU, at its GPU launch shape, GEMM variants in ladder order."""
    from scaledl.kernels.gemm import VARIANTS
    from scaledl.kernels.quantize import VARIANTS as QUANTIZE

    def gemm_entry(i, v):
        return KernelEntry(f"gemm_v{i + 1}_{v}", "scaledl.kernels.gemm",
                           lambda m: m.kernel_for(v, m.DEFAULT_TILING["cuda"][v]),
                           lambda m: m.launch_config(4096, 4096, v, m.DEFAULT_TILING["cuda"][v])[1],
                           f"{F2}, {F2}, {F2}")

    E = KernelEntry
    return (
        *(gemm_entry(i, v) for i, v in enumerate(VARIANTS)),
        E("copy", "scaledl.kernels.bandwidth", lambda m: m.copy_kernel, lambda m: m.stream_launch_config(1 << 27)[1],
          f"{F1}, {F1}"),
        E("scale", "scaledl.kernels.bandwidth", lambda m: m.scale_kernel,
          lambda m: m.stream_launch_config(1 << 27)[1], f"{F1}, {F1}, float32"),
        E("triad", "scaledl.kernels.bandwidth", lambda m: m.triad_kernel,
          lambda m: m.stream_launch_config(1 << 27)[1], f"{F1}, {F1}, {F1}, float32"),
        E("fma", "scaledl.kernels.bandwidth", lambda m: m.fma_kernel,
          lambda m: 256,  # fma_throughput's threads_per_block on a GPU
          f"{F1}, int32, float32, float32, float32"),
        E("sum_v1_shared", "scaledl.kernels.reduce", lambda m: m.sum_v1_shared, lambda m: m._block_threads(),
          f"{F1}, {F1}"),
        E("sum_v2_warp", "scaledl.kernels.reduce", lambda m: m.sum_v2_warp, lambda m: m._block_threads(),
          f"{F1}, {F1}"),
        E("conv_v1_direct", "scaledl.kernels.conv", lambda m: m.conv2d_v1_direct, lambda m: m.BLOCK,
          "float32[:, :, ::1], float32[:, :, :, ::1], float32[:, :, ::1]"),
        E("conv_v2_winograd", "scaledl.kernels.conv", lambda m: m.conv2d_v2_winograd, lambda m: m.BLOCK,
          "float32[:, :, ::1], float32[:, :, :, ::1], float32[:, :, ::1]"),
        *(E(f"quantize_v{i + 1}_{v}", "scaledl.kernels.quantize", lambda m, v=v: m.VARIANTS[v],
            lambda m: m.THREADS_PER_BLOCK, f"{F1}, {F1}, float64, float64, int64, int64, float64, float64")
          for i, v in enumerate(QUANTIZE)),
        E("logdot_v1", "scaledl.kernels.logdot", lambda m: m.logdot_v1, lambda m: _default(m.logdot, "threads"),
          f"int8[::1], {I1}, int8[::1], {I1}, int64, int64, int64[::1]"),
        E("logdot_v2", "scaledl.kernels.logdot", lambda m: m.logdot_v2, lambda m: _default(m.logdot, "threads"),
          f"int8[::1], {I1}, int8[::1], {I1}, int64, int64, int64[::1]"),
        E("spmv_v1_row", "scaledl.kernels.spmv", lambda m: m.spmv_v1_row, lambda m: m.block_threads(),
          f"{I1}, {I1}, {F1}, {F1}, {F1}"),
        E("spmv_v2_warp", "scaledl.kernels.spmv", lambda m: m.warp_kernel(m.block_threads()),
          lambda m: m.block_threads(), f"{I1}, {I1}, {F1}, {F1}, {F1}"),
        E("spmv_v3_shuffle", "scaledl.kernels.spmv", lambda m: m.spmv_v3_shuffle, lambda m: m.block_threads(),
          f"{I1}, {I1}, {F1}, {F1}, {F1}"),
        E("spmm_v1_row", "scaledl.kernels.spmv", lambda m: m.spmm_v1_row, lambda m: m.SPMM_BLOCK["cuda"],
          f"{I1}, {I1}, {F1}, {F2}, {F2}"),
        E("nm_gemm_v1", "scaledl.kernels.nm_gemm", lambda m: m.nm_gemm_v1, lambda m: m.BLOCK["cuda"],
          f"{F2}, uint16[:, ::1], {F2}, {F2}"),
        E("nm_gemm_v2_tiled", "scaledl.kernels.nm_gemm", lambda m: m.tiled_kernel(m.TILE["cuda"]),
          lambda m: (m.TILE["cuda"], m.TILE["cuda"]), f"{F2}, uint16[:, ::1], {F2}, {F2}"),
        E("nm_gemm_v3_decoded", "scaledl.kernels.nm_gemm", lambda m: m.decoded_kernel(m.TILE["cuda"]),
          lambda m: m.kernel_and_block("decoded", "cuda")[1], f"{F2}, uint16[:, ::1], {F2}, {F2}"),
        E("rnn_v1_standard", "scaledl.kernels.rnn", lambda m: m.rnn_v1_standard, lambda m: m._threads(),
          f"{F2}, float32[:, :, ::1], float32[:, :, ::1], int64, int64"),
        # the bench's sizes: hidden 100 fits one block's shared memory; 1152 is Seed 001's RNN (116 blocks)
        E("rnn_v2_persistent_block", "scaledl.kernels.rnn", lambda m: m.persistent_block_kernel(100),
          lambda m: m._threads(), f"{F2}, float32[:, :, ::1], float32[:, :, ::1], int64"),
        E("rnn_v3_persistent_grid", "scaledl.kernels.rnn",
          lambda m: m.persistent_grid_kernel(m.grid_slice_rows(1152), 1152), lambda m: m._threads(),
          f"{F2}, float32[:, :, ::1], float32[:, :, ::1], int64"),
        E("axpy", "scaledl.kernels.smoke", lambda m: m.axpy, lambda m: 32,  # smoke_test's launch (scaledl doctor)
          f"float32, {F1}, {F1}, {F1}"),
    )
