"""steady_state and int64_instructions on small handmade SASS (scaledl.kernels.sass_steady)."""

import pytest

from scaledl.kernels.sass import parse_sass
from scaledl.kernels.sass_steady import int64_instructions, steady_state


def _sass(lines: str) -> str:
    """Give each instruction line an address, as nvdisasm does."""
    out, addr = [], 0
    for line in lines.strip().splitlines():
        line = line.strip()
        if line.endswith(":"):
            out.append(line)
        else:
            out.append(f"        /*{addr:04x}*/                   {line}")
            addr += 0x10
    return "\n".join(out)


def _ops(text):
    return parse_sass(_sass(text)).instructions


@pytest.mark.parametrize("line, is64", [
    ("IADD3 R4, P0, R4, 0x8, RZ ;", True),  # carry out: low half
    ("IADD3 R4, R4, 0x8, RZ ;", False),
    ("IMAD.X R5, RZ, RZ, R5, P0 ;", True),
    ("IADD3.X R5, RZ, RZ, R5, P0, P1 ;", True),
    ("LEA.HI.X R27, R32, R25, R39, 0x2, P6 ;", True),
    ("LEA R26, P6, R32, R24, 0x2 ;", True),
    ("LEA R26, R32, R24, 0x2 ;", False),
    ("IMAD.WIDE.U32 R32, R116, R37, R30 ;", True),
    ("IMAD.WIDE R2, R0, 0x4, R8 ;", True),
    ("IMAD R2, R0, 0x4, R8 ;", False),
    ("IMAD.IADD R39, R41, 0x1, R33 ;", False),
    ("SHF.L.U64.HI R27, R26, 0x2, R27 ;", True),
    ("SHF.R.S32.HI R2, RZ, 0x1f, R17 ;", False),
    ("UIADD3.X UR5, URZ, UR5, URZ, UP0, !UPT ;", True),
    ("ISETP.GE.U32.AND.EX P2, PT, R78, RZ, PT, P2 ;", True),
    ("ISETP.GE.U32.AND P2, PT, R79, R37, PT ;", False),  # alone: a 32-bit compare
    ("FFMA R1, R2, R3, R1 ;", False),
    ("DADD R6, -RZ, |R14| ;", False),  # floating point, not integer
])
def test_int64_rule_one_instruction(line, is64):
    assert int64_instructions(_ops(line)) == ([0] if is64 else [])


def test_int64_low_compare_of_an_ex_pair_counts_and_only_its_own():
    ops = _ops("""
        ISETP.GE.U32.AND P1, PT, R4, R6, PT ;
        ISETP.GE.U32.AND P2, PT, R8, R6, PT ;
        ISETP.GE.U32.AND.EX P1, PT, R5, RZ, PT, P1 ;
    """)
    assert int64_instructions(ops) == [0, 2]  # P2's compare stays 32-bit


GEMM = """
    IMAD.MOV.U32 R1, RZ, RZ, RZ ;
.L_x_outer:
    STS [R72], R28 ;
    BAR.SYNC.DEFER_BLOCKING 0x0 ;
    ISETP.GE.U32.AND P2, PT, R79, R37, PT ;
    ISETP.GE.U32.AND.EX P2, PT, R78, RZ, PT, P2 ;
    @P2 BRA `(.L_x_skip) ;
    LOP3.LUT P3, RZ, R26, 0xf, RZ, 0xc0, !PT ;
    @!P3 BRA `(.L_x_vec) ;
    LDG.E R28, desc[UR6][R26.64] ;
    LDG.E R29, desc[UR6][R26.64+0x4] ;
    LDG.E R30, desc[UR6][R26.64+0x8] ;
    LDG.E R31, desc[UR6][R26.64+0xc] ;
    BRA `(.L_x_skip) ;
.L_x_vec:
    LDG.E.128 R28, desc[UR6][R26.64] ;
.L_x_skip:
    IMAD.MOV.U32 R24, RZ, RZ, RZ ;
.L_x_inner:
    LDS.128 R36, [R111] ;
    FFMA R0, R36, R37, R0 ;
    FFMA R2, R38, R39, R2 ;
    IADD3 R108, P3, R108, -0x1, RZ ;
    IMAD.X R106, R106, 0x1, RZ, P3 ;
    @P2 BRA `(.L_x_inner) ;
    BAR.SYNC.DEFER_BLOCKING 0x0 ;
    IADD3 R79, P3, R79, 0x8, RZ ;
    @P2 BRA `(.L_x_outer) ;
    EXIT ;
"""


def test_gemm_tile_counts_inner_trips_and_the_vector_path():
    s = steady_state(_sass(GEMM), inner_trips=4)
    assert (s.inner_instructions, s.inner_ffma, s.inner_trips) == (6, 2, 4)
    # around: STS, BAR, 2 ISETP, BRA, LOP3, BRA, LDG.128 (the vector path, not the 4 scalar loads), IMAD.MOV,
    # BAR, IADD3, BRA = 12
    assert s.around == 12 and s.outer and s.inner_trips_known
    assert s.instructions == 4 * 6 + 12 and s.ffma == 8
    assert s.ffma_share == pytest.approx(8 / 36)
    assert s.int64 == 4 * 2 + 2 + 1  # the counter's IADD3/IMAD.X pair per trip; the compare pair; the IADD3
    assert s.opcodes["LDG"] == 1 and s.per_element is None
    assert "4 x 6 (inner loop) + 12 around it = 36 instructions per tile" in s.describe()


def test_gemm_without_inner_trips_says_it_assumed_one():
    s = steady_state(_sass(GEMM))
    assert s.inner_trips == 1 and not s.inner_trips_known and s.instructions == 18
    assert "unknown" in s.describe()


STREAM = """
.L_x_top:
    LDG.E R4, desc[UR4][R2.64] ;
    FSETP.NAN.AND P0, PT, R4, R4, PT ;
    @P0 BRA `(.L_x_store) ;
    FMUL R4, R4, 0.5 ;
    FADD R4, R4, 1 ;
.L_x_store:
    STG.E desc[UR4][R6.64], R4 ;
    IADD3 R2, P1, R2, 0x4, RZ ;
    IADD3.X R3, RZ, R3, RZ, P1, !PT ;
    ISETP.NE.AND P2, PT, R2, R8, PT ;
    @P2 BRA `(.L_x_top) ;
    EXIT ;
"""


def test_memory_kernel_per_element_takes_the_ordinary_path():
    s = steady_state(_sass(STREAM), elements_per_trip=2)
    assert not s.outer and s.instructions == 10 and s.around == 0  # through FMUL/FADD, not the NaN shortcut
    assert s.int64 == 2 and s.per_element == 5.0 and s.ffma == 0 and s.ffma_share == 0.0


def test_straight_line_kernel_goes_from_entry_to_exit():
    text = _sass("""
        ISETP.GE.AND P0, PT, R0, R1, PT ;
        @P0 EXIT ;
        LDG.E R4, desc[UR4][R2.64] ;
        @P1 BRA `(.L_x_out) ;
        FMUL R4, R4, 0.5 ;
    .L_x_out:
        STG.E desc[UR4][R6.64], R4 ;
        EXIT ;
    """)
    s = steady_state(text, elements_per_trip=1)
    assert s.instructions == 7 and s.per_element == 7.0


@pytest.mark.parametrize("kw", [{"elements_per_trip": 0}, {"inner_trips": -1}, {"elements_per_trip": 2.5},
                                {"inner_trips": True}])
def test_bad_counts_are_rejected_by_name(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        steady_state(_sass(STREAM), **kw)
