"""A mend for numba-cuda's CUDA simulator, applied when scaledl chooses the simulator backend.

The simulator runs each CUDA thread of a block as a Python thread. ``cuda.shared.array`` there
(``FakeCUDAShared.array`` in ``numba.cuda.simulator.kernelapi``, numba-cuda 0.21 to at least 0.30.4) finds the
block's array by the caller's file and line, and creates it when the lookup comes back empty: a lookup, then
``np.empty``, then a store, with no lock. If the interpreter switches threads inside that window (it may, after
any call), a second thread finds nothing too and makes its own array; the block then works on two copies of
its "shared" tile, and each half reads elements the other half wrote elsewhere: a correct kernel gives a wrong
result, now and then. It showed up once as lab 02's solution failing "two identical runs gave different
results" with a 0.5 ms switch interval; tests/sim/test_simfix.py forces the switch and shows both the failure
and the mend.

:func:`install` replaces the method by one that does the same under a lock, at once if the simulator's module
is loaded and otherwise the moment it is imported (an import hook, so ``import scaledl`` does not pay
numba.cuda's import).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import sys
import threading

MODULE = "numba.cuda.simulator.kernelapi"
_MARK = "_scaledl_locked"


def lock_shared_arrays(kernelapi) -> bool:
    """Make ``FakeCUDAShared.array`` of the module ``kernelapi`` atomic; True if this call did it.

    The replacement does what numba-cuda's does, keyed the same way (the calling kernel line's file and line
    number), but finds that line with ``sys._getframe(1)`` rather than by formatting the whole stack, and looks
    up and stores under a lock. A wrapper around the original would not do: the original reads its caller off
    the stack, and would then see the wrapper, so every array would share one key. Dynamic shared memory
    (shape 0) and the alignment error go to the original, which keys nothing."""
    cls = kernelapi.FakeCUDAShared
    if getattr(cls.array, _MARK, False):
        return False
    original = cls.array
    lock = threading.Lock()

    @functools.wraps(original)
    def array(self, shape, dtype, alignment=None):
        if alignment is not None or (not isinstance(shape, tuple) and shape == 0):
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, kernelapi.types.Type):
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = kernelapi.np.empty(shape, dtype)
                self._allocations[caller] = res
        return res

    setattr(array, _MARK, True)
    cls.array = array
    return True


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; when MODULE is about to load, wraps its loader so the lock goes in right after."""

    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)  # once: the real finders locate it, then we are done
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            lock_shared_arrays(module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Lock the simulator's shared-array lookup in this process (now, or when numba loads it)."""
    if MODULE in sys.modules:
        lock_shared_arrays(sys.modules[MODULE])
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
