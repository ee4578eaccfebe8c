"""Lab 02's task specs: each judge passes a correct GEMM kernel (or the library's traffic model), fails the
classic bugs with a message naming its task, and turns hostile outputs into AssertionError, never a pass
or a crash.

Kernels run on the simulator at the hidden tests' sizes for its blocks (TILE = 4, R = 2): a few seconds."""

import sys
from pathlib import Path

import numpy as np
import pytest

import scaledl
import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32

from scaledl.course import exchange
from scaledl.course.produce import lab01 as produce01
from scaledl.course.tasks import get, lab02
from scaledl.kernels import gemm, gemm_traffic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared task_helpers module
from task_helpers import graded  # noqa: E402

T = 4  # the notebook's TILE on the simulator


def tiled(sync_before=True, offset_bug=False, guard_store=True, floor_tiles=False):
    """A Task 2.1 kernel with one switchable classic bug."""
    @cuda.jit
    def kernel(A, B, C):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        M, K, N = A.shape[0], A.shape[1], B.shape[1]
        acc = float32(0.0)
        tiles = K // T if floor_tiles else (K + T - 1) // T
        for t in range(tiles):
            base = t if offset_bug else t * T
            ka, kb = base + tx, base + ty
            sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
            sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
            if sync_before:
                cuda.syncthreads()
            for k in range(T):
                acc += sA[ty, k] * sB[k, tx]
            cuda.syncthreads()
        if not guard_store or (row < M and col < N):
            C[row, col] = acc
    return kernel


def launcher(kernel, shrink_grid=False):
    def launch(A, B, C):
        M, N = C.shape
        grid = (N // T, M // T) if shrink_grid else ((N + T - 1) // T, (M + T - 1) // T)
        kernel[grid, (T, T)](A, B, C)
    return launch


def spec_loads(M, N, K, tile):
    return gemm_traffic(M, N, K, "tiled", tile=tile).loads


CORRECT = {"launch_tiled": launcher(tiled()), "tiled_loads": spec_loads,
           # the book's own register-blocked kernel stands for a correct Task 2.2 answer
           "launch_regblock": lambda A, B, C: gemm(A, B, variant="regblock", out=C)}
KERNEL_TASKS = ("task_2_1", "task_2_2")


def run(grade_id, ns, seed):
    """What grading does: the grader's inputs, the student's produce, both through the exchange files."""
    return graded("lab02", grade_id, ns, seed)


@pytest.mark.sim
@pytest.mark.parametrize("grade_id", ["task_2_1", "task_2_1b", "task_2_2"])
@pytest.mark.parametrize("seed", [0, 1, 150200])
def test_judge_accepts_a_correct_answer(grade_id, seed):
    task, inputs, outputs = run(grade_id, CORRECT, seed)
    task.judge(inputs, outputs)


@pytest.mark.sim
@pytest.mark.parametrize("grade_id, name, buggy, message", [
    ("task_2_1", "launch_tiled", launcher(tiled(offset_bug=True)), r"Task 2\.1 \(C = A @ B at .*\): \d+ of \d+ "),
    ("task_2_1", "launch_tiled", launcher(tiled(floor_tiles=True)),  # the partial last tile dropped: its own hint
     r"Task 2\.1 .*: every output is the sum of the first \d+ of its K = \d+ products only; .*differ; at \(0, 0\): "
     r"Yours.*Hint: the last, partial tile of K is left out"),
    ("task_2_1", "launch_tiled", launcher(tiled(guard_store=False)),  # the sanitizer sees the store past the edge
     r"Task 2\.1 .*\[out_of_bounds\] out-of-bounds write of `C\[.*Hint: an index went outside an array: the bounds "
     r"guard is missing"),
    ("task_2_1", "launch_tiled", launcher(tiled(), shrink_grid=True),
     r"Task 2\.1 .*never written.*Hint: a clean block of outputs at the end"),
    ("task_2_2", "launch_regblock", launcher(tiled(floor_tiles=True)), r"Task 2\.2 .*differ"),
    ("task_2_2", "launch_regblock", launcher(tiled(), shrink_grid=True), r"Task 2\.2 .*never written"),
    ("task_2_1b", "tiled_loads", lambda M, N, K, tile: M * K * (N // tile) + K * N * (M // tile),
     r"Task 2\.1b: \d+ of 12 cases differ; tiled_loads\(\d+, \d+, \d+, \d+\): Yours \d+, Spec \d+"),
    ("task_2_1b", "tiled_loads", lambda M, N, K, tile: 2 * M * N * K, r"Task 2\.1b: 12 of 12 cases differ"),
])
def test_judge_rejects_classic_bugs(grade_id, name, buggy, message):
    task, inputs, outputs = run(grade_id, {**CORRECT, name: buggy}, 150200)
    with pytest.raises(AssertionError, match=message):
        task.judge(inputs, outputs)


@pytest.mark.sim
def test_judge_catches_a_missing_syncthreads():
    """On the simulator a thread runs until it blocks, so reading a tile before the barrier reads what is
    not loaded yet: a race or garbage, never the right product, at the hidden tests' sizes."""
    task = get("lab02", "task_2_1")
    for seed in (0, 1):
        inputs = exchange.roundtrip(task.make_inputs(np.random.default_rng(seed)))
        outputs = exchange.roundtrip(task.produce({"launch_tiled": launcher(tiled(sync_before=False))}, inputs))
        with pytest.raises(AssertionError, match=r"Task 2\.1 "):
            task.judge(inputs, outputs)


def _spec_outputs(grade_id):
    task = get("lab02", grade_id)
    inputs = exchange.roundtrip(task.make_inputs(np.random.default_rng(7)))
    if grade_id == "task_2_1b":
        return task, inputs, {"loads": [spec_loads(*c) for c in inputs["cases"]]}
    outputs = {}
    for i in range(inputs["cases"]):
        C = (inputs[f"A{i}"].astype(np.float64) @ inputs[f"B{i}"].astype(np.float64)).astype(np.float32)
        buf = np.concatenate([C.ravel(), np.full(produce01.GUARD_ELEMENTS, np.nan, np.float32)])
        outputs.update({f"C{i}_{r}": buf.copy() for r in range(produce01.RUNS)})
    return task, inputs, outputs


@pytest.mark.parametrize("grade_id", KERNEL_TASKS)
def test_gemm_judges_turn_hostile_outputs_into_assertion_errors(grade_id):
    task, inputs, good = _spec_outputs(grade_id)
    task.judge(inputs, good)
    title = task.title + " "
    buf = good["C0_0"]
    n = buf.size - produce01.GUARD_ELEMENTS
    A, B = inputs["A0"], inputs["B0"]
    transposed = np.concatenate([(A @ B).T.ravel() if A.shape[0] == B.shape[1] else (A @ B)[::-1].ravel(),
                                 buf[n:]])
    impossible = buf.copy()
    impossible[1] = A.shape[1] * 2.0  # beyond K max|A| max|B|, so no misindexing can explain it
    guard = buf.copy()
    guard[n] = 0.0
    nan = buf.copy()
    nan[n - 1] = np.nan
    hostile = {"missing": None, "head only": buf[:n], "matrix": buf[:n].reshape(A.shape[0], -1),
               "all zeros": np.zeros_like(buf), "NaN": nan, "guard written": guard, "inf": np.full_like(buf, np.inf),
               "impossible": impossible, "transposed": transposed, "float64 off": buf.astype(np.float64) + 1e-3,
               "ints": np.zeros(buf.size, np.int32), "strings": np.array(["0"] * buf.size), "list": buf.tolist(),
               "ragged": [[1.0], [2.0, 3.0]], "dict": {"a": 1}, "number": 0.0, "complex": buf.astype(np.complex64)}
    for what, bad in hostile.items():
        outputs = {k: v for k, v in good.items() if k != "C0_0"}
        if what != "missing":
            outputs["C0_0"] = bad
        with pytest.raises(AssertionError, match=title) as err:
            task.judge(inputs, outputs)
        assert err.type is AssertionError, what
    with pytest.raises(AssertionError, match=title + r".*cannot produce"):
        task.judge(inputs, {**good, "C0_0": impossible, "C0_1": impossible})
    with pytest.raises(AssertionError, match=title + r".*two identical runs"):
        task.judge(inputs, {**good, "C0_1": buf + np.float32(1)})
    with pytest.raises(AssertionError, match=title + r".*wrote past the end"):
        task.judge(inputs, {**good, "C0_0": guard, "C0_1": guard})
    with pytest.raises(AssertionError, match=title + r".*indexed outside"):
        task.judge(inputs, {**good, "C0_error": "IndexError: index 9 is out of bounds"})


def test_loads_judge_turns_hostile_outputs_into_assertion_errors():
    task, inputs, good = _spec_outputs("task_2_1b")
    n = len(inputs["cases"])
    task.judge(inputs, good)
    for bad in (None, [], good["loads"][1:], [float("nan")] * n, [0] * n, [-1] * n, [10**400] * n, [1e300] * n,
                [True] * n, [str(v) for v in good["loads"]], [None] * n, {"loads": 1}, 7, np.zeros(n),
                np.array(good["loads"])[None], [v + 1 for v in good["loads"]]):
        outputs = {} if bad is None else {"loads": bad}
        with pytest.raises(AssertionError, match=r"Task 2\.1b") as err:
            task.judge(inputs, outputs)
        assert err.type is AssertionError, bad


@pytest.mark.parametrize("grade_id", ["task_2_1", "task_2_1b", "task_2_2"])
def test_make_inputs_differ_between_seeds_and_repeat_for_one(grade_id):
    task = get("lab02", grade_id)
    a, b, a2 = (exchange.roundtrip(task.make_inputs(np.random.default_rng(s))) for s in (1, 2, 1))
    flat = lambda d: repr({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in sorted(d.items())})
    assert flat(a) != flat(b)
    assert flat(a) == flat(a2)


@pytest.mark.parametrize("grade_id, sim, gpu", [
    ("task_2_1", lab02.TILE_SIM, lab02.TILE_GPU),
    ("task_2_2", lab02.TILE_SIM * lab02.R_SIM, lab02.TILE_GPU * lab02.R_GPU),
])
def test_gemm_sizes_span_several_blocks_and_are_never_multiples_of_one(grade_id, sim, gpu):
    block = scaledl.sized(sim=sim, gpu=gpu)  # the notebook's block on this backend
    for seed in range(20):
        inputs = get("lab02", grade_id).make_inputs(np.random.default_rng(seed))
        for i in range(inputs["cases"]):
            (M, K), N = inputs[f"A{i}"].shape, inputs[f"B{i}"].shape[1]
            assert inputs[f"B{i}"].shape[0] == K
            assert all(block < v < 3 * block + 1 and v % block for v in (M, N, K)), (M, N, K)


def test_static_part_matches_the_hidden_tests():
    tasks = {t.grade_id: t for t in lab02.TASKS}
    assert list(tasks) == ["task_2_1", "task_2_1b", "task_2_2"]
    for gid in KERNEL_TASKS:
        assert tasks[gid].requires_kernel and tasks[gid].forbidden_modules == ("scaledl.kernels",)
    assert not tasks["task_2_1b"].requires_kernel
    assert tasks["task_2_1b"].forbidden_modules == ("scaledl.kernels", "scaledl.perf")
    assert [t.local_seed for t in lab02.TASKS] == [150201, 150203, 150204]
