"""Lab 06's checks of a compressor: top-k, error feedback, DGC's momentum correction and masking, each
against :mod:`.spec`, with the hint its mismatch points to."""

from __future__ import annotations

import sys

import numpy as np

from scaledl.labs.check import CheckResult
from scaledl.labs.hints import hint
from scaledl.labs.dgc_checks.spec import (EF_RATIOS, EF_SIZES, _dense, _differences, _ef_gradients, _fmt, _hint,
                                          spec_dgc, spec_k, spec_topk_ef)
from scaledl.labs.top_k_spec import spec_top_k


# --------------------------------------------------------------------------------------------- top-k
def top_k_cases(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [
        ("hand: [3, -1, 4, -1, 5], k = 2", np.float32([3, -1, 4, -1, 5]), 2),
        ("hand: [0.5, -7, 2, 6], k = 1 (a negative is largest)", np.float32([0.5, -7, 2, 6]), 1),
        ("ties: [2, -2, 1, 2, -2], k = 3", np.float32([2, -2, 1, 2, -2]), 3),
        ("k = n = 5", np.float32([1, -2, 3, -4, 5]), 5),
        ("random, n = 37, k = 4", rng.standard_normal(37).astype(np.float32), 4),
        ("random, n = 101, k = 1", rng.standard_normal(101).astype(np.float32), 1),
        ("random ties (multiples of 1/4), n = 64, k = 9", (rng.integers(-4, 5, 64) / 4).astype(np.float32), 9),
    ]


def top_k_hint(v, k: int, got) -> str:
    """The classic bug behind a wrong top-k answer ``got`` for ``(v, k)``: the wrong count, values instead of
    indices, unsorted indices, a ranking by signed value, ties broken the other way; else the generic advice.
    "" for the right answer."""
    v, got = np.asarray(v), np.asarray(got)
    spec = spec_top_k(v, k)
    if got.shape == spec.shape and np.issubdtype(got.dtype, np.integer) and np.array_equal(got, spec):
        return ""
    if got.shape != spec.shape:
        return hint("lab06", "top_k_count")
    if not np.issubdtype(got.dtype, np.integer):
        return hint("lab06", "top_k_indices")
    if np.array_equal(np.sort(got), spec):
        return hint("lab06", "top_k_sorted")
    if np.array_equal(np.sort(got), np.sort(np.argsort(-v, kind="stable")[:k])):
        return hint("lab06", "top_k_signed")
    if np.unique(np.abs(v)).size < v.size and got.min() >= 0 and got.max() < v.size and \
            np.array_equal(np.sort(np.abs(v)[got]), np.sort(np.abs(v)[spec])):
        return hint("lab06", "top_k_ties")
    return hint("lab06", "top_k_compare")


def check_top_k(yours, *, report=sys.stdout) -> CheckResult:
    """``yours(v, k)`` must return the sorted flat indices of the ``k`` largest ``|v|`` of a 1-D ``v``,
    ties to the lower index."""
    result = CheckResult("top_k")
    cases = top_k_cases()
    for label, v, k in cases:
        spec = spec_top_k(v, k)
        got = np.asarray(yours(v.copy(), k))
        if got.shape == spec.shape and np.issubdtype(got.dtype, np.integer) and np.array_equal(got, spec):
            result.lines.append(f"ok   {label}: {spec.tolist() if spec.size <= 10 else f'{spec.size} indices'}")
            continue
        result.passed = False
        result.lines.append(f"FAIL {label}")
        result.lines.append(f"    Yours: {got.tolist()}")
        result.lines.append(f"    Spec:  {spec.tolist()}")
        _hint(result, top_k_hint(v, k, got))
    return result.finish(f"top-k on {len(cases)} cases", report=report)


# ------------------------------------------------------------------------------------ error feedback
def _hand_table(result, label, got_sent, got_res, spec_sent, spec_res):
    """Yours beside Spec, step by step, for a hand-computed case."""
    result.lines.append(f"FAIL {label}:")
    for t, (gs, ss) in enumerate(zip(got_sent, spec_sent), 1):
        mark = "  " if np.array_equal(gs, ss) else "<-"
        result.lines.append(f"    step {t} sent      Yours: {_fmt(gs):28s} Spec: {_fmt(ss)} {mark}")
    for name, g, s in zip(("residual", "velocity u"), got_res, spec_res):
        mark = "  " if np.array_equal(g, s) else "<-"
        result.lines.append(f"    final {name:10s} Yours: {_fmt(g):28s} Spec: {_fmt(s)} {mark}")


def _state(compressor, attr: str, key: str, shape):
    store = getattr(compressor, attr, None)
    if not isinstance(store, dict) or key not in store:
        raise TypeError(f"the compressor must keep its {attr} in a dict by key (compressor.{attr}[{key!r}])")
    return np.asarray(store[key]).reshape(shape)


def _run_ef(make, grads_by_key, ratio):
    """Feed interleaved keys to one compressor; per key the dense sent arrays and the final residual."""
    c = make(ratio)
    sent = {key: [] for key in grads_by_key}
    steps = len(next(iter(grads_by_key.values())))
    for t in range(steps):
        for key, grads in grads_by_key.items():
            g = grads[t]
            s, _ = _dense(c.compress(g.copy(), key), g.shape, g.dtype)
            sent[key].append(s)
    return sent, {key: _state(c, "residuals", key, grads[0].shape).copy() for key, grads in grads_by_key.items()}


def ef_hint(grads, ratio: float, sent, residual) -> str:
    """The classic bug behind a wrong top-k with error feedback, from one tensor's gradients, the dense
    messages ``sent`` per step and the final ``residual``: the invariant sent + residual == sum of the gradients
    broken upwards (the residual not cleared where sent) or downwards (what was not sent dropped), more than k
    sent in a step, or the values not taken from the accumulated residual. "" when all of it is right (the
    values equal the spec's)."""
    grads = [np.asarray(g, np.float64) for g in grads]
    sent = [np.asarray(s, np.float64) for s in sent]
    residual = np.asarray(residual, np.float64)
    total = np.sum(grads, axis=0)
    have = np.sum(sent, axis=0) + residual
    spec_sent, spec_res = spec_topk_ef([np.asarray(g, np.float32) for g in grads], ratio)
    if all(np.array_equal(a, b) for a, b in zip(sent, spec_sent)) and np.array_equal(residual, spec_res):
        return ""
    if not np.array_equal(have, total):
        return hint("lab06", "ef_not_cleared" if np.any(residual[sent[-1] != 0] != 0) else "ef_lost")
    if any(int(np.count_nonzero(s)) > spec_k(ratio, total.size) for s in sent):
        return hint("lab06", "ef_count")
    return hint("lab06", "ef_accumulated")


def check_error_feedback(make, *, steps: int = 12, seed: int = 0, report=sys.stdout) -> CheckResult:
    """``make(ratio)`` must return a fresh top-k compressor with local accumulation: ``compress(grad, key)``
    returns ``(indices, values)`` and ``residuals[key]`` holds what was not sent yet.

    Checks a hand-computed case, then at every size of ``EF_SIZES`` and ratio of ``EF_RATIOS`` (two keys
    interleaved) the invariant sent + residual == sum of the gradients exactly (the gradients are multiples
    of 1/8, so every sum is exact), the count k = ceil(ratio n) per step, and the values against the spec.
    """
    result = CheckResult("top-k with error feedback")
    hand = [np.float32([1, -4, 2, 0.5]), np.float32([1, 1, -1, 0.5]), np.float32([-3, 1, 0.5, 2])]
    label = "hand: 4 elements, ratio 0.5 (k = 2), 3 steps"
    try:
        got, got_res = _run_ef(make, {"w": hand}, 0.5)
    except (TypeError, ValueError) as err:
        result.passed = False
        result.lines.append(f"FAIL: {err}")
        return result.finish("top-k with error feedback", report=report)
    spec_sent, spec_res = spec_topk_ef(hand, 0.5)
    if all(np.array_equal(a, b) for a, b in zip(got["w"], spec_sent)) and np.array_equal(got_res["w"], spec_res):
        result.lines.append(f"ok   {label}: sent {', '.join(_fmt(s) for s in spec_sent)}; residual {_fmt(spec_res)}")
    else:
        result.passed = False
        _hand_table(result, label, got["w"], [got_res["w"]], spec_sent, [spec_res])
    rng = np.random.default_rng(seed)
    for ratio in EF_RATIOS:
        bad = []
        for size in EF_SIZES:
            grads_by_key = {"a": _ef_gradients(size, steps, rng), "b": _ef_gradients(size, steps, rng)}
            sent, res = _run_ef(make, grads_by_key, ratio)
            for key, grads in grads_by_key.items():
                total = np.sum(np.asarray(grads, np.float64), axis=0)
                have = np.sum(np.asarray(sent[key], np.float64), axis=0) + res[key]
                n = total.size
                counts = [int(np.count_nonzero(s)) for s in sent[key]]
                spec_sent, spec_res = spec_topk_ef(grads, ratio)
                tag = f"size {size}, ratio {ratio}, key {key!r}"
                why = ef_hint(grads, ratio, sent[key], res[key])
                if not why:
                    continue
                bad.append(tag)
                if not np.array_equal(have, total):
                    result.lines.append(f"FAIL {tag}: sent + residual != sum of the gradients")
                    result.lines += _differences(have, total, "sent + residual")
                elif any(c > spec_k(ratio, n) for c in counts):
                    result.lines.append(f"FAIL {tag}: sent {max(counts)} elements in a step; k = "
                                        f"ceil({ratio} x {n}) = {spec_k(ratio, n)}")
                else:
                    t = next(i for i, (a, b) in enumerate(zip(sent[key], spec_sent)) if not np.array_equal(a, b))
                    result.lines.append(f"FAIL {tag}: the invariant holds but step {t + 1} sends other values")
                    result.lines += _differences(sent[key][t], spec_sent[t], f"sent at step {t + 1}")
                _hint(result, why)
                break
            if bad and bad[-1].startswith(f"size {size}"):
                break
        if bad:
            result.passed = False
        else:
            result.lines.append(f"ok   ratio {ratio}: sent + residual == sum of {steps} gradients exactly, "
                                f"at sizes {list(EF_SIZES)}, two keys interleaved")
    return result.finish(f"top-k with error feedback at {len(EF_RATIOS)} ratios and {len(EF_SIZES)} sizes",
                         report=report)


# ------------------------------------------------------------------------------------------------ DGC
def _run_dgc(make, grads, ratio, momentum, masking, key="w"):
    c = make(ratio, momentum=momentum, masking=masking)
    sent = []
    for g in grads:
        s, _ = _dense(c.compress(g.copy(), key), g.shape, g.dtype)
        sent.append(s)
    shape = grads[0].shape
    return sent, _state(c, "velocity", key, shape).copy(), _state(c, "residuals", key, shape).copy()


def _dense_momentum_sgd(make, grads, momentum, lr=0.05, seed=1):
    """Weights after len(grads) steps of dense momentum SGD (scaledl.nn.SGD), and after the same steps of
    momentum-free SGD on what the student's DGC sends at ratio 1."""
    from scaledl.nn.optim import SGD

    w0 = np.random.default_rng(seed).standard_normal(grads[0].shape).astype(np.float32)
    dense, yours = {"w": w0.copy()}, {"w": w0.copy()}
    dense_opt, plain_opt = SGD(lr=lr, momentum=momentum), SGD(lr=lr, momentum=0.0)
    c = make(1.0, momentum=momentum, masking=False)
    for g in grads:
        dense_opt.step(dense, {"w": g.copy()})
        s, _ = _dense(c.compress(g.copy(), "w"), g.shape, g.dtype)
        plain_opt.step(yours, {"w": s})
    return yours["w"], dense["w"]


def dgc_hint(grads, ratio: float, momentum: float, masking: bool, sent, u, v) -> str:
    """The classic bug behind a wrong DGC compressor, from one tensor's gradients, the dense messages ``sent``
    per step and the final velocity ``u`` and accumulation ``v``: no momentum correction (it sends what top-k
    with error feedback on the raw gradient sends), masking missing (masking on) or applied (masking off), the
    right arithmetic in another precision or order (close, not equal); else the generic advice. "" when all of
    it equals :func:`spec_dgc`."""
    grads = [np.asarray(g, np.float32) for g in grads]
    sent = [np.asarray(s, np.float64) for s in sent]
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)

    def same(spec):
        s_sent, s_u, s_v = spec
        return (all(np.array_equal(a, b) for a, b in zip(sent, s_sent)) and np.array_equal(u, s_u)
                and np.array_equal(v, s_v))

    spec = spec_dgc(grads, ratio, momentum, masking)
    if same(spec):
        return ""
    plain, _ = spec_topk_ef(grads, ratio)
    if all(np.array_equal(a, b) for a, b in zip(sent, plain)) and \
            not all(np.array_equal(a, b) for a, b in zip(plain, spec[0])):
        return hint("lab06", "dgc_no_momentum")
    if same(spec_dgc(grads, ratio, momentum, not masking)):
        return hint("lab06", "dgc_masking" if masking else "dgc_masking_off")
    with np.errstate(all="ignore"):
        close = all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(sent, spec[0])) and \
            np.allclose(u, spec[1], rtol=1e-5, atol=1e-6) and np.allclose(v, spec[2], rtol=1e-5, atol=1e-6)
    return hint("lab06", "dgc_float32" if close else "dgc_compare")


def check_dgc(make, *, seed: int = 0, report=sys.stdout) -> CheckResult:
    """``make(ratio, momentum=, masking=)`` must return a fresh DGC compressor: ``compress(grad, key)`` returns
    ``(indices, values)``; ``velocity[key]`` is u and ``residuals[key]`` is v.

    Checks, against :func:`spec_dgc` and :class:`scaledl.nn.SGD`: ratio 1 without masking is dense momentum
    SGD exactly (20 steps on random float32 gradients at odd sizes, weights compared bit for bit); ratio 1
    with masking is plain SGD; two hand-computed cases (momentum 0.5, dyadic values, exact) with masking off
    and on; random sparse cases against the float32 spec.
    """
    result = CheckResult("DGC")
    rng = np.random.default_rng(seed)
    m = 0.9
    # 1. nothing dropped, no masking: dense momentum SGD, bit for bit
    try:
        for size in (1, 37, (5, 13)):
            shape = size if isinstance(size, tuple) else (size,)
            grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(20)]
            yours, dense = _dense_momentum_sgd(make, grads, m)
            if np.array_equal(yours, dense):
                result.lines.append(f"ok   ratio 1, masking off, size {size}: 20 steps of SGD on what you send "
                                    "== dense momentum SGD, bit for bit")
                continue
            result.passed = False
            result.lines.append(f"FAIL ratio 1, masking off, size {size}: weights after 20 steps differ from "
                                "dense momentum SGD (scaledl.nn.SGD(momentum=0.9))")
            result.lines += _differences(yours, dense, "w")
            _hint(result, dgc_hint(grads, 1.0, m, False, *_run_dgc(make, grads, 1.0, m, False)))
            break
        # 2. nothing dropped, masking on: u is cleared everywhere each step, so it sends g: plain SGD
        grads = [rng.standard_normal(7).astype(np.float32) for _ in range(5)]
        sent, u, v = _run_dgc(make, grads, 1.0, m, True)
    except (TypeError, ValueError) as err:
        result.passed = False
        result.lines.append(f"FAIL: {err}")
        return result.finish("DGC", report=report)
    masked_ok = all(np.array_equal(s, g) for s, g in zip(sent, grads)) and not u.any()
    if masked_ok:
        result.lines.append("ok   ratio 1, masking on: sends g every step and keeps u = 0 (plain SGD, as it must)")
    else:
        result.passed = False
        result.lines.append("FAIL ratio 1, masking on: masking clears u wherever v is sent, so at ratio 1 "
                            "DGC sends g and u stays 0")
        result.lines += _differences(u, np.zeros_like(u), "u after 5 steps")
        _hint(result, dgc_hint(grads, 1.0, m, True, sent, u, v))
    # 3. hand cases, exact
    hand = [np.float32([1, -2, 0.5, 0.25]), np.float32([0.5, 1, -1, 2]), np.float32([-1, 0.5, 1, 1])]
    for masking in (False, True):
        label = f"hand: 4 elements, ratio 0.25 (k = 1), momentum 0.5, masking {'on' if masking else 'off'}"
        sent, u, v = _run_dgc(make, hand, 0.25, 0.5, masking)
        s_sent, s_u, s_v = spec_dgc(hand, 0.25, 0.5, masking)
        if all(np.array_equal(a, b) for a, b in zip(sent, s_sent)) and np.array_equal(u, s_u) and \
                np.array_equal(v, s_v):
            result.lines.append(f"ok   {label}: sent {', '.join(_fmt(s) for s in s_sent)}")
            continue
        result.passed = False
        _hand_table(result, label, sent, [v, u], s_sent, [s_v, s_u])
        _hint(result, dgc_hint(hand, 0.25, 0.5, masking, sent, u, v))
    # 4. random sparse cases against the float32 spec
    for size, ratio in ((101, 0.05), ((5, 13), 0.1), (37, 0.01)):
        shape = size if isinstance(size, tuple) else (size,)
        grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(10)]
        for masking in (False, True):
            sent, u, v = _run_dgc(make, grads, ratio, m, masking)
            s_sent, s_u, s_v = spec_dgc(grads, ratio, m, masking)
            tag = f"size {size}, ratio {ratio}, momentum {m}, masking {'on' if masking else 'off'}"
            if all(np.array_equal(a, b) for a, b in zip(sent, s_sent)) and np.array_equal(u, s_u) and \
                    np.array_equal(v, s_v):
                result.lines.append(f"ok   {tag}: 10 steps equal the spec")
            else:
                result.passed = False
                t = next((i for i, (a, b) in enumerate(zip(sent, s_sent)) if not np.array_equal(a, b)), None)
                result.lines.append(f"FAIL {tag}: " + (f"step {t + 1} sends other values" if t is not None
                                                         else "the state (u, v) after 10 steps differs"))
                result.lines += (_differences(sent[t], s_sent[t], f"sent at step {t + 1}") if t is not None
                                 else _differences(v, s_v, "v") + _differences(u, s_u, "u"))
                _hint(result, dgc_hint(grads, ratio, m, masking, sent, u, v))
    return result.finish("DGC: momentum correction and masking", report=report)
