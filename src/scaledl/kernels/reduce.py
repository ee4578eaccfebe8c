"""Sum of a float32 vector: a grid-stride pass, a shared-memory tree per block, then a second launch.

Two passes keep the result deterministic (the same bits every run, unlike float atomics, whose order of
addition changes between runs): pass 1 leaves one partial sum per block, pass 2 runs the same kernel with a
single block over those partials.

* ``v1 shared``: each thread sums its share of ``x`` in a register (:func:`thread_sum`), then the block's
  partial sums are halved in shared memory, ``__syncthreads`` between levels, down to one value.
* ``v2 warp``: what changed: each warp first sums its 32 values with register shuffles
  (``shfl_down_sync``, no shared memory, no block barrier), then warp 0 sums the warps' results the same way.

Both read ``x`` with :func:`thread_sum`: a grid-stride loop that takes ``LOADS_PER_TRIP`` (8) elements a stride
apart per trip and loads them all before the first add, with unsigned 32-bit indices. Why: the first H200 run
(docs/gpu-runs/2026-11-26-nvidia-h200) timed both kernels at about 85 % of the device copy, short of the 90 %
aimed at, with a one-element ``range`` loop that the compiler had unrolled four times: four loads in flight per
thread, as the stream kernels' four elements per trip (:mod:`scaledl.kernels.bandwidth`), and the 64-bit index
arithmetic of ``range`` around them, about 19 instructions per element. A sum reads and does not write, so each thread
needs more bytes in flight than a copy to keep the same bandwidth busy (Little's law), the more so in the last
of the two waves of blocks the bench launches, when SMs run out of blocks; ``scaledl kernels report`` shows
twice the bytes in flight and a third of the instructions per element. A GPU run has still to time it.

Numba's CUDA simulator implements no warp shuffles, so on the simulator ``variant="auto"`` uses v1 and an
explicit ``variant="warp"`` raises; on a GPU ``auto`` uses v2.

>>> import numpy as np
>>> float(reduce_sum(np.ones(1000, np.float32)))
1000.0
"""

from __future__ import annotations

import math

import numpy as np

import scaledl.device
from numba import cuda, float32, uint32

VARIANTS = ("auto", "shared", "warp")
FULL_MASK = 0xFFFFFFFF  # every lane of the warp takes part in the shuffle
LOADS_PER_TRIP = 8  # elements a thread loads per loop trip, all before the first add (thread_sum)
MAX_ELEMENTS = 2**31  # 32-bit indices: i + 7 x stride stays below 2**32 (8 GiB of float32 at most)


def sum_reference(x) -> float:
    """The specification: the exactly rounded sum of the float32 inputs (math.fsum, in float64)."""
    return math.fsum(np.asarray(x, np.float64).ravel())


@cuda.jit(device=True)
def thread_sum(x):
    """This thread's share of ``x`` (every ``gridsize``-th element from ``grid(1)`` on), summed in a register:
    eight elements a stride apart per trip, all loaded before any is added, then the ragged end one at a time.
    Indices are unsigned 32-bit (``MAX_ELEMENTS``): 64-bit signed ones cost an address calculation each."""
    n = uint32(x.size)
    stride = uint32(cuda.gridsize(1))
    i = uint32(cuda.grid(1))
    acc = float32(0.0)
    while i + uint32(7) * stride < n:  # eight independent loads in flight before the first add waits on one
        a0 = x[i]
        a1 = x[i + stride]
        a2 = x[i + uint32(2) * stride]
        a3 = x[i + uint32(3) * stride]
        a4 = x[i + uint32(4) * stride]
        a5 = x[i + uint32(5) * stride]
        a6 = x[i + uint32(6) * stride]
        a7 = x[i + uint32(7) * stride]
        acc += ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
        i += uint32(LOADS_PER_TRIP) * stride
    while i < n:  # the ragged end: fewer than eight elements left for this thread
        acc += x[i]
        i += stride
    return acc


def _block_threads() -> int:
    return 256 if scaledl.device.on_gpu() else 32  # a power of two for the tree; small on the simulator


def _max_blocks() -> int:
    # pass 2 runs one block whose grid-stride loop takes any number of partials; 4096 blocks of 256 threads
    # is enough to keep every SM of a large GPU full (an H100 holds 132 x 8 such blocks at once)
    return 4096 if scaledl.device.on_gpu() else 4


def _make_kernels(threads: int):
    NT = threads
    NW = max(NT // 32, 1)

    @cuda.jit
    def sum_v1_shared(x, partial):
        """v1: grid-stride accumulation in a register, then a shared-memory tree with a barrier per level."""
        buf = cuda.shared.array(NT, float32)
        tid = cuda.threadIdx.x
        buf[tid] = thread_sum(x)
        cuda.syncthreads()
        half = NT // 2
        while half > 0:
            if tid < half:
                buf[tid] += buf[tid + half]
            cuda.syncthreads()
            half //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = buf[0]

    @cuda.jit
    def sum_v2_warp(x, partial):
        """v2: what changed: each warp sums in registers with shuffles; shared memory holds one value a warp."""
        warp_sums = cuda.shared.array(NW, float32)
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        acc = thread_sum(x)
        offset = 16
        while offset > 0:  # 5 shuffle steps: lane i adds lane i + offset
            acc += cuda.shfl_down_sync(FULL_MASK, acc, offset)
            offset //= 2
        if lane == 0:
            warp_sums[warp] = acc
        cuda.syncthreads()
        if warp == 0:
            acc = warp_sums[lane] if lane < NW else float32(0.0)
            offset = 16
            while offset > 0:
                acc += cuda.shfl_down_sync(FULL_MASK, acc, offset)
                offset //= 2
            if lane == 0:
                partial[cuda.blockIdx.x] = acc

    return sum_v1_shared, sum_v2_warp


sum_v1_shared, sum_v2_warp = _make_kernels(_block_threads())


def resolve_variant(variant: str) -> str:
    """``auto`` -> ``warp`` on a GPU, ``shared`` on the simulator.

    Raises:
        ValueError: unknown variant. RuntimeError: ``warp`` on the simulator, which has no shuffles.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not a reduction variant; expected one of {VARIANTS}")
    on_gpu = scaledl.device.on_gpu()
    if variant == "auto":
        return "warp" if on_gpu else "shared"
    if variant == "warp" and not on_gpu:
        raise RuntimeError("variant='warp' needs a GPU: Numba's CUDA simulator implements no warp shuffles "
                           "(shfl_down_sync); use variant='shared' or 'auto'")
    return variant


def reduce_sum_into(x, partial, result, variant: str = "auto"):
    """The two launches alone, into caller-owned buffers (``partial``: one float32 per block of pass 1,
    ``result``: one float32), so a benchmark times the kernels without allocations or copies."""
    kernel = sum_v1_shared if resolve_variant(variant) == "shared" else sum_v2_warp
    threads = _block_threads()
    if not x.shape[0] < MAX_ELEMENTS:
        raise ValueError(f"x has {x.shape[0]} elements; the kernels index in 32 bits, at most {MAX_ELEMENTS - 1}")
    if not 1 <= partial.shape[0] <= _max_blocks():
        raise ValueError(f"partial must hold between 1 and {_max_blocks()} values, got {partial.shape[0]}")
    kernel[partial.shape[0], threads](x, partial)
    kernel[1, threads](partial, result)
    return result


def reduce_sum(x, variant: str = "auto", *, blocks: int | None = None) -> np.float32:
    """Sum of a 1-D float32 array (NumPy, or a device array on a GPU) in two deterministic passes.

    Args:
        x: the values.
        variant: ``"auto"``, ``"shared"`` (v1) or ``"warp"`` (v2, GPU only).
        blocks: blocks of pass 1 (default: enough to fill the device).

    Raises:
        ValueError / TypeError: bad variant, shape, dtype or block count.
    """
    kind = resolve_variant(variant)
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) != 1:
        raise ValueError(f"x must be a 1-D array, got shape {shape!r}")
    if np.dtype(x.dtype) != np.float32:
        raise TypeError(f"x must be float32, got dtype {x.dtype}")
    threads, cap = _block_threads(), _max_blocks()
    n = shape[0]
    if blocks is None:  # on a GPU: about 8 elements per thread at most, so every thread has work to stream
        per_block = threads * (8 if scaledl.device.on_gpu() else 1)
        blocks = max(1, min(cap, (n + per_block - 1) // per_block))
    if not isinstance(blocks, (int, np.integer)) or not 1 <= blocks <= cap:
        raise ValueError(f"blocks must be an int in [1, {cap}], got {blocks!r}")
    if scaledl.device.on_gpu():
        partial, result = cuda.device_array(blocks, np.float32), cuda.device_array(1, np.float32)
    else:
        partial, result = np.full(blocks, np.nan, np.float32), np.full(1, np.nan, np.float32)
    reduce_sum_into(x, partial, result, kind)
    host = result.copy_to_host() if scaledl.device.on_gpu() else result
    return np.float32(host[0])
