"""The lab solutions' kernels compile for a real GPU (sm_90 PTX) at the GPU's tile sizes, without one.

Students compare their kernels with these solutions, and an instructor times them on a GPU; the simulator
never type-checks a kernel, so a solution could pass every notebook check and still be rejected by Numba's
CUDA compiler. This test takes the kernel factories out of each lab solution (the top-level functions of its
solution cells that contain ``@cuda.jit``), builds them with the sizes ``scaledl.sized(gpu=...)`` gives on a
GPU, and compiles each with the ``compile_ptx`` fixture (tests/sim/conftest.py). It also checks that the
register-blocked solution keeps its R x R accumulators in registers. Skipped where the CUDA toolkit's
libNVVM/NVRTC cannot be loaded (they come with the dev extra, numba-cuda[cu13]).
"""

import ast
import json
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.sim
ROOT = Path(__file__).resolve().parents[2]

# (lab solution, factory call with the GPU sizes of the lab's setup cell, argument types)
KERNELS = [
    ("lab01_roofline_your_device", "copy", "make_copy_kernel()", "(a1, a1)"),
    ("lab01_roofline_your_device", "triad", "make_triad_kernel()", "(a1, a1, a1, float32)"),
    ("lab01_roofline_your_device", "fma", "make_fma_kernel(8)", "(a1, int32, float32, float32, float32)"),
    ("lab02_tiled_gemm", "tiled", "make_tiled_kernel(16)", "(a2, a2, a2)"),
    ("lab02_tiled_gemm", "regblock", "make_regblock_kernel(16, 4)", "(a2, a2, a2)"),
]

BODY = r'''
import functools
import numpy as np
jobs = {}
for name, source, call, sig in json.loads(os.environ["JOBS"]):
    ns = {"cuda": cuda, "float32": float32, "np": np, "functools": functools}
    exec(source, ns)
    jobs[name] = (eval(call, ns), eval(sig))
compile_all(jobs)
'''


def factory_source(lab: str) -> str:
    """The top-level functions of the solution cells that build kernels (nothing that launches one)."""
    nb = nbformat.read(ROOT / "labs" / "solutions" / f"{lab}.ipynb", as_version=4)
    pieces = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "### BEGIN SOLUTION" not in cell.source or "@cuda.jit" not in cell.source:
            continue
        tree = ast.parse(cell.source)
        pieces += [ast.get_source_segment(cell.source, node, padded=False) for node in tree.body
                   if isinstance(node, ast.FunctionDef) and "cuda.jit" in ast.unparse(node)]
    return "\n\n".join(pieces)  # a FunctionDef's segment starts at "def": an lru_cache decorator is left out


def test_factories_are_found():
    assert "def make_regblock_kernel(TILE, R):" in factory_source("lab02_tiled_gemm")
    assert "def make_fma_kernel(CHAINS):" in factory_source("lab01_roofline_your_device")


def test_lab_solution_kernels_compile_to_ptx(compile_ptx):
    jobs = [(name, factory_source(lab), call, sig) for lab, name, call, sig in KERNELS]
    rows = compile_ptx(BODY, {"JOBS": json.dumps(jobs)})
    assert set(rows) == {k[1] for k in KERNELS}, rows
    regblock = rows["regblock"]
    assert regblock["local"] == 0, "the register-blocked solution's accumulators spilled to local memory"
    assert regblock["fma"] >= 16  # 4 x 4 accumulators, one FMA each per k step
    assert rows["tiled"]["bar"] >= 2 and regblock["bar"] >= 2  # both syncthreads survive compilation
    assert rows["fma"]["fma"] >= 8  # eight independent chains
