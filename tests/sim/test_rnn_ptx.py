"""The RNN kernels compile to sm_90 PTX (see tests/sim/test_ptx_compile.py for why): the standard step, the
single-block persistent kernel at a simulator size and at the largest size one block holds, and the grid
persistent kernel at Seed 001's 1152 hidden units (10 rows of W per block, 116 blocks). The grid kernel must
contain the grid-wide barrier (a cooperative-groups call), the block kernel a block barrier.

``cuda.cg.this_grid()`` is implemented in numba-cuda as an overload that Numba compiles like a device
function, for the compute capability of the *current device*; with no driver there is none, so the body below
tells numba-cuda's dispatcher that the current device is an sm_90 (the target compile_ptx is asked for anyway).
"""

import pytest

pytestmark = pytest.mark.sim

BODY = r'''
import scaledl.kernels.rnn as rnn
import numba.cuda.dispatcher as dispatcher
dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
COUNTS["grid_sync"] = r"cudaCGSynchronize"
COUNTS["tanh"] = r"tanh"
i64 = T.int64
compile_all({
    "rnn_standard": (rnn.rnn_v1_standard, (a2, a3, a3, i64, i64)),
    "rnn_block_sim": (rnn.persistent_block_kernel(13), (a2, a3, a3, i64)),
    "rnn_block_110": (rnn.persistent_block_kernel(110), (a2, a3, a3, i64)),
    "rnn_grid_1152": (rnn.persistent_grid_kernel(rnn.grid_slice_rows(1152), 1152), (a2, a3, a3, i64)),
    "rnn_grid_sim": (rnn.persistent_grid_kernel(13, 13), (a2, a3, a3, i64))})
'''


def test_rnn_kernels_compile_to_ptx(compile_ptx):
    rows = compile_ptx(BODY)
    assert len(rows) == 5, rows
    assert rows["rnn_grid_1152"]["grid_sync"] >= 1 and rows["rnn_grid_sim"]["grid_sync"] >= 1
    assert rows["rnn_standard"]["grid_sync"] == 0 and rows["rnn_block_110"]["grid_sync"] == 0
    assert rows["rnn_block_sim"]["bar"] >= 2 and rows["rnn_block_110"]["bar"] >= 2  # after the load, per step
    assert all(r["local"] == 0 for r in rows.values()), rows  # nothing spilled to local memory
