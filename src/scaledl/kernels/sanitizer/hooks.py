"""``sanitize()``: the simulator's launch, block, thread, barrier, shared-array and atomic entry points,
replaced for the duration of a ``with`` block and put back after it."""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

import scaledl.device
from scaledl._args import positive
from scaledl.kernels.sanitizer.arrays import Watched
from scaledl.kernels.sanitizer.launch import Launch
from scaledl.kernels.sanitizer.report import Report
from scaledl.kernels.sanitizer.stall import KernelDeadlock, watch_block

# Default stall limit: no barrier reached or passed and no thread finished, while some thread waits (see stall).
# Far beyond any serial stretch of a kernel at simulator sizes, and short: a spinning thread logs every read.
STALL_s = 3.0

_MISSING = object()


class SanitizerUnavailable(RuntimeError):
    """sanitize() was asked for where kernels do not run on Numba's CUDA simulator."""


class _State:
    """What the replaced entry points share: the report and the launch now running (one at a time)."""

    def __init__(self, report: Report, stall_s: float):
        self.report = report
        self.stall_s = stall_s
        self.launch: Launch | None = None


_active: _State | None = None


def _require_simulator() -> None:
    backend = scaledl.device.backend()
    if backend != "simulator":
        raise SanitizerUnavailable(
            f"sanitize() watches kernels run on Numba's CUDA simulator, but this process runs them on the "
            f"{backend!r} backend ({scaledl.device.reason()}), whose threads Python cannot see; on a GPU use "
            "NVIDIA's compute-sanitizer (--tool racecheck, synccheck, initcheck, memcheck), or run this process "
            "with SCALEDL_BACKEND=simulator")


@contextlib.contextmanager
def sanitize(*, stall_s: float = STALL_s):
    """Watch every kernel launched on the simulator inside the ``with`` block; yields the :class:`Report`.

    Args:
        stall_s: how long a block may make no progress while some of its threads wait at a barrier before
            it is reported as a deadlock and stopped (the launch then raises :class:`KernelDeadlock`).

    Raises:
        SanitizerUnavailable: the backend is not the simulator (on a GPU: use compute-sanitizer).
        RuntimeError: sanitize() is already on (it does not nest).
        ValueError, TypeError: ``stall_s`` is not a positive number."""
    global _active
    stall_s = positive("stall_s", stall_s)
    _require_simulator()
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi

    if _active is not None:
        raise RuntimeError("sanitize() is already on in this process; it does not nest")
    state = _State(Report(), stall_s)
    saved = []
    try:
        for owner, name, new in _replacements(state, sim_kernel, kernelapi):
            saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
            setattr(owner, name, new)
        _active = state
        yield state.report
    finally:
        _active = None
        for owner, name, old in reversed(saved):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)


def _replacements(state: _State, sim_kernel, kernelapi):
    """``(owner, attribute, replacement)`` for each entry point the sanitizer takes over."""
    # The names the simulator's launch itself tests against, taken from its module: ArgHint moved from
    # numba.cuda.args to numba.cuda.simulator.args after numba-cuda 0.21 (the floor), and kernel.py has it either way.
    ArgHint, FakeCUDAArray = sim_kernel.ArgHint, sim_kernel.FakeCUDAArray
    Kernel, Manager, Thread = sim_kernel.FakeCUDAKernel, sim_kernel.BlockManager, sim_kernel.BlockThread
    call, block_run, thread_run, sync = Kernel.__call__, Manager.run, Thread.run, Thread.syncthreads
    plain_wrapper = sim_kernel.FakeWithinKernelCUDAArray
    shared_array = kernelapi.FakeCUDAShared.array
    sim_dir = os.path.dirname(sim_kernel.__file__)

    def becomes_array(arg) -> bool:  # what FakeCUDAKernel.__call__ hands the kernel as a device array
        return (isinstance(arg, np.ndarray) and arg.ndim > 0) or isinstance(arg, (ArgHint, np.void, FakeCUDAArray))

    def launch_kernel(kernel, *args):
        if kernel._device or sim_kernel._kernel_context is not None:  # a device function, or a nested call
            return call(kernel, *args)
        state.launch = launch = Launch(state.report, kernel, args, becomes_array, sim_dir)
        completed = False
        try:
            result = call(kernel, *args)
            completed = True
            return result
        except KernelDeadlock:
            if launch.deadlocked is None:
                raise
            raise KernelDeadlock(launch.deadlocked) from None
        finally:
            state.launch = None
            launch.end(completed)

    def wrap_argument(fake):
        launch = state.launch
        return plain_wrapper(fake) if launch is None else launch.wrap_global(fake, plain_wrapper)

    def run_block(manager, grid_point, *args):
        launch = state.launch
        if launch is None:
            return block_run(manager, grid_point, *args)
        launch.begin_block()
        completed = False
        try:
            with watch_block(launch, state.stall_s):
                block_run(manager, grid_point, *args)
            completed = True
        finally:
            launch.end_block(completed)

    def run_thread(thread):
        launch = state.launch
        if launch is None:
            return thread_run(thread)
        launch.register(thread)
        try:
            thread_run(thread)
        finally:
            launch.progress += 1

    def syncthreads(thread):
        launch = state.launch
        if launch is None:
            return sync(thread)
        thread._sz_sites.append(launch.site(sys._getframe(1)))
        launch.progress += 1
        sync(thread)
        launch.progress += 1
        thread._sz_epoch += 1
        return None

    def shared(shared_self, shape, dtype, alignment=None):
        launch = state.launch
        if launch is None:
            return shared_array(shared_self, shape, dtype, alignment)
        frame = sys._getframe(1)
        if alignment is not None or (not isinstance(shape, tuple) and shape == 0):
            raw = shared_array(shared_self, shape, dtype, alignment)  # dynamic shared memory, or the refusal
            key = ("dynamic", raw.dtype.str)  # one root per dtype: views of one buffer in two dtypes alias
        else:
            raw, key = None, (frame.f_code.co_filename, frame.f_lineno)  # the simulator's key: the calling line
        with launch.shared_lock:  # as scaledl._simfix: one array per line, however the threads interleave
            watched = launch.shared.get(key)
            if watched is None:
                if raw is None:
                    if isinstance(dtype, kernelapi.types.Type):
                        dtype = kernelapi.numpy_support.as_dtype(dtype)
                    raw = shared_self._allocations[key] = np.empty(shape, dtype)
                watched = launch.shared[key] = launch.wrap_shared(raw, frame)
        return watched

    yield Kernel, "__call__", launch_kernel
    yield sim_kernel, "FakeWithinKernelCUDAArray", wrap_argument
    yield Manager, "run", run_block
    yield Thread, "run", run_thread
    yield Thread, "syncthreads", syncthreads
    yield kernelapi.FakeCUDAShared, "array", shared
    atomic = kernelapi.FakeCUDAAtomic
    for name, method in list(vars(atomic).items()):
        if callable(method) and not name.startswith("_"):
            yield atomic, name, _atomic(method, indexed=name != "compare_and_swap")


def _atomic(method, indexed: bool):
    """``cuda.atomic.<op>`` that logs its element of a watched array, then updates the raw array."""

    def update(atomic_self, array, *rest):
        if isinstance(array, Watched):
            index = rest[0] if indexed else (0,) * array._ndim
            raw = array.atomic(index, sys._getframe(1))
            if raw is None:  # out of bounds: reported, not performed
                return array._zero
            array = raw
        return method(atomic_self, array, *rest)

    update.__name__ = method.__name__
    return update
