"""Named failures for dependency drift: a new release of ml_dtypes, NumPy or numba-cuda that changes a result the
book prints fails here, saying which release, which behaviour and which chapters, instead of as a mystery in
nbval.

pyproject.toml pins these by floor only (``>=``), so a fresh clone takes whatever is newest: ml_dtypes 0.7 once
turned main red by rounding float64 casts once (the floor, 0.5.1, and Colab's 0.6.0 went through float32). Each
probe below computes one behaviour the book relies on from a fixed input and compares a digest of its exact bits
with the behaviours known so far, each named with the releases that have it. Known behaviours that differ are
those the book's own results do not depend on (``quantize`` rounds float64 once itself, whichever ml_dtypes is
installed); a behaviour not in the table fails. `make test-compat` runs this file on the floors, on Colab's
image and on the newest releases (its ``newest`` step installs them on purpose).

To accept a new behaviour: re-execute the chapters the message names (``scaledl book execute ...``), check that
the diff is what the release notes explain, and add the digest under the release's name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared tests/drift.py
from drift import check_known, digest, version  # noqa: E402


# ------------------------------------------------------------------------------------------------------------------
# The probes: each returns (digest, a short sample of the values for the message)
ML_TYPES = ["float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "float6_e3m2fn", "float6_e2m3fn",
            "float4_e2m1fn", "float8_e8m0fnu"]


def _ml_dtype(name):
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name, None) or name)


def _boundary_float32s() -> np.ndarray:
    """Every float32 whose low 20 mantissa bits are a rounding boundary pattern of some format, over the exponents
    the small formats use, both signs, with zeros, infinities and NaN: where a cast's rounding shows."""
    tails = np.array([0, 1, 0x3FFFF, 0x40000, 0x40001, 0xFFFFF, 0x7FFFF, 0x80000, 0x80001, 0x1FFFF, 0x20000,
                      0x20001, 0x7FFF, 0x8000, 0x8001], dtype=np.int64)
    kept = np.arange(8, dtype=np.int64) << 20
    exps = np.arange(100, 160, dtype=np.int64)
    bits = ((exps[:, None, None] << 23) | kept[None, :, None] | tails[None, None, :]).ravel()
    bits = np.concatenate([bits, bits | 0x80000000, [0, 0x80000000, 0x7F800000, 0xFF800000]])
    return bits.astype(np.uint32).view(np.float32)


def probe_ml_dtypes_float32_casts():
    x = _boundary_float32s()
    with np.errstate(over="ignore", invalid="ignore"):
        outs = [x.astype(_ml_dtype(t)).astype(np.float32) for t in ML_TYPES]
    outs = [np.where(np.isnan(o), np.float32(np.nan), o) for o in outs]  # NaN payloads are not a behaviour
    near_one = np.flatnonzero((x > 1) & (x < 2))[:3]
    return digest(*outs), {"x": x[near_one].tolist(), **{t: o[near_one].tolist() for t, o in zip(ML_TYPES[:2], outs)}}


def probe_ml_dtypes_float64_casts():
    m = np.array([3, 2, 7, 10, 2, 3, 1], dtype=np.float64)  # mantissa bits of the signed types, in order
    ties = 1 + 2.0 ** -(m + 1)
    x = np.concatenate([ties + 2.0**-40, ties - 2.0**-40, ties])
    outs = [x.astype(_ml_dtype(t)).astype(np.float64) for t in ML_TYPES[:7]]
    return digest(*outs), {"e4m3 of 1 + 2^-4 + 2^-40": float(outs[0][0])}


def probe_ml_dtypes_finfo():
    import ml_dtypes

    rows = []
    for t in ML_TYPES:
        fi = ml_dtypes.finfo(_ml_dtype(t))
        rows.append([float(fi.max), float(fi.tiny), float(fi.eps), float(fi.smallest_subnormal), fi.nmant, fi.nexp])
    return digest(np.array(rows, dtype=np.float64)), {"e4m3 max, tiny": rows[0][:2]}


def probe_numpy_generator_streams():
    draws = []
    for seed in (0, 1, 19, 2024):
        g = np.random.default_rng(seed)
        draws += [g.standard_normal(16), g.random(16), g.integers(0, 1000, 16).astype(np.int64),
                  g.permutation(32).astype(np.int64), g.choice(100, 8, replace=False).astype(np.int64),
                  g.exponential(1.0, 16), g.poisson(3.0, 16).astype(np.int64), g.uniform(-1, 1, 16),
                  g.normal(2.0, 0.5, 16), g.standard_normal(8, dtype=np.float32), g.random(8, dtype=np.float32)]
    return digest(*draws), {"default_rng(0).standard_normal(2)": draws[0][:2].tolist()}


def probe_numpy_percentiles():
    x = np.random.default_rng(7).exponential(1.0, 1001)
    qs = [50, 90, 95, 98, 99, 99.9]
    out = [np.percentile(x, qs), np.quantile(x, np.array(qs) / 100), np.median(x[:100]),
           np.rint(np.array([0.5, 1.5, 2.5, -0.5, -2.5])), np.round(np.array([0.125, 0.375]), 2)]
    return digest(*[np.asarray(o, dtype=np.float64) for o in out]), {"p98": float(out[0][3])}


# (dependency distribution, what is probed, the probe, what the book prints from it, known behaviours)
PROBES = [
    ("ml_dtypes", "float32 casts to every 4/6/8/16-bit type at rounding boundaries", probe_ml_dtypes_float32_casts,
     "chapter 07 (the ml_dtypes comparison, 'identical results on all 10000000 values') and every bit-exact test",
     {"ml_dtypes 0.5.1 to 0.7.0": "08b7ee3ff27c608b"}),
    ("ml_dtypes", "float64 casts just off a tie", probe_ml_dtypes_float64_casts,
     "nothing printed (quantize rounds float64 once itself); chapter 07 says which releases round once",
     {"through float32 first (ml_dtypes 0.5.1 to 0.6.0)": "adb044a3fa3b3057",
      "one rounding (ml_dtypes 0.7.0)": "fa93ac08d458bcb1"}),
    ("ml_dtypes", "finfo of every type", probe_ml_dtypes_finfo,
     "chapter 07's format table (scaledl's specs are checked against finfo)",
     {"ml_dtypes 0.5.1 to 0.7.0": "9a2c32c825f76cab"}),
    ("numpy", "Generator streams (PCG64: normal, uniform, integers, permutation, choice, ...)",
     probe_numpy_generator_streams,
     "every seeded result: the training chapters (09-12, 15-17), the serving and network simulations, the labs",
     {"numpy 1.26.0 to 2.4.6": "c1d46928fe5c9d2d"}),
    ("numpy", "percentiles, medians and round-half-even", probe_numpy_percentiles,
     "chapter 17 and lab 07 (tail latencies), every table printed with np.round",
     {"numpy 1.26.0 to 2.4.6": "559c0497138decd6"}),
]


@pytest.mark.parametrize("dist, what, probe, affects, known", PROBES, ids=[f"{p[0]}: {p[2].__name__}" for p in PROBES])
def test_dependency_behaviour_is_known(dist, what, probe, affects, known):
    got, sample = probe()
    check_known(dist, what, got, sample, affects, known, where="PROBES in tests/unit/test_dependency_drift.py")


def test_a_changed_behaviour_fails_naming_the_release():
    """The failure above is a named one: a probe whose result is not in its table fails, and says which."""
    dist, what, probe, affects, known = PROBES[0]
    with pytest.raises(pytest.fail.Exception, match=rf"ml_dtypes {version('ml_dtypes')} changed a behaviour"):
        test_dependency_behaviour_is_known(dist, what, probe, affects, {"an invented release": "0" * 16})
