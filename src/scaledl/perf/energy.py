"""Energy per operation, and why complex instructions make a programmable GPU nearly as efficient as an ASIC.

Every instruction a processor runs pays a fixed *overhead* (fetch it, decode it, read and write its operands
in the register file) on top of the energy of the arithmetic it orders. The overhead does not grow with
the work the instruction does, so an instruction that does more arithmetic (HFMA: 2 operations; HDP4A: 8;
HMMA: 128; IMMA: 1024) spends a smaller share of its energy on overhead. This module holds the published
figures, each named and cited once, and the small model that relates them.

Two ways of quoting an overhead, which the sources mix:

* ``ratio = overhead / math`` (how much more the overhead costs than the arithmetic: HFMA 30/1.5 = 2000 %);
* ``share = overhead / (math + overhead)`` (the part of the instruction's total energy that is overhead).

>>> round(overhead_ratio(HFMA.math_energy_pJ, GPU_INSTRUCTION_OVERHEAD_pJ), 3)
20.0
>>> round(overhead_ratio(HMMA.math_energy_pJ, GPU_INSTRUCTION_OVERHEAD_pJ), 4)
0.2727
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scaledl._args import positive as _positive

# --- GPU instruction energies (Dally, "Scaling ML with NVIDIA GPUs", ScaledML 2018; and the table of
# --- Dally, "Trends in Deep Learning Hardware", 2023 lecture, as summarised in C. Mills' notes, 2024). Math
# --- energy only, overhead excluded.
GPU_INSTRUCTION_OVERHEAD_pJ = 30.0  # fetch + decode + operand access of one instruction (Dally 2018)
# An ARM out-of-order core: overhead of one instruction and the 16-bit integer add it performs (Dally 2023).
ARM_CORE_OVERHEAD_pJ = 250.0
ADD_INT16_pJ = 0.032  # "32 femtojoules"
CPU_FP16_OVERHEAD_RATIO = 1000.0  # Dally 2023: complex CPUs spend "~1000x" an FP16 operation on overhead

# Energy to read one 32-bit word from each level of an accelerator's memory (Dally 2023).
SRAM_LOCAL_8KB_pJ_PER_WORD = 5.0
ON_CHIP_SRAM_pJ_PER_WORD = 50.0  # "hundreds of MB" away on the die; 45 pJ of it is wire
OFF_CHIP_DRAM_pJ_PER_WORD = 640.0  # LPDDR / HBM
ON_CHIP_WIRE_pJ_PER_WORD = 45.0  # Dally 2023: of the 50 pJ on-chip access, 45 pJ is communication (wires)
WORD_BYTES = 4

# Dally 2023: the breakdown of the energy of an NVIDIA deep-learning inference accelerator: the datapath and MAC
# units, the memories next to them (weight, input and accumulation buffers, accumulation collector), and
# data movement between them.
SEED002_BREAKDOWN = {"math": 0.47, "memories": 0.47, "data movement": 0.06}


@dataclass(frozen=True)
class Instruction:
    """One arithmetic instruction: what it does and the energy of its arithmetic alone.

    ``ops`` counts multiplies and adds separately (a fused multiply-add is 2 operations).
    """

    name: str
    architecture: str
    math_energy_pJ: float
    ops: int
    what: str
    quoted_overhead: str  # as printed in the 2023 lecture's table

    @property
    def math_energy_pJ_per_op(self) -> float:
        return self.math_energy_pJ / self.ops

    @property
    def math_energy_pJ_per_mac(self) -> float:
        """Energy of one multiply-accumulate (a multiply and an add) inside this instruction."""
        return 2 * self.math_energy_pJ / self.ops


# ops: HFMA = 1 multiply + 1 add; HDP4A = 4 multiplies + 4 adds; HMMA = 4x4x4 = 64 multiplies + 64 adds
# (Dally 2018: "128 floating-point operations"); IMMA = two 8x8 int8 matrices (Dally 2023), read as an 8x8x8
# product: 512 multiplies + 512 adds.
HFMA = Instruction("HFMA", "Kepler (FP16 hypothetical)", 1.5, 2, "half-precision fused multiply-add", "2000%")
HDP4A = Instruction("HDP4A", "Pascal", 6.0, 8, "4-element FP16 dot product, FP32 sum", "500%")
# HMMA's 4x4x4 is what one Volta tensor core does per clock, not the shape of an instruction (mma.m8n8k4).
HMMA = Instruction("HMMA", "Volta", 110.0, 128, "4x4x4 FP16 matrix multiply, FP32 accumulate", "22%")
# The table counts IMMA as 1024 operations (8x8x8). That reading is an assumption: PTX's Turing int8 shape is
# m8n8k16 (2048 operations); chapter 05 shows what the other reading changes.
IMMA = Instruction("IMMA", "Turing", 160.0, 1024, "8x8x8 int8 matrix multiply, int32 accumulate", "16%")
INSTRUCTIONS = (HFMA, HDP4A, HMMA, IMMA)


@dataclass(frozen=True)
class OpEnergy:
    """One line of an energy-per-operation table."""

    operation: str
    energy_pJ: float
    bits: int


# Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014, 45 nm, as commonly
# quoted. DRAM is given there as a range, 1.3-2.6 nJ per 64-bit access; both ends are listed.
HOROWITZ_45NM = (
    OpEnergy("int8 add", 0.03, 8),
    OpEnergy("int32 add", 0.1, 32),
    OpEnergy("int8 mult", 0.2, 8),
    OpEnergy("int32 mult", 3.1, 32),
    OpEnergy("fp16 add", 0.4, 16),
    OpEnergy("fp32 add", 0.9, 32),
    OpEnergy("fp16 mult", 1.1, 16),
    OpEnergy("fp32 mult", 3.7, 32),
    OpEnergy("8 kB SRAM read", 10.0, 64),
    OpEnergy("32 kB SRAM read", 20.0, 64),
    OpEnergy("1 MB SRAM read", 100.0, 64),
    OpEnergy("DRAM read (low)", 1300.0, 64),
    OpEnergy("DRAM read (high)", 2600.0, 64),
)


def horowitz(operation: str) -> float:
    """Energy in pJ of ``operation`` in the Horowitz 45 nm table.

    Raises:
        ValueError: the operation is not in the table (the message lists those that are).
    """
    for row in HOROWITZ_45NM:
        if row.operation == operation:
            return row.energy_pJ
    known = ", ".join(repr(r.operation) for r in HOROWITZ_45NM)
    raise ValueError(f"operation={operation!r} is not in the Horowitz 45 nm table; known: {known}")


def overhead_ratio(math_energy_pJ: float, overhead_pJ: float) -> float:
    """Overhead divided by the arithmetic's energy (20.0 means "2000 %")."""
    return _positive("overhead_pJ", overhead_pJ) / _positive("math_energy_pJ", math_energy_pJ)


def overhead_share(math_energy_pJ: float, overhead_pJ: float) -> float:
    """The part of an instruction's total energy spent on overhead, in [0, 1)."""
    m, o = _positive("math_energy_pJ", math_energy_pJ), _positive("overhead_pJ", overhead_pJ)
    return o / (m + o)


def implied_overhead_pJ(math_energy_pJ: float, quoted: float, *, as_share: bool = False) -> float:
    """The overhead that makes a quoted percentage come out, read as a ratio (default) or as a share.

    >>> round(implied_overhead_pJ(110.0, 0.22), 1)   # 22 % of 110 pJ
    24.2
    >>> round(implied_overhead_pJ(110.0, 0.22, as_share=True), 1)  # o / (110 + o) = 0.22
    31.0
    """
    m = _positive("math_energy_pJ", math_energy_pJ)
    q = _positive("quoted", quoted)
    if as_share:
        if q >= 1:
            raise ValueError(f"quoted={quoted!r} read as a share must be below 1")
        return q * m / (1 - q)
    return q * m


def asic_advantage(math_energy_pJ: float, overhead_pJ: float) -> float:
    """How much more energy the programmable instruction spends than a fixed-function engine doing the same
    arithmetic with no overhead at all: (math + overhead) / math - 1 (HMMA: 0.27, "at most 27 % better")."""
    return overhead_ratio(math_energy_pJ, overhead_pJ)


def instruction_energy_pJ(ops_per_instruction, math_pJ_per_op: float, overhead_pJ: float):
    """Total energy of one instruction doing ``ops_per_instruction`` operations (array-friendly)."""
    ops = np.asarray(ops_per_instruction, dtype=float)
    if np.any(ops <= 0):
        raise ValueError(f"ops_per_instruction must be positive, got {ops_per_instruction!r}")
    _positive("math_pJ_per_op", math_pJ_per_op)
    _positive("overhead_pJ", overhead_pJ)
    return ops * math_pJ_per_op + overhead_pJ


def overhead_share_vs_ops(ops_per_instruction, math_pJ_per_op: float, overhead_pJ: float):
    """Overhead share as a function of how many operations one instruction does (array-friendly)."""
    total = instruction_energy_pJ(ops_per_instruction, math_pJ_per_op, overhead_pJ)
    return overhead_pJ / total


def ops_for_share(target_share: float, math_pJ_per_op: float, overhead_pJ: float) -> float:
    """Operations per instruction needed to bring the overhead share down to ``target_share``.

    From o / (n e + o) = s: n = o (1 - s) / (s e).
    """
    s = _positive("target_share", target_share)
    if s >= 1:
        raise ValueError(f"target_share must be below 1, got {target_share!r}")
    e, o = _positive("math_pJ_per_op", math_pJ_per_op), _positive("overhead_pJ", overhead_pJ)
    return o * (1 - s) / (s * e)


def memory_to_math_ratio(pJ_per_word: float, math_pJ_per_op: float, ops_per_word: float):
    """Energy of fetching operands over the energy of the arithmetic done with them.

    With ``ops_per_word`` operations per 32-bit word fetched (an arithmetic intensity of
    ``ops_per_word / 4`` per byte), a word costing ``pJ_per_word`` adds ``pJ_per_word / ops_per_word`` per op.
    """
    _positive("pJ_per_word", pJ_per_word)
    _positive("math_pJ_per_op", math_pJ_per_op)
    ops = np.asarray(ops_per_word, dtype=float)
    if np.any(ops <= 0):
        raise ValueError(f"ops_per_word must be positive, got {ops_per_word!r}")
    return pJ_per_word / (ops * math_pJ_per_op)


# ----------------------------------------------------------------- where the energy of a tiled GEMM goes
@dataclass(frozen=True)
class MacEnergy:
    """Energy per multiply-accumulate (MAC) of a tiled GEMM, split by where it is spent, in pJ per MAC.

    ``math``: the MAC itself. ``memories``: reading operands from the small buffers beside the datapath.
    ``movement``: carrying operands across the chip from a large on-chip SRAM. ``dram``: fetching them from
    off-chip memory.
    """

    math_pJ: float
    memories_pJ: float
    movement_pJ: float
    dram_pJ: float = 0.0

    @property
    def total_pJ(self) -> float:
        return self.math_pJ + self.memories_pJ + self.movement_pJ + self.dram_pJ

    @property
    def shares(self) -> dict:
        """Each part's share of the total, keyed like :data:`SEED002_BREAKDOWN` (plus ``"dram"``)."""
        t = self.total_pJ
        return {"math": self.math_pJ / t, "memories": self.memories_pJ / t,
                "data movement": self.movement_pJ / t, "dram": self.dram_pJ / t}


def tile_reuse(tile_m: int, tile_n: int | None = None) -> float:
    """MACs per operand element fetched when a ``tile_m x tile_n`` block of outputs is computed together.

    Each step along K brings ``tile_m`` elements of A and ``tile_n`` of B and does ``tile_m tile_n`` MACs,
    so every element fetched is used ``tile_m tile_n / (tile_m + tile_n)`` times (``T / 2`` for a square tile).

    >>> tile_reuse(1), tile_reuse(16), tile_reuse(128, 8)
    (0.5, 8.0, 7.529411764705882)
    """
    tile_n = tile_m if tile_n is None else tile_n
    m, n = _positive("tile_m", tile_m), _positive("tile_n", tile_n)
    return m * n / (m + n)


def mac_energy(mac_pJ: float, bytes_per_element: float, local_reuse: float, onchip_reuse: float,
               dram_reuse: float = math.inf, *, local_pJ_per_word: float = SRAM_LOCAL_8KB_pJ_PER_WORD,
               onchip_pJ_per_word: float = ON_CHIP_SRAM_pJ_PER_WORD,
               dram_pJ_per_word: float = OFF_CHIP_DRAM_pJ_PER_WORD) -> MacEnergy:
    """Energy per MAC of a GEMM whose operands are reused ``*_reuse`` times at each level of memory.

    A reuse of ``r`` at a level means one element is read there for every ``r`` MACs; an element is
    ``bytes_per_element / 4`` of a 32-bit word, so that level costs ``pJ_per_word (bytes / 4) / r`` per MAC.
    ``dram_reuse = inf`` (the default) models a chip that holds everything on die, as an inference
    accelerator holding its weights does.

    >>> e = mac_energy(0.3125, 1, local_reuse=4, onchip_reuse=313)   # int8, IMMA's energy per MAC
    >>> {k: round(v, 2) for k, v in e.shares.items()}
    {'math': 0.47, 'memories': 0.47, 'data movement': 0.06, 'dram': 0.0}
    """
    m = _positive("mac_pJ", mac_pJ)
    words = _positive("bytes_per_element", bytes_per_element) / WORD_BYTES
    lr, cr = _positive("local_reuse", local_reuse), _positive("onchip_reuse", onchip_reuse)
    if not (isinstance(dram_reuse, (int, float)) and dram_reuse > 0):
        raise ValueError(f"dram_reuse must be a positive number or math.inf, got {dram_reuse!r}")
    dram = 0.0 if math.isinf(dram_reuse) else _positive("dram_pJ_per_word", dram_pJ_per_word) * words / dram_reuse
    return MacEnergy(m, _positive("local_pJ_per_word", local_pJ_per_word) * words / lr,
                     _positive("onchip_pJ_per_word", onchip_pJ_per_word) * words / cr, dram)


def reuse_for_breakdown(mac_pJ: float, bytes_per_element: float, breakdown: dict = SEED002_BREAKDOWN, *,
                        local_pJ_per_word: float = SRAM_LOCAL_8KB_pJ_PER_WORD,
                        onchip_pJ_per_word: float = ON_CHIP_SRAM_pJ_PER_WORD) -> tuple[float, float]:
    """The (local, on-chip) reuse that makes :func:`mac_energy` give ``breakdown``'s shares.

    From memories / math = (local pJ x bytes / 4) / (reuse x mac pJ), solved for the reuse; likewise for
    data movement.

    Raises:
        ValueError: a share that is not positive, or shares that do not add up to 1.
    """
    missing = {"math", "memories", "data movement"} - set(breakdown)
    if missing:
        raise ValueError(f"breakdown must give shares for 'math', 'memories' and 'data movement'; "
                         f"{sorted(missing)} missing in {breakdown!r}")
    shares = {k: _positive(f"breakdown[{k!r}]", breakdown[k]) for k in ("math", "memories", "data movement")}
    if abs(sum(breakdown.values()) - 1) > 1e-9:
        raise ValueError(f"breakdown shares must add up to 1, got {breakdown!r} (sum {sum(breakdown.values())})")
    m, words = _positive("mac_pJ", mac_pJ), _positive("bytes_per_element", bytes_per_element) / WORD_BYTES
    local = _positive("local_pJ_per_word", local_pJ_per_word) * words / (m * shares["memories"] / shares["math"])
    onchip = _positive("onchip_pJ_per_word", onchip_pJ_per_word) * words / (
        m * shares["data movement"] / shares["math"])
    return local, onchip


BREAKDOWN_PRECISIONS = {"int8 (IMMA)": (IMMA, 1), "fp16 (HMMA)": (HMMA, 2)}  # MAC energy from, bytes/element
