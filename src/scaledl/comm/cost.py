"""Closed-form costs of collectives in the alpha-beta-gamma model.

A message of ``n`` bytes between two ranks costs ``alpha + n beta``; reducing ``n`` bytes costs ``n gamma``.
``alpha`` is the per-message latency (seconds), ``beta`` the seconds per byte of the link (1 / bandwidth),
``gamma`` the seconds per byte of reduction arithmetic. The formulas are those of Thakur, Rabenseifner and
Gropp, "Optimization of Collective Communication Operations in MPICH", International Journal of High
Performance Computing Applications 19(1), 2005, and of the algorithm comments in MPICH's ``src/mpi/coll``.

Recursive doubling and Rabenseifner need a power-of-two number of ranks. For any other ``p`` they run as
MPICH runs them: with ``p' = 2^floor(lg p)`` and ``rem = p - p'``, the first ``2 rem`` ranks pair up and the
even one of each pair sends its whole vector to the odd one, which reduces (one ``alpha + n beta + n gamma``),
the ``p'`` survivors run the power-of-two algorithm, and the result goes back to the ``rem`` folded ranks at
the end (one more ``alpha + n beta``).

Every function broadcasts over NumPy arrays of ``p`` and ``nbytes``, so a whole (ranks x sizes) table is
one call:

>>> round(allreduce_time("ring", 4, 1e6, alpha=1e-6, beta=1e-9) * 1e6, 3)  # 6 alpha + 1.5 n beta, in us
1506.0
>>> allreduce_time("rabenseifner", [4, 5], 1e6, alpha=1e-6, beta=1e-9) * 1e6  # p = 5 pays the fold
array([1504., 3506.])
>>> bus_bandwidth("allreduce", 4, 1e6, 1506e-6) / 1e9  # GB/s, comparable with the link's 1 GB/s
0.99601...
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["ALLREDUCE_ALGORITHMS", "REDUCE_SCATTER_ALGORITHMS", "ALLGATHER_ALGORITHMS", "BROADCAST_ALGORITHMS",
           "BUS_FACTOR_OPS", "allreduce_time", "reduce_scatter_time", "allgather_time", "broadcast_time",
           "bus_bandwidth", "best_algorithm", "floor_lg", "ceil_lg", "hierarchical_allreduce_time",
           "torus_2d_allreduce_time", "nccl_tree_allreduce_time"]

ALLREDUCE_ALGORITHMS = ("ring", "recursive_doubling", "rabenseifner", "binomial", "parameter_server",
                        "double_binary_tree")
REDUCE_SCATTER_ALGORITHMS = ("ring", "recursive_halving")
ALLGATHER_ALGORITHMS = ("ring", "recursive_doubling")
BROADCAST_ALGORITHMS = ("binomial",)
# NCCL's bus-bandwidth factors (nccl-tests, doc/PERFORMANCE.md): busbw = algbw x factor(p) is the per-link
# rate that the operation needs, so it can be compared with a link's bandwidth whatever p is.
BUS_FACTOR_OPS = ("allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce")


def _ranks(p, name: str = "p") -> np.ndarray:
    arr = np.asarray(p)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must be an int or an array of ints (a number of ranks), got {p!r}")
    if arr.size and not np.all(np.isfinite(arr) & (arr == np.floor(arr))):
        raise ValueError(f"{name} must be a whole number of ranks, got {p!r}")
    if arr.size and np.min(arr) < 1:
        raise ValueError(f"{name} must be >= 1 (a number of ranks), got {p!r}")
    return arr.astype(np.int64)


def _sizes(nbytes) -> np.ndarray:
    arr = np.asarray(nbytes)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"nbytes must be a number or an array of numbers (bytes), got {nbytes!r}")
    if arr.size and not (np.all(np.isfinite(arr)) and np.min(arr) >= 0):
        raise ValueError(f"nbytes must be >= 0 and finite (a message size in bytes), got {nbytes!r}")
    return arr.astype(np.float64)


def _rate(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number (seconds or seconds per byte), got {value!r}")
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be >= 0 and finite, got {value!r}")
    return float(value)


def _choice(what: str, algorithm, allowed: tuple[str, ...]) -> str:
    if algorithm not in allowed:
        raise ValueError(f"unknown {what} {algorithm!r}; expected one of {', '.join(allowed)}")
    return algorithm


def _out(value: np.ndarray):
    return float(value) if value.ndim == 0 else value


def floor_lg(p) -> np.ndarray:
    """floor(log2 p), exactly, for integers p >= 1 (frexp reads the exponent; no rounding of a log).

    >>> floor_lg(np.array([1, 2, 3, 4, 1023, 1024]))
    array([ 0,  1,  1,  2,  9, 10])
    """
    return np.frexp(np.asarray(p, dtype=np.float64))[1].astype(np.int64) - 1


def ceil_lg(p) -> np.ndarray:
    """ceil(log2 p), exactly, for integers p >= 1: the rounds of a binomial tree over p ranks.

    >>> ceil_lg(np.array([1, 2, 3, 4, 5, 1024]))
    array([ 0,  1,  2,  2,  3, 10])
    """
    p = np.asarray(p, dtype=np.int64)
    return np.where(p > 1, floor_lg(np.maximum(p - 1, 1)) + 1, 0)


def allreduce_time(algorithm: str, p, nbytes, *, alpha: float, beta: float, gamma: float = 0.0):
    """Seconds for an all-reduce of ``nbytes`` per rank over ``p`` ranks.

    Algorithms (n = nbytes, p' = 2^floor(lg p), fold = alpha + n beta + n gamma + alpha + n beta when p != p'):
      - ``ring``: 2 (p-1) alpha + 2 n (p-1)/p beta + n (p-1)/p gamma (reduce-scatter then all-gather, both
        around the ring; any p, no fold).
      - ``recursive_doubling``: lg p' (alpha + n beta + n gamma) + fold.
      - ``rabenseifner``: 2 lg p' alpha + 2 n (p'-1)/p' beta + n (p'-1)/p' gamma + fold (reduce-scatter by
        recursive halving, all-gather by recursive doubling).
      - ``binomial``: ceil(lg p) (alpha + n beta + n gamma) for the reduce to rank 0, then ceil(lg p)
        (alpha + n beta) for the broadcast (any p, no fold).
      - ``parameter_server``: rank 0 is the server; the other p-1 ranks send to it at once and their
        messages queue on the server's link, so latency is paid once per phase and bandwidth p-1 times.
        The server reduces each message as it lands, overlapping the next one's arrival, so the push costs
        alpha + n min(beta, gamma) + (p-1) n max(beta, gamma); the pull alpha + (p-1) n beta.
      - ``double_binary_tree`` (NCCL): two binary trees, each carrying half the data, so that every rank
        sends and receives n bytes per phase; in the pipelined limit that NCCL runs it in,
        2 ceil(lg p) alpha + 2 n beta + n gamma for p > 2 (the latency of a message up and down trees of
        depth ceil(lg p), the bandwidth of reduce and broadcast). For p = 2 each tree is one edge and the
        cost is that of recursive doubling on halves: 2 alpha + n beta + n/2 gamma. It is a bound: the
        simulator (:mod:`scaledl.comm.netsim`) reaches it on 4 ranks and comes within 30 % of it on 8 to 64
        once messages are cut into 64 or more pieces (35 % at 255); unpipelined, the trees take several times longer.

    Raises:
        ValueError: for an unknown algorithm, p < 1, negative nbytes or negative alpha/beta/gamma.
    """
    _choice("allreduce algorithm", algorithm, ALLREDUCE_ALGORITHMS)
    p, n = np.broadcast_arrays(_ranks(p), _sizes(nbytes))
    a, b, g = _rate("alpha", alpha), _rate("beta", beta), _rate("gamma", gamma)
    pf = p.astype(np.float64)
    p2 = np.left_shift(1, floor_lg(p)).astype(np.float64)
    lg2 = floor_lg(p).astype(np.float64)
    fold = np.where(p != p2, 2 * a + 2 * n * b + n * g, 0.0)
    if algorithm == "ring":
        t = 2 * (pf - 1) * a + 2 * n * (pf - 1) / pf * b + n * (pf - 1) / pf * g
    elif algorithm == "recursive_doubling":
        t = lg2 * (a + n * b + n * g) + fold
    elif algorithm == "rabenseifner":
        t = 2 * lg2 * a + 2 * n * (p2 - 1) / p2 * b + n * (p2 - 1) / p2 * g + fold
    elif algorithm == "binomial":
        c = ceil_lg(p).astype(np.float64)
        t = c * (a + n * b + n * g) + c * (a + n * b)
    elif algorithm == "parameter_server":
        t = np.where(p > 1, 2 * a + n * min(b, g) + (pf - 1) * n * max(b, g) + (pf - 1) * n * b, 0.0)
    else:  # double_binary_tree
        c = ceil_lg(p).astype(np.float64)
        t = np.where(p > 2, 2 * c * a + 2 * n * b + n * g, np.where(p == 2, 2 * a + n * b + n / 2 * g, 0.0))
    return _out(np.asarray(t, dtype=np.float64))


def hierarchical_allreduce_time(nodes, ranks_per_node, nbytes, *, intra_alpha: float, intra_beta: float,
                                inter_alpha: float, inter_beta: float, gamma: float = 0.0, inter: str = "ring"):
    """Seconds for the hierarchical all-reduce of :func:`scaledl.comm.two_level.hierarchical`: N = ``nodes``
    nodes of g = ``ranks_per_node`` ranks, n = ``nbytes`` per rank, links inside a node costing
    (intra_alpha, intra_beta) and between nodes (inter_alpha, inter_beta). The three phases add up:

      ring reduce-scatter in the node     (g-1) a_i + n (g-1)/g (b_i + gamma)
      ``inter`` all-reduce of n/g bytes   allreduce_time(inter, N, n/g; a_e, b_e, gamma)
      ring all-gather in the node         (g-1) a_i + n (g-1)/g b_i

    With a ring across nodes that is 2 (g-1) a_i + 2 n (g-1)/g b_i + 2 (N-1) a_e + 2 n (N-1)/(N g) b_e
    + n (Ng-1)/(Ng) gamma: each NIC carries 1/g of what a flat ring puts on it, and the latency term grows
    with g + N instead of g N. The g inter-node all-reduces run side by side, so the form holds when each rank
    has its own path between nodes (one NIC per GPU and a non-blocking fabric); GPUs that share a NIC or
    an oversubscribed spine slow the middle term, which the simulator shows.

    >>> t = hierarchical_allreduce_time(4, 8, 8e6, intra_alpha=0.5e-6, intra_beta=1 / 450e9,
    ...                                 inter_alpha=3e-6, inter_beta=1 / 50e9)
    >>> round(t * 1e6, 2)  # us: 7 us latency + 31 us over NVLink + 18 us + 30 us over InfiniBand
    86.11

    Raises:
        ValueError: nodes or ranks_per_node < 1, negative nbytes, alpha, beta or gamma, an unknown inter.
    """
    _choice("inter-node allreduce algorithm", inter, ALLREDUCE_ALGORITHMS)
    nodes, g, n = np.broadcast_arrays(_ranks(nodes, "nodes"), _ranks(ranks_per_node, "ranks_per_node"),
                                      _sizes(nbytes))
    a_i, b_i = _rate("intra_alpha", intra_alpha), _rate("intra_beta", intra_beta)
    a_e, b_e, gm = _rate("inter_alpha", inter_alpha), _rate("inter_beta", inter_beta), _rate("gamma", gamma)
    gf = g.astype(np.float64)
    t = 2 * (gf - 1) * a_i + 2 * n * (gf - 1) / gf * b_i + n * (gf - 1) / gf * gm
    t = t + np.asarray(allreduce_time(inter, nodes, n / gf, alpha=a_e, beta=b_e, gamma=gm))
    return _out(np.asarray(t, dtype=np.float64))


def nccl_tree_allreduce_time(nodes, ranks_per_node, nbytes, *, intra_alpha: float, inter_alpha: float,
                             beta: float):
    """Seconds for an all-reduce by NCCL's tree over N = ``nodes`` nodes of g = ``ranks_per_node`` ranks, priced
    as NCCL's tuner prices it (NVIDIA, NCCL 2.30.7, ``src/graph/tuning.cc``, 2026, ``ncclTopoTuneModel``):

      latency    2 ((g-1) intra_alpha + floor(lg N) inter_alpha)
      bandwidth  2 n beta

    NCCL's tree is a chain through the g GPUs of each node and a (double) binary tree across the nodes; a
    message goes up it and back down, hence the 2, the g - 1 hops inside a node and the lg N between nodes
    (``log2i``, rounded down). The tuner turns a tree's bus bandwidth into algorithm bandwidth by halving it,
    so the tree moves 2 n per rank where the ring moves 2 n (p-1)/p: the same at large p, twice as much at
    p = 2. The tuner's refinements of the bandwidth (the tree's all-reduce bus bandwidth x 0.92, a
    size-dependent correction) and its per-protocol latency constants are left out: this is the alpha-beta
    form, with one alpha per kind of hop, to set beside :func:`allreduce_time`'s ring.

    >>> t = nccl_tree_allreduce_time(128, 8, 1e8, intra_alpha=5e-6, inter_alpha=5e-6, beta=1 / 400e9)
    >>> round(t * 1e6, 1)  # us: 2 (7 + 7) x 5 us of latency + 2 x 100 MB / 400 GB/s
    640.0
    >>> round(allreduce_time("ring", 1024, 1e8, alpha=5e-6, beta=1 / 400e9) * 1e6, 1)  # 10.23 ms of latency
    10729.5

    Raises:
        ValueError: nodes or ranks_per_node < 1, negative nbytes, alpha or beta.
    """
    nodes, g, n = np.broadcast_arrays(_ranks(nodes, "nodes"), _ranks(ranks_per_node, "ranks_per_node"),
                                      _sizes(nbytes))
    a_i, a_e, b = _rate("intra_alpha", intra_alpha), _rate("inter_alpha", inter_alpha), _rate("beta", beta)
    t = 2 * ((g - 1).astype(np.float64) * a_i + floor_lg(nodes).astype(np.float64) * a_e) + 2 * n * b
    return _out(np.asarray(np.where(nodes * g > 1, t, 0.0), dtype=np.float64))


def torus_2d_allreduce_time(rows, cols, nbytes, *, alpha: float, beta: float, gamma: float = 0.0):
    """Seconds for the 2D-torus all-reduce of :func:`scaledl.comm.two_level.torus_2d` (Mikami et al. 2018) on
    a grid of p = rows x cols ranks whose neighbours' links all cost (alpha, beta):
    2 (rows + cols - 2) alpha + 2 n (p-1)/p beta + n (p-1)/p gamma.

    A ring along each row of c = cols ranks takes 2 (c-1) alpha + 2 n (c-1)/c beta, a ring along each column
    on the n/c-byte shard 2 (r-1) alpha + 2 (n/c) (r-1)/r beta; the bandwidth terms add up to the flat ring's
    2 n (rc-1)/(rc), while the latency term is 2 (r + c - 2) alpha instead of 2 (rc - 1) alpha.

    >>> round(torus_2d_allreduce_time(32, 32, 1e8, alpha=1e-6, beta=1e-10) * 1e3, 3)   # ms: 0.124 + 19.980
    20.104
    >>> round(allreduce_time("ring", 1024, 1e8, alpha=1e-6, beta=1e-10) * 1e3, 3)      # the flat ring: 2.046 + 19.980
    22.026

    Raises:
        ValueError: rows or cols < 1, negative nbytes, alpha, beta or gamma.
    """
    r, c, n = np.broadcast_arrays(_ranks(rows, "rows"), _ranks(cols, "cols"), _sizes(nbytes))
    a, b, g = _rate("alpha", alpha), _rate("beta", beta), _rate("gamma", gamma)
    pf = (r * c).astype(np.float64)
    t = 2 * (r + c - 2) * a + 2 * n * (pf - 1) / pf * b + n * (pf - 1) / pf * g
    return _out(np.asarray(t, dtype=np.float64))


def reduce_scatter_time(algorithm: str, p, nbytes, *, alpha: float, beta: float, gamma: float = 0.0):
    """Seconds to reduce-scatter ``nbytes`` per rank (each rank ends with its reduced n/p share).

    ``ring`` (or pairwise): (p-1) alpha + n (p-1)/p (beta + gamma), any p. ``recursive_halving``:
    lg p alpha + n (p-1)/p (beta + gamma), p a power of two.

    >>> reduce_scatter_time("recursive_halving", 8, 8e6, alpha=1e-6, beta=1e-9) * 1e3  # ms
    7.003
    """
    _choice("reduce-scatter algorithm", algorithm, REDUCE_SCATTER_ALGORITHMS)
    p, n = np.broadcast_arrays(_ranks(p), _sizes(nbytes))
    a, b, g = _rate("alpha", alpha), _rate("beta", beta), _rate("gamma", gamma)
    pf = p.astype(np.float64)
    if algorithm == "ring":
        t = (pf - 1) * a + n * (pf - 1) / pf * (b + g)
    else:
        _power_of_two(p, algorithm)
        t = floor_lg(p) * a + n * (pf - 1) / pf * (b + g)
    return _out(np.asarray(t, dtype=np.float64))


def allgather_time(algorithm: str, p, nbytes, *, alpha: float, beta: float):
    """Seconds to all-gather into ``nbytes`` per rank (each rank contributes n/p bytes).

    ``ring``: (p-1) alpha + n (p-1)/p beta, any p. ``recursive_doubling``: lg p alpha + n (p-1)/p beta, p a
    power of two.

    >>> allgather_time("ring", [2, 4], 4e6, alpha=1e-6, beta=1e-9) * 1e3
    array([2.001, 3.003])
    """
    _choice("allgather algorithm", algorithm, ALLGATHER_ALGORITHMS)
    p, n = np.broadcast_arrays(_ranks(p), _sizes(nbytes))
    a, b = _rate("alpha", alpha), _rate("beta", beta)
    pf = p.astype(np.float64)
    if algorithm == "ring":
        t = (pf - 1) * a + n * (pf - 1) / pf * b
    else:
        _power_of_two(p, algorithm)
        t = floor_lg(p) * a + n * (pf - 1) / pf * b
    return _out(np.asarray(t, dtype=np.float64))


def broadcast_time(algorithm: str, p, nbytes, *, alpha: float, beta: float):
    """Seconds to broadcast ``nbytes`` from one rank to ``p``: ``binomial`` is ceil(lg p) (alpha + n beta).

    >>> round(broadcast_time("binomial", 5, 1e6, alpha=1e-6, beta=1e-9) * 1e3, 9)  # 3 rounds, ms
    3.003
    """
    _choice("broadcast algorithm", algorithm, BROADCAST_ALGORITHMS)
    p, n = np.broadcast_arrays(_ranks(p), _sizes(nbytes))
    a, b = _rate("alpha", alpha), _rate("beta", beta)
    return _out(np.asarray(ceil_lg(p) * (a + n * b), dtype=np.float64))


def bus_bandwidth(op: str, p, nbytes, seconds):
    """NCCL's bus bandwidth in bytes/s: (nbytes / seconds) x 2 (p-1)/p for an all-reduce, x (p-1)/p for
    reduce-scatter, all-gather and all-to-all, x 1 for broadcast and reduce (nccl-tests, PERFORMANCE.md).

    ``nbytes`` is the size nccl-tests reports: the full vector (the all-gather's output, the
    reduce-scatter's input). A ring all-reduce in the alpha = 0 limit has a bus bandwidth equal to its
    link bandwidth, whatever p.

    >>> bus_bandwidth("allgather", 8, 8e6, 7e-3) / 1e9
    1.0
    """
    _choice("bus-bandwidth op", op, BUS_FACTOR_OPS)
    p, n = np.broadcast_arrays(_ranks(p), _sizes(nbytes))
    s = np.asarray(seconds, dtype=np.float64)
    if s.size and not (np.all(np.isfinite(s)) and np.min(s) > 0):
        raise ValueError(f"seconds must be > 0 and finite (a measured time), got {seconds!r}")
    pf = p.astype(np.float64)
    factor = {"allreduce": 2 * (pf - 1) / pf, "broadcast": np.ones_like(pf), "reduce": np.ones_like(pf)}.get(
        op, (pf - 1) / pf)
    return _out(np.asarray(n / s * factor, dtype=np.float64))


def best_algorithm(p, nbytes, *, alpha: float, beta: float, gamma: float = 0.0,
                   algorithms=("ring", "recursive_doubling", "rabenseifner")):
    """The cheapest of ``algorithms`` for each (p, nbytes) under the model, as MPICH's tuning picks one
    by size: latency-bound small messages go to a logarithmic algorithm, large ones to a bandwidth-optimal
    one. Ties go to the algorithm listed first.

    >>> best_algorithm(16, [8, 1 << 24], alpha=2e-6, beta=1e-10).tolist()
    ['recursive_doubling', 'rabenseifner']
    >>> best_algorithm(12, 1 << 24, alpha=2e-6, beta=1e-10)  # not a power of two: the fold costs 2 n beta
    'ring'
    """
    algorithms = tuple(algorithms)
    if not algorithms:
        raise ValueError("algorithms must name at least one all-reduce algorithm, got none")
    times = np.stack([np.asarray(allreduce_time(a, p, nbytes, alpha=alpha, beta=beta, gamma=gamma))
                      for a in algorithms])
    names = np.asarray(algorithms)[np.argmin(times, axis=0)]
    return str(names) if names.ndim == 0 else names


def _power_of_two(p: np.ndarray, algorithm: str) -> None:
    bad = p[(p & (p - 1)) != 0]
    if bad.size:
        raise ValueError(f"p must be a power of two for {algorithm!r}, got p={int(bad.flat[0])}; use 'ring'")
