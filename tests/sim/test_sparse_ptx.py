"""The sparse kernels (CSR SpMV/SpMM, 2:4 compressed GEMM v1 to v3) compile to sm_90 PTX, without a GPU.

The simulator never type-checks a kernel; the ``compile_ptx`` fixture (tests/sim/conftest.py) compiles each
one with Numba's real CUDA compiler in a fresh process. Also checked: the shuffle SpMV really shuffles, the
shared-memory one really synchronises, and nothing spills to local memory. Skipped where the toolkit
libraries are missing.
"""

import pytest

pytestmark = pytest.mark.sim

BODY = r'''
import scaledl.kernels.spmv as s, scaledl.kernels.nm_gemm as n
u16 = T.Array(T.uint16, 2, "C")
compile_all({
    "spmv_row": (s.spmv_v1_row, (i32, i32, a1, a1, a1)),
    "spmv_warp": (s.warp_kernel(256), (i32, i32, a1, a1, a1)),
    "spmv_warp_sim": (s.warp_kernel(64), (i32, i32, a1, a1, a1)),  # the simulator's block size
    "spmv_shuffle": (s.spmv_v3_shuffle, (i32, i32, a1, a1, a1)),
    "spmm_row": (s.spmm_v1_row, (i32, i32, a1, a2, a2)),
    "nm_gemm": (n.nm_gemm_v1, (a2, u16, a2, a2)),
    "nm_gemm_tiled": (n.tiled_kernel(16), (a2, u16, a2, a2)),
    "nm_gemm_tiled_sim": (n.tiled_kernel(8), (a2, u16, a2, a2)),
    "nm_gemm_decoded": (n.decoded_kernel(16), (a2, u16, a2, a2)),
    "nm_gemm_decoded_sim": (n.decoded_kernel(8), (a2, u16, a2, a2))})
'''


def test_sparse_kernels_compile_to_ptx(compile_ptx):
    rows = compile_ptx(BODY)
    assert sorted(rows) == ["nm_gemm", "nm_gemm_decoded", "nm_gemm_decoded_sim", "nm_gemm_tiled",
                            "nm_gemm_tiled_sim", "spmm_row", "spmv_row", "spmv_shuffle", "spmv_warp", "spmv_warp_sim"]
    assert rows["nm_gemm_tiled"]["bar"] >= 2  # staged tiles: a barrier before and after the reads
    assert rows["nm_gemm_tiled"]["fma"] >= 8  # the 8 kept values of one metadata word, unrolled
    for v3 in ("nm_gemm_decoded", "nm_gemm_decoded_sim"):  # 32 kept values a row per tile, unrolled, at both tiles
        assert rows[v3]["bar"] >= 2 and rows[v3]["fma"] >= 32, (v3, rows[v3])
    assert rows["spmv_shuffle"]["shfl"] >= 5 and rows["spmv_shuffle"]["bar"] == 0  # registers, no barrier
    assert rows["spmv_warp"]["bar"] >= 2 and rows["spmv_warp"]["shfl"] == 0  # shared memory and barriers
    assert all(r["local"] == 0 for r in rows.values()), rows  # nothing spilled to local memory
