"""Format specs: derived properties against ml_dtypes and the OCP/IEEE tables, the registry, bad names."""

import ml_dtypes
import numpy as np
import pytest

from scaledl.numerics.formats import FORMATS, FloatFormat, IntFormat, LogFormat, get_format

SHARED = [f for f in FORMATS.values() if isinstance(f, FloatFormat) and f.ml_dtypes_name]


def _ml(fmt):
    return np.dtype(getattr(ml_dtypes, fmt.ml_dtypes_name, None) or fmt.ml_dtypes_name)


@pytest.mark.parametrize("fmt", SHARED, ids=lambda f: f.name)
def test_derived_properties_match_ml_dtypes_finfo(fmt):
    fi = ml_dtypes.finfo(_ml(fmt))
    assert fmt.max_value == float(fi.max)
    assert fmt.min_normal == float(fi.smallest_normal)
    assert fmt.min_subnormal == float(fi.smallest_subnormal)
    assert fmt.epsilon == float(fi.eps)
    assert fmt.bits == fi.bits or (fmt.bits < 8 and fi.bits == 8)  # ml_dtypes stores FP4/FP6 in a byte


@pytest.mark.parametrize("fmt", [f for f in SHARED if f.bits <= 16], ids=lambda f: f.name)
def test_decode_table_matches_ml_dtypes_for_every_code(fmt):
    codes = np.arange(1 << fmt.bits)
    storage = np.uint16 if fmt.bits == 16 else np.uint8
    with np.errstate(invalid="ignore"):  # NaN codes of bf16 warn when widened
        ref = codes.astype(storage).view(_ml(fmt)).astype(np.float64)
    np.testing.assert_array_equal(fmt.decode_table(), ref)


def test_published_maxima_and_small_tables():
    # OCP 8-bit and MX specifications (REFERENCES.md, "Number formats")
    assert [get_format(n).max_value for n in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")] == [448, 57344, 28, 7.5, 6]
    assert get_format("e2m1").magnitudes().tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert get_format("e8m0").max_value == 2.0 ** 127 and get_format("e8m0").min_positive == 2.0 ** -127
    assert not get_format("e4m3").has_inf and get_format("e4m3").has_nan  # "fn": finite, NaN only
    assert get_format("e5m2").has_inf
    assert not get_format("e2m1").has_nan
    tf32 = get_format("tf32")
    assert (tf32.bits, tf32.epsilon) == (19, 2.0 ** -10)
    assert tf32.max_value == (2 - 2.0 ** -10) * 2.0 ** 127


def test_integer_and_log_specs():
    assert (IntFormat(8).min_int, IntFormat(8).max_int) == (-128, 127)
    assert (IntFormat(4, signed=False).min_int, IntFormat(4, signed=False).max_int) == (0, 15)
    assert IntFormat(3).values().tolist() == [-4, -3, -2, -1, 0, 1, 2, 3]
    lns = get_format("lns4.3")
    assert isinstance(lns, LogFormat) and lns.bits == 8
    m = lns.magnitudes()
    assert m.size == 128 and m[0] == 0  # 127 nonzero magnitudes plus zero: 2 * 127 + 1 values and the sign
    np.testing.assert_allclose(m[1:], 2.0 ** (np.arange(-63, 64) / 8), rtol=0)
    assert lns.max_value == 2.0 ** (63 / 8)
    # Same grid as the logarithmic arithmetic module's Log 4.3
    from scaledl.numerics.logarithmic import LOG_4_3
    assert lns.max_value == LOG_4_3.max_value and lns.min_positive == LOG_4_3.min_positive


@pytest.mark.parametrize("alias, name", [("float8_e4m3fn", "e4m3"), ("float8_e5m2", "e5m2"),
                                         ("float6_e3m2fn", "e3m2"), ("float6_e2m3fn", "e2m3"),
                                         ("float4_e2m1fn", "e2m1"), ("float8_e8m0fnu", "e8m0"),
                                         ("bfloat16", "bf16"), ("float16", "fp16"), ("FP32", "fp32")])
def test_aliases(alias, name):
    assert get_format(alias) is FORMATS[name]


def test_dtypes_are_accepted():
    assert get_format(ml_dtypes.float8_e4m3fn) is FORMATS["e4m3"]
    assert get_format(np.float16) is FORMATS["fp16"]
    assert get_format(FORMATS["e2m1"]) is FORMATS["e2m1"]


def test_bad_names_and_bits():
    with pytest.raises(ValueError, match="unknown format 'e9m9'"):
        get_format("e9m9")
    with pytest.raises(ValueError, match="integer bits must be in \\[2, 32\\], got 40"):
        get_format("int40")
    with pytest.raises(ValueError, match="log format needs"):
        get_format("lns9.3")
    with pytest.raises(TypeError, match="fmt must be a format spec"):
        get_format(8)
    with pytest.raises(ValueError, match="bits must be in \\[2, 32\\], got 1"):
        IntFormat(1)
    with pytest.raises(TypeError, match="bits must be an int"):
        IntFormat(4.0)
    with pytest.raises(ValueError, match="man_bits must be in \\[0, 23\\], got 30"):
        FloatFormat("x", 4, 30, 7)
    with pytest.raises(ValueError, match="specials must be"):
        FloatFormat("x", 4, 3, 7, specials="maybe")
    with pytest.raises(ValueError, match="limited to formats of at most 16 bits"):
        get_format("fp32").values()
