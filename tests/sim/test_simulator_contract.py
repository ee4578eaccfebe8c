"""The CUDA simulator's behaviour that the book relies on, pinned so that a numba-cuda upgrade which changes it
fails here, naming the chapters that would break, rather than somewhere in a notebook.

The book runs every kernel on the CPU through numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``): one Python
thread per CUDA thread, blocks one after another. What it models (indexing, shared and local memory, barriers,
atomics, bounds-checked arrays) and what it does not (warp shuffles, ``numba.cuda.fp16``, grid-wide sync) shape
how the chapters are written: the shuffle variants fall back or refuse, fp16 is emulated with ml_dtypes, the
persistent RNN runs its grid-synchronised variant with one block there. Everything here runs on the simulator
whatever the machine has, in a fresh interpreter.
"""

import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.sim

# Each probe prints one JSON object; run in a fresh interpreter with the simulator forced on.
PROBES = r'''
import json, os
import numpy as np
from numba import cuda
assert cuda.simulator_is_available if hasattr(cuda, "simulator_is_available") else True
res = {}

@cuda.jit
def index2d(out):
    x, y = cuda.grid(2)
    if x < out.shape[0] and y < out.shape[1]:
        out[x, y] = (cuda.blockIdx.x * 1000 + cuda.blockIdx.y * 100 + cuda.threadIdx.x * 10 + cuda.threadIdx.y
                     + 0 * cuda.blockDim.x * cuda.gridDim.y)
o = np.full((5, 3), -1, np.int64); index2d[(3, 2), (2, 2)](o); res["index2d"] = o.tolist()

@cuda.jit
def stride(out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] += 1
o = np.zeros(37, np.int64); stride[2, 4](o); res["stride"] = o.tolist()

@cuda.jit
def shared_reverse(a, out):
    tile = cuda.shared.array(8, dtype=np.float32)
    t = cuda.threadIdx.x
    tile[t] = a[cuda.blockIdx.x * 8 + t]
    cuda.syncthreads()
    out[cuda.blockIdx.x * 8 + t] = tile[7 - t]
a = np.arange(16, dtype=np.float32); o = np.zeros(16, np.float32); shared_reverse[2, 8](a, o)
res["shared"] = o.tolist()

@cuda.jit
def local_sum(a, out):
    acc = cuda.local.array(3, dtype=np.float64)
    for k in range(3):
        acc[k] = a[cuda.grid(1)] * (k + 1)
    out[cuda.grid(1)] = acc[0] + acc[1] + acc[2]
o = np.zeros(5); local_sum[1, 5](np.arange(5.0), o); res["local"] = o.tolist()

@cuda.jit
def histogram(keys, bins, old):
    i = cuda.grid(1)
    if i < keys.size:
        old[i] = cuda.atomic.add(bins, keys[i], 1)
keys = np.array([0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 0], np.int64)
bins = np.zeros(4, np.int64); old = np.full(keys.size, -1, np.int64); histogram[3, 4](keys, bins, old)
res["atomic_bins"] = bins.tolist(); res["atomic_old_per_key"] = sorted(old[keys == 3].tolist())

@cuda.jit
def block_order(out, counter):
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = cuda.atomic.add(counter, 0, 1)
o = np.zeros(6, np.int64); block_order[6, 4](o, np.zeros(1, np.int64)); res["block_order"] = o.tolist()

@cuda.jit
def out_of_bounds(a):
    a[cuda.threadIdx.x] = 1.0
try:
    out_of_bounds[1, 8](np.zeros(4)); res["oob"] = None
except Exception as e:
    res["oob"] = [type(e).__name__, str(e)]

@cuda.jit
def shuffle(out):
    out[cuda.threadIdx.x] = cuda.shfl_down_sync(0xFFFFFFFF, cuda.threadIdx.x, 1)
try:
    shuffle[1, 32](np.zeros(32, np.int64)); res["shfl"] = None
except Exception as e:
    res["shfl"] = [type(e).__name__, str(e)]

try:
    from numba.cuda import fp16
    @cuda.jit
    def hadd(a):
        a[0] = fp16.hadd(a[0], a[1])
    h = np.ones(2, np.float16); hadd[1, 1](h); res["fp16"] = None
except Exception as e:
    res["fp16"] = [type(e).__name__, str(e)]

@cuda.jit
def grid_sync(flag, seen):
    if cuda.blockIdx.x == 1 and cuda.threadIdx.x == 0:
        flag[0] = 1
    cuda.cg.this_grid().sync()
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0:
        seen[0] = flag[0]
seen = np.full(1, -1, np.int64)
try:
    grid_sync[2, 2](np.zeros(1, np.int64), seen); res["grid_sync_seen"] = int(seen[0])
except Exception as e:
    res["grid_sync_seen"] = [type(e).__name__, str(e)]
print(json.dumps(res))
'''


@pytest.fixture(scope="module")
def sim():
    env = {k: v for k, v in os.environ.items() if k != "SCALEDL_BACKEND"} | {"NUMBA_ENABLE_CUDASIM": "1"}
    r = subprocess.run([sys.executable, "-c", PROBES], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_thread_and_block_indexing(sim):
    """Chapters 00 and 04, every kernel: cuda.grid, blockIdx/threadIdx in two dimensions, bounds guard."""
    expected = [[(x // 2) * 1000 + (y // 2) * 100 + (x % 2) * 10 + (y % 2) for y in range(3)] for x in range(5)]
    assert sim["index2d"] == expected, "2-D indexing changed: chapters 00 and 04 and lab 02 would break"


def test_grid_stride_loop_covers_an_array_larger_than_the_grid(sim):
    """Lab 01 task 1.1 and chapter 08: a grid of 8 threads visits 37 elements exactly once each."""
    assert sim["stride"] == [1] * 37, "cuda.gridsize or the grid-stride loop changed: lab 01 and chapter 08"


def test_shared_memory_and_syncthreads_share_a_tile_within_a_block(sim):
    """Chapter 04's tiled GEMM, chapter 08, chapter 18: shared tiles are per block and the barrier holds."""
    assert sim["shared"] == [float(v) for b in (0, 8) for v in range(b + 7, b - 1, -1)], \
        "shared memory or syncthreads changed: the tiled GEMM of chapter 04 / lab 02 would break"


def test_local_arrays_are_private_to_each_thread(sim):
    """Chapters 04 and 06, labs 01 and 02: register blocking with cuda.local.array."""
    assert sim["local"] == [6.0 * i for i in range(5)], "cuda.local.array changed: chapters 04 and 06"


def test_atomic_add_counts_and_returns_the_old_value(sim):
    """Chapter 08's binned log-domain dot product accumulates with cuda.atomic.add."""
    assert sim["atomic_bins"] == [2, 2, 3, 4], "cuda.atomic.add changed: chapter 08's logdot kernels"
    assert sim["atomic_old_per_key"] == [0, 1, 2, 3], "atomic.add must return the value before the add"


def test_blocks_run_one_after_another_in_order(sim):
    """The book's simulator timings and chapter 00's "one block at a time" explanation assume this."""
    assert sim["block_order"] == list(range(6)), "the simulator now runs blocks concurrently or out of order: " \
        "revise chapter 00's explanation and the grid-sync note of chapter 18"


def test_an_out_of_bounds_access_raises_index_error_naming_the_thread(sim):
    """Lab 01 and the labs' checks rely on the simulator catching what a GPU would silently corrupt."""
    name, message = sim["oob"]
    assert name == "IndexError", "out-of-bounds accesses no longer raise IndexError: the labs' bug hints"
    # which offending thread (4 to 7) raises first depends on thread scheduling; it names itself and the index
    assert re.search(r"tid=\[([4-7]), 0, 0\].*index \1 is out of bounds", message), message


def test_warp_shuffles_are_not_simulated(sim):
    """Chapter 08 and the reduction/SpMV shuffle variants refuse on the simulator and say why; if a release adds
    shuffles, enable those variants there (scaledl.kernels.reduce, scaledl.kernels.spmv) and drop this pin."""
    assert sim["shfl"] is not None and sim["shfl"][0] == "AttributeError" and "shfl_down_sync" in sim["shfl"][1]


def test_fp16_intrinsics_are_not_simulated(sim):
    """Chapters 05, 07 and 10 emulate half precision with ml_dtypes because numba.cuda.fp16 has no simulator."""
    assert sim["fp16"] is not None, "numba.cuda.fp16 now works on the simulator: chapters 05/07/10 could use it"


def test_grid_sync_does_not_order_blocks_on_the_simulator(sim):
    """Chapter 18's persistent RNN needs grid-wide sync; on the simulator this_grid().sync() does not wait for
    later blocks (they have not started), so block 0 reads block 1's flag before it is written. That is why
    scaledl.kernels.rnn refuses the grid variant with more than one block on the simulator."""
    assert sim["grid_sync_seen"] == 0, f"grid sync changed on the simulator ({sim['grid_sync_seen']!r}): " \
        "revisit chapter 18 and scaledl.kernels.rnn"
