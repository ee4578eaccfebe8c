"""Huang's law decomposition: the residual, the table's own split, process per generation, V100 vs TPU v2."""

import math

import matplotlib
import pytest

matplotlib.use("Agg")

from scaledl.perf import huang as H  # noqa: E402
from scaledl.perf import views as PV

EPS = 2.220446049250313e-16


def test_table_total_is_the_seeds_1000x():
    # K20X fp32 3.95 TFLOP/s -> H100 SXM sparse int8 3958 TOPS
    assert H.table_total() == pytest.approx(3958 / 3.95, rel=4 * EPS)
    assert round(H.table_total()) == 1002


def test_number_format():
    assert H.number_format_gain(32, 8) == (4.0, 16.0)
    assert H.number_format_gain(16, 8) == (2.0, 4.0)
    with pytest.raises(ValueError, match="need integer bit widths"):
        H.number_format_gain(8, 32)


def test_residual_is_complex_instructions():
    f = {x.name.split(" (")[0]: x.gain for x in H.decomposition()}
    assert f["complex instructions"] == pytest.approx(1000 / (16 * 2.5 * 2), rel=4 * EPS)  # 12.5
    assert math.prod(x.gain for x in H.decomposition()) == pytest.approx(1000, rel=8 * EPS)
    assert math.prod(x.gain for x in H.decomposition(H.table_total())) == pytest.approx(H.table_total(), rel=8 * EPS)


def test_table_decomposition_multiplies_to_total():
    parts = H.table_decomposition()
    assert [round(p.gain, 2) for p in parts] == [16.96, 29.54, 2.0]
    assert math.prod(p.gain for p in parts) == pytest.approx(H.table_total(), rel=8 * EPS)


def test_instruction_energy_amortisation():
    # HFMA: (1.5 + 30) / 2 = 15.75 pJ/op ; HMMA: (110 + 30) / 128 = 1.09375 pJ/op
    assert H.energy_per_op_pJ(H.energy.HFMA) == 15.75
    assert H.energy_per_op_pJ(H.energy.HMMA) == 1.09375
    assert H.instruction_gain() == pytest.approx(14.4, rel=4 * EPS)


def test_process_per_generation():
    assert H.per_generation(2.5, 4) == pytest.approx(2.5**0.25, rel=4 * EPS)  # 1.257
    assert H.PROCESS_GAIN_PER_GENERATION_2018**4 == pytest.approx(1.4641)
    assert H.PROCESS_GAIN_PER_GENERATION_PAST**4 == 81
    with pytest.raises(ValueError, match="generations >= 1"):
        H.per_generation(2.5, 0)


def test_v100_vs_tpu_v2():
    assert H.V100_ANNOUNCED_TENSOR_TFLOPS / H.TPU_V2_CHIP_TFLOPS == pytest.approx(2.667, abs=1e-3)
    assert H.hardware.get("V100").fp16_TFLOPS / H.TPU_V2_CHIP_TFLOPS == pytest.approx(2.778, abs=1e-3)


def test_figure_ends_at_total():
    fig = PV.factors_figure()
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts[-1] == "1000" and "x12.5" in texts
    matplotlib.pyplot.close(fig)
