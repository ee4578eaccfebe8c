"""The RNN step traffic model: the SVAIL slides' 1152 neurons against the Titan X register file, what fits on an
H100, and the standard vs persistent bytes and roofline times (exact arithmetic, so exact comparisons)."""

import pytest

import numpy as np

from scaledl.kernels.rnn_traffic import (DIAMOS_TFLOPS_BATCH_4, H100_SXM, PERSISTENT_RNN_HIDDEN_TITAN_X, TITAN_X,
                                         max_hidden_on_chip, persistent_intensity, rnn_step_traffic)

MiB = 2**20


def test_1152_units_fit_the_titan_x_register_file():
    w_bytes = PERSISTENT_RNN_HIDDEN_TITAN_X**2 * 4
    assert w_bytes == 5_308_416 and w_bytes / MiB == 5.0625  # the slide's "5 MB"
    assert TITAN_X.register_file_bytes == 6 * MiB > w_bytes  # 24 SMs x 256 KiB
    assert w_bytes / TITAN_X.register_file_bytes == pytest.approx(0.84375)  # 16 % left for everything else
    assert max_hidden_on_chip(TITAN_X.register_file_bytes) == 1254  # 1254^2 x 4 <= 6 MiB < 1255^2 x 4
    assert 1254**2 * 4 <= 6 * MiB < 1255**2 * 4


def test_what_fits_on_an_h100():
    assert H100_SXM.register_file_bytes == 33 * MiB and H100_SXM.shared_bytes == 132 * 228 * 1024
    both = H100_SXM.register_file_bytes + H100_SXM.shared_bytes
    assert [max_hidden_on_chip(c) for c in (H100_SXM.register_file_bytes, H100_SXM.shared_bytes, both)] == [
        2941, 2775, 4044]
    assert max_hidden_on_chip(H100_SXM.register_file_bytes, 2) == 4159  # fp16 weights: sqrt(2) more units


def test_standard_vs_persistent_step():
    s = rnn_step_traffic(1152, 4, steps=100, device="GTX Titan X")
    assert s.flops == 2 * 1152**2 * 4 and s.weight_bytes == 1152**2 * 4 and s.state_bytes == 3 * 4 * 1152 * 4
    assert s.standard_bytes == s.weight_bytes + s.state_bytes
    assert s.persistent_bytes == s.weight_bytes / 100 + s.state_bytes
    assert s.standard_time_s == pytest.approx(s.standard_bytes / 336.5e9)  # memory bound: W from DRAM each step
    assert s.persistent_time_s == pytest.approx(s.flops / 6.6e12)  # compute bound once W stays on chip
    assert s.standard_TFLOPS < DIAMOS_TFLOPS_BATCH_4 < s.persistent_TFLOPS  # the measured 2.8 sits between
    one = rnn_step_traffic(1152, 4, steps=1)
    assert one.persistent_bytes == one.standard_bytes  # one step: nothing to amortise
    big = rnn_step_traffic(1152, 512)  # a large batch is compute bound either way
    assert big.standard_time_s == pytest.approx(big.persistent_time_s)
    assert rnn_step_traffic(1152, 4, sync_s=1e-6).persistent_time_s == pytest.approx(s.persistent_time_s + 1e-6)


def test_errors():
    with pytest.raises(ValueError, match="hidden must be a positive integer, got 0"):
        rnn_step_traffic(0, 4)
    with pytest.raises(ValueError, match="precision='fp4'"):
        rnn_step_traffic(8, 4, precision="fp4")
    with pytest.raises(ValueError, match="sync_s must be a finite number >= 0, got -1"):
        rnn_step_traffic(8, 4, sync_s=-1)
    with pytest.raises(ValueError, match="capacity_bytes must be a positive finite number, got 0"):
        max_hidden_on_chip(0)


def test_view_rnn_step():
    import matplotlib

    matplotlib.use("Agg")
    from scaledl.kernels.views import view_rnn_step

    fig = view_rnn_step()
    assert fig.axes[1].get_title() == "W fits on chip"
    assert view_rnn_step(hidden=4096, device="GTX Titan X").axes[1].get_title() == "W does NOT fit on chip"
    with pytest.raises(ValueError, match="device='A100'; expected one of"):
        view_rnn_step(device="A100")


def test_persistent_intensity_is_not_h_over_6_at_small_batch():
    # fp32, 100 steps: bytes 4 H^2 / 100 + 12 B H, FLOPs 2 H^2 B -> 2 H B / (4 (H / 100 + 3 B)) = 50 H B / (H + 300 B)
    H = 1152
    s = rnn_step_traffic(H, 1)
    assert s.persistent_bytes == 4 * H**2 / 100 + 12 * H
    assert s.persistent_intensity_FLOP_per_byte == pytest.approx(2 * H**2 / (4 * H**2 / 100 + 12 * H), rel=1e-15)
    assert s.persistent_intensity_FLOP_per_byte == pytest.approx(39.67, abs=0.005)
    assert s.persistent_intensity_FLOP_per_byte < H / 6 / 4  # "H / 6 at any batch" is off by almost 5x at B = 1
    batches = np.array([1, 2, 4, 16, 64, 128])
    closed = persistent_intensity(H, batches)
    model = [rnn_step_traffic(H, int(b)).persistent_intensity_FLOP_per_byte for b in batches]
    assert np.allclose(closed, model, rtol=1e-14)
    assert np.allclose(closed, 50 * H * batches / (H + 300 * batches), rtol=1e-14)
    assert persistent_intensity(H, 1e9) == pytest.approx(H / 6, rel=1e-6)  # the large-batch limit
    fp16 = rnn_step_traffic(H, 4, precision="fp16", device="H100 SXM")
    assert persistent_intensity(H, 4, bytes_per_element=2) == pytest.approx(fp16.persistent_intensity_FLOP_per_byte)
    std = rnn_step_traffic(H, 4)
    assert std.standard_intensity_FLOP_per_byte == pytest.approx(2 * H * 4 / (4 * (H + 12)), rel=1e-15)


def test_persistent_intensity_errors():
    with pytest.raises(ValueError, match=r"batch must be > 0, got 0"):
        persistent_intensity(1152, 0)
    with pytest.raises(ValueError, match=r"hidden must be a positive finite number, got -1"):
        persistent_intensity(-1, 1)
