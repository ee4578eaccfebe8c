"""Progress that is not the chip's: better algorithms, better software on the same chip, and more data.

Dally's 2023 lecture puts numbers on all three: ~1000x from more efficient models, +2.5x for Ampere from
software alone (MLPerf), and datasets of 1e12 tokens and 1e9 images (ChipNeMo: 24 B tokens of chip-design
text). This module keeps those figures beside the measurements that check them, each cited where defined.

>>> round(doubling_time_months(HERNANDEZ_BROWN_GAIN, HERNANDEZ_BROWN_YEARS), 1)  # 44x in 7 years
15.4
>>> round(years_to_gain(1000, HERNANDEZ_BROWN_DOUBLING_MONTHS), 1)       # 1000x at their pace
13.3
>>> f"{dense_transformer_training_flop(70e9, 2e12):.2g}"                    # Llama 2 70B: 6 N D
'8.4e+23'
"""

from __future__ import annotations

import math

from scaledl.perf import hardware
from scaledl._args import positive

__all__ = ["SEED_002_ALGORITHM_GAIN", "HERNANDEZ_BROWN_GAIN", "HERNANDEZ_BROWN_YEARS",
           "HERNANDEZ_BROWN_DOUBLING_MONTHS", "doubling_time_months", "gain_over", "years_to_gain",
           "SEED_002_AMPERE_SOFTWARE_GAIN", "MLPERF_A100_SOFTWARE_GAIN", "MLPERF_A100_DEBUT_YEAR",
           "MLPERF_H100_DEBUT_YEAR", "MLPERF_H100_VS_A100_DEBUT_MAX", "MLPERF_H100_VS_A100_LATEST_MAX",
           "MLPERF_H100_VS_A100_LATEST_MEAN", "SEED_002_PRETRAINING_TOKENS", "SEED_002_IMAGES",
           "CHIPNEMO_DAPT_TOKENS", "IMAGENET_TRAIN_IMAGES", "LLAMA2_PRETRAINING_TOKENS", "LLAMA2_GPU_HOURS",
           "dense_transformer_training_flop", "implied_utilization"]

# -- Algorithms ----------------------------------------------------------------------------------------
# Dally 2023 (seed 002): "more efficient deep learning models ... (estimated ~1000x)", e.g. GoogLeNet vs VGG.
SEED_002_ALGORITHM_GAIN = 1000.0
# Hernandez and Brown, "Measuring the Algorithmic Efficiency of Neural Networks" (arXiv:2005.04305, 2020):
# reaching AlexNet-level ImageNet accuracy took 44x less training compute in 2019 than in 2012; their fit
# over all the points gives a doubling of algorithmic efficiency every ~16 months.
HERNANDEZ_BROWN_GAIN = 44.0
HERNANDEZ_BROWN_YEARS = 7  # 2012 -> 2019
HERNANDEZ_BROWN_DOUBLING_MONTHS = 16.0


def doubling_time_months(gain: float, years: float) -> float:
    """Months per doubling of a quantity that grew by ``gain`` (> 1) in ``years`` years."""
    gain = positive("gain", gain)
    years = positive("years", years)
    if gain <= 1:
        raise ValueError(f"gain={gain!r}: expected a growth factor > 1")
    return 12 * years * math.log(2) / math.log(gain)


def gain_over(years: float, doubling_months: float) -> float:
    """The factor a quantity doubling every ``doubling_months`` months gains in ``years`` years."""
    doubling_months = positive("doubling_months", doubling_months)
    return 2.0 ** (12 * years / doubling_months)


def years_to_gain(gain: float, doubling_months: float) -> float:
    """Years that a quantity doubling every ``doubling_months`` months takes to grow by ``gain``."""
    gain = positive("gain", gain)
    doubling_months = positive("doubling_months", doubling_months)
    return doubling_months * math.log2(gain) / 12


# -- Software on the same chip (MLPerf Training) --------------------------------------------------------
# Dally 2023 (seed 002): "Ampere's performance increased 2.5x since its initial release".
SEED_002_AMPERE_SOFTWARE_GAIN = 2.5
# MLPerf Training, NVIDIA's A100 submissions: on average 2.5x faster in v2.1 (November 2022) than at the
# A100's debut in v0.7 (July 2020), same GPU (D. Salvator, NVIDIA, reported by S. Ward-Foxton, "Nvidia
# Shows Off Hopper MLPerf Training Benchmarks", EE Times, November 2022). NVIDIA's own v2.1 post ("Leading
# MLPerf Training 2.1 with Full Stack Optimizations for AI", NVIDIA technical blog, 2022): H100 up to 6.7x
# the first A100 submission and up to 2.6x the latest; EE Times: 1.9x the latest A100 on average.
MLPERF_A100_SOFTWARE_GAIN = 2.5
MLPERF_A100_DEBUT_YEAR = 2020 + 7 / 12   # v0.7 results, end of July 2020
MLPERF_H100_DEBUT_YEAR = 2022 + 10 / 12  # v2.1 results, early November 2022
MLPERF_H100_VS_A100_DEBUT_MAX = 6.7
MLPERF_H100_VS_A100_LATEST_MAX = 2.6
MLPERF_H100_VS_A100_LATEST_MEAN = 1.9

# -- Data ----------------------------------------------------------------------------------------------
# Dally 2023 (seed 002): training starts from "10^12 tokens, 10^9 images"; ChipNeMo's domain-adaptive
# pretraining used ~24 billion tokens of chip-design text (Liu et al., "ChipNeMo: Domain-Adapted LLMs for
# Chip Design", arXiv:2311.00176, 2023), continuing from LLaMA 2 foundation models.
SEED_002_PRETRAINING_TOKENS = 1e12
SEED_002_IMAGES = 1e9
CHIPNEMO_DAPT_TOKENS = 24e9
IMAGENET_TRAIN_IMAGES = 1_281_167  # ImageNet-2012 (ILSVRC) training set
# Touvron et al., "Llama 2: Open Foundation and Fine-Tuned Chat Models" (arXiv:2307.09288, 2023): every
# size pretrained on 2.0 T tokens; A100-80GB GPU-hours per size (their Table 2).
LLAMA2_PRETRAINING_TOKENS = 2.0e12
LLAMA2_GPU_HOURS = {7e9: 184_320, 13e9: 368_640, 34e9: 1_038_336, 70e9: 1_720_320}


def dense_transformer_training_flop(params: float, tokens: float) -> float:
    """Training work of a dense transformer: ~6 FLOP per parameter per token (2 forward, 4 backward).

    The usual approximation (Kaplan et al., "Scaling Laws for Neural Language Models", 2020); it leaves out
    attention's own products, a few per cent at these sizes.
    """
    params = positive("params", params)
    tokens = positive("tokens", tokens)
    return 6.0 * params * tokens


def implied_utilization(flop: float, gpu_hours: float, device: str = "A100 SXM4 80GB",
                        precision: str = "bf16") -> float:
    """Fraction of ``device``'s dense ``precision`` peak that does ``flop`` in ``gpu_hours`` GPU-hours."""
    flop = positive("flop", flop)
    gpu_hours = positive("gpu_hours", gpu_hours)
    peak_FLOPS = hardware.get(device).peak_TFLOPS(precision) * 1e12
    return flop / (gpu_hours * 3600 * peak_FLOPS)
