"""Occupancy, tile and wave quantization, and warp coalescing (scaledl.kernels.occupancy): exact tables."""

import math

import pytest
from hypothesis import given, strategies as st

from scaledl.kernels.occupancy import H100_SXM, SMLimits, launch_waves, occupancy, warp_load_sectors


@pytest.mark.parametrize("threads, regs, smem, blocks, limit", [
    (256, 128, 8704, 2, "registers"),     # v3 128x128x8 with ~128 registers/thread: 32 K registers a block
    (256, 32, 2048, 8, "threads"),        # v2 tile 16: 2048 threads / 256
    (64, 32, 0, 32, "threads"),           # 2048 / 64 = 32 ties the 32 block slots; threads is listed first
    (32, 16, 0, 32, "block slots"),       # tiny blocks: 64 would fit by threads, 32 slots stop it
    (128, 32, 100 * 1024, 2, "shared memory"),  # 227 KiB // 100 KiB
    (1024, 64, 0, 1, "registers"),        # 65536 // (64 * 1024) = 1
    (65, 16, 0, 21, "threads"),           # 65 threads hold 3 warps: 64 warps // 3 = 21 blocks, not 31
])
def test_occupancy_table(threads, regs, smem, blocks, limit):
    occ = occupancy(threads, regs, smem)
    assert (occ.blocks_per_sm, occ.limited_by) == (blocks, limit)
    assert occ.warps_per_sm == blocks * math.ceil(threads / 32)
    assert occ.occupancy == occ.warps_per_sm / 64  # an H100 SM holds 64 warps


def test_occupancy_rejects_impossible_blocks():
    with pytest.raises(ValueError, match="threads_per_block=2048 exceeds the 1024"):
        occupancy(2048, 32, 0)
    with pytest.raises(ValueError, match="registers_per_thread=300 exceeds H100 SXM's 255"):
        occupancy(128, 300, 0)
    with pytest.raises(ValueError, match="shared_bytes_per_block=300000 exceeds"):
        occupancy(128, 32, 300_000)
    with pytest.raises(ValueError, match="threads_per_block must be an int >= 1, got 0"):
        occupancy(0, 32, 0)


@given(st.integers(1, 1024), st.integers(1, 255), st.integers(0, 227 * 1024))
def test_resident_blocks_never_exceed_any_limit(threads, regs, smem):
    occ = occupancy(threads, regs, smem)
    warp_threads = 32 * math.ceil(threads / 32)  # resources are held per whole warp
    assert occ.blocks_per_sm * warp_threads <= H100_SXM.max_threads
    assert occ.blocks_per_sm * warp_threads * regs <= H100_SXM.registers
    assert occ.blocks_per_sm * smem <= H100_SXM.shared_bytes
    assert occ.blocks_per_sm <= H100_SXM.max_blocks
    assert 0 <= occ.occupancy <= 1


def test_waves_exact():
    w = launch_waves(4096, 4096, 128, 128, blocks_per_sm=2)
    assert w.blocks == 1024 and w.useful_fraction == 1.0
    assert w.waves == 1024 / 264 and w.sm_utilisation == 1024 / (4 * 264)
    small = launch_waves(512, 512, 128, 128, blocks_per_sm=2)  # 16 blocks on 132 SMs
    assert small.blocks == 16 and small.sm_utilisation == 16 / 264
    ragged = launch_waves(130, 130, 128, 128)  # 2 x 2 blocks compute 256^2 outputs for 130^2
    assert ragged.blocks == 4 and ragged.useful_fraction == 130 * 130 / (256 * 256)


def test_waves_on_another_gpu_and_errors():
    sm = SMLimits("toy", n_sms=4, max_threads=2048, max_blocks=32, registers=65536,
                  max_registers_per_thread=255, shared_bytes=1 << 16)
    w = launch_waves(10, 10, 2, 2, blocks_per_sm=3, sm=sm)  # 25 blocks, 12 slots: 3 waves, 25/36 busy
    assert w.blocks == 25 and w.sm_utilisation == 25 / 36
    with pytest.raises(ValueError, match="block_m must be an int >= 1, got 0"):
        launch_waves(10, 10, 0, 2)


@pytest.mark.parametrize("stride, element_bytes, sectors", [
    (0, 4, 1),      # every lane reads the same float: a broadcast, one sector
    (1, 4, 4),      # 32 consecutive floats = 128 bytes = 4 sectors: fully coalesced
    (2, 4, 8),      # every other float: twice the sectors for the same useful bytes
    (8, 4, 32),     # one float per 32-byte sector
    (4096, 4, 32),  # a column of a row-major matrix
    (1, 8, 8),      # 32 doubles = 256 bytes
    (1, 2, 2),      # 32 halves = 64 bytes
])
def test_warp_sectors(stride, element_bytes, sectors):
    assert warp_load_sectors(stride, element_bytes) == sectors


def test_warp_sectors_rejects_negative_stride():
    with pytest.raises(ValueError, match="stride_elements must be an int >= 0, got -1"):
        warp_load_sectors(-1)



def test_a100_limits():
    from scaledl.kernels.occupancy import A100_SXM

    assert (A100_SXM.n_sms, A100_SXM.shared_bytes) == (108, 163 * 1024)
    # same register file as the H100: v3's 196 registers (200 allocated) still leave one 256-thread block
    assert occupancy(256, 200, 8320, A100_SXM).blocks_per_sm == 1
    # 64 KB of shared memory per block: two fit in the A100's 163 KB, three in the H100's 227 KB
    assert occupancy(128, 32, 64 * 1024, A100_SXM).blocks_per_sm == 2
    assert occupancy(128, 32, 64 * 1024, H100_SXM).blocks_per_sm == 3
