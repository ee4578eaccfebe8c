"""The energy model reproduces the seeds' overhead figures, and says where they disagree."""

import matplotlib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

matplotlib.use("Agg")

from scaledl.perf import energy as E  # noqa: E402


def test_seed_overheads_at_30_pJ():
    # ratio = overhead / math, exactly as the talk computes "2000 %" and "5x" (seed 000)
    o = E.GPU_INSTRUCTION_OVERHEAD_pJ
    assert E.overhead_ratio(E.HFMA.math_energy_pJ, o) == 20.0
    assert E.overhead_ratio(E.HDP4A.math_energy_pJ, o) == 5.0
    assert E.overhead_ratio(E.HMMA.math_energy_pJ, o) == pytest.approx(30 / 110)  # 27.3 %: the talk's "27 %"
    assert E.overhead_ratio(E.IMMA.math_energy_pJ, o) == pytest.approx(0.1875)  # not the table's 16 %


def test_table_percentages_imply_a_smaller_overhead_or_a_share():
    # seed 002's 22 % and 16 % as ratios need 24.2 and 25.6 pJ; as shares of the total, 30 pJ gives 21.4 % and 15.8 %
    assert E.implied_overhead_pJ(110, 0.22) == pytest.approx(24.2)
    assert E.implied_overhead_pJ(160, 0.16) == pytest.approx(25.6)
    assert E.overhead_share(110, 30) == pytest.approx(30 / 140)
    assert E.overhead_share(160, 30) == pytest.approx(30 / 190)
    assert E.implied_overhead_pJ(160, 0.16, as_share=True) == pytest.approx(160 * 0.16 / 0.84)


def test_arm_core_share_is_99_987_percent():
    share = E.overhead_share(E.ADD_INT16_pJ, E.ARM_CORE_OVERHEAD_pJ)
    assert E.overhead_ratio(E.ADD_INT16_pJ, E.ARM_CORE_OVERHEAD_pJ) == pytest.approx(7812.5)
    assert share == pytest.approx(250 / 250.032)
    assert round(100 * share, 2) == 99.99


def test_asic_advantage_is_27_percent_for_hmma():
    assert round(100 * E.asic_advantage(110, 30)) == 27


def test_instruction_ops_and_energy_per_op():
    assert [i.ops for i in E.INSTRUCTIONS] == [2, 8, 128, 1024]
    assert E.HFMA.math_energy_pJ_per_op == 0.75
    assert E.HMMA.math_energy_pJ_per_op == pytest.approx(110 / 128)


def test_ops_for_share_inverts_the_share():
    n = E.ops_for_share(0.1, 0.75, 30)
    assert E.overhead_share_vs_ops(n, 0.75, 30) == pytest.approx(0.1)


@given(st.floats(0.01, 1e4), st.floats(0.01, 10), st.floats(0.01, 1e3))
def test_share_falls_with_ops_and_stays_in_0_1(ops, e, o):
    s1 = E.overhead_share_vs_ops(ops, e, o)
    s2 = E.overhead_share_vs_ops(2 * ops, e, o)
    assert 0 < s2 < s1 < 1


def test_horowitz_lookup_and_ratios():
    assert E.horowitz("fp32 mult") == 3.7
    # int32 mult / int8 mult: 15.5x, the "quadratic" cost of multiplier width (16x from (32/8)^2)
    assert E.horowitz("int32 mult") / E.horowitz("int8 mult") == pytest.approx(15.5)
    with pytest.raises(ValueError, match="operation='fp64 mult' is not in the Horowitz"):
        E.horowitz("fp64 mult")


def test_memory_to_math_ratio():
    # one DRAM word (640 pJ) per 0.75 pJ op is 853x the arithmetic
    assert E.memory_to_math_ratio(640, 0.75, 1) == pytest.approx(640 / 0.75)
    assert np.allclose(E.memory_to_math_ratio(640, 0.75, np.array([1.0, 10.0])), [853.333, 85.333], rtol=1e-5)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="overhead_pJ must be a positive finite number, got -1"):
        E.overhead_ratio(1.5, -1)
    with pytest.raises(TypeError, match="math_energy_pJ must be a number, got '1.5'"):
        E.overhead_share("1.5", 30)
    with pytest.raises(ValueError, match="ops_per_instruction must be positive"):
        E.instruction_energy_pJ([0, 1], 1.0, 30)
    with pytest.raises(ValueError, match="target_share must be below 1"):
        E.ops_for_share(1.0, 1.0, 30)


def test_overhead_view_title_states_the_share():
    fig = E.overhead_view(ops_per_instruction=128, overhead_pJ=30, math_pJ_per_op=110 / 128)
    assert "128 ops/instruction: 21.4 %" in fig.axes[0].get_title()
    import matplotlib.pyplot as plt

    plt.close(fig)
