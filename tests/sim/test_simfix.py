"""scaledl._simfix: numba-cuda's simulator can split a block's shared array in two when the interpreter switches
threads inside ``FakeCUDAShared.array``; scaledl locks it. Each case runs in a fresh interpreter and forces
the switch (``np.empty`` as the simulator's module sees it sleeps 1 ms, as a preemption there would)."""

import json

import pytest

pytestmark = pytest.mark.sim

KERNEL = r'''
import json, sys, time
import numpy as np
from numba import cuda, int32
from numba.cuda.simulator import kernelapi

real_empty = np.empty


class SwitchInEmpty:
    """numpy as kernelapi sees it, but empty() gives the GIL away, as a thread switch at that point would."""

    def __getattr__(self, name):
        return getattr(np, name)

    def empty(self, *args, **kwargs):
        time.sleep(0.001)
        return real_empty(*args, **kwargs)


kernelapi.np = SwitchInEmpty()


@cuda.jit
def rotate(out):
    s = cuda.shared.array(32, int32)
    r = cuda.shared.array(32, int32)  # a second array: it must not alias the first
    t = cuda.threadIdx.x
    s[t] = t + 1
    r[t] = 100 * (t + 1)
    cuda.syncthreads()
    out[cuda.blockIdx.x, t] = s[(t + 1) % 32] + r[(t + 2) % 32]  # neighbours' elements: wrong if split


t = np.arange(32)
want = np.tile((t + 1) % 32 + 1 + 100 * ((t + 2) % 32 + 1), (2, 1))
wrong = 0
for _ in range(LAUNCHES):
    out = np.zeros((2, 32), np.int32)
    rotate[2, 32](out)
    wrong += int(not np.array_equal(out, want))
print(json.dumps({"wrong": wrong, "locked": bool(getattr(kernelapi.FakeCUDAShared.array, "_scaledl_locked", False))}))
'''


def _run(python, prelude: str, launches: int, env: dict) -> dict:
    r = python(prelude + KERNEL.replace("LAUNCHES", str(launches)), env_extra=env)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_without_the_mend_a_forced_switch_splits_the_shared_array(python):
    """The upstream bug, pinned: when numba-cuda fixes it, this fails and scaledl._simfix can go."""
    res = _run(python, "", 20, {"NUMBA_ENABLE_CUDASIM": "1"})
    assert not res["locked"] and res["wrong"] >= 1, res


def test_scaledl_imported_first_locks_the_lookup(python):
    res = _run(python, "import scaledl\n", 20, {"SCALEDL_BACKEND": "simulator"})
    assert res == {"wrong": 0, "locked": True}


def test_scaledl_imported_after_numba_cuda_still_locks_it(python):
    prelude = "from numba import cuda as _c\nimport scaledl\n"
    res = _run(python, prelude, 5, {"SCALEDL_BACKEND": "simulator", "NUMBA_ENABLE_CUDASIM": "1"})
    assert res == {"wrong": 0, "locked": True}


def test_the_mended_lookup_keys_by_the_calling_line_and_wraps_once():
    import numpy as np

    from scaledl import _simfix

    class FakeCUDAShared:
        def __init__(self):
            self._allocations = {}

        def array(self, shape, dtype, alignment=None):  # the original: only dynamic memory reaches it here
            return ("original", shape)

    class Types:
        class Type:
            pass

    module = type("kernelapi", (), {"FakeCUDAShared": FakeCUDAShared, "types": Types, "np": np,
                                    "numpy_support": type("ns", (), {"as_dtype": staticmethod(np.dtype)})})
    assert _simfix.lock_shared_arrays(module) is True
    assert _simfix.lock_shared_arrays(module) is False  # once
    shared = FakeCUDAShared()

    def two_lines():
        a = shared.array(3, np.float32)
        b = shared.array(3, np.float32)
        return a, b

    a1, b1 = two_lines()
    a2, b2 = two_lines()
    assert a1 is a2 and b1 is b2 and a1 is not b1  # one array per line of the kernel, whoever calls it
    assert a1.dtype == np.float32 and a1.shape == (3,)
    assert shared.array(0, np.float32) == ("original", 0)  # dynamic shared memory: numba-cuda's own
