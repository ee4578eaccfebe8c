"""Lab 04's task specs: each judge accepts a correct answer on fresh inputs, rejects the classic bugs and hostile
outputs with an AssertionError naming the task, and make_inputs draws new data per seed.

Correct answers are the library's own (:mod:`scaledl.sparsity`); the SpMV kernel is a tiny one of its own, run on
the simulator; the networks are pruned the notebook's way (once per module: a few seconds of training).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32  # globals of the kernels below: the simulator swaps in its cuda for them

from scaledl.course import exchange
from scaledl.course.produce import lab04 as produce04
from scaledl.course.tasks import get
from scaledl.course.tasks import lab04
from scaledl.sparsity import compress_nm, magnitude_mask, nm_mask

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared task_helpers module
from task_helpers import rejected  # noqa: E402

SEEDS = (0, 1, 2, 3)


def run(task, ns, seed=0):
    """(inputs, outputs) as the grader sees them: drawn, handed over and read back as data."""
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(seed)))
    return inp, exchange.roundtrip(task.produce(ns, inp))


rejects = rejected  # the judge fails ``out`` with an AssertionError naming the task; returns its message


def hostile_variants(out, keys=None):
    """(what, outputs) pairs, each spoiling one key of a good result: gone, reshaped, NaN, zeros, junk, huge."""
    for key in keys or [k for k, v in out.items() if isinstance(v, np.ndarray)]:
        v = out[key]
        yield f"{key} missing", {k: x for k, x in out.items() if k != key}
        yield f"{key} reshaped", {**out, key: np.zeros(v.size + 1)}
        yield f"{key} NaN", {**out, key: np.full(v.shape, np.nan)}
        yield f"{key} a string", {**out, key: "all good"}
        yield f"{key} a list of strings", {**out, key: ["x"] * v.size}
        yield f"{key} complex", {**out, key: np.zeros(v.shape, complex)}


# ----------------------------------------------------------------------------------- Tasks 1.1 - 1.3
T11, T12, T13 = (get("lab04", g) for g in ("task_1_1", "task_1_2", "task_1_3"))
REFERENCE = {"prune_magnitude": lambda w, s: magnitude_mask(w, s),
             "mask_24": lambda w, axis: nm_mask(w, 2, 4, axis=axis),
             "compress_24": lambda w: compress_nm(w, axis=1)}


@pytest.mark.parametrize("task", [T11, T12, T13], ids=lambda t: t.grade_id)
@pytest.mark.parametrize("seed", SEEDS)
def test_mask_tasks_accept_the_reference(task, seed):
    task.judge(*run(task, REFERENCE, seed))


@pytest.mark.parametrize("task", [T11, T12, T13], ids=lambda t: t.grade_id)
def test_mask_tasks_reject_hostile_outputs(task):
    inp, out = run(task, REFERENCE)
    for what, bad in hostile_variants(out):
        rejects(task, inp, bad)
    for key in out:  # all zeros, and values far beyond any mask or word
        rejects(task, inp, {**out, key: np.zeros_like(out[key])})
        rejects(task, inp, {**out, key: np.full(out[key].shape, 1e300)})


def _keep_top(w, k, order):
    keep = np.zeros(w.size, bool)
    keep[order[:k]] = True
    return keep.reshape(w.shape)


def _truncating(w, s):  # int(s n): one weight too many kept whenever s n has a fraction
    return _keep_top(w, w.size - int(s * w.size), np.argsort(-np.abs(w).ravel(), kind="stable"))


def _ceiling(w, s):  # ceil: wrong at s n = k + 1/2 with k even, where Python's round goes down
    return _keep_top(w, w.size - int(np.ceil(s * w.size)), np.argsort(-np.abs(w).ravel(), kind="stable"))


def _threshold(w, s):  # |w| >= k-th largest: keeps every tie at the threshold
    k = w.size - round(s * w.size)
    t = np.sort(np.abs(w).ravel())[::-1][k - 1]
    return np.abs(w) >= t


def _ties_to_higher_index(w, s):
    k = w.size - round(s * w.size)
    flat = np.abs(w).ravel()[::-1]
    order = w.size - 1 - np.argsort(-flat, kind="stable")
    return _keep_top(w, k, order)


def _signed(w, s):  # ranks w, not |w|
    return _keep_top(w, w.size - round(s * w.size), np.argsort(-w.ravel(), kind="stable"))


@pytest.mark.parametrize("bug, match", [(_truncating, "kept Yours"), (_ceiling, "kept Yours"),
                                        (_threshold, "threshold"), (_ties_to_higher_index, "lower flat index"),
                                        (_signed, "signed")])
def test_prune_rejects_classic_bugs(bug, match):
    inp, out = run(T11, {"prune_magnitude": bug}, seed=5)
    rejects(T11, inp, out, match)


def test_prune_half_way_cases_are_exact_ties():
    inp = T11.make_inputs(np.random.default_rng(9))
    for i, label in enumerate(inp["label"]):
        if "k + 1/2" in label:
            sn = inp["sparsity"][i] * inp[f"w{i}"].size
            assert sn % 1 == 0.5, (label, sn)
            assert round(sn) % 2 == 0 and (round(sn) < sn) == ("down" in label)


def _wrong_axis(w, axis):
    return nm_mask(w, 2, 4, axis=1 - axis)


def _three_per_group(w, axis):
    return nm_mask(w, 3, 4, axis=axis)


def _ties_last(w, axis):  # among equal |w| keeps the higher index (flipping maps groups onto groups)
    return np.flip(nm_mask(np.flip(w, axis=axis), 2, 4, axis=axis), axis=axis)


@pytest.mark.parametrize("bug, match", [(_wrong_axis, "along axis"), (_three_per_group, "exactly 2"),
                                        (_ties_last, "lower index")])
def test_nm_mask_rejects_classic_bugs(bug, match):
    inp, out = run(T12, {"mask_24": bug})
    rejects(T12, inp, out, match)


def _nibbles_high_first(w):  # the first group in the high bits of each word
    values, meta = compress_nm(w, axis=1)
    m = meta.astype(np.uint32)
    swapped = sum(((m >> (4 * g)) & 0xF) << (4 * (3 - g)) for g in range(4))
    return values, swapped.astype(np.uint16)


def _indices_swapped(w):  # idx1 | idx0 << 2
    values, meta = compress_nm(w, axis=1)
    m = meta.astype(np.uint32)
    out = sum((((m >> (4 * g)) & 0x3) << 2 | ((m >> (4 * g + 2)) & 0x3)) << (4 * g) for g in range(4))
    return values, out.astype(np.uint16)


def _non_zeros_only(w):  # an under-full group names its highest zeros instead of the lowest
    M, K = w.shape
    g = w.reshape(M, K // 4, 4)
    score = np.where(g != 0, 2.0, 0.0) + np.arange(4) / 8  # non-zeros first, then zeros from the top
    pos = np.sort(np.argsort(-score, axis=-1, kind="stable")[..., :2], axis=-1)
    values = np.take_along_axis(g, pos, axis=-1).reshape(M, K // 2)
    nib = (pos[..., 0] | pos[..., 1] << 2).astype(np.uint32).reshape(M, K // 16, 4)
    return values, (nib << (4 * np.arange(4, dtype=np.uint32))).sum(axis=-1).astype(np.uint16)


@pytest.mark.parametrize("bug", [_nibbles_high_first, _indices_swapped, _non_zeros_only])
def test_compress_rejects_classic_bugs(bug):
    inp, out = run(T13, {"compress_24": bug})
    rejects(T13, inp, out, "(metadata words|values) differ")


@pytest.mark.parametrize("task", [T11, T12, T13], ids=lambda t: t.grade_id)
def test_mask_inputs_differ_between_seeds(task):
    a, b = (task.make_inputs(np.random.default_rng(s)) for s in (1, 2))
    assert any(a[k].shape != b[k].shape or not np.array_equal(a[k], b[k]) for k in a if k.startswith("w"))


# ----------------------------------------------------------------------------------- Task 2.1: SpMV
T21 = get("lab04", "task_2_1")
THREADS = 32  # the notebook's simulator block: the row counts drawn (2-30, 33-61) are never a multiple


def _spmv_ns(guard=True, off_by_one=False, blocks=None):
    @cuda.jit
    def kernel(indptr, indices, data, x, y):
        row = cuda.grid(1)
        if not guard or row < y.shape[0]:
            acc = float32(0.0)
            end = indptr[row + 1] - 1 if off_by_one else indptr[row + 1]
            for j in range(indptr[row], end):
                acc += data[j] * x[indices[j]]
            y[row] = acc

    def spmv_launch(indptr, indices, data, x, y):
        n = blocks if blocks is not None else (y.shape[0] + THREADS - 1) // THREADS
        kernel[n, THREADS](indptr, indices, data, x, y)

    return {"spmv_launch": spmv_launch}


@pytest.mark.sim
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_spmv_accepts_a_correct_kernel(seed):
    T21.judge(*run(T21, _spmv_ns(), seed))


@pytest.mark.sim
@pytest.mark.parametrize("bug, match", [(dict(guard=False), "outside an array"),
                                        (dict(off_by_one=True), "rows of y differ"),
                                        (dict(blocks=1), "never written")])
def test_spmv_rejects_classic_bugs(bug, match):
    inp, out = run(T21, _spmv_ns(**bug))
    rejects(T21, inp, out, match)


@pytest.fixture(scope="module")
def spmv_good():
    return run(T21, _spmv_ns())


@pytest.mark.sim
def test_spmv_rejects_hostile_outputs(spmv_good):
    inp, out = spmv_good
    for what, bad in hostile_variants(out):
        rejects(T21, inp, bad)
    y = out["y0"]
    rows = y.shape[1] - produce04.GUARD
    rejects(T21, inp, {**out, "y0": np.zeros_like(y)}, "past the end")
    tail_ok = y.copy()
    tail_ok[:, :rows] = 0.0                              # right guard, all-zero answer
    rejects(T21, inp, {**out, "y0": tail_ok}, "differ")
    huge = y.astype(np.float64)
    huge[:, :rows] = 1e300
    rejects(T21, inp, {**out, "y0": huge}, "differ")
    racy = y.copy()
    racy[1, 0] += 1.0                                    # the second run disagrees
    rejects(T21, inp, {**out, "y0": racy}, "two runs")
    rejects(T21, inp, {**out, "error0": "IndexError: index 40 is out of bounds"}, "outside an array")


def test_spmv_inputs_differ_between_seeds_and_avoid_whole_blocks():
    a, b = (T21.make_inputs(np.random.default_rng(s)) for s in (1, 2))
    assert a["label"] != b["label"] or not np.array_equal(a["data0"], b["data0"])
    for seed in range(20):
        inp = T21.make_inputs(np.random.default_rng(seed))
        rows = [inp[f"indptr{i}"].size - 1 for i in range(2)]
        assert rows[0] < THREADS < rows[1] and all(r % THREADS for r in rows)


def test_spmv_static_part():
    assert T21.requires_kernel
    assert set(T21.functions) == {"make_spmv_kernel", "spmv_launch"}
    assert {"scaledl.sparsity", "scaledl.kernels", "scipy.sparse"} <= set(T21.forbidden_modules)


# ---------------------------------------------------------------------------------- Tasks 3.1, 3.2
T31, T32 = get("lab04", "task_3_1"), get("lab04", "task_3_2")
W = lab04.WEIGHTS


@pytest.fixture(scope="module")
def dense():
    data, _ = lab04.dense_baseline()  # also warms the judge's own cache
    from scaledl.nn import mlp, train

    model = mlp(list(lab04.DENSE_SIZES), seed=lab04.DENSE_SEED)
    train(model, data, steps=lab04.DENSE_STEPS, seed=lab04.DENSE_TRAIN_SEED)
    return model, data


def _pruned(dense, schedule=(0.5, 0.75, 0.875, 0.9), steps=300):
    from scaledl.nn import train

    model, data = dense
    model = model.copy()
    for r, s in enumerate(schedule):  # the notebook's recipe, with the library's masks
        params = model.parameters()
        model.set_masks({n: magnitude_mask(params[n], s) for n in W})
        if steps:
            train(model, data, steps=steps, seed=100 + r)
    return model


def _sparse24(dense, axis=0, steps=500):
    from scaledl.nn import train

    model, data = dense
    model = model.copy()
    params = model.parameters()
    model.set_masks({n: nm_mask(params[n], 2, 4, axis=axis, pad=True) for n in W})  # fc3.W has 10 columns
    if steps:
        train(model, data, steps=steps, seed=200)
    return model


def _out(task, model, name):
    return run(task, {name: model})


def test_pruned_network_passes(dense):
    T31.judge(*_out(T31, _pruned(dense), "pruned"))


def test_nm_network_passes(dense):
    T32.judge(*_out(T32, _sparse24(dense), "sparse24"))


@pytest.mark.parametrize("make, match", [
    (lambda d: _pruned(d, schedule=(0.9,), steps=0), "test accuracy"),      # one shot, no retraining
    (lambda d: _pruned(d, schedule=(0.5, 0.8)), "Spec at least 90 %"),      # not sparse enough
    (lambda d: d[0], "Spec at least 90 %"),                                  # the dense model itself
])
def test_pruned_network_rejects_classic_bugs(dense, make, match):
    rejects(T31, *_out(T31, make(dense), "pruned"), match)


@pytest.mark.parametrize("make, match", [
    (lambda d: _sparse24(d, axis=1, steps=50), "along axis 0"),             # groups along the wrong axis
    (lambda d: _sparse24(d, steps=0), "test accuracy"),                     # pruned, never retrained
    (lambda d: d[0], "at most 2"),
])
def test_nm_network_rejects_classic_bugs(dense, make, match):
    rejects(T32, *_out(T32, make(dense), "sparse24"), match)


@pytest.fixture(scope="module")
def good_networks(dense):
    return {T31: _out(T31, _pruned(dense), "pruned"), T32: _out(T32, _sparse24(dense), "sparse24")}


@pytest.mark.parametrize("which", ["task_3_1", "task_3_2"])
def test_networks_reject_hostile_outputs(good_networks, which):
    task = get("lab04", which)
    inp, out = good_networks[task]
    for what, bad in hostile_variants(out):
        rejects(task, inp, bad)
    rejects(task, inp, {k: np.zeros_like(v) for k, v in out.items()}, "test accuracy")  # 100 % sparse, useless
    rejects(task, inp, {**out, "fc1.W": np.full(out["fc1.W"].shape, 1e300)}, "not finite")
    big = {k: (v * 1e30).astype(np.float32) for k, v in out.items()}                    # finite, overflowing
    rejects(task, inp, big, "test accuracy")


def test_networks_judge_a_baseline_of_their_own(good_networks):
    """Whatever the student's kernel says its dense accuracy is, the judge uses the one it trained."""
    inp, out = good_networks[T31]
    T31.judge({**inp, "dense_accuracy": 0.0}, {**out, "dense_accuracy": 0.0})
    _, dense_accuracy = lab04.dense_baseline()
    assert dense_accuracy == pytest.approx(0.9778, abs=1e-4)  # the notebook's printed 97.78 %


def test_network_inputs_are_fixed_by_design():
    # The network tasks have nothing to draw: the graded object is the notebook's one network, measured on the
    # fixed digits test set, so make_inputs gives the same (empty) inputs for every seed.
    assert T31.make_inputs(np.random.default_rng(1)) == T32.make_inputs(np.random.default_rng(2)) == {}


def test_task_table_matches_the_notebook():
    import nbformat

    from pathlib import Path

    nb = nbformat.read(Path(__file__).parents[2] / "labs/solutions/lab04_prune_and_sparsify.ipynb", as_version=4)
    ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
           if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]
    assert ids == [t.grade_id for t in lab04.TASKS]
    assert len({t.local_seed for t in lab04.TASKS}) == len(lab04.TASKS)
