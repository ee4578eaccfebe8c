"""netsim's fast path (scaledl.comm.fastsim) against its event path, the reference.

Where the fast path runs, it does netsim's own float arithmetic per message in the same order, so time_s and
every message's times agree bit for bit; a link's bytes and busy time are sums taken in the same round
order, so the comparison is exact: a reordered sum shows up here, and must be justified by changing this
test. Where it cannot decide, the events run and Result says why.
Timings at 1024-4096 ranks are in ``scaledl bench netsim``, not here.
"""

import math

import networkx as nx
import numpy as np
import pytest

from scaledl.comm import cost as C
from scaledl.comm import fastsim as F
from scaledl.comm import netsim as N
from scaledl.comm import schedule as S
from scaledl.comm import two_level as TL
from scaledl.comm import topology as T

ALPHA, BETA, GAMMA = 2e-6, 1e-9, 3e-10
REL = 1e-12


def assert_same(fast: N.Result, ref: N.Result, *, timeline: bool = False):
    assert ref.path == "event"
    assert fast.time_s == ref.time_s
    assert list(fast.link_bytes.items()) == list(ref.link_bytes.items())  # same links and order (ties in max())
    assert list(fast.link_busy_s.items()) == list(ref.link_busy_s.items())
    assert (fast.messages, fast.events) == (ref.messages, ref.events)
    if timeline:
        assert sorted(fast.timeline) == sorted(ref.timeline)


# Every topology builder of scaledl.comm.topology, with the ranks it takes (None: its own fixed number).
NETS = {
    "switch": lambda p: T.switch(p, bandwidth_Bps=1 / BETA, latency_s=ALPHA),
    "ring": lambda p: T.ring(p, bandwidth_Bps=1 / BETA, latency_s=ALPHA),
    "ring, one slow cable": lambda p: T.with_links(T.ring(p, bandwidth_Bps=1 / BETA, latency_s=ALPHA),
                                                   {(p - 2, p - 1): {"bandwidth_Bps": 0.1 / BETA}}),
    "multi_node, 4 GPUs per node": lambda p: T.multi_node(-(-p // 4), 4),
    "from_graph, a line": lambda p: T.from_graph(nx.path_graph(p), bandwidth_Bps=1 / BETA, latency_s=ALPHA),
}
FIXED = {"svail_pcie_node": T.svail_pcie_node, "nvswitch_node": T.nvswitch_node,
         "hybrid_cube_mesh": T.hybrid_cube_mesh, "multi_node(2)": lambda: T.multi_node(2)}
SIZES = [2, 3, 5, 16, 37, 64]


def schedule_for(alg, p):
    # the length simulate_allreduce uses; a new algorithm that needs a shape of p says so with ValueError
    try:
        return S.build(alg, p, math.lcm(p, 1 << (p.bit_length() - 1), 2))
    except ValueError as err:
        pytest.skip(f"{alg} at p = {p}: {err}")


@pytest.mark.parametrize("alg", C.ALLREDUCE_ALGORITHMS)
@pytest.mark.parametrize("net", NETS)
@pytest.mark.parametrize("p", SIZES)
def test_fast_path_agrees_with_events_on_every_builder(alg, net, p):
    topo = NETS[net](p)
    sched = schedule_for(alg, p)
    for gamma in (0.0, GAMMA):
        got = N.simulate(sched, topo, nbytes=3e6, gamma=gamma, timeline=p <= 16)
        assert_same(got, N.simulate(sched, topo, nbytes=3e6, gamma=gamma, timeline=p <= 16, method="event"),
                    timeline=p <= 16)
        assert got.path in ("fast", "event")
        assert (got.path_note == "") == (got.path == "fast")


@pytest.mark.parametrize("alg", C.ALLREDUCE_ALGORITHMS)
@pytest.mark.parametrize("name", FIXED)
def test_fast_path_agrees_with_events_on_the_machines(alg, name):
    topo = FIXED[name]()
    p = topo.graph["ranks"]
    sched = schedule_for(alg, p)
    orders = [list(range(p)), T.ring_order(topo), list(np.random.default_rng(7).permutation(p))]
    for order in orders:
        s = S.relabel(sched, order)
        assert_same(N.simulate(s, topo, nbytes=8e6, gamma=GAMMA),
                    N.simulate(s, topo, nbytes=8e6, gamma=GAMMA, method="event"), timeline=True)


@pytest.mark.parametrize("alg", ["ring", "recursive_doubling", "rabenseifner", "binomial"])
@pytest.mark.parametrize("net", ["switch", "ring"])
def test_fast_path_agrees_with_events_at_256_ranks(alg, net):
    topo = NETS[net](256)
    got = N.simulate_allreduce(alg, topo, 64e6, gamma=GAMMA, timeline=False)
    ref = N.simulate_allreduce(alg, topo, 64e6, gamma=GAMMA, timeline=False, method="event")
    assert_same(got, ref)
    if net == "switch":
        assert got.path == "fast"  # the case the fast path is for


@pytest.mark.parametrize("p", [2, 3, 5, 16, 37, 64])
def test_which_path_runs(p):
    sw = NETS["switch"](p)
    for alg in ("ring", "recursive_doubling", "rabenseifner", "binomial"):
        assert N.simulate_allreduce(alg, sw, 1e6).path == "fast", alg
    assert N.simulate_allreduce("ring", NETS["ring"](p), 1e6).path == "fast"
    assert N.simulate_allreduce("ring", T.multi_node(p, 3), 1e6).path == "fast"
    chunked = N.simulate_allreduce("ring", sw, 1e6, chunks=2)
    assert chunked.path == "event" and "chunks=2" in chunked.path_note
    if p > 2:  # incast: every worker's message shares the server's incoming link in one round
        ps = N.simulate_allreduce("parameter_server", sw, 1e6)
        assert ps.path == "event" and ps.path_note == "link ('switch', 0) carries %d messages in one round" % (p - 1)
        with pytest.raises(ValueError, match=r"method='fast' cannot decide this case: link \('switch', 0\) carries"):
            N.simulate_allreduce("parameter_server", sw, 1e6, method="fast")


def test_interleaved_ring_shares_an_uplink_and_falls_back():
    node = T.svail_pcie_node()
    bad = N.simulate_allreduce("ring", node, 64e6, order=[0, 4, 1, 5, 2, 6, 3, 7])
    assert bad.path == "event" and "carries 4 messages in one round" in bad.path_note
    assert bad.time_s * 1e3 == pytest.approx(28.44, abs=0.005)  # the netsim doctest's figure


def test_messages_that_need_not_wait_for_each_other_fall_back():
    # On a line 0-1-2-3, 0 -> 2 (round 0) and 1 -> 3 (round 1) share cable 1 -> 2 and no rank: 1 -> 3 is ready
    # at once and queues behind 0 -> 2, which only the events can play.
    line = NETS["from_graph, a line"](4)
    sched = S.Schedule("custom", 4, 1, ((S.Transfer(0, 2, 0, 1, "copy"),), (S.Transfer(1, 3, 0, 1, "copy"),)))
    r = N.simulate(sched, line, nbytes=1e6)
    assert r.path == "event"
    assert r.path_note == "link (1, 2) serves 0 -> 2 and then 1 -> 3, which need not wait for each other"
    # 1 -> 3 reaches cable 1 -> 2 at once, 0 -> 2 one latency later and waits for it: alpha + 2 n beta,
    # where round by round (0 -> 2, then 1 -> 3) would give 4 alpha + 2 n beta
    assert r.time_s == pytest.approx(ALPHA + 2e6 * BETA, rel=REL)
    with pytest.raises(ValueError, match=r"method='fast' cannot decide this case: link \(1, 2\) serves"):
        N.simulate(sched, line, nbytes=1e6, method="fast")


def test_two_reductions_into_one_rank_in_a_round_fall_back():
    # two reductions into rank 0 in one round, over different links: only its arithmetic is shared
    sched = S.Schedule("custom", 3, 2, ((S.Transfer(1, 0, 0, 2, "reduce"), S.Transfer(0, 0, 0, 2, "reduce")),))
    net = NETS["switch"](3)
    r = N.simulate(sched, net, nbytes=1e6, gamma=GAMMA)
    assert r.path == "event" and r.path_note == "rank 0 reduces 2 messages in one round"
    assert N.simulate(sched, net, nbytes=1e6).path == "fast"  # without arithmetic nothing is shared
    assert_same(N.simulate(sched, net, nbytes=1e6), N.simulate(sched, net, nbytes=1e6, method="event"))


@pytest.mark.parametrize("p, length", [(2, 2), (3, 5), (4, 2), (5, 3), (7, 7), (8, 64), (12, 30)])
def test_ring_rounds_are_the_ring_schedule(p, length):
    order = list(np.random.default_rng(p).permutation(p))
    sched = S.relabel(S.build("ring", p, length), order)
    want = list(F.schedule_rounds(sched))
    got = list(F.ring_rounds(p, length, order))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)
    assert F.ring_transfers(p, length) == sched.transfers


@pytest.mark.parametrize("make", [lambda: T.switch(9, bandwidth_Bps=1e9, latency_s=1e-6), T.svail_pcie_node,
                                  T.hybrid_cube_mesh, lambda: T.multi_node(3, 2),
                                  lambda: T.ring(6, bandwidth_Bps=1e9, latency_s=1e-6),
                                  lambda: NETS["from_graph, a line"](5)])
def test_routes_are_networkx_shortest_paths(make):
    g = make()
    p = g.graph["ranks"]
    for s in range(p):
        for d in range(p):
            assert F.route(g, s, d) == nx.shortest_path(g, s, d, weight="latency_s"), (s, d)


def test_the_timeline_is_off_by_default_only_at_scale():
    small = N.simulate_allreduce("ring", NETS["switch"](8), 1e6)
    assert len(small.timeline) == 2 * small.messages  # a send and a receive mark per message
    big = N.simulate_allreduce("ring", NETS["switch"](512), 1e6)  # 523,264 messages > 2^18
    assert big.messages > F.TIMELINE_AUTO_MAX_PIECES and big.timeline == []
    asked = N.simulate_allreduce("ring", NETS["switch"](512), 1e6, timeline=True)
    assert len(asked.timeline) == 2 * asked.messages


def test_method_is_checked():
    net = NETS["switch"](3)
    with pytest.raises(ValueError, match=r"method must be one of auto, fast, event, got 'quick'"):
        N.simulate(S.build("ring", 3, 3), net, nbytes=1.0, method="quick")
    with pytest.raises(ValueError, match=r"method must be one of auto, fast, event, got 'quick'"):
        N.simulate_allreduce("ring", net, 1.0, method="quick")
    with pytest.raises(ValueError, match=r"order must be a permutation of 0 .. 2"):
        N.simulate_allreduce("ring", net, 1.0, order=[0, 0, 1])


def test_the_benchmark_prints_ranks_against_seconds():
    import io

    from scaledl.comm import netsim_bench

    buf = io.StringIO()
    assert netsim_bench.main(["--quick", "--ranks", "8", "37", "--events-up-to", "8"], out=buf) == 0
    lines = buf.getvalue().splitlines()
    assert lines[1].split()[:4] == ["topology", "algorithm", "ranks", "messages"]
    assert [ln.split()[2] for ln in lines[2:]] == ["8", "37"]
    assert lines[2].split()[4] == "fast" and lines[3].split()[6] == "-"  # events timed up to 8 ranks only


TWO_LEVEL = [  # (schedule builder, topology builder) of the two-level algorithms, where schedule.py has them
    ("hierarchical", lambda: TL.hierarchical(3, 4, 48), lambda: T.cluster(3, 4)),
    ("hierarchical", lambda: TL.hierarchical(3, 4, 48), lambda: T.cluster(3, 4, nics_per_node=2, nodes_per_leaf=2,
                                                                          oversubscription=2.0)),
    ("hierarchical", lambda: TL.hierarchical(5, 2, 30, inter="rabenseifner"), lambda: T.cluster(5, 2)),
    ("torus_2d", lambda: TL.torus_2d(3, 5, 30), lambda: T.torus(3, 5, bandwidth_Bps=1 / BETA, latency_s=ALPHA)),
    ("torus_2d", lambda: TL.torus_2d(4, 4, 32), lambda: NETS["switch"](16)),
    ("torus_2d", lambda: TL.torus_2d(5, 3, 30), lambda: T.multi_node(5, 3)),
]


@pytest.mark.parametrize("case", range(len(TWO_LEVEL)))
def test_fast_path_agrees_with_events_on_two_level_algorithms(case):
    name, make_schedule, make_net = TWO_LEVEL[case]
    sched, net = make_schedule(), make_net()
    for gamma in (0.0, GAMMA):
        assert_same(N.simulate(sched, net, nbytes=6e6, gamma=gamma),
                    N.simulate(sched, net, nbytes=6e6, gamma=gamma, method="event"), timeline=True)


# simulate_two_level: the two-level algorithms from their rounds as arrays, against the event path
TWO_LEVEL_ARRAYS = [
    ("hierarchical", 3, 4, "ring", lambda: T.cluster(3, 4)),
    ("hierarchical", 3, 4, "ring", lambda: T.multi_node(3, 4)),
    ("hierarchical", 5, 8, "ring", lambda: T.cluster(5, 8, nics_per_node=2, nodes_per_leaf=2, oversubscription=2.0)),
    ("hierarchical", 5, 8, "rabenseifner", lambda: T.multi_node(5, 8)),
    ("hierarchical", 7, 3, "ring", lambda: T.cluster(7, 3, nodes_per_leaf=2)),
    ("hierarchical", 7, 3, "recursive_doubling", lambda: T.multi_node(7, 3)),
    ("torus_2d", 3, 5, "ring", lambda: T.torus(3, 5, bandwidth_Bps=1 / BETA, latency_s=ALPHA)),
    ("torus_2d", 3, 5, "ring", lambda: T.multi_node(3, 5)),
    ("torus_2d", 3, 5, "ring", lambda: T.cluster(3, 5)),
]


@pytest.mark.parametrize("case", range(len(TWO_LEVEL_ARRAYS)))
def test_two_level_from_arrays_agrees_with_events(case):
    alg, a, b, inter, make_net = TWO_LEVEL_ARRAYS[case]
    net = make_net()
    for gamma in (0.0, GAMMA):
        got = N.simulate_two_level(alg, a, b, net, 6e6, inter=inter, gamma=gamma)
        ref = N.simulate_two_level(alg, a, b, net, 6e6, inter=inter, gamma=gamma, method="event")
        assert_same(got, ref, timeline=True)
        # and the events of the built schedule, the same thing by simulate()
        length = b * a * (1 << (a.bit_length() - 1)) * 2
        sched = TL.torus_2d(a, b, length) if alg == "torus_2d" else TL.hierarchical(a, b, length, inter=inter)
        assert_same(got, N.simulate(sched, net, nbytes=6e6, gamma=gamma, method="event"))
        assert (got.path_note == "") == (got.path == "fast")
        if case != 2:  # there 4 GPUs share each NIC: their inter-node rings queue on its cable
            assert got.path == "fast", got.path_note
        else:
            assert got.path == "event" and "carries 4 messages in one round" in got.path_note


def test_two_level_falls_back_and_says_why():
    net = T.multi_node(3, 4)
    r = N.simulate_two_level("hierarchical", 3, 4, net, 6e6, chunks=2)
    assert r.path == "event" and "chunks=2" in r.path_note
    assert_same(r, N.simulate(TL.hierarchical(3, 4, 48), net, nbytes=6e6, chunks=2, method="event"))
    # all ranks behind one switch port: the inter-node rings' messages share the links of a line
    line = T.from_graph(nx.path_graph(12), bandwidth_Bps=1 / BETA, latency_s=ALPHA)
    r = N.simulate_two_level("torus_2d", 3, 4, line, 6e6)
    assert r.path == "event" and "carries" in r.path_note
    assert_same(r, N.simulate(TL.torus_2d(3, 4, 48), line, nbytes=6e6, method="event"))
    with pytest.raises(ValueError, match="method='fast' cannot decide this case: link"):
        N.simulate_two_level("torus_2d", 3, 4, line, 6e6, method="fast")
    with pytest.raises(ValueError, match=r"algorithm must be one of hierarchical, torus_2d, got 'ring'"):
        N.simulate_two_level("ring", 3, 4, net, 6e6)
    with pytest.raises(ValueError, match=r"inter must be 'ring' for torus_2d"):
        N.simulate_two_level("torus_2d", 3, 4, net, 6e6, inter="binomial")


@pytest.mark.parametrize("make", [lambda: T.multi_node(3, 4), lambda: T.multi_node(2, 3), lambda: T.multi_node(5, 2),
                                  lambda: T.multi_node(3, 2, nvlink_latency_s=1e-6, nic_latency_s=1e-6),  # ties
                                  lambda: T.multi_node(4, 2, nvlink_latency_s=1e-6, nic_latency_s=0.2e-6),
                                  lambda: T.cluster(3, 4, nics_per_node=2, nodes_per_leaf=2, oversubscription=2.0)])
def test_router_is_networkx_shortest_paths_on_all_pairs(make):
    g = make()
    p = g.graph["ranks"]
    router = F.Router(g)
    assert router.kind == ("multi_node" if "nics_per_node" not in g.graph else None)
    for s in range(p):
        for d in range(p):
            assert router.route(s, d) == nx.shortest_path(g, s, d, weight="latency_s"), (s, d)


def test_the_benchmark_prints_two_level_rows():
    import io

    from scaledl.comm import netsim_bench

    buf = io.StringIO()
    assert netsim_bench.main(["--quick", "--ranks", "8", "--events-up-to", "15", "--two-level", "hierarchical:3x4",
                              "torus_2d:3x5"], out=buf) == 0
    lines = buf.getvalue().splitlines()
    assert lines[3].split()[5:7] == ["build", "s"]
    rows = [ln.split() for ln in lines[4:]]
    assert [r[:4] for r in rows] == [["multi_node", "hierarchical", "3x4", "12"], ["torus", "torus_2d", "3x5", "15"]]
    assert all(r[5] == "fast" and r[8] != "-" for r in rows)  # events timed (and checked equal) up to 15 ranks
