"""A measured network against the simulator: ``scaledl bench mpi``.

Across hosts (a host list, a hostfile, Slurm, or an emulated cluster of network namespaces,
:mod:`scaledl.comm.netns`) it

1. measures ping-pong between rank 0 and the first rank of the second host (the network) and, with several
   ranks per host, between ranks 0 and 1 (the host's memory), and the reduction's gamma on one core;
2. fits alpha and beta to each (:func:`scaledl.comm.mpi.fit_alpha_beta`) on :data:`FIT_SIZES_B`: the empty
   message, which is all latency, and messages of 64 KiB and more, which are mostly bandwidth. Sizes between
   sit where protocols switch (libfabric's eager limit, TCP's first round trips, a token bucket's burst) and
   bend the curve away from any one line;
3. builds the matching topology (:func:`measured_topology`): ``nodes`` hosts of ``ranks_per_node`` ranks, one
   NIC each on one switch, whose uncontended message costs exactly the fitted alpha + n beta;
4. times the book's ring, recursive doubling, Rabenseifner and (with several ranks per host) hierarchical
   all-reduce over MPI beside MPICH's ``MPI_Allreduce`` (:func:`scaledl.comm.mpi_allreduce.time_allreduce`, results
   checked equal), from 1 KiB to 64 MiB, and prints each beside the simulator's prediction on that topology.

The result is a record (:func:`record`, JSON): date, machine, MPICH version, how the network was shaped, the
fits and every row. Chapter 14 prints the one committed from an emulated run, :data:`RECORD_FILE`, with
:func:`table`. Nothing here asserts a speed; ``tests/cluster`` holds the emulated network to :data:`GOAL`.

>>> net = measured_topology(2, 2, inter_alpha_s=50e-6, inter_beta_s_per_B=1 / 12.5e6,
...                         intra_alpha_s=1e-6, intra_beta_s_per_B=1 / 5e9)
>>> from scaledl.comm.topology import path_alpha_beta
>>> [(round(a * 1e6, 6), round(1 / b / 1e6, 6)) for a, b in (path_alpha_beta(net, 0, 2), path_alpha_beta(net, 0, 1))]
[(50.0, 12.5), (1.0, 5000.0)]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import socket
import sys
from importlib import resources
from pathlib import Path

from scaledl._args import count_arg, UsageError
from scaledl.comm.hosts import resolve
from scaledl.comm.mpi import fit_alpha_beta, launch, pingpong, reduce_gamma
from scaledl.comm.mpi_allreduce import time_allreduce

__all__ = ["DEFAULT_SIZES_B", "FIT_SIZES_B", "ALGORITHMS", "GOAL", "GOAL_FROM_B", "GOAL_ALGORITHMS", "RECORD_FILE",
           "FOUR_HOST_RECORD_FILE", "algorithm_order", "order_table", "repeats_for", "size_label", "measure", "fit",
           "measured_topology", "predict", "run", "record", "table", "describe_fit", "load_record", "main"]

DEFAULT_SIZES_B = tuple(1 << k for k in range(10, 27, 2))  # 1 KiB, 4 KiB, ..., 64 MiB
FIT_SIZES_B = (0, 1 << 16, 1 << 18, 1 << 20, 1 << 22)
ALGORITHMS = ("ring", "recursive_doubling", "rabenseifner", "hierarchical")
# The goal for the simulator on a measured network: within 25 % of the measured time for the
# bandwidth-optimal algorithms from 64 KiB up (below it, per-message costs that alpha averages away dominate).
GOAL = 0.25
GOAL_FROM_B = 1 << 16
GOAL_ALGORITHMS = ("ring", "rabenseifner")
RECORD_FILE = "cluster_record_emulated.json"  # package data of scaledl.comm: what chapter 14 prints
FOUR_HOST_RECORD_FILE = "cluster_record_emulated_4hosts.json"  # 4 hosts: where the flat algorithms differ


# -- inside MPI ---------------------------------------------------------------------------------------------

def repeats_for(nbytes: int, repeats: int) -> int:
    """Repeats of an all-reduce of ``nbytes``: at least ``repeats``, and up to 20 for small messages, whose
    best time needs more tries to miss the moments a busy machine gives the core (or, on an emulated network,
    the kernel's packet work) to something else; about 1 MiB moved in all.

    >>> repeats_for(1 << 10, 3), repeats_for(1 << 16, 3), repeats_for(1 << 22, 3)
    (20, 16, 3)
    """
    return max(int(repeats), min(20, (1 << 20) // max(int(nbytes), 1)))


def _rank_main(spec: dict) -> None:
    """One rank of the measurement; rank 0 prints tab-separated lines that :func:`measure` parses."""
    from scaledl._optional import require

    MPI = require("mpi4py.MPI", "scaledl bench mpi")
    comm = MPI.COMM_WORLD
    rank, p, g = comm.Get_rank(), comm.Get_size(), int(spec["ranks_per_node"])
    say = (lambda *xs: print("\t".join(str(x) for x in xs), flush=True)) if rank == 0 else (lambda *xs: None)
    say("HOSTS", p, g, MPI.Get_library_version().splitlines()[0].strip())
    fit_sizes = [int(s) for s in spec["fit_sizes"]]
    links = ([("inter", g)] if p > g else []) + ([("intra", 1)] if g > 1 else [])
    for link, peer in links:
        # trips inside a host take microseconds: four times the tries cost nothing and miss more of the
        # moments when one of the two ranks waits for a core
        repeats = int(spec["pingpong_repeats"]) * (4 if link == "intra" else 1)
        times = pingpong(comm, fit_sizes, repeats=repeats, peer=peer, statistic="min")
        for n, t in zip(fit_sizes, times):
            say("PP", link, n, repr(float(t)))
    # every rank at once, the fastest: a rank timing its adds while the others busy-poll a barrier (or while
    # other work holds the cores) can come out many times slower, and one such gamma skews every prediction
    comm.Barrier()
    say("GAMMA", repr(comm.allreduce(reduce_gamma(repeats=10), op=MPI.MIN)))
    for n in spec["sizes"]:
        for alg in spec["algorithms"]:
            ours, theirs = time_allreduce(comm, int(n), alg, repeats=repeats_for(int(n), int(spec["repeats"])),
                                          ranks_per_node=g)
            say("ROW", int(n), alg, repr(ours), repr(theirs))


# -- the driver ----------------------------------------------------------------------------------------------

def measure(hosts=None, *, ranks_per_node: int | None = None, sizes_B=DEFAULT_SIZES_B, algorithms=ALGORITHMS,
            repeats: int = 3, pingpong_repeats: int = 10, fit_sizes_B=FIT_SIZES_B, timeout_s: float = 3600.0,
            env: dict | None = None) -> dict:
    """Launch the measurement on ``hosts`` (:func:`scaledl.comm.hosts.resolve`) and return what it printed:
    ``{"ranks", "ranks_per_node", "nodes", "mpich", "pingpong": {link: [[size, s], ...]}, "gamma_s_per_B",
    "rows": [[nbytes, algorithm, ours_s, mpich_s], ...]}``. The hierarchical all-reduce is left out with one
    rank per host (it is the ring there). No ``sizes_B``: the ping-pong alone.

    Raises:
        ValueError: fewer than two hosts, or ranks per host that differ or are not given.
    """
    where = resolve(hosts)
    g = int(ranks_per_node or where.ranks_per_node or 0)
    nodes = where.nodes
    if not g or not nodes or nodes < 2:
        raise UsageError(f"scaledl bench mpi needs two or more hosts with the same number of ranks each; got "
                         f"{where.describe()} with ranks_per_node={ranks_per_node!r} (give --ranks-per-node)")
    algorithms = [a for a in algorithms if a != "hierarchical" or g > 1]
    spec = dict(ranks_per_node=g, sizes=[int(s) for s in sizes_B], algorithms=list(algorithms),
                repeats=int(repeats), pingpong_repeats=int(pingpong_repeats),
                fit_sizes=[int(s) for s in fit_sizes_B])
    out = launch(nodes * g, ["-m", "scaledl.comm.cluster_bench", "--rank", json.dumps(spec)], hosts=where,
                 timeout_s=timeout_s, env=env)
    got = {"ranks": nodes * g, "ranks_per_node": g, "nodes": nodes, "mpich": None, "pingpong": {}, "rows": []}
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "HOSTS":
            got["mpich"] = " ".join(f[3].split())
        elif f[0] == "PP":
            got["pingpong"].setdefault(f[1], []).append([int(f[2]), float(f[3])])
        elif f[0] == "GAMMA":
            got["gamma_s_per_B"] = float(f[1])
        elif f[0] == "ROW":
            got["rows"].append([int(f[1]), f[2], float(f[3]), float(f[4])])
    if len(got["rows"]) != len(spec["sizes"]) * len(algorithms) or "gamma_s_per_B" not in got:
        raise RuntimeError(f"the measurement printed too little; output:\n{out[-2000:]}")
    return got


def fit(pingpong_rows) -> dict:
    """alpha_s and beta_s_per_B fitted to ``[[size, seconds], ...]`` of one link, with the points."""
    sizes, seconds = zip(*pingpong_rows)
    alpha, beta = fit_alpha_beta(sizes, seconds)
    return {"alpha_s": alpha, "beta_s_per_B": beta, "sizes_B": list(sizes), "seconds": list(seconds)}


def measured_topology(nodes: int, ranks_per_node: int, *, inter_alpha_s: float, inter_beta_s_per_B: float,
                      intra_alpha_s: float | None = None, intra_beta_s_per_B: float | None = None):
    """:func:`scaledl.comm.topology.cluster` with one NIC per host on one switch, whose messages cost what was
    measured: between hosts alpha + n beta (two cable hops of alpha / 2, the NIC's rate 1 / beta, shared by the
    host's ranks), inside a host the intra-host fit (two hops through the host's memory "switch"). A rank's
    path to its NIC is not what limits it (a copy into the kernel): it runs at the faster of the two rates."""
    from scaledl.comm import topology as T  # here, not at the top: the ranks import this module too

    nic_Bps = 1 / inter_beta_s_per_B
    intra_a = inter_alpha_s if intra_alpha_s is None else intra_alpha_s
    intra_Bps = nic_Bps if intra_beta_s_per_B is None else 1 / intra_beta_s_per_B
    net = T.cluster(nodes, ranks_per_node, nics_per_node=1, nodes_per_leaf=nodes, nic_Bps=nic_Bps,
                    nic_latency_s=inter_alpha_s / 2, nvlink_Bps=intra_Bps, nvlink_latency_s=intra_a / 2,
                    pcie_Bps=max(nic_Bps, intra_Bps))
    net.graph["name"] = f"{nodes} hosts x {ranks_per_node} ranks, measured"
    return net


def predict(run_: dict) -> list[float]:
    """The simulator's seconds for each row of a measured run (a record's run), on its measured topology."""
    from scaledl.comm import netsim

    nodes, g = run_["nodes"], run_["ranks_per_node"]
    inter, intra = run_["fit"]["inter"], run_["fit"].get("intra")
    net = measured_topology(nodes, g, inter_alpha_s=inter["alpha_s"], inter_beta_s_per_B=inter["beta_s_per_B"],
                            intra_alpha_s=intra and intra["alpha_s"],
                            intra_beta_s_per_B=intra and intra["beta_s_per_B"])
    gamma = run_["fit"]["gamma_s_per_B"]
    out = []
    for row in run_["rows"]:
        n, alg = row["nbytes"], row["algorithm"]
        if alg == "hierarchical":
            res = netsim.simulate_two_level("hierarchical", nodes, g, net, n, gamma=gamma, timeline=False)
        else:
            res = netsim.simulate_allreduce(alg, net, n, gamma=gamma, timeline=False)
        out.append(res.time_s)
    return out


def _versions() -> dict:
    import numpy

    out = {"python": platform.python_version(), "numpy": numpy.__version__}
    for dist in ("mpi4py", "mpich"):
        try:
            from importlib.metadata import version

            out[dist] = version(dist)
        except Exception:
            out[dist] = None
    return out


def run(hosts=None, *, network: dict, command: str = "", **measure_kwargs) -> dict:
    """:func:`measure`, :func:`fit` and :func:`predict`: one run of a record, ``network`` saying what it ran on
    (``kind``: "emulated" or "cluster", the shaping, the transport)."""
    load_before = os.getloadavg()[0]
    got = measure(hosts, **measure_kwargs)
    fits = {link: fit(rows) for link, rows in got["pingpong"].items()}
    fits["gamma_s_per_B"] = got["gamma_s_per_B"]
    out = {"network": dict(network, nodes=got["nodes"], ranks_per_node=got["ranks_per_node"]),
           "nodes": got["nodes"], "ranks_per_node": got["ranks_per_node"], "command": command,
           "fit": fits, "rows": [{"nbytes": n, "algorithm": a, "measured_s": ours, "mpich_s": theirs}
                                 for n, a, ours, theirs in got["rows"]], "mpich": got["mpich"],
           # this machine's 1-minute load average before and after: other work that shared its cores
           "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    for row, t in zip(out["rows"], predict(out)):
        row["predicted_s"] = t
    return out


def record(runs: list[dict], *, note: str = "") -> dict:
    """A record of ``runs``: when, where, which versions; what :func:`load_record` reads back."""
    return {"schema": 1, "date": datetime.date.today().isoformat(), "host": socket.gethostname(),
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "system": platform.system()},
            "versions": _versions(), "note": note, "runs": runs}


def load_record(path=None, *, four_hosts: bool = False) -> dict:
    """The committed record (:data:`RECORD_FILE`, or :data:`FOUR_HOST_RECORD_FILE` with ``four_hosts``; package
    data) or the one at ``path``."""
    if path is None:
        name = FOUR_HOST_RECORD_FILE if four_hosts else RECORD_FILE
        return json.loads(resources.files("scaledl.comm").joinpath(name).read_text())
    return json.loads(Path(path).read_text())


def algorithm_order(run_: dict, predicted=None, *, algorithms=("ring", "recursive_doubling", "rabenseifner")):
    """Per size, ``(nbytes, measured_order, simulated_order, slowest/fastest measured, slowest/fastest simulated)``,
    orders fastest first (tuples of names); sizes missing one of ``algorithms`` are left out.

    >>> rows = [{"nbytes": 8, "algorithm": a, "measured_s": m} for a, m in (("ring", 2.0), ("rabenseifner", 1.0))]
    >>> algorithm_order({"rows": rows}, [1.5, 1.2], algorithms=("ring", "rabenseifner"))
    [(8, ('rabenseifner', 'ring'), ('rabenseifner', 'ring'), 2.0, 1.25)]
    """
    if predicted is None:
        predicted = predict(run_)
    by_size: dict[int, dict[str, tuple[float, float]]] = {}
    for row, sim in zip(run_["rows"], predicted, strict=True):
        if row["algorithm"] in algorithms:
            by_size.setdefault(row["nbytes"], {})[row["algorithm"]] = (row["measured_s"], sim)
    out = []
    for n in sorted(by_size):
        got = by_size[n]
        if set(got) != set(algorithms):
            continue
        measured = tuple(sorted(got, key=lambda a: got[a][0]))
        simulated = tuple(sorted(got, key=lambda a: got[a][1]))
        out.append((n, measured, simulated, got[measured[-1]][0] / got[measured[0]][0],
                    got[simulated[-1]][1] / got[simulated[0]][1]))
    return out


def order_table(run_: dict, predicted=None, *, tie: float = 0.10) -> str:
    """:func:`algorithm_order` as text, and whether the simulator named the slowest algorithm; a measured spread
    within ``tie`` (a fraction) is this emulated network's noise and not scored ("tie")."""
    short = {"ring": "ring", "recursive_doubling": "rd", "rabenseifner": "rab"}
    lines = [f"{'size':>8}  {'measured, fastest first':<24}  {'netsim, fastest first':<24}  "
             f"{'slowest/fastest meas':>20}  {'sim':>5}  slowest named"]
    for n, meas, sim, q_meas, q_sim in algorithm_order(run_, predicted):
        verdict = "tie" if q_meas - 1 <= tie else ("yes" if meas[-1] == sim[-1] else "no")
        lines.append(f"{size_label(n):>8}  {' < '.join(short[a] for a in meas):<24}  "
                     f"{' < '.join(short[a] for a in sim):<24}  {q_meas:>20.2f}  {q_sim:>5.2f}  {verdict}")
    return "\n".join(lines)


def size_label(nbytes: int) -> str:
    """``1 KiB``, ``256 KiB``, ``64 MiB``: a message size as the tables print it.

    >>> size_label(1 << 10), size_label(1 << 20), size_label(1000)
    ('1 KiB', '1 MiB', '1000 B')
    """
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def _time(s: float) -> str:
    return f"{s * 1e3:9.2f} ms" if s >= 1e-3 else f"{s * 1e6:9.1f} us"


def table(run_: dict, predicted=None) -> str:
    """A run as aligned text: size, algorithm, measured, the simulator's prediction and their ratio, MPICH's
    MPI_Allreduce and ours / MPICH. ``predicted`` (seconds per row) replaces the stored predictions."""
    predicted = [r["predicted_s"] for r in run_["rows"]] if predicted is None else list(predicted)
    lines = [f"{'size':>8}  {'algorithm':<18}  {'measured':>12}  {'netsim':>12}  {'meas/sim':>8}  "
             f"{'MPI_Allreduce':>13}  {'ours/MPICH':>10}"]
    for row, sim in zip(run_["rows"], predicted):
        ours, theirs = row["measured_s"], row["mpich_s"]
        lines.append(f"{size_label(row['nbytes']):>8}  {row['algorithm']:<18}  {_time(ours)}  {_time(sim)}  "
                     f"{ours / sim:8.2f}  {_time(theirs):>13}  {ours / theirs:10.2f}")
    return "\n".join(lines)


def describe_fit(run_: dict) -> str:
    """One line per fitted link: alpha in us, 1 / beta in Mbit/s and MB/s, and gamma."""
    lines = []
    for link in ("inter", "intra"):
        f = run_["fit"].get(link)
        if f:
            rate = 1 / f["beta_s_per_B"]
            what = "between hosts" if link == "inter" else "inside a host"
            lines.append(f"{what}: alpha = {f['alpha_s'] * 1e6:.1f} us, 1 / beta = {rate * 8 / 1e6:.1f} Mbit/s "
                         f"({rate / 1e6:.2f} MB/s)")
    lines.append(f"float32 add on one core: gamma = 1 / ({1 / run_['fit']['gamma_s_per_B'] / 1e9:.1f} GB/s)")
    return "\n".join(lines)


# -- scaledl bench mpi ---------------------------------------------------------------------------------------

def _sizes(text: str) -> list[int]:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    out = []
    for item in text.split(","):
        item = item.strip().lower().removesuffix("ib").removesuffix("b")
        out.append(int(float(item[:-1]) * units[item[-1]]) if item and item[-1] in units else int(item))
    return out


def main(argv=None) -> int:
    """``scaledl bench mpi``: measure, print and optionally record (``--out``). See ``--help``."""
    ap = argparse.ArgumentParser(prog="scaledl bench mpi", description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", help="host list 'n1:2,n2:2', a hostfile, 'slurm' or 'srun' (default: "
                                    "$SCALEDL_MPI_HOSTS)")
    ap.add_argument("--iface", help="network interface the ranks use, e.g. eth0 (default: $SCALEDL_MPI_IFACE)")
    ap.add_argument("--transport", default="tcp", choices=("tcp", "auto"), help="tcp: MPICH's OFI netmod over "
                    "libfabric's tcp provider (default); auto: MPICH's own choice (UCX, InfiniBand where present)")
    ap.add_argument("--ranks-per-node", type=count_arg, help="ranks on each host (default: from the host list)")
    ap.add_argument("--emulate", metavar="NODESxRANKS", action="append", help="root only: an emulated cluster "
                    "of network namespaces instead of --hosts, e.g. 2x1 or 2x2 (repeat for several runs)")
    ap.add_argument("--rate", action="append", help="with --emulate: tbf rate of every link (repeat for several "
                    "runs), e.g. 100mbit")
    ap.add_argument("--burst", default=None, help="with --emulate: tbf burst (default 32kbit)")
    ap.add_argument("--delay", help="with --emulate: netem delay per direction, where the kernel has netem")
    ap.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES_B), help="bytes (1k, 4m, ...)")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
    ap.add_argument("--repeats", type=count_arg, default=3)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run (default 3600)")
    ap.add_argument("--out", help="write the record (JSON) here")
    ap.add_argument("--note", default="", help="a sentence stored with the record")
    ap.add_argument("--rank", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rank:
        _rank_main(json.loads(args.rank))
        return 0
    kwargs = dict(sizes_B=_sizes(args.sizes), algorithms=args.algorithms.split(","), repeats=args.repeats,
                  timeout_s=args.timeout)
    command = "scaledl bench mpi " + shlex.join(argv if argv is not None else sys.argv[1:])
    runs = []
    if args.emulate:
        from scaledl.comm.netns import DEFAULT_BURST, EmulatedCluster, netem_available, remove_stale

        shapes = []
        for spec in args.emulate:
            nodes, _, g = spec.lower().partition("x")
            if not (nodes.isdigit() and (g or "1").isdigit()):
                raise UsageError(f"--emulate: expected NODESxRANKS such as 2x1 or 2x2, got {spec!r}")
            shapes.append((int(nodes), int(g or 1)))
        ok, said = netem_available()
        remove_stale()
        with EmulatedCluster(max(n for n, _ in shapes)) as cluster:
            for rate in args.rate or [None]:
                shaping = cluster.shape(rate, burst=args.burst or DEFAULT_BURST, delay=args.delay)
                for nodes, g in shapes:
                    where = cluster.hosts(g, nodes=nodes)
                    network = {"kind": "emulated", "shaping": shaping, "transport": where.env(),
                               "netem": "available" if ok else f"not in this kernel ({said})",
                               "tcp": cluster.tcp_settings()}
                    print(f"emulated cluster: {nodes} namespaces x {g} ranks, tbf rate {rate}", flush=True)
                    runs.append(run(where, network=network, command=command, ranks_per_node=g, **kwargs))
                    print(describe_fit(runs[-1]))
                    print(table(runs[-1]), flush=True)
    else:
        where = resolve(args.hosts, iface=args.iface, transport=args.transport)
        network = {"kind": "cluster", "hosts": where.describe(), "transport": where.env()}
        runs.append(run(where, network=network, command=command, ranks_per_node=args.ranks_per_node, **kwargs))
        print(describe_fit(runs[-1]))
        print(table(runs[-1]))
    if args.out:
        Path(args.out).write_text(json.dumps(record(runs, note=args.note), indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
