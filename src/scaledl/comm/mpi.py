"""The book's all-reduce algorithms over a real MPI (mpi4py with the MPICH wheel), and how to measure them.

Functions taking ``comm`` run inside an MPI program started by ``mpiexec -n P python ...``; :func:`launch`
starts one from Python with a timeout, so a deadlock is reported instead of hanging. mpi4py is imported
only inside the functions that need it: importing this module does not initialise MPI.

- :func:`ring_allreduce`: the ring written out with ``Sendrecv``, as a student writes it.
- :func:`schedule_allreduce`: any schedule of :mod:`scaledl.comm.schedule` played with ``Sendrecv`` (one
  partner in the round) or ``Isend``/``Irecv`` (several), so the same algorithm runs on NumPy, on the
  simulator and over MPI.
- :func:`pingpong` and :func:`fit_alpha_beta`: this machine's alpha and beta (or a network's, between ranks
  on two hosts).
- :func:`time_allreduce`: ours against ``MPI_Allreduce``; :mod:`scaledl.comm.mpi_bench` prints the table.
- :func:`launch`: ``mpiexec`` from Python with a time limit, on this machine or across hosts
  (``hosts=``, :mod:`scaledl.comm.hosts`).

The all-reduces themselves (:func:`ring_allreduce`, :func:`schedule_allreduce`, :func:`rank_plan`,
:func:`time_allreduce`) live in :mod:`scaledl.comm.mpi_allreduce`, which lab 05's grading run leaves out (the ring
is its Task 2.1 answer); this module then still imports, with :func:`launch` and :func:`mpiexec_path`, which the
grader's MPI runner needs.

MPICH picks its own all-reduce algorithm from a tuning table; ``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM``
(``recursive_doubling``, ``reduce_scatter_allgather``, ``ring``, ...) forces one, together with
``MPIR_CVAR_DEVICE_COLLECTIVES=none`` so the device layer does not substitute its own (see
:func:`mpich_env`).

>>> alpha_s, beta_s_per_B = fit_alpha_beta([0, 1000, 2000], [1e-6, 2e-6, 3e-6])
>>> round(alpha_s * 1e6, 9), round(1 / beta_s_per_B / 1e9, 9)  # 1 us latency, 1 GB/s
(1.0, 1.0)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from scaledl._absent import left_out, missing
from scaledl._optional import install_command, message
from scaledl._deadline import Deadline, kill_tree
from scaledl.comm.hosts import explain_failure, resolve

try:  # left out of lab 05's grading run (scaledl._absent): the module imports all the same, without these names
    from scaledl.comm.mpi_allreduce import rank_plan, ring_allreduce, schedule_allreduce, time_allreduce
except ModuleNotFoundError as err:
    left_out(err, globals())

__all__ = ["ring_allreduce", "schedule_allreduce", "rank_plan", "pingpong", "fit_alpha_beta", "time_allreduce",
           "reduce_gamma", "mpiexec_path", "mpich_env", "launch", "MPICH_ALLREDUCE_ALGORITHMS"]

# Values MPICH 4-5 accepts for MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM that this book discusses.
MPICH_ALLREDUCE_ALGORITHMS = ("auto", "recursive_doubling", "reduce_scatter_allgather", "ring", "tree")


def __getattr__(name):
    return missing(name, __name__, globals())


def pingpong(comm, sizes_B, *, repeats: int = 20, peer: int = 1, statistic: str = "median") -> np.ndarray:
    """One-way message time in seconds between ranks 0 and ``peer`` for each size: half the median of
    ``repeats`` round trips after one warm-up (the median, because on a shared machine a few trips wait for a
    core; ``statistic="min"`` takes the fastest trip, like for like with :func:`time_allreduce`'s best of
    repeats). Every rank returns the same array; the other ranks wait at a barrier. Across hosts, ``peer`` =
    the first rank of the second host measures the network, ``peer`` = 1 with two ranks per host the host's
    memory."""
    rank = comm.Get_rank()
    if not 0 < int(peer) < max(comm.Get_size(), 2):
        raise ValueError(f"peer must be a rank other than 0, in 1..{comm.Get_size() - 1}, got {peer!r}")
    if statistic not in ("median", "min"):
        raise ValueError(f"statistic must be 'median' or 'min', got {statistic!r}")
    pick = np.median if statistic == "median" else np.min
    out = np.zeros(len(sizes_B))
    for i, nbytes in enumerate([1] * 3 + list(sizes_B)):  # three sizes of warm-up: connections, page faults
        i -= 3
        buf = np.zeros(int(nbytes), dtype=np.uint8)
        comm.Barrier()
        if rank in (0, peer) and comm.Get_size() > 1:
            trips = []
            for rep in range(repeats + 1):
                t0 = time.perf_counter()
                if rank == 0:
                    comm.Send(buf, dest=peer, tag=rep)
                    comm.Recv(buf, source=peer, tag=rep)
                else:
                    comm.Recv(buf, source=0, tag=rep)
                    comm.Send(buf, dest=0, tag=rep)
                trips.append(time.perf_counter() - t0)
            if i >= 0:
                out[i] = float(pick(trips[1:])) / 2
        if i >= 0:
            comm.Bcast(out[i:i + 1], root=0)
    return out


def fit_alpha_beta(sizes_B, seconds) -> tuple[float, float]:
    """Fit seconds = alpha + beta x bytes; returns (alpha_s, beta_s_per_B).

    The fit minimises relative, not absolute, errors (weights 1 / seconds), so that a 1 us message counts as
    much as a 3 ms one: an ordinary least-squares line through sizes from 0 to megabytes is set by the large
    messages alone and its intercept, alpha, can come out at any sign. Solved in float64 from the 2x2
    normal equations.

    Raises:
        ValueError: fewer than two distinct sizes, times that are not positive, or lengths that differ.
    """
    x, y = np.asarray(sizes_B, dtype=np.float64), np.asarray(seconds, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"sizes_B and seconds must be 1-D and of one length, got {x.shape} and {y.shape}")
    if np.unique(x).size < 2:
        raise ValueError(f"sizes_B must hold at least two distinct sizes to fit a line, got {x.tolist()}")
    if not np.all(y > 0):
        raise ValueError(f"seconds must all be > 0 (measured times), got {y.tolist()}")
    w = 1.0 / y**2
    s0, s1, s2 = np.sum(w), np.sum(w * x), np.sum(w * x * x)
    t0, t1 = np.sum(w * y), np.sum(w * x * y)
    det = s0 * s2 - s1 * s1
    return float((s2 * t0 - s1 * t1) / det), float((s0 * t1 - s1 * t0) / det)


def reduce_gamma(nbytes: int = 1 << 24, dtype=np.float32, repeats: int = 5) -> float:
    """This core's gamma: seconds per byte of ``np.add(a, b, out=a)`` on ``nbytes``, the best of ``repeats``."""
    a = np.ones(int(nbytes) // np.dtype(dtype).itemsize, dtype=dtype)
    b = np.ones_like(a)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.add(a, b, out=a)
        best = min(best, time.perf_counter() - t0)
    return best / nbytes


def mpiexec_path() -> str | None:
    """The ``mpiexec`` of the MPICH wheel next to this Python, else the one on PATH, else None."""
    here = Path(sys.executable).with_name("mpiexec")
    return str(here) if here.exists() else shutil.which("mpiexec")


def mpich_env(algorithm: str = "auto") -> dict[str, str]:
    """Environment variables that force MPICH's intra-node all-reduce ``algorithm``.

    Raises:
        ValueError: an algorithm outside :data:`MPICH_ALLREDUCE_ALGORITHMS`.
    """
    if algorithm not in MPICH_ALLREDUCE_ALGORITHMS:
        raise ValueError(f"unknown MPICH allreduce algorithm {algorithm!r}; expected one of "
                         f"{', '.join(MPICH_ALLREDUCE_ALGORITHMS)}")
    if algorithm == "auto":
        return {}
    return {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": algorithm, "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}


def launch(p: int, args: list[str], *, env: dict | None = None, timeout_s: float = 60.0,
           ready_file: str | os.PathLike | None = None, call_timeout_s: float | None = None, hosts=None) -> str:
    """Run ``mpiexec -n p python ARGS`` and return its standard output.

    The package's own directory is put on PYTHONPATH so the ranks import this scaledl. With ``ready_file``
    and ``call_timeout_s``, a second, shorter limit starts when the ranks create that file (a script does
    once every rank has started, after a barrier): start-up on a loaded machine gets ``timeout_s``, the work
    ``call_timeout_s``. Deadlocked MPICH ranks poll rather than sleep, a core each, so it pays to stop them early.

    ``hosts`` says where the ranks run (:func:`scaledl.comm.hosts.resolve`): this machine when None and
    ``SCALEDL_MPI_HOSTS`` is unset, else a host list, a hostfile, ``"slurm"`` or ``"srun"``, or an emulated
    cluster's :class:`~scaledl.comm.hosts.Hosts`. Across hosts the same Python and this package must be at the
    same path on every node (a shared home directory, or the same image), and the ready file on a folder
    they share. A host that does not resolve fails before anything starts; a node that does not answer, a
    rank that dies or a network that stops moving fails within the limits, with hints from what mpiexec said.

    Raises:
        ModuleNotFoundError: no mpi4py, which the ranks import (the package's [mpi] extra).
        FileNotFoundError: no mpiexec (the ``mpich`` wheel, in the [mpi] extra too).
        ValueError: a malformed host list, or a host name that does not resolve.
        TimeoutError: the ranks did not finish within ``timeout_s``, or ``call_timeout_s`` after the ready
            file appeared (a deadlock, an oversubscribed machine, a node that stopped answering); they are
            killed first.
        RuntimeError: a rank failed (or a node could not be reached); the message carries its output.
    """
    import importlib.util

    if importlib.util.find_spec("mpi4py") is None:
        raise ModuleNotFoundError(message("mpi4py", "running MPI ranks"), name="mpi4py")
    exe = mpiexec_path()
    if exe is None:
        raise FileNotFoundError("mpiexec not found next to this Python or on PATH; install MPICH with: "
                                + install_command("mpi"))
    where = resolve(hosts)
    where.check()
    src = str(Path(__file__).resolve().parents[2])
    full_env = {**os.environ, **where.env(), **(env or {})}  # the caller's env wins over the transport's
    full_env["PYTHONPATH"] = os.pathsep.join(x for x in (src, full_env.get("PYTHONPATH")) if x)
    cmd = where.command(exe, p, [sys.executable, *args])
    what = f"mpiexec -n {p}" + ("" if where.local else f" on {where.describe()}")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env,
                            start_new_session=True, stdin=subprocess.DEVNULL)
    deadline = Deadline(timeout_s, ready_file, call_timeout_s)
    while True:
        try:  # communicate() may be called again after a timeout without losing output
            out, _ = proc.communicate(timeout=0.1 if deadline.watching else timeout_s)
            break
        except subprocess.TimeoutExpired:
            which = deadline.passed()
            if which is not None:
                _stop(proc, where)
                out, _ = proc.communicate()
                why = "deadlock?" if where.local else "deadlock, or a node that stopped answering?"
                raise TimeoutError(f"{what} did not finish within {deadline.describe(which)} ({why}); "
                                   f"output:\n{out[-2000:]}" + _hints(out, where)) from None
        except BaseException:  # KeyboardInterrupt in a notebook: leave no rank behind
            _stop(proc, where)
            raise
    if proc.returncode != 0:
        raise RuntimeError(f"{what} {' '.join(args)} failed with exit code {proc.returncode}:\n"
                           f"{out[-4000:]}" + _hints(out, where))
    return out


def _stop(proc: subprocess.Popen, where) -> None:
    """Kill mpiexec (or srun) and every rank below it. srun gets SIGTERM first: it cancels its job step on
    the nodes only when it lives to do so."""
    if where.kind == "srun" and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    kill_tree(proc.pid)


def _hints(out: str, where) -> str:
    if where.local:
        return ""
    hints = explain_failure(out)
    return "".join(f"\nHint: {h}" for h in hints)
