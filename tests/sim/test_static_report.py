"""What the compiler makes of every GPU kernel of the book, pinned without a GPU (scaledl kernels report).

Each kernel is compiled at its GPU launch shape for sm_90 (PTX by numba-cuda, then ptxas -v and nvdisasm from
the nvidia-cuda-nvcc / nvidia-cuda-nvdisasm wheels of the dev extra). Pinned here: no kernel spills; v3 has
the registers and occupancy Nsight Compute measured on the H200 (docs/gpu-runs/2026-11-26-nvidia-h200); the
GEMM ladder's facts, and the goal for its fastest variant; the 2:4 GEMM's v2 against v3 (chapter 12); the quantize
kernels' float64 divisions (v1 has them, v2 and the book's kernel v3 none) and v3's loads in flight; the reductions'
loads in flight; the kernel model's inputs; the facts recorded in the
package for machines without the tools (static_report.recorded). Skipped, with the reason, where the tools or
libNVVM are missing.
"""

import fcntl
import importlib.util
import inspect
import json
import pickle
from pathlib import Path

import pytest

from scaledl.kernels import static_report as sr
from scaledl.kernels.gemm import VARIANTS
from scaledl.kernels.quantize import VARIANTS as QUANTIZE
from scaledl.kernels.quantize import quantize_gpu, quantize_into
from scaledl.kernels import kernel_model as km

pytestmark = pytest.mark.sim
HERE = Path(__file__).parent


def _report_or_why():
    try:
        return sr.report(arch="sm_90")
    except sr.ToolsMissing as err:
        return str(err)


@pytest.fixture(scope="module")
def sm90(tmp_path_factory, request):
    """``{kernel name: KernelReport}`` for every kernel of launch_table, at sm_90: one compile (~30 s of CPU),
    shared by the xdist workers of a run that split this file between them (``-n 2`` without loadfile)."""
    worker = getattr(request.config, "workerinput", {}).get("workerid")
    if worker is None:
        found = _report_or_why()
    else:  # the run's own temporary folder, the parent of every worker's: the first computes, the rest read
        shared = tmp_path_factory.getbasetemp().parent
        with open(shared / "static_report_sm90.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = shared / "static_report_sm90.pickle"
            if not data.exists():
                data.write_bytes(pickle.dumps(_report_or_why()))
            found = pickle.loads(data.read_bytes())
    if isinstance(found, str):
        pytest.skip(f"static report needs the CUDA tools: {found}")
    return {r.name: r for r in found}


def test_every_kernel_compiles_and_none_spills(sm90):
    errors = {n: r.error for n, r in sm90.items() if r.error}
    assert errors == {}
    spilled = {n: (r.spill_bytes, r.ptxas.stack_bytes, r.kernel.local) for n, r in sm90.items()
               if r.spill_bytes or r.ptxas.stack_bytes or r.kernel.local}
    assert spilled == {}, "spill bytes, stack frame, local loads/stores"


def test_v3_matches_the_h200_profile(sm90):
    # Nsight Compute on the H200 (after-ncu.txt): 196 registers per thread, block limit 1 by registers,
    # 8 active warps per SM (12.5 % occupancy), 8.32 KB of static shared memory
    v3 = sm90["gemm_v3_regblock"]
    assert (v3.registers, v3.threads_per_block, v3.ptxas.shared_bytes) == (196, 256, 8320)
    assert (v3.blocks_per_sm, v3.warps_per_sm, v3.occupancy.limited_by) == (1, 8, "registers")
    assert v3.in_flight.bytes == 4  # its tile loads: one float in flight at a time, the stall the profile saw


# (variant, blocks per SM, widest global load, shared loads per inner-loop trip, FFMA share at least,
#  global bytes in flight, prefetch)
LADDER = [
    ("fixed_loads", 1, 32, {32: 16}, 0.40, 28, False),  # loads first: 7 of a thread's 8 in flight
    ("index32", 2, 32, {32: 16}, 0.65, 28, False),  # <= 128 registers: two blocks of 256 threads
    ("vec4", 2, 128, {128: 4}, 0.75, 32, False),  # LDG.E.128 and LDS.128
    ("unroll_k", 2, 128, {128: 8}, 0.80, 32, False),  # two k steps a trip
    ("prefetch", 2, 128, {128: 8}, 0.80, 32, True),  # the next tile in flight across the FFMA loop
]


@pytest.mark.parametrize("variant,blocks,ldg,lds,share,in_flight,prefetch", LADDER)
def test_ladder_static_facts(sm90, variant, blocks, ldg, lds, share, in_flight, prefetch):
    r = sm90[f"gemm_v{VARIANTS.index(variant) + 1}_{variant}"]
    assert (r.threads_per_block, r.blocks_per_sm, r.warps_per_sm) == (256, blocks, 8 * blocks)
    assert r.kernel.widest_global_load == ldg and r.loop.lds == lds and r.loop.ldg == {}
    assert r.loop.ffma_share >= share and r.loop.ffma == (128 if variant in ("unroll_k", "prefetch") else 64)
    assert (r.in_flight.bytes, r.in_flight.over_inner_loop) == (in_flight, prefetch)


def test_fastest_variant_meets_the_goal(sm90):
    """At most 128 registers (two blocks of 256 threads per SM), no spills, 128-bit global loads."""
    fastest = sm90[f"gemm_v{len(VARIANTS)}_{VARIANTS[-1]}"]
    assert fastest.registers <= 128 and fastest.warps_per_sm >= 16 and fastest.spill_bytes == 0
    assert fastest.kernel.ldg.get(128, 0) >= 2  # a float4 of A and one of B per tile
    predictions = km.ladder_predictions()
    assert max(predictions, key=lambda p: p.expected).name == fastest.name


def test_kernel_model_facts_are_the_static_reports(sm90):
    """H200_MEASURED and LADDER_FACTS (what the model predicts from) are what the compiler makes today."""
    for facts in [m.facts for m in km.H200_MEASURED[:3]] + list(km.LADDER_FACTS):
        variant = facts.name.split("_", 2)[2]
        assert km.gemm_facts(sm90[facts.name], variant) == facts


def test_the_2_4_gemm_v2_lost_its_twin_and_v3_changes_why(sm90):
    """Chapter 12: the tiled 2:4 GEMM (v2) ran at 0.35x its dense twin on the H200
    (docs/gpu-runs/2026-11-26-nvidia-h200, bench-new-sections.log). Its report: fewer warps than the twin, 8 FFMAs
    a tile among hundreds of integer and address instructions, the tile loop full of branches (loops of
    thread-dependent length), one load at a time per array. v3: every load of a tile in flight, 32 FFMAs between
    two barriers, a tile loop of straight-line code (its one branch the back edge, so its static count is what a
    trip issues), more warps."""
    v2, v3, twin = sm90["nm_gemm_v2_tiled"], sm90["nm_gemm_v3_decoded"], sm90["gemm_v2_tiled"]
    assert (v2.registers, v2.warps_per_sm, v2.occupancy.limited_by) == (72, 24, "registers") and twin.warps_per_sm == 64
    assert v2.loop.ffma == 8 and v2.loop.opcodes["BRA"] >= 10 and v2.loop.integer_per_ffma > 50
    assert (v2.in_flight.loads, v2.in_flight.bytes) == (3, 12)  # a float of B, a value, a word
    assert v3.spill_bytes == 0 and v3.threads_per_block == 256 and v3.warps_per_sm >= 32
    # all eight loads of a tile in flight: 4 of B, 2 values, their 2 words
    assert v3.loop.ldg == {16: 2, 32: 6} and (v3.in_flight.loads, v3.in_flight.bytes) == (8, 28)
    assert v3.loop.ffma == 32 and v3.loop.opcodes["BRA"] == 1 and v3.loop.barriers == 2
    assert v3.loop.ffma_share > 10 * v2.loop.ffma_share and v3.loop.integer_per_ffma < 5


def test_quantize_v1_has_a_float64_division(sm90):
    """Why v2 exists: v1's ``a / ulp`` and ``r % 2`` divide in float64, a long sequence with a slow-path call."""
    v1 = sm90["quantize_v1_arith"]
    assert v1.ptx_f64_divisions == 2 and v1.kernel.opcodes.get("CALL", 0) >= 1


def _books_quantize_kernel() -> str:
    """The name, in the kernel table, of the kernel quantize_into (the bench's) and quantize_gpu launch."""
    default = inspect.signature(quantize_into).parameters["variant"].default
    assert inspect.signature(quantize_gpu).parameters["variant"].default == default
    return f"quantize_v{list(QUANTIZE).index(default) + 1}_{default}"


def test_the_books_quantize_kernel_has_no_float64_division(sm90):
    """No div.rn.f64 in the PTX, no slow-path call in the SASS; fails if a float64 division comes back into the
    kernel the book launches. Without them v2 is about half of v1's instructions."""
    name = _books_quantize_kernel()
    r, v1, v2 = sm90[name], sm90["quantize_v1_arith"], sm90["quantize_v2_pow2"]
    assert name != "quantize_v1_arith" and r.ptx_f64_divisions == 0 and r.kernel.opcodes.get("CALL", 0) == 0
    assert v2.kernel.instructions < 0.6 * v1.kernel.instructions and r.spill_bytes == 0


def test_the_books_quantize_kernel_has_four_loads_in_flight(sm90):
    """v3, the book's: four loads issued before the first element is rounded, 16 bytes a thread, as the copy kernel
    that reached 95 % of cudaMemcpy on the H200; v2 had one (4 bytes), like the one-element copy that reached 64-74 %.
    The four come from one trip of its loop (four loads, four stores), at full occupancy."""
    name = _books_quantize_kernel()
    r, v2, copy = sm90[name], sm90["quantize_v2_pow2"], sm90["copy"]
    assert name == "quantize_v3_four"
    assert (r.in_flight.loads, r.in_flight.bytes) == (4, 16) == (copy.in_flight.loads, copy.in_flight.bytes)
    assert (v2.in_flight.loads, v2.in_flight.bytes) == (1, 4)
    assert r.loop.ldg == {32: 4} and r.loop.stg == {32: 4} and r.warps_per_sm == 64 and r.spill_bytes == 0


def test_the_reductions_have_more_loads_in_flight_than_a_copy(sm90):
    """reduce.thread_sum: eight loads issued before the first add (32 bytes a thread, where the one-element range
    loop of the H200 run had 16, from the compiler's four-way unrolling), in 32-bit index arithmetic (at most 6
    instructions per element in its loop, where that loop had 19)."""
    copy = sm90["copy"]
    for name in ("sum_v1_shared", "sum_v2_warp"):
        r = sm90[name]
        assert (r.in_flight.loads, r.in_flight.bytes) == (8, 32) and r.in_flight.bytes > copy.in_flight.bytes, name
        assert r.loop.ldg == {32: 8} and r.loop.instructions <= 6 * 8, (name, r.loop)


def test_the_packages_record_is_what_the_tools_make(sm90):
    """static_report_sm90.json (what a reader without ptxas sees) equals this machine's report, with this
    machine's toolkit; after a kernel or toolkit change, `scaledl kernels report --write-record` rewrites it."""
    from scaledl.kernels import static_record

    record = static_record.recorded()
    fix = "; rewrite it with `scaledl kernels report --write-record`"
    assert record.tools == static_record.toolchain(), "the record was made with another toolkit" + fix
    stale = [n for n in record.names if record[n] != static_record._comparable(sm90[n])]
    assert record.names == tuple(sm90) and stale == [], f"the record differs from the tools' report: {stale}" + fix


def test_static_facts_made_here_say_they_match_the_record():
    from scaledl.kernels import static_record

    try:
        facts = static_record.static_facts(["sum_v1_shared", "quantize_v2_pow2"])
    except sr.ToolsMissing as err:  # pragma: no cover - static_facts falls back instead of raising
        pytest.skip(str(err))
    if facts.recorded:
        pytest.skip(f"static report needs the CUDA tools: {facts.why}")
    assert facts.matches_record and facts.provenance.endswith("the same as the package's record.")


def test_sm80_occupancy_uses_the_a100_limits():
    try:
        (r,) = sr.report(["gemm_v3_regblock"], arch="sm_80")
    except sr.ToolsMissing as err:
        pytest.skip(f"static report needs the CUDA tools: {err}")
    assert r.arch == "sm_80" and r.occupancy == sr.sm_occupancy(256, r.registers, r.ptxas.shared_bytes,
                                                                 sr.ARCHS["sm_80"])
    assert r.warps_per_sm == 8 * r.blocks_per_sm and r.registers > 128


LAB02_PTX = r'''
import functools
import numpy as np
ns = {"cuda": cuda, "float32": float32, "np": np, "functools": functools}
exec(os.environ["SOURCE"], ns)
ptx, _ = cuda.compile_ptx(ns["make_regblock_kernel"](16, 4).py_func, (a2, a2, a2), cc=(9, 0))
print("PTX" + json.dumps(ptx))
'''


def test_lab02_solution_facts(ptx_script, python):
    """Lab 02's register-blocked solution (16 x 16 threads, 4 x 4 each: the 25 % of cuBLAS of the H200 run)
    has the facts H200_MEASURED gives the model."""
    spec = importlib.util.spec_from_file_location("lab_ptx", HERE / "test_lab_solutions_ptx.py")
    lab_ptx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab_ptx)
    r = python(ptx_script + LAB02_PTX, {"SOURCE": lab_ptx.factory_source("lab02_tiled_gemm")})
    if r.stdout.startswith("SKIP") or "libNVVM" in r.stderr or "DynamicLibNotFound" in r.stderr:
        pytest.skip("CUDA toolkit libraries not found, cannot compile PTX here")
    assert r.returncode == 0, r.stderr[-2000:]
    ptx = json.loads(r.stdout.split("PTX", 1)[1])
    try:
        rep = sr.assemble_ptx("lab02_regblock", ptx, 256)
    except sr.ToolsMissing as err:
        pytest.skip(f"static report needs the CUDA tools: {err}")
    lab02 = km.H200_MEASURED[3].facts
    assert (rep.warps_per_sm, rep.loop.ffma_share, rep.in_flight.bytes) == (lab02.warps_per_sm, lab02.ffma_share,
                                                                            lab02.bytes_in_flight)
    assert rep.loop.ffma == 16 and rep.spill_bytes == 0  # 4 x 4 accumulators, one FFMA each per k step
