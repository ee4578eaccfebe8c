"""Bus toggle counting, with and without zero gating, against hand-counted streams."""

import numpy as np
import pytest

from scaledl.sparsity.toggles import bus_toggles, bus_words


def test_hand_counted_uint8_stream():
    # 0b0011 -> 0b0101 -> 0 -> 0b0101: 2 (from 0) + 2 + 2 + 2 = 8 without gating
    vals = np.array([3, 5, 0, 5], np.uint8)
    assert bus_toggles(vals, dtype=np.uint8) == 8
    # gated: 2 + 2, the zero holds the lines and raises the flag (1), 5 after 5 costs 0 and lowers it (1)
    assert bus_toggles(vals, dtype=np.uint8, zero_gating=True) == 6


def test_fp16_one_zero_one():
    assert bus_words([1.0], np.float16)[0] == 0x3C00
    assert bus_toggles([1.0, 0.0, 1.0]) == 12
    assert bus_toggles([1.0, 0.0, 1.0], zero_gating=True) == 6


def test_runs_of_zeros_cost_one_flag_toggle_each_way():
    assert bus_toggles([1.0, 0, 0, 0, 0, 1.0], zero_gating=True) == 4 + 2
    assert bus_toggles([0.0, 0.0]) == 0 and bus_toggles([0.0, 0.0], zero_gating=True) == 1


def test_negative_zero_is_gated_and_no_zeros_means_same_count():
    assert bus_toggles([-0.0], zero_gating=True) == 1
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, 100)
    assert bus_toggles(x, zero_gating=True) == bus_toggles(x)


def test_gating_never_costs_more_than_two_per_zero_and_saves_on_relu_data():
    rng = np.random.default_rng(1)
    x = np.maximum(rng.normal(size=1000), 0)
    plain, gated = bus_toggles(x), bus_toggles(x, zero_gating=True)
    assert gated < plain
    assert bus_toggles(x, dtype=np.float32) > plain  # wider words, more lines to flip


def test_errors():
    with pytest.raises(ValueError, match="finite"):
        bus_toggles([1.0, np.nan])
    with pytest.raises(TypeError, match="dtype"):
        bus_toggles([1.0], dtype=np.complex64)
    assert bus_toggles([]) == 0
