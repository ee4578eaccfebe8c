"""Every kernel compiles for a real GPU (sm_90 PTX), without one: the simulator never type-checks kernels.

The simulator runs kernels as Python, so a kernel that Numba's CUDA compiler would reject (a shared array
whose shape is an expression, a type that does not unify) passes every simulator test. The ``compile_ptx``
fixture (tests/sim/conftest.py) compiles each kernel to PTX in a fresh process with the backend forced to
"cuda"; this test also checks that the register-blocked GEMM keeps its accumulators in registers (no local
memory) and issues one FMA per accumulator per k step. It covers every kernel in scaledl.kernels (the
simulator-sized GEMM tilings too, and the ladder v4 to v8 of scaledl.kernels.gemm_ladder). Skipped where the
toolkit libraries are missing.
"""

import pytest

pytestmark = pytest.mark.sim

BODY = r'''
import numba.cuda.dispatcher as dispatcher
# load4 (v6 to v8) is an overload, compiled like a device function for the current device: there is none
# without a driver, so say it is the sm_90 compile_ptx targets anyway (as tests/sim/test_rnn_ptx.py does)
dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
import scaledl.kernels.gemm
g = sys.modules["scaledl.kernels.gemm"]
LADDER = {v: (g.kernel_for(v, g.DEFAULT_TILING["cuda"][v]), (a2, a2, a2)) for v in g.LADDER}
LADDER.update({v + "_sim": (g.kernel_for(v, g.DEFAULT_TILING["simulator"][v]), (a2, a2, a2)) for v in g.LADDER})
import scaledl.kernels.bandwidth as bw, scaledl.kernels.reduce as r, scaledl.kernels.conv as c
import scaledl.kernels.quantize as q, scaledl.kernels.logdot as l, scaledl.kernels.smoke as sm
compile_all({
    "naive": (g.gemm_v1_naive, (a2, a2, a2)), "tiled": (g.tiled_kernel(16), (a2, a2, a2)),
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
    "quantize_v2": (q.quantize_v2_pow2, (a1, a1, f64, f64, i64s, i64s, f64, f64)),
    "quantize_v3": (q.quantize_v3_four, (a1, a1, f64, f64, i64s, i64s, f64, f64)),
    "logdot_v1": (l.logdot_v1, (i8, i32, i8, i32, i64s, i64s, i64)),
    "logdot_v2": (l.logdot_v2, (i8, i32, i8, i32, i64s, i64s, i64)),
    "axpy": (sm.axpy, (float32, a1, a1, a1)), **LADDER})
'''


def test_every_kernel_compiles_to_ptx(compile_ptx):
    rows = compile_ptx(BODY)
    assert len(rows) == 19 + 2 * 5, rows  # and GEMM v4 to v8 at the GPU's and the simulator's tilings
    for v in ("fixed_loads", "index32", "vec4", "unroll_k", "prefetch"):
        assert rows[v]["local"] == 0 and rows[v]["fma"] >= 64 and rows[v]["bar"] >= 2, (v, rows[v])
        assert rows[v + "_sim"]["fma"] >= 4, v  # 2 x 2 accumulators
    assert rows["logdot_v1"]["local"] == 0 and rows["quantize"]["local"] == 0  # nothing spilled to local memory
    assert rows["quantize_v2"]["local"] == 0 and rows["quantize_v3"]["local"] == 0
    assert rows["regblock"]["local"] == 0, "v3's accumulators spilled to local memory"
    assert rows["regblock"]["fma"] >= 64  # 8 x 8 accumulators, each one FMA per k step, fully unrolled
    assert rows["sum_warp"]["shfl"] >= 10  # two 5-step shuffle trees
    assert rows["fma"]["fma"] >= 8  # eight independent chains
    assert rows["logdot_v1"]["atom"] >= 1 and rows["logdot_v2"]["atom"] >= 2  # v2: shared-memory and global atomics
    assert rows["regblock_sim"]["fma"] >= 4  # 2 x 2 accumulators


NUMPY_2_5 = r'''
import numpy as np
del np.row_stack  # as NumPy 2.5 ships: numba-cuda's GPU typing registries still overload it
'''


def test_kernels_compile_under_numpy_2_5_because_scaledl_restores_row_stack(compile_ptx, ptx_script, python):
    """The H200 image of 2026-11-26 (NumPy 2.5.2, numba-cuda 0.30.4) failed every kernel compilation with
    "module 'numpy' has no attribute 'row_stack'"; the simulator never loads those registries, so only a real
    compile shows it. Without scaledl._compat the same compile fails here too (the control)."""
    kernel = 'import scaledl.kernels.smoke as sm\ncompile_all({"axpy": (sm.axpy, (float32, a1, a1, a1))})\n'
    rows = compile_ptx(NUMPY_2_5 + "import scaledl._compat\n" + kernel)
    assert "axpy" in rows
    r = python(ptx_script + NUMPY_2_5 + kernel)
    assert r.returncode != 0 and "row_stack" in r.stdout, r.stdout + r.stderr[-1000:]
