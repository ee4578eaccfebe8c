"""Lab 01 (roofline your device): the student's side of the graded tasks.

Tasks 1.1-1.3 are CUDA kernels: each produce function launches the student's kernel the way the notebook does
(their factory, their ``stream_grid`` or ``THREADS``) into an output poisoned with NaN and followed by a NaN
guard region, :data:`RUNS` times per size, and hands back the whole buffer for the judge
(:func:`scaledl.course.tasks.lab01.judge_kernel_runs`) to read. The launch helpers
(:func:`device_inputs`, :func:`poisoned_launch`, :func:`produce_runs`) are shared with labs 02 and 04.
"""

from __future__ import annotations

import contextlib

import numpy as np

from scaledl.course.produce import student

GUARD_ELEMENTS = 4096  # NaN after every output: a GPU store past its end lands here (the simulator raises)
RUNS = 2               # launches per size: two identical runs that disagree reveal a race
MAX_FINDINGS = 20      # sanitizer findings handed back per size (the judge reads no more)
MAX_MESSAGE = 600      # characters of each (the sanitizer's are 200 to 400)
VARIANTS = ("naive", "tiled")  # Task 1.4's GEMM kernels


# --- shared by the kernel tasks of lab 01 and lab 02 ------------------------------------------------------------

def device_inputs(*arrays):
    """Copies of ``arrays`` where the kernel can read them: on a GPU on the device (no implicit transfer per
    launch, which Numba warns about), on the simulator in host memory. A copy, so that a kernel writing into
    its inputs cannot change what a local judge compares with."""
    from scaledl import device

    if not device.on_gpu():
        return tuple(np.array(a, copy=True) for a in arrays)
    cuda = device.cuda()
    return tuple(cuda.to_device(np.ascontiguousarray(a)) for a in arrays)


def poisoned_launch(launch, shape, dtype=np.float32) -> np.ndarray:
    """Call ``launch(out)`` on a NaN-filled ``out`` of ``shape``; return the flat host buffer: ``out``, then
    :data:`GUARD_ELEMENTS` more NaN. ``out`` is a view of the buffer's head, so on the simulator a store past
    its end raises IndexError and on a GPU it changes the guard."""
    from scaledl import device

    n = int(np.prod(shape))
    buf = np.full(n + GUARD_ELEMENTS, np.nan, dtype)
    if device.on_gpu():
        dbuf = device.cuda().to_device(buf)
        launch(dbuf[:n].reshape(shape))
        return dbuf.copy_to_host()
    launch(buf[:n].reshape(shape))
    return buf


def produce_runs(launch, shape, key: str) -> dict:
    """``RUNS`` poisoned launches as ``{key_0: buffer, key_1: ...}``, or ``{key_error: message}`` when the
    kernel indexed outside an array (an IndexError: no bounds guard).

    On the simulator the launches run under :func:`scaledl.kernels.sanitizer.sanitize`, and ``key_findings``
    lists what it found as plain data, ``{"kind": ..., "message": ...}`` (at most :data:`MAX_FINDINGS`, each
    message cut to :data:`MAX_MESSAGE` characters); a launch it stopped at a barrier some threads never
    reach (``KernelDeadlock``) hands back the findings alone. The judge decides with them and the buffers
    (:func:`scaledl.labs.kernel_verdict.kernel_verdict`)."""
    from scaledl import device

    watch, deadlock = None, ()
    if device.backend() == "simulator":
        from scaledl.kernels.sanitizer import KernelDeadlock, sanitize

        watch, deadlock = sanitize(), (KernelDeadlock,)
    report = None
    out = {}
    try:
        with watch if watch is not None else contextlib.nullcontext() as report:
            for r in range(RUNS):
                out[f"{key}_{r}"] = poisoned_launch(launch, shape)
    except IndexError as err:
        return {f"{key}_error": f"IndexError: {err}"[:300]}
    except deadlock:
        out = {}  # the launch was stopped half-way: its buffers say nothing
    if report is not None:
        out[f"{key}_findings"] = [{"kind": str(f.kind), "message": str(f)[:MAX_MESSAGE]}
                                  for f in report.findings[:MAX_FINDINGS]]
    return out


def plain_number(x):
    """``x`` as a number the exchange can carry (ints stay exact), or its repr when it is not a number, so the
    judge can show what came back."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    try:
        return float(x)
    except (TypeError, ValueError, OverflowError):
        return repr(x)[:80]


# --- Task 1.1: copy with a grid-stride loop ----------------------------------------------------------------------

def _copy_produce(ns, inp):
    k, grid = student(ns, "make_copy_kernel")(), student(ns, "stream_grid")
    out = {}
    for i in range(inp["cases"]):
        src, = device_inputs(inp[f"src{i}"])
        n = inp[f"src{i}"].size
        out.update(produce_runs(lambda dst: k[grid(n)](dst, src), (n,), f"dst{i}"))
    return out


# --- Task 1.2: triad ----------------------------------------------------------------------------------------------

def _triad_produce(ns, inp):
    k, grid, s = student(ns, "make_triad_kernel")(), student(ns, "stream_grid"), np.float32(inp["s"])
    out = {}
    for i in range(inp["cases"]):
        b, c = device_inputs(inp[f"b{i}"], inp[f"c{i}"])
        n = inp[f"b{i}"].size
        out.update(produce_runs(lambda a: k[grid(n)](a, b, c, s), (n,), f"a{i}"))
    return out


# --- Task 1.3: FMA throughput -------------------------------------------------------------------------------------

def _fma_produce(ns, inp):
    threads = student(ns, "THREADS")
    k = student(ns, "make_fma_kernel")(int(inp["chains"]))
    out = {}
    for i, (n, n_iter, x0, c) in enumerate(inp["cases"]):
        launch = lambda o: k[(n + threads - 1) // threads, threads](o, np.int32(n_iter), np.float32(x0),
                                                                    np.float32(1), np.float32(c))
        out.update(produce_runs(launch, (n,), f"out{i}"))
    return out


# --- Task 1.4: arithmetic intensity of the GEMM kernels ----------------------------------------------------------

def _intensity_produce(ns, inp):
    f = student(ns, "gemm_intensity")
    return {v: [plain_number(f(M, N, K, v, tile=tile)) for M, N, K, tile in inp["cases"]] for v in VARIANTS}


PRODUCE = {"task_1_1": _copy_produce, "task_1_2": _triad_produce, "task_1_3": _fma_produce,
           "task_1_4": _intensity_produce}
