"""The kernel hints of scaledl.labs.hints (labs 01, 02 and 04), on the simulator: a buggy kernel of each kind,
launched the way the notebook launches it, makes the notebook's check print the hint, and the grader's judge of
the task name it in the same words (within what the feedback page shows); the correct kernels print none.
The other hints: tests/unit/test_lab_hints.py."""

import contextlib
import io
import warnings

import numpy as np
import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32

from scaledl import device
from scaledl.course import exchange
from scaledl.course.grade import MESSAGE_CHARS
from scaledl.course.tasks import get
from scaledl.labs import check as C
from scaledl.labs import sparse_checks as S
from scaledl.labs.hints import HINTS, hint

pytestmark = pytest.mark.sim

FEEDBACK_CHARS = MESSAGE_CHARS  # scaledl.course.grade keeps this much of a judge's message for the feedback page
THREADS, MAX_BLOCKS, STREAM_SIZES = 32, 3, [1, 37, 250]  # lab 01's simulator settings
TILE = 4                                                   # lab 02's


def stream_grid(n):
    return max(1, min(MAX_BLOCKS, (n + THREADS - 1) // THREADS)), THREADS


def make_copy_kernel(bug=None):
    """Lab 01's Task 1.1 factory; ``bug``: "guard" (no bounds guard, one element per thread), "one_pass" (guarded,
    no grid-stride loop), "short" (the loop stops one element early)."""
    def factory():
        if bug == "guard":
            @cuda.jit
            def kernel(dst, src):
                i = cuda.grid(1)
                dst[i] = src[i]
        elif bug == "one_pass":
            @cuda.jit
            def kernel(dst, src):
                i = cuda.grid(1)
                if i < dst.size:
                    dst[i] = src[i]
        else:
            stop = 1 if bug == "short" else 0

            @cuda.jit
            def kernel(dst, src):
                for i in range(cuda.grid(1), dst.size - stop, cuda.gridsize(1)):
                    dst[i] = src[i]
        return kernel
    return factory


def make_tiled_kernel(bug=None):
    """Lab 02's Task 2.1 factory at TILE; ``bug``: "sync_after" (no barrier after using a tile), "acc" (the
    accumulator starts at a value no product sum reaches), "transposed" (B's tile loaded transposed),
    "partial_tile" (the tile loop is ``range(K // TILE)``: the last, partial tile dropped), "no_guard" (no bounds
    guard on the store), "grid" (the grid rounded down: N // TILE blocks), "sync_in_branch" (the first barrier
    only where the thread's row is inside A: a barrier some threads never reach)."""
    T = TILE
    start = 1e6 if bug == "acc" else 0.0
    transposed, sync_after = bug == "transposed", bug != "sync_after"  # compile-time constants of the kernel
    partial, guard, branch = bug == "partial_tile", bug != "no_guard", bug == "sync_in_branch"
    short_grid = 0 if bug == "grid" else T - 1

    @cuda.jit
    def kernel(A, B, Cm):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        acc = float32(start)
        tiles = A.shape[1] // T if partial else (A.shape[1] + T - 1) // T
        for t in range(tiles):
            ka = t * T + tx
            kb = t * T + (tx if transposed else ty)
            sA[ty, tx] = A[row, ka] if row < A.shape[0] and ka < A.shape[1] else float32(0.0)
            sB[ty, tx] = B[kb, col] if kb < B.shape[0] and col < B.shape[1] else float32(0.0)
            if not branch or row < A.shape[0]:
                cuda.syncthreads()
            for k in range(T):
                acc += sA[ty, k] * sB[k, tx]
            if sync_after:
                cuda.syncthreads()
        if not guard or (row < Cm.shape[0] and col < Cm.shape[1]):
            Cm[row, col] = acc

    def launch_tiled(A, B, Cm):
        M, N = Cm.shape
        kernel[(max(1, (N + short_grid) // T), max(1, (M + short_grid) // T)), (T, T)](A, B, Cm)

    return launch_tiled


def make_spmv(bug=None):
    """Lab 04's Task 2.1: one thread per row; ``bug`` "last" leaves out each row's last non-zero."""
    drop = 1 if bug == "last" else 0

    @cuda.jit
    def kernel(indptr, indices, data, x, y):
        row = cuda.grid(1)
        if row < y.shape[0]:
            acc = float32(0.0)
            for j in range(indptr[row], indptr[row + 1] - drop):
                acc += data[j] * x[indices[j]]
            y[row] = acc

    def spmv_launch(indptr, indices, data, x, y):
        kernel[(y.shape[0] + THREADS - 1) // THREADS, THREADS](indptr, indices, data, x, y)

    return spmv_launch


def make_racy_spmv(sync: bool, *, all_write: bool = True):
    """Lab 04's Task 2.1 with each row's sum handed to its neighbour thread through shared memory: without the
    barrier (``sync`` False) the neighbour may read the slot before it is written, a race whose values can
    still come out right on the simulator. With ``all_write`` False only the threads that own a row fill their
    slot, so with an odd number of rows the thread past the last row reads a slot nobody wrote (and drops it: the
    values stay right)."""
    assert THREADS % 2 == 0

    @cuda.jit
    def kernel(indptr, indices, data, x, y):
        slot = cuda.shared.array(THREADS, float32)
        t, row = cuda.threadIdx.x, cuda.grid(1)
        acc = float32(0.0)
        if row < y.shape[0]:
            for j in range(indptr[row], indptr[row + 1]):
                acc += data[j] * x[indices[j]]
        if all_write or row < y.shape[0]:
            slot[t] = acc
        if sync:
            cuda.syncthreads()
        mine = slot[t ^ 1]  # the neighbour's sum (read by every thread, as a cache would load it)
        if (row ^ 1) < y.shape[0]:
            y[row ^ 1] = mine

    def spmv_launch(indptr, indices, data, x, y):
        kernel[(y.shape[0] + THREADS - 1) // THREADS, THREADS](indptr, indices, data, x, y)

    return spmv_launch


def printed(run) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # garbage read by a race can overflow
        run(out)
    return out.getvalue()


def judged(lab, grade_id, ns, seed=0):
    task = get(lab, grade_id)
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(seed)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = exchange.roundtrip(task.produce(ns, inp))
    with pytest.raises(AssertionError) as err:
        task.judge(inp, out)
    return str(err.value)


def lab01_copy(bug):
    factory = make_copy_kernel(bug)
    kernel = factory()

    def launch_copy(src, dst):
        kernel[stream_grid(dst.size)](dst, src)

    text = printed(lambda out: C.check_kernel(launch_copy, spec=lambda src: src.astype(np.float64),
                                              make_inputs=lambda n, rng: rng.standard_normal(n).astype(np.float32),
                                              sizes=STREAM_SIZES, tolerance=C.elementwise_tolerance(0), name="copy",
                                              report=out))
    return text, judged("lab01", "task_1_1", {"make_copy_kernel": factory, "stream_grid": stream_grid})


def lab02_tiled(bug):
    launch = make_tiled_kernel(bug)
    text = printed(lambda out: C.check_gemm(launch, sizes=C.gemm_sizes(TILE), name="tiled", report=out))
    return text, judged("lab02", "task_2_1", {"make_tiled_kernel": make_tiled_kernel, "launch_tiled": launch})


def lab04_spmv(bug):
    launch = make_spmv(bug)
    text = printed(lambda out: S.check_spmv(launch, report=out))
    return text, judged("lab04", "task_2_1", {"make_spmv_kernel": make_spmv, "spmv_launch": launch})


CASES = {
    ("sanitizer", "out_of_bounds"): lambda: lab01_copy("guard"),
    ("kernel", "never_written"): lambda: lab01_copy("short"),
    ("kernel", "grid_stride"): lambda: lab01_copy("one_pass"),
    ("sanitizer", "race"): lambda: lab02_tiled("sync_after"),
    ("kernel", "impossible"): lambda: lab02_tiled("acc"),
    ("kernel", "compare"): lambda: lab02_tiled("transposed"),
    ("kernel", "partial_tile"): lambda: lab02_tiled("partial_tile"),
    ("kernel", "wrong_grid"): lambda: lab02_tiled("grid"),
    ("lab04", "spmv_rows"): lambda: lab04_spmv("last"),
}
# On a GPU: the simulator raises IndexError at a store past the end instead; runs that disagree are a race's only
# symptom there, while on the simulator the sanitizer's race hint, which says where, takes its place
GPU_ONLY = {("kernel", "past_end"), ("kernel", "race")}
# The sanitizer reports an index out of bounds (and does not perform it) before the simulator's IndexError can;
# the hint of an IndexError that came back anyway: tests/unit/test_kernel_verdict.py. The barrier and
# uninitialized kinds: test_a_barrier_some_threads_miss_ends_the_check_with_its_message and
# tests/unit/test_kernel_verdict.py (lab 02's kernels load every tile element before reading it).
ELSEWHERE = {("kernel", "out_of_bounds"), ("sanitizer", "barrier"), ("sanitizer", "uninitialized")}


def test_every_kernel_hint_has_a_buggy_kernel_here():
    assert set(CASES) | GPU_ONLY | ELSEWHERE == ({(g, k) for g in ("kernel", "sanitizer") for k in HINTS[g]}
                                                 | {("lab04", "spmv_rows")})


@pytest.mark.parametrize("group, key", sorted(CASES), ids=[f"{g}-{k}" for g, k in sorted(CASES)])
def test_the_notebook_check_and_the_judge_name_the_same_kernel_bug(group, key):
    text = hint(group, key)
    check, judge = CASES[(group, key)]()
    assert f"Hint: {text}" in check, f"the notebook's check did not print the hint:\n{check}"
    assert text in judge[:FEEDBACK_CHARS], f"the judge did not name it within {FEEDBACK_CHARS} characters:\n{judge}"


@pytest.mark.skipif(not device.on_gpu(), reason="a store past the end is an IndexError on the simulator")
def test_a_store_past_the_end_is_named_on_a_gpu():
    check, judge = lab01_copy("guard")
    assert f"Hint: {hint('kernel', 'past_end')}" in check and hint("kernel", "past_end") in judge[:FEEDBACK_CHARS]


def test_the_correct_kernels_get_no_hint():
    for text in (printed(lambda out: C.check_gemm(make_tiled_kernel(), sizes=C.gemm_sizes(TILE), report=out)),
                 printed(lambda out: S.check_spmv(make_spmv(), report=out))):
        assert "Hint" not in text and "FAIL" not in text, text
    kernel = make_copy_kernel()()
    text = printed(lambda out: C.check_kernel(lambda src, dst: kernel[stream_grid(dst.size)](dst, src),
                                              lambda src: src.astype(np.float64),
                                              lambda n, rng: rng.standard_normal(n).astype(np.float32), STREAM_SIZES,
                                              report=out))
    assert "Hint" not in text and "FAIL" not in text, text


# --- the race checker in the check and the judge (issue 44) -----------------------------------------------------

SPLIT = 2  # K chunks of the split-K GEMM below, one per blockIdx.z


def make_split_k_tiled(atomic=False):
    """A tiled GEMM split along K: block z computes its share of the tiles (both barriers in place) and adds its
    partial sum into C. Without ``atomic`` the add is a plain ``+=``, a race between the blocks of one output tile
    on a GPU; the simulator runs one block after another, so the values come out right there every time."""
    T = TILE

    @cuda.jit
    def zero(Cm):
        j, i = cuda.grid(2)  # x: columns, y: rows
        if i < Cm.shape[0] and j < Cm.shape[1]:
            Cm[i, j] = 0.0

    @cuda.jit
    def kernel(A, B, Cm):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        tiles = (A.shape[1] + T - 1) // T
        acc = float32(0.0)
        for t in range(cuda.blockIdx.z, tiles, SPLIT):
            ka, kb = t * T + tx, t * T + ty
            sA[ty, tx] = A[row, ka] if row < A.shape[0] and ka < A.shape[1] else float32(0.0)
            sB[ty, tx] = B[kb, col] if kb < B.shape[0] and col < B.shape[1] else float32(0.0)
            cuda.syncthreads()
            for k in range(T):
                acc += sA[ty, k] * sB[k, tx]
            cuda.syncthreads()
        if row < Cm.shape[0] and col < Cm.shape[1]:
            if atomic:
                cuda.atomic.add(Cm, (row, col), acc)
            else:
                Cm[row, col] += acc  # BUG: SPLIT blocks add into one element, unordered

    def launch(A, B, Cm):
        M, N = Cm.shape
        grid = ((N + T - 1) // T, (M + T - 1) // T)
        zero[grid, (T, T)](Cm)
        kernel[grid + (SPLIT,), (T, T)](A, B, Cm)

    return launch


def test_a_racy_tiled_gemm_fails_its_check_and_its_task_with_the_sanitizer_message():
    """Lab 02's tiled GEMM without the second syncthreads: wrong values on the simulator too (a thread runs on
    until it blocks, so it overwrites the tile before the others read it), and the sanitizer says where."""
    launch = make_tiled_kernel("sync_after")
    text = printed(lambda out: C.check_gemm(launch, sizes=C.gemm_sizes(TILE), name="tiled", report=out))
    assert "FAILED: tiled" in text and "[race] race on `s" in text, text
    assert "a `cuda.syncthreads()` is missing before the next tile overwrites it" in text, text
    assert f"Hint: {hint('sanitizer', 'race')}" in text, text
    judge = judged("lab02", "task_2_1", {"make_tiled_kernel": make_tiled_kernel, "launch_tiled": launch})
    assert judge.startswith("Task 2.1 (C = A @ B at") and "[race] race on `s" in judge, judge
    assert hint("sanitizer", "race") in judge[:FEEDBACK_CHARS], judge


def test_a_race_the_simulator_hides_passes_the_plain_check_and_fails_under_the_sanitizer():
    """Right values, a race all the same: the plain symptom checks pass it, the sanitizer fails it with its
    message and nothing else wrong, in the notebook's check and in the grader's judge alike."""
    launch = make_split_k_tiled()
    sizes = C.gemm_sizes(TILE)[:2]
    plain = printed(lambda out: C.check_gemm(launch, sizes=sizes, name="split_k", sanitize=False, report=out))
    assert "PASSED: split_k" in plain and "race checker" not in plain, plain
    text = printed(lambda out: C.check_gemm(launch, sizes=sizes, name="split_k", report=out))
    fails = [ln for ln in text.splitlines() if ln.startswith("FAIL ")]
    assert fails and all(": [race] race on `Cm[" in ln and "outputs differ" not in ln and "never written" not in ln
                         for ln in fails), text
    assert "threads of different blocks are not ordered" in text and f"Hint: {hint('sanitizer', 'race')}" in text
    judge = judged("lab02", "task_2_1", {"make_tiled_kernel": make_tiled_kernel, "launch_tiled": launch})
    assert judge.startswith("Task 2.1 (C = A @ B at M, N, K = ") and ": [race] race on `Cm[" in judge, judge
    assert "outputs differ" not in judge and hint("sanitizer", "race") in judge, judge
    fixed = make_split_k_tiled(atomic=True)
    text = printed(lambda out: C.check_gemm(fixed, sizes=sizes, name="split_k", report=out))
    assert "PASSED: split_k" in text and "Hint" not in text, text


def test_the_correct_tiled_gemm_passes_under_the_sanitizer():
    text = printed(lambda out: C.check_gemm(make_tiled_kernel(), sizes=C.gemm_sizes(TILE), name="tiled", report=out))
    assert "PASSED: tiled" in text and "under the race checker" in text and "Hint" not in text, text


@pytest.mark.parametrize("bug, key", [("partial_tile", "partial_tile"), ("no_guard", None), ("grid", "wrong_grid")])
def test_each_classic_gemm_bug_gets_its_own_hint_and_no_traceback(bug, key):
    launch = make_tiled_kernel(bug)
    result = None

    def run(out):
        nonlocal result
        result = C.check_gemm(launch, sizes=C.gemm_sizes(TILE), name="tiled", report=out)

    text = printed(run)  # no exception: the check ends with its report
    assert not result.passed and text.rstrip().splitlines()[-1].startswith("Hint: "), text
    want = hint("kernel", key) if key else hint("sanitizer", "out_of_bounds")
    assert f"Hint: {want}" in text, text
    assert f"Hint: {hint('kernel', 'compare')}" not in text, text  # the old, only hint
    if bug == "partial_tile":  # wrong at every size whose K is not a multiple of TILE (all of gemm_sizes)
        assert text.count("FAIL tiled at size") == 3 and "the first 20 of its K = 23 products only" in text, text
    with pytest.raises(C.CheckFailed) as err:
        result.raise_if_failed()
    assert err.value._render_traceback_() == [f"CheckFailed: {err.value}"]  # IPython shows this line alone
    judge = judged("lab02", "task_2_1", {"make_tiled_kernel": make_tiled_kernel, "launch_tiled": launch})
    assert want in judge, judge


def test_a_barrier_some_threads_miss_ends_the_check_with_its_message():
    launch = make_tiled_kernel("sync_in_branch")
    text = printed(lambda out: C.check_gemm(launch, sizes=C.gemm_sizes(TILE)[:2], name="tiled", report=out))
    assert "FAILED: tiled" in text and "[barrier]" in text, text
    assert f"Hint: {hint('sanitizer', 'barrier')}" in text, text


@cuda.jit
def copy_or_hang(dst, src):
    """A copy whose thread 0 spins on a flag thread 1 sets only after a barrier thread 0 never reaches."""
    flag = cuda.shared.array(1, float32)
    t = cuda.threadIdx.x
    if t == 0:
        flag[0] = 0.0
    cuda.syncthreads()
    if t == 0:
        while flag[0] == 0.0:
            pass
    else:
        cuda.syncthreads()
        if t == 1:
            flag[0] = 1.0
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]


def test_a_deadlock_ends_the_check_and_the_judge_with_its_message_not_a_hang():
    from scaledl.course.produce.lab01 import device_inputs, produce_runs
    from scaledl.course.tasks.lab01 import judge_kernel_runs

    def launch(src, dst):
        copy_or_hang[1, 4](dst, src)

    result = None

    def run(out):
        nonlocal result
        result = C.check_kernel(launch, lambda src: src.astype(np.float64),
                                lambda n, rng: rng.standard_normal(n).astype(np.float32), [3], name="copy", report=out)

    text = printed(run)  # the sanitizer's watchdog stops the block after its stall limit (3 s)
    assert not result.passed and "FAIL copy at size 3: [barrier] deadlock in `copy_or_hang`" in text, text
    assert f"Hint: {hint('sanitizer', 'barrier')}" in text, text
    src, = device_inputs(np.arange(3, dtype=np.float32))
    out = exchange.roundtrip(produce_runs(lambda dst: launch(src, dst), (3,), "dst0"))
    assert set(out) == {"dst0_findings"}  # the stopped launch's buffers are not handed back
    with pytest.raises(AssertionError, match=r"^Task 1\.1 \(copy\): \[barrier\] deadlock in `copy_or_hang`") as err:
        judge_kernel_runs(out, "dst0", np.arange(3.0), 0.0, title="Task 1.1 (copy)")
    assert hint("sanitizer", "barrier") in str(err.value)


def test_lab04_s_judge_runs_the_spmv_under_the_race_checker_as_its_check_does():
    # the grader's Task 2.1 produce runs the student's launch under sanitize() and its judge fails a race with
    # the sanitizer's words even where the values are right: the same decision as check_spmv in the notebook
    launch = make_racy_spmv(sync=False)
    check = printed(lambda out: S.check_spmv(launch, report=out))
    judge = judged("lab04", "task_2_1", {"make_spmv_kernel": make_racy_spmv, "spmv_launch": launch})
    text = hint("sanitizer", "race")
    assert f"Hint: {text}" in check
    assert text in judge[:FEEDBACK_CHARS] and "race" in judge.split("Hint")[0].lower()
    task = get("lab04", "task_2_1")
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(0)))
    fixed = make_racy_spmv(sync=True)
    out = exchange.roundtrip(task.produce({"make_spmv_kernel": make_racy_spmv, "spmv_launch": fixed}, inp))
    assert all(out[k] == [] for k in out if k.startswith("findings")) and any(k.startswith("findings") for k in out)
    task.judge(inp, out)  # with the barrier: no finding, right values, passes


def test_a_read_of_shared_memory_nobody_wrote_is_named_by_the_check_and_the_judge():
    launch = make_racy_spmv(sync=True, all_write=False)
    check = printed(lambda out: S.check_spmv(launch, report=out))
    judge = judged("lab04", "task_2_1", {"make_spmv_kernel": make_racy_spmv, "spmv_launch": launch})
    text = hint("sanitizer", "uninitialized")
    assert f"Hint: {text}" in check, check
    assert text in judge[:FEEDBACK_CHARS], judge
