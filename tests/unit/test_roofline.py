"""The roofline: min(peak, bandwidth x intensity), ridge points, layers as GEMMs, the plot and the view."""

import math

import matplotlib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from scaledl.perf import hardware  # noqa: E402
from scaledl.perf import roofline as R  # noqa: E402
from scaledl.perf import views as PV


def test_attainable_is_min_of_the_two_ceilings():
    r = R.Roofline("toy", peak_TFLOPS=10.0, bandwidth_GBps=1000.0)
    assert r.ridge_point_FLOP_per_byte == 10.0
    assert r.attainable_TFLOPS(1.0) == 1.0  # 1000 GB/s x 1 FLOP/B = 1 TFLOP/s
    assert r.attainable_TFLOPS(10.0) == 10.0
    assert r.attainable_TFLOPS(1000.0) == 10.0
    assert np.array_equal(r.attainable_TFLOPS(np.array([0.5, 20.0])), [0.5, 10.0])
    assert r.bound(9.99) == "memory" and r.bound(10.0) == "compute"


@given(st.floats(1e-3, 1e5), st.floats(1e-2, 1e4), st.floats(1.0, 1e5))
def test_attainable_is_monotone_and_capped(I, peak, bw):
    r = R.Roofline("h", peak, bw)
    a, b = r.attainable_TFLOPS(I), r.attainable_TFLOPS(2 * I)
    assert a <= b <= peak * (1 + 1e-12)


def test_time_is_the_larger_of_compute_and_memory_time():
    r = R.Roofline("toy", 10.0, 1000.0)
    assert r.time_s(1e13, 1e9) == pytest.approx(1.0)  # compute: 1e13 / 1e13
    assert r.time_s(1e9, 1e12) == pytest.approx(1.0)  # memory: 1e12 B / 1e12 B/s


def test_roofline_of_table_devices_matches_the_table():
    for d in hardware.devices():
        for p in d.precisions:
            r = R.roofline_of(d, p)
            assert r.ridge_point_FLOP_per_byte == pytest.approx(d.ridge_point_FLOP_per_byte(p))
    h100 = R.roofline_of("H100 SXM", "fp16")
    assert h100.peak_TFLOPS == 989.5 and h100.bandwidth_GBps == 3350
    assert R.roofline_of("H100 SXM", "fp16", sparse=True).peak_TFLOPS == 1979.0


def test_dense_layer_counts():
    L = R.dense_layer(3, 5, 7, "fp32")
    assert L.flops == 2 * 3 * 5 * 7
    assert L.bytes_moved == (15 + 21 + 35) * 4
    # GEMV in fp32: 2 n^2 / (4 (n^2 + 2 n)) -> 1/2 FLOP per byte as n grows
    assert R.dense_layer(10_000, 10_000, 1).intensity_FLOP_per_byte == pytest.approx(0.5, rel=1e-3)
    # very large batch on a square layer: intensity -> n / bytes_per_element
    assert R.dense_layer(1024, 1024, 10**9, "fp16").intensity_FLOP_per_byte == pytest.approx(512, rel=1e-5)


@given(st.integers(1, 4096), st.integers(1, 4096))
def test_intensity_grows_with_batch(n, b):
    assert R.dense_layer(n, n, b + 1).intensity_FLOP_per_byte > R.dense_layer(n, n, b).intensity_FLOP_per_byte


def test_batch_for_intensity_inverts_the_intensity():
    b = R.batch_for_intensity(4096, 100.0, 2)
    assert R.LayerGemm(4096, 4096, math.ceil(b), 2).intensity_FLOP_per_byte >= 100
    assert R.LayerGemm(4096, 4096, math.floor(b), 2).intensity_FLOP_per_byte < 100
    assert R.batch_for_intensity(256, 200.0, 2) == math.inf  # a 256-wide fp16 layer tops out at 128 FLOP/B


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="peak_TFLOPS must be a positive finite number, got 0"):
        R.Roofline("x", 0, 100)
    with pytest.raises(TypeError, match="bandwidth_GBps must be a number, got '1'"):
        R.Roofline("x", 1, "1")
    with pytest.raises(ValueError, match="intensity must be positive"):
        R.Roofline("x", 1, 1).attainable_TFLOPS(-1)
    with pytest.raises(ValueError, match="batch must be a positive integer, got 0"):
        R.dense_layer(4, 4, 0)
    with pytest.raises(ValueError, match="precision='fp4'"):
        R.dense_layer(4, 4, 1, "fp4")
    with pytest.raises(ValueError, match="has no published fp16 rate"):
        R.roofline_of("K40", "fp16")
    with pytest.raises(ValueError, match="rooflines must hold at least one"):
        PV.plot_roofline([])


def test_plot_has_roof_and_named_points():
    r = R.Roofline("toy", 10.0, 1000.0)
    fig = PV.plot_roofline(r, [R.Point("gemv", 0.5), R.Point("measured", 100.0, 4.0)], title="t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["gemv", "measured"]
    x, y = ax.lines[0].get_data()
    assert np.allclose(y, np.minimum(10.0, x))
    assert ax.get_xscale() == "log" and "FLOP / byte" in ax.get_xlabel()
    plt.close(fig)


def test_layer_view_states_the_bound():
    fig = PV.layer_view(layer_size=1024, batch=1, precision="fp16", device="V100 SXM2")
    assert "memory bound, at most 1 % of peak" in fig.axes[0].get_title()
    plt.close(fig)
    fig = PV.layer_view(layer_size=4096, batch=1024, precision="fp16", device="V100 SXM2")
    assert "compute bound, at most 100 % of peak" in fig.axes[0].get_title()
    plt.close(fig)


def test_current_gpu_roofline_measures_nothing_on_the_simulator():
    from scaledl import device

    if device.on_gpu():
        pytest.skip("a GPU is present")
    called = []
    assert R.current_gpu_roofline(lambda: called.append(1), lambda: called.append(2)) is None
    assert called == []


def test_conv_layer_counts():
    c = R.conv_layer(3, 5, 7, 11, kernel=3, batch=2, precision="fp32")
    assert c.weights == 5 * 3 * 9
    assert c.flops == 2 * 135 * 7 * 11 * 2
    assert c.bytes_moved == (135 + (3 + 5) * 7 * 11 * 2) * 4
    # a 1x1 convolution on a 1x1 image is a dense layer
    one = R.conv_layer(64, 32, 1, 1, kernel=1, batch=9, precision="fp16")
    dense = R.dense_layer(64, 32, 9, "fp16")
    assert (one.flops, one.bytes_moved) == (dense.flops, dense.bytes_moved)


@given(st.integers(1, 512), st.integers(2, 64), st.sampled_from([1, 3, 5]))
def test_conv_beats_the_dense_layer_with_the_same_weights(c, hw, k):
    # seed 001: "Convolutional layers even more compute bound"
    conv = R.conv_layer(c, c, hw, hw, k, 1, "fp16")
    dense = R.dense_layer(c * k * k, c, 1, "fp16")
    assert conv.intensity_FLOP_per_byte > dense.intensity_FLOP_per_byte


def test_valid_padding_counts_by_hand():
    L = R.conv_layer(2, 3, 4, 5, kernel=3, batch=2, padding="valid")
    assert L.weights == 3 * 2 * 9
    assert L.input_elements == 2 * 2 * 6 * 7  # a 4 x 5 output of a 3 x 3 filter reads a 6 x 7 input
    assert L.output_elements == 2 * 3 * 4 * 5
    assert L.flops == 2 * 54 * 20 * 2
    assert L.bytes_moved == 4 * (168 + 54 + 120)
    assert L.weight_reuse == 40
    same = R.conv_layer(2, 3, 4, 5, kernel=3, batch=2)  # the same layer with implicit zero padding
    assert same.flops == L.flops and same.input_elements == 2 * 2 * 4 * 5


def test_valid_padding_matches_the_kernel_it_models():
    """The "valid" model's shapes are those of scaledl.kernels.conv.conv2d: input (C, P+2, Q+2) -> (K, P, Q)."""
    import numpy as np

    from scaledl.kernels.conv import conv2d_reference

    C_, K_, P, Q = 3, 4, 5, 6
    L = R.conv_layer(C_, K_, P, Q, padding="valid")
    x, w = np.ones((C_, P + 2, Q + 2)), np.ones((K_, C_, 3, 3))
    assert x.size == L.input_elements and w.size == L.weights and conv2d_reference(x, w).size == L.output_elements


def test_dense_equivalent_is_the_chapter_03_dense_layer():
    for padding in ("same", "valid"):
        L = R.conv_layer(64, 64, 56, 56, batch=8, padding=padding)
        assert L.as_dense() == R.dense_layer(64 * 9, 64, 8, "fp32")
        assert L.as_dense().flops * 56 * 56 == L.flops  # the conv applies each weight at every output position


@given(st.integers(1, 64), st.integers(1, 64), st.integers(2, 40), st.integers(1, 8),
       st.sampled_from(["same", "valid"]))
def test_conv_never_less_intense_than_its_dense_layer(c_in, c_out, hw, batch, padding):
    L = R.conv_layer(c_in, c_out, hw, hw + 1, batch=batch, padding=padding)
    assert L.intensity_FLOP_per_byte >= L.as_dense().intensity_FLOP_per_byte


def test_conv_layer_errors_name_the_argument():
    with pytest.raises(ValueError, match="kernel must be a positive integer, got 0"):
        R.conv_layer(4, 4, 8, 8, kernel=0)
    with pytest.raises(ValueError, match="height must be a positive integer, got 0"):
        R.conv_layer(3, 8, 0, 5)
    with pytest.raises(ValueError, match="batch must be a positive integer, got 1.5"):
        R.conv_layer(3, 8, 5, 5, batch=1.5)
    with pytest.raises(ValueError, match="precision='int4'"):
        R.conv_layer(4, 4, 8, 8, precision="int4")
    with pytest.raises(ValueError, match=r"padding='full'; expected one of \['same', 'valid'\]"):
        R.conv_layer(4, 4, 8, 8, padding="full")
