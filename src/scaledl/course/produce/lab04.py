"""Lab 04 (prune and 2:4-sparsify): the student's side of the graded tasks.

Each produce function runs the student's function on copies of the drawn weights (a function that writes into
its input cannot change what the judge compares with); the SpMV kernel is launched into a NaN-poisoned ``y``
followed by :data:`GUARD` more NaN, twice.
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce import student

GUARD = 64  # poisoned elements after y on a GPU: a store there means a thread without its row guard


def case_indices(inp) -> range:
    """The indices of the cases in ``inp`` (one label each)."""
    return range(len(inp["label"]))


# ----------------------------------------------------------------------- Tasks 1.1-1.3: masks and compression
def _prune_produce(ns, inp):
    f = student(ns, "prune_magnitude")
    return {f"mask{i}": np.asarray(f(inp[f"w{i}"].copy(), inp["sparsity"][i])) for i in case_indices(inp)}


def _nm_produce(ns, inp):
    f = student(ns, "mask_24")
    return {f"mask{i}": np.asarray(f(inp[f"w{i}"].copy(), inp["axis"][i])) for i in case_indices(inp)}


def _compress_produce(ns, inp):
    f = student(ns, "compress_24")
    out = {}
    for i in case_indices(inp):
        values, metadata = f(inp[f"w{i}"].copy())
        out[f"values{i}"], out[f"metadata{i}"] = np.asarray(values), np.asarray(metadata)
    return out


# ----------------------------------------------------------------------------- Task 2.1: CSR SpMV
def _launch_poisoned(launch, args, rows):
    """y after ``launch(*args, y)`` into NaN, followed by GUARD elements that only a stray store changes."""
    from scaledl import device

    if device.on_gpu():
        cuda = device.cuda()
        buf = cuda.to_device(np.full(rows + GUARD, np.nan, np.float32))
        launch(*(cuda.to_device(a) for a in args), buf[:rows])
        cuda.synchronize()
        return buf.copy_to_host()
    y = np.full(rows, np.nan, np.float32)  # the simulator raises IndexError on a store past the end
    launch(*args, y)
    return np.concatenate([y, np.full(GUARD, np.nan, np.float32)])


def _spmv_produce(ns, inp):
    """Two poisoned runs of the student's launch per case (results that differ reveal a race); on the simulator
    both run under :func:`scaledl.kernels.sanitizer.sanitize`, as the notebook's ``check_spmv`` does, and
    ``findings{i}`` lists what it found as plain data (at most MAX_FINDINGS, each message cut to MAX_MESSAGE
    characters). A launch it stopped at a barrier some threads never reach hands back the findings alone."""
    import contextlib

    from scaledl import device
    from scaledl.course.produce.lab01 import MAX_FINDINGS, MAX_MESSAGE

    launch = student(ns, "spmv_launch")
    out = {}
    for i in case_indices(inp):
        args = tuple(inp[f"{name}{i}"] for name in ("indptr", "indices", "data", "x"))
        watch, deadlock = contextlib.nullcontext(), ()
        if device.backend() == "simulator":
            from scaledl.kernels.sanitizer import KernelDeadlock, sanitize

            watch, deadlock = sanitize(), (KernelDeadlock,)
        report = None
        try:
            with watch as report:
                out[f"y{i}"] = np.stack([_launch_poisoned(launch, args, args[0].size - 1) for _ in range(2)])
        except IndexError as err:
            out[f"error{i}"] = f"IndexError: {err}"[:200]
        except deadlock:
            out.pop(f"y{i}", None)  # stopped half-way: its buffers say nothing
        if report is not None:
            out[f"findings{i}"] = [{"kind": str(f.kind), "message": str(f)[:MAX_MESSAGE]}
                                   for f in report.findings[:MAX_FINDINGS]]
    return out


# ------------------------------------------------------------------- Tasks 3.1 and 3.2: the networks
def _network_produce(name, function):
    """The network the notebook made with the student's ``function`` (its check cell binds ``name``); made here
    from the notebook's ``dense`` and ``data`` where the check cell did not run (the grader does not run the
    lab's check cells)."""
    def produce(ns, inp):
        model = ns[name] if name in ns else student(ns, function)(student(ns, "dense"), student(ns, "data"))
        return {k: np.array(v) for k, v in model.parameters().items()}
    return produce


PRODUCE = {"task_1_1": _prune_produce, "task_1_2": _nm_produce, "task_1_3": _compress_produce,
           "task_2_1": _spmv_produce, "task_3_1": _network_produce("pruned", "prune_mlp"),
           "task_3_2": _network_produce("sparse24", "sparsify_24")}
