"""Lab 02 (tiled GEMM): the graded tasks, split into inputs, production and judgement.

The GEMM kernels are launched through the notebook's own launchers (``launch_tiled``, ``launch_regblock``),
as the hidden tests always did, into NaN-poisoned outputs with a guard region
(:mod:`scaledl.course.produce.lab02`); the judge compares with ``A @ B`` in float64 within the float32
rounding bound of :func:`scaledl.labs.check.gemm_tolerance`.
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce.lab02 import PRODUCE
from scaledl.course.tasks import Task
from scaledl.course.tasks.lab01 import KERNEL_MODULES, MODEL_MODULES, SANITIZER, judge_kernel_runs, judge_numbers
from scaledl.labs.hints import hint

# The notebook's block sizes (TILE, and R outputs per thread per side in Task 2.2), so that the drawn sizes
# span several blocks of the kernel the student's notebook builds on the same backend.
TILE_SIM, TILE_GPU = 4, 16
R_SIM, R_GPU = 2, 4


def _block(sim: int, gpu: int) -> int:
    import scaledl

    return scaledl.sized(sim=sim, gpu=gpu)


def _odd_sizes(rng, low: int, high: int, block: int, count: int):
    """``count`` (M, N, K) in [low, high), each bumped off a multiple of ``block`` (an untested edge)."""
    sizes = [[int(v) for v in rng.integers(low, high, 3)] for _ in range(count)]
    return [[v + (v % block == 0) for v in s] for s in sizes]


def _gemm_inputs(sizes, rng):
    data = {}
    for i, (M, N, K) in enumerate(sizes):
        data[f"A{i}"] = rng.uniform(-1, 1, (M, K)).astype(np.float32)
        data[f"B{i}"] = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    return {"cases": len(sizes), **data}


def _gemm_judge(title: str):
    def judge(inp, out):
        from scaledl.labs.check import gemm_bound, gemm_spec, gemm_tolerance
        from scaledl.labs.kernel_verdict import gemm_patterns

        for i in range(inp["cases"]):
            A, B = inp[f"A{i}"], inp[f"B{i}"]
            (M, K), N = A.shape, B.shape[1]
            judge_kernel_runs(out, f"C{i}", gemm_spec(A, B), gemm_tolerance(A, B), bound=gemm_bound(A, B),
                              patterns=lambda A=A, B=B: gemm_patterns(A, B),  # a partial last tile dropped
                              title=f"{title} (C = A @ B at M, N, K = {M}, {N}, {K})")
    return judge


# --- Task 2.1: shared-memory tiling -------------------------------------------------------------------------------

def _tiled_inputs(rng):
    tile = _block(TILE_SIM, TILE_GPU)
    return _gemm_inputs(_odd_sizes(rng, tile + 1, 3 * tile, tile, 2), rng)


# --- Task 2.1b: loads of the tiled kernel -------------------------------------------------------------------------

def _loads_inputs(rng):
    return {"cases": [[int(v) for v in rng.integers(1, 500, 3)] + [int(rng.choice([4, 8, 16, 32]))]
                      for _ in range(12)]}


def _loads_judge(inp, out):
    from scaledl.kernels import gemm_traffic

    want = [gemm_traffic(M, N, K, "tiled", tile=tile).loads for M, N, K, tile in inp["cases"]]
    judge_numbers(out, "loads", inp["cases"], want, title="Task 2.1b", name="tiled_loads",
                  hints=[hint("lab02", "tiled_loads")])


# --- Task 2.2: register blocking ----------------------------------------------------------------------------------

def _regblock_inputs(rng):
    bm = _block(TILE_SIM * R_SIM, TILE_GPU * R_GPU)
    return _gemm_inputs(_odd_sizes(rng, bm + 1, 2 * bm, bm, 1), rng)


TASKS = (
    Task("task_2_1", "Task 2.1", ("make_tiled_kernel", "launch_tiled"), _tiled_inputs, PRODUCE["task_2_1"],
         _gemm_judge("Task 2.1"), local_seed=150201, forbidden_modules=KERNEL_MODULES, requires_kernel=True,
         needs=SANITIZER),
    Task("task_2_1b", "Task 2.1b", ("tiled_loads",), _loads_inputs, PRODUCE["task_2_1b"], _loads_judge,
         local_seed=150203, forbidden_modules=MODEL_MODULES, needs=SANITIZER),
    Task("task_2_2", "Task 2.2", ("make_regblock_kernel", "launch_regblock"), _regblock_inputs,
         PRODUCE["task_2_2"], _gemm_judge("Task 2.2"), local_seed=150204,
         forbidden_modules=KERNEL_MODULES, requires_kernel=True, needs=SANITIZER),
)
