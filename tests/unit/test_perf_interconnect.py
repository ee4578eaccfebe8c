"""DGX-2 against two DGX-1, and host links, against the hardware numbers."""

import pytest

from scaledl.comm.cost import allreduce_time
from scaledl.comm import interconnect as ic


def test_hardware_numbers():
    assert ic.V100_NVLINKS * ic.NVLINK2_LINK_Bps * 2 == 300e9  # "300 GB/s" per V100, both ways
    assert ic.DGX2_16.gpus == ic.TWO_DGX1_16.gpus == 16
    assert ic.bisection_Bps(ic.DGX2_16) == pytest.approx(1.2e12)  # 2.4 TB/s both ways
    assert ic.bisection_Bps(ic.TWO_DGX1_16) == pytest.approx(50e9)  # 4 x 100 Gb/s
    assert ic.bisection_Bps(ic.DGX2_16) / ic.bisection_Bps(ic.TWO_DGX1_16) == pytest.approx(24)
    # each switch: one link from each of its board's 8 GPUs, 8 links to its twin on the other board (16 of 18
    # ports); the 6 x 8 = 48 links between the boards carry exactly the 8 GPUs' 150 GB/s: no oversubscription
    assert 16 * ic.V100_NVLINKS == ic.DGX2_NVSWITCHES * 8 and 8 + 8 <= ic.NVSWITCH_PORTS
    assert ic.DGX2_NVSWITCHES // 2 * 8 * ic.NVLINK2_LINK_Bps == ic.bisection_Bps(ic.DGX2_16)


def test_allreduce_is_the_cost_model_with_the_bottleneck_bandwidth():
    n = 1e8
    assert ic.allreduce_seconds(ic.DGX2_16, n) == pytest.approx(
        allreduce_time("ring", 16, n, alpha=ic.DGX2_16.latency_s, beta=1 / 150e9))
    assert ic.allreduce_seconds(ic.TWO_DGX1_16, n) == pytest.approx(
        allreduce_time("ring", 16, n, alpha=ic.TWO_DGX1_16.latency_s, beta=1 / 50e9))
    big = ic.allreduce_seconds(ic.TWO_DGX1_16, 1e10) / ic.allreduce_seconds(ic.DGX2_16, 1e10)
    assert big == pytest.approx(3.0, rel=1e-3)  # 150 / 50


def test_alltoall_ratio_is_network_over_port():
    n = 1e10
    ratio = ic.alltoall_seconds(ic.TWO_DGX1_16, n) / ic.alltoall_seconds(ic.DGX2_16, n)
    # 8 GPUs x n/2 over 50 GB/s against 15/16 n over 150 GB/s
    assert ratio == pytest.approx((8 * 0.5 / 50) / (15 / 16 / 150), rel=1e-3)  # 12.8


def test_amdahl():
    assert ic.job_speedup(0.75, 3.0) == pytest.approx(2.0)
    assert ic.comm_share_for(2.0, 3.0) == pytest.approx(0.75)
    assert ic.job_speedup(ic.comm_share_for(2.0, 12.8), 12.8) == pytest.approx(2.0)
    assert ic.job_speedup(0.0, 10) == 1.0
    with pytest.raises(ValueError, match="comm_share must be in \\[0, 1\\], got 1.5"):
        ic.job_speedup(1.5, 2)
    with pytest.raises(ValueError, match="comm_speedup must be > 1 for any speedup, got 1.0"):
        ic.comm_share_for(2, 1)


def test_host_links():
    pcie3, pcie4, nv2, nv3 = ic.HOST_LINKS
    assert pcie3.Bps == pytest.approx(15.75e9, rel=1e-3) and pcie4.Bps == pytest.approx(31.5e9, rel=1e-3)
    assert nv3.Bps * 2 == 150e9 and nv2.Bps * 2 == 100e9  # the AC922's "150 GB/s" and Summit's 100, both ways
    assert ic.transfer_seconds(75e9, nv3) == pytest.approx(1.0)
    assert ic.hiding_batch(125e12, nv3) == pytest.approx(2 * 125e12 / (2 * 75e9))  # 1,667 examples
    assert ic.POWER9_DDR4_Bps == pytest.approx(170.6e9, rel=1e-3)
    with pytest.raises(ValueError, match="nbytes must be a positive finite number, got 0"):
        ic.transfer_seconds(0, nv3)
