"""Measured gaps between kinds of chips: FPGA against ASIC, and the TPU v1 against the GPU and CPU of its day.

Dally's 2018 talk puts an FPGA built from lookup tables at "about 100x" an ASIC. Kuon and Rose measured the
gap on the same designs implemented both ways (90 nm FPGA vs 90 nm standard-cell ASIC):

* "Measuring the Gap between FPGAs and ASICs", FPGA 2006: area about 40x (about 21x when the FPGA's hard
  multiplier and memory blocks are used), critical-path delay 3-4x, dynamic power about 12x;
* the journal version, IEEE Transactions on Computer-Aided Design (TCAD) 26(2), 2007: area about 35x (as
  little as 18x with hard blocks), delay 3-4x, dynamic power about 14x.

Energy per operation compares dynamic power at equal work, so the power ratio, not the area ratio, is the
one to set against a GPU's energy. Area times delay (silicon per unit of throughput) is what "~100x" fits.

>>> round(fpga_energy_advantage_of_gpu(1.273, KUON_ROSE_TCAD2007), 1)
11.0
"""

from __future__ import annotations

from dataclasses import dataclass

from scaledl._args import positive as _positive


@dataclass(frozen=True)
class FpgaAsicGap:
    """One measurement of how much an FPGA implementation costs relative to the same design as an ASIC."""

    source: str
    area: float  # logic in lookup tables only
    area_with_hard_blocks: float  # using the FPGA's hard multipliers and block memories
    delay_low: float
    delay_high: float
    dynamic_power: float

    @property
    def delay(self) -> tuple[float, float]:
        """The delay gap as (low, high): FPGA critical paths were this many times the ASIC's."""
        return self.delay_low, self.delay_high

    @property
    def area_delay_low(self) -> float:
        """Silicon per unit of throughput (area x delay), best case: hard blocks and the smaller delay gap."""
        return self.area_with_hard_blocks * self.delay_low

    @property
    def area_delay_high(self) -> float:
        """Silicon per unit of throughput, worst case: LUTs only and the larger delay gap."""
        return self.area * self.delay_high


# Kuon and Rose, "Measuring the Gap between FPGAs and ASICs", FPGA 2006 (ACM/SIGDA), 90 nm.
KUON_ROSE_FPGA2006 = FpgaAsicGap("Kuon and Rose, FPGA 2006", 40.0, 21.0, 3.0, 4.0, 12.0)
# Kuon and Rose, same title, IEEE Trans. Computer-Aided Design 26(2), 2007.
KUON_ROSE_TCAD2007 = FpgaAsicGap("Kuon and Rose, IEEE TCAD 2007", 35.0, 18.0, 3.0, 4.0, 14.0)
KUON_ROSE = (KUON_ROSE_FPGA2006, KUON_ROSE_TCAD2007)
TALK_FPGA_OVER_ASIC = 100.0  # Dally, ScaledML 2018: LUT-based FPGA "~100x" an ASIC (unmeasured rule of thumb)


def fpga_energy_advantage_of_gpu(gpu_over_asic: float, gap: FpgaAsicGap) -> float:
    """How many times less energy a GPU spends than an FPGA on the same arithmetic, when the GPU spends
    ``gpu_over_asic`` times an ideal ASIC's energy and the FPGA ``gap.dynamic_power`` times it."""
    return gap.dynamic_power / _positive("gpu_over_asic", gpu_over_asic)


# --- TPU v1 against Haswell and the K80 (Kepler), per die, from Table 2 of Jouppi et al., "In-Datacenter
# --- Performance Analysis of a Tensor Processing Unit", ISCA 2017. Peak rates; "busy" is measured power.
@dataclass(frozen=True)
class Chip:
    """Peak arithmetic of one die and its measured power when busy (Jouppi et al. 2017, Table 2)."""

    name: str
    peak_TOPS: float
    precision: str  # the precision of that peak
    busy_W: float

    @property
    def TOPS_per_W(self) -> float:
        return self.peak_TOPS / self.busy_W


TPU_V1 = Chip("TPU v1 (28 nm)", 92.0, "int8", 40.0)
K80_DIE = Chip("K80 die (Kepler, 28 nm)", 2.8, "fp32", 98.0)
HASWELL_DIE = Chip("Haswell E5-2699 v3 (22 nm)", 1.3, "fp32", 145.0)  # 2.6 TOPS in 8-bit integer
HASWELL_INT8_TOPS = 2.6


def peak_efficiency_ratio(a: Chip, b: Chip) -> float:
    """Peak operations per joule of ``a`` over ``b`` (peak rate divided by measured busy power)."""
    return a.TOPS_per_W / b.TOPS_per_W
