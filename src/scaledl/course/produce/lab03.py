"""Lab 03 (quantizer and clipping): the student's side of the graded tasks."""

from __future__ import annotations

import numpy as np

from scaledl.course.produce import student

OCTAV_ITERS = 100  # enough for every fixed point here to settle; the student's history is compared at its end


# --- Task 1.1: E4M3 rounding -----------------------------------------------------------------------------------

def _e4m3_produce(ns, inp):
    f = student(ns, "e4m3_round")
    return {"got": np.asarray(f(inp["x"]), np.float32), "sat": np.asarray(f(inp["sat"]), np.float32)}


# --- Task 1.2: E4M3 codes, graded on its own (the library's rounding stands in for the student's 1.1) --------

def _codes_produce(ns, inp):
    from scaledl.numerics import quantize

    f = student(ns, "e4m3_encode")
    missing = object()
    theirs = ns.get("e4m3_round", missing)
    ns["e4m3_round"] = lambda v: quantize(np.asarray(v, np.float32), "e4m3")  # Task 1.2 graded on its own
    try:
        got = np.asarray(f(inp["x"]))
        nan = np.asarray(f(np.array([np.nan], np.float32)))
    finally:
        if theirs is missing:
            ns.pop("e4m3_round", None)
        else:
            ns["e4m3_round"] = theirs
    return {"got": got, "nan": nan}


# --- Task 2.1: OCTAV's fixed point -------------------------------------------------------------------------

def _octav_produce(ns, inp):
    f = student(ns, "octav")
    clip = [[float(np.asarray(f(inp[k], int(b), iters=OCTAV_ITERS), np.float64)[-1]) for b in inp["bits"]]
            for k in ("d0", "d1")]
    return {"clip": np.array(clip, np.float64)}


# --- Task 2.2: SNR, and what OCTAV's clip gains in bits ----------------------------------------------------

def _snr_produce(ns, inp):
    snr, gain = student(ns, "snr_db"), student(ns, "clipping_gain_bits")
    d = inp["d"]
    return {"snr": np.array([float(snr(d, q)) for q in inp["q"]], np.float64),
            "gain": np.array([float(gain(d, int(b))) for b in inp["bits"]], np.float64)}


PRODUCE = {"task_1_1": _e4m3_produce, "task_1_2": _codes_produce, "task_2_1": _octav_produce,
           "task_2_2": _snr_produce}
