"""Lab 03's graded tasks: each judge accepts a correct answer, rejects the classic bugs and hostile results."""

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from scaledl.course import exchange
from scaledl.course.tasks import get
from scaledl.numerics import encode, octav_clip, quantize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared task_helpers module
from task_helpers import graded, rejected  # noqa: E402

SEEDS = (0, 1, 2)


def _round_ref(x):
    return quantize(np.asarray(x, np.float32), "e4m3").astype(np.float32)


def _encode_ns(body="return encode(e4m3_round(x), 'e4m3')", **extra):
    """A notebook-like namespace whose ``e4m3_encode`` looks ``e4m3_round`` up in it, as a notebook's does."""
    ns = {"np": np, "encode": encode, "e4m3_round": _round_ref, **extra}
    exec(f"def e4m3_encode(x):\n    {body}\n", ns)
    return ns


def _octav_ref(x, bits, iters=20):
    return octav_clip(x, bits, iters=iters, rtol=0.0)[1]


def _snr_ref(x, q):
    return 10 * np.log10(np.mean(x**2) / np.mean((q - x) ** 2))


def _gain_ref(x, bits, octav=_octav_ref, snr=_snr_ref):
    top = 2 ** (bits - 1) - 1
    q_max = quantize(x, f"int{bits}", scale=np.abs(x).max() / top)
    q_oct = quantize(x, f"int{bits}", scale=octav(x, bits)[-1] / top)
    return (snr(x, q_oct) - snr(x, q_max)) / (20 * np.log10(2))


CORRECT = {
    "task_1_1": lambda: {"e4m3_round": _round_ref},
    "task_1_2": _encode_ns,
    "task_2_1": lambda: {"octav": _octav_ref},
    "task_2_2": lambda: {"snr_db": _snr_ref, "clipping_gain_bits": _gain_ref},
}


def _run(grade_id, ns, seed=0):
    return graded("lab03", grade_id, ns, seed)


def _rejects(grade_id, ns, match, seed=0):
    rejected(*_run(grade_id, ns, seed), match)


# (a) a correct answer passes on several seeds, and at the notebook's own local seed
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_judge_accepts_a_correct_answer(grade_id, seed):
    task, inp, out = _run(grade_id, CORRECT[grade_id](), seed)
    task.judge(inp, out)


@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_judge_accepts_a_correct_answer_at_the_local_seed(grade_id):
    task = get("lab03", grade_id)
    _, inp, out = _run(grade_id, CORRECT[grade_id](), task.local_seed)
    task.judge(inp, out)


# (b) the classic bugs
def _round_half_up(x):
    x = np.asarray(x, np.float32)
    a = np.abs(x.astype(np.float64))
    _, e = np.frexp(np.where(np.isfinite(a), a, 0.0))
    ulp = np.ldexp(1.0, np.maximum(e - 1, -6) - 3)
    q = np.where(np.isfinite(a), np.minimum(np.floor(a / ulp + 0.5) * ulp, 448.0), 448.0)
    return np.copysign(q, x).astype(np.float32)


def test_task_1_1_rejects_rounding_half_up_and_no_saturation():
    _rejects("task_1_1", {"e4m3_round": _round_half_up}, r"Task 1\.1: \d+ of \d+ values differ")
    no_sat = {"e4m3_round": lambda x: np.where(np.abs(x) > 448, x, _round_ref(x)).astype(np.float32)}
    _rejects("task_1_1", no_sat, r"Task 1\.1: saturation")


# (b') the classic bugs get a hint that names them; the right answer and unrelated junk get none
def _e4m3_bug(*, exponent_floor=-6, rounding=np.rint, below_normal=None, top=448.0):
    """The solution's recipe with one step changed, as students change it."""
    def f(x):
        x = np.asarray(x, np.float32)
        a = np.abs(x.astype(np.float64))
        finite = np.isfinite(a)
        _, e = np.frexp(np.where(finite, a, 0.0))
        exponent = np.maximum(e - 1, exponent_floor) if exponent_floor is not None else e - 1
        ulp = np.ldexp(1.0, exponent - 3)
        q = rounding(a / ulp) * ulp
        if below_normal is not None:
            q = np.where(a < 2.0**-6, below_normal, q)
        q = np.where(finite, np.minimum(q, top), top) if top is not None else np.where(finite, q, a)
        q = np.where(np.isnan(a), np.nan, q)
        return np.copysign(q, x).astype(np.float32)
    return {"e4m3_round": f}


@pytest.mark.parametrize("bug, hint", [
    # subnormals flushed to zero, or clamped at the smallest normal
    (dict(below_normal=0.0), r"Hint: values below the smallest normal 0\.015625 \(2\^-6\) were flushed to zero"),
    (dict(below_normal=2.0**-6), r"Hint: values below the smallest normal .* were clamped to it"),
    # no exponent clamp: subnormals keep 3 mantissa bits they do not have
    (dict(exponent_floor=None), r"Hint: subnormals came back with more precision than E4M3 has"),
    # ties: round half away from zero (floor(v + 0.5) on magnitudes), or toward zero
    (dict(rounding=lambda v: np.floor(v + 0.5)), r"Hint: ties .* were rounded away from zero.*half to even"),
    (dict(rounding=lambda v: np.ceil(v - 0.5)), r"Hint: ties .* were rounded toward zero"),
    (dict(rounding=np.floor), r"Hint: values were truncated toward zero"),
])
def test_task_1_1_names_the_classic_rounding_bug(bug, hint):
    _rejects("task_1_1", _e4m3_bug(**bug), r"Task 1\.1: \d+ of \d+ values differ; at .*" + hint)


def _beyond_448(value):
    """The right rounding in range; ``value(x)`` for everything beyond 448."""
    return {"e4m3_round": lambda x: np.where(np.abs(x) > 448, value(np.asarray(x, np.float32)),
                                             _round_ref(x)).astype(np.float32)}


@pytest.mark.parametrize("ns, hint", [
    (_beyond_448(lambda x: np.copysign(np.inf, x)), r"overflowed to inf; E4M3 \(float8_e4m3fn\) has no "
                                                    r"infinity.*saturates .* to \+-448"),
    (_e4m3_bug(top=None), r"came back beyond 448 \(rounded on, but not saturated\); .*saturates"),
    (_beyond_448(lambda x: np.full_like(x, np.nan)), r"became NaN \(what a plain cast to float8_e4m3fn gives\)"),
    (_beyond_448(lambda x: np.full_like(x, 448)), r"the sign was lost"),
])
def test_task_1_1_names_the_saturation_bug(ns, hint):
    _rejects("task_1_1", ns, r"Task 1\.1: saturation of 500, -1e6, inf: Yours .* Hint: (out-of-range values )?" + hint)


def test_task_1_1_gives_no_hint_to_the_right_answer_or_to_unrelated_errors():
    from scaledl.labs.e4m3_checks import rounding_hints, saturation_hint  # the notebook's check uses them too

    task, inp, out = _run("task_1_1", CORRECT["task_1_1"]())
    want = inp["x"].astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert rounding_hints(inp["x"], out["got"], want) == []
    assert saturation_hint(inp["sat"], out["sat"]) == ""
    # an answer that is wrong for another reason (a scale slip, random noise) is not told a classic bug
    for wrong in (out["got"] * 1.5, out["got"] + np.random.default_rng(3).normal(size=out["got"].size)):
        assert rounding_hints(inp["x"], wrong, want) == []
    off_by_scale = {"e4m3_round": lambda x: (2 * _round_ref(x)).astype(np.float32)}
    with pytest.raises(AssertionError) as e:
        task.judge(inp, exchange.roundtrip(task.produce(off_by_scale, inp)))
    assert "Hint" not in str(e.value)


def test_task_1_2_rejects_a_lost_sign_and_a_wrong_nan_code():
    _rejects("task_1_2", _encode_ns("return encode(np.abs(e4m3_round(x)), 'e4m3')"),
             r"Task 1\.2: \d+ of \d+ codes differ")
    _rejects("task_1_2", _encode_ns("c = encode(e4m3_round(x), 'e4m3')\n    return np.where(np.isnan(x), 0xFF, c)"),
             r"Task 1\.2: the NaN code")


def test_task_1_2_is_graded_with_the_library_rounding_and_restores_the_students():
    ns = _encode_ns()
    ns["e4m3_round"] = _round_half_up  # a wrong Task 1.1 costs nothing here
    task, inp, out = _run("task_1_2", ns)
    task.judge(inp, out)
    assert ns["e4m3_round"] is _round_half_up
    ns = _encode_ns()
    del ns["e4m3_round"]               # never defined: produce leaves no stand-in behind
    _run("task_1_2", ns)
    assert "e4m3_round" not in ns


def test_task_1_2_restores_the_students_rounding_when_encode_raises():
    ns = _encode_ns("raise RuntimeError('mine')")
    ns["e4m3_round"] = _round_half_up
    with pytest.raises(RuntimeError, match="mine"):
        _run("task_1_2", ns)
    assert ns["e4m3_round"] is _round_half_up


def test_task_2_1_rejects_the_wrong_noise_constant_and_an_early_stop():
    def no_third(x, bits, iters=20):  # the rounding noise c**2 4**-B without its 1/3
        a, c = np.abs(x), np.abs(x).mean()
        hist = [c]
        for _ in range(iters):
            c = a[a > c].sum() / (4.0**-bits * np.count_nonzero(a <= c) + np.count_nonzero(a > c))
            hist.append(c)
        return hist

    _rejects("task_2_1", {"octav": no_third}, r"Task 2\.1: data set 1, \d bits: Yours")
    _rejects("task_2_1", {"octav": lambda x, bits, iters=20: _octav_ref(x, bits, 3)}, r"Task 2\.1")


def test_task_2_2_rejects_an_amplitude_snr_and_a_gain_in_decibels():
    amplitude = lambda x, q: 20 * np.log10(np.mean(x**2) / np.mean((q - x) ** 2))
    _rejects("task_2_2", {"snr_db": amplitude, "clipping_gain_bits": _gain_ref}, r"Task 2\.2: snr_db")
    in_db = lambda x, bits: _gain_ref(x, bits) * 20 * np.log10(2)
    _rejects("task_2_2", {"snr_db": _snr_ref, "clipping_gain_bits": in_db}, r"Task 2\.2: clipping_gain_bits")


# (c) hostile results: every one an AssertionError naming the task, never another exception, never a pass
def _junk(value):
    yield "missing", None
    yield "a string", "junk"
    yield "None", None
    yield "a huge number", 1e308
    yield "NaN", float("nan")
    yield "a bool", True
    yield "a nested list", [[1, 2], [3]]
    yield "a wrong shape", np.zeros((2, 3))
    if isinstance(value, np.ndarray):
        yield "all zeros", np.zeros_like(value)
        yield "all NaN", np.full(value.shape, np.nan)
        yield "one element too many", np.concatenate([value.ravel(), value.ravel()[:1]])
        yield "huge values", np.full(value.shape, 1e300)


@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_judge_rejects_hostile_outputs(grade_id):
    task, inp, good = _run(grade_id, CORRECT[grade_id]())
    for key, value in good.items():
        for label, bad in _junk(value):
            out = dict(good)
            if label == "missing":
                del out[key]
            else:
                out[key] = bad
            if label != "missing" and isinstance(value, np.ndarray) and isinstance(bad, np.ndarray) \
                    and bad.shape == value.shape and np.array_equal(bad, value):
                continue  # the junk happens to be the right answer
            with pytest.raises(AssertionError, match=get("lab03", grade_id).title) as e:
                task.judge(inp, exchange.roundtrip(out))
            assert e.type is AssertionError, (key, label)


# (d) fresh inputs per grading run
@pytest.mark.parametrize("grade_id", list(CORRECT))
def test_make_inputs_differs_between_seeds(grade_id):
    task = get("lab03", grade_id)
    a, b = task.make_inputs(np.random.default_rng(1)), task.make_inputs(np.random.default_rng(2))
    assert a.keys() == b.keys()
    assert any(not (np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k])
               for k in a if isinstance(a[k], np.ndarray) and a[k].size > 3)


def test_task_1_1_and_1_2_inputs_hold_every_tie_and_every_code():
    grid = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    inp = get("lab03", "task_1_2").make_inputs(np.random.default_rng(0))
    codes = set(inp["x"].astype(ml_dtypes.float8_e4m3fn).view(np.uint8).tolist())
    assert codes >= set(np.flatnonzero(np.isfinite(grid)).tolist())
    x = get("lab03", "task_1_1").make_inputs(np.random.default_rng(0))["x"]
    g = np.unique(np.abs(grid[np.isfinite(grid)]).astype(np.float64))
    assert set(((g[:-1] + g[1:]) / 2).astype(np.float32).tolist()) <= set(np.abs(x).tolist())
