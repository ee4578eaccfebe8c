"""Lab 01's task specs: each judge passes a correct kernel (or the library's model), fails the classic bugs
with a message naming its task, and turns hostile outputs into AssertionError, never a pass or a crash.

Kernels run on the simulator at the hidden tests' tiny sizes (a few seconds in all)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32

from scaledl.course import exchange
from scaledl.course.produce import lab01 as produce01
from scaledl.course.tasks import get, lab01
from scaledl.kernels import gemm_traffic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared task_helpers module
from task_helpers import graded  # noqa: E402

THREADS, MAX_BLOCKS = 32, 3  # the notebook's simulator values: 96 threads, fewer than the largest size


def stream_grid(n):
    return max(1, min(MAX_BLOCKS, (n + THREADS - 1) // THREADS)), THREADS


def make_copy(stride=True, guard=True, strict=False):
    def make():
        @cuda.jit
        def kernel(dst, src):
            if stride:
                for i in range(cuda.grid(1), dst.size - 1 if strict else dst.size, cuda.gridsize(1)):
                    dst[i] = src[i]
            else:  # one element per thread: the tail beyond the grid is never written
                i = cuda.grid(1)
                if not guard or i < dst.size:
                    dst[i] = src[i]
        return kernel
    return make


def make_triad(use_s=True):
    def make():
        @cuda.jit
        def kernel(a, b, c, s):
            for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
                a[i] = b[i] + (s * c[i] if use_s else c[i])
        return kernel
    return make


def make_fma(use_x0=True, guard=True):
    def make(CHAINS):
        @cuda.jit
        def kernel(out, n_iter, x0, b, c):
            x = cuda.local.array(CHAINS, float32)
            for j in range(CHAINS):
                x[j] = x0 if use_x0 else float32(0.0)
            for _ in range(n_iter):
                for j in range(CHAINS):
                    x[j] = cuda.fma(x[j], b, c)
            total = float32(0.0)
            for j in range(CHAINS):
                total += x[j]
            i = cuda.grid(1)
            if not guard or i < out.size:
                out[i] = total
        return kernel
    return make


def spec_intensity(M, N, K, variant, tile=16):
    return gemm_traffic(M, N, K, variant, **({"tile": tile} if variant == "tiled" else {})) \
        .arithmetic_intensity_flop_per_byte


def floor_intensity(M, N, K, variant, tile=16):
    """The classic bug: the block counts rounded down (sizes that are not multiples of the tile)."""
    if variant == "naive":
        return spec_intensity(M, N, K, variant)
    loads = M * K * max(1, N // tile) + K * N * max(1, M // tile)
    return 2 * M * N * K / (4 * (loads + M * N))


CORRECT = {"make_copy_kernel": make_copy(), "make_triad_kernel": make_triad(), "make_fma_kernel": make_fma(),
           "gemm_intensity": spec_intensity, "stream_grid": stream_grid, "THREADS": THREADS}
KERNEL_TASKS = ("task_1_1", "task_1_2", "task_1_3")


def run(grade_id, ns, seed):
    """What grading does: the grader's inputs, the student's produce, both through the exchange files."""
    return graded("lab01", grade_id, ns, seed)


@pytest.mark.sim
@pytest.mark.parametrize("grade_id", ["task_1_1", "task_1_2", "task_1_3", "task_1_4"])
@pytest.mark.parametrize("seed", [0, 1, 150100])
def test_judge_accepts_a_correct_answer(grade_id, seed):
    task, inputs, outputs = run(grade_id, CORRECT, seed)
    task.judge(inputs, outputs)


@pytest.mark.sim
@pytest.mark.parametrize("grade_id, name, buggy, message", [
    ("task_1_1", "make_copy_kernel", make_copy(stride=False),  # right below 96 elements, nothing from 96 on
     r"Task 1\.1 \(copy at size \d+\): elements from index 96 on were never written, while the smaller sizes "
     r"passed.*needs a grid-stride loop: start at cuda\.grid\(1\) and step by cuda\.gridsize\(1\)"),
    ("task_1_1", "make_copy_kernel", make_copy(strict=True), r"Task 1\.1 .*never written.*bounds guard is too strict"),
    ("task_1_1", "make_copy_kernel", make_copy(stride=False, guard=False), r"Task 1\.1 .*\[out_of_bounds\] out-of"),
    ("task_1_2", "make_triad_kernel", make_triad(use_s=False), r"Task 1\.2 .*differ; at \(0,\): Yours"),
    ("task_1_3", "make_fma_kernel", make_fma(use_x0=False), r"Task 1\.3 .*differ"),
    ("task_1_3", "make_fma_kernel", make_fma(guard=False), r"Task 1\.3 .*\[out_of_bounds\] out-of-bounds write"),
    ("task_1_4", "gemm_intensity", floor_intensity, r"Task 1\.4 \(tiled\): \d+ of 12 cases differ; gemm_intensity"),
    ("task_1_4", "gemm_intensity", lambda M, N, K, variant, tile=16: None, r"Task 1\.4 \(naive\).*Yours 'None'"),
])
def test_judge_rejects_classic_bugs(grade_id, name, buggy, message):
    task, inputs, outputs = run(grade_id, {**CORRECT, name: buggy}, 150100)
    with pytest.raises(AssertionError, match=message):
        task.judge(inputs, outputs)


def _correct_outputs(grade_id):
    """Outputs of a correct kernel built without running one: the spec, in the buffers produce returns."""
    task = get("lab01", grade_id)
    inputs = exchange.roundtrip(task.make_inputs(np.random.default_rng(7)))
    if grade_id == "task_1_4":
        return task, inputs, {v: [spec_intensity(M, N, K, v, tile=t) for M, N, K, t in inputs["cases"]]
                              for v in ("naive", "tiled")}
    if grade_id == "task_1_1":
        wants = {f"dst{i}": inputs[f"src{i}"] for i in range(inputs["cases"])}
    elif grade_id == "task_1_2":
        wants = {f"a{i}": inputs[f"b{i}"] + np.float32(inputs["s"]) * inputs[f"c{i}"] for i in range(inputs["cases"])}
    else:
        wants = {f"out{i}": np.full(n, inputs["chains"] * (x0 + it * c), np.float32)
                 for i, (n, it, x0, c) in enumerate(inputs["cases"])}
    outputs = {}
    for key, want in wants.items():
        buf = np.concatenate([want.astype(np.float32), np.full(produce01.GUARD_ELEMENTS, np.nan, np.float32)])
        outputs.update({f"{key}_{r}": buf.copy() for r in range(produce01.RUNS)})
    return task, inputs, outputs


@pytest.mark.parametrize("grade_id", KERNEL_TASKS + ("task_1_4",))
def test_spec_outputs_pass(grade_id):
    task, inputs, outputs = _correct_outputs(grade_id)
    task.judge(inputs, outputs)


def _kernel_hostile(outputs, key):
    """Ways a hostile (or broken) produce can hand back the first buffer ``key``."""
    buf = outputs[key]
    n = buf.size - produce01.GUARD_ELEMENTS
    nan_head, guard_hit, zeros = buf.copy(), buf.copy(), np.zeros_like(buf)
    nan_head[n // 2] = np.nan
    guard_hit[n + 3] = 1.0
    huge, inf, off = buf.copy(), buf.copy(), buf.copy()
    huge[0], inf[n - 1], off[0] = 3e38, np.inf, buf[0] + 1
    return {
        "missing": None, "wrong shape": buf[:n], "2-D": buf.reshape(1, -1), "NaN inside": nan_head,
        "guard written": guard_hit, "all zeros": zeros, "huge": huge, "inf": inf, "off by one": off,
        "ints": np.zeros(buf.size, np.int64),
        "strings": np.array(["1.0"] * buf.size), "a list": buf.tolist(), "ragged list": [[1.0], [1.0, 2.0]],
        "a dict": {"x": 1}, "a number": 1.0, "None": None, "bool array": np.ones(buf.size, bool),
    }


@pytest.mark.parametrize("grade_id", KERNEL_TASKS)
def test_kernel_judges_turn_hostile_outputs_into_assertion_errors(grade_id):
    task, inputs, good = _correct_outputs(grade_id)
    key = sorted(good)[0]
    title = get("lab01", grade_id).title
    for what, bad in _kernel_hostile(good, key).items():
        outputs = {k: v for k, v in good.items() if k != key}
        if what != "missing":
            outputs[key] = bad
        with pytest.raises(AssertionError, match=title) as err:
            task.judge(inputs, outputs)
        assert err.type is AssertionError, what
    racy = dict(good)
    run1 = racy[key.replace("_0", "_1")].copy()
    run1[0] += 1
    racy[key.replace("_0", "_1")] = run1
    with pytest.raises(AssertionError, match=f"{title}.*two identical runs"):
        task.judge(inputs, racy)
    with pytest.raises(AssertionError, match=f"{title}.*indexed outside"):
        task.judge(inputs, {**good, key.replace("_0", "_error"): "IndexError: index 31 is out of bounds"})
    with pytest.raises(AssertionError, match=f"{title}.*indexed outside"):
        task.judge(inputs, {**good, key.replace("_0", "_error"): ["not", "a", "string"]})


def test_copy_judge_is_exact():
    task, inputs, good = _correct_outputs("task_1_1")
    off = dict(good)
    off["dst0_0"] = off["dst0_0"].copy()
    off["dst0_1"] = off["dst0_0"]
    off["dst0_0"][1] = np.nextafter(off["dst0_0"][1], np.float32(np.inf))  # one ulp
    with pytest.raises(AssertionError, match=r"Task 1\.1 \(copy at size \d+\): 1 of \d+ outputs differ; at \(1,\)"):
        task.judge(inputs, off)


def test_copy_judge_names_the_grid_stride_loop_only_for_an_unwritten_tail_after_a_passing_size():
    task, inputs, good = _correct_outputs("task_1_1")
    n1 = inputs["src1"].size

    def unwritten(case, rows):
        out = dict(good)
        for r in range(produce01.RUNS):
            out[f"dst{case}_{r}"] = buf = good[f"dst{case}_{r}"].copy()
            buf[rows] = np.nan
        return out

    with pytest.raises(AssertionError, match=rf"size {n1}\): elements from index 40 on were never written.*"
                                             r"grid-stride loop"):
        task.judge(inputs, unwritten(1, slice(40, n1)))
    for case, rows in ((1, slice(40, n1 - 1)), (1, slice(0, n1)), (0, slice(1, inputs["src0"].size))):
        with pytest.raises(AssertionError, match="never written") as err:  # a hole, nothing written, or size 1
            task.judge(inputs, unwritten(case, rows))
        assert "grid-stride" not in str(err.value), (case, rows)
    from scaledl.labs.kernel_verdict import unwritten_tail  # shared with check_kernel, which names it the same way

    assert unwritten_tail(np.array(["junk"])) is None and unwritten_tail(np.full((2, 3), np.nan)) is None


def test_intensity_judge_turns_hostile_outputs_into_assertion_errors():
    task, inputs, good = _correct_outputs("task_1_4")
    n = len(inputs["cases"])
    for bad in (None, [], good["naive"][:-1], [float("nan")] * n, [float("inf")] * n, [0.0] * n, [1e308] * n,
                [10**400] * n, [True] * n, ["0.25"] * n, [None] * n, [[0.25]] * n, {"a": 1}, "0.25", 0.25,
                np.zeros(n), np.zeros((n, 1)), np.array(["x"] * n), [g * (1 + 1e-9) for g in good["naive"]]):
        outputs = dict(good)
        if bad is None:
            del outputs["naive"]
        else:
            outputs["naive"] = bad
        with pytest.raises(AssertionError, match=r"Task 1\.4 \(naive\)") as err:
            task.judge(inputs, outputs)
        assert err.type is AssertionError, bad
    task.judge(inputs, {**good, "naive": np.array(good["naive"])})  # an array of the right numbers is fine


@pytest.mark.parametrize("grade_id", KERNEL_TASKS + ("task_1_4",))
def test_make_inputs_differ_between_seeds_and_repeat_for_one(grade_id):
    task = get("lab01", grade_id)
    a, b, a2 = (exchange.roundtrip(task.make_inputs(np.random.default_rng(s))) for s in (1, 2, 1))
    flat = lambda d: repr({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in sorted(d.items())})
    assert flat(a) != flat(b)
    assert flat(a) == flat(a2)


def test_sizes_are_odd_and_the_largest_needs_the_grid_stride():
    for seed in range(20):
        inputs = get("lab01", "task_1_1").make_inputs(np.random.default_rng(seed))
        sizes = [inputs[f"src{i}"].size for i in range(inputs["cases"])]
        assert all(n % THREADS for n in sizes) and max(sizes) > THREADS * MAX_BLOCKS
        fma = get("lab01", "task_1_3").make_inputs(np.random.default_rng(seed))
        assert all(n % THREADS for n, *_ in fma["cases"])


def test_static_part_matches_the_hidden_tests():
    tasks = {t.grade_id: t for t in lab01.TASKS}
    assert list(tasks) == ["task_1_1", "task_1_2", "task_1_3", "task_1_4"]
    for gid in KERNEL_TASKS:
        assert tasks[gid].requires_kernel and tasks[gid].forbidden_modules == ("scaledl.kernels",)
    assert not tasks["task_1_4"].requires_kernel
    assert tasks["task_1_4"].forbidden_modules == ("scaledl.kernels", "scaledl.perf")
    assert [t.local_seed for t in lab01.TASKS] == [150101, 150103, 150105, 150107]
