"""Catanzaro's all-reduce table and the staged-vs-ring model of its gains."""

import numpy as np
import pytest

from scaledl.comm import svail as S


def test_gains_recompute_from_the_times():
    printed = [g for *_, g in S.SVAIL_ALLREDUCE_TABLE]
    assert [round(g, 1) for g in S.recomputed_gains()] == printed


def test_model_regimes():
    big = dict(bytes_at_4=1e9, alpha_ring_s=0.0, alpha_staged_s=0.0)
    ours, staged = S.staged_vs_ring(np.array([4, 16]), **big)
    inside = (2 / S.PCIE3_X16_Bps + 1 / S.HOST_COPY_Bps + 1 / S.CPU_REDUCE_Bps) * S.PCIE3_X16_Bps
    across = (2 / S.PCIE3_X16_Bps + 1 / S.IB_FDR_4X_Bps + 1 / S.CPU_REDUCE_Bps) * S.IB_FDR_4X_Bps
    # bandwidth-bound (huge messages): the ratio of the per-byte costs, to float64 rounding
    assert staged[0] / ours[0] == pytest.approx(inside, rel=1e-6)
    assert staged[1] / ours[1] == pytest.approx(across, rel=1e-6)
    # latency-bound (no bytes): the ratio of the software latencies
    o, s = S.staged_vs_ring(128, bytes_at_4=0.0, alpha_ring_s=1e-5, alpha_staged_s=4e-5)
    assert s / o == pytest.approx(4.0)
    # bytes per GPU fall as 1/p: the bandwidth term of p = 8 is 4/8 x 2(7)/8 over p = 4's 2(3)/4
    o4, _ = S.staged_vs_ring(4, bytes_at_4=1e9, alpha_ring_s=0, alpha_staged_s=0)
    o8, _ = S.staged_vs_ring(8, bytes_at_4=1e9, alpha_ring_s=0, alpha_staged_s=0)
    assert o8 / o4 == pytest.approx(0.5 * (14 / 8) / (6 / 4))


def test_errors():
    with pytest.raises(ValueError, match=r"p must hold whole numbers of GPUs >= 1, got \[0\]"):
        S.staged_vs_ring([0], bytes_at_4=1.0)
    with pytest.raises(ValueError, match=r"bytes_at_4 must be >= 0, got -1"):
        S.staged_vs_ring(4, bytes_at_4=-1)
    with pytest.raises(ValueError, match=r"nic_Bps must be > 0, got 0"):
        S.staged_vs_ring(4, bytes_at_4=1.0, nic_Bps=0)
