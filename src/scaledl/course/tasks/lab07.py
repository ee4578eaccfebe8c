"""Lab 07 (batch dispatch): the graded tasks, split into inputs, production and judgement.

The student's policies run in the event loop of :mod:`scaledl.course.produce.lab07`; the judges run the
library's reference policies (:mod:`scaledl.serve.policy_specs`) on the same arrivals here.
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce.lab07 import PRODUCE, is_int, run_at_load
from scaledl.course.tasks import Task, array, number
from scaledl.labs.hints import hint, with_hints

N_POLICY_REQUESTS = 3000   # per load in Task 1.1: the plain-Python event loop serves them in milliseconds
N_SLO_REQUESTS = 20_000    # per simulation in Task 3.1, as the lab's own max_users uses (judge: well under 5 s)


def _int_list(out: dict, key: str, n: int, title: str) -> list:
    """``outputs[key]`` as a list of ``n`` policy answers (anything that is not an int stays, to be shown)."""
    if key not in out:
        raise AssertionError(f"{title}: no result {key!r} came back (did the function raise?)")
    got = out[key]
    if isinstance(got, np.ndarray):
        got = got.tolist() if got.dtype.kind in "iu" and got.ndim == 1 else None
    if not isinstance(got, list) or len(got) != n:
        raise AssertionError(f"{title}: {key} is not a list of {n} answers")
    return got


def _policy_table(rng, n: int, max_batches) -> list:
    """(waiting, busy, max_batch) triples: empty queue, fewer than, exactly and more than max_batch waiting."""
    rows = []
    for _ in range(n):
        mb = int(rng.choice(max_batches))
        w = int(rng.choice([0, 1, mb - 1, mb, mb + 1, int(rng.integers(0, 3 * mb + 3))]))
        rows.append([max(w, 0), bool(rng.random() < 0.3), mb])
    return rows


def _table_judge(name: str, spec, rows, got, title: str) -> None:
    from scaledl.labs.batch_checks import policy_hint

    for (w, busy, mb), g in zip(rows, got):
        want = spec(w, busy, mb)
        if not (is_int(g) and g == want):
            raise AssertionError(with_hints(f"{title}: {name}({w}, {busy}, {mb}): Yours {g!r}, Spec {want}",
                                            [policy_hint(w, busy, mb, g, want)]))


# --- Task 1.1: the batch-dispatch policy -------------------------------------------------------------------

def _dispatch_inputs(rng):
    u = rng.uniform
    # Light load (mostly batches of one: a policy that waits for full batches stalls), moderate load, overload
    # where the cap binds on almost every batch (an off-by-one cap shows), and max_batch=1. Odd caps on purpose.
    loads = [dict(rate=u(30, 80), a_s=0.002, c_s=0.0005, max_batch=int(rng.choice([5, 7, 9]))),
             dict(rate=u(800, 1200), a_s=0.004, c_s=0.0004, max_batch=int(rng.choice([11, 13, 15]))),
             dict(rate=u(2500, 3500), a_s=0.002, c_s=0.0005, max_batch=int(rng.choice([3, 5, 7]))),
             dict(rate=u(200, 400), a_s=0.002, c_s=0.0005, max_batch=1)]
    loads = [{k: (float(v) if k != "max_batch" else v) for k, v in c.items()} for c in loads]
    return {"loads": loads, "seed": int(rng.integers(2**31)),
            "n_requests": int(rng.integers(N_POLICY_REQUESTS - 500, N_POLICY_REQUESTS + 500)),
            "table": _policy_table(rng, 40, [1, 2, 5, 8, 13])}


def _dispatch_judge(inp, out):
    from scaledl.serve.hook import batch_dispatch_spec

    t = "Task 1.1"
    rows = inp["table"]
    _table_judge("batch_dispatch", batch_dispatch_spec, rows, _int_list(out, "table", len(rows), t), t)
    for i, load in enumerate(inp["loads"]):
        case = f"{t}: rate {load['rate']:.0f} req/s, max_batch={load['max_batch']}"
        if isinstance(out.get(f"error_{i}"), str):
            raise AssertionError(f"{case}: {out[f'error_{i}']:.300}")
        want = run_at_load(batch_dispatch_spec, load, inp).batch_size
        got = array(out, f"batch_size_{i}", dtype="iu", title=case)
        if got.ndim != 1:
            raise AssertionError(f"{case}: batch sizes have shape {got.shape}; expected a list of batches")
        overlapping = number(out, f"overlapping_{i}", title=case)
        if overlapping != 0:
            raise AssertionError(with_hints(f"{case}: {overlapping:.0f} batches started while another was running",
                                            [hint("lab07", "busy")]))
        if got.size and got.max() > load["max_batch"]:
            raise AssertionError(with_hints(f"{case}: a batch of {int(got.max())} > max_batch={load['max_batch']}",
                                            [hint("lab07", "cap")]))
        unserved = number(out, f"unserved_{i}", title=case)
        if unserved != 0:
            raise AssertionError(with_hints(f"{case}: {unserved:.0f} requests never served",
                                            [hint("lab07", "partial")]))
        m = min(got.size, want.size)
        diff = np.flatnonzero(got[:m] != want[:m])
        first = int(diff[0]) if diff.size else (m if got.size != want.size else None)
        if first is not None:
            yours = int(got[first]) if first < got.size else "none"
            spec = int(want[first]) if first < want.size else "none"
            short = got.size and int(got.max()) == load["max_batch"] - 1 and int(want.max()) == load["max_batch"]
            raise AssertionError(with_hints(f"{case}: the first different batch is number {first}: Yours {yours}, "
                                            f"Spec {spec}", [hint("lab07", "cap_short")] if short else []))


# --- Task 1.2: the M/D/1 wait and the one-at-a-time policy -------------------------------------------------

def _md1_inputs(rng):
    cases = []
    while len(cases) < 5:
        r, s = float(rng.uniform(10, 400)), float(rng.uniform(1e-4, 2e-3))
        if r * s < 0.95:  # a steady state exists
            cases.append([r, s])
    rows = [[w, bool(busy), 1] for w in range(6) for busy in (False, True)]
    return {"cases": cases, "table": [rows[i] for i in rng.permutation(len(rows))]}


def _md1_judge(inp, out):
    from scaledl.serve import md1_mean_wait_s
    from scaledl.serve.hook import single_spec

    t = "Task 1.2"
    got = array(out, "wait", shape=(len(inp["cases"]),), dtype="f", title=t).astype(np.float64)
    for (r, s), g in zip(inp["cases"], got):
        want = md1_mean_wait_s(r, s)
        if not np.isclose(g, want, rtol=1e-12, atol=0):
            raise AssertionError(with_hints(f"{t}: md1_wait({r!r}, {s!r}): Yours {g!r}, Spec {want!r}",
                                            [hint("lab07", "md1_wait")]))
    rows = inp["table"]
    _table_judge("one_at_a_time", single_spec, rows, _int_list(out, "table", len(rows), t), t)


# --- Task 2.1: the eager batcher's steady-state batch ------------------------------------------------------

def _steady_inputs(rng):
    cases = []
    while len(cases) < 6:
        r, a, c = float(rng.uniform(10, 3000)), float(rng.uniform(1e-3, 2e-2)), float(rng.uniform(1e-5, 3e-4))
        if r * c < 0.9:  # batches stay finite
            cases.append([r, a, c])
    return {"cases": cases}


def _steady_judge(inp, out):
    from scaledl.serve import eager_steady_batch

    t = "Task 2.1"
    got = array(out, "batch", shape=(len(inp["cases"]),), dtype="f", title=t).astype(np.float64)
    for (r, a, c), g in zip(inp["cases"], got):
        want = eager_steady_batch(r, a, c)
        if not np.isclose(g, want, rtol=1e-12, atol=0):
            raise AssertionError(with_hints(f"{t}: steady_batch({r!r}, {a!r}, {c!r}): Yours {g!r}, Spec {want!r}",
                                            [hint("lab07", "steady_batch")]))


# --- Task 3.1: users at a latency objective, graded with the library's own policy ---------------------------

# Three p98 objectives per run, one in each third of 2 to 3 full batches (a + c max_batch). Between 2 and 3 batches
# the p90 crossing (a near miss: the SLO read at the wrong percentile) lies more than 1 % below the p98 one on every
# draw tried (60 of 60 at 2, 2.5 and 3 batches), while the lab's own bisection stays within 0.6 % of the library's
# (160 draws). Looser objectives let p90 through (at 4 batches 39 draws in 60), tighter ones (1.2 to 2 batches)
# failed correct answers (2 of 100): issue 33's note.
SLO_BATCHES = ((2.0, 7 / 3), (7 / 3, 8 / 3), (8 / 3, 3.0))


def _users_inputs(rng):
    a, c, mb = float(rng.uniform(1e-3, 3e-3)), float(rng.uniform(1e-4, 6e-4)), int(rng.integers(9, 25))
    full = a + c * mb
    return {"a_s": a, "c_s": c, "max_batch": mb,
            "slos_s": [float(full * rng.uniform(lo, hi)) for lo, hi in SLO_BATCHES]}


def _users_judge(inp, out):
    from scaledl.serve import linear, max_rate_at_slo

    t = "Task 3.1"
    got = array(out, "users", shape=(len(inp["slos_s"]),), dtype="f", title=t).astype(np.float64)
    for slo, g in zip(inp["slos_s"], got):
        want = max_rate_at_slo("batch_dispatch", service=linear(inp["a_s"], inp["c_s"]), slo_s=slo,
                               n_requests=N_SLO_REQUESTS, max_batch=inp["max_batch"])
        # 1 %: both searches stop within 0.1 % of the same crossing on the same arrivals
        assert abs(g / want - 1) < 0.01, (
            f"{t}: service {inp['a_s'] * 1e3:.3f} + {inp['c_s'] * 1e3:.3f} b ms, p98 <= {slo * 1e3:.2f} ms, "
            f"max_batch={inp['max_batch']}: Yours {g:.1f} req/s, Spec {want:.1f} req/s")


TASKS = (
    Task("task_1_1", "Task 1.1", ("batch_dispatch",), _dispatch_inputs, PRODUCE["task_1_1"], _dispatch_judge,
         local_seed=150701, forbidden=("scaledl.serve.hook.batch_dispatch_spec", "scaledl.serve.hook.single_spec")),
    Task("task_1_2", "Task 1.2", ("md1_wait", "one_at_a_time"), _md1_inputs, PRODUCE["task_1_2"], _md1_judge,
         local_seed=150702, forbidden=("scaledl.serve.md1_mean_wait_s", "scaledl.serve.hook.single_spec"),
         forbidden_modules=("scaledl.serve.theory",)),
    Task("task_2_1", "Task 2.1", ("steady_batch",), _steady_inputs, PRODUCE["task_2_1"], _steady_judge,
         local_seed=150704, forbidden=("scaledl.serve.eager_steady_batch",),
         forbidden_modules=("scaledl.serve.theory",)),
    Task("task_3_1", "Task 3.1", ("max_users",), _users_inputs, PRODUCE["task_3_1"], _users_judge, local_seed=150705,
         forbidden=("scaledl.serve.max_rate_at_slo",), forbidden_modules=("scaledl.serve.slo",),
         needs=("scaledl.serve.policy_specs",)),  # produce hands the student's search the reference policy
)
