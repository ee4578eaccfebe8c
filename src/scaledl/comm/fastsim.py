"""The fast path of :mod:`scaledl.comm.netsim`: whole rounds as NumPy arrays, where no message can queue.

The event path plays every piece hop by hop on a heap, about a microsecond of Python per event: a ring
all-reduce over 1024 ranks is 2.1 million messages. Most schedules of the book never make a message wait
for a link, though, and then the heap decides nothing. This module finds that out round by round and, where
it holds, computes each round with a few array operations.

When nothing queues (the argument, which the tests check against the event path):
  - ``chunks == 1`` (the k pieces of one message would share its links and queue behind one another);
  - no link carries two messages of one round, and no rank reduces two messages of one round (gamma > 0);
  - each time a link serves a new message, that message shares a rank with the link's previous message.
    A rank's messages of a round wait for all its messages of its previous round (the blocking-rounds rule
    of netsim), so the new message is ready only after the previous one has arrived, and arrival comes
    after the link's last byte: the link is always free when a head reaches it.
Then each message's times follow from its ready time and its route alone, hop by hop with netsim's own
arithmetic (the same float operations in the same order, so the totals agree to the last bit or to the
order of summation), and a message is ready when both its ranks have finished their previous round:
``ready = max(clock[src], clock[dst])``. (Waiting for the data it carries adds nothing: that data was
written into src or dst by an earlier message of theirs.) Where a condition fails, :func:`run` raises
:class:`Undecided` naming the link or rank, and netsim falls back to the event path.

Routes are netsim's: networkx's latency-shortest path, found without a search where the path is forced (the
sender has one outgoing link and the receiver one incoming link from the same switch, as on a switch
topology), since a forced path is the only simple path and so the one any shortest-path search returns; on
``topology.multi_node`` (:class:`Router`) from one Dijkstra per local rank and the symmetry of the nodes.

>>> from scaledl.comm import topology
>>> net = topology.switch(4, bandwidth_Bps=1e9, latency_s=1e-6)
>>> out = run(ring_rounds(4, 4), 4, 4, net, nbytes=4e6, chunks=1, gamma=0.0, timeline=False)
>>> round(out["time_s"] * 1e6, 6), out["messages"]
(6006.0, 24)
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from scaledl.comm.transfers import Schedule, bounds

__all__ = ["TIMELINE_AUTO_MAX_PIECES", "Undecided", "route", "Router", "ring_rounds", "ring_transfers",
           "schedule_rounds", "run"]

# netsim records the per-rank timeline by default only up to this many pieces: three tuples per piece, so a
# ring over 256 ranks (130,560 pieces) keeps it, one over 1024 ranks (2.1 million) would hold about a GB.
TIMELINE_AUTO_MAX_PIECES = 2**18
_FORCED_HOPS = 8  # how far a forced path is followed from either end before asking networkx


class Undecided(Exception):
    """The fast path cannot show that no message queues; the message says where."""


def route(topology: nx.DiGraph, src, dst) -> list:
    """The nodes of the latency-shortest path from ``src`` to ``dst``, the one netsim uses.

    Where the path is forced it is read off without a search: from ``src`` while a node has exactly one
    outgoing link, towards ``dst`` while a node has exactly one incoming link; if the two chains meet, every
    path from src to dst runs along them, so the simple path through the first meeting node is the only
    simple path and what ``networkx.shortest_path`` returns. Otherwise it asks networkx.

    >>> from scaledl.comm import topology
    >>> route(topology.switch(4096, bandwidth_Bps=1e9, latency_s=1e-6), 5, 9)
    [5, 'switch', 9]
    """
    if src == dst:
        return [src]
    prefix, seen = [src], {src}
    while len(prefix) <= _FORCED_HOPS:
        out = topology.succ[prefix[-1]]
        if len(out) != 1:
            break
        (nxt,) = out
        if nxt in seen:
            break
        prefix.append(nxt)
        seen.add(nxt)
        if nxt == dst:
            return prefix
    suffix, where = [dst], {dst: 0}
    while len(suffix) <= _FORCED_HOPS:
        into = topology.pred[suffix[-1]]
        if len(into) != 1:
            break
        (prv,) = into
        if prv in where:
            break
        where[prv] = len(suffix)
        suffix.append(prv)
    for i, node in enumerate(prefix):
        if node in where:
            return prefix[:i] + suffix[where[node]::-1]
    return nx.shortest_path(topology, src, dst, weight="latency_s")


class Router:
    """:func:`route` with the shortest paths of a :func:`scaledl.comm.topology.multi_node` found once per
    local rank instead of once per pair.

    On ``multi_node`` every permutation of the nodes is an automorphism of the graph (links and weights
    included), so the path from rank (node a, local i) to (node b, local j) is the image of the path from
    (0, i) to (1, j), or to (0, j) when a = b. One Dijkstra from each (0, i) keeps every tied predecessor
    (networkx compares ties exactly); where the path to the representative is the only shortest path, its
    image is the only shortest path of the pair, so the one ``networkx.shortest_path`` returns. Where it
    is not unique (tied latencies), or on any other topology, every pair asks :func:`route`; a
    :func:`scaledl.comm.topology.cluster` does too (a search there costs about 2 ms; its symmetry classes
    are many and each would need a Dijkstra over the whole cluster). The tests hold it against
    ``networkx.shortest_path`` on all pairs.
    """

    def __init__(self, topology: nx.DiGraph):
        self.topology, self.kind, self.trees = topology, None, {}
        p = topology.graph.get("ranks", 0)
        if "ib" in topology and "nvswitch0" in topology and "nics_per_node" not in topology.graph:
            gpn = sum(1 for r in topology.predecessors("nvswitch0") if isinstance(r, int))
            if gpn and p % gpn == 0 and p // gpn >= 2 and all(
                    topology.out_degree(r) == 2 and topology.has_edge(r, f"nvswitch{r // gpn}")
                    and topology.has_edge(r, "ib") for r in range(p)):
                self.kind, self.g = "multi_node", gpn

    def _path(self, i: int, dst: int):
        """The only shortest path from rank i (node 0) to rank dst, or None where it is not unique."""
        if i not in self.trees:
            pred, _ = nx.dijkstra_predecessor_and_distance(self.topology, i, weight="latency_s")
            self.trees[i] = (pred, {i: 1})
        pred, count = self.trees[i]

        def paths_to(v):  # how many shortest paths reach v, capped at 2
            if v not in count:
                count[v] = 0  # a zero-latency cycle counts once
                count[v] = min(2, sum(paths_to(u) for u in pred.get(v, ())))
            return count[v]

        if dst not in pred or paths_to(dst) != 1:
            return None
        path = [dst]
        while path[-1] != i:
            path.append(pred[path[-1]][0])
        return path[::-1]

    def route(self, src, dst) -> list:
        """The path netsim uses from ``src`` to ``dst``: equal to :func:`route`."""
        if self.kind is None or src == dst or not (isinstance(src, int) and isinstance(dst, int)):
            return route(self.topology, src, dst)
        g = self.g
        a, b = src // g, dst // g
        path = self._path(src % g, dst % g + (0 if a == b else g))
        if path is None:
            return route(self.topology, src, dst)
        nmap = {0: a, 1: b}
        out = []
        for v in path:
            if isinstance(v, int):
                out.append(nmap[v // g] * g + v % g)
            elif v.startswith("nvswitch"):
                out.append(f"nvswitch{nmap[int(v[8:])]}")
            else:
                out.append(v)  # "ib": fixed by every permutation of the nodes
        return out


def ring_transfers(p: int, length: int) -> int:
    """How many messages ``schedule.build("ring", p, length)`` sends, without building it."""
    if p < 2:
        return 0
    b = np.asarray(bounds(length, p), dtype=np.int64)
    return 2 * (p - 1) * int(np.count_nonzero(np.diff(b)))


def ring_rounds(p: int, length: int, order=None):
    """The rounds of ``schedule.build("ring", p, length)`` (relabelled by ``order``) as arrays
    ``(src, dst, start, stop, is_reduce)``, one tuple per round, without a :class:`Transfer` per message."""
    if p < 2:
        return
    i = np.arange(p)
    order = i if order is None else np.asarray(order, dtype=np.int64)
    src, dst = order, order[(i + 1) % p]
    b = np.asarray(bounds(length, p), dtype=np.int64)
    reduce_, copy = np.ones(p, dtype=bool), np.zeros(p, dtype=bool)
    phases = ((reduce_, lambda s: (i - s) % p), (copy, lambda s: (i + 1 - s) % p))
    for is_reduce, block in phases:  # reduce-scatter, then all-gather, as schedule._ring
        for s in range(p - 1):
            blk = block(s)
            start, stop = b[blk], b[blk + 1]
            keep = stop > start
            if keep.all():
                yield src, dst, start, stop, is_reduce
            elif keep.any():
                yield src[keep], dst[keep], start[keep], stop[keep], is_reduce[keep]


def schedule_rounds(schedule: Schedule):
    """The rounds of any :class:`Schedule` as the arrays of :func:`ring_rounds`."""
    for rnd in schedule.rounds:
        a = np.array([(t.src, t.dst, t.start, t.stop, t.op == "reduce") for t in rnd], dtype=np.int64)
        a = a.reshape(-1, 5)
        yield a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4].astype(bool)


class _Net:
    """Routes of the (src, dst) pairs met so far, and the links on them, as arrays."""

    def __init__(self, topology: nx.DiGraph, p: int):
        self.topology, self.p, self.router = topology, p, Router(topology)
        self.keys = np.empty(0, dtype=np.int64)  # src * p + dst, sorted
        self.rid = np.empty(0, dtype=np.int64)  # route id of each key
        self.pairs, self.routes = [], []  # route id -> (src, dst), [link id per hop]
        self.link_id, self.edges, self.bw, self.lat = {}, [], [], []

    def route_ids(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        key = src * self.p + dst
        pos = np.searchsorted(self.keys, key)
        hit = pos < len(self.keys)
        hit[hit] = self.keys[pos[hit]] == key[hit]
        if not hit.all():
            new = np.unique(key[~hit])
            for k in new.tolist():
                s, d = divmod(k, self.p)
                path = self.router.route(s, d)
                hops = []
                for e in zip(path[:-1], path[1:]):
                    if e not in self.link_id:
                        self.link_id[e] = len(self.edges)
                        self.edges.append(e)
                        self.bw.append(self.topology.edges[e]["bandwidth_Bps"])
                        self.lat.append(self.topology.edges[e]["latency_s"])
                    hops.append(self.link_id[e])
                self.pairs.append((s, d))
                self.routes.append(hops)
            self.keys = np.concatenate([self.keys, new])
            self.rid = np.concatenate([self.rid, np.arange(len(self.routes) - len(new), len(self.routes))])
            order = np.argsort(self.keys, kind="stable")
            self.keys, self.rid = self.keys[order], self.rid[order]
            pos = np.searchsorted(self.keys, key)
        return self.rid[pos]

    def link_order(self) -> list[int]:
        """Link ids in the order netsim's event path numbers them: by sorted (src, dst), then hop."""
        seen, out = set(), []
        for r in sorted(range(len(self.pairs)), key=self.pairs.__getitem__):
            for i in self.routes[r]:
                if i not in seen:
                    seen.add(i)
                    out.append(i)
        return out


class _Plan:
    """What one round's pattern of messages (who sends to whom, which reduce) needs, checked once and reused
    while the next rounds repeat it, as every round of a ring does."""

    def __init__(self, src, dst, is_reduce, net: _Net, users: dict, reduces: bool):
        self.src, self.dst, self.is_reduce = src, dst, is_reduce
        rids = net.route_ids(src, dst)
        hops = [len(net.routes[r]) for r in rids.tolist()]
        n_hops = np.asarray(hops, dtype=np.int64)
        self.groups = []  # (piece indices or None for all, [link ids of hop h], [bandwidth], [latency])
        for c in np.unique(n_hops).tolist():
            idx = None if len(hops) and (n_hops == c).all() else np.flatnonzero(n_hops == c)
            sel = rids if idx is None else rids[idx]
            links = [np.array([net.routes[r][h] for r in sel.tolist()], dtype=np.int64) for h in range(c)]
            self.groups.append((idx, c, links, [np.asarray(net.bw)[lk] for lk in links],
                                [np.asarray(net.lat)[lk] for lk in links]))
        every = [(lk, idx) for idx, _, links, _, _ in self.groups for lk in links]
        used = np.concatenate([lk for lk, _ in every]) if every else np.empty(0, dtype=np.int64)
        count = np.bincount(used) if len(used) else np.zeros(0, dtype=np.int64)
        if len(count) and count.max() > 1:
            e = net.edges[int(count.argmax())]
            raise Undecided(f"link {e} carries {int(count.max())} messages in one round")
        for lk, idx in every:  # a link's next message must share a rank with its previous one
            s = src if idx is None else src[idx]
            d = dst if idx is None else dst[idx]
            for i, a, b in zip(lk.tolist(), s.tolist(), d.tolist()):
                if i in users and not ({a, b} & set(users[i])):
                    raise Undecided(f"link {net.edges[i]} serves {users[i][0]} -> {users[i][1]} and then "
                                    f"{a} -> {b}, which need not wait for each other")
                users[i] = (a, b)
        if reduces and is_reduce.any():
            per_rank = np.bincount(dst[is_reduce])
            if per_rank.max() > 1:
                raise Undecided(f"rank {int(per_rank.argmax())} reduces {int(per_rank.max())} messages in "
                                "one round")
        self.unique = len(np.unique(src)) == len(src) and len(np.unique(dst)) == len(dst)
        # the event path counts one event per hop (one for a message to oneself) and one per reduction it
        # queues for the receiver's arithmetic
        self.events = int(np.maximum(n_hops, 1).sum())
        if reduces:
            self.events += int(np.count_nonzero(is_reduce & (n_hops > 0)))

    def same(self, src, dst, is_reduce) -> bool:
        return all(a is b or (len(a) == len(b) and np.array_equal(a, b))
                   for a, b in ((src, self.src), (dst, self.dst), (is_reduce, self.is_reduce)))


def run(rounds, p: int, length: int, topology: nx.DiGraph, *, nbytes: float, chunks: int, gamma: float,
        timeline: bool) -> dict:
    """Play ``rounds`` (arrays as :func:`ring_rounds` yields) like ``netsim.simulate``; returns the fields
    of :class:`netsim.Result` as a dict. Arguments are assumed checked by netsim.

    Raises:
        Undecided: a message might queue; netsim's event path must decide.
    """
    if chunks != 1:
        raise Undecided(f"chunks={chunks}: the pieces of one message queue on its links")
    elem_B = nbytes / length / chunks if length else 0.0
    net, users, reduces = _Net(topology, p), {}, gamma > 0
    clock = np.zeros(p)  # when each rank finished its latest round
    link_B, busy = np.zeros(0), np.zeros(0)
    marks, end_s, messages, events, plan = [], 0.0, 0, 0, None
    for src, dst, start, stop, is_reduce in rounds:
        if len(src) == 0:
            continue
        if plan is None or not plan.same(src, dst, is_reduce):
            plan = _Plan(src, dst, is_reduce, net, users, reduces)
            grow = len(net.edges) - len(link_B)
            link_B, busy = np.concatenate([link_B, np.zeros(grow)]), np.concatenate([busy, np.zeros(grow)])
        size = (stop - start) * elem_B
        ready = np.maximum(clock[src], clock[dst])
        done = ready.copy()
        for idx, c, links, bws, lats in plan.groups:
            if c == 0:
                continue  # a message to oneself arrives when it is ready
            sz = size if idx is None else size[idx]
            now = ready if idx is None else ready[idx]
            end = now + sz / bws[0]
            busy[links[0]] += end - now
            link_B[links[0]] += sz
            if timeline:
                marks.append(((src if idx is None else src[idx]), now, end, "send"))
            for h in range(1, c):  # virtual cut-through, as netsim: no earlier than the tail of hop h-1
                now = now + lats[h - 1]
                end = np.maximum(now + sz / bws[h], end + lats[h - 1])
                busy[links[h]] += end - now
                link_B[links[h]] += sz
            arrived = end + lats[c - 1]
            if timeline:
                marks.append(((dst if idx is None else dst[idx]), now + lats[c - 1], arrived, "recv"))
            if idx is None:
                done = arrived
            else:
                done[idx] = arrived
        if reduces and is_reduce.any():
            begin = done[is_reduce]
            done = done.copy()  # the recv marks keep the arrival times
            done[is_reduce] = begin + size[is_reduce] * gamma
            if timeline:
                marks.append((dst[is_reduce], begin, done[is_reduce], "reduce"))
        if plan.unique:
            clock[src] = np.maximum(clock[src], done)
            clock[dst] = np.maximum(clock[dst], done)
        else:
            np.maximum.at(clock, src, done)
            np.maximum.at(clock, dst, done)
        end_s = max(end_s, float(done.max()))
        messages += len(src)
        events += plan.events
    order = net.link_order()
    tl = [(r, a, b, kind) for ranks, starts, ends, kind in marks
          for r, a, b in zip(ranks.tolist(), starts.tolist(), ends.tolist())]
    return {"time_s": end_s, "link_bytes": {net.edges[i]: float(link_B[i]) for i in order},
            "link_busy_s": {net.edges[i]: float(busy[i]) for i in order}, "timeline": tl,
            "messages": messages, "events": events}
