"""Lab 01 (roofline your device): the graded tasks, split into inputs, production and judgement.

Tasks 1.1-1.3 are CUDA kernels. Their produce functions (:mod:`scaledl.course.produce.lab01`) launch the
student's kernel the way the notebook does into an output poisoned with NaN and followed by a NaN guard region,
twice per size, and hand back the whole buffer; the judge reads from it what ``check_kernel`` reports in the
notebook: values never written, stores past the end, runs that disagree, wrong values. The judge of those
buffers (:func:`judge_kernel_runs`) and of lists of numbers (:func:`judge_numbers`) are shared with lab 02.
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce.lab01 import GUARD_ELEMENTS, PRODUCE, RUNS, VARIANTS
from scaledl.course.tasks import Task, array
from scaledl.labs.hints import hint, with_hints

FLOAT32_EPS = float(np.finfo(np.float32).eps)
FLOAT32_TINY = float(np.finfo(np.float32).tiny)
KERNEL_MODULES = ("scaledl.kernels",)            # the book's own kernels answer every kernel task
# ... but the kernel tasks' produce runs the student's launches under the race checker, which lives there: the lab's
# view keeps it (scaledl.course.view.carve), on every task so that the lab still grades in one process
SANITIZER = ("scaledl.kernels.sanitizer",)
MODEL_MODULES = ("scaledl.kernels", "scaledl.perf")  # ... and its traffic/roofline models the counting ones


# --- judges shared with lab 02 --------------------------------------------------------------------------------

def _first_mismatches(got, want, bad, count: int = 2) -> str:
    """The first ``count`` outputs ``bad`` marks, Yours beside Spec (the feedback page shows 500 characters of a
    message, and the hint must fit)."""
    idx = np.flatnonzero(bad)
    return "; ".join(f"at {tuple(int(v) for v in np.unravel_index(i, want.shape))}: Yours {got.flat[i]:.9g}, "
                     f"Spec {want.flat[i]:.9g}" for i in idx[:count])


def judge_kernel_runs(outputs: dict, key: str, want: np.ndarray, tol, *, title: str, bound=None,
                      grid_stride: bool = False, patterns=None) -> None:
    """Judge the buffers :func:`~scaledl.course.produce.lab01.produce_runs` handed back under ``key`` against
    ``want`` (float64), with the sanitizer's findings that came with them.

    ``tol`` is the allowed absolute error (scalar or per element); ``bound`` (optional) the largest |value|
    any output built from the inputs can have, so that larger ones are named reads of memory nobody wrote;
    ``grid_stride`` (the earlier sizes passed) names a clean never-written tail as a missing grid-stride loop;
    ``patterns`` (optional) returns the outputs classic bugs give (:func:`scaledl.labs.kernel_verdict.gemm_patterns`).
    The decision is :func:`scaledl.labs.kernel_verdict.kernel_verdict`, the one
    :func:`scaledl.labs.check.check_kernel` prints in the notebook: a finding of the sanitizer (a race, ...)
    fails the task with its message even where the values are right.

    Raises:
        AssertionError: naming ``title``, what is wrong (the sanitizer's message, the first differing indices,
            Yours beside Spec) and the likely bug.
    """
    from scaledl.labs.kernel_verdict import kernel_verdict, read_findings

    findings, malformed = read_findings(outputs.get(f"{key}_findings"))
    if malformed:
        raise AssertionError(f"{title}: {malformed}")
    error = None
    if f"{key}_error" in outputs:
        msg = outputs[f"{key}_error"]
        error = f"{msg if isinstance(msg, str) else repr(msg):.200}"
    n = want.size
    present = [r for r in range(RUNS) if f"{key}_{r}" in outputs]
    runs = []
    if present or (error is None and not findings):  # a launch stopped at a barrier hands back findings alone
        for r in range(RUNS):
            if f"{key}_{r}" in outputs and not isinstance(outputs[f"{key}_{r}"], np.ndarray):
                raise AssertionError(f"{title}: {key}_{r} is not an array")
            runs.append(array(outputs, f"{key}_{r}", shape=(n + GUARD_ELEMENTS,), dtype="f", title=title))
    if error is not None:
        runs = []
    guard_hit = any(not np.isnan(r[n:]).all() for r in runs)
    verdict = kernel_verdict([r[:n].reshape(want.shape) for r in runs], want, tol, bound=bound, findings=findings,
                             error=error, guard_hit=guard_hit, grid_stride=grid_stride and want.ndim == 1,
                             patterns=patterns, fallback=hint("kernel", "compare"))
    if verdict.passed:
        return
    message = f"{title}: {verdict.headline}"  # a finding's message is long: it leads, alone
    if not verdict.found and verdict.bad is not None and verdict.bad.any():
        message += "; " + _first_mismatches(verdict.shown.astype(np.float64), want, verdict.bad)
    raise AssertionError(with_hints(message, verdict.hints))


def judge_numbers(outputs: dict, key: str, cases, want, *, title: str, name: str, rtol: float = 1e-12,
                  hints=()) -> None:
    """Judge a list of numbers (one per case) against ``want``, allowing only float rounding (``rtol``); a
    wrong one is reported with ``hints`` (what the notebook's ``check_values`` prints)."""
    if key not in outputs:
        raise AssertionError(f"{title}: no result {key!r} came back (did the function raise?)")
    got = outputs[key]
    if isinstance(got, np.ndarray):
        got = got.tolist() if got.ndim == 1 else None
    if not isinstance(got, list) or len(got) != len(cases):
        raise AssertionError(f"{title}: {key} is not a list of {len(cases)} results; got {got!r:.80}")
    wrong = []
    for case, g, w in zip(cases, got, want):
        try:
            ok = isinstance(g, (int, float)) and not isinstance(g, bool) and abs(float(g) - w) <= rtol * abs(w)
        except OverflowError:  # an int too large for a float
            ok = False
        if not ok:
            wrong.append(f"{name}{tuple(case)}: Yours {g!r:.40}, Spec {float(w):.12g}")
    if wrong:
        raise AssertionError(with_hints(f"{title}: {len(wrong)} of {len(cases)} cases differ; " + "; ".join(wrong[:3]),
                                        hints))


# --- Task 1.1: copy with a grid-stride loop ----------------------------------------------------------------------

def _stream_sizes(rng, middle: bool):
    """Sizes as the hidden tests draw them: one inside a block, (``middle``) one past the simulator's
    block, and an odd one past its whole grid (3 blocks of 32), so the loop must stride."""
    sizes = [int(rng.integers(2, 31))] + ([int(rng.integers(97, 127))] if middle else [])
    return sizes + [33 + 2 * int(rng.integers(100, 130))]


def _copy_inputs(rng):
    sizes = _stream_sizes(rng, middle=True)
    return {"cases": len(sizes), **{f"src{i}": rng.standard_normal(n).astype(np.float32) for i, n in enumerate(sizes)}}


def _copy_judge(inp, out):
    for i in range(inp["cases"]):
        src = inp[f"src{i}"]
        # right at the smaller sizes, a clean unwritten tail here: the grid ran out of threads
        judge_kernel_runs(out, f"dst{i}", src.astype(np.float64), 0.0, title=f"Task 1.1 (copy at size {src.size})",
                          grid_stride=i > 0)


# --- Task 1.2: triad ----------------------------------------------------------------------------------------------

def _triad_inputs(rng):
    sizes = _stream_sizes(rng, middle=False)
    s = float(np.float32(rng.choice([-1, 1]) * rng.uniform(0.25, 3.0)))  # a float32 scalar, never 0 or 1
    data = {}
    for i, n in enumerate(sizes):
        data[f"b{i}"] = rng.standard_normal(n).astype(np.float32)
        data[f"c{i}"] = rng.standard_normal(n).astype(np.float32)
    return {"cases": len(sizes), "s": s, **data}


def _triad_judge(inp, out):
    s = float(inp["s"])
    for i in range(inp["cases"]):
        b, c = inp[f"b{i}"].astype(np.float64), inp[f"c{i}"].astype(np.float64)
        tol = 2 * FLOAT32_EPS * (np.abs(b) + abs(s) * np.abs(c)) + FLOAT32_TINY  # two roundings, or one FMA
        judge_kernel_runs(out, f"a{i}", b + s * c, tol, title=f"Task 1.2 (triad, s = {s:g}, at size {b.size})")


# --- Task 1.3: FMA throughput -------------------------------------------------------------------------------------

def _fma_inputs(rng):
    chains = int(rng.integers(2, 6))
    sizes = [int(rng.integers(2, 31)), 33 + int(rng.integers(0, 30))]
    # b = 1 and small integer x0, c keep every chain an exact float32 integer: x0 + n_iter c
    cases = [[n, int(rng.integers(2, 9)), int(rng.integers(-3, 4)), int(rng.integers(1, 4))] for n in sizes]
    return {"chains": chains, "cases": cases}


def _fma_judge(inp, out):
    chains = int(inp["chains"])
    for i, (n, n_iter, x0, c) in enumerate(inp["cases"]):
        want = np.full(n, chains * (x0 + n_iter * c), np.float64)
        judge_kernel_runs(out, f"out{i}", want, 0.0, title=f"Task 1.3 (fma, {chains} chains, n_iter = {n_iter}, "
                          f"x0 = {x0}, b = 1, c = {c}, at size {n})")


# --- Task 1.4: arithmetic intensity of the GEMM kernels ----------------------------------------------------------

def _model_cases(rng, high: int):
    return [[int(v) for v in rng.integers(1, high, 3)] + [int(rng.choice([4, 8, 16, 32]))] for _ in range(12)]


def _intensity_inputs(rng):
    return {"cases": _model_cases(rng, 300)}


def _intensity_judge(inp, out):
    from scaledl.kernels import gemm_traffic

    for v in VARIANTS:
        want = [gemm_traffic(M, N, K, v, **({"tile": tile} if v == "tiled" else {})).arithmetic_intensity_flop_per_byte
                for M, N, K, tile in inp["cases"]]
        judge_numbers(out, v, inp["cases"], want, title=f"Task 1.4 ({v})", name=f"gemm_intensity[{v}]",
                      hints=[hint("lab01", "gemm_intensity")])


TASKS = (
    Task("task_1_1", "Task 1.1", ("make_copy_kernel",), _copy_inputs, PRODUCE["task_1_1"], _copy_judge,
         local_seed=150101, forbidden_modules=KERNEL_MODULES, requires_kernel=True, needs=SANITIZER),
    Task("task_1_2", "Task 1.2", ("make_triad_kernel",), _triad_inputs, PRODUCE["task_1_2"], _triad_judge,
         local_seed=150103, forbidden_modules=KERNEL_MODULES, requires_kernel=True, needs=SANITIZER),
    Task("task_1_3", "Task 1.3", ("make_fma_kernel",), _fma_inputs, PRODUCE["task_1_3"], _fma_judge,
         local_seed=150105, forbidden_modules=KERNEL_MODULES, requires_kernel=True, needs=SANITIZER),
    Task("task_1_4", "Task 1.4", ("gemm_intensity",), _intensity_inputs, PRODUCE["task_1_4"], _intensity_judge,
         local_seed=150107, forbidden_modules=MODEL_MODULES, needs=SANITIZER),
)
