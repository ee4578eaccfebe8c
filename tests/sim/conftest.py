"""Compile kernels to PTX without a GPU (tests/sim/test_ptx_compile.py, test_lab_solutions_ptx.py).

The simulator runs kernels as Python and never type-checks them. Where the CUDA toolkit's libNVVM and NVRTC
can be loaded (the dev extra installs them), a fresh process with the backend forced to "cuda" compiles
each kernel with Numba's real compiler for sm_90; no GPU is needed for that.
"""

import json

import pytest

PTX_SCRIPT = r'''
import importlib.util, json, os, re, sys, types
os.environ["SCALEDL_QUIET"] = "1"
spec = importlib.util.find_spec("scaledl")
pkg = types.ModuleType("scaledl"); pkg.__path__ = list(spec.submodule_search_locations); sys.modules["scaledl"] = pkg
import scaledl.device as d
d._choose = lambda env: d.Decision("cuda", "forced: compile only", None)
from numba import cuda, float32, int32
from numba import types as T
a1, a2, a3, a4 = (T.Array(T.float32, n, "C") for n in (1, 2, 3, 4))
i8, i32, i64 = (T.Array(t, 1, "C") for t in (T.int8, T.int32, T.int64))
f64, i64s = T.float64, T.int64
COUNTS = {"fma": r"fma\.rn\.f32", "shfl": r"shfl\.sync", "local": r"\.local", "atom": r"atom\.", "bar": r"bar\.sync"}


def compile_all(jobs):
    """jobs: name -> (kernel, signature). Prints one JSON line of PTX instruction counts per kernel."""
    for name, (kernel, sig) in jobs.items():
        try:
            ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        except Exception as err:
            text = f"{type(err).__name__}: {err}"
            if any(s in text for s in ("DynamicLibNotFound", "libNVVM", "libnvvm", "nvrtc", "NVRTC")):
                print("SKIP", text.splitlines()[0]); sys.exit(0)
            print("FAIL", name, text.replace(chr(10), " ")); sys.exit(1)
        print("OK", name, json.dumps({k: len(re.findall(p, ptx)) for k, p in COUNTS.items()}))
'''


@pytest.fixture
def compile_ptx(python):
    """``compile_ptx(body, env)``: run ``body`` after PTX_SCRIPT (it calls ``compile_all(jobs)``) and return
    ``{kernel name: {"fma": n, "shfl": n, "local": n, "atom": n, "bar": n}}``; skips the test where the
    toolkit libraries are missing, fails it on a compile error."""
    def run(body: str, env: dict | None = None) -> dict:
        r = python(PTX_SCRIPT + body, env)
        out = r.stdout
        if out.startswith("SKIP"):
            pytest.skip(f"CUDA toolkit libraries not found, cannot compile PTX here ({out.strip()[5:]})")
        assert r.returncode == 0, out + r.stderr
        return {line.split(" ", 2)[1]: json.loads(line.split(" ", 2)[2])
                for line in out.splitlines() if line.startswith("OK ")}
    return run


@pytest.fixture
def ptx_script():
    """PTX_SCRIPT itself, for a test that must see a compile fail (compile_ptx fails the test instead)."""
    return PTX_SCRIPT
