"""Checks for lab 05 (ring all-reduce, simulated and over MPI): each names the classic bug it sees.

- :func:`check_ring_schedule`: a student's ``ring_schedule(p, length)`` (rounds of
  :class:`scaledl.comm.schedule.Transfer`) played on integer buffers at odd lengths and odd rank counts,
  including lengths shorter than p, compared with the exact sum (Yours beside Spec), then simulated on a
  uniform switch and compared with 2 (p-1) alpha + 2 (p-1)/p n beta. It recognises an off-by-one chunk index,
  a missing reduction step (a reduce-scatter of fewer than p - 1 steps) and copies where reductions belong.
- :func:`check_mpi_allreduce`: a student's ``f(comm, x)`` run under ``mpiexec`` at 2 and 3 ranks (on this
  machine, or across hosts: ``hosts=`` or ``SCALEDL_MPI_HOSTS``), against ``MPI.Allreduce``, with blocks
  large enough that MPICH cannot buffer them (its eager limit is a few KiB to
  64 KiB), and a timeout: a send order that deadlocks (every rank in ``Send``, nobody in ``Recv``) is
  reported as a deadlock with the fix, instead of hanging the notebook.
- :func:`check_ring_order`: a student's ring cost and ring-order search against
  :func:`scaledl.comm.topology.ring_seconds_per_byte` and the simulator.

``tests/unit/test_labs_ring.py`` proves that each check fails, with its hint, on the bug it is built for. The hints
are :mod:`scaledl.labs.hints`' "lab05" ones; the grader's judges (:mod:`scaledl.course.tasks.lab05`) give the
same, Task 1.1's by running :func:`check_ring_schedule` itself.
"""

from __future__ import annotations

import inspect
import re
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

from scaledl.comm import cost, netsim
from scaledl.comm import topology as T
from scaledl.comm.transfers import Schedule, Transfer, bounds, run
from scaledl.labs.check import CheckResult
from scaledl.labs.hints import hint as _text

__all__ = ["RANKS", "LENGTHS", "check_ring_schedule", "check_mpi_allreduce", "check_ring_order", "time_vs_formula"]

RANKS = (1, 2, 3, 4, 5, 7, 8)
LENGTHS = (1, 2, 5, 7, 10, 64, 101)  # shorter than p, not multiples of p, one a multiple of 8
MAX_SHOWN = 5
# The uniform network of the timing check: PCIe 3.0 x16 links and 1 us per message (chapter 14's).
ALPHA_s, BETA_s_per_B = 1e-6, 1 / T.PCIE3_X16_Bps


def _rounds(fn, p: int, length: int):
    rounds = fn(p, length)
    out = []
    for k, rnd in enumerate(rounds):
        rnd = list(rnd)
        for t in rnd:
            if not isinstance(t, Transfer):
                raise TypeError(f"round {k} of ring_schedule({p}, {length}) holds {t!r}; each round must be a list "
                                "of scaledl.comm.schedule.Transfer(src, dst, start, stop, op)")
            if t.op not in ("reduce", "copy") or not (0 <= t.start <= t.stop <= length) or \
                    not (0 <= t.src < p and 0 <= t.dst < p):
                raise ValueError(f"round {k} of ring_schedule({p}, {length}) holds {t}: ranks must be in 0..{p - 1}, "
                                 f"0 <= start <= stop <= {length}, op 'reduce' or 'copy'")
        out.append(tuple(t for t in rnd if t.stop > t.start))
    return out


def _diagnose(rounds, p: int, length: int, hint, lines) -> None:
    """Add to ``hint`` the classic bugs ``rounds`` show, and to ``lines`` where they show."""
    b = bounds(length, p)
    block_of = {(b[c], b[c + 1]): c for c in range(p) if b[c + 1] > b[c]}
    reduce_rounds = [r for r in rounds if r and all(t.op == "reduce" for t in r)]
    ops_wrong = any(t.op == "copy" for r in rounds[:p - 1] for t in r) or \
        any(t.op == "reduce" for r in rounds[p - 1:] for t in r)
    if len(reduce_rounds) < p - 1 and not (ops_wrong and not reduce_rounds):  # (no reduce at all: the ops are)
        lines.append(f"     at p = {p} the schedule has {len(reduce_rounds)} reduction rounds; the reduce-scatter "
                     f"needs p - 1 = {p - 1}")
        hint(_text("lab05", "missing_reduction"))
        return  # every later round is shifted by the missing one: no off-by-one to look for
    if ops_wrong:
        hint(_text("lab05", "reduce_then_copy"))
    for s, rnd in enumerate(rounds[:2 * (p - 1)]):
        for t in rnd:
            c = block_of.get((t.start, t.stop))
            if c is None:
                continue
            want = (t.src - s) % p if s < p - 1 else (t.src + 1 - (s - (p - 1))) % p
            if c != want and (c - want) % p in (1, p - 1):
                lines.append(f"     in round {s} rank {t.src} sends block {c}; the ring needs block {want} there")
                hint(_text("lab05", "off_by_one"))
                return


def check_ring_schedule(ring_schedule, *, ranks=RANKS, lengths=LENGTHS, seed: int = 0,
                        report=sys.stdout) -> CheckResult:
    """Play ``ring_schedule(p, length)`` on random integer buffers for every p in ``ranks`` and length in
    ``lengths``, compare every rank's buffer with the exact sum, and simulate it on a uniform switch.

    Returns a :class:`scaledl.labs.check.CheckResult` (truthy when everything passed).
    """
    name = getattr(ring_schedule, "__name__", "ring_schedule")
    result, hints = CheckResult(name), []

    def hint(text):
        if text not in hints:
            hints.append(text)

    rng = np.random.default_rng(seed)
    for p in ranks:
        wrong = []
        for length in lengths:
            rounds = _rounds(ring_schedule, p, length)
            bufs = [rng.integers(-1000, 1000, length) for _ in range(p)]
            spec = np.sum(bufs, axis=0)
            got = run(Schedule("ring", p, length, tuple(rounds)), bufs)
            bad = [r for r in range(p) if not np.array_equal(got[r], spec)]
            if bad:
                wrong.append(length)
                r = bad[0]
                idx = np.flatnonzero(got[r] != spec)[:MAX_SHOWN]
                result.lines.append(f"FAIL p = {p}, length {length}: ranks {bad} differ from the exact sum")
                result.lines += [f"     rank {r}, element {i}: Yours {got[r][i]}  Spec {spec[i]}" for i in idx]
                _diagnose(rounds, p, length, hint, result.lines)
        if wrong:
            result.passed = False
        else:
            result.lines.append(f"ok   p = {p}: exact sum on every rank at lengths {list(lengths)}")
    if result.passed:
        for p in (3, 5, 8):
            sim, formula = time_vs_formula(ring_schedule, p)
            ok = abs(sim - formula) <= 1e-9 * formula
            result.lines.append(f"{'ok  ' if ok else 'FAIL'} p = {p}, 8 MiB on a uniform switch: simulated "
                                f"{sim * 1e6:.3f} us, 2(p-1) alpha + 2(p-1)/p n beta = {formula * 1e6:.3f} us")
            if not ok:
                result.passed = False
                hint(_text("lab05", "ring_time"))
    if not result.passed and not hints:
        hint(_text("lab05", "ring_compare"))
    result.hints = hints
    result.lines.append(f"{'PASSED' if result.passed else 'FAILED'}: {name} at p = {list(ranks)}")
    return result.finish(report=report)


def time_vs_formula(ring_schedule, p: int, nbytes: float = 8 * 2**20) -> tuple[float, float]:
    """(simulated_s, closed_form_s) of ``ring_schedule`` for p ranks on a uniform PCIe switch, with buffers of
    a multiple of p elements so that the blocks are equal, as the closed form assumes."""
    length = 4 * p
    sched = Schedule("ring", p, length, tuple(_rounds(ring_schedule, p, length)))
    net = T.switch(p, bandwidth_Bps=1 / BETA_s_per_B, latency_s=ALPHA_s)
    sim = netsim.simulate(sched, net, nbytes=nbytes, timeline=False).time_s
    return sim, cost.allreduce_time("ring", p, nbytes, alpha=ALPHA_s, beta=BETA_s_per_B)


_DRIVER = '''
import sys, time
import numpy as np
from mpi4py import MPI
sys.path.insert(0, {folder!r})
from {module} import {function} as yours
comm = MPI.COMM_WORLD
rank, p = comm.Get_rank(), comm.Get_size()
comm.Barrier()  # every rank has started: the parent's clock for the calls starts now
if rank == 0:
    open({ready!r}, "w").close()
for length in {lengths!r}:
    x = np.random.default_rng(rank + 10 * length).integers(-8, 8, length).astype(np.float32)
    want = np.empty_like(x)
    comm.Allreduce(x, want, op=MPI.SUM)
    got = np.asarray(yours(comm, x.copy()))
    ok = got.shape == want.shape and np.array_equal(got, want)
    if ok:
        detail = None
    elif got.shape == want.shape:
        bad = np.flatnonzero(got != want)[:{shown}]
        detail = " ".join(["MISMATCH", str(rank), str(length)] + [f"{{i}}:{{got[i]:g}}:{{want[i]:g}}" for i in bad])
    else:
        detail = " ".join(["SHAPE", str(rank), str(length), str(got.shape).replace(" ", ""),
                           str(want.shape).replace(" ", "")])
    # Only rank 0 prints: mpiexec forwards each rank's stdout on its own, so lines printed by several ranks
    # can arrive interleaved mid-line.
    gathered = comm.gather((bool(ok), detail), root=0)
    if rank == 0:
        print("CHECK", length, *[g[0] for g in gathered], flush=True)
        for _, d in gathered:
            if d is not None:
                print(d, flush=True)
n = {time_length}
x = np.ones(n, np.float32)
ref = np.empty_like(x)
best = []
for fn in (lambda: yours(comm, x.copy()), lambda: comm.Allreduce(x, ref, op=MPI.SUM)):
    fn()
    ts = []
    for _ in range({repeats}):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        ts.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    best.append(min(ts))
if rank == 0:
    print("TIME", n * 4, best[0], best[1], flush=True)
'''


def check_mpi_allreduce(function, *, ranks=(2, 3), lengths=(1, 7, 100_003), time_bytes: int = 1 << 20,
                        repeats: int = 3, timeout_s: float = 30.0, call_timeout_s: float | None = None,
                        hosts=None, report=sys.stdout) -> CheckResult:
    """Run ``function(comm, x)`` (the student's all-reduce, defined in the notebook) under ``mpiexec`` at each
    rank count, compare it with ``MPI.Allreduce`` on float32 vectors of small integers (exact in any order) at
    ``lengths``, and time both at ``time_bytes``. A rank count that does not finish within ``timeout_s`` is
    reported as a deadlock.

    ``hosts`` runs the ranks across machines (:func:`scaledl.comm.hosts.resolve`; by default
    ``SCALEDL_MPI_HOSTS``, else this machine): the check's files then go to a folder every node sees
    (:func:`scaledl.comm.hosts.scratch_dir`).

    The function's source is written to a temporary module with ``import numpy as np`` and ``from mpi4py
    import MPI`` above it, so it must not use other names from the notebook.
    """
    from scaledl.comm.hosts import resolve, scratch_dir
    from scaledl.comm.mpi import launch

    where = resolve(hosts)
    name = getattr(function, "__name__", "your all-reduce")
    result, hints = CheckResult(name), []
    body = textwrap.dedent(inspect.getsource(function))
    if "raise NotImplementedError" in body:  # the student copy's stub: say so here, not from inside mpiexec
        stub = re.search(r"raise NotImplementedError\((.*?)\)", body)
        raise NotImplementedError(f"{name} is not written yet (it still raises NotImplementedError({stub.group(1)}))")
    src = "import numpy as np\nfrom mpi4py import MPI\n\n\n" + body
    with tempfile.TemporaryDirectory(prefix="lab05_", dir=scratch_dir(where)) as folder:
        (Path(folder) / "student_allreduce.py").write_text(src)
        driver = Path(folder) / "driver.py"
        driver.write_text(_DRIVER.format(folder=folder, module="student_allreduce", function=function.__name__,
                                         lengths=tuple(int(n) for n in lengths), shown=MAX_SHOWN,
                                         time_length=int(time_bytes) // 4, repeats=int(repeats),
                                         ready=str(Path(folder) / "ranks.ready")))
        for p in ranks:
            (Path(folder) / "ranks.ready").unlink(missing_ok=True)
            try:
                out = launch(p, [str(driver)], timeout_s=timeout_s, ready_file=Path(folder) / "ranks.ready",
                             call_timeout_s=call_timeout_s, hosts=where)
            except TimeoutError as err:  # launch names the limit that cut the run: the call's or the whole one
                within = re.search(r"did not finish within (.+?) \(", str(err))
                result.passed = False
                result.lines.append(f"FAIL p = {p}: no result within {within.group(1) if within else timeout_s}: "
                                    f"the ranks deadlocked")
                hints.append(_text("lab05", "deadlock"))
                continue
            except RuntimeError as err:
                result.passed = False
                result.lines.append(f"FAIL p = {p}: a rank raised an error:\n{str(err)[-1500:]}")
                continue
            for line in out.splitlines():
                parts = line.split()
                if not parts:
                    continue
                if parts[0] == "CHECK":
                    length, oks = int(parts[1]), parts[2:]
                    if all(o == "True" for o in oks):
                        result.lines.append(f"ok   p = {p}, length {length}: every rank equals MPI.Allreduce")
                    else:
                        result.passed = False
                        result.lines.append(f"FAIL p = {p}, length {length}: ranks "
                                            f"{[r for r, o in enumerate(oks) if o != 'True']} differ from MPI.Allreduce")
                elif parts[0] == "MISMATCH":
                    for item in parts[3:]:
                        i, got, want = item.split(":")
                        result.lines.append(f"     rank {parts[1]}, element {i}: Yours {got}  Spec {want}")
                elif parts[0] == "SHAPE":
                    result.lines.append(f"     rank {parts[1]}: Yours has shape {parts[3]}, Spec {parts[4]}")
                elif parts[0] == "TIME":
                    ours, theirs = float(parts[2]), float(parts[3])
                    result.lines.append(f"     p = {p}, {int(parts[1]) // 1024} KiB: yours {ours * 1e6:.0f} us, "
                                        f"MPI.Allreduce {theirs * 1e6:.0f} us, ratio {ours / theirs:.2f}")
    if not result.passed and not hints:
        hints.append(_text("lab05", "mpi_values"))
    result.hints = hints
    result.lines.append(f"{'PASSED' if result.passed else 'FAILED'}: {name} at p = {list(ranks)}, lengths "
                        f"{list(lengths)}" + ("" if where.local else f", across {where.describe()}"))
    return result.finish(report=report)


def check_ring_order(ring_cost, best_ring_order, topologies, *, samples: int = 20, seed: int = 0,
                     report=sys.stdout) -> CheckResult:
    """Compare ``ring_cost(topology, order)`` with :func:`scaledl.comm.topology.ring_seconds_per_byte` on
    random orders, and check that ``best_ring_order(topology)`` is a permutation whose cost is the smallest
    any order reaches (:func:`scaledl.comm.topology.ring_order`, which tries every order starting at rank 0)."""
    result, hints = CheckResult("ring order"), []
    rng = np.random.default_rng(seed)
    for topo in topologies:
        p, label = topo.graph["ranks"], topo.graph.get("name", "topology")
        for _ in range(samples):
            order = [int(r) for r in rng.permutation(p)]
            yours, spec = float(ring_cost(topo, order)), T.ring_seconds_per_byte(topo, order)
            if not np.isclose(yours, spec, rtol=1e-12, atol=0):
                result.passed = False
                result.lines.append(f"FAIL ring_cost on {label}, order {order}: Yours {yours:.6g} s/B  Spec {spec:.6g} s/B")
                hints.append(_text("lab05", "ring_cost"))
                break
        else:
            result.lines.append(f"ok   ring_cost on {label}: {samples} random orders")
        order = [int(r) for r in best_ring_order(topo)]
        best = T.ring_seconds_per_byte(topo, T.ring_order(topo, exhaustive_up_to=max(8, p)))  # every order
        if sorted(order) != list(range(p)):
            result.passed = False
            result.lines.append(f"FAIL best_ring_order on {label}: {order} is not a permutation of 0..{p - 1}")
            continue
        got = T.ring_seconds_per_byte(topo, order)
        if got > best * (1 + 1e-12):
            result.passed = False
            result.lines.append(f"FAIL best_ring_order on {label}: {order} costs {got:.4g} s/B, the best order "
                                f"{best:.4g} s/B")
            hints.append(_text("lab05", "ring_order"))
        else:
            res = netsim.simulate_allreduce("ring", topo, 64 * 2**20, order=order, timeline=False)
            result.lines.append(f"ok   best_ring_order on {label}: {order}, 64 MiB ring in {res.time_s * 1e3:.2f} ms "
                                f"(slowest-link bound {2 * (p - 1) / p * 64 * 2**20 * got * 1e3:.2f} ms)")
    result.hints = list(dict.fromkeys(hints))
    result.lines.append(f"{'PASSED' if result.passed else 'FAILED'}: ring order on {len(topologies)} topologies")
    return result.finish(report=report)
