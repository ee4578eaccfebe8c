"""Lab 07 (batch dispatch): the student's side of the graded tasks.

The student's policies run in the library's event loop (:func:`run_at_load`, which the judge also runs with
the reference policy); a policy's answers come back as ints, or as the repr of whatever else it returned.
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce import student


def is_int(v) -> bool:
    """True for a Python int that is not a bool (what a policy must answer)."""
    return isinstance(v, int) and not isinstance(v, bool)


def _answer(v):
    """A policy's answer as plain data: an int stays an int, anything else is kept as its repr to show."""
    if isinstance(v, np.integer):
        v = int(v)
    return v if is_int(v) else repr(v)[:60]


def run_at_load(policy, load: dict, inp: dict):
    """``policy`` served by the event loop at ``load`` (rate, service a_s + c_s b, max_batch) on ``inp``'s
    arrivals."""
    from scaledl.serve.hook import run_policy
    from scaledl.serve.service import linear

    return run_policy(policy, rate=load["rate"], service=linear(load["a_s"], load["c_s"]),
                      n_requests=inp["n_requests"], max_batch=load["max_batch"], seed=inp["seed"])


# --- Task 1.1: the batch-dispatch policy -------------------------------------------------------------------

def _dispatch_produce(ns, inp):
    f = student(ns, "batch_dispatch")
    out = {"table": [_answer(f(w, busy, mb)) for w, busy, mb in inp["table"]]}
    for i, load in enumerate(inp["loads"]):
        try:
            r = run_at_load(f, load, inp)
        except (TypeError, ValueError) as e:  # the event loop refusing a policy's answer: shown by the judge
            out[f"error_{i}"] = f"{type(e).__name__}: {e}"
            continue
        out[f"batch_size_{i}"] = r.batch_size
        out[f"overlapping_{i}"] = r.overlapping
        out[f"unserved_{i}"] = r.unserved
    return out


# --- Task 1.2: the M/D/1 wait and the one-at-a-time policy -------------------------------------------------

def _md1_produce(ns, inp):
    wait, one = student(ns, "md1_wait"), student(ns, "one_at_a_time")
    return {"wait": np.array([float(wait(r, s)) for r, s in inp["cases"]], np.float64),
            "table": [_answer(one(w, busy, mb)) for w, busy, mb in inp["table"]]}


# --- Task 2.1: the eager batcher's steady-state batch ------------------------------------------------------

def _steady_produce(ns, inp):
    f = student(ns, "steady_batch")
    return {"batch": np.array([float(f(r, a, c)) for r, a, c in inp["cases"]], np.float64)}


# --- Task 3.1: users at a latency objective, graded with the library's own policy ---------------------------

def _users_produce(ns, inp):
    from scaledl.serve.policy_specs import batch_dispatch_spec  # kept in this task's grading run (Task.needs)
    from scaledl.serve.service import linear

    f = student(ns, "max_users")
    service = linear(inp["a_s"], inp["c_s"])
    return {"users": np.array([float(f(batch_dispatch_spec, service, slo, inp["max_batch"])) for slo in inp["slos_s"]],
                              np.float64)}


PRODUCE = {"task_1_1": _dispatch_produce, "task_1_2": _md1_produce, "task_2_1": _steady_produce,
           "task_3_1": _users_produce}
