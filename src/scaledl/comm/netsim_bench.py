"""``scaledl bench netsim``: ranks against seconds for the network simulator, on the CPU.

For each row: one all-reduce of 64 MiB simulated by :func:`scaledl.comm.netsim.simulate_allreduce` with the
default method (the fast path where it can decide) and, up to ``--events-up-to`` ranks, the same all-reduce
forced onto the event path (``method="event"``, what every call cost before the fast path), with the wall
time of each, the path that ran, and the peak memory of the fast run (tracemalloc, measured in a second run
so that tracing does not slow the timed one; it counts Python objects and NumPy arrays). The last lines
compare the ring on a switch with the targets of the book's issue 25: 1024 ranks under 1 s, 4096 under 10 s
on two cores. Wall times on a shared machine are noisy: run it on an idle one before quoting a figure.

A second table times the two-level algorithms at 3456 and 4096 ranks (the record runs' scale) through
:func:`scaledl.comm.netsim.simulate_two_level`: hierarchical (nodes x 8 GPUs on ``topology.multi_node``) and
2D-torus (rows x cols on ``topology.torus``), with the seconds to generate the rounds as arrays
(``two_level.hierarchical_rounds``), the seconds of the whole call (rounds, routes and simulation) and its
peak memory; the target is under 10 s each (issue 25).

Usage: ``scaledl bench netsim [--quick] [--events-up-to P] [--ranks P ...] [--no-two-level]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

from scaledl._args import count_arg
from scaledl.comm import cost, netsim, two_level
from scaledl.comm import topology as T

NBYTES = 64 * 2**20
TARGETS_S = {1024: 1.0, 4096: 10.0}  # issue 25: a ring over a switch, on a two-core machine
# A generic cluster link for the rows (the figures depend on ranks and messages, not on these).
BANDWIDTH_Bps, LATENCY_s = T.IB_NDR_Bps, 2 * T.IB_HOP_LATENCY_s


def _network(kind: str, p: int):
    if kind == "switch":
        return T.switch(p, bandwidth_Bps=BANDWIDTH_Bps, latency_s=LATENCY_s)
    return T.multi_node(-(-p // 8), 8)  # 8 GPUs per node, the last node full


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _peak_MiB(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def rows(cases, events_up_to: int, memory: bool = True):
    """Yield one dict per (topology, algorithm, ranks) case: the measured figures."""
    for kind, alg, p in cases:
        net = _network(kind, p)
        run = lambda method: netsim.simulate_allreduce(alg, net, NBYTES, method=method)  # noqa: E731
        res, fast_s = _timed(lambda: run("auto"))
        row = {"topology": kind, "algorithm": alg, "ranks": net.graph["ranks"], "messages": res.messages,
               "path": res.path, "seconds": fast_s, "simulated_ms": res.time_s * 1e3, "event_seconds": None,
               "peak_MiB": _peak_MiB(lambda: run("auto")) if memory else None}
        if p <= events_up_to:
            ref, row["event_seconds"] = _timed(lambda: run("event"))
            assert abs(ref.time_s - res.time_s) <= 1e-12 * ref.time_s, (ref.time_s, res.time_s)
        yield row


TWO_LEVEL_CASES = [("multi_node", "hierarchical", 432, 8), ("multi_node", "hierarchical", 512, 8),
                   ("torus", "torus_2d", 64, 54), ("torus", "torus_2d", 64, 64)]
TWO_LEVEL_TARGET_S = 10.0


def _two_level_network(kind: str, a: int, b: int):
    if kind == "torus":
        return T.torus(a, b, bandwidth_Bps=BANDWIDTH_Bps, latency_s=LATENCY_s)
    return T.multi_node(a, b)


def two_level_rows(cases, events_up_to: int, memory: bool = True):
    """Yield one dict per (topology, algorithm, outer, inner) case of the two-level algorithms."""
    for kind, alg, a, b in cases:
        net = _two_level_network(kind, a, b)
        length = b * a * (1 << (a.bit_length() - 1)) * 2
        _, build_s = _timed(lambda: two_level.hierarchical_rounds(a, b, length))
        run = lambda method: netsim.simulate_two_level(alg, a, b, net, NBYTES, method=method)  # noqa: E731
        res, sim_s = _timed(lambda: run("auto"))
        row = {"topology": kind, "algorithm": f"{alg} {a}x{b}", "ranks": a * b, "messages": res.messages,
               "path": res.path, "build_seconds": build_s, "seconds": sim_s, "simulated_ms": res.time_s * 1e3,
               "event_seconds": None, "peak_MiB": _peak_MiB(lambda: run("auto")) if memory else None}
        if a * b <= events_up_to:
            ref, row["event_seconds"] = _timed(lambda: run("event"))
            assert abs(ref.time_s - res.time_s) <= 1e-12 * ref.time_s, (ref.time_s, res.time_s)
        yield row


def format_two_level_row(r) -> str:
    ev = f"{r['event_seconds']:9.2f}" if r["event_seconds"] is not None else f"{'-':>9s}"
    mem = f"{r['peak_MiB']:9.0f}" if r["peak_MiB"] is not None else f"{'-':>9s}"
    return (f"{r['topology']:11s}{r['algorithm']:20s}{r['ranks']:6d}{r['messages']:13,d}  {r['path']:6s}"
            f"{r['build_seconds']:9.2f}{r['seconds']:9.2f}{ev}{mem}{r['simulated_ms']:12.3f}")


def format_row(r) -> str:
    ev = f"{r['event_seconds']:9.2f}" if r["event_seconds"] is not None else f"{'-':>9s}"
    mem = f"{r['peak_MiB']:9.0f}" if r["peak_MiB"] is not None else f"{'-':>9s}"
    return (f"{r['topology']:11s}{r['algorithm']:20s}{r['ranks']:6d}{r['messages']:13,d}  {r['path']:6s}"
            f"{r['seconds']:9.2f}{ev}{mem}{r['simulated_ms']:12.3f}")


def _two_level_spec(text: str) -> tuple[str, int, int]:
    """``--two-level`` item ``ALG:AxB`` (``hierarchical:3x4``, ``torus_2d:3x5``) as (ALG, A, B)."""
    alg, _, shape = text.partition(":")
    a, _, b = shape.partition("x")
    if alg not in netsim.TWO_LEVEL or not (a.isdigit() and b.isdigit() and int(a) >= 1 and int(b) >= 1):
        raise argparse.ArgumentTypeError(f"expected ALG:AxB with ALG one of {', '.join(netsim.TWO_LEVEL)} and A, B "
                                          f"whole numbers >= 1 (hierarchical:3x4), got {text!r}")
    return alg, int(a), int(b)


def main(argv: list[str] | None = None, out=sys.stdout) -> int:
    """Entry point of ``scaledl bench netsim``; returns 0, or 1 if a target was missed."""
    parser = argparse.ArgumentParser(prog="scaledl bench netsim", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="rings up to 1024 ranks only")
    parser.add_argument("--events-up-to", type=count_arg, default=512,
                        help="also time the event path up to this many ranks (default 512; 1024 takes ~15 s)")
    parser.add_argument("--ranks", type=count_arg, nargs="+", default=None, help="ring sizes on the switch")
    parser.add_argument("--no-two-level", action="store_true",
                        help="skip the hierarchical and 2D-torus rows (on by default unless --quick or --ranks)")
    parser.add_argument("--two-level", type=_two_level_spec, nargs="+", default=None, metavar="ALG:AxB",
                        help="two-level cases instead of the default ones, e.g. hierarchical:3x4 torus_2d:3x5")
    args = parser.parse_args(argv or [])
    ranks = args.ranks or ([64, 256, 512, 1024] if args.quick else [64, 256, 512, 1024, 2048, 3456, 4096])
    cases = [("switch", "ring", p) for p in ranks]
    if not args.quick:
        cases += [("multi_node", "ring", 1024), ("multi_node", "ring", 4096)]
        cases += [("switch", alg, 4096) for alg in cost.ALLREDUCE_ALGORITHMS if alg != "ring"]
    print(f"scaledl bench netsim: all-reduce of {NBYTES // 2**20} MiB, {os.cpu_count()} CPUs; wall seconds of "
          "the default call (fast path where it decides) and of method='event'; peak = tracemalloc", file=out)
    print(f"{'topology':11s}{'algorithm':20s}{'ranks':>6s}{'messages':>13s}  {'path':6s}{'seconds':>9s}"
          f"{'events s':>9s}{'peak MiB':>9s}{'sim. ms':>12s}", file=out)
    missed, timed = [], {}
    for r in rows(cases, args.events_up_to):
        print(format_row(r), file=out, flush=True)
        if r["topology"] == "switch" and r["algorithm"] == "ring":
            timed[r["ranks"]] = r["seconds"]
    for p, limit in TARGETS_S.items():
        if p in timed:
            ok = timed[p] < limit
            print(f"target: ring over {p} ranks on a switch in < {limit:g} s: {timed[p]:.2f} s, "
                  f"{'met' if ok else 'MISSED'}", file=out)
            if not ok:
                missed.append(p)
    if args.two_level:
        cases2 = []
        for alg, a, b in args.two_level:
            cases2.append(("torus" if alg == "torus_2d" else "multi_node", alg, a, b))
    else:
        cases2 = [] if (args.no_two_level or args.quick or args.ranks) else TWO_LEVEL_CASES
    if cases2:
        print(f"{'topology':11s}{'algorithm':20s}{'ranks':>6s}{'messages':>13s}  {'path':6s}{'build s':>9s}"
              f"{'seconds':>9s}{'events s':>9s}{'peak MiB':>9s}{'sim. ms':>12s}", file=out)
        for r in two_level_rows(cases2, args.events_up_to):
            print(format_two_level_row(r), file=out, flush=True)
            if r["ranks"] >= 3456:
                ok = r["seconds"] < TWO_LEVEL_TARGET_S
                print(f"target: {r['algorithm']} ({r['ranks']} ranks) in < {TWO_LEVEL_TARGET_S:g} s: "
                      f"{r['seconds']:.2f} s, {'met' if ok else 'MISSED'}", file=out, flush=True)
                if not ok:
                    missed.append(r["ranks"])
    return 1 if missed else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
