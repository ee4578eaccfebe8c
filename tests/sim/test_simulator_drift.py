"""numba-cuda's simulator as the book relies on it: a named failure when a release changes it (see
tests/unit/test_dependency_drift.py for the idea and for how to accept a new behaviour)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import scaledl.device  # noqa: F401  (the backend decision before numba.cuda is imported)
from numba import cuda

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared tests/drift.py
from drift import check_known, digest  # noqa: E402

pytestmark = pytest.mark.sim

KNOWN = {"numba-cuda 0.21.1 to 0.30.4": "39eb36c717c373b6"}


@cuda.jit
def block_sums(x, out, total):
    tile = cuda.shared.array(8, np.float32)
    i = cuda.threadIdx.x
    acc = np.float32(0)
    j = cuda.grid(1)
    while j < x.size:  # grid-stride
        acc += x[j]
        j += cuda.gridsize(1)
    tile[i] = acc
    cuda.syncthreads()
    step = 4
    while step > 0:  # a tree in shared memory, a barrier per level
        if i < step:
            tile[i] += tile[i + step]
        cuda.syncthreads()
        step //= 2
    if i == 0:
        out[cuda.blockIdx.x] = tile[0]
        cuda.atomic.add(total, 0, tile[0])


def probe():
    """A block-shared tile, barriers, an atomic and a grid-stride loop, and whether scaledl._simfix's mend is in
    place (it keys on the simulator's internals: a release that renames them must fail here, not race quietly)."""
    from numba.cuda.simulator import kernelapi

    x = (np.arange(37, dtype=np.float32) - 11) / np.float32(4)
    out, total = np.full(3, np.nan, np.float32), np.zeros(1, np.float32)
    block_sums[3, 8](x, out, total)
    mended = bool(getattr(kernelapi.FakeCUDAShared.array, "_scaledl_locked", False))
    return digest(out, total, np.array([mended])), {"block sums": out.tolist(), "simfix applied": mended}


def test_the_simulator_behaves_as_the_book_relies_on():
    if scaledl.device.backend() != "simulator":
        pytest.skip("not on the simulator backend: tests/gpu checks the kernels on the GPU")
    got, sample = probe()
    check_known("numba-cuda", "a simulator kernel (shared tile, barriers, atomics, grid-stride) and the _simfix "
                "mend", got, sample, "every kernel chapter (03, 04, 07, 12, 18) and lab (02, 04) on the simulator",
                KNOWN, where="KNOWN in tests/sim/test_simulator_drift.py")
