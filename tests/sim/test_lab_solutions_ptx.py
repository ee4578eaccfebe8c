"""The lab solutions' kernels compile for a real GPU (sm_90 PTX) at the GPU's tile sizes, without one.

Students compare their kernels with these solutions, and an instructor times them on a GPU; the simulator
never type-checks a kernel, so a solution could pass every notebook check and still be rejected by Numba's
CUDA compiler. This test takes the kernel factories out of each lab solution (the top-level functions of its
solution cells that contain ``@cuda.jit``), builds them with the sizes ``scaledl.sized(gpu=...)`` gives on a
GPU, and compiles each to PTX in a fresh process with the backend forced to "cuda". It also checks that the
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

SCRIPT = r'''
import functools, importlib.util, json, os, re, sys, types
os.environ["SCALEDL_QUIET"] = "1"
spec = importlib.util.find_spec("scaledl")
pkg = types.ModuleType("scaledl"); pkg.__path__ = list(spec.submodule_search_locations); sys.modules["scaledl"] = pkg
import scaledl.device as d
d._choose = lambda env: d.Decision("cuda", "forced: compile only", None)
import numpy as np
from numba import cuda, float32, int32
from numba import types as T
a1, a2 = T.Array(T.float32, 1, "C"), T.Array(T.float32, 2, "C")
jobs = json.loads(sys.argv[1] if len(sys.argv) > 1 else os.environ["JOBS"])
for name, source, call, sig in jobs:
    ns = {"cuda": cuda, "float32": float32, "np": np, "functools": functools}
    exec(source, ns)
    kernel = eval(call, ns)
    try:
        ptx, _ = cuda.compile_ptx(kernel.py_func, eval(sig), cc=(9, 0))
    except Exception as err:
        text = f"{type(err).__name__}: {err}"
        if any(s in text for s in ("DynamicLibNotFound", "libNVVM", "libnvvm", "nvrtc", "NVRTC")):
            print("SKIP", text.splitlines()[0]); sys.exit(0)
        print("FAIL", name, text.replace(chr(10), " ")); sys.exit(1)
    print("OK", name, len(re.findall(r"fma\.rn\.f32", ptx)), int(".local" in ptx), len(re.findall(r"bar\.sync", ptx)))
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


def test_lab_solution_kernels_compile_to_ptx(python):
    jobs = [(name, factory_source(lab), call, sig) for lab, name, call, sig in KERNELS]
    r = python(SCRIPT, {"JOBS": json.dumps(jobs)})
    out = r.stdout
    if out.startswith("SKIP"):
        pytest.skip(f"CUDA toolkit libraries not found, cannot compile PTX here ({out.strip()[5:]})")
    assert r.returncode == 0, out + r.stderr
    rows = {line.split()[1]: [int(v) for v in line.split()[2:]] for line in out.splitlines() if line.startswith("OK")}
    assert set(rows) == {k[1] for k in KERNELS}, out
    fma, local, bar = rows["regblock"]
    assert local == 0, "the register-blocked solution's accumulators spilled to local memory"
    assert fma >= 16  # 4 x 4 accumulators, one FMA each per k step
    assert rows["tiled"][2] >= 2 and bar >= 2  # both syncthreads survive compilation
    assert rows["fma"][0] >= 8  # eight independent chains
