"""Lab 05 (ring all-reduce): the student's side of the graded tasks.

Task 2.1 runs the student's ``ring_allreduce_mpi`` under ``mpiexec`` (:mod:`scaledl.course.produce.mpi_runner`)
on vectors both sides rebuild from the drawn seed (:func:`mpi_data`); Tasks 3.1-3.2 run on the DGX-1 with one
slow link that both sides build from the inputs (:func:`slow_link_topology`).
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce import student


# --- Task 1.1: the ring as a schedule -------------------------------------------------------------------------

def _schedule_produce(ns, inp):
    from scaledl.comm.schedule import Transfer

    f = student(ns, "ring_schedule")
    out = []
    for p, length in inp["cases"]:
        rounds = []
        for k, rnd in enumerate(f(int(p), int(length))):
            row = []
            for t in rnd:
                if not isinstance(t, Transfer):
                    raise TypeError(f"round {k} of ring_schedule({p}, {length}) holds {t!r}; each round must be a "
                                    "list of scaledl.comm.schedule.Transfer(src, dst, start, stop, op)")
                row.append([int(t.src), int(t.dst), int(t.start), int(t.stop), str(t.op)])
            rounds.append(row)
        out.append(rounds)
    return {"schedules": out}


# --- Task 2.1: the ring over MPI --------------------------------------------------------------------------------

def mpi_data(seed: int, rank: int, length: int) -> np.ndarray:
    """Rank ``rank``'s vector: quarters in [-16, 16), so every summation order gives the exact sum in float32."""
    rng = np.random.default_rng([seed, rank, length])
    return (rng.integers(-64, 64, length) / 4).astype(np.float32)


def _mpi_produce(ns, inp):
    from scaledl.course.produce.mpi_runner import call_on_ranks

    f = student(ns, "ring_allreduce_mpi")
    p, seed = int(inp["ranks"]), int(inp["seed"])
    xs = [[mpi_data(seed, r, int(n)) for r in range(p)] for n in inp["lengths"]]
    call_s = inp.get("call_timeout_s")
    run = call_on_ranks(f, xs, timeout_s=float(inp["timeout_s"]),
                        call_timeout_s=None if call_s is None else float(call_s))
    out = {"status": run.status, "log": run.log, "limit": run.limit or ""}
    for i, row in enumerate(run.results):
        for r, got in enumerate(row):
            if got is not None:
                out[f"got_l{i}_r{r}"] = got
    return out


# --- Task 3.1-3.2: ring cost and ring order on a real topology ------------------------------------------------

def slow_link_topology(inp):
    """The DGX-1 hybrid cube mesh with link ``slow`` at 1/``factor`` of its bandwidth, both directions."""
    from scaledl.comm import topology as T

    a, b = (int(v) for v in inp["slow"])
    return T.with_links(T.hybrid_cube_mesh(), {(a, b): {"bandwidth_Bps": T.NVLINK1_P100_LINK_Bps / inp["factor"]}})


def _order_produce(ns, inp):
    cost, best = student(ns, "ring_cost"), student(ns, "best_ring_order")
    costs = [float(cost(slow_link_topology(inp), [int(r) for r in order])) for order in inp["orders"]]
    return {"costs": np.array(costs, np.float64),
            "best": np.array([int(r) for r in best(slow_link_topology(inp))], np.int64)}


PRODUCE = {"task_1_1": _schedule_produce, "task_2_1": _mpi_produce, "task_3_1_3_2": _order_produce}
