"""Intensity of a convolutional layer vs the dense layer with the same weights (scaledl.kernels.conv_traffic)."""

import pytest
from hypothesis import given, strategies as st

from scaledl.kernels.conv_traffic import conv_layer
from scaledl.perf.roofline import dense_layer


def test_counts_by_hand():
    L = conv_layer(C=2, K=3, P=4, Q=5, R=3, S=3, batch=2)
    assert L.weights == 3 * 2 * 9
    assert L.input_elements == 2 * 2 * 6 * 7  # a P x Q output of a 3 x 3 filter reads (P+2) x (Q+2)
    assert L.output_elements == 2 * 3 * 4 * 5
    assert L.flops == 2 * 54 * 20 * 2
    assert L.bytes_moved == 4 * (168 + 54 + 120)
    assert L.weight_reuse == 40


def test_dense_equivalent_matches_chapter_03_model():
    L = conv_layer(64, 64, 56, 56, batch=8)
    d = L.as_dense()
    assert d == dense_layer(64 * 9, 64, 8, "fp32")
    assert d.flops * 56 * 56 == L.flops  # the conv applies each weight at every output position


@given(st.integers(1, 64), st.integers(1, 64), st.integers(2, 40), st.integers(2, 40), st.integers(1, 8))
def test_conv_never_less_intense_than_its_dense_layer(C, K, P, Q, batch):
    L = conv_layer(C, K, P, Q, batch=batch)
    assert L.intensity_FLOP_per_byte >= L.as_dense().intensity_FLOP_per_byte


def test_bad_sizes():
    with pytest.raises(ValueError, match="P must be a positive int, got 0"):
        conv_layer(3, 8, 0, 5)
    with pytest.raises(ValueError, match="batch must be a positive int, got 1.5"):
        conv_layer(3, 8, 5, 5, batch=1.5)
