"""Number formats as frozen specs: integers, IEEE/OCP floats and logarithmic numbers, with a registry by name.

One spec object per format carries everything about it; every other number (largest value, smallest normal
and subnormal, epsilon, the list of representable values) is a derived property, so nothing can drift out of
step. Three families share one small interface (``name``, ``bits``, ``kind``, ``max_value``, ``min_normal``,
``min_positive``, ``epsilon``, ``has_inf``, ``has_nan``, ``magnitudes()``, ``values()``):

* :class:`IntFormat`: two's-complement or unsigned integers (``int8``, ``int4``, ``uint8``, ...).
* :class:`FloatFormat`: sign, exponent and mantissa fields. Three conventions for special values exist:
  ``"ieee"`` (all-ones exponent is inf or NaN: fp32, tf32, fp16, bf16, OCP E5M2), ``"fn"`` (finite, only the
  all-ones code is NaN: OCP E4M3, which therefore reaches 448 and has no infinity), ``"none"`` (no inf, no
  NaN: the OCP FP6 and FP4 element types). E8M0 is the unsigned power-of-two scale type of OCP MX.
* :class:`LogFormat`: sign and a fixed-point base-2 exponent with ``int_bits`` integer and ``frac_bits``
  fractional bits ("Log 4.3" fits a byte). Its nonzero codes run symmetrically over
  ``[-(2**(I+F-1) - 1), 2**(I+F-1) - 1]`` (the most negative code is spent on zero), the same grid as
  :mod:`scaledl.numerics.logarithmic`. For Log 4.3 that is ``2**(k/8)``, ``|k| <= 63``: from 2**-7.875 to
  2**7.875 = 234.8, a dynamic range of 15.75 binades, close to E4M3's (14.8 binades of normal numbers from
  2**-6 to 448, 17.8 with subnormals). Only the ratio max/min matters: a scale factor moves the window.

:func:`get_format` accepts a spec, a short name (``"e4m3"``), an ml_dtypes name (``"float8_e4m3fn"``) or
dtype, ``"intN"``/``"uintN"`` and ``"lnsI.F"``.

>>> fmt = get_format("e4m3")
>>> fmt.max_value, fmt.min_normal, fmt.min_positive, fmt.epsilon
(448.0, 0.015625, 0.001953125, 0.125)
>>> get_format("float4_e2m1fn").magnitudes().tolist()
[0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
>>> get_format("lns4.3").bits, round(get_format("lns4.3").max_value, 1)
(8, 234.8)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["IntFormat", "FloatFormat", "LogFormat", "Format", "get_format", "format_names", "FORMATS"]

_TABLE_MAX_BITS = 16  # values()/decode_table() enumerate every code; 2**16 is still cheap, 2**19 (tf32) is not


def _check_int(name: str, value, lo: int, hi: int):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")


@dataclass(frozen=True)
class IntFormat:
    """A ``bits``-bit integer grid, two's complement when ``signed`` (int8: -128..127), else 0..2**bits-1.

    >>> IntFormat(4).values().tolist()[:3], IntFormat(4).max_value
    ([-8.0, -7.0, -6.0], 7.0)
    """

    bits: int
    signed: bool = True

    kind = "int"
    has_inf = False
    has_nan = False

    def __post_init__(self):
        _check_int("bits", self.bits, 2, 32)

    @property
    def name(self) -> str:
        return f"{'' if self.signed else 'u'}int{self.bits}"

    @property
    def max_int(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def min_int(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max_value(self) -> float:
        return float(self.max_int)

    @property
    def min_value(self) -> float:
        """The most negative value (``-2**(bits-1)``, 0 unsigned), as NumPy's ``iinfo.min``; the smallest
        positive one is :attr:`min_positive` (every format has that name)."""
        return float(self.min_int)

    @property
    def min_normal(self) -> float:
        """Integers have no normal/subnormal split; the smallest nonzero magnitude, 1, stands in."""
        return 1.0

    min_positive = min_normal

    @property
    def epsilon(self) -> float:
        """The step between neighbours (absolute, the same everywhere: why integers are poor at small values)."""
        return 1.0

    def magnitudes(self) -> np.ndarray:
        """Non-negative representable values, ascending (float64)."""
        _check_table(self)
        return np.arange(0, self.max_int + 1, dtype=np.float64)

    def values(self) -> np.ndarray:
        """Every representable value, ascending (float64)."""
        _check_table(self)
        return np.arange(self.min_int, self.max_int + 1, dtype=np.float64)


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: sign, ``exp_bits`` exponent bits with ``bias``, ``man_bits`` fraction.

    Args:
        name: the book's short name (``"e4m3"``).
        exp_bits, man_bits, bias: the fields; a normal value is ``(1 + M / 2**man_bits) * 2**(E - bias)``.
        specials: ``"ieee"``, ``"fn"`` or ``"none"`` (see the module docstring); E8M0 uses ``"fn"`` for its
            one NaN code 0xFF.
        signed: False only for E8M0.
        subnormals: False only for E8M0 (its exponent code 0 is the normal value 2**-127).
        ml_dtypes_name: the ml_dtypes (or NumPy) type with the same values, or None (tf32).
        ties: ``"even"`` (IEEE round-to-nearest-even) or ``"away"``; ml_dtypes rounds E8M0 ties away from zero.

    >>> e5m2 = get_format("e5m2")
    >>> e5m2.max_value, e5m2.has_inf, e5m2.epsilon
    (57344.0, True, 0.25)
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    specials: str = "ieee"
    signed: bool = True
    subnormals: bool = True
    ml_dtypes_name: str | None = None
    ties: str = "even"

    kind = "float"

    def __post_init__(self):
        _check_int("exp_bits", self.exp_bits, 1, 8)
        _check_int("man_bits", self.man_bits, 0, 23)
        if self.specials not in ("ieee", "fn", "none"):
            raise ValueError(f"specials must be 'ieee', 'fn' or 'none', got {self.specials!r}")
        if self.ties not in ("even", "away"):
            raise ValueError(f"ties must be 'even' or 'away', got {self.ties!r}")

    @property
    def bits(self) -> int:
        return int(self.signed) + self.exp_bits + self.man_bits

    @property
    def has_inf(self) -> bool:
        return self.specials == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.specials != "none"

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.bias if self.subnormals else -self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number (the all-ones exponent is lost to inf/NaN under IEEE)."""
        top = (1 << self.exp_bits) - 1
        return top - 1 - self.bias if self.specials == "ieee" else top - self.bias

    @property
    def max_value(self) -> float:
        # Under "fn" the all-ones code is NaN, so the top binade loses its last mantissa step (E4M3: 1.75 * 2**8);
        # E8M0 (no mantissa) loses its whole top exponent instead.
        if self.specials == "fn" and self.man_bits == 0:
            return math.ldexp(1.0, self.emax - 1)
        lost = 2 if self.specials == "fn" else 1
        return math.ldexp(2.0 - lost * 2.0 ** -self.man_bits, self.emax)

    @property
    def min_normal(self) -> float:
        return math.ldexp(1.0, self.emin)

    @property
    def min_subnormal(self) -> float:
        return math.ldexp(1.0, self.emin - self.man_bits) if self.subnormals else self.min_normal

    @property
    def min_positive(self) -> float:
        return self.min_subnormal

    @property
    def epsilon(self) -> float:
        """Distance from 1 to the next larger value: ``2**-man_bits``."""
        return math.ldexp(1.0, -self.man_bits)

    def decode_table(self) -> np.ndarray:
        """The float64 value of every bit code 0 .. 2**bits - 1 (NaN for NaN codes), built from the fields."""
        _check_table(self)
        codes = np.arange(1 << self.bits, dtype=np.int64)
        m = codes & ((1 << self.man_bits) - 1)
        e = (codes >> self.man_bits) & ((1 << self.exp_bits) - 1)
        neg = ((codes >> (self.exp_bits + self.man_bits)) & 1).astype(bool) if self.signed else np.zeros_like(e, bool)
        frac = m / float(1 << self.man_bits)
        if self.subnormals:
            mag = np.where(e == 0, np.ldexp(frac, self.emin), np.ldexp(1.0 + frac, e - self.bias))
        else:
            mag = np.ldexp(1.0 + frac, e - self.bias)
        top = (1 << self.exp_bits) - 1
        if self.specials == "ieee":
            mag = np.where((e == top) & (m == 0), np.inf, mag)
            mag = np.where((e == top) & (m != 0), np.nan, mag)
        elif self.specials == "fn":
            mag = np.where((e == top) & (m == (1 << self.man_bits) - 1), np.nan, mag)
        return np.where(neg, -mag, mag)

    def magnitudes(self) -> np.ndarray:
        """Finite non-negative representable values, ascending (E8M0 has no zero)."""
        t = self.decode_table()
        return np.unique(np.abs(t[np.isfinite(t)]))

    def values(self) -> np.ndarray:
        """Every finite representable value, ascending, zero counted once."""
        t = self.decode_table()
        return np.unique(t[np.isfinite(t)])


@dataclass(frozen=True)
class LogFormat:
    """A logarithmic format: ``±2**(k / 2**frac_bits)`` with ``|k| <= 2**(int_bits + frac_bits - 1) - 1``, and 0.

    :mod:`scaledl.numerics.logarithmic` does arithmetic on this grid (its ``LogGrid`` is this class).
    ``epsilon`` is the ratio step minus one.

    >>> f = LogFormat(4, 3)
    >>> f.name, f.bits, round(f.epsilon, 4), f.magnitudes().size
    ('lns4.3', 8, 0.0905, 128)
    """

    int_bits: int
    frac_bits: int

    kind = "log"
    has_inf = False
    has_nan = False
    signed = True

    def __post_init__(self):
        _check_int("int_bits", self.int_bits, 0, 8)
        _check_int("frac_bits", self.frac_bits, 0, 8)
        if self.int_bits + self.frac_bits < 2:
            raise ValueError(f"int_bits + frac_bits must be at least 2, got {self.int_bits + self.frac_bits}")

    @property
    def name(self) -> str:
        return f"lns{self.int_bits}.{self.frac_bits}"

    @property
    def label(self) -> str:
        """The name the literature uses: ``"Log 4.3"``."""
        return f"Log {self.int_bits}.{self.frac_bits}"

    @property
    def bits(self) -> int:
        return 1 + self.int_bits + self.frac_bits

    @property
    def steps_per_octave(self) -> int:
        """Codes per factor of two: ``2**frac_bits``."""
        return 1 << self.frac_bits

    @property
    def code_max(self) -> int:
        return (1 << (self.int_bits + self.frac_bits - 1)) - 1

    @property
    def code_min(self) -> int:
        """Smallest nonzero code; the one below it is spent on zero."""
        return -self.code_max

    @property
    def dynamic_range_octaves(self) -> float:
        """log2(max / min): how many factors of two the format spans."""
        return (self.code_max - self.code_min) / self.steps_per_octave

    @property
    def max_value(self) -> float:
        return 2.0 ** (self.code_max / self.steps_per_octave)

    @property
    def min_normal(self) -> float:
        """Every nonzero value has full relative precision: the smallest one."""
        return 2.0 ** (-self.code_max / self.steps_per_octave)

    min_positive = min_normal

    @property
    def epsilon(self) -> float:
        return 2.0 ** (1.0 / self.steps_per_octave) - 1.0

    def magnitudes(self) -> np.ndarray:
        k = np.arange(-self.code_max, self.code_max + 1)
        return np.concatenate([[0.0], np.exp2(k / self.steps_per_octave)])

    def values(self) -> np.ndarray:
        m = self.magnitudes()
        return np.concatenate([-m[:0:-1], m])


Format = IntFormat | FloatFormat | LogFormat


def _check_table(fmt):
    if fmt.bits > _TABLE_MAX_BITS:
        raise ValueError(f"{fmt.name} has 2**{fmt.bits} codes; listing its values is limited to formats of at "
                         f"most {_TABLE_MAX_BITS} bits")


# The formats, each defined once. Fields from the IEEE 754 and OCP 8-bit/MX specifications; ml_dtypes has the
# same values (checked in tests/unit/test_numerics_formats.py).
FORMATS: dict[str, Format] = {f.name: f for f in [
    FloatFormat("fp32", 8, 23, 127, ml_dtypes_name="float32"),
    FloatFormat("tf32", 8, 10, 127),  # NVIDIA TensorFloat-32: fp32's range, fp16's precision; 19 bits used
    FloatFormat("fp16", 5, 10, 15, ml_dtypes_name="float16"),
    FloatFormat("bf16", 8, 7, 127, ml_dtypes_name="bfloat16"),
    FloatFormat("e5m2", 5, 2, 15, ml_dtypes_name="float8_e5m2"),
    FloatFormat("e4m3", 4, 3, 7, specials="fn", ml_dtypes_name="float8_e4m3fn"),
    FloatFormat("e3m2", 3, 2, 3, specials="none", ml_dtypes_name="float6_e3m2fn"),
    FloatFormat("e2m3", 2, 3, 1, specials="none", ml_dtypes_name="float6_e2m3fn"),
    FloatFormat("e2m1", 2, 1, 1, specials="none", ml_dtypes_name="float4_e2m1fn"),
    FloatFormat("e8m0", 8, 0, 127, specials="fn", signed=False, subnormals=False,
                ml_dtypes_name="float8_e8m0fnu", ties="away"),
    IntFormat(8), IntFormat(4), IntFormat(8, signed=False), IntFormat(4, signed=False),
    LogFormat(4, 3),
]}

_ALIASES = {
    "float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "tensorfloat32": "tf32",
    "fp8_e5m2": "e5m2", "fp8_e4m3": "e4m3", "e4m3fn": "e4m3", "fp6_e3m2": "e3m2", "fp6_e2m3": "e2m3",
    "fp4_e2m1": "e2m1", "fp4": "e2m1", "e8m0fnu": "e8m0", "ue8m0": "e8m0",
    **{f.ml_dtypes_name: f.name for f in FORMATS.values() if getattr(f, "ml_dtypes_name", None)},
}


def format_names() -> list[str]:
    """The registry's canonical names (aliases and the ``intN``/``lnsI.F`` patterns are also accepted)."""
    return list(FORMATS)


def get_format(fmt) -> Format:
    """The spec for ``fmt``: a spec (returned as is), a name, an alias, or a NumPy/ml_dtypes dtype.

    Raises:
        ValueError: an unknown name, or bits out of range in ``intN``/``uintN``/``lnsI.F``.
        TypeError: ``fmt`` is none of the accepted kinds.

    >>> get_format("int5").max_value, get_format("uint3").max_value, get_format("lns3.2").name
    (15.0, 7.0, 'lns3.2')
    """
    if isinstance(fmt, (IntFormat, FloatFormat, LogFormat)):
        return fmt
    if isinstance(fmt, (np.dtype, type)):
        try:
            fmt = np.dtype(fmt).name
        except TypeError:
            raise TypeError(f"fmt: {fmt!r} is not a NumPy dtype or a format") from None
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a format spec, a format name or a dtype, got {fmt!r} ({type(fmt).__name__})")
    key = fmt.strip().lower()
    key = _ALIASES.get(key, key)
    if key in FORMATS:
        return FORMATS[key]
    m = re.fullmatch(r"(u?)int(\d+)", key)
    if m:
        bits = int(m.group(2))
        if not 2 <= bits <= 32:
            raise ValueError(f"fmt {fmt!r}: integer bits must be in [2, 32], got {bits}")
        return IntFormat(bits, signed=not m.group(1))
    m = re.fullmatch(r"lns(\d+)\.(\d+)", key)
    if m:
        i, f = int(m.group(1)), int(m.group(2))
        if not (0 <= i <= 8 and 0 <= f <= 8 and i + f >= 2):
            raise ValueError(f"fmt {fmt!r}: a log format needs 0..8 integer and 0..8 fractional bits, at least 2 "
                             f"in all; got {i} and {f}")
        return LogFormat(i, f)
    raise ValueError(f"fmt: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}, an alias such as "
                     f"'float8_e4m3fn', 'intN'/'uintN' (N in 2..32) or 'lnsI.F'")
