"""Lab 02 (tiled GEMM): the student's side of the graded tasks.

The GEMM kernels are launched through the notebook's own launchers (``launch_tiled``, ``launch_regblock``), as
the hidden tests always did, into NaN-poisoned outputs with a guard region (:mod:`scaledl.course.produce.lab01`'s
helpers); the judge compares in the grader's process.
"""

from __future__ import annotations

from scaledl.course.produce import student
from scaledl.course.produce.lab01 import device_inputs, plain_number, produce_runs


def _gemm_produce(launcher: str):
    def produce(ns, inp):
        launch = student(ns, launcher)
        out = {}
        for i in range(inp["cases"]):
            A, B = device_inputs(inp[f"A{i}"], inp[f"B{i}"])
            shape = (inp[f"A{i}"].shape[0], inp[f"B{i}"].shape[1])
            out.update(produce_runs(lambda C: launch(A, B, C), shape, f"C{i}"))
        return out
    return produce


# --- Task 2.1b: loads of the tiled kernel -------------------------------------------------------------------------

def _loads_produce(ns, inp):
    f = student(ns, "tiled_loads")
    return {"loads": [plain_number(f(M, N, K, tile)) for M, N, K, tile in inp["cases"]]}


PRODUCE = {"task_2_1": _gemm_produce("launch_tiled"), "task_2_1b": _loads_produce,
           "task_2_2": _gemm_produce("launch_regblock")}
