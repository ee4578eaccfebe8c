"""One source of hints: for every hint of scaledl.labs.hints, a wrong implementation of its kind, run through
the lab notebook's own check, prints it, and the grader's judge of the task names it in the same words (within
the 500 characters of a message the feedback page shows); a correct implementation prints no hint.

The kernel hints of labs 01, 02 and 04 need the CUDA simulator: tests/sim/test_lab_kernel_hints.py. Lab 05's
Task 2.1 runs the wrong ring under mpiexec (check_mpi_allreduce( and the grader's MPI runner), so this file runs
in the "mpi" unit of `make test`.
"""

import contextlib
import io
import math

import numpy as np
import pytest

from scaledl.course import exchange
from scaledl.course.tasks import get
from scaledl.labs import dgc_checks as D
from scaledl.labs import ring as L
from scaledl.labs import sparse_checks as S
from scaledl.labs.hints import HINTS, hint
from scaledl.labs.batch_checks import check_batch_policy

FEEDBACK_CHARS = 500  # scaledl.course.grade keeps this much of a judge's message for the feedback page
KERNEL_HINTS = {("lab04", "spmv_rows")} | {("sanitizer", k) for k in HINTS["sanitizer"]}  # with the "kernel" group:
#                                                                                tests/sim/test_lab_kernel_hints.py
CASES = {}


def case(group, key):
    def register(fn):
        CASES[(group, key)] = fn
        return fn
    return register


def judged(lab, grade_id, ns, seed=0, inputs=None):
    """The judge's message for ``ns`` (the student's names) on the task's inputs for ``seed``."""
    task = get(lab, grade_id)
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(seed)) if inputs is None else inputs)
    with pytest.raises(AssertionError) as err:
        task.judge(inp, exchange.roundtrip(task.produce(ns, inp)))
    return str(err.value)


def printed(run) -> str:
    """What a notebook check prints (its Yours/Spec lines and hints), whether it raises or returns."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result = run(out)
            if result is not None and not result.passed:
                result.raise_if_failed()
        except AssertionError:
            pass
    return out.getvalue()


# ------------------------------------------------------------------------------------------ lab 01, lab 02
@case("lab01", "gemm_intensity")
def _():
    from scaledl.kernels import gemm_traffic
    from scaledl.labs.check import check_values

    def gemm_intensity(M, N, K, variant, tile=16):  # forgets the stores of C
        loads = 2 * M * N * K if variant == "naive" else M * K * -(-N // tile) + K * N * -(-M // tile)
        return 2 * M * N * K / (4 * loads)

    cases = [(5, 3, 7, 16), (37, 29, 41, 16), (40, 8, 3, 8), (100, 1, 64, 32), (4096, 4096, 4096, 16)]

    def notebook(out):
        for variant in ("naive", "tiled"):
            check_values(lambda M, N, K, tile: gemm_intensity(M, N, K, variant, tile=tile),
                         lambda M, N, K, tile: gemm_traffic(
                             M, N, K, variant, **({"tile": tile} if variant == "tiled" else {})
                         ).arithmetic_intensity_flop_per_byte,
                         cases, name=f"gemm_intensity[{variant}]", hint=hint("lab01", "gemm_intensity"),
                         report=out).raise_if_failed()

    return printed(notebook), judged("lab01", "task_1_4", {"gemm_intensity": gemm_intensity})


@case("lab02", "tiled_loads")
def _():
    from scaledl.kernels import gemm_traffic
    from scaledl.labs.check import check_values, gemm_sizes

    def tiled_loads(M, N, K, tile):  # block counts rounded down
        return M * K * (N // tile) + K * N * (M // tile)

    cases = [(M, N, K, 4) for (M, N, K) in gemm_sizes(4)] + [(1000, 1000, 1000, 16)]
    text = printed(lambda out: check_values(tiled_loads,
                                            lambda M, N, K, t: gemm_traffic(M, N, K, "tiled", tile=t).loads,
                                            cases, name="tiled_loads", hint=hint("lab02", "tiled_loads"), report=out))
    return text, judged("lab02", "task_2_1b", {"tiled_loads": tiled_loads})


# ------------------------------------------------------------------------------------------------ lab 03
def _e4m3(*, exponent_floor=-6, rounding=np.rint, below_normal=None, top=448.0, beyond=None):
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
        q = np.copysign(q, x)
        if beyond is not None:
            q = np.where(np.abs(x) > 448, beyond(x), q)
        return q.astype(np.float32)
    return f


def _lab03_notebook(e4m3_round):
    """The lab's checks of Task 1.1 (its cells 6 and 10: the same test values, the same calls)."""
    import ml_dtypes

    from scaledl.labs.e4m3_checks import check
    from scaledl.numerics import quantize

    rng = np.random.default_rng(0)
    ties = np.array([1.0625, 1.1875, 1.3125, 3.25, 464.0, 465.0, 447.99, 2.0**-10, 1.5 * 2.0**-9, 2.5 * 2.0**-9,
                     7.5 * 2.0**-9, 0.999 * 2.0**-10, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30], np.float32)
    wide = (rng.standard_normal(20_001) * np.exp2(rng.uniform(-12, 11, 20_001))).astype(np.float32)
    x = np.concatenate([ties, -ties, wide])
    in_range = np.isfinite(x) & (np.abs(x) <= 448)
    text = ""
    for name, xs, spec in (("in range, against ml_dtypes", x[in_range],
                            x[in_range].astype(ml_dtypes.float8_e4m3fn).astype(np.float32)),
                           ("everything, against scaledl", x, quantize(x, "e4m3"))):
        text += printed(lambda out: check(f"Task 1.1, {name}", xs, e4m3_round(xs), spec, report=out))
    return text


LAB03_BUGS = {
    "subnormals_flushed": _e4m3(below_normal=0.0),
    "subnormals_clamped": _e4m3(below_normal=2.0**-6),
    "subnormals_too_precise": _e4m3(exponent_floor=None),
    "truncated": _e4m3(rounding=np.floor),
    "ties_away": _e4m3(rounding=lambda v: np.floor(v + 0.5)),
    "ties_toward": _e4m3(rounding=lambda v: np.ceil(v - 0.5)),
    "saturate_beyond": _e4m3(top=None),
    "saturate_inf": _e4m3(beyond=lambda x: np.copysign(np.inf, x)),
    "saturate_nan": _e4m3(beyond=lambda x: np.full_like(x, np.nan)),
    "saturate_sign": _e4m3(beyond=lambda x: np.full_like(x, 448.0)),
}
for _key, _bug in LAB03_BUGS.items():
    case("lab03", _key)(lambda bug=_bug: (_lab03_notebook(bug), judged("lab03", "task_1_1", {"e4m3_round": bug})))


# ------------------------------------------------------------------------------------------------ lab 04
def _prune(kind):
    def prune_magnitude(w, sparsity):
        w = np.asarray(w)
        k = w.size - round(sparsity * w.size)
        a = np.abs(w).ravel()
        if kind == "threshold":
            return np.abs(w) >= np.sort(a)[::-1][k - 1] if k else np.zeros(w.shape, bool)
        if kind == "rounding":
            k = w.size - int(sparsity * w.size)
        if kind == "ties":
            order = np.lexsort((-np.arange(a.size), -a))  # equal magnitudes: the higher index first
        elif kind == "signed":
            order = np.argsort(-w.ravel(), kind="stable")
        else:
            order = np.argsort(-a, kind="stable")
        keep = np.zeros(w.size, bool)
        keep[order[:k]] = True
        return keep.reshape(w.shape)
    return prune_magnitude


def _nm(kind):
    def mask_24(w, axis):
        w = np.asarray(w)
        if kind == "axis":
            axis = 1 - axis
        g = np.moveaxis(w, axis, -1)
        shape = g.shape
        groups = np.abs(g).reshape(*shape[:-1], shape[-1] // 4, 4)
        if kind == "ties":  # equal magnitudes: the higher index
            top = np.argsort(-groups[..., ::-1], axis=-1, kind="stable")[..., :2]
            top = 3 - top
        else:
            top = np.argsort(-groups, axis=-1, kind="stable")[..., :3 if kind == "three" else 2]
        mask = np.zeros(groups.shape, dtype=bool)
        np.put_along_axis(mask, top, True, axis=-1)
        return np.moveaxis(mask.reshape(shape), -1, axis)
    return mask_24


def _compress(kind):
    from scaledl.sparsity import nm_mask

    def compress_24(w):
        w = np.asarray(w)
        M, K = w.shape
        keep = nm_mask(w, 2, 4, axis=1).reshape(M, K // 4, 4)
        pos = np.nonzero(keep)[2].reshape(M, K // 4, 2)
        values = w.reshape(M, K // 4, 4)[keep].reshape(M, K // 2)
        if kind == "values":
            values = values.reshape(M, K // 4, 2)[..., ::-1].reshape(M, K // 2)
        if kind == "shapes":
            values = values.reshape(M, K // 4, 2)[..., 0]
        first, second = (pos[..., 1], pos[..., 0]) if kind == "metadata" else (pos[..., 0], pos[..., 1])
        nibbles = (first | second << 2).astype(np.uint32).reshape(M, K // 16, 4)
        return values, (nibbles << (4 * np.arange(4, dtype=np.uint32))).sum(axis=-1).astype(np.uint16)
    return compress_24


def _lab04_check(check, fn):
    return printed(lambda out: check(fn, report=out))


for _key, _kind in (("prune_threshold", "threshold"), ("prune_rounding", "rounding"), ("prune_ties", "ties"),
                    ("prune_signed", "signed")):
    case("lab04", _key)(lambda kind=_kind: (
        _lab04_check(S.check_magnitude_pruning, _prune(kind)),
        judged("lab04", "task_1_1", {"prune_magnitude": _prune(kind)})))
for _key, _kind in (("nm_axis", "axis"), ("nm_two_per_group", "three"), ("nm_which_two", "ties")):
    case("lab04", _key)(lambda kind=_kind: (
        _lab04_check(S.check_nm_mask, _nm(kind)),
        judged("lab04", "task_1_2", {"mask_24": _nm(kind)})))
for _key, _kind in (("compress_shapes", "shapes"), ("compress_values", "values"), ("compress_metadata", "metadata")):
    case("lab04", _key)(lambda kind=_kind: (
        _lab04_check(lambda f, report: S.check_compress_24(f, report=report), _compress(kind)),
        judged("lab04", "task_1_3", {"compress_24": _compress(kind)})))


def _network(sparsity=0.0, axis=None, trained=True):
    """The digits MLP: the trained dense baseline (or a fresh one), pruned by magnitude to ``sparsity`` or made
    2:4 along ``axis``, without retraining."""
    from scaledl.course.tasks.lab04 import DENSE_SEED, DENSE_SIZES, DENSE_STEPS, DENSE_TRAIN_SEED
    from scaledl.nn import digits, mlp, train
    from scaledl.sparsity import magnitude_mask, nm_mask

    model = mlp(list(DENSE_SIZES), seed=DENSE_SEED)
    if trained:
        train(model, digits(), steps=DENSE_STEPS, seed=DENSE_TRAIN_SEED)
    params = model.parameters()
    masks = {n: (magnitude_mask(params[n], sparsity) if axis is None else nm_mask(params[n], 2, 4, axis=axis))
             for n in ("fc1.W", "fc2.W", "fc3.W")}
    model.set_masks(masks)
    return model


def _lab04_network(check, model, grade_id, name):
    from scaledl.course.tasks.lab04 import dense_baseline

    data, dense_accuracy = dense_baseline()
    text = printed(lambda out: check(model, data, dense_accuracy, report=out))
    return text, judged("lab04", grade_id, {name: model})


@case("lab04", "prune_gradually")
def _():
    return _lab04_network(S.check_pruned_network, _network(sparsity=0.5), "task_3_1", "pruned")  # 50 %: too few zeros


@case("lab04", "nm_network_groups")
def _():
    return _lab04_network(S.check_nm_network, _network(sparsity=0.0), "task_3_2", "sparse24")  # masks never set


@case("lab04", "nm_network_retrain")
def _():
    return _lab04_network(S.check_nm_network, _network(axis=0, trained=False), "task_3_2", "sparse24")  # no training


# ------------------------------------------------------------------------------------------------ lab 05
def _ring(kind):
    from scaledl.comm.schedule import Transfer, bounds

    def ring_schedule(p, length):
        b = bounds(length, p)
        blk = lambda c: (b[c % p], b[c % p + 1])  # noqa: E731
        rs = [[Transfer(i, (i + 1) % p, *blk(i - s), "reduce") for i in range(p)] for s in range(p - 1)]
        ag = [[Transfer(i, (i + 1) % p, *blk(i + 1 - s), "copy") for i in range(p)] for s in range(p - 1)]
        if kind == "off_by_one":
            ag = [[Transfer(i, (i + 1) % p, *blk(i - s), "copy") for i in range(p)] for s in range(p - 1)]
        elif kind == "missing_reduction":
            rs = rs[:max(p - 2, 0)]
        elif kind == "reduce_then_copy":
            rs = [[Transfer(t.src, t.dst, t.start, t.stop, "copy") for t in r] for r in rs]
        elif kind == "ring_time":
            ag = ag + ag[-1:]  # one round too many: the sums stay right
        elif kind == "ring_compare":
            ag = [[Transfer(i, (i + 2) % p, *blk(i + 1 - s), "copy") for i in range(p)] for s in range(p - 1)]
        return rs + ag
    return ring_schedule


for _key in ("off_by_one", "missing_reduction", "reduce_then_copy", "ring_time", "ring_compare"):
    case("lab05", _key)(lambda kind=_key: (
        printed(lambda out: L.check_ring_schedule(_ring(kind), report=out)),
        judged("lab05", "task_1_1", {"ring_schedule": _ring(kind)})))


def wrong_allreduce(comm, x):  # every rank keeps its own vector: no exchange at all
    return np.array(x, copy=True).ravel()


@case("lab05", "mpi_values")
def _():
    import importlib.util

    from scaledl.course.produce import mpi_runner

    if mpi_runner.mpiexec() is None or importlib.util.find_spec("mpi4py") is None:
        pytest.skip("needs mpiexec and mpi4py (the [mpi] extra; the lowest-versions tier has neither)")
    text = printed(lambda out: L.check_mpi_allreduce(wrong_allreduce, ranks=(2,), lengths=(7,), repeats=1,
                                                     time_bytes=64, timeout_s=60, report=out))
    return text, judged("lab05", "task_2_1", {"ring_allreduce_mpi": wrong_allreduce})


@case("lab05", "deadlock")
def _():
    """The deadlock as each side sees it: the check's launcher and the grader's runner report a timeout (the
    real deadlock, every rank in Send, is tests/unit/test_labs_ring.py's and the hostile corpus's)."""
    import scaledl.comm.mpi as M

    real = M.launch

    def timed_out(*args, **kwargs):
        raise TimeoutError("no result")

    M.launch = timed_out
    try:
        text = printed(lambda out: L.check_mpi_allreduce(wrong_allreduce, ranks=(2,), report=out))
    finally:
        M.launch = real
    task = get("lab05", "task_2_1")
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(0)))
    with pytest.raises(AssertionError) as err:
        task.judge(inp, {"status": "timeout", "log": ""})
    return text, str(err.value)


def _ring_order(kind):
    import itertools

    import networkx as nx

    def ring_cost(topology, order):
        order = list(order)
        load = {}
        for a, b in zip(order, order[1:] + order[:1]):
            if a != b:
                path = nx.shortest_path(topology, a, b, weight="latency_s")
                for link in zip(path, path[1:]):
                    load[link] = load.get(link, 0) + 1
        if kind == "ring_cost":  # the count alone, without the link's bandwidth
            return float(max(load.values(), default=0))
        return max((k / topology.edges[link]["bandwidth_Bps"] for link, k in load.items()), default=0.0)

    def best_ring_order(topology):
        p = topology.graph["ranks"]
        if kind == "ring_order":  # no search
            return list(range(p))
        return min(([0, *rest] for rest in itertools.permutations(range(1, p))), key=lambda o: ring_cost(topology, o))

    return {"ring_cost": ring_cost, "best_ring_order": best_ring_order}


for _key in ("ring_cost", "ring_order"):
    def _order_case(kind=_key):
        from scaledl.comm import topology as T
    
        slow = T.with_links(T.hybrid_cube_mesh(), {(3, 7): {"bandwidth_Bps": T.NVLINK1_P100_LINK_Bps / 10}})
        ns = _ring_order(kind)
        text = printed(lambda out: L.check_ring_order(ns["ring_cost"], ns["best_ring_order"],
                                                      [T.svail_pcie_node(), slow], report=out))
        return text, judged("lab05", "task_3_1_3_2", ns)
    case("lab05", _key)(_order_case)


# ------------------------------------------------------------------------------------------------ lab 06
def _top_k(kind):
    def top_k(v, k):
        v = np.asarray(v)
        if kind == "count":
            k = min(v.size, k + 1)
        if kind == "ties":  # equal magnitudes: the higher index
            order = np.lexsort((-np.arange(v.size), -np.abs(v)))
        elif kind == "signed":
            order = np.argsort(-v, kind="stable")
        elif kind == "compare":
            order = np.argsort(np.abs(v), kind="stable")  # the smallest
        else:
            order = np.argsort(-np.abs(v), kind="stable")
        idx = order[:k]
        if kind == "indices":
            return v[np.sort(idx)]
        return idx if kind == "sorted" else np.sort(idx)
    return top_k


for _kind in ("count", "indices", "sorted", "signed", "ties", "compare"):
    case("lab06", f"top_k_{_kind}")(lambda kind=_kind: (
        printed(lambda out: D.check_top_k(_top_k(kind), report=out)),
        judged("lab06", "task_1_1", {"top_k": _top_k(kind)})))


def _spec_top_k(v, k):
    from scaledl.labs.dgc_checks import spec_top_k

    return spec_top_k(v, k)


class TopKEF:
    bug = None

    def __init__(self, ratio):
        self.ratio, self.residuals = ratio, {}

    def compress(self, grad, key=""):
        top_k = _spec_top_k
        r = self.residuals.setdefault(key, np.zeros_like(grad))
        k = max(1, math.ceil(self.ratio * grad.size))
        if self.bug == "ef_count":
            k = min(grad.size, k + 1)
        if self.bug == "ef_lost":
            r[...] = 0
        if self.bug == "ef_accumulated":
            idx = top_k(grad.reshape(-1), k)
            r += grad
            flat = r.reshape(-1)
            values = flat[idx].copy()
            flat[idx] = 0
            return idx, values
        r += grad
        flat = r.reshape(-1)
        idx = top_k(flat, k)
        values = flat[idx].copy()
        if self.bug != "ef_not_cleared":
            flat[idx] = 0
        return idx, values


for _key in ("ef_not_cleared", "ef_lost", "ef_count", "ef_accumulated"):
    def _ef_case(kind=_key):

        buggy = type("TopKEF", (TopKEF,), {"bug": kind})
        return (printed(lambda out: D.check_error_feedback(buggy, report=out)),
                judged("lab06", "task_1_2", {"TopKEF": buggy}))
    case("lab06", _key)(_ef_case)


class DGCCompressor:
    bug = None

    def __init__(self, ratio, momentum=0.9, masking=True):
        self.ratio, self.momentum, self.masking = ratio, momentum, masking
        self.velocity, self.residuals = {}, {}

    def compress(self, grad, key=""):
        top_k = _spec_top_k
        u = self.velocity.setdefault(key, np.zeros_like(grad))
        v = self.residuals.setdefault(key, np.zeros_like(grad))
        k = max(1, math.ceil(self.ratio * grad.size))
        if self.bug == "dgc_no_momentum":
            u[...] = grad
        elif self.bug == "dgc_float32":
            u[...] = np.float64(self.momentum) * u.astype(np.float64) + grad.astype(np.float64) * (1 + 1e-7)
        elif self.bug == "dgc_compare":
            u += grad
            u *= np.float32(self.momentum)
        else:
            u *= self.momentum
            u += grad
        v += u
        flat = v.reshape(-1)
        indices = top_k(flat, k)
        values = flat[indices].copy()
        flat[indices] = 0
        masking = {"dgc_masking": False, "dgc_masking_off": True}.get(self.bug, self.masking)
        if masking:
            u.reshape(-1)[indices] = 0
        return indices, values


for _key, _gid in (("dgc_no_momentum", "task_2_1"), ("dgc_float32", "task_2_1"), ("dgc_compare", "task_2_1"),
                   ("dgc_masking", "task_2_2"), ("dgc_masking_off", "task_2_1")):
    def _dgc_case(kind=_key, gid=_gid):

        buggy = type("DGCCompressor", (DGCCompressor,), {"bug": kind})
        return (printed(lambda out: D.check_dgc(buggy, report=out)),
                judged("lab06", gid, {"DGCCompressor": buggy}))
    case("lab06", _key)(_dgc_case)


def _encode(indices, values):
    return np.asarray(indices, np.uint32).tobytes() + np.asarray(values, np.float32).tobytes()


def _decode(buffer, shape):
    nnz = len(buffer) // 8
    dense = np.zeros(math.prod(shape), np.float32)
    dense[np.frombuffer(buffer, np.uint32, nnz)] = np.frombuffer(buffer, np.float32, nnz, offset=4 * nnz)
    return dense.reshape(shape)


class CompressedReducer:
    bug = None

    def __init__(self, compressors):
        self.compressors, self.sent_bytes, self.dense_bytes = compressors, [], []

    def __call__(self, worker_grads):
        out, sent, dense = {}, 0, 0
        for name in worker_grads[0]:
            total = np.zeros_like(worker_grads[0][name])
            for w, grads in enumerate(worker_grads):
                compressor = self.compressors[0 if self.bug == "reducer_sum" else w]
                message = _encode(*compressor.compress(grads[name], "" if self.bug == "reducer_keys" else name))
                sent += len(message) // (2 if self.bug == "reducer_bytes" else 1)
                dense += grads[name].nbytes
                total += _decode(message, grads[name].shape)
            out[name] = total
        self.sent_bytes.append(sent)
        self.dense_bytes.append(dense)
        return out


for _key in ("reducer_sum", "reducer_keys", "reducer_bytes"):
    def _reducer_case(kind=_key):

        buggy = type("CompressedReducer", (CompressedReducer,), {"bug": kind})
        return (printed(lambda out: D.check_reducer(buggy, report=out)),
                judged("lab06", "task_3_1", {"CompressedReducer": buggy}))
    case("lab06", _key)(_reducer_case)


def _training(kind):
    """Task 3.2 as the grader receives it, without the 30 epochs: an untrained network (accuracy about 10 %) and
    what a reducer recorded, fed to the notebook's check and to the judge, which calls the same check."""
    from types import SimpleNamespace

    from scaledl.course.produce.lab06 import SIZES
    from scaledl.course.tasks.lab06 import BATCH, EPOCHS, WORKERS
    from scaledl.nn import digits, mlp

    data, model = digits(), mlp(SIZES, seed=0)
    steps = EPOCHS * -(-data.n_train // BATCH)
    sent = [] if kind == "training_reducer" else [80] * steps  # a reducer that recorded nothing, or a working one
    reducer = SimpleNamespace(sent_bytes=sent, dense_bytes=[4 * 9610 * WORKERS] * len(sent))
    text = printed(lambda out: D.check_compressed_training(model, data, reducer, steps=steps, report=out))
    task = get("lab06", "task_3_2")
    out = {f"weight {name}": np.array(w) for name, w in model.parameters().items()}
    out.update(sent_bytes=list(reducer.sent_bytes), dense_bytes=list(reducer.dense_bytes), steps=steps)
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(0)))
    with pytest.raises(AssertionError) as err:
        task.judge(inp, exchange.roundtrip(out))
    return text, str(err.value)


case("lab06", "training_reducer")(lambda: _training("training_reducer"))
case("lab06", "training_momentum")(lambda: _training("training_momentum"))


# ------------------------------------------------------------------------------------------------ lab 07
def _policy(kind):
    def batch_dispatch(waiting, busy, max_batch):
        if kind == "busy":
            return min(waiting, max_batch)
        if busy:
            return 0
        if kind == "cap":
            return min(waiting, max_batch + 1)
        if kind == "cap_short":
            return min(waiting, max(max_batch - 1, 1))
        if kind == "partial":
            return max_batch if waiting >= max_batch else 0
        return min(waiting, max_batch)
    return batch_dispatch


for _key in ("busy", "cap", "cap_short", "partial"):
    case("lab07", _key)(lambda kind=_key: (
        printed(lambda out: check_batch_policy(_policy(kind), report=out)),
        judged("lab07", "task_1_1", {"batch_dispatch": _policy(kind)})))


@case("lab07", "md1_wait")
def _():
    from scaledl.labs.check import check_values
    from scaledl.serve import md1_mean_wait_s

    def md1_wait(rate, service_s):  # the M/M/1 wait instead of M/D/1's
        rho = rate * service_s
        return rho * service_s / (1 - rho)

    def one_at_a_time(waiting, busy, max_batch):
        return 0 if busy or waiting == 0 else 1

    text = printed(lambda out: check_values(md1_wait, md1_mean_wait_s, [(100.0, 0.002), (400.0, 0.002), (999.0, 0.001)],
                                            rtol=1e-12, hint=hint("lab07", "md1_wait"), report=out))
    return text, judged("lab07", "task_1_2", {"md1_wait": md1_wait, "one_at_a_time": one_at_a_time})


@case("lab07", "steady_batch")
def _():
    from scaledl.labs.check import check_values
    from scaledl.serve import eager_steady_batch

    def steady_batch(rate, a_s, c_s):  # b = lambda a, forgetting that the batch itself takes c b
        return rate * a_s

    text = printed(lambda out: check_values(steady_batch, eager_steady_batch,
                                            [(500.0, 0.010, 0.0002), (2000.0, 0.010, 0.0002), (3.0, 1.0, 0.3)],
                                            rtol=1e-12, hint=hint("lab07", "steady_batch"), report=out))
    return text, judged("lab07", "task_2_1", {"steady_batch": steady_batch})


# ------------------------------------------------------------------------------------------------- tests
NON_KERNEL = sorted((g, k) for g in HINTS if g != "kernel" for k in HINTS[g] if (g, k) not in KERNEL_HINTS)


def test_every_hint_has_a_wrong_implementation_here_or_in_the_kernel_tests():
    assert sorted(CASES) == NON_KERNEL


@pytest.mark.parametrize("group, key", NON_KERNEL, ids=[f"{g}-{k}" for g, k in NON_KERNEL])
def test_the_notebook_check_and_the_judge_name_the_same_bug(group, key):
    text = hint(group, key)
    check, judge = CASES[(group, key)]()
    assert f"Hint: {text}" in check, f"the notebook's check did not print the hint:\n{check}"
    assert text in judge, f"the judge did not name it:\n{judge}"
    assert text in judge[:FEEDBACK_CHARS], f"the feedback page would cut the hint off:\n{judge[:FEEDBACK_CHARS]}"


def _correct_checks():
    """The notebook's check of each task above, given the correct answer (the factories' default kind)."""
    from scaledl.comm import topology as T

    slow = T.with_links(T.hybrid_cube_mesh(), {(3, 7): {"bandwidth_Bps": T.NVLINK1_P100_LINK_Bps / 10}})
    order = _ring_order(None)
    return {
        "lab03 e4m3_round": lambda: _lab03_notebook(_e4m3()),
        "lab04 prune_magnitude": lambda: printed(lambda out: S.check_magnitude_pruning(_prune(None), report=out)),
        "lab04 mask_24": lambda: printed(lambda out: S.check_nm_mask(_nm(None), report=out)),
        "lab04 compress_24": lambda: printed(lambda out: S.check_compress_24(_compress(None), report=out)),
        "lab05 ring_schedule": lambda: printed(lambda out: L.check_ring_schedule(_ring(None), report=out)),
        "lab05 ring order": lambda: printed(lambda out: L.check_ring_order(order["ring_cost"], order["best_ring_order"],
                                                                           [slow], samples=5, report=out)),
        "lab06 top_k": lambda: printed(lambda out: D.check_top_k(_top_k(None), report=out)),
        "lab06 TopKEF": lambda: printed(lambda out: D.check_error_feedback(TopKEF, report=out)),
        "lab06 DGCCompressor": lambda: printed(lambda out: D.check_dgc(DGCCompressor, report=out)),
        "lab06 CompressedReducer": lambda: printed(lambda out: D.check_reducer(CompressedReducer, report=out)),
        "lab07 batch_dispatch": lambda: printed(lambda out: check_batch_policy(_policy(None), report=out)),
    }


@pytest.mark.parametrize("name", list(_correct_checks()))
def test_a_correct_answer_gets_no_hint(name):
    text = _correct_checks()[name]()
    assert "FAIL" not in text and "Hint" not in text, text
