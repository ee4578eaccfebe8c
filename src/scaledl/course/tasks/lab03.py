"""Lab 03 (quantizer and clipping): the graded tasks, split into inputs, production and judgement."""

from __future__ import annotations

import numpy as np

from scaledl.course.produce.lab03 import OCTAV_ITERS, PRODUCE
from scaledl.course.tasks import Task, array, first_mismatch
from scaledl.labs.e4m3_checks import rounding_hints, saturation_hint  # the notebook's check names the same bugs
from scaledl.labs.hints import with_hints

E4M3_MAX = 448.0  # largest finite float8_e4m3fn magnitude (ml_dtypes)
E4M3_MIN_NORMAL = 2.0**-6      # smallest normal: exponent field 1, bias 7
E4M3_MIN_SUBNORMAL = 2.0**-9   # smallest subnormal, and the spacing of every subnormal (3 mantissa bits)


def _e4m3_inputs(rng):
    import ml_dtypes

    grid = np.unique(np.abs(np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)))
    grid = grid[np.isfinite(grid)]
    mid = (grid[:-1] + grid[1:]) / 2                     # every tie of the format, exactly representable
    n = int(rng.integers(2500, 3500))
    x = np.concatenate([mid, -mid, rng.standard_normal(n) * np.exp2(rng.uniform(-11, 9, n))]).astype(np.float32)
    x = rng.permutation(x[np.abs(x) <= E4M3_MAX])
    return {"x": x, "sat": np.array([500.0, -1e6, np.inf], np.float32)}


def _e4m3_judge(inp, out):
    import ml_dtypes

    t = "Task 1.1"
    x = inp["x"]
    want = x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    with np.errstate(over="ignore"):  # a float64 result beyond float32's range becomes inf, and differs
        got = array(out, "got", shape=x.shape, dtype="f", title=t).astype(np.float32)
        sat = array(out, "sat", shape=(3,), dtype="f", title=t).astype(np.float32)
    try:
        first_mismatch(got, want, got.view(np.uint32) != want.view(np.uint32), title=t, inputs=x)
    except AssertionError as err:
        raise AssertionError(with_hints(str(err), rounding_hints(x, got, want))) from None
    spec = np.array([E4M3_MAX, -E4M3_MAX, E4M3_MAX], np.float32)
    if not np.array_equal(sat, spec):
        raise AssertionError(with_hints(f"{t}: saturation of 500, -1e6, inf: Yours {sat.tolist()}, Spec "
                                        f"{spec.tolist()}", [saturation_hint(inp["sat"], sat)]))


# --- Task 1.2: E4M3 codes, graded on its own (the library's rounding stands in for the student's 1.1) --------

def _codes_inputs(rng):
    import ml_dtypes

    grid = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    grid = grid[np.isfinite(grid)]                       # every finite code, both zeros and all subnormals
    n = int(rng.integers(3500, 4500)) | 1
    wide = (rng.standard_normal(n) * np.exp2(rng.uniform(-11, 8, n))).astype(np.float32)
    x = np.concatenate([grid, wide])
    return {"x": rng.permutation(x[np.abs(x) <= E4M3_MAX])}


def _codes_judge(inp, out):
    import ml_dtypes

    t = "Task 1.2"
    x = inp["x"]
    want = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    # Codes compare as float64: exact for every integer a code can be, and NaN or junk never equal.
    got = array(out, "got", shape=x.shape, dtype="iuf", title=t).astype(np.float64)
    first_mismatch(got, want, got != want, title=t, what="codes", inputs=x)
    nan = array(out, "nan", shape=(1,), dtype="iuf", title=t).astype(np.float64)
    assert nan[0] == 0x7F, f"{t}: the NaN code: Yours {nan[0]!r}, Spec 0x7f"


# --- Task 2.1: OCTAV's fixed point -------------------------------------------------------------------------

def _octav_inputs(rng):
    n_t, n_u = int(rng.integers(15_000, 25_000)) | 1, int(rng.integers(7_000, 12_000)) | 1
    data = {"d0": rng.standard_t(float(rng.uniform(3, 8)), n_t),   # heavy tails: clipping pays
            "d1": rng.uniform(-1, 1, n_u) ** 3}                    # bounded, peaked at zero
    bits = np.sort(rng.choice(np.arange(2, 9), size=2, replace=False)).astype(np.int64)
    return {**data, "bits": bits}


def _octav_judge(inp, out):
    from scaledl.numerics import octav_clip

    t = "Task 2.1"
    bits = [int(b) for b in inp["bits"]]
    got = array(out, "clip", shape=(2, len(bits)), dtype="f", title=t).astype(np.float64)
    for i, k in enumerate(("d0", "d1")):
        for j, b in enumerate(bits):
            spec, _ = octav_clip(inp[k], b, iters=OCTAV_ITERS, rtol=0.0)
            # the same iteration: only the order of summation may differ
            assert np.isclose(got[i, j], spec, rtol=1e-9, atol=0), \
                f"{t}: data set {i + 1}, {b} bits: Yours {got[i, j]!r}, Spec {spec!r}"


# --- Task 2.2: SNR, and what OCTAV's clip gains in bits ----------------------------------------------------

def _max_scaled(d, bits):
    """``d`` on the ``bits``-bit integer grid scaled to ``max |d|`` (no clipping)."""
    from scaledl.numerics import quantize

    top = 2 ** (bits - 1) - 1
    return quantize(d, f"int{bits}", scale=np.abs(d).max() / top)


def _snr_inputs(rng):
    d = rng.laplace(size=int(rng.integers(4000, 6000)) | 1)
    bits = np.sort(rng.choice(np.arange(3, 7), size=2, replace=False)).astype(np.int64)
    q = np.stack([_max_scaled(d, int(b)) for b in bits] + [d + 0.05 * rng.standard_normal(d.size)])
    return {"d": d, "bits": bits, "q": q}


def _snr_judge(inp, out):
    from scaledl.numerics import octav_clip, quantize

    t = "Task 2.2"
    d, q, bits = inp["d"], inp["q"], [int(b) for b in inp["bits"]]

    def snr(qi):
        return 10 * np.log10(np.mean(d**2) / np.mean((qi - d) ** 2))

    got = array(out, "snr", shape=(len(q),), dtype="f", title=t).astype(np.float64)
    for i, qi in enumerate(q):
        assert np.isclose(got[i], snr(qi), rtol=1e-9), f"{t}: snr_db, case {i + 1}: Yours {got[i]!r}, Spec {snr(qi)!r}"
    gain = array(out, "gain", shape=(len(bits),), dtype="f", title=t).astype(np.float64)
    for j, b in enumerate(bits):
        top = 2 ** (b - 1) - 1
        q_oct = quantize(d, f"int{b}", scale=octav_clip(d, b, iters=20, rtol=0.0)[0] / top)
        want = (snr(q_oct) - snr(_max_scaled(d, b))) / (20 * np.log10(2))
        assert np.isclose(gain[j], want, rtol=1e-6), \
            f"{t}: clipping_gain_bits, {b} bits: Yours {gain[j]!r}, Spec {want!r}"


TASKS = (
    Task("task_1_1", "Task 1.1", ("e4m3_round",), _e4m3_inputs, PRODUCE["task_1_1"], _e4m3_judge, local_seed=150301,
         forbidden=("scaledl.numerics.quantize", "scaledl.numerics.encode", "scaledl.numerics.round_to_values",
                    "ml_dtypes.float8_e4m3fn")),
    Task("task_1_2", "Task 1.2", ("e4m3_encode",), _codes_inputs, PRODUCE["task_1_2"], _codes_judge, local_seed=150302,
         forbidden=("ml_dtypes.float8_e4m3fn",), replaced=("e4m3_round",),
         needs=("scaledl.numerics.quantize",)),  # the library's rounding stands in for the student's 1.1
    Task("task_2_1", "Task 2.1", ("octav",), _octav_inputs, PRODUCE["task_2_1"], _octav_judge, local_seed=150303,
         forbidden=("scaledl.numerics.octav_clip",), forbidden_modules=("scaledl.numerics.scaling",)),
    Task("task_2_2", "Task 2.2", ("snr_db", "clipping_gain_bits"), _snr_inputs, PRODUCE["task_2_2"], _snr_judge,
         local_seed=150304, forbidden_modules=("scaledl.numerics.scaling",),
         needs=("scaledl.numerics.quantize",)),  # the answer quantizes with the library: only OCTAV is the task
)
