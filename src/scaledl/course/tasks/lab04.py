"""Lab 04 (prune and 2:4-sparsify): the graded tasks, split into inputs, production and judgement.

The specs are the library's (:mod:`scaledl.sparsity`) and :mod:`scaledl.labs.sparse_checks`'s (the SpMV
spec and its tolerance), called here in the grader's process; the student's kernel only runs their functions
(:mod:`scaledl.course.produce.lab04`). The hints name the same bugs as the notebook's checks, decided by the
same functions (:func:`scaledl.labs.sparse_checks.prune_hint`, ``nm_hint``) in the words of
:mod:`scaledl.labs.hints`.
"""

from __future__ import annotations

import functools

import numpy as np

from scaledl.course.produce.lab04 import GUARD, PRODUCE, case_indices
from scaledl.course.tasks import Task, array, first_mismatch
from scaledl.course.tasks.lab01 import SANITIZER
from scaledl.labs.hints import hint, with_hints

SPARSITY = "scaledl.sparsity"


def _plain(a, fmt=None):
    """``a`` as an object array of Python values (shown as 0.25 and True, not np.float64(0.25))."""
    flat = [fmt(v) if fmt else v for v in np.asarray(a).ravel().tolist()]
    return np.array(flat, dtype=object).reshape(np.shape(a))


def _mismatch(got, want, *, title, what, hints, bad=None, fmt=None):
    """first_mismatch (of ``bad``, default ``got != want``), with the classic bugs it points to appended."""
    bad = got != want if bad is None else bad
    try:
        first_mismatch(_plain(got, fmt), _plain(want, fmt), bad, title=title, what=what)
    except AssertionError as err:
        raise AssertionError(with_hints(str(err), hints)) from None


def _mask(out, key, shape, title) -> np.ndarray:
    """``out[key]`` as a boolean mask; any value but 0/1 (NaN, 0.5) is a wrong answer, not a kept entry."""
    got = array(out, key, shape=shape, dtype="biuf", title=title)
    odd = ~((got == 0) | (got == 1))
    if odd.any():
        raise AssertionError(f"{title}: {key} holds {int(odd.sum())} values that are not 0/1, e.g. Yours "
                             f"{got[odd].ravel()[0].item()!r}, Spec a boolean mask")
    return got != 0


def _distinct(rng, shape):
    """Weights whose magnitudes are all different, so only the kept *count* decides the mask."""
    n = int(np.prod(shape))
    mags = rng.permutation(np.linspace(0.01, 1.0, n)).reshape(shape)
    return (mags * rng.choice([-1.0, 1.0], shape)).astype(np.float32)


# ----------------------------------------------------------------------- Task 1.1: magnitude pruning
def _half_way(rng, floor_parity):
    """(weights, sparsity) with s n exactly k + 1/2 and k of the given parity: s = j / 8 (j odd) and
    n = 4 m (m odd) make s n = j m / 2 exact in binary, so Python's round (half to even) decides."""
    while True:
        j, m = int(rng.choice([1, 3, 5, 7])), int(rng.choice(np.arange(5, 26, 2)))
        if ((j * m - 1) // 2) % 2 == floor_parity:
            shape = [(4, m), (m, 4), (2, 2 * m)][int(rng.integers(3))]
            return _distinct(rng, shape), j / 8


def _prune_inputs(rng):
    r, c = int(rng.integers(5, 10)), int(rng.integers(7, 14))
    n = r * c
    k = int(rng.integers(n // 4, 3 * n // 4))
    distinct = _distinct(rng, (r, c))
    half_down, s_down = _half_way(rng, 0)   # k even: round gives k (ceil and floor(x + 0.5) give k + 1)
    half_up, s_up = _half_way(rng, 1)       # k odd: round gives k + 1 (int() truncates to k)
    tr, tc = int(rng.integers(7, 12)), int(rng.integers(7, 14))
    er, ec = int(rng.integers(3, 8)), int(rng.integers(5, 10))
    cases = [
        ("distinct |w|, s n rounds up", distinct, (k + rng.uniform(0.55, 0.95)) / n),
        ("distinct |w|, s n rounds down", distinct, (k + rng.uniform(0.05, 0.45)) / n),
        ("distinct |w|, s n = k + 1/2 with k even (half to even: down)", half_down, s_down),
        ("distinct |w|, s n = k + 1/2 with k odd (half to even: up)", half_up, s_up),
        ("tied |w| (multiples of 1/4, zeros)", (rng.integers(-4, 5, (tr, tc)) / 4.0).astype(np.float32),
         round(float(rng.uniform(0.3, 0.7)), 2)),
        ("all |w| equal, mixed signs", np.where(rng.random((er, ec)) < 0.5, -0.5, 0.5).astype(np.float32),
         round(float(rng.uniform(0.2, 0.8)), 2)),
        ("sparsity 0", distinct, 0.0),
        ("layer at 90 %", rng.standard_normal((int(rng.integers(40, 80)), int(rng.integers(90, 140))))
         .astype(np.float32), 0.9),
    ]
    out = {f"w{i}": w for i, (_, w, _) in enumerate(cases)}
    return {**out, "label": [c[0] for c in cases], "sparsity": [float(c[2]) for c in cases]}


def _prune_judge(inp, out):
    from scaledl.labs.sparse_checks import prune_hint
    from scaledl.sparsity import magnitude_mask

    t = "Task 1.1"
    for i in case_indices(inp):
        w, s, label = inp[f"w{i}"], inp["sparsity"][i], inp["label"][i]
        spec = magnitude_mask(w, s)
        title = f"{t}: {label} ({w.shape[0]} x {w.shape[1]}, sparsity {s:.6g})"
        got = _mask(out, f"mask{i}", w.shape, title)
        have, want = int(got.sum()), int(spec.sum())
        why = [prune_hint(w, got, spec)]
        if have != want:
            raise AssertionError(with_hints(f"{title}: kept Yours {have}, Spec {want} (= {w.size} - round({s} x "
                                            f"{w.size}))", why))
        _mismatch(got, spec, title=title, what="mask entries", hints=why)


# -------------------------------------------------------------------------------- Task 1.2: 2:4 mask
def _nm_inputs(rng):
    def side():
        return 4 * int(rng.integers(1, 6))

    # Both sides are multiples of 4, so a mask along the wrong axis still runs and is recognised.
    a, b = 4 * int(rng.integers(2, 5)), 4 * int(rng.integers(2, 5))
    w = rng.standard_normal((a, b)).astype(np.float32)
    tied0 = (rng.integers(-2, 3, (side(), side())) / 2.0).astype(np.float32)
    tied1 = (rng.integers(-2, 3, (side(), side())) / 2.0).astype(np.float32)
    zr, zc = side(), side()
    zeros = np.where(rng.random((zr, zc)) < 0.6, 0.0, rng.standard_normal((zr, zc))).astype(np.float32)
    cases = [("random, groups along axis 0", w, 0), ("random, groups along axis 1", w, 1),
             ("tied magnitudes, axis 0", tied0, 0), ("tied magnitudes, axis 1", tied1, 1),
             ("many zeros (under-full groups), axis 0", zeros, 0)]
    return {**{f"w{i}": c[1] for i, c in enumerate(cases)}, "label": [c[0] for c in cases],
            "axis": [c[2] for c in cases]}


def _nm_judge(inp, out):
    from scaledl.labs.sparse_checks import nm_hint
    from scaledl.sparsity import nm_mask

    t = "Task 1.2"
    for i in case_indices(inp):
        w, axis, label = inp[f"w{i}"], int(inp["axis"][i]), inp["label"][i]
        spec = nm_mask(w, 2, 4, axis=axis)
        title = f"{t}: {label} ({w.shape[0]} x {w.shape[1]})"
        got = _mask(out, f"mask{i}", w.shape, title)
        if np.array_equal(got, spec):
            continue
        why = [nm_hint(w, axis, got, spec)]
        if np.array_equal(got, nm_mask(w, 2, 4, axis=1 - axis)):
            raise AssertionError(with_hints(f"{title}: Yours is the 2:4 mask along axis {1 - axis}, Spec along "
                                            f"axis {axis}", why))
        per_group = np.moveaxis(got, axis, -1).reshape(-1, 4).sum(axis=-1)
        if (per_group != 2).any():
            raise AssertionError(with_hints(f"{title}: groups of 4 keep Yours {sorted(set(per_group.tolist()))} "
                                            "entries, Spec exactly 2", why))
        _mismatch(got, spec, title=title, what="mask entries", hints=why)


# ----------------------------------------------------------------------- Task 1.3: 2:4 compression
def _compress_inputs(rng):
    from scaledl.sparsity import nm_mask

    def sparse(m, k, zeros):
        w = rng.standard_normal((m, k))
        w = np.where(rng.random((m, k)) < zeros, 0.0, w).astype(np.float32)
        return w * nm_mask(w, 2, 4, axis=1)  # compression takes an already 2:4-sparse matrix

    r, k = int(rng.integers(2, 8)), 16 * int(rng.integers(2, 5))
    cases = [("1 x 16, one word", sparse(1, 16, 0.0)),
             (f"{r} x {k}, {k // 16} words per row", sparse(r, k, 0.0)),
             ("with zeros (under-full groups)", sparse(int(rng.integers(2, 6)), 16 * int(rng.integers(1, 4)), 0.6)),
             ("mostly zeros (empty groups)", sparse(int(rng.integers(2, 6)), 16 * int(rng.integers(1, 4)), 0.85))]
    return {**{f"w{i}": c[1] for i, c in enumerate(cases)}, "label": [c[0] for c in cases]}


def _compress_judge(inp, out):
    from scaledl.sparsity import compress_nm

    t = "Task 1.3"
    for i in case_indices(inp):
        w, label = inp[f"w{i}"], inp["label"][i]
        spec_v, spec_m = compress_nm(w, axis=1)
        title = f"{t}: {label} ({w.shape[0]} x {w.shape[1]})"
        shapes = [np.shape(out.get(f"values{i}")), np.shape(out.get(f"metadata{i}"))]
        if f"values{i}" in out and f"metadata{i}" in out and shapes != [spec_v.shape, spec_m.shape]:
            raise AssertionError(with_hints(f"{title}: shapes Yours {shapes[0]}, {shapes[1]}; Spec {spec_v.shape}, "
                                            f"{spec_m.shape}", [hint("lab04", "compress_shapes")]))
        got_v = array(out, f"values{i}", shape=spec_v.shape, dtype="f", title=title).astype(np.float64)
        got_m = array(out, f"metadata{i}", shape=spec_m.shape, dtype="iuf", title=title).astype(np.float64)
        _mismatch(got_v, spec_v.astype(np.float64), title=title, what="values",
                  hints=[hint("lab04", "compress_values")])
        _mismatch(got_m, spec_m.astype(np.float64), title=title, what="metadata words",
                  fmt=lambda v: f"{int(v):#06x}" if np.isfinite(v) and 0 <= v < 2 ** 64 else v,
                  hints=[hint("lab04", "compress_metadata")])


# ----------------------------------------------------------------------------- Task 2.1: CSR SpMV
def _spmv_inputs(rng):
    from scaledl.labs.sparse_checks import spmv_inputs

    # Row counts below and above one simulator block (32), never a multiple of it, as today's hidden test.
    sizes = [(int(rng.integers(2, 31)), int(rng.integers(3, 40)), 0.4),
             (33 + int(rng.integers(0, 29)), int(rng.integers(3, 40)), 0.15)]
    out = {}
    for i, size in enumerate(sizes):
        for name, a in zip(("indptr", "indices", "data", "x"), spmv_inputs(size, rng)):
            out[f"{name}{i}"] = a
    return {**out, "label": [f"{m} x {k} at density {d}" for m, k, d in sizes]}


def _spmv_judge(inp, out):
    from scaledl.labs.kernel_verdict import kernel_verdict, read_findings
    from scaledl.labs.sparse_checks import spmv_spec, spmv_tolerance

    t = "Task 2.1"
    for i in case_indices(inp):
        args = tuple(inp[f"{name}{i}"] for name in ("indptr", "indices", "data", "x"))
        rows, title = args[0].size - 1, f"{t}: {inp['label'][i]}"
        findings, malformed = read_findings(out.get(f"findings{i}"))
        if malformed:
            raise AssertionError(f"{title}: {malformed}")
        if findings:  # the sanitizer's words lead, as in the notebook's check_spmv (values right or not)
            verdict = kernel_verdict([], spmv_spec(*args), 0.0, findings=findings)
            raise AssertionError(with_hints(f"{title}: {verdict.headline}", verdict.hints))
        if f"error{i}" in out:
            raise AssertionError(with_hints(f"{title}: the kernel indexed outside an array "
                                            f"({str(out[f'error{i}'])[:200]})", [hint("kernel", "out_of_bounds")]))
        runs = array(out, f"y{i}", shape=(2, rows + GUARD), dtype="f", title=title).astype(np.float64)
        if not np.isnan(runs[:, rows:]).all():
            raise AssertionError(with_hints(f"{title}: the kernel wrote past the end of y",
                                            [hint("kernel", "past_end")]))
        want = spmv_spec(*args)
        got = runs[0, :rows]
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~np.isfinite(got) | (np.abs(got - want) > spmv_tolerance(args, want))
        never = np.isnan(got) & bad
        _mismatch(got, want, bad=bad, title=title, what="rows of y",
                  hints=[hint("kernel", "never_written") if never.any() else hint("lab04", "spmv_rows")])
        differ = np.flatnonzero(~((runs[0, :rows] == runs[1, :rows]) | np.isnan(runs[:, :rows]).all(axis=0)))
        if differ.size:
            r = int(differ[0])
            raise AssertionError(with_hints(f"{title}: two runs on the same data differ in {differ.size} rows: at "
                                            f"row {r}: Yours {float(runs[0, r])!r} then {float(runs[1, r])!r}, Spec "
                                            "the same value twice", [hint("kernel", "race")]))


# ------------------------------------------------------------------- Tasks 3.1 and 3.2: the networks
# The network is the notebook's: mlp(DENSE_SIZES), its dense baseline trained as in the cell "The dense
# baseline". The judge rebuilds the baseline itself rather than take the notebook's `dense_accuracy`: a value
# from the student's kernel could simply be lowered (dense_accuracy = 0 passes any network). Training it costs
# about 2 s, once per grader process (cached), and is bitwise deterministic for its seeds, so it is the
# number the solution notebook prints (97.78 %) on the machine that grades; a constant typed here would
# silently drift from the notebook whenever the data split, the model or the trainer changes.
DENSE_SIZES = (64, 128, 128, 10)
DENSE_SEED, DENSE_STEPS, DENSE_TRAIN_SEED = 0, 1500, 0
WEIGHTS = ("fc1.W", "fc2.W", "fc3.W")         # what is pruned; the biases are not
MIN_SPARSITY = 0.9                            # Task 3.1: at least 90 % of the weights exactly zero
MAX_DROP_POINTS = 0.5                         # both: at most 0.5 accuracy points below dense (about 2 images)


@functools.lru_cache(maxsize=1)
def dense_baseline():
    """(digits data, dense test accuracy): the notebook's baseline, trained here in the grader's process."""
    from scaledl.nn import digits, mlp, train

    data = digits()
    dense = mlp(list(DENSE_SIZES), seed=DENSE_SEED)
    train(dense, data, steps=DENSE_STEPS, seed=DENSE_TRAIN_SEED)
    return data, _accuracy(dense, data)


def _accuracy(model, data) -> float:
    with np.errstate(all="ignore"):  # huge weights give inf logits: a low accuracy, not a crash
        logits = model.predict(data.x_test)
    return float((logits.argmax(axis=1) == data.y_test).mean())


def _network_inputs(rng):
    return {}  # nothing to draw: the task is the notebook's fixed network, judged on the fixed test set


def _network(out, title):
    """The student's parameters as received (checked: every one present, right shape, finite) and the
    model built from them."""
    from scaledl.nn import mlp

    model = mlp(list(DENSE_SIZES), seed=DENSE_SEED)
    params = model.parameters()
    got = {}
    for name, p in params.items():
        a = array(out, name, shape=p.shape, dtype="f", title=title)
        with np.errstate(over="ignore"):
            a32 = a.astype(np.float32)  # the model's dtype: beyond float32's range is not finite either
        if not np.isfinite(a32).all():
            raise AssertionError(f"{title}: {name}: Yours has {int((~np.isfinite(a32)).sum())} values that are "
                                 "not finite float32 numbers, Spec none")
        got[name] = a
        p[...] = a32
    return model, got


def _check_accuracy(model, title, hint_key: str):
    data, dense = dense_baseline()
    acc = _accuracy(model, data)
    drop = 100 * (dense - acc)
    if drop > MAX_DROP_POINTS + 1e-9:
        raise AssertionError(with_hints(f"{title}: test accuracy Yours {100 * acc:.2f} % ({drop:.2f} points lost), "
                                        f"Spec within {MAX_DROP_POINTS} points of the dense {100 * dense:.2f} %",
                                        [hint_key]))


def _pruned_judge(inp, out):
    t = "Task 3.1"
    model, got = _network(out, t)
    n = sum(got[w].size for w in WEIGHTS)
    sparsity = sum(int(np.count_nonzero(got[w] == 0)) for w in WEIGHTS) / n
    if sparsity < MIN_SPARSITY:
        raise AssertionError(with_hints(f"{t}: zeros in {', '.join(WEIGHTS)}: Yours {100 * sparsity:.2f} % of {n:,} "
                                        f"weights, Spec at least {100 * MIN_SPARSITY:.0f} %",
                                        [hint("lab04", "prune_gradually")]))
    _check_accuracy(model, t, hint("lab04", "prune_gradually"))


def _nm_network_judge(inp, out):
    t = "Task 3.2"
    model, got = _network(out, t)
    for name in WEIGHTS:
        w = got[name]
        worst = int((w.reshape(w.shape[0] // 4, 4, w.shape[1]) != 0).sum(axis=1).max())
        if worst > 2:
            raise AssertionError(with_hints(f"{t}: {name} {w.shape}: non-zeros in a group of 4 along axis 0 (the "
                                            f"reduction axis): Yours up to {worst}, Spec at most 2",
                                            [hint("lab04", "nm_network_groups")]))
    _check_accuracy(model, t, hint("lab04", "nm_network_retrain"))


TASKS = (
    Task("task_1_1", "Task 1.1", ("prune_magnitude",), _prune_inputs, PRODUCE["task_1_1"], _prune_judge,
         local_seed=150401, forbidden_modules=(SPARSITY,)),
    Task("task_1_2", "Task 1.2", ("mask_24",), _nm_inputs, PRODUCE["task_1_2"], _nm_judge, local_seed=150402,
         forbidden_modules=(SPARSITY,)),
    Task("task_1_3", "Task 1.3", ("compress_24",), _compress_inputs, PRODUCE["task_1_3"], _compress_judge,
         local_seed=150403, forbidden_modules=(SPARSITY,)),
    Task("task_2_1", "Task 2.1", ("make_spmv_kernel", "spmv_launch"), _spmv_inputs, PRODUCE["task_2_1"], _spmv_judge,
         local_seed=150404, forbidden_modules=(SPARSITY, "scaledl.kernels", "scipy.sparse"), requires_kernel=True,
         needs=SANITIZER),
    Task("task_3_1", "Task 3.1", ("prune_mlp",), _network_inputs, PRODUCE["task_3_1"], _pruned_judge,
         local_seed=150405, forbidden=("scaledl.sparsity.prune_and_retrain", "scaledl.sparsity.prune_masks",
                                       "scaledl.sparsity.magnitude_mask", "scaledl.sparsity.score_mask",
                                       "scaledl.sparsity.top_k_mask"),
         needs=("scipy.sparse",)),  # the digits data comes through scikit-learn, which imports scipy.sparse
    Task("task_3_2", "Task 3.2", ("sparsify_24",), _network_inputs, PRODUCE["task_3_2"],
         _nm_network_judge, local_seed=150406,
         forbidden=("scaledl.sparsity.nm_masks", "scaledl.sparsity.nm_mask", "scaledl.sparsity.masks.nm_positions",
                    "scaledl.sparsity.compress_nm"),
         needs=("scipy.sparse",)),
)
