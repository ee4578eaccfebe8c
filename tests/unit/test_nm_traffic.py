"""The 2:4 GEMM's traffic model (scaledl.kernels.nm_traffic) and its kernel model facts, without the simulator.

The closed forms are checked by hand at one size, and against the counted runs in tests/sim/test_nm_traffic.py.
The model's facts come from the static report recorded in the package, so they hold where ptxas is missing; held
against the H200 run's 2:4 section they say what chapter 12 says: v1 within the model's spread of its
measurement, v2's issue ceiling from its static count below what it measured (its tile loop's branches skip part
of the code a static count counts), and v3 above both.
"""

import re
from pathlib import Path

import pytest

from scaledl.kernels import static_record
from scaledl.kernels.gemm_traffic import gemm_traffic
from scaledl.kernels.nm_traffic import dense_twin_traffic, nm_gemm_traffic, nm_shared_traffic
from scaledl.kernels import kernel_model as km

ROOT = Path(__file__).resolve().parents[2]


def test_closed_forms_by_hand():
    # M 10, N 9, K 37: kept 20 a row (10 groups, the last padded), 3 words a row; T 4: gx 3, gy 3
    v1 = nm_gemm_traffic(10, 9, 37, "naive")
    assert (v1.loads_values, v1.loads_metadata, v1.loads_B, v1.stores) == (90 * 19, 90 * 20, 90 * 19, 90)  # 9 x 2 + 1
    v2 = nm_gemm_traffic(10, 9, 37, "tiled", tile=4)
    assert (v2.loads_values, v2.loads_metadata, v2.loads_B) == (10 * 20 * 3, 10 * 3 * 3, 37 * 9 * 3)
    v3 = nm_gemm_traffic(10, 9, 37, "decoded", tile=4)
    assert (v3.loads_values, v3.loads_metadata, v3.loads_B) == (10 * 20 * 3, 10 * 20 * 3, 37 * 9 * 3)
    twin = dense_twin_traffic(10, 9, 37, tile=4)
    assert twin == gemm_traffic(10, 9, 37, "tiled", tile=4) and v2.loads_B == twin.loads_B  # the same rows of B
    assert v2.flops == twin.flops == 2 * 10 * 9 * 37 and v2.multiply_adds == 10 * 9 * 20


def test_at_the_benchs_shape_only_As_side_shrinks():
    M, K, N = 4095, 4097, 4095  # the bench's nm shape
    v2, twin = nm_gemm_traffic(M, N, K, "tiled", tile=16), dense_twin_traffic(M, N, K, tile=16)
    assert v2.B_bytes == twin.loads_B * 4 and v2.value_bytes < 0.51 * twin.loads_A * 4
    assert v2.metadata_bytes / v2.value_bytes == pytest.approx(1 / 16, rel=0.01)  # 2 bytes per 8 values of 4 bytes
    assert 0.76 < v2.bytes / twin.bytes < 0.78


def test_errors():
    with pytest.raises(ValueError, match="variant='wmma' is not a 2:4 GEMM variant"):
        nm_gemm_traffic(4, 4, 4, "wmma")
    with pytest.raises(TypeError, match="tile: v1 naive has no tile"):
        nm_gemm_traffic(4, 4, 4, "naive", tile=4)
    with pytest.raises(ValueError, match="tile must be a positive int, got 0"):
        nm_gemm_traffic(4, 4, 4, "tiled", tile=0)
    with pytest.raises(ValueError, match="K must be a non-negative int, got -1"):
        nm_gemm_traffic(4, 4, -1, "tiled")


def test_shared_traffic_per_flop():
    assert nm_shared_traffic("naive").bytes_per_flop == 0
    v2 = nm_shared_traffic("tiled", tile=16)
    assert v2.load_bytes_per_flop == (4 + 4 + 2 / 8) / 2  # a value, a row of B, an eighth of a word per FFMA
    assert v2.store_bytes_per_flop == pytest.approx((16 * 16 * 4 + 16 * 8 * 4 + 16 * 2) / 256 / 16)
    assert nm_shared_traffic("decoded", tile=16).bytes_per_flop == 6.5


def test_the_h200_figures_are_in_the_runs_log():
    log = (ROOT / km.NM_H200_SOURCE.split(" ")[0]).read_text()
    for name, tflops in km.NM_H200_MEASURED_TFLOPS.items():
        assert re.search(rf"\b{tflops * 1000:,.0f} GFLOP/s", log), name


@pytest.fixture(scope="module")
def predictions():
    facts = static_record.recorded(["nm_gemm_v1", "nm_gemm_v2_tiled", "nm_gemm_v3_decoded", "gemm_v2_tiled"])
    out = {n: km.predict(km.nm_gemm_facts(facts[n], v)) for n, v in
           (("nm_gemm_v1", "naive"), ("nm_gemm_v2_tiled", "tiled"), ("nm_gemm_v3_decoded", "decoded"))}
    out["gemm_v2_tiled"] = km.predict(km.gemm_facts(facts["gemm_v2_tiled"], "tiled"))
    return out


def test_what_the_model_says_of_the_2_4_kernels(predictions):
    measured = {n: t / km.PEAK_TFLOPS for n, t in km.NM_H200_MEASURED_TFLOPS.items()}  # dense-equivalent fractions
    v1, v2, v3 = (km.NM_DENSE_PER_FMA * predictions[n].expected for n in
                  ("nm_gemm_v1", "nm_gemm_v2_tiled", "nm_gemm_v3_decoded"))
    assert 1 / 1.35 <= measured["nm_gemm_v1"] / v1 <= 1.35  # the model's spread (test_kernel_model.py)
    assert predictions["nm_gemm_v2_tiled"].limit == "issue"  # ... from a static count that is no ceiling:
    assert km.NM_DENSE_PER_FMA * predictions["nm_gemm_v2_tiled"].ceiling < measured["nm_gemm_v2_tiled"]
    assert predictions["nm_gemm_v3_decoded"].limit == "bandwidth"  # shared memory: value, position and B per FFMA
    assert v3 > 2.5 * measured["nm_gemm_v2_tiled"] and v3 > predictions["gemm_v2_tiled"].expected
