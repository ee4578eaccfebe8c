"""Huang's law: single-GPU inference throughput grew ~1000x in ten years. Where did it come from?

Seed 002 (Dally, 2023) names the causes: smaller number formats (fp32 -> int8), complex instructions that
amortise the fixed cost of an instruction over more arithmetic (HFMA -> HDP4A -> HMMA -> IMMA), process
technology (~2.5x over four nodes, 28 nm -> 5 nm) and 2:4 sparsity (2x). The seed quantifies only some of
them; here the rest is computed as the residual, then cross-checked against the hardware table and the
instruction-energy table of :mod:`scaledl.perf.energy`.

>>> round(table_total(), 1)            # K20X fp32 -> H100 SXM sparse int8
1002.0
>>> round(per_generation(PROCESS_GAIN_SEED_002, PROCESS_NODES), 3)
1.257
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scaledl.perf import energy, hardware

__all__ = ["SEED_TOTAL", "KEPLER", "HOPPER", "PROCESS_GAIN_SEED_002", "PROCESS_NODES", "SPARSITY_GAIN",
           "PROCESS_GAIN_PER_GENERATION_PAST", "PROCESS_GAIN_PER_GENERATION_2018", "TPU_V2_CHIP_TFLOPS",
           "V100_ANNOUNCED_TENSOR_TFLOPS", "table_total", "number_format_gain", "per_generation", "Factor",
           "decomposition", "table_decomposition", "energy_per_op_pJ", "instruction_gain"]

SEED_TOTAL = 1000.0  # seed 002: "~4 int8 TOPS" (Kepler) to "~4000 int8 TOPS" (Hopper) in ten years
KEPLER, HOPPER = "K20X", "H100 SXM"  # the generations' flagship compute GPUs in the table
PROCESS_GAIN_SEED_002 = 2.5  # seed 002: four process generations, 28 nm -> 5 nm, gave ~2.5x
PROCESS_NODES = 4  # 28 -> 16 -> 7 -> 5 nm (12 nm was a 16 nm refinement)
SPARSITY_GAIN = 2.0  # 2:4 structured sparsity on the weights (seed 002: "2:1 on weights only")
# Seed 000 (Dally, 2018): "we would get about 3x in a figure of merit [operations per unit energy] from one
# process generation to another. Now we get maybe 1.1x."
PROCESS_GAIN_PER_GENERATION_PAST = 3.0
PROCESS_GAIN_PER_GENERATION_2018 = 1.1
# Seed 000: "120 half-precision teraflops as opposed to 45 for the TPU". 120 is V100's figure as announced
# at GTC 2017 (the shipping SXM2 datasheet says 125); 45 TFLOPS is one TPU v2 chip (Google, 2017: 180
# TFLOPS per four-chip Cloud TPU board).
V100_ANNOUNCED_TENSOR_TFLOPS = 120.0
TPU_V2_CHIP_TFLOPS = 45.0


def table_total(old: str = KEPLER, new: str = HOPPER) -> float:
    """Peak ratio as the seed frames it: old GPU's fp32 (it had no int8) to new GPU's sparse int8."""
    return hardware.get(new).peak_TFLOPS("int8", sparse=True) / hardware.get(old).peak_TFLOPS("fp32")


def number_format_gain(from_bits: int = 32, to_bits: int = 8) -> tuple[float, float]:
    """(data moved, multiplier cost) gains of a narrower format.

    Data shrinks with the bit count; an array multiplier's area and energy grow with the square of the
    operand width, so its cost shrinks quadratically: fp32 -> int8 gives (4, 16).
    """
    if not (isinstance(from_bits, int) and isinstance(to_bits, int) and 0 < to_bits <= from_bits):
        raise ValueError(f"need integer bit widths 0 < to_bits <= from_bits, got from_bits={from_bits!r}, "
                         f"to_bits={to_bits!r}")
    ratio = from_bits / to_bits
    return ratio, ratio**2


def per_generation(total_gain: float, generations: int) -> float:
    """The per-generation factor that compounds to ``total_gain`` over ``generations`` generations."""
    if not (total_gain > 0 and generations >= 1):
        raise ValueError(f"need total_gain > 0 and generations >= 1, got {total_gain!r}, {generations!r}")
    return total_gain ** (1 / generations)


@dataclass(frozen=True)
class Factor:
    """One cause of the gain: its name, its factor, and whether the seed states it or it is a residual."""

    name: str
    gain: float
    source: str


def decomposition(total: float = SEED_TOTAL) -> tuple[Factor, ...]:
    """Seed 002's causes with numbers; complex instructions get what the others leave (the residual)."""
    _, multiply = number_format_gain(32, 8)
    stated = (
        Factor("number format (fp32 -> int8 multiplies)", multiply, "(32/8)^2, Dally 2023"),
        Factor(f"process ({PROCESS_NODES} nodes, 28 -> 5 nm)", PROCESS_GAIN_SEED_002, "Dally 2023"),
        Factor("2:4 sparsity", SPARSITY_GAIN, "Dally 2023"),
    )
    rest = total / math.prod(f.gain for f in stated)
    return stated[:1] + (Factor("complex instructions (residual)", rest, "total / the others"),) + stated[1:]


def table_decomposition(old: str = KEPLER, new: str = HOPPER) -> tuple[Factor, ...]:
    """The same total split by what the table measures (these multiply exactly to :func:`table_total`).

    1. fp32 on the CUDA cores, old -> new: more and faster cores (process and architecture together);
    2. on the new GPU, dense int8 tensor cores vs fp32 CUDA cores: format and complex instructions together;
    3. 2:4 sparsity.
    """
    o, n = hardware.get(old), hardware.get(new)
    return (
        Factor(f"fp32 CUDA cores, {o.name} -> {n.name}", n.peak_TFLOPS("fp32") / o.peak_TFLOPS("fp32"), "table"),
        Factor(f"int8 tensor cores vs fp32 on {n.name}", n.peak_TFLOPS("int8") / n.peak_TFLOPS("fp32"), "table"),
        Factor("2:4 sparsity", n.peak_TFLOPS("int8", sparse=True) / n.peak_TFLOPS("int8"), "table"),
    )


def energy_per_op_pJ(instr: energy.Instruction, overhead_pJ: float = energy.GPU_INSTRUCTION_OVERHEAD_pJ) -> float:
    """Energy per arithmetic operation of an instruction, its fixed overhead included."""
    return (instr.math_energy_pJ + overhead_pJ) / instr.ops


def instruction_gain(simple: energy.Instruction = energy.HFMA, complex_: energy.Instruction = energy.HMMA,
                     overhead_pJ: float = energy.GPU_INSTRUCTION_OVERHEAD_pJ) -> float:
    """How much less energy per operation the complex instruction spends (same fp16 format for both)."""
    return energy_per_op_pJ(simple, overhead_pJ) / energy_per_op_pJ(complex_, overhead_pJ)
