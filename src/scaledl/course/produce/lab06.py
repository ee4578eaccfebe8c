"""Lab 06 (Deep Gradient Compression): the student's side of the graded tasks.

Tasks 1.2, 2.1 and 2.2 are graded on their own: their produce functions run the student's compressor with the
reference top-k (:func:`scaledl.labs.top_k_spec.spec_top_k`) in place of theirs, so a wrong Task 1.1 costs only
Task 1.1. Task 3.1 runs the student's reducer on compressors whose messages are fixed in advance
(:class:`_Fixed`, :func:`fixed_message`, which the judge replays), so it does not depend on their compressors.
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce import student

REDUCER_STEPS = 2      # reducer calls in Task 3.1: the second shows whether it keeps state it should not
SIZES = [64, 128, 10]  # the lab's digits MLP
DGC = {"task_2_1": (0.75, False), "task_2_2": (0.5, True)}  # (momentum, masking) of DGCCompressor in 2.1, 2.2


# ----------------------------------------------------------------------------------------- Task 1.1
def _top_k_produce(ns, inp):
    f = student(ns, "top_k")
    out = {}
    for i, ks in enumerate(inp["ks"]):
        for j, k in enumerate(ks):
            out[f"got{i}_{j}"] = np.asarray(f(inp[f"v{i}"].copy(), k))
    return out


# ------------------------------------------------------------------------------- Tasks 1.2, 2.1, 2.2
def _run_compressor(ns, inp, make, state):
    """Each case's messages and final ``state`` ({output name: attribute}) with the reference top-k in ns."""
    from scaledl.labs.top_k_spec import spec_top_k  # kept in these tasks' grading run (Task.needs)

    theirs, had = ns.get("top_k"), "top_k" in ns
    ns["top_k"] = spec_top_k  # graded on its own: a wrong Task 1.1 must not cost this task too
    try:
        out = {}
        for c, ratio in enumerate(inp["ratios"]):
            comp = make(ratio)
            for t, g in enumerate(inp[f"grads{c}"]):
                idx, values = comp.compress(g.copy(), "h")
                out[f"idx{c}_{t}"], out[f"val{c}_{t}"] = np.asarray(idx), np.asarray(values)
            for name, attribute in state.items():
                out[f"{name}{c}"] = np.array(getattr(comp, attribute)["h"])
        return out
    finally:
        if had:
            ns["top_k"] = theirs
        else:
            del ns["top_k"]


def _topk_ef_produce(ns, inp):
    cls = student(ns, "TopKEF")
    return _run_compressor(ns, inp, cls, {"residual": "residuals"})


def _dgc_produce(momentum, masking):
    """The produce function of a DGC task: the student's DGCCompressor(ratio, momentum, masking)."""

    def produce(ns, inp):
        cls = student(ns, "DGCCompressor")
        return _run_compressor(ns, inp, lambda r: cls(r, momentum=momentum, masking=masking),
                               {"u": "velocity", "v": "residuals"})

    return produce


# ----------------------------------------------------------------------------------------- Task 3.1
def fixed_message(w: int, stride: int, grad):
    """Worker w's fixed message: the elements w, w + stride, ... of ``grad``, scaled by (w + 2)."""
    flat = np.asarray(grad).ravel()
    idx = np.arange(w % flat.size, flat.size, stride)
    return idx, flat[idx] * np.float32(w + 2)


class _Fixed:
    """A compressor whose messages are fixed in advance (:func:`fixed_message`); it records the keys."""

    def __init__(self, w: int, stride: int = 5):
        self.w, self.stride, self.keys = w, stride, []

    def compress(self, grad, key=""):
        self.keys.append(key)
        return fixed_message(self.w, self.stride, grad)


def _reducer_produce(ns, inp):
    cls = student(ns, "CompressedReducer")
    names, workers = inp["names"], inp["workers"]
    comps = [_Fixed(w, inp["stride"]) for w in range(workers)]
    reducer = cls(comps)
    out = {}
    for step in range(REDUCER_STEPS):
        summed = reducer([{name: inp[f"grad{i}"][w].copy() for i, name in enumerate(names)}
                          for w in range(workers)])
        for i, name in enumerate(names):
            out[f"sum{step}_{i}"] = np.array(summed[name])
    out["keys"] = [list(c.keys) for c in comps]
    out["sent_bytes"], out["dense_bytes"] = list(reducer.sent_bytes), list(reducer.dense_bytes)
    return out


# ----------------------------------------------------------------------------------------- Task 3.2
def _training_produce(ns, inp):
    from scaledl.nn import digits, mlp, train

    reducer_cls, compressor_cls = student(ns, "CompressedReducer"), student(ns, "DGCCompressor")
    ratio, optimizer = student(ns, "ratio"), student(ns, "optimizer")
    reducer = reducer_cls([compressor_cls(ratio) for _ in range(inp["workers"])])
    model = mlp(SIZES, seed=inp["seed"])
    h = train(model, digits(), epochs=inp["epochs"], batch_size=inp["batch"], workers=inp["workers"],
              reducer=reducer, optimizer=optimizer, seed=inp["seed"])
    out = {f"weight {name}": np.array(w) for name, w in model.parameters().items()}
    out["sent_bytes"], out["dense_bytes"] = list(reducer.sent_bytes), list(reducer.dense_bytes)
    out["steps"] = h.steps
    return out


PRODUCE = {"task_1_1": _top_k_produce, "task_1_2": _topk_ef_produce, "task_2_1": _dgc_produce(*DGC["task_2_1"]),
           "task_2_2": _dgc_produce(*DGC["task_2_2"]), "task_3_1": _reducer_produce, "task_3_2": _training_produce}
