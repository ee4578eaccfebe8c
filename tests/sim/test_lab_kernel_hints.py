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
from scaledl.course.tasks import get
from scaledl.labs import check as C
from scaledl.labs import sparse_checks as S
from scaledl.labs.hints import HINTS, hint

pytestmark = pytest.mark.sim

FEEDBACK_CHARS = 500
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
    accumulator starts at a value no product sum reaches), "transposed" (B's tile loaded transposed)."""
    T = TILE
    start = 1e6 if bug == "acc" else 0.0
    transposed, sync_after = bug == "transposed", bug != "sync_after"  # compile-time constants of the kernel

    @cuda.jit
    def kernel(A, B, Cm):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * T + ty, cuda.blockIdx.x * T + tx
        acc = float32(start)
        for t in range((A.shape[1] + T - 1) // T):
            ka = t * T + tx
            kb = t * T + (tx if transposed else ty)
            sA[ty, tx] = A[row, ka] if row < A.shape[0] and ka < A.shape[1] else float32(0.0)
            sB[ty, tx] = B[kb, col] if kb < B.shape[0] and col < B.shape[1] else float32(0.0)
            cuda.syncthreads()
            for k in range(T):
                acc += sA[ty, k] * sB[k, tx]
            if sync_after:
                cuda.syncthreads()
        if row < Cm.shape[0] and col < Cm.shape[1]:
            Cm[row, col] = acc

    def launch_tiled(A, B, Cm):
        M, N = Cm.shape
        kernel[((N + T - 1) // T, (M + T - 1) // T), (T, T)](A, B, Cm)

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
    ("kernel", "out_of_bounds"): lambda: lab01_copy("guard"),
    ("kernel", "never_written"): lambda: lab01_copy("short"),
    ("kernel", "grid_stride"): lambda: lab01_copy("one_pass"),
    ("kernel", "race"): lambda: lab02_tiled("sync_after"),
    ("kernel", "impossible"): lambda: lab02_tiled("acc"),
    ("kernel", "compare"): lambda: lab02_tiled("transposed"),
    ("lab04", "spmv_rows"): lambda: lab04_spmv("last"),
}
GPU_ONLY = {("kernel", "past_end")}  # the simulator raises IndexError at a store past the end instead


def test_every_kernel_hint_has_a_buggy_kernel_here():
    assert set(CASES) | GPU_ONLY == {("kernel", k) for k in HINTS["kernel"]} | {("lab04", "spmv_rows")}


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
