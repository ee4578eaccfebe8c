"""Lab 04 checks: exact-density magnitude pruning, 2:4 masks and their compression, a CSR SpMV kernel, and
the pruned networks. Each compares the student's function with :mod:`scaledl.sparsity` and names the classic
bug a mismatch points to:

======================================  ==================================================================
what the check sees                      what it most likely means
======================================  ==================================================================
kept count off by one, no ties           the count was truncated (``int``) or rounded up: keep exactly
                                         ``n - round(s n)``
kept count wrong only where |w| ties     a threshold (``|w| >= t``) keeps every tie: rank and keep k
right count, wrong entries at ties       ties broken arbitrarily: keep the lower flat index (stable sort)
an N:M mask equal to the spec's along    the groups were taken along the wrong axis: a layer's groups run
the *other* axis                         along its reduction axis (the rows of ``W`` in ``x @ W``)
more than n kept in a group              the mask was not built group by group
IndexError in the SpMV kernel            no row bound guard: the grid has more threads than rows
======================================  ==================================================================

``tests/unit/test_lab04_checks.py`` and ``tests/sim/test_lab04_spmv_check.py`` prove each row of this table. The
hints are :mod:`scaledl.labs.hints`' "lab04" ones, decided by :func:`prune_hint` and :func:`nm_hint`, which the
grader's judges (:mod:`scaledl.course.tasks.lab04`) call too.
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

from scaledl.labs.check import FLOAT32_EPS, CheckResult, check_kernel
from scaledl.labs.hints import hint
from scaledl.sparsity.masks import magnitude_mask, nm_mask
from scaledl.sparsity.nm import compress_nm

SHOWN = 5


def _hint(result, text):
    if text and text not in result.hints:
        result.hints.append(text)


def _differences(yours, spec, limit=SHOWN):
    bad = np.argwhere(yours != spec)
    return [f"    at {tuple(int(i) for i in idx)}:  Yours: {yours[tuple(idx)]!r}  Spec: {spec[tuple(idx)]!r}"
            for idx in bad[:limit]]


def _has_ties(w) -> bool:
    a = np.abs(np.asarray(w)).ravel()
    return np.unique(a).size < a.size


# ------------------------------------------------------------------------------------ magnitude pruning
def prune_cases(seed: int = 0) -> list[tuple[str, np.ndarray, float]]:
    """(label, weights, sparsity): distinct magnitudes where s n is not an integer (rounding), tied
    magnitudes (thresholds and tie-breaking), all magnitudes equal, sparsity 0, a layer-sized case."""
    rng = np.random.default_rng(seed)
    distinct = rng.permutation(np.linspace(0.01, 1.0, 70)).reshape(7, 10) * rng.choice([-1, 1], (7, 10))
    tied = rng.integers(-4, 5, (9, 11)) / 4.0
    return [
        ("distinct |w|, s n = 25.9 (round up)", distinct.astype(np.float32), 0.37),
        ("distinct |w|, s n = 24.5 (round half to even)", distinct.astype(np.float32), 0.35),
        ("distinct |w|, s n = 2.1 (round down)", distinct[:3].astype(np.float32), 0.07),
        ("tied |w| (multiples of 1/4)", tied.astype(np.float32), 0.5),
        ("all |w| equal, mixed signs", np.where(rng.random((5, 7)) < 0.5, -0.5, 0.5).astype(np.float32), 0.3),
        ("sparsity 0", distinct.astype(np.float32), 0.0),
        ("64 x 128 layer at 90 %", rng.standard_normal((64, 128)).astype(np.float32), 0.9),
    ]


def prune_hint(w, got, spec) -> str:
    """The classic bug behind a wrong magnitude-pruning mask ``got`` (boolean, ``w``'s shape) where ``spec`` is
    right: a threshold that keeps ties (count off, ties present), rounding (count off, no ties), ties broken the
    other way, or ranking by signed value. "" when ``got`` equals ``spec``."""
    got, spec = np.asarray(got, bool), np.asarray(spec, bool)
    if np.array_equal(got, spec):
        return ""
    ties = _has_ties(w)
    if int(got.sum()) != int(spec.sum()):
        return hint("lab04", "prune_threshold" if ties else "prune_rounding")
    return hint("lab04", "prune_ties" if ties else "prune_signed")


def check_magnitude_pruning(yours, *, cases=None, report=sys.stdout) -> CheckResult:
    """``yours(w, sparsity)`` must return a boolean mask keeping exactly ``n - round(s n)`` weights of
    largest magnitude, ties going to the lower flat index (the spec: :func:`scaledl.sparsity.magnitude_mask`)."""
    result = CheckResult("magnitude pruning")
    cases = prune_cases() if cases is None else cases
    for label, w, s in cases:
        spec = magnitude_mask(w, s)
        got = np.asarray(yours(w.copy(), s))
        if got.shape != spec.shape:
            result.passed = False
            result.lines.append(f"FAIL {label}: Yours has shape {got.shape}, Spec {spec.shape}")
            continue
        got = got.astype(bool)
        if np.array_equal(got, spec):
            result.lines.append(f"ok   {label}: kept {int(spec.sum())} of {w.size}")
            continue
        result.passed = False
        want, have = int(spec.sum()), int(got.sum())
        if have != want:
            result.lines.append(f"FAIL {label}: kept  Yours: {have}  Spec: {want} (= {w.size} - round({s} x {w.size}))")
        else:
            result.lines.append(f"FAIL {label}: right count ({have}), wrong weights kept")
            result.lines += _differences(got, spec)
        _hint(result, prune_hint(w, got, spec))
    return result.finish(report=report, what=f"magnitude pruning on {len(cases)} cases")


# ----------------------------------------------------------------------------------------------- 2:4
def nm_cases(seed: int = 1) -> list[tuple[str, np.ndarray, int]]:
    """(label, weights, axis): both axes of shapes whose two sides divide by 4 (so a wrong axis still
    runs and is recognised), tied magnitudes and exact zeros (under-full groups)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 12)).astype(np.float32)
    tied = (rng.integers(-2, 3, (12, 8)) / 2.0).astype(np.float32)
    zeros = np.where(rng.random((16, 4)) < 0.6, 0.0, rng.standard_normal((16, 4))).astype(np.float32)
    return [("8 x 12, groups along axis 0", w, 0), ("8 x 12, groups along axis 1", w, 1),
            ("12 x 8 with tied magnitudes, axis 0", tied, 0), ("16 x 4 with many zeros, axis 0", zeros, 0)]


def nm_hint(w, axis: int, got, spec) -> str:
    """The classic bug behind a wrong 2:4 mask ``got`` of a 2-D ``w`` along ``axis`` (``spec`` is right): groups
    along the other axis, groups that do not keep exactly 2, or the wrong 2. "" when ``got`` equals ``spec``."""
    got, spec = np.asarray(got, bool), np.asarray(spec, bool)
    if np.array_equal(got, spec):
        return ""
    other = 1 - axis
    if w.shape[other] % 4 == 0 and np.array_equal(got, nm_mask(w, 2, 4, axis=other)):
        return hint("lab04", "nm_axis")
    if (np.moveaxis(got, axis, -1).reshape(-1, 4).sum(axis=-1) != 2).any():
        return hint("lab04", "nm_two_per_group")
    return hint("lab04", "nm_which_two")


def check_nm_mask(yours, *, cases=None, report=sys.stdout) -> CheckResult:
    """``yours(w, axis)`` must return the 2:4 mask: in every group of 4 consecutive entries along ``axis``,
    the 2 of largest magnitude, ties to the lower index (spec: :func:`scaledl.sparsity.nm_mask`)."""
    result = CheckResult("2:4 mask")
    cases = nm_cases() if cases is None else cases
    for label, w, axis in cases:
        spec = nm_mask(w, 2, 4, axis=axis)
        got = np.asarray(yours(w.copy(), axis))
        if got.shape != spec.shape:
            result.passed = False
            result.lines.append(f"FAIL {label}: Yours has shape {got.shape}, Spec {spec.shape}")
            continue
        got = got.astype(bool)
        if np.array_equal(got, spec):
            result.lines.append(f"ok   {label}")
            continue
        result.passed = False
        other = 1 - axis
        per_group = np.moveaxis(got, axis, -1).reshape(-1, 4).sum(axis=-1)
        if w.shape[other] % 4 == 0 and np.array_equal(got, nm_mask(w, 2, 4, axis=other)):
            result.lines.append(f"FAIL {label}: your mask is the 2:4 mask along axis {other}")
        elif (per_group != 2).any():
            result.lines.append(f"FAIL {label}: groups keeping Yours: {sorted(set(per_group.ravel().tolist()))} "
                                "entries, Spec: exactly 2")
        else:
            result.lines.append(f"FAIL {label}: 2 per group, but not the same 2")
            result.lines += _differences(got, spec)
        _hint(result, nm_hint(w, axis, got, spec))
    return result.finish(report=report, what=f"2:4 mask on {len(cases)} cases")


def check_compress_24(yours, *, seed: int = 2, report=sys.stdout) -> CheckResult:
    """``yours(w)`` must return ``(values, metadata)`` for groups along the last axis: values ``(M, K/2)``
    in position order, metadata ``uint16 (M, K/16)`` with nibble ``idx0 | idx1 << 2`` per group, the first
    group in the low bits (spec: :func:`scaledl.sparsity.compress_nm`)."""
    result = CheckResult("2:4 compression")
    rng = np.random.default_rng(seed)
    cases = [("1 x 16, one word", rng.standard_normal((1, 16))),
             ("5 x 48, three words per row", rng.standard_normal((5, 48))),
             ("3 x 32 with zeros", np.where(rng.random((3, 32)) < 0.6, 0.0, rng.standard_normal((3, 32))))]
    for label, w in cases:
        w = w.astype(np.float32)
        w = w * nm_mask(w, 2, 4, axis=1)  # compression takes an already 2:4-sparse matrix
        spec_v, spec_m = compress_nm(w, axis=1)
        got_v, got_m = (np.asarray(a) for a in yours(w.copy()))
        if got_v.shape != spec_v.shape or got_m.shape != spec_m.shape:
            result.passed = False
            result.lines.append(f"FAIL {label}: shapes Yours: {got_v.shape}, {got_m.shape}  "
                                f"Spec: {spec_v.shape}, {spec_m.shape}")
            _hint(result, hint("lab04", "compress_shapes"))
            continue
        ok_v = np.array_equal(got_v.astype(np.float32), spec_v)
        ok_m = np.array_equal(got_m.astype(np.int64), spec_m.astype(np.int64))
        if ok_v and ok_m:
            result.lines.append(f"ok   {label}")
            continue
        result.passed = False
        if not ok_v:
            result.lines.append(f"FAIL {label}: values differ")
            result.lines += _differences(got_v.astype(np.float32), spec_v)
            _hint(result, hint("lab04", "compress_values"))
        if not ok_m:
            bad = np.argwhere(got_m.astype(np.int64) != spec_m.astype(np.int64))[:SHOWN]
            result.lines.append(f"FAIL {label}: metadata differs")
            result.lines += [f"    word {tuple(int(i) for i in b)}:  Yours: {int(got_m[tuple(b)]):#06x}  "
                             f"Spec: {int(spec_m[tuple(b)]):#06x}" for b in bad]
            _hint(result, hint("lab04", "compress_metadata"))
    return result.finish(report=report, what=f"2:4 compression on {len(cases)} cases")


# ------------------------------------------------------------------------------------------- SpMV kernel
SPMV_SIZES = ((1, 5, 1.0), (37, 29, 0.3), (70, 45, 0.1), (65, 130, 0.02))  # (rows, cols, density)


def spmv_inputs(size, rng):
    """(indptr, indices, data, x) of a random CSR float32 matrix with some empty rows, and a vector."""
    M, K, dens = size
    A = sp.csr_array(sp.random(M, K, density=dens, random_state=rng, format="csr", dtype=np.float64))
    A = sp.csr_array(sp.diags((rng.random(M) > 0.2).astype(np.float64)) @ A)  # about a fifth of rows empty
    A.eliminate_zeros()
    A.sort_indices()
    A.data = (rng.uniform(0.1, 1.0, A.data.size) * rng.choice([-1.0, 1.0], A.data.size)).astype(np.float32)
    x = rng.uniform(-1, 1, K).astype(np.float32)
    return (A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data.astype(np.float32), x)


def spmv_spec(indptr, indices, data, x):
    M = indptr.size - 1
    return sp.csr_array((data.astype(np.float64), indices, indptr), shape=(M, x.size)) @ x.astype(np.float64)


def spmv_tolerance(inputs, want):
    """Float32 rounding of a row's sum: (row length + 1) eps times the sum of |products|, plus a tiny floor."""
    indptr, indices, data, x = inputs
    M = indptr.size - 1
    absA = sp.csr_array((np.abs(data.astype(np.float64)), indices, indptr), shape=(M, x.size))
    lengths = np.diff(indptr)
    return (lengths + 1) * FLOAT32_EPS * (absA @ np.abs(x.astype(np.float64))) + 1e-30


def check_spmv(launch, *, sizes=SPMV_SIZES, report=sys.stdout) -> CheckResult:
    """``launch(indptr, indices, data, x, y)`` must write ``y = A x``; checked at row counts that are not
    multiples of any block, with empty rows, into NaN-poisoned outputs (:func:`scaledl.labs.check.check_kernel`)."""
    return check_kernel(launch, spmv_spec, spmv_inputs, sizes, tolerance=spmv_tolerance, name="CSR SpMV",
                        fallback=hint("lab04", "spmv_rows"), report=report)


# ------------------------------------------------------------------------------------------- networks
def _prunable_weights(model):
    from scaledl.sparsity.prune import prunable
    params = model.parameters()
    return {n: params[n] for n in prunable(model)}


def check_pruned_network(model, data, dense_accuracy: float, *, min_sparsity: float = 0.9,
                         max_drop_points: float = 0.5, report=sys.stdout) -> CheckResult:
    """At least ``min_sparsity`` of the weight matrices exactly zero, and test accuracy within
    ``max_drop_points`` percentage points of ``dense_accuracy``."""
    from scaledl.nn.train import evaluate
    result = CheckResult("pruned network")
    weights = _prunable_weights(model)
    n = sum(w.size for w in weights.values())
    zeros = sum(int(np.count_nonzero(w == 0)) for w in weights.values())
    acc = evaluate(model, data.x_test, data.y_test)[1]
    sparsity, drop = zeros / n, 100 * (dense_accuracy - acc)
    result.lines.append(f"{'ok  ' if sparsity >= min_sparsity else 'FAIL'} sparsity {100 * sparsity:.2f} % of "
                        f"{n:,} weights (needed: {100 * min_sparsity:.0f} %)")
    result.lines.append(f"{'ok  ' if drop <= max_drop_points + 1e-9 else 'FAIL'} accuracy {100 * acc:.2f} %, "
                        f"dense {100 * dense_accuracy:.2f} %: {drop:+.2f} points lost (allowed: {max_drop_points})")
    result.passed = sparsity >= min_sparsity and drop <= max_drop_points + 1e-9
    if not result.passed:
        _hint(result, hint("lab04", "prune_gradually"))
    return result.finish(report=report, what="pruned network")


def check_nm_network(model, data, dense_accuracy: float, *, max_drop_points: float = 0.5,
                     report=sys.stdout) -> CheckResult:
    """Every dense layer's ``W`` is 2:4 sparse along its reduction axis (axis 0: at most 2 non-zeros in every
    group of 4 consecutive rows of each column), and test accuracy is within ``max_drop_points``."""
    from scaledl.nn.train import evaluate
    result = CheckResult("2:4 network")
    ok = True
    for name, w in _prunable_weights(model).items():
        if w.ndim != 2 or w.shape[0] % 4:
            result.lines.append(f"FAIL {name}: shape {w.shape} has no whole groups of 4 along axis 0")
            ok = False
            continue
        worst = int((w.reshape(w.shape[0] // 4, 4, w.shape[1]) != 0).sum(axis=1).max())
        good = worst <= 2
        ok &= good
        result.lines.append(f"{'ok  ' if good else 'FAIL'} {name} {w.shape}: at most {worst} non-zeros per "
                            "group of 4 along the reduction axis")
    acc = evaluate(model, data.x_test, data.y_test)[1]
    drop = 100 * (dense_accuracy - acc)
    good = drop <= max_drop_points + 1e-9
    result.lines.append(f"{'ok  ' if good else 'FAIL'} accuracy {100 * acc:.2f} %, dense "
                        f"{100 * dense_accuracy:.2f} %: {drop:+.2f} points lost (allowed: {max_drop_points})")
    result.passed = ok and good
    if not ok:
        _hint(result, hint("lab04", "nm_network_groups"))
    if not good:
        _hint(result, hint("lab04", "nm_network_retrain"))
    return result.finish(report=report, what="2:4 network")
