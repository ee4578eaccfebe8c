"""Lab 02's checks print the student's kernel's static report after the verdict (scaledl.labs.gpu_report).

The kernels are the lab solution's own factories, taken out of the notebook and run from source that has no file
(as a notebook cell's): the report sends the kernel's bytecode, closure and globals to a compile process
(scaledl.kernels.static_function), so it cannot rely on inspect.getsource. Checked: the report's lines follow
the verdict with the facts the kernel model holds for the solution (its H200 run); a wrong kernel still fails and
gets no report; without ptxas one line says so and the check passes; a kernel the simulator runs but Numba's CUDA
compiler rejects, or one naming a global that cannot be sent, gets a line saying so, never a failure.
"""

import functools
import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest

import scaledl.device  # noqa: F401  (backend decision before numba.cuda)
from numba import cuda, float32

from scaledl.kernels import static_report
from scaledl.labs.check import check_gemm, gemm_sizes
from scaledl.labs.gpu_report import GpuShape
from scaledl.kernels import kernel_model as km

pytestmark = pytest.mark.sim
HERE = Path(__file__).parent
TILE, R = 4, 2  # the lab's simulator sizes
GPU_TILE, GPU_R = 16, 4  # and its GPU sizes, at which the report compiles


@functools.lru_cache(maxsize=None)
def solution():
    """The namespace of lab 02's solution factories, executed from their source text (no file behind it)."""
    spec = importlib.util.spec_from_file_location("lab_ptx", HERE / "test_lab_solutions_ptx.py")
    lab_ptx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab_ptx)
    ns = {"cuda": cuda, "float32": float32, "np": np, "functools": functools}
    exec(lab_ptx.factory_source("lab02_tiled_gemm"), ns)
    return ns


def launch_regblock(A, B, C):
    M, N = C.shape
    BM = TILE * R
    solution()["make_regblock_kernel"](TILE, R)[((N + BM - 1) // BM, (M + BM - 1) // BM), (TILE, TILE)](A, B, C)


def regblock_shape():
    return GpuShape(solution()["make_regblock_kernel"](GPU_TILE, GPU_R), GPU_TILE * GPU_TILE,
                    f"TILE = {GPU_TILE}, R = {GPU_R}")


def run(launch, gpu, sizes=gemm_sizes(TILE * R)[:2]):
    out = io.StringIO()
    return check_gemm(launch, sizes=sizes, name="regblock", gpu=gpu, report=out), out.getvalue()


def skip_without_tools(result):
    if result.static and result.static[0].startswith("Static report skipped: it needs"):
        pytest.skip(result.static[0])


def test_the_report_follows_the_verdict_with_the_solutions_facts():
    result, text = run(launch_regblock, regblock_shape())
    skip_without_tools(result)
    assert result.passed and text.index("PASSED: regblock") < text.index("Static report of your kernel")
    assert text.rstrip().endswith(result.static[-1]) and len(result.static) == 4
    lab02 = km.H200_MEASURED[3].facts  # this solution's facts, timed on the H200 (kernel_model)
    head, regs, loads, loop = result.static
    assert head.startswith("Static report of your kernel at the GPU's sizes (TILE = 16, R = 4), compiled for sm_90")
    assert f"256 threads a block -> 3 blocks, {lab02.warps_per_sm} warps per SM (limited by registers)" in regs
    assert "no spills" in regs and "8x32" in loads and f"; {lab02.bytes_in_flight} bytes in flight" in loads
    assert loop.startswith(f"  inner loop: 16 FFMA of 55 instructions, FFMA share {100 * lab02.ffma_share:.0f} %")


def test_a_wrong_kernel_still_fails_and_gets_no_report():
    def first_tile_only(A, B, C):  # sums over the first tile of k alone: right while K <= BM, wrong beyond
        BM = TILE * R
        launch_regblock(np.ascontiguousarray(A[:, :BM]), np.ascontiguousarray(B[:BM]), C)

    result, text = run(first_tile_only, regblock_shape())
    assert text.startswith("ok   regblock at size 5x3x7\nFAIL regblock at size 19x17x25")
    assert not result.passed and result.static == [] and "Static report" not in text
    with pytest.raises(AssertionError, match="regblock did not pass"):
        result.raise_if_failed()


def test_without_the_tools_one_line_and_the_check_passes(monkeypatch):
    monkeypatch.setattr(static_report, "find_tool", lambda name: None)
    result, text = run(launch_regblock, regblock_shape())
    assert result.passed and result.static == [
        "Static report skipped: it needs ptxas, nvdisasm and libNVVM (ptxas and nvdisasm not found (looked in the "
        f"nvidia wheels of this Python, CUDA_HOME/CUDA_PATH and PATH); {static_report.INSTALL_HINT})."]
    assert text.rstrip().endswith(result.static[0]) and text.index("PASSED") < text.index("Static report skipped")
    result.raise_if_failed()


def test_a_kernel_naming_an_object_of_the_notebook_gets_a_line():
    table = [1.0, 2.0]

    @cuda.jit
    def uses_a_list(A, B, C):
        C[0, 0] = table[0]

    result = check_gemm(launch_regblock, sizes=[(5, 3, 7)], gpu=GpuShape(uses_a_list, 256), report=None)
    assert result.passed and result.static == [
        "Static report skipped: table is a list, which the compile process cannot be sent: the report compiles "
        "kernels whose globals are modules, numbers, Numba types and device functions."]


@cuda.jit(device=True)
def twice(x):
    return x + x


@cuda.jit
def calls_a_device_function(A, B, C):
    C[0, 0] = twice(A[0, 0])


def make_shape_expression_kernel(T):
    @cuda.jit
    def kernel(A, B, C):
        s = cuda.shared.array(T * 2, float32)  # runs on the simulator; Numba's CUDA compiler wants a constant
        s[0] = A[0, 0]
        C[0, 0] = s[0]
    return kernel


def test_a_device_function_compiles_and_a_rejected_kernel_gets_a_line():
    result = check_gemm(launch_regblock, sizes=[(5, 3, 7)], gpu=GpuShape(calls_a_device_function, 32), report=None)
    skip_without_tools(result)
    assert result.passed and result.static[1].startswith("  registers: ")
    result = check_gemm(launch_regblock, sizes=[(5, 3, 7)], gpu=GpuShape(make_shape_expression_kernel(4), 32),
                        report=None)
    assert result.passed and len(result.static) == 1
    assert result.static[0].startswith("Static report: Numba's CUDA compiler rejects this kernel, so a GPU could not "
                                       "run it (the simulator never compiles a kernel): TypingError")
