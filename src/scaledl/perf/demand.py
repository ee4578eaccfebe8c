"""Compute demand of landmark models: the seeds' figures, unit conversions, growth rates and a CPU check.

Training compute is a *quantity of work*, in FLOP (an "exaFLOP" in the seeds means 1e18 operations, not a
rate). The usual unit for large runs is the petaflop/s-day: 1e15 FLOP/s sustained for 86 400 s, 8.64e19 FLOP.

The source documents disagree with each other: Dally's 2018 talk (seed 000) gives ResNet 7 EF and Deep
Speech 2 20 EF, NVIDIA's 2018 slides (seed 003) ResNet 20 EF and Deep Speech 2 100 EF, and Dally's 2023
lecture (seed 002) ResNet ~1 PF-day = 86 EF. They are kept apart here, each tagged with its source, so the
chapter can show the spread; :func:`seed_003_shifted_rows` shows where the slides' figures most likely
came from, and :data:`GPT4_EPOCH_AI` holds an outside estimate to set against the lecture's GPT-4.

>>> round(exaflop_to_pf_days(100), 3)  # GNMT's 100 EF
1.157
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scaledl.perf import hardware
from scaledl._args import positive
from scaledl.perf.training import PETAFLOP_DAY_FLOP, SECONDS_PER_DAY, TWO_WEEKS_S, trainable_flops

__all__ = ["EXAFLOP", "Landmark", "SEED_000", "SEED_003", "SEED_002", "LANDMARKS", "exaflop_to_pf_days",
           "pf_days_to_flop", "flop_to_pf_days", "growth_per_year", "doubling_time_months", "CpuServer",
           "DUAL_XEON_E5_2699V4", "DUAL_XEON_E5_2690", "implied_rate_FLOPS", "training_flop", "two_week_budget_pf_days",
           "TWO_WEEK_SERVERS", "GPT4_EPOCH_AI", "ESTIMATES", "PAPER_PARAMS_M",
           "seed_003_shifted_rows", "SOURCE_LABELS", "server_budget_pf_days", "first_beyond_one_server"]

# Short labels for the source documents in printed tables (book.toml keeps the file prefixes).
SOURCE_LABELS = {"000": "Dally 2018", "003": "NVIDIA 2018", "002": "Dally 2023", "Epoch AI": "Epoch AI"}

EXAFLOP = 1e18
SECONDS_PER_YEAR = 365.25 * SECONDS_PER_DAY


@dataclass(frozen=True)
class Landmark:
    """One model's training compute as a seed states it."""

    model: str
    year: int
    flop: float
    seed: str  # which source document says so
    params_M: float | None = None  # parameters in millions, as printed (None: not given)
    note: str = ""

    @property
    def pf_days(self) -> float:
        return self.flop / PETAFLOP_DAY_FLOP


# Seed 000 (Dally, ScaledML 2018): "7 ExaFLOPS to train Microsoft ResNet on ImageNet ... DeepSpeech 2 ...
# about three times that: 20 ExaFLOPS ... Google Neural Machine Translation ... 100 ExaFLOPS". The talk gives
# no years; those of seed 003's slide are used.
SEED_000 = (
    Landmark("ResNet", 2015, 7 * EXAFLOP, "000"),
    Landmark("Deep Speech 2", 2016, 20 * EXAFLOP, "000"),
    Landmark("GNMT", 2017, 100 * EXAFLOP, "000"),
)
# Seed 003 ("Deep learning is an HPC workload", NVIDIA 2018): the same three models, larger figures, and
# parameter counts as printed. Its two FLOP figures are seed 000's figures for the *next* model down (see
# seed_003_shifted_rows), so its parameter counts are most likely shifted by the same row; either way they
# are far from the papers' counts (PAPER_PARAMS_M).
SEED_003 = (
    Landmark("ResNet", 2015, 20 * EXAFLOP, "003", params_M=300),
    Landmark("Deep Speech 2", 2016, 100 * EXAFLOP, "003", params_M=8700),
    Landmark("GNMT", 2017, 100 * EXAFLOP, "003", note="= 2 years on a dual CPU server"),
)
# Seed 002 (Dally, "Trends in Deep Learning Hardware", 2023), in petaflop-days, order of magnitude only.
SEED_002 = (
    Landmark("AlexNet", 2012, 1e-2 * PETAFLOP_DAY_FLOP, "002"),
    Landmark("ResNet", 2016, 1 * PETAFLOP_DAY_FLOP, "002"),
    Landmark("BERT", 2018, 10 * PETAFLOP_DAY_FLOP, "002"),
    Landmark("GPT-4", 2023, 1e6 * PETAFLOP_DAY_FLOP, "002", note="estimated; not published by OpenAI"),
)
LANDMARKS = SEED_000 + SEED_003 + SEED_002

# An outside estimate for the lecture's GPT-4 point: Epoch AI, "Data on Notable AI Models" (database, 2024),
# GPT-4 training compute ~2.1e25 FLOP (an estimate from reported hardware and duration; OpenAI has
# published no figure). 2.1e25 / 8.64e19 = 2.4e5 PF-days, a quarter of the lecture's ~1e6.
GPT4_EPOCH_AI = Landmark("GPT-4", 2023, 2.1e25, "Epoch AI", note="estimate (Epoch AI database, 2024)")
ESTIMATES = (GPT4_EPOCH_AI,)

# Parameter counts in the papers themselves (millions), to set against seed 003's "300" and "8700":
# He et al., "Deep Residual Learning for Image Recognition" (CVPR 2016; counts as commonly quoted from the
# reference implementations): ResNet-50 25.6 M, ResNet-152 60.2 M. Amodei et al., "Deep Speech 2" (ICML
# 2016): its networks have tens of millions of parameters, about 35 M in the comparison tables and up to
# about 100 M for the largest (approximate).
PAPER_PARAMS_M = {
    "ResNet-50": (25.6, 25.6),
    "ResNet-152": (60.2, 60.2),
    "Deep Speech 2": (35.0, 100.0),  # approximate range
}


def seed_003_shifted_rows() -> list[tuple[str, float, str]]:
    """Seed 003's FLOP figures that equal seed 000's figure for a *different* model.

    Returns (model in seed 003, its figure in FLOP, the model seed 000 gives that figure to), for each
    seed 003 model whose figure differs from seed 000's own figure for it. The slides' ResNet line carries
    the talk's Deep Speech 2 figure and their Deep Speech 2 line the talk's GNMT figure: a one-row shift.
    """
    talk = {m.model: m.flop for m in SEED_000}
    out = []
    for m in SEED_003:
        if m.flop != talk[m.model]:
            out += [(m.model, m.flop, other) for other, f in talk.items() if other != m.model and f == m.flop]
    return out


def exaflop_to_pf_days(exaflop: float) -> float:
    """Work in exaFLOP (1e18 FLOP) -> petaflop/s-days."""
    return exaflop * EXAFLOP / PETAFLOP_DAY_FLOP


def pf_days_to_flop(pf_days: float) -> float:
    return pf_days * PETAFLOP_DAY_FLOP


def flop_to_pf_days(flop: float) -> float:
    return flop / PETAFLOP_DAY_FLOP


def growth_per_year(ratio: float, years: float) -> float:
    """The constant yearly factor that compounds to ``ratio`` over ``years`` years."""
    if not (ratio > 0 and years > 0):
        raise ValueError(f"ratio and years must be > 0, got ratio={ratio!r}, years={years!r}")
    return ratio ** (1 / years)


def doubling_time_months(ratio: float, years: float) -> float:
    """Months per doubling for growth by ``ratio`` over ``years`` years."""
    return 12 * years * math.log(2) / math.log(ratio)


@dataclass(frozen=True)
class CpuServer:
    """A CPU server's peak rate from first principles: sockets x cores x clock x FLOP per cycle per core."""

    name: str
    sockets: int
    cores_per_socket: int
    clock_GHz: float
    fp32_flop_per_cycle: int  # per core
    citation: str

    @property
    def peak_FLOPS(self) -> float:
        return self.sockets * self.cores_per_socket * self.clock_GHz * 1e9 * self.fp32_flop_per_cycle


# A plausible 2016-2017 "dual CPU server": two Intel Xeon E5-2699 v4 (Broadwell-EP, 22 cores, 2.2 GHz base).
# AVX2 with two FMA units per core: 2 units x 8 fp32 lanes x 2 FLOP (multiply + add) = 32 FLOP per cycle.
# Sustained AVX clocks are lower than the base clock, so this peak is, if anything, generous.
DUAL_XEON_E5_2699V4 = CpuServer("2 x Xeon E5-2699 v4", 2, 22, 2.2, 32,
                                "Intel ARK, Xeon E5-2699 v4 (2016): 22 cores, 2.2 GHz base, AVX2")

# The CPU server AlexNet's GPUs competed with in 2012: two Xeon E5-2690 (Sandy Bridge-EP, 8 cores, 2.9 GHz
# base). AVX without FMA: one 8-wide fp32 multiply and one 8-wide add per cycle = 16 FLOP per cycle.
DUAL_XEON_E5_2690 = CpuServer("2 x Xeon E5-2690", 2, 8, 2.9, 16,
                              "Intel ARK, Xeon E5-2690 (2012): 8 cores, 2.9 GHz base, AVX")


def implied_rate_FLOPS(flop: float, time_s: float) -> float:
    """The sustained rate that does ``flop`` in ``time_s`` seconds."""
    return flop / time_s


def training_flop(forward_flop_per_example: float, examples: int, epochs: float,
                  backward_to_forward: float = 2.0) -> float:
    """Training work: (forward + backward) per example x examples x epochs.

    The backward pass costs about twice the forward pass (one product for the input gradient, one for the
    weight gradient), so training is ~3x the forward work.
    """
    return forward_flop_per_example * (1 + backward_to_forward) * examples * epochs


# Bottom-up AlexNet check (all approximate, as commonly quoted): ~0.72 G multiply-adds per 224x224 forward
# pass; 1 281 167 ImageNet-2012 training images; "roughly 90 cycles through the training set" and "five to
# six days on two NVIDIA GTX 580 3GB GPUs" (Krizhevsky, Sutskever, Hinton, NIPS 2012).
ALEXNET_FORWARD_MACS = 0.72e9  # approximate
IMAGENET_TRAIN_IMAGES = 1_281_167
ALEXNET_EPOCHS = 90
ALEXNET_DAYS = 5.5  # "five to six days"
ALEXNET_GPU = "GTX 580"
ALEXNET_GPU_COUNT = 2

# For each year, the newest training GPU of the table then: what one 8-GPU server of them does in two weeks.
TWO_WEEK_SERVERS = (
    (2012, "GTX 580"), (2013, "K40"), (2015, "M40"), (2016, "P100 SXM2"),
    (2017, "V100 SXM2"), (2020, "A100 SXM4 80GB"), (2022, "H100 SXM"),
)


def two_week_budget_pf_days(device: str, count: int = 8, utilization: float = 0.4) -> float:
    """PF-days that ``count`` devices finish in two weeks at ``utilization`` of their best training precision."""
    dev = hardware.get(device)
    return flop_to_pf_days(trainable_flops(TWO_WEEKS_S, dev, count, utilization, dev.best_training_precision))


def server_budget_pf_days(year: int, days: float = 14, count: int = 8, utilization: float = 0.4) -> float:
    """PF-days that one server of the newest training GPU of ``year`` (TWO_WEEK_SERVERS) does in ``days``."""
    days = positive("days", days)
    available = [d for y, d in TWO_WEEK_SERVERS if y <= year]
    if not available:
        raise ValueError(f"year={year!r}: expected {TWO_WEEK_SERVERS[0][0]} or later")
    return two_week_budget_pf_days(available[-1], count, utilization) * days / 14


def first_beyond_one_server(days: float = 14, count: int = 8, utilization: float = 0.4,
                            landmarks=LANDMARKS + ESTIMATES) -> Landmark | None:
    """The earliest landmark whose work one server of its year cannot finish in ``days`` (None: all fit)."""
    for m in sorted(landmarks, key=lambda m: (m.year, -m.flop)):
        if m.pf_days > server_budget_pf_days(m.year, days, count, utilization):
            return m
    return None
