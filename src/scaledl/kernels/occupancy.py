"""How a kernel launch fills a GPU: occupancy per SM, tile quantization and wave quantization (NumPy only).

A GPU runs a grid of blocks on its streaming multiprocessors (SMs). Three effects decide how much of the chip
a launch keeps busy, and all three can be computed without a GPU:

* **occupancy**: how many blocks fit on one SM at once, limited by its threads, registers, shared memory
  and block slots; the resident warps are what the SM switches between to hide memory latency.
* **tile quantization**: a grid is a whole number of ``block_m x block_n`` tiles of C, so for sizes that
  are not multiples of the tile the edge blocks compute (and discard) work outside C.
* **wave quantization**: ``blocks`` run in waves of ``SMs x blocks_per_SM``; a last wave that is partly
  full leaves SMs idle, and a grid of fewer blocks than SMs never fills the chip at all.

>>> occ = occupancy(256, registers_per_thread=128, shared_bytes_per_block=8704)
>>> occ.blocks_per_sm, occ.limited_by, occ.occupancy
(2, 'registers', 0.25)
>>> w = launch_waves(4096, 4096, 128, 128, blocks_per_sm=2)
>>> w.blocks, round(w.waves, 2), round(w.sm_utilisation, 3)
(1024, 3.88, 0.97)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from scaledl._args import count


@dataclass(frozen=True)
class SMLimits:
    """Per-SM resources that bound how many blocks are resident at once."""

    name: str
    n_sms: int
    max_threads: int
    max_blocks: int
    registers: int  # 32-bit registers in the SM's register file
    max_registers_per_thread: int
    shared_bytes: int  # shared memory a block may use in total on one SM (after the carve-out)
    warp_size: int = 32
    max_shared_per_block: int | None = None  # the most one block may take (None: shared_bytes)
    reserved_shared_per_block: int = 1024  # shared memory the driver keeps per block (1 KB on cc 8.0 and later)
    arch: str = ""


# H100 SXM5 (compute capability 9.0). SM count: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022),
# 132 SMs on the SXM5 board. Per-SM limits: CUDA C++ Programming Guide, "Technical Specifications per Compute
# Capability" for 9.0: 2048 threads, 32 blocks, 64 K registers (at most 255 per thread), 228 KB shared memory
# per SM of which 227 KB are available to blocks.
H100_SXM = SMLimits("H100 SXM", n_sms=132, max_threads=2048, max_blocks=32, registers=65536,
                    max_registers_per_thread=255, shared_bytes=227 * 1024)

# A100 SXM4 (compute capability 8.0). SM count: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), 108
# SMs. Per-SM limits: the same table of the CUDA C++ Programming Guide, column 8.0: 2048 threads, 32 blocks,
# 64 K registers (at most 255 per thread), 164 KB shared memory per SM of which 163 KB are available to blocks.
A100_SXM = SMLimits("A100 SXM", n_sms=108, max_threads=2048, max_blocks=32, registers=65536,
                    max_registers_per_thread=255, shared_bytes=163 * 1024)


# The parts students get. Per-SM limits from NVIDIA, CUDA C++ Programming Guide, release 13.x (2025), table
# "Technical Specifications per Compute Capability": all six have 64 K 32-bit registers per SM, at most 255 per
# thread and 1,024 threads per block. shared_bytes follows the convention of the two rows above: the SM's shared
# memory less the 1 KB the driver reserves for a block (the guide: 8.x and later reserve 1 KB per block; 7.5 none).
#   cc 7.5: 1024 threads (32 warps), 16 blocks, 64 KB shared memory per SM, 64 KB per block.
#   cc 8.6: 1536 threads (48 warps), 16 blocks, 100 KB per SM, 99 KB per block.
#   cc 8.9: 1536 threads (48 warps), 24 blocks, 100 KB per SM, 99 KB per block.
#   cc 12.0: 1536 threads (48 warps), 32 blocks, 100 KB per SM, 99 KB per block.
# The same figures are in NVIDIA's CUDA C++ Core Libraries (CCCL), cuda/__device/arch_traits.h (2025), whose
# per-architecture traits (max_shared_memory_per_multiprocessor, max_blocks_per_multiprocessor,
# max_threads_per_multiprocessor, reserved_shared_memory_per_block) they were checked against.
# SM counts are facts of the named product (NVIDIA product data sheets): T4 40, A10 72, L4 58, RTX PRO 6000
# Blackwell 188 (24,064 CUDA cores at 128 a SM).
T4 = SMLimits("T4", n_sms=40, max_threads=1024, max_blocks=16, registers=65536, max_registers_per_thread=255,
              shared_bytes=64 * 1024, max_shared_per_block=64 * 1024, reserved_shared_per_block=0, arch="sm_75")
A10 = SMLimits("A10", n_sms=72, max_threads=1536, max_blocks=16, registers=65536, max_registers_per_thread=255,
               shared_bytes=99 * 1024, max_shared_per_block=99 * 1024, arch="sm_86")
L4 = SMLimits("L4", n_sms=58, max_threads=1536, max_blocks=24, registers=65536, max_registers_per_thread=255,
              shared_bytes=99 * 1024, max_shared_per_block=99 * 1024, arch="sm_89")
RTX_PRO_6000 = SMLimits("RTX PRO 6000 Blackwell", n_sms=188, max_threads=1536, max_blocks=32, registers=65536,
                        max_registers_per_thread=255, shared_bytes=99 * 1024, max_shared_per_block=99 * 1024,
                        arch="sm_120")
H100_SXM = dataclasses.replace(H100_SXM, arch="sm_90")
A100_SXM = dataclasses.replace(A100_SXM, arch="sm_80")
# arch key (ptxas --gpu-name) -> the part whose row it is
ARCHS: dict[str, SMLimits] = {sm.arch: sm for sm in (T4, A100_SXM, A10, L4, H100_SXM, RTX_PRO_6000)}


def arch_of(compute_capability) -> str:
    """``(7, 5)`` -> ``"sm_75"``; ``(12, 0)`` -> ``"sm_120"``."""
    major, minor = (int(v) for v in compute_capability)
    return f"sm_{major}{minor}"


def compute_capability(arch: str) -> tuple[int, int]:
    """``"sm_75"`` -> ``(7, 5)``; ``"sm_120"`` -> ``(12, 0)`` (the last digit is the minor version)."""
    digits = arch.removeprefix("sm_")
    if not digits.isdigit() or len(digits) < 2:
        raise ValueError(f"arch={arch!r}: expected 'sm_' and the compute capability's digits, e.g. 'sm_75'")
    return int(digits[:-1]), int(digits[-1])


@dataclass(frozen=True)
class Occupancy:
    """Result of :func:`occupancy`: resident blocks per SM, which resource stops more, and the warp share."""

    blocks_per_sm: int
    limited_by: str
    warps_per_sm: int
    occupancy: float  # resident warps / the SM's maximum


def occupancy(threads_per_block: int, registers_per_thread: int, shared_bytes_per_block: int,
              sm: SMLimits = H100_SXM) -> Occupancy:
    """Blocks of a kernel resident on one SM at once, and which limit binds.

    Threads and registers are counted per whole warp (a block of 65 threads occupies 3 warps). The finer
    register allocation granularity (256 registers per warp) is ignored, so a real GPU can fit slightly
    fewer blocks than this when a thread's register count is not a multiple of 8.

    Raises:
        ValueError: a non-positive size, a block above the SM's thread limit, more registers per thread
            than the architecture allows, or more shared memory than an SM has.
    """
    count("threads_per_block", threads_per_block)
    count("registers_per_thread", registers_per_thread)
    count("shared_bytes_per_block", shared_bytes_per_block, 0)
    if threads_per_block > min(sm.max_threads, 1024):
        raise ValueError(f"threads_per_block={threads_per_block} exceeds the 1024 threads a block may have")
    if registers_per_thread > sm.max_registers_per_thread:
        raise ValueError(f"registers_per_thread={registers_per_thread} exceeds {sm.name}'s "
                         f"{sm.max_registers_per_thread}")
    if shared_bytes_per_block > min(sm.shared_bytes, sm.max_shared_per_block or sm.shared_bytes):
        raise ValueError(f"shared_bytes_per_block={shared_bytes_per_block} exceeds the "
                         f"{min(sm.shared_bytes, sm.max_shared_per_block or sm.shared_bytes)} bytes of shared "
                         f"memory a block may have on a {sm.name}")
    warps_per_block = math.ceil(threads_per_block / sm.warp_size)  # a partial warp still takes a warp slot
    max_warps = sm.max_threads // sm.warp_size
    limits = {
        "threads": max_warps // warps_per_block,
        "block slots": sm.max_blocks,
        "registers": sm.registers // (registers_per_thread * sm.warp_size * warps_per_block),
        "shared memory": sm.shared_bytes // shared_bytes_per_block if shared_bytes_per_block else sm.max_blocks,
    }
    limited_by = min(limits, key=limits.get)
    blocks = limits[limited_by]
    warps = blocks * warps_per_block
    return Occupancy(blocks, limited_by, warps, warps / max_warps)


@dataclass(frozen=True)
class LaunchWaves:
    """Result of :func:`launch_waves` for a grid of ``block_m x block_n`` tiles over an ``M x N`` output."""

    M: int
    N: int
    blocks: int
    useful_fraction: float  # outputs of C / outputs the blocks compute (tile quantization)
    waves: float  # blocks / (SMs x blocks per SM)
    sm_utilisation: float  # busy block slots averaged over the whole waves (wave quantization)


def launch_waves(M: int, N: int, block_m: int, block_n: int, blocks_per_sm: int = 1,
                 sm: SMLimits = H100_SXM) -> LaunchWaves:
    """Tile and wave quantization of a GEMM grid that gives each block a ``block_m x block_n`` tile of C.

    ``sm_utilisation`` assumes blocks of equal duration: ``blocks / (ceil(waves) x slots)``.

    Raises:
        ValueError: a non-positive size.
    """
    for name, v in (("M", M), ("N", N), ("block_m", block_m), ("block_n", block_n),
                    ("blocks_per_sm", blocks_per_sm)):
        count(name, v)
    gm, gn = -(-M // block_m), -(-N // block_n)
    blocks = gm * gn
    slots = sm.n_sms * blocks_per_sm
    waves = blocks / slots
    return LaunchWaves(M, N, blocks, (M * N) / (blocks * block_m * block_n), waves,
                       blocks / (math.ceil(waves) * slots))


def warp_load_sectors(stride_elements: int, element_bytes: int = 4, warp_size: int = 32,
                      sector_bytes: int = 32) -> int:
    """Memory sectors one warp-wide load touches when lane ``i`` reads element ``i * stride_elements``.

    Global memory is served in 32-byte sectors (CUDA C++ Best Practices Guide, "Coalesced Access to Global
    Memory"): a warp reading 32 consecutive float32 values needs 4 sectors (128 bytes, all useful), the same
    warp reading with a stride of a whole row needs 32 sectors of which it uses 4 bytes each.

    >>> warp_load_sectors(1), warp_load_sectors(0), warp_load_sectors(1000)
    (4, 1, 32)
    """
    count("stride_elements", stride_elements, 0)
    for name, v in (("element_bytes", element_bytes), ("warp_size", warp_size), ("sector_bytes", sector_bytes)):
        count(name, v)
    sectors = set()
    for lane in range(warp_size):
        start = lane * stride_elements * element_bytes  # the array starts on a sector boundary
        sectors.update(range(start // sector_bytes, (start + element_bytes - 1) // sector_bytes + 1))
    return len(sectors)


__all__ = ["SMLimits", "H100_SXM", "A100_SXM", "T4", "A10", "L4", "RTX_PRO_6000", "ARCHS", "arch_of",
           "compute_capability", "Occupancy", "occupancy", "LaunchWaves", "launch_waves",
           "warp_load_sectors"]
