"""The book's all-reduce over MPI against MPICH's ``MPI_Allreduce``: a table of sizes, ranks and times.

``python -m scaledl.comm.mpi_bench`` (no mpiexec) launches itself at 2 and 4 ranks and prints the table;
under ``mpiexec -n P`` it is one rank of the measurement and rank 0 prints tab-separated rows. Timings vary
from run to run and machine to machine; nothing here asserts a speed.

Functions:
    measure(comm, sizes_B, algorithms, repeats): rows, run inside MPI.
    run(ranks, sizes_B, algorithms, mpich, repeats, timeout_s): launches mpiexec per rank count, parses rows.
    fit(p, timeout_s): ping-pong alpha and beta of this machine, and the reduction gamma.
    predict(rows, alpha_s, beta_s_per_B, gamma_s_per_B): the alpha-beta-gamma prediction beside each row.
    format_table(rows): the rows as aligned text.

>>> print(format_table([(1 << 20, 2, "ring", "auto", 2e-3, 1e-3)]))
    size  ranks  algorithm                   ours         MPICH  MPICH algorithm           ours/MPICH
   1 MiB      2  ring                   2000.0 us     1000.0 us  auto                            2.00
"""

from __future__ import annotations

import argparse
import os
import sys

from scaledl.comm.cost import allreduce_time
from scaledl.comm.mpi import fit_alpha_beta, launch, mpich_env, pingpong, reduce_gamma
from scaledl.comm.mpi_allreduce import time_allreduce

__all__ = ["DEFAULT_SIZES_B", "measure", "run", "fit", "predict", "format_table", "main"]

DEFAULT_SIZES_B = (1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24)  # 1 KiB .. 16 MiB


def measure(comm, sizes_B, algorithms=("ring",), repeats: int = 5, mpich: str = "auto") -> list[tuple]:
    """(nbytes, p, algorithm, mpich, ours_s, mpich_s) for every size and algorithm; every rank gets them."""
    rows = []
    for nbytes in sizes_B:
        for alg in algorithms:
            ours, theirs = time_allreduce(comm, int(nbytes), alg, repeats=repeats)
            rows.append((int(nbytes), comm.Get_size(), alg, mpich, ours, theirs))
    return rows


def _human(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def format_table(rows) -> str:
    """Aligned text: size, ranks, our algorithm, our time, MPICH's time (its forced algorithm), the ratio."""
    lines = [f"{'size':>8}  {'ranks':>5}  {'algorithm':<18}  {'ours':>12}  {'MPICH':>12}  {'MPICH algorithm':<24}"
             f"  {'ours/MPICH':>10}"]
    for nbytes, p, alg, mpich, ours, theirs in rows:
        lines.append(f"{_human(nbytes):>8}  {p:>5}  {alg:<18}  {ours * 1e6:9.1f} us  {theirs * 1e6:9.1f} us"
                     f"  {mpich:<24}  {ours / theirs:10.2f}")
    return "\n".join(lines)


def run(ranks=(2, 4), sizes_B=DEFAULT_SIZES_B, algorithms=("ring",), mpich: str = "auto", repeats: int = 5,
        timeout_s: float = 300.0, hosts=None) -> list[tuple]:
    """Launch ``mpiexec -n p python -m scaledl.comm.mpi_bench`` for each p and return the parsed rows
    (``hosts``: where, as :func:`scaledl.comm.mpi.launch` takes it; ``scaledl bench mpi`` is the across-hosts
    benchmark with the simulator beside it)."""
    rows = []
    for p in ranks:
        out = launch(p, ["-m", "scaledl.comm.mpi_bench", "--sizes", ",".join(str(s) for s in sizes_B),
                         "--algorithms", ",".join(algorithms), "--repeats", str(repeats), "--mpich", mpich],
                     env=mpich_env(mpich), timeout_s=timeout_s, hosts=hosts)
        for line in out.splitlines():
            if line.startswith("ROW\t"):
                _, n, pp, alg, mp, ours, theirs = line.split("\t")
                rows.append((int(n), int(pp), alg, mp, float(ours), float(theirs)))
    return rows


def fit(p: int = 2, timeout_s: float = 120.0, hosts=None) -> dict:
    """This machine's alpha_s and beta_s_per_B by ping-pong between two ranks, and gamma_s_per_B of a float32
    add on one core."""
    out = launch(p, ["-m", "scaledl.comm.mpi_bench", "--pingpong"], timeout_s=timeout_s, hosts=hosts)
    values = dict(line.split("\t")[1:] for line in out.splitlines() if line.startswith("FIT\t"))
    return {k: float(v) for k, v in values.items()}


def predict(rows, alpha_s: float, beta_s_per_B: float, gamma_s_per_B: float = 0.0) -> list[tuple]:
    """(nbytes, p, algorithm, measured_s, predicted_s) for each benchmark row: the closed form of
    :mod:`scaledl.comm.cost` with this machine's fitted constants, which the simulator reproduces on a
    uniform switch. float32 data: gamma is per byte, as :func:`scaledl.comm.mpi.reduce_gamma` measures it.

    >>> round(predict([(1 << 20, 2, "ring", "auto", 2e-4, 1e-4)], 1e-6, 1e-10)[0][4] * 1e6, 6)  # 2 alpha + n beta
    106.8576
    """
    return [(n, p, alg, ours, allreduce_time(alg, p, n, alpha=alpha_s, beta=beta_s_per_B, gamma=gamma_s_per_B))
            for n, p, alg, _, ours, _ in rows]


def main(argv=None) -> None:
    """One rank of the measurement (under mpiexec), or, without mpiexec, the whole table at 2 and 4 ranks."""
    ap = argparse.ArgumentParser(prog="python -m scaledl.comm.mpi_bench", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES_B), help="bytes, comma-separated")
    ap.add_argument("--algorithms", default="ring", help="book algorithms, comma-separated")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--mpich", default="auto", help="MPICH algorithm label to print (forced via environment)")
    ap.add_argument("--ranks", default="2,4", help="rank counts when launching (no mpiexec)")
    ap.add_argument("--pingpong", action="store_true", help="fit alpha and beta by ping-pong instead")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    algorithms = args.algorithms.split(",")
    if "PMI_RANK" not in os.environ and "PMI_SIZE" not in os.environ:  # not under mpiexec: be the driver
        rows = run([int(p) for p in args.ranks.split(",")], sizes, algorithms, args.mpich, args.repeats)
        print(format_table(rows))
        return
    from scaledl._optional import require

    MPI = require("mpi4py.MPI", "python -m scaledl.comm.mpi_bench")

    comm = MPI.COMM_WORLD
    if args.pingpong:
        sizes = [0, 1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22]
        times = pingpong(comm, sizes, repeats=args.repeats * 4)
        alpha, beta = fit_alpha_beta(sizes, times)
        if comm.Get_rank() == 0:
            for name, value in (("alpha_s", alpha), ("beta_s_per_B", beta), ("gamma_s_per_B", reduce_gamma())):
                print(f"FIT\t{name}\t{value!r}")
        return
    rows = measure(comm, sizes, algorithms, args.repeats, args.mpich)
    if comm.Get_rank() == 0:
        for row in rows:
            print("ROW\t" + "\t".join(repr(x) if isinstance(x, float) else str(x) for x in row))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
