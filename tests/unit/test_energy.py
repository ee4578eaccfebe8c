"""The energy model reproduces the seeds' overhead figures, and says where they disagree."""

import matplotlib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

matplotlib.use("Agg")

from scaledl.perf import energy as E  # noqa: E402
from scaledl.perf import views as PV


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
    fig = PV.overhead_view(ops_per_instruction=128, overhead_pJ=30, math_pJ_per_op=110 / 128)
    assert "128 ops/instruction: 21.4 %" in fig.axes[0].get_title()
    import matplotlib.pyplot as plt

    plt.close(fig)


# ------------------------------------------------------------------ seed 002's 47 / 47 / 6 % breakdown
def test_mac_energy_per_level_follows_reuse():
    # int8 (1 byte = 1/4 word): 5 pJ/word / 4 elements per word / reuse 4 = 0.3125 pJ per MAC
    e = E.mac_energy(0.3125, 1, local_reuse=4, onchip_reuse=10, dram_reuse=100)
    assert e.memories_pJ == pytest.approx(5 / 4 / 4)
    assert e.movement_pJ == pytest.approx(50 / 4 / 10)
    assert e.dram_pJ == pytest.approx(640 / 4 / 100)
    assert e.total_pJ == pytest.approx(0.3125 + 0.3125 + 1.25 + 1.6)
    assert sum(e.shares.values()) == pytest.approx(1)
    assert E.mac_energy(1.0, 4, 1, 1).dram_pJ == 0.0  # everything on chip by default


def test_tile_reuse_is_outputs_over_inputs_per_k_step():
    assert E.tile_reuse(16) == 8.0 and E.tile_reuse(1) == 0.5
    assert E.tile_reuse(128, 8) == pytest.approx(1024 / 136)


def test_reuse_for_breakdown_reproduces_the_seed_shares():
    assert E.IMMA.math_energy_pJ_per_mac == pytest.approx(160 / 512)
    local, onchip = E.reuse_for_breakdown(E.IMMA.math_energy_pJ_per_mac, 1)
    assert local == pytest.approx(4.0)  # memories = math needs 4 MACs per int8 element read locally
    assert onchip == pytest.approx(50 / 4 / (0.3125 * 6 / 47))
    shares = E.mac_energy(E.IMMA.math_energy_pJ_per_mac, 1, local, onchip).shares
    for part, want in E.SEED002_BREAKDOWN.items():
        assert shares[part] == pytest.approx(want)


@given(st.floats(1, 1e4))
def test_bigger_tiles_move_less(t):
    a = E.mac_energy(0.3, 1, 4, E.tile_reuse(t)).shares["data movement"]
    b = E.mac_energy(0.3, 1, 4, E.tile_reuse(2 * t)).shares["data movement"]
    assert b < a


def test_breakdown_errors_name_the_argument():
    with pytest.raises(ValueError, match="must add up to 1"):
        E.reuse_for_breakdown(0.3, 1, {"math": 0.5, "memories": 0.5, "data movement": 0.5})
    with pytest.raises(ValueError, match=r"\['memories'\] missing"):
        E.reuse_for_breakdown(0.3, 1, {"math": 0.9, "data movement": 0.1})
    with pytest.raises(ValueError, match="local_reuse must be a positive finite number, got 0"):
        E.mac_energy(0.3, 1, 0, 10)
    with pytest.raises(ValueError, match="dram_reuse must be a positive number or math.inf, got -1"):
        E.mac_energy(0.3, 1, 1, 10, dram_reuse=-1)
    with pytest.raises(ValueError, match="precision='fp64'"):
        PV.breakdown_view(precision="fp64")


def test_breakdown_view_title_states_the_shares():
    import matplotlib.pyplot as plt

    fig = PV.breakdown_view(onchip_tile=627, local_reuse=4.0, precision="int8 (IMMA)")
    assert "math 47 %, memories 47 %, data movement 6 %" in fig._suptitle.get_text()
    plt.close(fig)
    fig = PV.breakdown_view(onchip_tile=16, local_reuse=4.0, precision="int8 (IMMA)")
    assert "data movement 71 %" in fig._suptitle.get_text()
    plt.close(fig)
