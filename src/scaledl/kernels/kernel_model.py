"""A GEMM kernel's fraction of the FP32 peak, predicted from its static facts (no GPU): the smallest of three ceilings.

The facts come from ``scaledl kernels report`` (:mod:`scaledl.kernels.static_report`: warps per SM, the FFMA
share of the inner loop, the global bytes a thread has in flight) and from the tiling
(:mod:`scaledl.kernels.gemm_traffic`: global and shared traffic per FLOP). The ceilings, each a fraction of
the FP32 peak (``PEAK``: one FFMA per lane per cycle, 4 schedulers x 32 lanes per SM):

* **issue**: a scheduler issues one instruction per cycle, and only the inner loop's FFMAs do the work, so the
  rate is at most its FFMA share of the issued instructions.
* **latency** (Little's law, throughput = concurrency / time per item): each scheduler holds
  ``warps_per_sm / 4`` warps; a warp's item is one tile (``ffma_per_tile`` FFMAs), which takes
  ``rounds = ceil(bytes_per_tile / bytes_in_flight)`` memory round trips of ``MEMORY_LATENCY_CYCLES`` each,
  plus the issue time of the warps that wait with it at the block's barrier (``warps_per_block / 4`` of
  them on the scheduler, ``ffma_per_tile / ffma_share`` cycles each). Without a prefetch the two add up;
  with one (the next tile's loads in flight across the FFMA loop) the larger wins. A kernel without a barrier
  is the same with groups of one warp.
* **bandwidth**: DRAM (``compulsory`` bytes per FLOP: each matrix once; the L2, 50 MB on an H100/H200, keeps
  the tiles a wave re-reads, and Nsight measured DRAM 0.6 % busy under v3) against the HBM's bandwidth, and
  shared memory (bytes per FLOP from :func:`~scaledl.kernels.gemm_traffic.shared_traffic`) against the SM's
  ``SHARED_BYTES_PER_CYCLE``.

Held against the first H200 run (``H200_MEASURED``: v1, v2, v3 and lab 02's solution), the ceiling is above
every measurement, by 1.0x to 1.5x; ``CALIBRATION`` (their geometric mean, fitted on those four) turns a ceiling
into the expected rate. :func:`ladder_predictions` gives every GEMM variant's, for the next GPU run to check.

>>> f = KernelFacts("example", warps_per_sm=16, warps_per_block=8, ffma_share=0.5, ffma_per_tile=512,
...                 bytes_per_tile=32, bytes_in_flight=32, prefetch=False, barrier=True,
...                 shared_bytes_per_flop=0.53, dram_bytes_per_flop=0.0015)
>>> p = predict(f)
>>> p.limit, round(p.ceiling, 2)
('issue', 0.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scaledl.perf import hardware

__all__ = ["KernelFacts", "Prediction", "predict", "Measured", "H200_MEASURED", "CALIBRATION", "PEAK_TFLOPS",
           "CUBLAS_TFLOPS", "LADDER_FACTS", "ladder_predictions", "gemm_facts", "format_predictions",
           "MEMORY_LATENCY_CYCLES", "nm_gemm_facts", "NM_DENSE_PER_FMA", "NM_H200_MEASURED_TFLOPS", "NM_H200_SOURCE"]

DEVICE = hardware.get("H200 SXM")
PEAK_TFLOPS = DEVICE.peak_TFLOPS("fp32")  # 67: NVIDIA H200 datasheet (2024), boost clock
HBM_GBPS = DEVICE.memory_bandwidth_GBps  # 4800: the same datasheet
SMS = 132  # H100/H200 SXM: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022)
SCHEDULERS_PER_SM = 4  # the same whitepaper: four processing blocks per SM, each a warp scheduler and 32 FP32 lanes
FP32_LANES_PER_SM = 128
FLOP_PER_SM_CYCLE = 2 * FP32_LANES_PER_SM  # an FMA is two FLOPs
CLOCK_GHZ = PEAK_TFLOPS * 1e3 / (SMS * FLOP_PER_SM_CYCLE)  # 1.98: the boost clock the peak assumes
# CUDA C++ Programming Guide, "Shared Memory" (cc 5.x-9.0): 32 banks, each 32 bits wide, serving one request per
# cycle: 128 bytes per cycle per SM.
SHARED_BYTES_PER_CYCLE = 128
# An assumption, not a measurement: a global load that misses L1 returns after ~600 cycles (~300 ns at 1.98 GHz).
# Hopper microbenchmarks (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", 2024)
# report L2 and DRAM latencies of a few hundred cycles; 600 also covers the LDG -> STS -> barrier chain a tile
# load goes through. The v3 row of H200_MEASURED is the one that depends on it.
MEMORY_LATENCY_CYCLES = 600


@dataclass(frozen=True)
class KernelFacts:
    """What the model needs to know about a kernel, per thread unless said otherwise."""

    name: str
    warps_per_sm: int  # resident warps (static report: occupancy from registers and shared memory)
    warps_per_block: int
    ffma_share: float  # FFMAs / issued instructions in the inner loop (static report, SASS)
    ffma_per_tile: int  # FFMAs between two waits for memory: one tile of k (v1: one trip of its loop)
    bytes_per_tile: int  # global bytes loaded per tile
    bytes_in_flight: int  # global bytes issued before the first is used, at most (static report, SASS)
    prefetch: bool  # loads in flight across the FFMA loop (static report, SASS)
    barrier: bool  # a block barrier per tile: the block's warps wait for the slowest load together
    shared_bytes_per_flop: float  # gemm_traffic.shared_traffic
    dram_bytes_per_flop: float  # compulsory: each matrix once


@dataclass(frozen=True)
class Prediction:
    """The three ceilings of one kernel, as fractions of the FP32 peak."""

    name: str
    issue: float
    latency: float
    bandwidth: float

    @property
    def ceiling(self) -> float:
        return min(self.issue, self.latency, self.bandwidth)

    @property
    def limit(self) -> str:
        terms = {"issue": self.issue, "latency": self.latency, "bandwidth": self.bandwidth}
        return min(terms, key=terms.get)

    @property
    def expected(self) -> float:
        """The ceiling times CALIBRATION: what the H200 run suggests a kernel reaches of its ceiling."""
        return self.ceiling * CALIBRATION

    @property
    def expected_of_cublas(self) -> float:
        return self.expected * PEAK_TFLOPS / CUBLAS_TFLOPS


def predict(f: KernelFacts, latency_cycles: float = MEMORY_LATENCY_CYCLES) -> Prediction:
    """The three ceilings of ``f`` (see the module docstring).

    Raises:
        ValueError: a non-positive warp count, FFMA share or tile.
    """
    for name in ("warps_per_sm", "warps_per_block", "ffma_per_tile"):
        if getattr(f, name) <= 0:
            raise ValueError(f"{name} must be positive, got {getattr(f, name)!r}")
    if not 0 < f.ffma_share <= 1:
        raise ValueError(f"ffma_share must be in (0, 1], got {f.ffma_share!r}")
    issue = f.ffma_share
    issue_cycles = f.ffma_per_tile / f.ffma_share  # one warp's instructions per tile, one per cycle
    group = max(f.warps_per_block / SCHEDULERS_PER_SM, 1) if f.barrier else 1  # warps that wait together
    rounds = math.ceil(f.bytes_per_tile / f.bytes_in_flight) if f.bytes_in_flight else 0
    memory = rounds * latency_cycles
    cycles = max(memory, group * issue_cycles) if f.prefetch else memory + group * issue_cycles
    warps_per_scheduler = f.warps_per_sm / SCHEDULERS_PER_SM
    latency = warps_per_scheduler * f.ffma_per_tile / cycles  # FFMAs per scheduler-cycle; 1 is the peak
    dram = HBM_GBPS * 1e9 / (f.dram_bytes_per_flop * PEAK_TFLOPS * 1e12) if f.dram_bytes_per_flop else math.inf
    shared = (SHARED_BYTES_PER_CYCLE / (f.shared_bytes_per_flop * FLOP_PER_SM_CYCLE)
              if f.shared_bytes_per_flop else math.inf)
    return Prediction(f.name, issue, latency, min(dram, shared))


# ------------------------------------------------------------------------------------- the H200 run
@dataclass(frozen=True)
class Measured:
    """A kernel timed on the H200 of docs/gpu-runs/2026-11-26-nvidia-h200, with its static facts."""

    facts: KernelFacts
    tflops: float
    source: str

    @property
    def fraction_of_peak(self) -> float:
        return self.tflops / PEAK_TFLOPS


CUBLAS_TFLOPS = 50.4184  # report.md, bench: cuBLAS SGEMM (CuPy) 4096^3, 50,418.4 GFLOP/s (75 % of the peak)
_DRAM_4096 = 3 * 4096**2 * 4 / (2 * 4096**3)  # A, B read and C written once, over 2 n^3 FLOPs
_RUN = "docs/gpu-runs/2026-11-26-nvidia-h200/"
# Static facts at sm_90 (tests/sim/test_kernel_model_facts.py checks each against scaledl kernels report).
H200_MEASURED = (
    Measured(KernelFacts("gemm_v1_naive", 64, 8, 4 / 144, 4, 32, 32, False, False, 0.0, _DRAM_4096),
             1.3248, _RUN + "report.md (bench: gemm naive 4096^3, 1,324.8 GFLOP/s)"),
    Measured(KernelFacts("gemm_v2_tiled", 64, 8, 16 / 96, 16, 8, 8, False, True, 4.25, _DRAM_4096),
             7.7906, _RUN + "report.md (bench: gemm tiled 4096^3, 7,790.6 GFLOP/s)"),
    Measured(KernelFacts("gemm_v3_regblock", 8, 8, 64 / 134, 512, 32, 4, False, True, 0.53125, _DRAM_4096),
             7.3962, _RUN + "report.md (bench: gemm regblock 4096^3, 7,396.2 GFLOP/s)"),
    Measured(KernelFacts("lab02_regblock", 24, 8, 16 / 55, 1024, 128, 16, False, True, 1.0625, _DRAM_4096),
             12.86, _RUN + "README.md (lab 02's solution, 64x64 patch, k-step 64: 12.86 TFLOP/s; a figure typed "
                    "from a notebook that was not kept, not a raw record, and timed apart from cuBLAS: the "
                    "weakest of the four points, which the next run re-measures beside cuBLAS)"),
)


def _geometric_mean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


# measured / ceiling over the H200 run: fitted on those four kernels, so it predicts nothing about them
CALIBRATION = _geometric_mean(m.fraction_of_peak / predict(m.facts).ceiling for m in H200_MEASURED)


# ------------------------------------------------------------------------------ facts of the ladder
# v4 to v8 at their GPU shape (128x128x8, 8x8 per thread, 256 threads) on sm_90, from `scaledl kernels report`
# (tests/sim/test_static_report.py checks each against it): what the next GPU run will test the model on.
LADDER_FACTS = (
    KernelFacts("gemm_v4_fixed_loads", 8, 8, 64 / 143, 512, 32, 28, False, True, 0.53125, _DRAM_4096),
    KernelFacts("gemm_v5_index32", 16, 8, 64 / 92, 512, 32, 28, False, True, 0.53125, _DRAM_4096),
    KernelFacts("gemm_v6_vec4", 16, 8, 64 / 82, 512, 32, 32, False, True, 0.53125, _DRAM_4096),
    KernelFacts("gemm_v7_unroll_k", 16, 8, 128 / 150, 512, 32, 32, False, True, 0.53125, _DRAM_4096),
    KernelFacts("gemm_v8_prefetch", 16, 8, 128 / 147, 512, 32, 32, True, True, 0.53125, _DRAM_4096),
)


def ladder_predictions() -> list[Prediction]:
    """A prediction for each GEMM variant v1 to v8 at 4096^3 on an H200 (v1 to v3 were also measured)."""
    return [predict(f) for f in (*(m.facts for m in H200_MEASURED[:3]), *LADDER_FACTS)]


def gemm_facts(report, variant: str, n: int = 4096) -> KernelFacts:
    """KernelFacts of a GEMM variant at its GPU launch shape from its static report (a
    :class:`~scaledl.kernels.static_report.KernelReport`), for an ``n^3`` product."""
    from scaledl.kernels.gemm import DEFAULT_TILING
    from scaledl.kernels.gemm_traffic import gemm_traffic, shared_traffic

    config = DEFAULT_TILING["cuda"][variant]
    tiling = {} if config is None else dict(config.__dict__)
    loop = report.loop
    if variant == "naive":  # no tile: a trip of its (unrolled) k loop, whose loads are inside it
        ffma, nbytes, barrier = loop.ffma, sum(w // 8 * k for w, k in loop.ldg.items()), False
    elif variant == "tiled":
        ffma, nbytes, barrier = config.tile, 2 * 4, True
    else:
        c = config
        ffma = c.block_k * c.thread_m * c.thread_n
        nbytes, barrier = 4 * (c.block_m * c.block_k + c.block_k * c.block_n) // c.threads_per_block, True
    traffic = gemm_traffic(n, n, n, variant, **tiling)
    return KernelFacts(report.name, report.warps_per_sm, -(-report.threads_per_block // 32), loop.ffma_share,
                       ffma, nbytes, report.in_flight.bytes, report.in_flight.over_inner_loop, barrier,
                       shared_traffic(variant, **tiling).bytes_per_flop, traffic.compulsory_bytes / traffic.flops)


# A 2:4 kernel skips two of every four multiply-adds, so each one it does stands for two of the dense product's:
# its fraction of the peak (predict) times this is its dense-equivalent rate, what scaledl bench reports.
NM_DENSE_PER_FMA = 2
# The 2:4 GEMM section of the same H200 run, at 4095 x 4095 x 4097 FP32: dense-equivalent rates (2 M N K FLOPs over
# the time, as the bench counts them) in TFLOP/s. The dense twin, the book's tiled GEMM on the decompressed matrix,
# was timed in the same process; chapter 12 holds nm_gemm_facts' predictions against these.
NM_H200_MEASURED_TFLOPS = {"gemm_v2_tiled": 7.698, "nm_gemm_v2_tiled": 2.708, "nm_gemm_v1": 1.115}
NM_H200_SOURCE = _RUN + "bench-new-sections.log (the nm section: 7,698, 2,708 and 1,115 GFLOP/s)"


def nm_gemm_facts(report, variant: str, n: int = 4096) -> KernelFacts:
    """KernelFacts of a 2:4 GEMM variant (:mod:`scaledl.kernels.nm_gemm`) at its GPU launch shape from its static
    report, for an ``n^3`` product with A 2:4-compressed; :func:`predict` then gives the fraction of the peak that
    the kernel's own multiply-adds reach (times :data:`NM_DENSE_PER_FMA`: its dense-equivalent rate).

    A tile is one step of the tiled kernels (v2: one metadata word a row, 8 multiply-adds a thread; v3:
    ``TILE_WORDS`` of them, 32), or one trip of v1's loop; its bytes are the global loads a thread issues per tile,
    on average (:func:`scaledl.kernels.nm_traffic.nm_gemm_traffic`), rounded up to a whole byte.
    """
    from scaledl.kernels.nm_gemm import K_STEP, PER_WORD, TILE, TILE_WORDS
    from scaledl.kernels.nm_traffic import WORD_BYTES, nm_gemm_traffic, nm_shared_traffic

    loop = report.loop
    kept = -(-n // 4) * 2
    words = -(-n // K_STEP)
    compulsory = (n * kept * 4 + n * words * WORD_BYTES + 2 * n * n * 4) / (2 * n * n * kept)
    if variant == "naive":  # no tile: a trip of its k loop, whose loads are inside it
        ffma, nbytes, barrier, shared = loop.ffma, sum(w // 8 * k for w, k in loop.ldg.items()), False, 0.0
    else:
        T = TILE["cuda"]
        columns = K_STEP if variant == "tiled" else TILE_WORDS * K_STEP  # dense columns of A per tile
        ffma = columns // 2
        traffic = nm_gemm_traffic(n, n, n, variant, tile=T)
        per_thread_tile = (-(-n // T)) ** 2 * (-(-n // columns)) * T * T
        nbytes, barrier = -(-traffic.load_bytes // per_thread_tile), True
        shared = nm_shared_traffic(variant, tile=T).bytes_per_flop
    assert variant == "naive" or ffma == (PER_WORD if variant == "tiled" else TILE_WORDS * PER_WORD)
    return KernelFacts(report.name, report.warps_per_sm, -(-report.threads_per_block // 32), loop.ffma_share, ffma,
                       nbytes, report.in_flight.bytes, report.in_flight.over_inner_loop, barrier, shared, compulsory)


def format_predictions(predictions) -> str:
    """A markdown table of predictions: ceilings, the binding one, expected fraction of the peak and of cuBLAS."""
    lines = ["| kernel | issue | latency | bandwidth | ceiling (limit) | expected | of cuBLAS |",
             "|---|---|---|---|---|---|---|"]
    for p in predictions:
        lines.append(f"| {p.name} | {p.issue:.0%} | {p.latency:.0%} | {p.bandwidth:.0%} | {p.ceiling:.0%} ({p.limit}) "
                     f"| {p.expected:.0%} ({p.expected * PEAK_TFLOPS:.1f} TFLOP/s) | {p.expected_of_cublas:.0%} |")
    return "\n".join(lines)
