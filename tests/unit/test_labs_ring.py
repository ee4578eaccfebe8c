"""Lab 05's checks catch each bug they are built for: an off-by-one chunk, a missing reduction step, copies
in place of reductions, a deadlock-prone send order (over MPI, with a timeout), a wrong ring cost."""


import networkx as nx
import numpy as np
import pytest

from scaledl.comm import mpi as M
from scaledl.comm import topology as T
from scaledl.comm.schedule import Transfer, bounds, build
from scaledl.labs import ring as L

needs_mpiexec = pytest.mark.skipif(M.mpiexec_path() is None,
                                   reason="mpiexec not found: pip install mpich (the book's MPI runtime)")


def correct(p, length):
    return [list(r) for r in build("ring", p, length).rounds]


def off_by_one(p, length):
    b = bounds(length, p)
    rounds = []
    for s in range(p - 1):  # reduce-scatter sends block (i - s + 1): the block it is about to receive
        rounds.append([Transfer(i, (i + 1) % p, b[(i - s + 1) % p], b[(i - s + 1) % p + 1], "reduce")
                       for i in range(p)])
    for s in range(p - 1):
        rounds.append([Transfer(i, (i + 1) % p, b[(i + 1 - s) % p], b[(i + 1 - s) % p + 1], "copy") for i in range(p)])
    return rounds


def missing_reduction(p, length):
    rounds = correct(p, length)
    return rounds[:max(p - 2, 0)] + rounds[p - 1:]  # one reduce-scatter step dropped


def copies_only(p, length):
    return [[Transfer(t.src, t.dst, t.start, t.stop, "copy") for t in r] for r in correct(p, length)]


def test_a_correct_ring_passes_with_the_closed_form_time():
    res = L.check_ring_schedule(correct, report=None)
    assert res.passed, str(res)
    assert "simulated" in str(res) and "FAIL" not in str(res)


@pytest.mark.parametrize("buggy, hint", [(off_by_one, "off-by-one chunk"),
                                         (missing_reduction, "reduction round is missing"),
                                         (copies_only, "must add ('reduce')")])
def test_each_bug_fails_with_its_hint(buggy, hint):
    res = L.check_ring_schedule(buggy, report=None)
    assert not res.passed
    assert any(hint in h for h in res.hints), res.hints
    assert "Yours" in str(res) and "Spec" in str(res)
    with pytest.raises(AssertionError):
        res.raise_if_failed()


def test_extra_rounds_are_caught_by_the_timing_check():
    def repeated(p, length):  # the last all-gather round twice: the sums stay right, the time does not
        rounds = correct(p, length)
        return rounds + rounds[-1:]
    res = L.check_ring_schedule(repeated, report=None)
    assert not res.passed and "time is not the ring's" in res.hints[0]
    assert "exact sum on every rank" in str(res)


def test_bad_transfers_are_reported():
    with pytest.raises(TypeError, match=r"each round must be a list of scaledl.comm.schedule.Transfer"):
        L.check_ring_schedule(lambda p, n: [[(0, 1, 0, n, "reduce")]], report=None)
    with pytest.raises(ValueError, match=r"ranks must be in 0..0"):
        L.check_ring_schedule(lambda p, n: [[Transfer(0, 1, 0, n, "reduce")]], ranks=(1,), report=None)


def good_mpi(comm, x):
    p, rank = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True)  # noqa: F821 (np is imported in the module the check writes)
    b = [(i * out.size) // p for i in range(p + 1)]
    tmp = np.empty(b[1] - b[0] + 1, out.dtype)  # noqa: F821
    for s in range(2 * (p - 1)):
        send, recv = (rank - s) % p, (rank - s - 1) % p
        n = b[recv + 1] - b[recv]
        comm.Sendrecv(out[b[send]:b[send + 1]], dest=(rank + 1) % p, recvbuf=tmp[:n], source=(rank - 1) % p)
        if s < p - 1:
            out[b[recv]:b[recv + 1]] += tmp[:n]
        else:
            out[b[recv]:b[recv + 1]] = tmp[:n]
    return out


def deadlocking_mpi(comm, x):
    p, rank = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True)  # noqa: F821
    b = [(i * out.size) // p for i in range(p + 1)]
    tmp = np.empty(b[1] - b[0] + 1, out.dtype)  # noqa: F821
    for s in range(2 * (p - 1)):
        send, recv = (rank - s) % p, (rank - s - 1) % p
        n = b[recv + 1] - b[recv]
        comm.Send(out[b[send]:b[send + 1]], dest=(rank + 1) % p)  # everyone sends first: fine while eager
        comm.Recv(tmp[:n], source=(rank - 1) % p)
        if s < p - 1:
            out[b[recv]:b[recv + 1]] += tmp[:n]
        else:
            out[b[recv]:b[recv + 1]] = tmp[:n]
    return out


def no_gather_mpi(comm, x):
    p, rank = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True)  # noqa: F821
    b = [(i * out.size) // p for i in range(p + 1)]
    tmp = np.empty(b[1] - b[0] + 1, out.dtype)  # noqa: F821
    for s in range(p - 1):  # reduce-scatter only
        send, recv = (rank - s) % p, (rank - s - 1) % p
        n = b[recv + 1] - b[recv]
        comm.Sendrecv(out[b[send]:b[send + 1]], dest=(rank + 1) % p, recvbuf=tmp[:n], source=(rank - 1) % p)
        out[b[recv]:b[recv + 1]] += tmp[:n]
    return out


@needs_mpiexec
def test_mpi_check_passes_a_sendrecv_ring_and_times_it():
    res = L.check_mpi_allreduce(good_mpi, ranks=(2, 3), lengths=(1, 7, 100_003), time_bytes=1 << 16, report=None)
    assert res.passed, str(res)
    assert "MPI.Allreduce" in str(res) and "ratio" in str(res)


@needs_mpiexec
def test_mpi_check_reports_a_deadlock_instead_of_hanging():
    # this ring never finishes, and its ranks poll while they wait: the check cuts them 2 s after they have all
    # started, well inside the whole limit (start-up on a loaded machine)
    res = L.check_mpi_allreduce(deadlocking_mpi, ranks=(2,), lengths=(7, 100_003), timeout_s=60, call_timeout_s=2,
                                report=None)
    # the message names the limit that cut the run (launch's own): the call limit's, not the whole 60 s
    assert not res.passed and "no result within 2 s of the ranks starting: the ranks deadlocked" in str(res)
    assert any("Sendrecv" in h for h in res.hints)


@needs_mpiexec
def test_mpi_check_shows_yours_and_spec():
    res = L.check_mpi_allreduce(no_gather_mpi, ranks=(3,), lengths=(7,), time_bytes=1 << 12, report=None)
    assert not res.passed and "Yours" in str(res) and "Spec" in str(res)


def test_ring_order_check():
    net = T.with_links(T.hybrid_cube_mesh(), {(3, 7): {"bandwidth_Bps": 2e9}})
    assert L.check_ring_order(T.ring_seconds_per_byte, T.ring_order, [net], samples=5, report=None).passed

    def hops_only(topology, order):  # forgets that ring edges sharing a link share its bandwidth
        worst = 0.0
        for a, b in zip(order, order[1:] + order[:1]):
            path = nx.shortest_path(topology, a, b, weight="latency_s")
            worst = max([worst] + [1 / topology.edges[e]["bandwidth_Bps"] for e in zip(path, path[1:])])
        return worst
    res = L.check_ring_order(hops_only, lambda t: list(range(8)), [T.svail_pcie_node(), net], samples=5,
                             report=None)
    assert not res.passed and any("count how many edges" in h for h in res.hints)
    assert any("try every order" in h for h in res.hints)


def stub_mpi(comm, x):
    raise NotImplementedError("Task 2.1")


def test_mpi_check_of_an_unwritten_stub_says_so_without_launching():
    with pytest.raises(NotImplementedError, match=r"stub_mpi is not written yet .*Task 2\.1"):
        L.check_mpi_allreduce(stub_mpi, report=None)
