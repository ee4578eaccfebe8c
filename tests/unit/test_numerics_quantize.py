"""quantize, encode and decode: exact tables, bit-exact agreement with ml_dtypes, Hypothesis properties, errors."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaledl.numerics.formats import FORMATS, FloatFormat, get_format
from scaledl.numerics.quantize import decode, encode, quantize, round_to_values

SHARED = [f for f in FORMATS.values() if isinstance(f, FloatFormat) and f.ml_dtypes_name]
SMALL = [f for f in SHARED if f.bits <= 8]


def _ml(fmt):
    return np.dtype(getattr(ml_dtypes, fmt.ml_dtypes_name, None) or fmt.ml_dtypes_name)


def _hard_float32s(fmt) -> np.ndarray:
    """Every float32 near the format's range whose dropped mantissa bits are 0, 1, half-1, half, half+1 or all
    ones (the rounding boundaries), for every kept-mantissa pattern, both signs, plus zero/inf/NaN."""
    d = 23 - fmt.man_bits
    kept = np.arange(1 << min(fmt.man_bits + 1, 12), dtype=np.int64) << max(d - 1, 0)
    if d > 0:
        h = 1 << (d - 1)
        tails = np.unique([0, 1, h - 1, h, h + 1, (1 << d) - 1]) if d > 1 else np.array([0, 1])
    else:
        tails = np.array([0])
    lo = max(fmt.emin - fmt.man_bits - 3 + 127, 0)
    hi = min(fmt.emax + 3 + 127, 254)
    exps = np.arange(lo, hi + 1, dtype=np.int64)
    man = (kept[:, None] | tails[None, :]).ravel() & 0x7FFFFF
    bits = (exps[:, None] << 23 | man[None, :]).ravel()
    bits = np.concatenate([bits, bits | 0x80000000, [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000]])
    return bits.astype(np.uint32).view(np.float32)


def _comparable(x, fmt):
    """Inputs on which ml_dtypes is the reference: drop NaN for formats without NaN (ml_dtypes turns it into
    -0.0), and for E8M0 the float32 subnormals in (2**-127, 2**-126), which ml_dtypes rounds up to 2**-126 even
    below the midpoint 1.5 * 2**-127; quantize rounds those to nearest (see test_e8m0_rounds_float32_subnormals)."""
    keep = np.ones(x.shape, bool) if fmt.has_nan else ~np.isnan(x)
    if not fmt.signed:
        keep &= ~((np.abs(x) > 2.0**-127) & (np.abs(x) < 2.0**-126))
    return x[keep]


def test_e8m0_rounds_float32_subnormals_to_nearest():
    x = np.array([1.25, 1.5, 1.75], dtype=np.float32) * np.float32(2.0**-127)
    np.testing.assert_array_equal(quantize(x, "e8m0"), np.array([2.0**-127, 2.0**-126, 2.0**-126], np.float32))


def _same(a, b):
    """Equal bit patterns, or both NaN (ml_dtypes' NaN payloads differ)."""
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


@pytest.mark.parametrize("fmt", SHARED, ids=lambda f: f.name)
def test_bit_exact_with_ml_dtypes_at_every_rounding_boundary(fmt):
    x = _comparable(_hard_float32s(fmt), fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(_ml(fmt)).astype(np.float32)
    got = quantize(x, fmt, saturate=False)  # saturate=False means "what a plain cast gives"
    bad = ~_same(ref, got)
    assert not bad.any(), list(zip(x[bad][:5], ref[bad][:5], got[bad][:5]))


@pytest.mark.parametrize("fmt", SHARED, ids=lambda f: f.name)
def test_bit_exact_with_ml_dtypes_on_random_bit_patterns(fmt):
    rng = np.random.default_rng(1)
    x = _comparable(rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32), fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(_ml(fmt)).astype(np.float32)
    assert _same(ref, quantize(x, fmt, saturate=False)).all()


# ------------------------------------------------------------------------------------------------------------------
# float64 inputs: rounded once (not through float32 first)
def test_float64_inputs_are_rounded_once_not_through_float32():
    x = np.array([1 + 2.0**-4 + 2.0**-40])  # just above an E4M3 tie in float64, exactly on it in float32
    assert quantize(x, "e4m3")[0] == 1.125  # the correctly rounded value
    assert quantize(x.astype(np.float32), "e4m3")[0] == 1.0  # the tie float32 made of it goes to even
    assert encode(x, "e4m3")[0] == 0x39 and quantize(-x, "e4m3")[0] == -1.125
    below = np.array([1 + 2.0**-4 - 2.0**-40])  # just below the tie: down, whichever way the tie would go
    assert quantize(below, "e4m3")[0] == 1.0


def _exact_nearest(x: np.ndarray, fmt, saturate: bool) -> np.ndarray:
    """The correctly rounded values of the float64 ``x`` in ``fmt``: an independent reference for the float64 path.

    Exact without rational arithmetic: the format's values and the midpoints between neighbours have at most 12
    significant bits, so float64 holds them exactly and comparing ``|x|`` with a midpoint rounds nothing. Codes
    of consecutive non-negative values are consecutive integers, so a value's index in the list has its code's
    parity (ties to even go to the even index).
    """
    g = _grid(fmt)
    a = np.abs(x)
    hi_i = np.clip(np.searchsorted(g, a, side="left"), 1, g.size - 1)
    lo, hi = g[hi_i - 1], g[hi_i]
    mid = (lo + hi) / 2
    tie_up = np.full(a.shape, fmt.ties == "away") if fmt.ties == "away" else (hi_i - 1) % 2 == 1
    q = np.where((a > mid) | ((a == mid) & tie_up), hi, lo)
    q = np.where(a < g[0], g[0], q)  # E8M0 has no zero: tiny values clamp up to its smallest value
    top = g[-1]
    step = 2.0 ** (np.floor(np.log2(top)) - fmt.man_bits)  # the spacing in the largest value's binade
    boundary = top + step / 2  # where a plain cast leaves the format (a tie goes to even, or away)
    over = (a > boundary) | ((a == boundary) & ((fmt.ties == "away") | ((g.size - 1) % 2 == 1)))
    if saturate or not fmt.has_nan:  # formats with neither inf nor NaN saturate whatever is asked
        q = np.where(a > top, top, q)
    else:
        q = np.where(over, np.inf if fmt.has_inf else np.nan, np.where(a > top, top, q))
    q = np.where(np.isnan(a), np.nan, q)  # NaN stays NaN (float32 carries it, whatever the format)
    if not fmt.signed:
        return np.where(x <= 0, np.nan, q)
    return np.copysign(q, x)


def _grid(fmt) -> np.ndarray:
    """The format's finite non-negative values in code order (zero first where it has one)."""
    v = fmt.values().astype(np.float64)
    return np.unique(np.abs(v[np.isfinite(v)]))


def _hard_float64s(fmt) -> np.ndarray:
    """float64 values where a float32 detour goes wrong: every midpoint between neighbours of the format, the
    midpoint nudged by 2**-40 and by one float64 step either way, the neighbours themselves nudged, values beyond
    the largest one and beyond float32's range, float32-subnormal-sized values, zeros, infinities and NaN."""
    g = _grid(fmt)
    g = g[g > 0]
    mids = (g[:-1] + g[1:]) / 2
    over = g[-1] + (g[-1] - g[-2]) / 2
    pts = np.concatenate([mids, [over], g])
    nudged = [pts, pts * (1 + 2.0**-40), pts * (1 - 2.0**-40), np.nextafter(pts, np.inf), np.nextafter(pts, 0)]
    extra = [0.0, np.inf, 3.5e38, 1e300, 2.0**-150, 3 * 2.0**-150, 2.0**-130 * (1 + 2.0**-40), 1e-300, np.nan]
    x = np.concatenate([*nudged, extra])
    x = x[x >= g[0] / 4] if fmt.bits <= 8 else x  # keep the far-below-subnormal tail short for tiny formats
    x = np.concatenate([x, extra])
    return np.concatenate([x, -x]) if fmt.signed else x


TABLED = [f for f in FORMATS.values() if isinstance(f, FloatFormat) and f.bits <= 16]


@pytest.mark.parametrize("fmt", TABLED, ids=lambda f: f.name)
@pytest.mark.parametrize("saturate", [True, False])
def test_float64_inputs_match_exact_rounding(fmt, saturate):
    x = _hard_float64s(fmt)
    if not fmt.signed:
        x = x[x > 2.0**-128]  # E8M0: zero and the clamp region have their own table cases
    with np.errstate(over="ignore", invalid="ignore"):
        got = quantize(x, fmt, saturate=saturate).astype(np.float64)
    want = _exact_nearest(x, fmt, saturate)
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    bad &= ~((got == 0) & (want == 0) & (np.signbit(got) == np.signbit(want)))
    assert not bad.any(), list(zip(x[bad][:5], want[bad][:5], got[bad][:5]))


def ml_dtypes_rounds_float64_once(fmt) -> bool:
    """Whether this ml_dtypes casts float64 to ``fmt`` in one rounding (0.7 on) or through float32 (before):
    told by behaviour, from the two values on either side of a tie that float32 turns into the tie itself."""
    m = fmt.man_bits
    probe = np.array([1 + 2.0**-(m + 1) + 2.0**-40, 1 + 2.0**-(m + 1) - 2.0**-40])
    got = probe.astype(_ml(fmt)).astype(np.float64)
    return bool(got[0] > 1 + 2.0**-(m + 1) and got[1] < 1 + 2.0**-(m + 1))


@pytest.mark.parametrize("fmt", [f for f in SHARED if f.name != "fp32"], ids=lambda f: f.name)
def test_float64_inputs_bit_exact_with_ml_dtypes(fmt):
    """Against ml_dtypes' float64 cast where it rounds once; against its float32 route where it does not (the
    float32 values are then the input, as that release rounds them)."""
    x64 = _comparable(_hard_float64s(fmt), fmt)
    x64 = x64[(np.abs(x64) >= 2.0**-126) | (x64 == 0) | ~np.isfinite(x64)] if not fmt.signed else x64
    once = ml_dtypes_rounds_float64_once(fmt)
    x = x64 if once else _comparable(x64.astype(np.float32), fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(_ml(fmt)).astype(np.float32)
    got = quantize(x, fmt, saturate=False)
    bad = ~_same(ref, got)
    assert not bad.any(), (f"ml_dtypes {ml_dtypes.__version__} ({'one rounding' if once else 'through float32'})",
                           list(zip(x[bad][:5], ref[bad][:5], got[bad][:5])))


def test_the_probe_tells_the_two_ml_dtypes_behaviours_apart():
    """The probe reads the behaviour, not a version string: here, faked both ways on the same release."""
    e4m3 = get_format("e4m3")
    assert isinstance(ml_dtypes_rounds_float64_once(e4m3), bool)
    x = np.array([1 + 2.0**-4 + 2.0**-40])
    through_float32 = x.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)[0]
    assert through_float32 == 1.0  # what ml_dtypes before 0.7 gave for the float64 cast
    assert quantize(x, "e4m3")[0] == 1.125 != through_float32


def test_round_to_odd_narrowing():
    from scaledl.numerics.quantize import narrow_to_float32

    x = np.array([1 + 2.0**-4 + 2.0**-40, 1 + 2.0**-4 - 2.0**-40, 1.0625, -(1 + 2.0**-30), 1e300, -1e300, np.inf,
                  -0.0, np.nan, 2.0**-160, 3.0 * 2.0**-149 + 2.0**-170])
    r = narrow_to_float32(x, "e4m3")
    up, down, one = np.float32(1.0625), np.float32(1.0625), np.float32(1.0)
    assert r[0] == np.nextafter(up, np.float32(2)) and r[1] == np.nextafter(down, one)  # odd, toward zero
    assert r[2] == up  # exact: untouched (its last bit is 0, and stays so)
    assert r[3] == -np.nextafter(one, np.float32(2))  # truncated toward zero, last bit set
    fmax = np.finfo(np.float32).max
    assert r[4] == fmax and r[5] == -fmax and np.isposinf(r[6])  # beyond range: the largest (odd) value
    assert r[7] == 0 and np.signbit(r[7]) and np.isnan(r[8])
    tiny = np.float32(2.0**-149)
    assert r[9] == tiny and r[10] == 3 * tiny  # below the smallest subnormal: odd is the smallest one
    assert (narrow_to_float32(x, "fp32")[:2] == x[:2].astype(np.float32)).all()  # fp32: the plain cast


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_wide_integer_inputs_are_rounded_once(dtype):
    x = np.array([2**24 + 1, -(2**24 + 1), 2**25 + 3], dtype=dtype)  # not float32 values
    np.testing.assert_array_equal(quantize(x, "bf16"), quantize(x.astype(np.float64), "bf16"))
    assert quantize(np.array([2**24 + 2**16 + 1], np.int64), "bf16")[0] == 2**24 + 2**17  # one rounding: up


def test_float64_with_a_scale_divides_in_float64():
    x = np.array([(1 + 2.0**-4 + 2.0**-40) * 3])
    assert quantize(x, "e4m3", scale=3.0)[0] == np.float32(1.125) * np.float32(3)


# Exact cases, one per line: (format, input, expected)
TABLE = [
    ("e4m3", 1.0625, 1.0),           # tie between 1 (mantissa 000, even) and 1.125 (001): to even, down
    ("e4m3", 1.1875, 1.25),          # tie between 1.125 (001) and 1.25 (010): to even, up
    ("e4m3", 1.0625 + 2**-20, 1.125),  # just above the tie: up
    ("e4m3", 464.0, 448.0),          # tie between 448 (110) and 480 (111, the NaN code): to even 448
    ("e4m3", 465.0, 448.0),          # above: saturates (ml_dtypes would give NaN)
    ("e4m3", 2.0**-9, 2.0**-9),      # smallest subnormal
    ("e4m3", 1.5 * 2.0**-9, 2.0**-8),  # subnormal tie 1 -> 2 steps: to even (2)
    ("e4m3", 2.5 * 2.0**-9, 2.0**-8),  # subnormal tie 2 -> 3 steps: to even (2)
    ("e4m3", 2.0**-10, 0.0),         # half the smallest subnormal: tie with 0, to even (0)
    ("e4m3", 7.5 * 2.0**-9, 2.0**-6),  # largest subnormal (7 steps) to smallest normal: tie, to even (8 steps)
    ("e4m3", -np.inf, -448.0),       # infinities saturate
    ("e5m2", 61440.0, 57344.0),      # the overflow tie; saturate keeps it finite (ml_dtypes: inf)
    ("e5m2", 1.125, 1.0),            # tie to even (mantissa 00)
    ("e5m2", 1.375, 1.5),            # tie to even (mantissa 10)
    ("e2m1", 2.5, 2.0),              # tie between 2 (even) and 3
    ("e2m1", 3.5, 4.0),              # tie between 3 and 4 (even)
    ("e2m1", 5.0, 4.0),              # tie between 4 (even) and 6
    ("e2m1", 0.25, 0.0),             # tie between 0 and the subnormal 0.5: to 0
    ("e2m1", 0.75, 1.0),             # tie between 0.5 (odd) and 1: to 1
    ("e2m1", -100.0, -6.0),
    ("e3m2", 30.0, 28.0),
    ("e2m3", 7.75, 7.5),
    ("e8m0", 3.0, 4.0),              # E8M0 ties go away from zero (as in ml_dtypes)
    ("e8m0", 2.0**-140, 2.0**-127),  # no zero: clamp up to the smallest value
    ("int8", 2.5, 2.0),              # integers: ties to even
    ("int8", 3.5, 4.0),
    ("int8", -200.0, -128.0),
    ("int8", 200.0, 127.0),
    ("uint4", -3.0, 0.0),
    ("uint4", 15.6, 15.0),
    ("lns4.3", 1.0, 1.0),
    ("lns4.3", 1e9, 2.0 ** (63 / 8)),
    ("lns4.3", 2.0 ** (-63 / 8) * 0.49, 0.0),  # below half the smallest magnitude: to zero
    ("lns4.3", 2.0 ** (-63 / 8) * 0.51, 2.0 ** (-63 / 8)),  # above half: to the smallest magnitude
]


@pytest.mark.parametrize("fmt, x, want", TABLE)
def test_exact_table(fmt, x, want):
    got = quantize(np.array([x]), fmt)[0]
    assert got == np.float32(want), (fmt, x, got, want)


def test_lns_rounds_to_the_nearest_value_in_the_linear_domain():
    r = 2.0 ** (1 / 8)
    mid_linear = (1 + r) / 2  # below the log-domain midpoint 2**(1/16)
    assert quantize([mid_linear * (1 - 1e-6)], "lns4.3")[0] == 1.0
    assert quantize([mid_linear * (1 + 1e-6)], "lns4.3")[0] == np.float32(r)


def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
    assert np.isnan(quantize(x, "e4m3")[0])
    np.testing.assert_array_equal(quantize(x, "e4m3")[1:], [448, -448, 0, 0])
    assert np.signbit(quantize(x, "e4m3")[4])  # -0 keeps its sign
    sat_off = quantize(np.array([1e6, -1e6]), "e4m3", saturate=False)
    assert np.isnan(sat_off).all()  # E4M3 has no infinity
    np.testing.assert_array_equal(quantize(np.array([1e6, -1e6]), "e5m2", saturate=False), [np.inf, -np.inf])
    np.testing.assert_array_equal(quantize(np.array([1e6]), "e2m1", saturate=False), [6.0])  # no inf, no NaN
    assert np.isnan(quantize(np.array([0.0, -1.0]), "e8m0")).all()
    assert np.isnan(quantize(np.array([np.nan]), "int8")[0]) and np.isnan(quantize([np.nan], "lns4.3")[0])


def test_scale_and_broadcast():
    x = np.array([[1.0, 2.0], [10.0, 20.0]])
    got = quantize(x, "e2m1", scale=np.array([[1.0], [10.0]]))
    np.testing.assert_array_equal(got, x)
    np.testing.assert_array_equal(quantize([7.0], "e2m1", scale=0.5), [3.0])


# --------------------------------------------------------------------------------------------------------------
# Properties
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
names = st.sampled_from(["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "fp16", "bf16", "tf32", "int8", "int4", "lns4.3"])


@settings(max_examples=200, deadline=None)
@given(names, st.lists(finite32, min_size=1, max_size=20))
def test_idempotent(fmt, xs):
    q = quantize(np.array(xs, dtype=np.float32), fmt)
    np.testing.assert_array_equal(quantize(q, fmt), q)


@settings(max_examples=200, deadline=None)
@given(names, st.lists(finite32, min_size=2, max_size=20))
def test_monotone(fmt, xs):
    x = np.sort(np.array(xs, dtype=np.float32))
    assert np.all(np.diff(quantize(x, fmt).astype(np.float64)) >= 0)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "fp16", "bf16", "tf32", "lns4.3"]),
       st.lists(finite32, min_size=1, max_size=20))
def test_symmetric(fmt, xs):
    x = np.array(xs, dtype=np.float32)
    np.testing.assert_array_equal(quantize(-x, fmt), -quantize(x, fmt))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "fp16", "bf16", "tf32"]), finite32)
def test_error_within_half_ulp_in_range(fmt, x):
    spec = get_format(fmt)
    a = abs(float(x))
    if a > spec.max_value:
        return
    # The spacing of the grid at |x|: 2**(e - man_bits) with e the binade (at least emin for subnormals).
    e = max(np.frexp(a)[1] - 1, spec.emin) if a > 0 else spec.emin
    ulp = 2.0 ** (e - spec.man_bits)
    assert abs(float(quantize([x], fmt)[0]) - float(x)) <= ulp / 2


@settings(max_examples=100, deadline=None)
@given(names, st.lists(finite32, min_size=1, max_size=10))
def test_results_are_on_the_grid(fmt, xs):
    spec = get_format(fmt)
    if spec.bits > 16:
        return
    q = quantize(np.array(xs, dtype=np.float32), fmt).astype(np.float64)
    grid = spec.values().astype(np.float32).astype(np.float64)
    assert np.isin(q, grid).all()


@pytest.mark.parametrize("fmt", ["e4m3", "e2m1", "int4", "lns4.3", "bf16"])
def test_stochastic_rounding_is_unbiased(fmt):
    rng = np.random.default_rng(0)
    spec = get_format(fmt)
    x = rng.uniform(-0.9, 0.9, 64) * spec.max_value * (0.05 if spec.kind != "int" else 1)
    n = 4000
    q = quantize(np.broadcast_to(x, (n, x.size)), fmt, rounding="stochastic", rng=rng).astype(np.float64)
    # Each sample is one of two neighbours a gap g apart: the mean's standard error is at most g / (2 sqrt(n)).
    hi = quantize(x, fmt, rounding="nearest").astype(np.float64)
    gap = np.maximum(np.abs(q.max(axis=0) - q.min(axis=0)), 1e-30)
    assert np.all(np.abs(q.mean(axis=0) - x) <= 5 * gap / (2 * np.sqrt(n)) + 1e-7 * np.abs(x))
    assert np.all((q == q.min(axis=0)) | (q == q.max(axis=0)))  # only two values per column
    assert np.all((q.min(axis=0) <= hi) & (hi <= q.max(axis=0)))  # the nearest is one of them


def test_stochastic_rounding_only_picks_neighbours():
    x = np.full(1000, 1.03)
    q = quantize(x, "e4m3", rounding="stochastic", rng=0)
    assert set(np.unique(q).tolist()) == {1.0, 1.125}


# --------------------------------------------------------------------------------------------------------------
# Bit codes
@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_encode_matches_ml_dtypes_bits_and_decode_inverts(fmt):
    x = _comparable(_hard_float32s(fmt), fmt)
    x = x[~np.isnan(x) & (np.abs(x) <= fmt.max_value)]
    if not fmt.signed:
        x = x[x > 0]
    codes = encode(x, fmt)
    ref = x.astype(_ml(fmt)).view(np.uint8)
    np.testing.assert_array_equal(codes, ref)
    np.testing.assert_array_equal(decode(codes, fmt), quantize(x, fmt))
    all_codes = np.arange(1 << fmt.bits, dtype=np.uint8)
    vals = decode(all_codes, fmt)
    finite = np.isfinite(vals)
    np.testing.assert_array_equal(encode(vals[finite], fmt)[vals[finite] != 0], all_codes[finite][vals[finite] != 0])


def test_encode_nan_codes():
    assert encode([np.nan], "e4m3")[0] == 0x7F and encode([np.nan], "e8m0")[0] == 0xFF
    assert np.isnan(decode(encode([np.nan], "e5m2"), "e5m2")[0])


def test_round_to_values_ties_and_ends():
    v = np.array([-1.0, 0.0, 2.0])
    # -0.5 and 1.0 are ties: to the even index
    np.testing.assert_array_equal(round_to_values([-5, -0.5, 1.0, 0.9, 9, np.nan], v), [-1, -1, 2, 0, 2, np.nan])


# --------------------------------------------------------------------------------------------------------------
# Errors
def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown format 'e4m4'"):
        quantize([1.0], "e4m4")
    with pytest.raises(ValueError, match="scale must be finite and > 0; got 0.0"):
        quantize([1.0], "e4m3", scale=0.0)
    with pytest.raises(ValueError, match="scale must be finite and > 0; got -2.0"):
        quantize([1.0], "e4m3", scale=-2.0)
    with pytest.raises(ValueError, match="scale must be finite and > 0; got inf"):
        quantize([1.0], "e4m3", scale=np.inf)
    with pytest.raises(ValueError, match="does not broadcast"):
        quantize(np.ones((2, 3)), "e4m3", scale=np.ones(2))
    with pytest.raises(ValueError, match="rounding must be one of"):
        quantize([1.0], "e4m3", rounding="up")
    with pytest.raises(TypeError, match="x must be real"):
        quantize(np.array([1j]), "e4m3")
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        quantize(np.array(["a"]), "e4m3")
    with pytest.raises(ValueError, match="bit codes are for the 4-, 6- and 8-bit float formats, got 'fp16'"):
        encode([1.0], "fp16")
    with pytest.raises(ValueError, match="NaN has no code in e2m1"):
        encode([np.nan], "e2m1")
    with pytest.raises(ValueError, match="codes must be in \\[0, 15\\] for e2m1"):
        decode(np.array([16]), "e2m1")
    with pytest.raises(TypeError, match="codes must be an integer array"):
        decode(np.array([1.0]), "e2m1")
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        quantize([1.0], "int8", rounding="stochastic", rng="seed")
