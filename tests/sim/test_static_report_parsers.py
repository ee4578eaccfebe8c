"""The ptxas -v and SASS parsers of the static report, on captured text (tests/sim/data/static_report), so they are
tested where ptxas and nvdisasm are missing. The numbers are read off the samples by hand."""

from pathlib import Path

import pytest

from scaledl.kernels import sass

DATA = Path(__file__).parent / "data" / "static_report"


def text(name: str) -> str:
    return (DATA / name).read_text()


# ------------------------------------------------------------------------------------------- ptxas -v
def test_ptxas_registers_shared_memory_and_no_spills_of_v3():
    (info,) = sass.parse_ptxas(text("gemm_v3.ptxas.txt")).values()
    assert (info.name, info.registers, info.shared_bytes, info.barriers) == ("_Z16gemm_v3_regblock", 196, 8320, 1)
    assert (info.spill_store_bytes, info.spill_load_bytes, info.stack_bytes, info.spills) == (0, 0, 0, False)


def test_ptxas_spills_when_registers_are_capped():
    (info,) = sass.parse_ptxas(text("gemm_v3_maxrreg64.ptxas.txt")).values()
    assert (info.registers, info.spill_store_bytes, info.spill_load_bytes, info.stack_bytes) == (64, 628, 736, 536)
    assert info.spills


def test_ptxas_line_without_barriers_or_shared_memory():
    out = ("ptxas info    : Compiling entry function '_Z4axpy' for 'sm_80'\n"
           "ptxas info    : Function properties for _Z4axpy\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 15 registers, 380 bytes cmem[0]\n")
    assert sass.parse_ptxas(out)["_Z4axpy"] == sass.PtxasInfo("_Z4axpy", 15)


def test_ptxas_parser_rejects_other_text():
    with pytest.raises(ValueError, match="no 'Used N registers' line"):
        sass.parse_ptxas("ptxas fatal   : Unresolved extern function 'cudaCGGetIntrinsicHandle'")


# ------------------------------------------------------------------------------------------------ SASS
def test_instruction_fields():
    s = sass.parse_sass("""
.L_x_3:
        /*0470*/              @!P0 BRA `(.L_x_3) ;
        /*0480*/                   LDG.E.128 R4, desc[UR4][R2.64+0x10] ;
        /*0490*/                   LDS.U16 R7, [R9] ;""")
    bra, ldg, lds = s.instructions
    assert (bra.address, bra.predicate, bra.base, bra.target) == (0x470, "@!P0", "BRA", ".L_x_3")
    assert (ldg.opcode, ldg.width_bits, ldg.operands) == ("LDG.E.128", 128, "R4, desc[UR4][R2.64+0x10]")
    assert lds.width_bits == 16 and s.labels == {".L_x_3": 0}


def test_v2_inner_loop_counts():
    # v2's tile loop (the kk loop is unrolled in it): 96 instructions, 16 FFMA, A read 128 bits at a time
    loop = sass.inner_loop(sass.parse_sass(text("gemm_v2_tiled.sm_90.sass")))
    assert (loop.instructions, loop.ffma, loop.ldg, loop.lds, loop.sts) == (96, 16, {32: 2}, {32: 16, 128: 4},
                                                                              {32: 2})
    assert loop.barriers == 2 and loop.local == 0
    assert loop.integer == 49 and loop.integer_per_ffma == pytest.approx(49 / 16)
    assert loop.ffma_share == pytest.approx(16 / 96)


def test_v8_inner_loop_is_the_unrolled_k_loop_not_the_tile_loop():
    s = sass.parse_sass(text("gemm_v8_prefetch.sm_90.sass"))
    loop = sass.inner_loop(s)
    assert (loop.ffma, loop.instructions, loop.lds, loop.ldg) == (128, 147, {128: 8}, {})
    tile_loop = max(sass.loops(s), key=lambda lp: lp.instructions)  # the one around it, with the loads
    assert tile_loop.start < loop.start and loop.end < tile_loop.end and tile_loop.ffma == 128
    whole = sass.summarize(s.instructions)
    assert (whole.ldg, whole.stg, whole.ffma) == ({32: 32, 128: 4}, {32: 64}, 128)  # 64 outputs stored once


def test_loads_in_flight_v2_and_v8():
    assert sass.loads_in_flight(sass.parse_sass(text("gemm_v2_tiled.sm_90.sass"))) == sass.LoadsInFlight(2, 8, False)
    # v8: A's and B's next float4 (four scalar loads or one LDG.E.128 each, by alignment) outstanding across
    # the FFMA loop
    assert sass.loads_in_flight(sass.parse_sass(text("gemm_v8_prefetch.sm_90.sass"))) == sass.LoadsInFlight(4, 32,
                                                                                                            True)


SYNTHETIC = """
        /*0000*/                   LDG.E R2, desc[UR4][R8.64] ;
        /*0010*/                   LDG.E R3, desc[UR4][R8.64+0x4] ;
        /*0020*/                   FADD R4, R2, R3 ;
.L_x_0:
        /*0030*/                   LDG.E R5, desc[UR4][R8.64] ;
        /*0040*/                   STS [R1], R5 ;
.L_x_1:
        /*0050*/                   FFMA R6, R4, R4, R6 ;
        /*0060*/                   FFMA R7, R4, R4, R7 ;
        /*0070*/                   IADD3 R9, R9, 0x1, RZ ;
        /*0080*/               @P0 BRA `(.L_x_1) ;
        /*0090*/                   FFMA R6, R6, R7, R6 ;
        /*00a0*/               @P1 BRA `(.L_x_0) ;
        /*00b0*/                   EXIT ;
.L_x_2:
        /*00c0*/                   BRA `(.L_x_2);
"""


def test_loops_nested_and_the_trap_after_exit_is_no_loop():
    s = sass.parse_sass(SYNTHETIC)
    found = sorted((lp.start, lp.end, lp.ffma) for lp in sass.loops(s))
    assert found == [(0x30, 0xA0, 3), (0x50, 0x80, 2)]  # not the self-branch at 0xc0
    inner = sass.inner_loop(s)
    assert (inner.start, inner.ffma, inner.integer, inner.instructions) == (0x50, 2, 1, 4)


def test_loads_in_flight_synthetic():
    # two loads before their use, then one load used at once: at most 2 in flight, none across the FFMA loop
    assert sass.loads_in_flight(sass.parse_sass(SYNTHETIC)) == sass.LoadsInFlight(2, 8, False)


def test_straight_line_code_has_no_inner_loop():
    s = sass.parse_sass("        /*0000*/                   EXIT ;\n.L_x_0:\n        /*0010*/ BRA `(.L_x_0);")
    assert sass.inner_loop(s) is None and sass.loads_in_flight(s) == sass.LoadsInFlight(0, 0, False)


def test_sass_parser_rejects_other_text():
    with pytest.raises(ValueError, match="no SASS instruction"):
        sass.parse_sass("nvdisasm fatal : Could not open input file")


PREFETCH = """
.L_x_0:
        /*0000*/                   STS [R1], R5 ;
        /*0010*/                   LDG.E R5, desc[UR4][R8.64] ;
.L_x_1:
        /*0020*/                   FFMA R6, R4, R4, R6 ;
        /*0030*/               @P0 BRA `(.L_x_1) ;
        /*0040*/               @P1 BRA `(.L_x_0) ;
        /*0050*/                   LDG.E R9, desc[UR4][R10.64] ;
        /*0060*/                   LDG.E R11, desc[UR4][R10.64+0x4] ;
        /*0070*/                   FADD R12, R9, R11 ;
        /*0080*/                   EXIT ;
"""


def test_a_prefetch_is_followed_around_its_loop():
    # R5 is loaded for the next trip and stored at the top of it: in flight across the FFMA loop, and done
    # before the two loads after the loop (followed straight on, it would still be outstanding there: 3)
    assert sass.loads_in_flight(sass.parse_sass(PREFETCH)) == sass.LoadsInFlight(2, 8, True)
