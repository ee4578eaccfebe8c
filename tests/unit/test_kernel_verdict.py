"""scaledl.labs.kernel_verdict, the one decision a lab's kernel check and the grader's judge share: synthetic runs
and sanitizer findings (no kernel runs here; tests/sim/test_lab_kernel_hints.py runs real ones through both)."""

import numpy as np
import pytest

from scaledl.course import exchange
from scaledl.course.produce.lab01 import GUARD_ELEMENTS, RUNS
from scaledl.course.tasks import get
from scaledl.course.tasks.lab01 import judge_kernel_runs
from scaledl.kernels.sanitizer import KINDS as SANITIZER_KINDS
from scaledl.labs import kernel_verdict as V
from scaledl.labs.hints import hint

RACE = ("race on `sA[1, 3]` in `kernel` (block (0,0)) between thread (3,1) writing at lab02.py:18 and thread (0,1) "
        "reading at lab02.py:23, both after the barrier at lab02.py:21: a `cuda.syncthreads()` is missing before the "
        "next tile overwrites it (at the end of the loop, after the read at lab02.py:23)")


def buffers(want, runs=RUNS, key="C0"):
    """What produce_runs hands back for a kernel that wrote ``want``: the output, then the NaN guard region."""
    buf = np.concatenate([np.asarray(want, np.float32).ravel(), np.full(GUARD_ELEMENTS, np.nan, np.float32)])
    return {f"{key}_{r}": buf.copy() for r in range(runs)}


def test_the_kinds_are_the_sanitizers():
    assert V.KINDS == SANITIZER_KINDS


@pytest.mark.parametrize("kind", V.KINDS)
def test_a_finding_fails_a_kernel_whose_values_are_right_with_its_message_and_hint(kind):
    want = np.arange(6.0).reshape(2, 3)
    v = V.kernel_verdict([want.astype(np.float32)] * 2, want, 0.0, findings=[(kind, f"[{kind}] what went wrong")])
    assert not v.passed and v.problems == (f"[{kind}] what went wrong",) and v.hints == (hint("sanitizer", kind),)
    assert v.headline == v.message == f"[{kind}] what went wrong"
    assert not v.bad.any()  # the values are right: nothing for the Yours/Spec table


def test_the_judge_gives_a_racy_kernel_the_same_message_and_no_points():
    """Task 2.1's judge (0 points when it raises: scaledl.course.grade) names the race as the verdict does."""
    task = get("lab02", "task_2_1")
    inp = exchange.roundtrip(task.make_inputs(np.random.default_rng(3)))
    out = {}
    for i in range(inp["cases"]):
        out.update(buffers(inp[f"A{i}"].astype(np.float64) @ inp[f"B{i}"].astype(np.float64), key=f"C{i}"))
    task.judge(inp, exchange.roundtrip(out))  # right values, no findings: full marks
    out["C0_findings"] = [{"kind": "race", "message": f"[race] {RACE} (12 times)"}]
    with pytest.raises(AssertionError) as err:
        task.judge(inp, exchange.roundtrip(out))
    verdict = V.kernel_verdict([np.zeros(1)], np.zeros(1), 0.0, findings=[("race", f"[race] {RACE} (12 times)")])
    assert str(err.value).startswith("Task 2.1 (C = A @ B at M, N, K = ")
    assert f": {verdict.message}. Hint: {hint('sanitizer', 'race')}" in str(err.value)


@pytest.mark.parametrize("data", [
    {"kind": "race", "message": "x"}, "race", 7, [1, 2], [{"kind": "typo", "message": "x"}], [{"kind": "race"}],
    [{"kind": "race", "message": 5}], [["race", "m", "extra"]], [None], np.zeros(3),
    [{"kind": ["race"], "message": "m"}],
])
def test_findings_that_are_not_findings_fail_the_task_without_crashing_the_judge(data):
    want = np.arange(4.0)
    out = {**buffers(want, key="dst0"), "dst0_findings": data}
    with pytest.raises(AssertionError, match=r"^T: .*(not a list|not \{kind, message\} pairs)") as err:
        judge_kernel_runs(out, "dst0", want, 0.0, title="T")
    assert err.type is AssertionError


def test_findings_are_capped_in_number_and_length():
    many = [{"kind": "race", "message": "m" * 10_000}] * 10_000
    got, problem = V.read_findings(many)
    assert problem is None and len(got) == V.MAX_FINDINGS and all(len(m) == V.MAX_MESSAGE for _, m in got)
    assert V.read_findings(None) == ([], None) and V.read_findings([("race", "m")]) == ([("race", "m")], None)
    want = np.arange(4.0)
    with pytest.raises(AssertionError) as err:
        judge_kernel_runs({**buffers(want, key="d"), "d_findings": many}, "d", want, 0.0, title="T")
    assert len(str(err.value)) < 2 * V.MAX_MESSAGE + 1000  # one finding shown, the rest counted
    assert f"and {V.MAX_FINDINGS - 1} more defect(s) the sanitizer found" in str(err.value)


def test_a_deadlock_hands_back_findings_alone():
    out = {"d_findings": [{"kind": "barrier", "message": "[barrier] deadlock in `k`: ..."}]}
    with pytest.raises(AssertionError, match=r"^T: \[barrier\] deadlock in `k`: \.\.\. Hint: every thread"):
        judge_kernel_runs(out, "d", np.arange(4.0), 0.0, title="T")
    with pytest.raises(AssertionError, match="T: no result 'd_0'|T: .*d_0"):  # neither runs nor findings
        judge_kernel_runs({}, "d", np.arange(4.0), 0.0, title="T")


def test_an_index_error_that_came_back_gets_the_bounds_guard_hint():
    v = V.kernel_verdict([], np.zeros(3), 0.0, error="IndexError: index 3 is out of bounds")
    assert not v.passed and v.hints == (hint("kernel", "out_of_bounds"),) and "indexed outside" in v.message


def test_runs_that_disagree_without_a_finding_name_the_race_as_on_a_gpu():
    want = np.arange(4.0)
    other = want.copy()
    other[2] += 1
    v = V.kernel_verdict([want, other], want, 0.0)
    assert not v.passed and v.hints == (hint("kernel", "race"),) and v.bad.tolist() == [False, False, True, False]
    v = V.kernel_verdict([want, other], want, 0.0, findings=[("race", "[race] r")])
    assert hint("kernel", "race") not in v.hints and v.hints[0] == hint("sanitizer", "race")


@pytest.mark.parametrize("rows, cols, key", [
    (slice(8, None), slice(None), "wrong_grid"),      # whole tile rows missing at the end
    (slice(None), slice(4, None), "wrong_grid"),      # whole tile columns
    (slice(3, None), slice(None), "never_written"),   # rows from 3: on no tile boundary (odd)
    (slice(2, 5), slice(None), "never_written"),      # a band in the middle: a guard too strict, not the grid
])
def test_a_clean_block_of_never_written_outputs_at_the_end_is_the_grid(rows, cols, key):
    want = np.ones((10, 7))
    got = want.copy()
    got[rows, cols] = np.nan
    v = V.kernel_verdict([got, got], want, 0.0, fallback=hint("kernel", "compare"))
    assert not v.passed and v.hints == (hint("kernel", key),), v


def test_a_vector_tail_is_the_grid_stride_loop_after_a_pass_else_the_grid_when_block_aligned():
    want = np.ones(100)
    got = want.copy()
    got[64:] = np.nan
    assert V.kernel_verdict([got], want, 0.0, grid_stride=True).hints == (hint("kernel", "grid_stride"),)
    assert V.kernel_verdict([got], want, 0.0).hints == (hint("kernel", "wrong_grid"),)
    got = want.copy()
    got[99:] = np.nan  # one short: a loop bound, not a grid
    assert V.kernel_verdict([got], want, 0.0).hints == (hint("kernel", "never_written"),)


@pytest.mark.parametrize("K, tile", [(7, 4), (13, 4), (23, 8), (9, 16)])
def test_a_gemm_without_its_partial_last_tile_gets_its_hint(K, tile):
    rng = np.random.default_rng(K)
    A, B = rng.uniform(-1, 1, (5, K)), rng.uniform(-1, 1, (K, 3))
    k = K - K % tile
    got = (A[:, :k] @ B[:k, :]).astype(np.float32)
    v = V.kernel_verdict([got, got], A @ B, 1e-5, patterns=lambda: V.gemm_patterns(A, B))
    assert not v.passed and v.hints == (hint("kernel", "partial_tile"),)
    assert f"the first {k} of its K = {K} products only" in v.message or (k == 0 and "no trip" in v.message)
    right = V.kernel_verdict([(A @ B).astype(np.float32)], A @ B, 1e-5, patterns=lambda: V.gemm_patterns(A, B))
    assert right.passed and right.hints == () and right.problems == ()


def test_nan_from_shared_memory_read_too_early_is_not_called_never_written():
    """The sanitizer fills shared memory with NaN, so a race on a tile leaves NaN in the output: not the grid's."""
    want = np.ones((4, 4))
    got = want.copy()
    got[2:, :] = np.nan
    v = V.kernel_verdict([got], want, 0.0, findings=[("race", "[race] r")])
    assert v.hints == (hint("sanitizer", "race"),) and "read before it was written" in v.message
    assert V.kernel_verdict([got], want, 0.0).hints == (hint("kernel", "wrong_grid"),)
