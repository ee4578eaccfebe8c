"""Lab 05 (ring all-reduce): the graded tasks, split into inputs, production and judgement.

- Task 1.1, ``ring_schedule(p, length)``: its rounds come back as data ([src, dst, start, stop, op] per
  transfer); the judge plays them on integer buffers against the exact sum and simulates them on a uniform
  switch against 2 (p-1) alpha + 2 (p-1)/p n beta, with :func:`scaledl.labs.ring.check_ring_schedule`.
- Task 2.1, ``ring_allreduce_mpi(comm, x)``: run under ``mpiexec`` at 4 ranks
  (:mod:`scaledl.course.produce.mpi_runner`), one length past MPICH's eager limit so that a ring which sends
  before it receives deadlocks and times out.
- Task 3.1-3.2, ``ring_cost`` and ``best_ring_order`` on a DGX-1 with one slow NVLink, against
  :func:`scaledl.comm.topology.ring_seconds_per_byte` and an exhaustive search.
"""

from __future__ import annotations

import numpy as np

from scaledl.course.produce.lab05 import PRODUCE, mpi_data, slow_link_topology
from scaledl.course.tasks import Task, array
from scaledl.labs.hints import hint, with_hints

# --- Task 1.1: the ring as a schedule -------------------------------------------------------------------------

OPS = ("reduce", "copy")
TIMED_RANKS = (3, 5, 8)      # check_ring_schedule times the ring at these p, on 4 p elements
MAX_TRANSFERS = 4096         # per schedule: a ring of p <= 8 has 2 p (p - 1) = 112; more is junk, not an answer


def _schedule_inputs(rng):
    p = int(rng.integers(5, 8))
    lengths = [int(rng.integers(3, 5)), int(rng.integers(50, 99))]  # shorter than p (empty blocks), and odd-ish
    cases = [[p, n] for n in lengths] + [[q, 4 * q] for q in TIMED_RANKS]
    return {"p": p, "lengths": lengths, "seed": int(rng.integers(2**31)), "cases": cases}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _decode(t: str, sched, p: int, length: int) -> list[tuple]:
    """One schedule as rounds of Transfer, checked to be what produce writes, else AssertionError."""
    from scaledl.comm.schedule import Transfer

    where = f"ring_schedule({p}, {length})"
    if not isinstance(sched, list) or not all(isinstance(r, list) for r in sched):
        raise AssertionError(f"{t}: {where} came back as {type(sched).__name__}; expected a list of rounds")
    if len(sched) > MAX_TRANSFERS or sum(len(r) for r in sched) > MAX_TRANSFERS:
        raise AssertionError(f"{t}: {where} has {sum(len(r) for r in sched)} transfers; the ring needs 2 p (p - 1)")
    rounds = []
    for k, rnd in enumerate(sched):
        row = []
        for item in rnd:
            ok = isinstance(item, list) and len(item) == 5 and all(_is_int(v) for v in item[:4]) and item[4] in OPS
            if not ok:
                raise AssertionError(f"{t}: round {k} of {where} holds {item!r:.80}; expected a Transfer")
            src, dst, start, stop, op = item
            if not (0 <= src < p and 0 <= dst < p and 0 <= start <= stop <= length):
                raise AssertionError(f"{t}: round {k} of {where} holds Transfer{tuple(item)}: ranks must be in "
                                     f"0..{p - 1} and 0 <= start <= stop <= {length}")
            row.append(Transfer(src, dst, start, stop, op))
        rounds.append(row)
    return rounds


def _schedule_judge(inp, out):
    from scaledl.labs import ring as L

    t = "Task 1.1"
    cases = [(int(p), int(n)) for p, n in inp["cases"]]
    if "schedules" not in out:
        raise AssertionError(f"{t}: no result 'schedules' came back (did the function raise?)")
    got = out["schedules"]
    if not isinstance(got, list) or len(got) != len(cases):
        raise AssertionError(f"{t}: expected {len(cases)} schedules, one per (p, length) {cases}")
    table = {case: _decode(t, s, *case) for case, s in zip(cases, got)}
    try:
        res = L.check_ring_schedule(lambda p, n: table[(p, n)], ranks=(int(inp["p"]),),
                                    lengths=tuple(int(n) for n in inp["lengths"]), seed=int(inp["seed"]), report=None)
    except Exception as err:  # a schedule valid in form that the simulator cannot play: the task fails, not us
        raise AssertionError(f"{t}: ring_schedule's rounds cannot be played or simulated: {err!r:.300}") from None
    if not res.passed:  # the check's first failure, its first lines of Yours beside Spec, and its hints
        first = next(i for i, line in enumerate(res.lines) if line.startswith("FAIL"))
        shown = [res.lines[first]] + [line.strip() for line in res.lines[first + 1:first + 3] if line.startswith(" ")]
        raise AssertionError(with_hints(f"{t}: ring_schedule: " + "; ".join(shown), res.hints))


# --- Task 2.1: the ring over MPI --------------------------------------------------------------------------------

MPI_RANKS = 4
MPI_TIMEOUT_s = 40.0   # start-up and calls: a 4-rank run of three lengths takes a few seconds on a busy machine
MPI_CALL_TIMEOUT_s = 15.0  # from the moment every rank has started: the three calls take well under a second
EAGER_FLOATS = 16_384  # 64 KiB of float32, MPICH's largest eager size: a block above it must be received


def _odd(rng, lo: int, hi: int) -> int:
    """A length in [lo, hi) that is not a multiple of the ranks, so the blocks differ in size."""
    n = int(rng.integers(lo, hi))
    return n + 1 if n % MPI_RANKS == 0 else n


def _mpi_inputs(rng):
    lengths = [_odd(rng, 1, 9), _odd(rng, 1_000, 2_000),
               _odd(rng, 120_001, 130_000)]  # blocks of ~30 000 floats: past the eager limit
    return {"ranks": MPI_RANKS, "lengths": lengths, "seed": int(rng.integers(2**31)), "timeout_s": MPI_TIMEOUT_s,
            "call_timeout_s": MPI_CALL_TIMEOUT_s}


def _limits(inp) -> str:
    call_s = inp.get("call_timeout_s")
    whole = f"{float(inp['timeout_s']):g} s"
    return whole if call_s is None else f"{float(call_s):g} s of the ranks starting ({whole} in all)"


def _mpi_judge(inp, out):
    t = "Task 2.1"
    status = out.get("status")
    log = out.get("log") if isinstance(out.get("log"), str) else ""
    if status == "timeout":
        raise AssertionError(with_hints(f"{t}: timed out (deadlock?): no result within {_limits(inp)} at "
                                        f"{inp['ranks']} ranks, lengths {inp['lengths']}", [hint("lab05", "deadlock")]))
    if status != "ok":
        raise AssertionError(f"{t}: the ranks did not finish cleanly (status {status!r:.40}); their output ends:\n"
                             f"{log[-1500:]}")
    p, seed = int(inp["ranks"]), int(inp["seed"])
    for i, n in enumerate(int(n) for n in inp["lengths"]):
        xs = [mpi_data(seed, r, n) for r in range(p)]
        want = np.sum(np.asarray(xs, np.float64), axis=0)  # exact: quarters of small integers
        for r in range(p):
            got = array(out, f"got_l{i}_r{r}", shape=(n,), dtype="f", title=t).astype(np.float64)
            # exact, as today's check against MPI.Allreduce: these sums carry no rounding in float32, in any order
            bad = np.flatnonzero(~(got == want))
            if bad.size:
                show = "; ".join(f"element {j}: Yours {got[j]!r}, Spec {want[j]!r}" for j in bad[:3])
                raise AssertionError(with_hints(f"{t}: at {p} ranks, length {n}, rank {r}: {bad.size} of {n} elements "
                                                f"differ from the sum; {show}", [hint("lab05", "mpi_values")]))


# --- Task 3.1-3.2: ring cost and ring order on a real topology ------------------------------------------------

ORDERS = 8  # random orders whose cost ring_cost must match (today's hidden test: samples=8)


def _order_inputs(rng):
    from scaledl.comm import topology as T

    links = sorted((int(a), int(b)) for a, b in T.hybrid_cube_mesh().edges if a < b)
    slow = links[int(rng.integers(len(links)))]
    orders = np.array([rng.permutation(8) for _ in range(ORDERS)], np.int64)
    return {"slow": list(slow), "factor": int(rng.integers(3, 12)), "orders": orders}


def _order_judge(inp, out):
    from scaledl.comm import topology as T

    topo = slow_link_topology(inp)
    label = f"the DGX-1 with link {inp['slow'][0]}-{inp['slow'][1]} at 1/{inp['factor']}"
    orders = np.asarray(inp["orders"])
    got = array(out, "costs", shape=(len(orders),), dtype="f", title="Task 3.1").astype(np.float64)
    for order, yours in zip(orders, got):
        order = [int(r) for r in order]
        spec = T.ring_seconds_per_byte(topo, order)
        if not np.isclose(yours, spec, rtol=1e-12, atol=0):  # same routes, same arithmetic: only rounding differs
            raise AssertionError(with_hints(f"Task 3.1: ring_cost on {label}, order {order}: Yours {yours:.6g} s/B, "
                                            f"Spec {spec:.6g} s/B", [hint("lab05", "ring_cost")]))
    p = topo.graph["ranks"]
    order = array(out, "best", shape=(p,), dtype="iu", title="Task 3.2")
    if sorted(order.tolist()) != list(range(p)):
        raise AssertionError(f"Task 3.2: best_ring_order on {label}: Yours {order.tolist()} is not a permutation "
                             f"of 0..{p - 1}")
    best = T.ring_seconds_per_byte(topo, T.ring_order(topo, exhaustive_up_to=max(8, p)))  # every order
    yours = T.ring_seconds_per_byte(topo, order.tolist())
    if yours > best * (1 + 1e-12):
        raise AssertionError(with_hints(f"Task 3.2: best_ring_order on {label}: Yours {order.tolist()} costs "
                                        f"{yours:.4g} s/B, Spec (the best order) {best:.4g} s/B",
                                        [hint("lab05", "ring_order")]))


TASKS = (
    Task("task_1_1", "Task 1.1", ("ring_schedule",), _schedule_inputs, PRODUCE["task_1_1"], _schedule_judge,
         local_seed=150501,
         forbidden=("scaledl.comm.schedule.build", "scaledl.comm.schedule.allreduce", "scaledl.comm.schedule._ring")),
    Task("task_2_1", "Task 2.1", ("ring_allreduce_mpi",), _mpi_inputs, PRODUCE["task_2_1"], _mpi_judge,
         local_seed=150504,
         forbidden=("scaledl.comm.mpi.ring_allreduce", "scaledl.comm.mpi.schedule_allreduce"),
         forbidden_attributes=("Allreduce", "allreduce", "Iallreduce", "Reduce", "Reduce_scatter",
                               "Reduce_scatter_block")),
    Task("task_3_1_3_2", "Task 3.1-3.2", ("ring_cost", "best_ring_order"), _order_inputs, PRODUCE["task_3_1_3_2"],
         _order_judge, local_seed=150503,
         forbidden=("scaledl.comm.topology.ring_seconds_per_byte", "scaledl.comm.topology.ring_order")),
)
