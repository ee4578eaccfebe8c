"""Progress from outside the chip: algorithmic efficiency, software on the same GPU, data scale."""

import math

import pytest

from scaledl.perf import progress as P

EPS = 2.220446049250313e-16


def test_hernandez_brown_against_the_lecture():
    # 44x in 7 years is a doubling every 15.4 months, consistent with their fitted ~16
    assert P.doubling_time_months(44, 7) == pytest.approx(12 * 7 * math.log(2) / math.log(44), rel=8 * EPS)
    assert round(P.doubling_time_months(44, 7), 1) == 15.4
    # at 16 months a doubling, a decade gives ~181x; 1000x takes ~13.3 years
    assert P.gain_over(10, 16) == pytest.approx(2 ** 7.5, rel=8 * EPS)
    assert P.years_to_gain(1000, 16) == pytest.approx(16 * math.log2(1000) / 12, rel=8 * EPS)
    assert P.gain_over(P.years_to_gain(1000, 16), 16) == pytest.approx(1000, rel=16 * EPS)


def test_mlperf_software_gain():
    years = P.MLPERF_H100_DEBUT_YEAR - P.MLPERF_A100_DEBUT_YEAR
    assert years == pytest.approx(2.25, abs=0.01)
    # H100 vs the first A100 = (A100's software gain) x (H100 vs the latest A100), to the quoted precision
    assert P.MLPERF_H100_VS_A100_DEBUT_MAX / P.MLPERF_H100_VS_A100_LATEST_MAX == pytest.approx(2.5, abs=0.1)


def test_six_n_d_reproduces_llama2_gpu_hours():
    assert P.dense_transformer_training_flop(70e9, 2e12) == pytest.approx(8.4e23, rel=8 * EPS)
    for n, hours in P.LLAMA2_GPU_HOURS.items():
        u = P.implied_utilization(P.dense_transformer_training_flop(n, P.LLAMA2_PRETRAINING_TOKENS), hours)
        assert 0.34 < u < 0.45, (n, u)  # all plausible model-FLOP utilizations on A100 bf16
    assert P.CHIPNEMO_DAPT_TOKENS / P.LLAMA2_PRETRAINING_TOKENS == pytest.approx(0.012, rel=8 * EPS)


@pytest.mark.parametrize("call, match", [
    (lambda: P.doubling_time_months(0.5, 7), "gain=0.5: expected a growth factor > 1"),
    (lambda: P.doubling_time_months(44, 0), "years must be a positive finite number"),
    (lambda: P.years_to_gain(1000, -1), "doubling_months must be a positive finite number"),
    (lambda: P.dense_transformer_training_flop(0, 1e12), "params must be a positive finite number"),
    (lambda: P.implied_utilization(1e20, float("nan")), "gpu_hours must be a positive finite number"),
])
def test_errors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
