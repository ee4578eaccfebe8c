"""Lab 05's task specs (scaledl.course.tasks.lab05): each judge accepts a correct answer on fresh inputs, names
the classic bug it is given, and turns hostile outputs into an AssertionError, never another exception.

Task 2.1 runs real ranks under mpiexec (4 ranks, about a second a run; the deadlock test waits out a short
limit); those tests are skipped where MPICH or mpi4py is missing. The rest is pure NumPy.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import re

import networkx as nx
import numpy as np
import pytest

from scaledl import _deadline
from scaledl.comm import mpi
from scaledl.comm import topology as T
from scaledl.comm.schedule import Transfer, bounds, build
from scaledl.course import exchange
from scaledl.course.produce import lab05 as produce05
from scaledl.course.produce import mpi_runner
from scaledl.course.tasks import lab05

TASKS = {t.grade_id: t for t in lab05.TASKS}
SEEDS = (1, 2, 3)
NAMED = {"task_1_1": ("Task 1.1",), "task_2_1": ("Task 2.1",), "task_3_1_3_2": ("Task 3.1", "Task 3.2")}
HAS_MPI = mpi_runner.mpiexec() is not None and importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAS_MPI, reason="needs mpiexec and mpi4py: pip install 'scaledl[mpi]'")


def _inputs(grade_id, seed):
    return exchange.roundtrip(TASKS[grade_id].make_inputs(np.random.default_rng(seed)))


def _produce(grade_id, ns, inp):
    return exchange.roundtrip(TASKS[grade_id].produce(ns, inp))


def _rejects(grade_id, inp, out, match):
    """The judge raises AssertionError (nothing else) whose message names the task and matches ``match``."""
    try:
        TASKS[grade_id].judge(inp, out)
    except AssertionError as err:
        msg = str(err)
        assert msg.startswith(NAMED[grade_id]), msg
        assert re.search(match, msg, re.S), msg
        return msg
    raise AssertionError(f"{grade_id}: the judge accepted {sorted(out)}")


def test_the_lab_lists_its_tasks_in_notebook_order_and_forbidden_names_exist():
    assert [t.grade_id for t in lab05.TASKS] == ["task_1_1", "task_2_1", "task_3_1_3_2"]
    for task in lab05.TASKS:
        for dotted in task.forbidden:  # a typo here would make the static review forbid nothing
            module, name = dotted.rsplit(".", 1)
            assert hasattr(importlib.import_module(module), name), dotted
    assert "scaledl.comm.mpi.ring_allreduce" in TASKS["task_2_1"].forbidden
    assert {"Allreduce", "allreduce", "Reduce_scatter"} <= set(TASKS["task_2_1"].forbidden_attributes)


# --- Task 1.1 -------------------------------------------------------------------------------------------------

def library_ring(p, length):
    return [list(r) for r in build("ring", p, length).rounds]


def solution_ring(p, length):  # the solution notebook's answer
    b = bounds(length, p)
    rounds = []
    for s in range(p - 1):
        rounds.append([Transfer(i, (i + 1) % p, b[(i - s) % p], b[(i - s) % p + 1], "reduce") for i in range(p)])
    for s in range(p - 1):
        rounds.append([Transfer(i, (i + 1) % p, b[(i + 1 - s) % p], b[(i + 1 - s) % p + 1], "copy") for i in range(p)])
    return rounds


def off_by_one_gather(p, length):  # the all-gather passes block (i - s), not the one it just finished
    b = bounds(length, p)
    rounds = solution_ring(p, length)[:p - 1]
    for s in range(p - 1):
        rounds.append([Transfer(i, (i + 1) % p, b[(i - s) % p], b[(i - s) % p + 1], "copy") for i in range(p)])
    return rounds


def missing_reduce_step(p, length):
    rounds = solution_ring(p, length)
    return rounds[:p - 2] + rounds[p - 1:]


def copies_everywhere(p, length):
    return [[Transfer(t.src, t.dst, t.start, t.stop, "copy") for t in r] for r in solution_ring(p, length)]


def twice_the_rounds(p, length):  # right sums (reduce-scatter + all-gather, then the all-gather again)
    rounds = solution_ring(p, length)
    return rounds + rounds[p - 1:]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ring", [library_ring, solution_ring])
def test_task_1_1_accepts_a_correct_ring(seed, ring):
    inp = _inputs("task_1_1", seed)
    TASKS["task_1_1"].judge(inp, _produce("task_1_1", {"ring_schedule": ring}, inp))


@pytest.mark.parametrize("bug, match", [
    (off_by_one_gather, "off-by-one chunk"),
    (missing_reduce_step, "reduction round is missing"),
    (copies_everywhere, "copy in the reduce-scatter"),
    (twice_the_rounds, "time is not the ring's"),
])
def test_task_1_1_names_the_classic_bugs(bug, match):
    inp = _inputs("task_1_1", 5)
    _rejects("task_1_1", inp, _produce("task_1_1", {"ring_schedule": bug}, inp), match)


def test_task_1_1_produce_refuses_rounds_that_are_not_transfers():
    inp = _inputs("task_1_1", 5)
    with pytest.raises(TypeError, match="Transfer"):
        TASKS["task_1_1"].produce({"ring_schedule": lambda p, n: [[(0, 1, 0, n, "reduce")]]}, inp)
    with pytest.raises(NameError, match="ring_schedule"):
        TASKS["task_1_1"].produce({}, inp)


def _junk_schedules(good):
    first = good["schedules"][0]
    bad_transfer = lambda item: {"schedules": [[[item] + first[0][1:]] + first[1:]] + good["schedules"][1:]}  # noqa
    yield {}, "no result"
    yield {"schedules": "ring"}, "expected"
    yield {"schedules": good["schedules"][:-1]}, "expected 5 schedules"
    yield {"schedules": [[] for _ in good["schedules"]]}, "differ from the exact sum|reduction rounds"
    yield {"schedules": [[[]] * 100_000] + good["schedules"][1:]}, "transfers"
    yield bad_transfer([0, 1, 0, 2, "add"]), "expected a Transfer"
    yield bad_transfer([0, 1, 0.5, 2, "reduce"]), "expected a Transfer"
    yield bad_transfer([True, 1, 0, 2, "reduce"]), "expected a Transfer"
    yield bad_transfer([0, 1, 0, 2]), "expected a Transfer"
    yield bad_transfer("0 1 0 2 reduce"), "expected a Transfer"
    yield bad_transfer([0, 99, 0, 2, "reduce"]), "ranks must be in"
    yield bad_transfer([0, 1, 3, 2, "reduce"]), "start <= stop"
    yield bad_transfer([0, 1, 0, 10**30, "reduce"]), "start <= stop"
    yield bad_transfer([0, 0, 0, 2, "reduce"]), "Task 1.1"  # to itself: valid in form, wrong in sum or time


def test_task_1_1_rejects_hostile_outputs_with_an_assertion_only():
    inp = _inputs("task_1_1", 7)
    good = _produce("task_1_1", {"ring_schedule": solution_ring}, inp)
    for out, match in _junk_schedules(good):
        _rejects("task_1_1", inp, out, match)


def test_task_1_1_inputs_differ_by_seed():
    drawn = [_inputs("task_1_1", s) for s in range(6)]
    assert len({(d["p"], *d["lengths"], d["seed"]) for d in drawn}) == 6
    for d in drawn:
        assert 5 <= d["p"] <= 7 and d["lengths"][0] < d["p"]  # some ranks own an empty block


# --- Task 2.1 -------------------------------------------------------------------------------------------------

def send_then_recv(comm, x):  # every rank sends first: fine while MPICH buffers, a deadlock past its eager limit
    p, rank = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True).ravel()
    b = [(i * out.size) // p for i in range(p + 1)]
    scratch = np.empty(b[1] - b[0] + 1, dtype=out.dtype)
    for step in range(2 * (p - 1)):
        send, recv = (rank - step) % p, (rank - step - 1) % p
        n = b[recv + 1] - b[recv]
        comm.Send(out[b[send]:b[send + 1]], dest=(rank + 1) % p)
        comm.Recv(scratch[:n], source=(rank - 1) % p)
        if step < p - 1:
            out[b[recv]:b[recv + 1]] += scratch[:n]
        else:
            out[b[recv]:b[recv + 1]] = scratch[:n]
    return out


def equal_blocks(comm, x):  # blocks of n // p: the tail past p (n // p) is never reduced
    p, rank = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True).ravel()
    k = out.size // p
    b = [i * k for i in range(p + 1)]
    scratch = np.empty(k, dtype=out.dtype)
    right, left = (rank + 1) % p, (rank - 1) % p
    for step in range(2 * (p - 1)):
        send, recv = (rank - step) % p, (rank - step - 1) % p
        comm.Sendrecv(out[b[send]:b[send + 1]], dest=right, recvbuf=scratch, source=left)
        if step < p - 1:
            out[b[recv]:b[recv + 1]] += scratch
        else:
            out[b[recv]:b[recv + 1]] = scratch
    return out


def rank_two_raises(comm, x):
    if comm.Get_rank() == 2:
        raise ValueError("rank 2 gave up")
    return np.array(x)


def _correct_outputs(inp):
    """What a right answer hands back, built in NumPy: every rank holds the sum."""
    p, out = inp["ranks"], {"status": "ok", "log": ""}
    for i, n in enumerate(inp["lengths"]):
        total = np.sum([produce05.mpi_data(inp["seed"], r, n) for r in range(p)], axis=0, dtype=np.float32)
        for r in range(p):
            out[f"got_l{i}_r{r}"] = total.copy()
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_task_2_1_judge_accepts_the_sum_on_every_rank(seed):
    inp = _inputs("task_2_1", seed)
    out = exchange.roundtrip(_correct_outputs(inp))
    TASKS["task_2_1"].judge(inp, out)
    out["got_l2_r1"] = out["got_l2_r1"].astype(np.float64)  # a float64 result is still the sum
    TASKS["task_2_1"].judge(inp, out)


def test_task_2_1_judge_rejects_wrong_and_hostile_outputs():
    inp = _inputs("task_2_1", 4)
    good = _correct_outputs(inp)
    n2 = inp["lengths"][2]

    def edit(**changes):
        out = dict(good)
        for k, v in changes.items():
            if v is None:
                out.pop(k)
            else:
                out[k] = v
        return exchange.roundtrip(out)

    own = produce05.mpi_data(inp["seed"], 3, n2)
    cases = [
        (edit(got_l2_r3=own), "rank 3: .* differ from the sum"),  # forgot the all-gather: its own input back
        (edit(got_l2_r0=good["got_l2_r0"] * 2), "differ from the sum"),  # every contribution counted twice
        (edit(got_l1_r2=np.zeros_like(good["got_l1_r2"])), "differ from the sum"),
        (edit(got_l2_r1=np.full(n2, np.nan, np.float32)), "differ from the sum"),
        (edit(got_l2_r1=np.full(n2, 1e38, np.float32)), "differ from the sum"),
        (edit(got_l2_r1=good["got_l2_r1"][:-1]), "shape"),
        (edit(got_l2_r1=good["got_l2_r1"].reshape(1, -1)), "shape"),
        (edit(got_l2_r1=good["got_l2_r1"].astype(np.int64)), "dtype"),
        (edit(got_l0_r0=None), "no result 'got_l0_r0'"),
        (edit(got_l0_r0="many"), "not numeric|shape"),
        (edit(status=None), "did not finish cleanly"),
        (edit(status=["ok"]), "did not finish cleanly"),
        (edit(status="error", log="Traceback ... ValueError: boom"), "boom"),
        (edit(status="timeout"), r"Task 2.1: timed out \(deadlock\?\)"),
        (edit(log=None, status="error"), "did not finish cleanly"),
        (exchange.roundtrip({"status": "ok"}), "no result"),
    ]
    for out, match in cases:
        _rejects("task_2_1", inp, out, match)


def test_task_2_1_inputs_differ_by_seed_and_one_length_is_past_the_eager_limit():
    drawn = [_inputs("task_2_1", s) for s in range(6)]
    assert len({(d["seed"], *d["lengths"]) for d in drawn}) == 6
    for d in drawn:
        assert d["ranks"] == 4 and all(n % d["ranks"] for n in d["lengths"])  # blocks of unequal size
        assert max(d["lengths"]) // d["ranks"] > 1.5 * lab05.EAGER_FLOATS
    x = [produce05.mpi_data(7, r, 1001) for r in range(4)]
    assert x[0].dtype == np.float32 and not np.array_equal(x[0], x[1])
    assert np.array_equal(np.sum(x, axis=0, dtype=np.float32), np.sum(x, axis=0, dtype=np.float64))  # exact


def test_mpi_runner_refuses_a_stub_and_bad_inputs():
    def ring_allreduce_mpi(comm, x):
        raise NotImplementedError("Task 2.1")

    with pytest.raises(NotImplementedError, match="not written yet"):
        mpi_runner.function_source(ring_allreduce_mpi)
    with pytest.raises(TypeError, match="source cannot be read"):
        mpi_runner.function_source(len)
    with pytest.raises(ValueError, match="inputs"):
        mpi_runner.call_on_ranks(mpi.ring_allreduce, [[np.ones(3)], [np.ones(3)] * 2], timeout_s=5)


def _no_rank_left(before=()):
    """Processes below this test process that were not there before it (a whole `make test` run has others:
    the browser tier's JupyterLab server, for one)."""
    return sorted(set(_deadline.descendants(os.getpid())) - set(before))


@needs_mpi
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_task_2_1_accepts_a_sendrecv_ring_under_mpiexec(seed):
    inp = _inputs("task_2_1", seed)
    out = _produce("task_2_1", {"ring_allreduce_mpi": mpi.ring_allreduce}, inp)
    assert out["status"] == "ok", out["log"]
    TASKS["task_2_1"].judge(inp, out)


@needs_mpi
def test_task_2_1_times_out_a_deadlocking_ring_and_leaves_no_rank_running():
    before = _no_rank_left()
    inp = _inputs("task_2_1", 3)
    assert inp["timeout_s"] == 40 and inp["call_timeout_s"] == 15  # the grader's limits
    # the whole limit stays the grader's 40 s (start-up on a loaded machine); the ranks are cut 3 s after they
    # have all started, not 15, since this ring never finishes and its ranks spin while they wait
    inp["call_timeout_s"] = 3.0
    out = _produce("task_2_1", {"ring_allreduce_mpi": send_then_recv}, inp)
    assert out["status"] == "timeout"
    assert out["limit"] == "call", "the whole 40 s limit ran out: the call limit did not cut it short"
    assert "got_l0_r0" in out and "got_l2_r0" not in out  # small messages went through (buffered)
    _rejects("task_2_1", inp, out, r"^Task 2.1: timed out \(deadlock\?\): no result within 3 s of the ranks "
                                   r"starting \(40 s in all\).*Sendrecv")
    assert _no_rank_left(before) == []


@needs_mpi
def test_task_2_1_rejects_a_short_last_block_and_a_rank_that_raises():
    before = _no_rank_left()
    inp = _inputs("task_2_1", 2)
    out = _produce("task_2_1", {"ring_allreduce_mpi": equal_blocks}, inp)
    _rejects("task_2_1", inp, out, "differ from the sum")
    out = _produce("task_2_1", {"ring_allreduce_mpi": rank_two_raises}, inp)
    assert out["status"] == "error"
    _rejects("task_2_1", inp, out, "rank 2 gave up")
    assert _no_rank_left(before) == []


# --- Task 3.1-3.2 ---------------------------------------------------------------------------------------------

def solution_cost(topology, order):  # the solution notebook's answer
    order = list(order)
    load = {}
    for a, b in zip(order, order[1:] + order[:1]):
        if a == b:
            continue
        path = nx.shortest_path(topology, a, b, weight="latency_s")
        for link in zip(path, path[1:]):
            load[link] = load.get(link, 0) + 1
    return max((k / topology.edges[link]["bandwidth_Bps"] for link, k in load.items()), default=0.0)


def solution_best(topology):
    p = topology.graph["ranks"]
    best, best_cost = list(range(p)), solution_cost(topology, range(p))
    for rest in itertools.permutations(range(1, p)):
        c = solution_cost(topology, [0, *rest])
        if c < best_cost:
            best, best_cost = [0, *rest], c
    return best


def hops_only(topology, order):  # forgets that ring edges sharing a link share its bandwidth
    order = list(order)
    return max(1 / topology.edges[link]["bandwidth_Bps"] for a, b in zip(order, order[1:] + order[:1])
               for link in nx.utils.pairwise(nx.shortest_path(topology, a, b, weight="latency_s")))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("cost, best", [(T.ring_seconds_per_byte, T.ring_order), (solution_cost, solution_best)])
def test_task_3_accepts_a_correct_cost_and_search(seed, cost, best):
    inp = _inputs("task_3_1_3_2", seed)
    TASKS["task_3_1_3_2"].judge(inp, _produce("task_3_1_3_2", {"ring_cost": cost, "best_ring_order": best}, inp))


def test_task_3_names_a_wrong_cost_and_a_poor_order():
    inp = _inputs("task_3_1_3_2", 2)
    out = _produce("task_3_1_3_2", {"ring_cost": hops_only, "best_ring_order": T.ring_order}, inp)
    _rejects("task_3_1_3_2", inp, out, "^Task 3.1: ring_cost .* Yours .* Spec")
    out = _produce("task_3_1_3_2", {"ring_cost": T.ring_seconds_per_byte, "best_ring_order": lambda t: list(range(8))},
                   inp)
    _rejects("task_3_1_3_2", inp, out, "^Task 3.2: best_ring_order .* costs")


def test_task_3_rejects_hostile_outputs_with_an_assertion_only():
    inp = _inputs("task_3_1_3_2", 4)
    good = _produce("task_3_1_3_2", {"ring_cost": T.ring_seconds_per_byte, "best_ring_order": T.ring_order}, inp)
    costs, best = good["costs"], good["best"]
    cases = [
        ({"best": best}, "^Task 3.1: no result 'costs'"),
        ({"costs": costs}, "^Task 3.2: no result 'best'"),
        ({"costs": np.full_like(costs, np.nan), "best": best}, "^Task 3.1"),
        ({"costs": np.zeros_like(costs), "best": best}, "^Task 3.1"),
        ({"costs": costs * 1e300, "best": best}, "^Task 3.1"),
        ({"costs": costs[:-1], "best": best}, "^Task 3.1: costs has shape"),
        ({"costs": costs.astype(str), "best": best}, "^Task 3.1"),
        ({"costs": costs, "best": np.zeros(8, np.int64)}, "not a permutation"),
        ({"costs": costs, "best": np.arange(8) + 10**12}, "not a permutation"),
        ({"costs": costs, "best": best[:-1]}, "^Task 3.2: best has shape"),
        ({"costs": costs, "best": best.astype(np.float64)}, "^Task 3.2: best has dtype"),
        ({"costs": costs, "best": "01234567"}, "^Task 3.2"),
    ]
    for out, match in cases:
        _rejects("task_3_1_3_2", inp, exchange.roundtrip(out), match)


def test_task_3_inputs_differ_by_seed():
    drawn = [_inputs("task_3_1_3_2", s) for s in range(6)]
    assert len({(*d["slow"], d["factor"], d["orders"].tobytes()) for d in drawn}) == 6
    for d in drawn:
        assert d["orders"].shape == (lab05.ORDERS, 8)
        assert all(sorted(o) == list(range(8)) for o in d["orders"].tolist())
