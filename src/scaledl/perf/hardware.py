"""A table of GPUs from Fermi (2010) to Hopper (2024): one frozen spec object per device, each number cited.

Every rate is the *dense* peak the vendor publishes, in TFLOP/s (TOPS for int8), at the clock the datasheet
quotes. Tensor-core rates are marked as such in ``tensor_core``; where a device supports 2:4 structured
sparsity (Ampere, Hopper) the sparse rate is twice the dense one for its tensor-core precisions and is
obtained with ``peak_TFLOPS(p, sparse=True)``, never stored. A precision the device cannot run at a useful
rate, or whose rate its datasheet does not give, is ``None``: a gap is better than a guess.

>>> h100 = get("H100 SXM")
>>> h100.peak_TFLOPS("fp16"), h100.peak_TFLOPS("fp16", sparse=True)
(989.5, 1979.0)
>>> round(h100.ridge_point_FLOP_per_byte("fp16"))
295
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["PRECISIONS", "TRAINING_PRECISIONS", "Device", "get", "devices", "names", "VARIANTS", "HBM_SITES_GH100",
           "HBM3_STACK_GB", "GH200_H100_MEMORY_GB", "GH100_SXM_SMS", "GH100_FLOP_PER_SM_CLOCK", "quoted_clock_GHz",
           "peak_at_clock_TFLOPS"]

# Precisions from widest to narrowest; int8 is an integer rate (TOPS), the rest floating point (TFLOP/s).
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
# What a training run would use, best first (fp8 training needs extra care, so it is not a default here).
TRAINING_PRECISIONS = ("bf16", "fp16", "tf32", "fp32")

# Memory configurations of the H100 (GH100) outside the device table. The package has six HBM3 sites of
# 16 GB each; the H100 SXM enables five (80 GB). All six ship on the H100 of the GH200 Grace Hopper
# Superchip: "96GB HBM3" (NVIDIA GH200 Grace Hopper Superchip datasheet, 2023; a later version carries
# 144 GB of HBM3e), and the H100 NVL card lists 94 GB (its datasheet column, in the table below).
HBM_SITES_GH100 = 6
HBM3_STACK_GB = 16
GH200_H100_MEMORY_GB = 96

# What one GH100 SM does per clock (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022): 128 FP32 lanes,
# one FMA (2 FLOPs) each; four tensor cores of 512 dense FP16 multiply-adds each, half that in TF32, twice in
# FP8 and int8. The SXM parts (H100 SXM, H200 SXM) enable 132 SMs. A datasheet rate divided by SMs x this is
# the clock the rate was quoted at (quoted_clock_GHz): not the same for every precision.
GH100_SXM_SMS = 132
GH100_FLOP_PER_SM_CLOCK = {"fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192, "int8": 8192}
_GH100_SXM = ("H100 SXM", "H200 SXM")


@dataclass(frozen=True)
class Device:
    """One GPU's published specification.

    Rates are dense peaks (None: not offered, or not in the datasheet). ``tensor_core`` names the precisions
    whose rate is a tensor-core (matrix instruction) rate; the others run on the ordinary CUDA cores.
    ``sparse_2to4`` says whether 2:4 structured sparsity doubles the tensor-core rates.
    """

    name: str
    architecture: str
    chip: str
    year: int  # first shipped
    process: str  # foundry node as the vendor names it
    process_nm: float  # nominal feature size, for plots
    fp64_TFLOPS: float | None
    fp32_TFLOPS: float | None
    tf32_TFLOPS: float | None
    fp16_TFLOPS: float | None
    bf16_TFLOPS: float | None
    fp8_TFLOPS: float | None
    int8_TOPS: float | None
    tensor_core: frozenset[str]
    sparse_2to4: bool
    memory_bandwidth_GBps: float
    memory_GB: float
    power_W: float  # board power / maximum TDP
    citation: str
    nvlink_GBps: float | None = None  # total NVLink bandwidth per GPU, both directions
    note: str = ""
    aliases: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self):
        for p in PRECISIONS:
            v = self._rate(p)
            if v is not None and not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                raise ValueError(f"{self.name}: {p} rate must be a positive number or None, got {v!r}")
        unknown = set(self.tensor_core) - set(PRECISIONS)
        if unknown:
            raise ValueError(f"{self.name}: tensor_core names unknown precisions {sorted(unknown)}")
        missing = [p for p in self.tensor_core if self._rate(p) is None]
        if missing:
            raise ValueError(f"{self.name}: tensor_core lists {missing} but no rate is given for them")
        if self.sparse_2to4 and not self.tensor_core:
            raise ValueError(f"{self.name}: 2:4 sparsity doubles tensor-core rates, but none are given")
        for attr in ("memory_bandwidth_GBps", "memory_GB", "power_W", "process_nm"):
            if not getattr(self, attr) > 0:
                raise ValueError(f"{self.name}: {attr} must be > 0, got {getattr(self, attr)!r}")
        if not self.citation.strip():
            raise ValueError(f"{self.name}: every entry needs a citation")

    def _rate(self, precision: str) -> float | None:
        return getattr(self, f"{precision}_TOPS" if precision == "int8" else f"{precision}_TFLOPS")

    @property
    def precisions(self) -> tuple[str, ...]:
        """The precisions this device has a rate for, widest first."""
        return tuple(p for p in PRECISIONS if self._rate(p) is not None)

    @property
    def best_training_precision(self) -> str:
        """The fastest of bf16, fp16, tf32, fp32 that the device offers (ties go to the first listed)."""
        offered = [p for p in TRAINING_PRECISIONS if self._rate(p) is not None]
        return max(offered, key=lambda p: (self._rate(p), -TRAINING_PRECISIONS.index(p)))

    def peak_TFLOPS(self, precision: str, *, sparse: bool = False) -> float:
        """Peak rate in TFLOP/s (TOPS for int8); ``sparse=True`` applies 2:4 sparsity where it exists.

        Raises:
            ValueError: ``precision`` is unknown or has no rate on this device, or ``sparse=True`` where the
                device has no 2:4 sparsity for that precision.
        """
        if precision not in PRECISIONS:
            raise ValueError(f"precision={precision!r} is not one of {PRECISIONS}")
        rate = self._rate(precision)
        if rate is None:
            raise ValueError(f"precision={precision!r}: {self.name} has no published {precision} rate; "
                             f"it has {', '.join(self.precisions)}")
        if sparse:
            if not (self.sparse_2to4 and precision in self.tensor_core):
                raise ValueError(f"sparse=True: {self.name} has no 2:4 sparse {precision} rate")
            return 2 * rate
        return rate

    def ridge_point_FLOP_per_byte(self, precision: str, *, sparse: bool = False) -> float:
        """Arithmetic intensity (FLOP per byte of DRAM traffic) above which the device is compute bound."""
        return self.peak_TFLOPS(precision, sparse=sparse) * 1e12 / (self.memory_bandwidth_GBps * 1e9)

    def efficiency_TFLOPS_per_W(self, precision: str, *, sparse: bool = False) -> float:
        """Peak rate per watt of board power (TFLOP/s per W, i.e. TFLOP per joule)."""
        return self.peak_TFLOPS(precision, sparse=sparse) / self.power_W


def _tc(*precisions: str) -> frozenset[str]:
    return frozenset(precisions)


_NO_TC = frozenset()

# Rates are as printed in each datasheet; where a datasheet prints only the sparse figure (Hopper), the
# dense one is half of it, which is how NVIDIA defines the sparse figure.
_DEVICES = (
    Device("GTX 580", "Fermi", "GF110", 2010, "TSMC 40 nm", 40,
           fp64_TFLOPS=0.198, fp32_TFLOPS=1.581, tf32_TFLOPS=None, fp16_TFLOPS=None, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=192.4, memory_GB=3.0, power_W=244,
           citation="NVIDIA GeForce GTX 580 specifications (2010): 512 CUDA cores at 1544 MHz, 192.4 GB/s, 244 W",
           note="fp32 = 512 cores x 2 FLOP x 1.544 GHz; fp64 is 1/8 of it on GeForce GF110. The reference "
                "board has 1.5 GB; AlexNet (Krizhevsky et al. 2012) used two 3 GB boards, listed here.",
           aliases=("GTX580",)),
    Device("K20X", "Kepler", "GK110", 2012, "TSMC 28 nm", 28,
           fp64_TFLOPS=1.31, fp32_TFLOPS=3.95, tf32_TFLOPS=None, fp16_TFLOPS=None, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=250, memory_GB=6, power_W=235,
           citation="NVIDIA Tesla K20X GPU accelerator datasheet (2012)",
           note="Kepler has no fp16 or int8 arithmetic instructions: everything ran in fp32.",
           aliases=("Tesla K20X",)),
    Device("K40", "Kepler", "GK110B", 2013, "TSMC 28 nm", 28,
           fp64_TFLOPS=1.43, fp32_TFLOPS=4.29, tf32_TFLOPS=None, fp16_TFLOPS=None, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=288, memory_GB=12, power_W=235,
           citation="NVIDIA Tesla K40 GPU accelerator datasheet (2013)",
           note="The datasheet's headline rates are at the 745 MHz base clock; at the 875 MHz GPU Boost "
                "clock the 2880 cores give 5.04 TFLOP/s fp32.",
           aliases=("Tesla K40",)),
    Device("K80", "Kepler", "2x GK210", 2014, "TSMC 28 nm", 28,
           fp64_TFLOPS=2.91, fp32_TFLOPS=8.73, tf32_TFLOPS=None, fp16_TFLOPS=None, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=480, memory_GB=24, power_W=300,
           citation="NVIDIA Tesla K80 GPU accelerator datasheet (2014)",
           note="Two GPUs on one board: rates, memory (2 x 12 GB) and bandwidth (2 x 240 GB/s) are per "
                "board. Headline rates are with GPU Boost (up to 875 MHz).",
           aliases=("Tesla K80",)),
    Device("GTX Titan X", "Maxwell", "GM200", 2015, "TSMC 28 nm", 28,
           fp64_TFLOPS=0.21, fp32_TFLOPS=6.6, tf32_TFLOPS=None, fp16_TFLOPS=None, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=336.5, memory_GB=12, power_W=250,
           citation="NVIDIA GeForce GTX TITAN X specifications (2015): 3072 CUDA cores, 1000/1075 MHz "
                    "base/boost, 7 Gbps GDDR5 on 384 bits, 250 W",
           note="No rate is printed on the spec page: fp32 = 3072 x 2 FLOP x 1.075 GHz (boost), fp64 = 1/32 "
                "of it; 7 Gbps x 384 bit / 8 = 336 GB/s. The GPU of Baidu SVAIL's talk (seed 001).",
           aliases=("Titan X", "TitanX", "GTX TITAN X (Maxwell)")),
    Device("M40", "Maxwell", "GM200", 2015, "TSMC 28 nm", 28,
           fp64_TFLOPS=None, fp32_TFLOPS=7.0, tf32_TFLOPS=None, fp16_TFLOPS=None, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=288, memory_GB=12, power_W=250,
           citation="NVIDIA Tesla M40 GPU accelerator datasheet (2015)",
           note="fp64 (1/32 rate) is not given in the datasheet, so it is left out.",
           aliases=("Tesla M40",)),
    Device("P100 SXM2", "Pascal", "GP100", 2016, "TSMC 16 nm FinFET", 16,
           fp64_TFLOPS=5.3, fp32_TFLOPS=10.6, tf32_TFLOPS=None, fp16_TFLOPS=21.2, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=732, memory_GB=16, power_W=300, nvlink_GBps=160,
           citation="NVIDIA Tesla P100 datasheet (2016), SXM2 (NVLink) version",
           note="fp16 runs as packed half2 on the CUDA cores (no tensor cores yet). int8 dot products "
                "(DP4A) came with the smaller Pascal chips, e.g. the P40.",
           aliases=("P100", "Tesla P100")),
    Device("P40", "Pascal", "GP102", 2016, "TSMC 16 nm FinFET", 16,
           fp64_TFLOPS=None, fp32_TFLOPS=12.0, tf32_TFLOPS=None, fp16_TFLOPS=None, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=47.0, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=346, memory_GB=24, power_W=250,
           citation="NVIDIA Tesla P40 inferencing accelerator datasheet (2016)",
           note="int8 via the DP4A 4-way dot-product instruction on the CUDA cores. GP102's fp16 and fp64 "
                "run at a small fraction of fp32 and are not in the datasheet.",
           aliases=("Tesla P40",)),
    Device("V100 SXM2", "Volta", "GV100", 2017, "TSMC 12 nm FFN", 12,
           fp64_TFLOPS=7.8, fp32_TFLOPS=15.7, tf32_TFLOPS=None, fp16_TFLOPS=125.0, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_tc("fp16"), sparse_2to4=False,
           memory_bandwidth_GBps=900, memory_GB=32, power_W=300, nvlink_GBps=300,
           citation="NVIDIA Tesla V100 GPU accelerator datasheet (2017/2018), SXM2 version",
           note="fp16 is the tensor-core rate (fp16 multiply, fp32 accumulate). 16 GB at launch, 32 GB "
                "from 2018. int8 (DP4A on CUDA cores) is not in the datasheet, so it is left out.",
           aliases=("V100", "Tesla V100")),
    Device("T4", "Turing", "TU104", 2018, "TSMC 12 nm FFN", 12,
           fp64_TFLOPS=None, fp32_TFLOPS=8.1, tf32_TFLOPS=None, fp16_TFLOPS=65.0, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=130.0, tensor_core=_tc("fp16", "int8"), sparse_2to4=False,
           memory_bandwidth_GBps=320, memory_GB=16, power_W=70,
           citation="NVIDIA T4 tensor core GPU datasheet (2018)",
           note="Inference card; also 260 TOPS int4. fp64 is not in the datasheet.",
           aliases=("Tesla T4",)),
    Device("A100 SXM4 80GB", "Ampere", "GA100", 2020, "TSMC 7 nm (N7)", 7,
           fp64_TFLOPS=19.5, fp32_TFLOPS=19.5, tf32_TFLOPS=156.0, fp16_TFLOPS=312.0, bf16_TFLOPS=312.0,
           fp8_TFLOPS=None, int8_TOPS=624.0, tensor_core=_tc("fp64", "tf32", "fp16", "bf16", "int8"),
           sparse_2to4=True, memory_bandwidth_GBps=2039, memory_GB=80, power_W=400, nvlink_GBps=600,
           citation="NVIDIA A100 tensor core GPU datasheet (2021), A100 80GB SXM column",
           note="fp64 is the tensor-core rate; fp64 on the CUDA cores is 9.7 TFLOP/s. 2:4 sparsity "
                "doubles tf32/fp16/bf16/int8 (the datasheet's starred figures); sparse fp64 does not exist.",
           aliases=("A100",)),
    Device("H100 SXM", "Hopper", "GH100", 2022, "TSMC 4N (5 nm class)", 5,
           fp64_TFLOPS=67.0, fp32_TFLOPS=67.0, tf32_TFLOPS=494.5, fp16_TFLOPS=989.5, bf16_TFLOPS=989.5,
           fp8_TFLOPS=1979.0, int8_TOPS=1979.0, tensor_core=_tc("fp64", "tf32", "fp16", "bf16", "fp8", "int8"),
           sparse_2to4=True, memory_bandwidth_GBps=3350, memory_GB=80, power_W=700, nvlink_GBps=900,
           citation="NVIDIA H100 tensor core GPU datasheet (2022/2023), H100 SXM column",
           note="The datasheet prints sparse tensor rates (tf32 989, fp16/bf16 1979, fp8/int8 3958); dense "
                "is half (the whitepaper gives 494.7/989.4/1978.9 at 1830 MHz). fp64 is the tensor-core "
                "rate (34 on CUDA cores). The package carries six HBM3 sites (6 x 16 GB = 96 GB); five are "
                "enabled on the SXM part, hence 80 GB. All six ship on the GH200's H100 (96 GB, see "
                "GH200_H100_MEMORY_GB) and, as 94 GB, on the H100 NVL.",
           aliases=("H100", "H100 SXM5")),
    Device("H100 PCIe", "Hopper", "GH100", 2022, "TSMC 4N (5 nm class)", 5,
           fp64_TFLOPS=51.0, fp32_TFLOPS=51.0, tf32_TFLOPS=378.0, fp16_TFLOPS=756.5, bf16_TFLOPS=756.5,
           fp8_TFLOPS=1513.0, int8_TOPS=1513.0, tensor_core=_tc("fp64", "tf32", "fp16", "bf16", "fp8", "int8"),
           sparse_2to4=True, memory_bandwidth_GBps=2000, memory_GB=80, power_W=350, nvlink_GBps=600,
           citation="NVIDIA H100 tensor core GPU datasheet (2022), H100 PCIe column",
           note="Max TDP 300-350 W (the upper end is listed). HBM2e. NVLink through a bridge to one "
                "neighbour. Dense rates are half the datasheet's sparse ones.",
           aliases=()),
    Device("H100 NVL", "Hopper", "GH100", 2023, "TSMC 4N (5 nm class)", 5,
           fp64_TFLOPS=60.0, fp32_TFLOPS=60.0, tf32_TFLOPS=417.5, fp16_TFLOPS=835.5, bf16_TFLOPS=835.5,
           fp8_TFLOPS=1670.5, int8_TOPS=1670.5, tensor_core=_tc("fp64", "tf32", "fp16", "bf16", "fp8", "int8"),
           sparse_2to4=True, memory_bandwidth_GBps=3900, memory_GB=94, power_W=400, nvlink_GBps=600,
           citation="NVIDIA H100 tensor core GPU datasheet (2023), H100 NVL column (per GPU)",
           note="A PCIe card with six HBM3 stacks enabled: 94 GB. Max TDP 350-400 W (upper end listed).",
           aliases=()),
    Device("H200 SXM", "Hopper", "GH100", 2024, "TSMC 4N (5 nm class)", 5,
           fp64_TFLOPS=67.0, fp32_TFLOPS=67.0, tf32_TFLOPS=494.5, fp16_TFLOPS=989.5, bf16_TFLOPS=989.5,
           fp8_TFLOPS=1979.0, int8_TOPS=1979.0, tensor_core=_tc("fp64", "tf32", "fp16", "bf16", "fp8", "int8"),
           sparse_2to4=True, memory_bandwidth_GBps=4800, memory_GB=141, power_W=700, nvlink_GBps=900,
           citation="NVIDIA H200 tensor core GPU datasheet (2024), H200 SXM column",
           note="The H100's die and clocks with 141 GB of HBM3e at 4.8 TB/s: same FLOP/s, 1.43x the "
                "bandwidth, so a lower ridge point.",
           aliases=("H200",)),
)

# Other parts of the same chips, which the record runs of chapter 16 used. They are found by get() but kept out
# of devices(), the one-part-per-generation table that chapters 01 and 03 plot.
VARIANTS = (
    Device("P100 PCIe 16GB", "Pascal", "GP100", 2016, "TSMC 16 nm FinFET", 16,
           fp64_TFLOPS=4.7, fp32_TFLOPS=9.3, tf32_TFLOPS=None, fp16_TFLOPS=18.7, bf16_TFLOPS=None,
           fp8_TFLOPS=None, int8_TOPS=None, tensor_core=_NO_TC, sparse_2to4=False,
           memory_bandwidth_GBps=732, memory_GB=16, power_W=250,
           citation="NVIDIA Tesla P100 datasheet (2016), PCIe version (16 GB column)",
           note="The P100 SXM2's chip at lower clocks (1,303 MHz boost against 1,480) and 250 W, on PCIe 3.0 "
                "x16 with no NVLink; the 12 GB card has 549 GB/s.",
           aliases=("P100 PCIe",)),
    Device("A100 SXM4 40GB", "Ampere", "GA100", 2020, "TSMC 7 nm (N7)", 7,
           fp64_TFLOPS=19.5, fp32_TFLOPS=19.5, tf32_TFLOPS=156.0, fp16_TFLOPS=312.0, bf16_TFLOPS=312.0,
           fp8_TFLOPS=None, int8_TOPS=624.0, tensor_core=_tc("fp64", "tf32", "fp16", "bf16", "int8"),
           sparse_2to4=True, memory_bandwidth_GBps=1555, memory_GB=40, power_W=400, nvlink_GBps=600,
           citation="NVIDIA A100 tensor core GPU datasheet (2021), A100 40GB SXM column",
           note="The 80 GB part's rates with HBM2 instead of HBM2e: 1,555 GB/s against 2,039.",
           aliases=("A100 40GB",)),
)

_BY_NAME = {}
for _d in _DEVICES + VARIANTS:
    for _key in (_d.name, *_d.aliases):
        _k = _key.casefold()
        assert _k not in _BY_NAME, f"duplicate device name or alias {_key!r}"
        _BY_NAME[_k] = _d


def devices() -> tuple[Device, ...]:
    """Every device in the table, oldest first."""
    return _DEVICES


def names() -> tuple[str, ...]:
    """The canonical names, oldest first."""
    return tuple(d.name for d in _DEVICES)


def get(name: str | Device) -> Device:
    """The device called ``name`` (case-insensitive; short aliases such as "A100" work); a Device passes.

    Raises:
        TypeError: ``name`` is neither a string nor a Device.
        ValueError: no device has that name; the message lists the known ones.
    """
    if isinstance(name, Device):
        return name
    if not isinstance(name, str):
        raise TypeError(f"device must be a device name (str) or a Device, got {name!r} ({type(name).__name__})")
    try:
        return _BY_NAME[name.strip().casefold()]
    except KeyError:
        raise ValueError(f"device={name!r} is not in the hardware table; known devices: "
                         f"{', '.join(names() + tuple(d.name for d in VARIANTS))}") from None


def quoted_clock_GHz(name: str | Device, precision: str) -> float:
    """The clock (GHz) at which the datasheet quotes ``precision``'s rate: the rate over SMs x FLOPs per SM per
    clock. Known for the GH100 SXM parts only, where it differs by precision: FP32 at the 1.98 GHz boost clock,
    the tensor-core rates at 1.83 GHz.

    >>> round(quoted_clock_GHz("H200", "fp32"), 2), round(quoted_clock_GHz("H200", "tf32"), 2)
    (1.98, 1.83)

    Raises:
        ValueError: a device other than H100 SXM or H200 SXM, or a precision without a per-SM figure.
    """
    d = get(name)
    if d.name not in _GH100_SXM:
        raise ValueError(f"device={d.name!r}: clocks per precision are known for {', '.join(_GH100_SXM)} only")
    if precision not in GH100_FLOP_PER_SM_CLOCK:
        raise ValueError(f"precision={precision!r}: no FLOPs per SM per clock for it; known: "
                         f"{', '.join(GH100_FLOP_PER_SM_CLOCK)}")
    return d.peak_TFLOPS(precision) * 1e3 / (GH100_SXM_SMS * GH100_FLOP_PER_SM_CLOCK[precision])


def peak_at_clock_TFLOPS(name: str | Device, precision: str, clock_GHz: float) -> float:
    """``precision``'s datasheet rate moved to ``clock_GHz``: the rate scales with the clock. Used to compare
    rates quoted at different clocks on one basis.

    >>> round(peak_at_clock_TFLOPS("H200", "fp32", quoted_clock_GHz("H200", "tf32")), 1)
    61.8

    Raises:
        ValueError: as :func:`quoted_clock_GHz`, or a clock that is not a positive finite number.
    """
    if isinstance(clock_GHz, bool) or not isinstance(clock_GHz, (int, float)) or not (
            math.isfinite(clock_GHz) and clock_GHz > 0):
        raise ValueError(f"clock_GHz must be a positive number, got {clock_GHz!r}")
    return get(name).peak_TFLOPS(precision) * clock_GHz / quoted_clock_GHz(name, precision)
