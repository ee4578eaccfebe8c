"""Every kernel compiles for a real GPU (sm_90 PTX), without one: the simulator never type-checks kernels.

The simulator runs kernels as Python, so a kernel that Numba's CUDA compiler would reject (a shared array
whose shape is an expression, a type that does not unify) passes every simulator test. Where the CUDA
toolkit's libNVVM and NVRTC can be loaded, this test compiles each kernel to PTX in a fresh process with the
backend forced to "cuda" (no GPU is needed to compile), and checks that the register-blocked GEMM keeps its
accumulators in registers (no local memory) and issues one FMA per accumulator per k step. It covers every
kernel in scaledl.kernels (the simulator-sized GEMM tilings too). Skipped where the toolkit libraries are
missing.
"""

import pytest

pytestmark = pytest.mark.sim

SCRIPT = r'''
import importlib.util, os, re, sys, types
os.environ["SCALEDL_QUIET"] = "1"
spec = importlib.util.find_spec("scaledl")
pkg = types.ModuleType("scaledl"); pkg.__path__ = list(spec.submodule_search_locations); sys.modules["scaledl"] = pkg
import scaledl.device as d
d._choose = lambda env: d.Decision("cuda", "forced: compile only", None)
from numba import cuda, float32, int32
from numba import types as T
import scaledl.kernels.gemm
g = sys.modules["scaledl.kernels.gemm"]
import scaledl.kernels.bandwidth as bw, scaledl.kernels.reduce as r, scaledl.kernels.conv as c
import scaledl.kernels.quantize as q, scaledl.kernels.logdot as l, scaledl.kernels.smoke as sm
a1, a2, a3, a4 = (T.Array(T.float32, n, "C") for n in (1, 2, 3, 4))
i8, i32, i64 = (T.Array(t, 1, "C") for t in (T.int8, T.int32, T.int64))
f64, i64s = T.float64, T.int64
jobs = {"naive": (g.gemm_v1_naive, (a2, a2, a2)), "tiled": (g.tiled_kernel(16), (a2, a2, a2)),
        "regblock": (g.regblock_kernel(128, 128, 8, 8, 8), (a2, a2, a2)),
        "copy": (bw.copy_kernel, (a1, a1)), "scale": (bw.scale_kernel, (a1, a1, float32)),
        "triad": (bw.triad_kernel, (a1, a1, a1, float32)),
        "fma": (bw.fma_kernel, (a1, int32, float32, float32, float32)),
        "sum_shared": (r.sum_v1_shared, (a1, a1)), "sum_warp": (r.sum_v2_warp, (a1, a1)),
        "conv_direct": (c.conv2d_v1_direct, (a3, a4, a3)), "conv_winograd": (c.conv2d_v2_winograd, (a3, a4, a3)),
        # the simulator's own tilings (DEFAULT_TILING["simulator"]): the shapes the chapters run
        "tiled_sim": (g.tiled_kernel(8), (a2, a2, a2)), "regblock_sim": (g.regblock_kernel(16, 16, 8, 2, 2), (a2, a2, a2)),
        # kernels of Chapters 07-08 (quantizer, binned log dot product) and the install smoke test
        "quantize": (q.quantize_v1_arith, (a1, a1, f64, f64, i64s, i64s, f64, f64)),
        "logdot_v1": (l.logdot_v1, (i8, i32, i8, i32, i64s, i64s, i64)),
        "logdot_v2": (l.logdot_v2, (i8, i32, i8, i32, i64s, i64s, i64)),
        "axpy": (sm.axpy, (float32, a1, a1, a1))}
for name, (k, sig) in jobs.items():
    try:
        ptx, _ = cuda.compile_ptx(k.py_func, sig, cc=(9, 0))
    except Exception as err:
        text = f"{type(err).__name__}: {err}"
        if any(s in text for s in ("DynamicLibNotFound", "libNVVM", "libnvvm", "nvrtc", "NVRTC")):
            print("SKIP", text.splitlines()[0]); sys.exit(0)
        print("FAIL", name, text); sys.exit(1)
    local = ".local" in ptx
    print("OK", name, len(re.findall(r"fma\.rn\.f32", ptx)), len(re.findall(r"shfl\.sync", ptx)), int(local),
          len(re.findall(r"atom\.", ptx)))
'''


def test_every_kernel_compiles_to_ptx(python):
    r = python(SCRIPT)
    out = r.stdout
    if out.startswith("SKIP"):
        pytest.skip(f"CUDA toolkit libraries not found, cannot compile PTX here ({out.strip()[5:]})")
    assert r.returncode == 0, out + r.stderr
    rows = {line.split()[1]: [int(v) for v in line.split()[2:]] for line in out.splitlines() if line.startswith("OK")}
    assert len(rows) == 17, out
    assert rows["logdot_v1"][2] == 0 and rows["quantize"][2] == 0  # nothing spilled to local memory
    fma, shfl, local, _ = rows["regblock"]
    assert local == 0, "v3's accumulators spilled to local memory"
    assert fma >= 64  # 8 x 8 accumulators, each one FMA per k step, fully unrolled
    assert rows["sum_warp"][1] >= 10  # two 5-step shuffle trees
    assert rows["fma"][0] >= 8  # eight independent chains
    assert rows["logdot_v1"][3] >= 1 and rows["logdot_v2"][3] >= 2  # v2: shared-memory and global atomics
    assert rows["regblock_sim"][0] >= 4  # 2 x 2 accumulators
