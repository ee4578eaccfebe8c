"""Run a student's ``f(comm, x)`` under ``mpiexec`` for a hidden test, with a time limit and nothing left running.

The student side of an MPI task (Task 2.1's produce in :mod:`scaledl.course.produce.lab05`) cannot call the
function in its own kernel: it needs several ranks. :func:`call_on_ranks` writes the function's source into a
scratch module (``import numpy as np`` and ``from mpi4py import MPI`` above it, as
:func:`scaledl.labs.ring.check_mpi_allreduce` does), every rank's inputs into ``.npy`` files, and starts
``mpiexec -n p python -m mpi4py driver.py`` in a scratch folder. Each rank loads its inputs, calls the function
and saves what it returned; the results are read back as arrays, so nothing but data leaves the ranks.

The limit matters because the classic bug of the ring is a deadlock (every rank in ``Send``, nobody in
``Recv``): mpiexec is started in a session of its own and, past ``timeout_s``, its process group and every
process below it (Hydra's proxy and the ranks, which run in sessions of their own) are killed with SIGKILL,
and the run reads as ``"timeout"``. Deadlocked MPICH ranks do not sleep, they poll, each burning a core, so
``call_timeout_s`` (optional) is a second, shorter limit that starts once every rank has started (they pass
a barrier after their imports and rank 0 writes a file): a loaded machine slows the start-up, which the
long limit covers, while the calls themselves take well under a second when nothing is wrong.

Scratch files go under :func:`tempfile.mkdtemp` (``$TMPDIR`` or ``/tmp``): the grading sandbox leaves only the
working directory and ``/tmp`` writable, and the ranks talk over shared memory, so its loopback-only network
is enough.
"""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scaledl import _deadline
from scaledl._deadline import Deadline
from scaledl._optional import install_command

LOG_CHARS = 3000  # the tail of the ranks' output kept for a message: a traceback, not a flood
READY_FILE = "ranks.ready"  # written by rank 0 once every rank has started (call_on_ranks' driver)
POLL_s = 0.1

_MODULE = "student_mpi"
_DRIVER = '''
import sys
import numpy as np
from mpi4py import MPI

sys.path.insert(0, {folder!r})
from {module} import {function} as yours

rank = MPI.COMM_WORLD.Get_rank()
MPI.COMM_WORLD.Barrier()  # every rank has started: the parent's clock for the calls starts now
if rank == 0:
    open({ready!r}, "w").close()
for call in range({calls}):
    x = np.load(f"{folder}/x_c{{call}}_r{{rank}}.npy", allow_pickle=False)
    got = np.asarray(yours(MPI.COMM_WORLD, x.copy()))
    if got.dtype.hasobject:
        raise TypeError(f"call {{call}}: the function returned {{type(got).__name__}} of objects; expected numbers")
    np.save(f"{folder}/got_c{{call}}_r{{rank}}.npy", got, allow_pickle=False)
'''


@dataclass
class MPIRun:
    """What :func:`call_on_ranks` saw: ``status`` is "ok", "timeout" or "error"; ``results[call][rank]`` is the
    array that rank returned, or None where it returned nothing."""

    status: str
    log: str = ""
    results: list[list[np.ndarray | None]] = field(default_factory=list)
    limit: str | None = None  # for a "timeout": which limit cut it, "call" or "whole" (scaledl._deadline)


def function_source(function) -> str:
    """``function``'s source as a module of its own, with numpy and MPI imported above it.

    Raises:
        TypeError: ``function`` is not a Python function with readable source.
        NotImplementedError: it is the student copy's stub (say so here, not from inside mpiexec).
    """
    name = getattr(function, "__name__", repr(function))
    try:
        body = textwrap.dedent(inspect.getsource(inspect.unwrap(function)))
    except (OSError, TypeError) as err:
        raise TypeError(f"function={name}: its source cannot be read ({err}); define it with def in a cell") from None
    if "raise NotImplementedError" in body:
        raise NotImplementedError(f"{name} is not written yet (it still raises NotImplementedError)")
    return "import numpy as np\nfrom mpi4py import MPI\n\n\n" + body


def mpiexec() -> str | None:
    """The ``mpiexec`` of the MPICH wheel next to this Python, else the one on PATH, else None."""
    from scaledl.comm.mpi import mpiexec_path

    return mpiexec_path()


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc`` (started with ``start_new_session=True``), its process group and every descendant
    (:func:`scaledl._deadline.kill_tree`, which the labs' launcher shares), then reap it."""
    _deadline.kill_tree(proc.pid)
    proc.wait()


def run_ranks(p: int, script: Path, *, folder: Path, timeout_s: float,
              call_timeout_s: float | None = None) -> tuple[str, str, str | None]:
    """Run ``mpiexec -n p python -m mpi4py script`` in ``folder``; (status, the tail of its output).

    ``python -m mpi4py`` turns an exception in one rank into ``MPI_Abort``, so the others do not wait for it
    forever. Status "timeout" means the process group was killed after ``timeout_s``, or ``call_timeout_s``
    after the script wrote ``folder / READY_FILE`` (the driver of :func:`call_on_ranks` does, once every rank
    has started).

    Raises:
        FileNotFoundError: no mpiexec (the ``mpich`` wheel, in the package's [mpi] extra).
    """
    exe = mpiexec()
    if exe is None:
        raise FileNotFoundError("mpiexec not found next to this Python or on PATH; install MPICH with: "
                                + install_command("mpi"))
    src = str(Path(__file__).resolve().parents[3])  # so the ranks import this scaledl, installed or not
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (src, env.get("PYTHONPATH")) if x)
    log_path = folder / "ranks.log"
    cmd = [exe, "-n", str(int(p)), sys.executable, "-m", "mpi4py", str(script)]
    # output to a file, not a pipe: a rank that outlives mpiexec cannot keep us waiting for end-of-file
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder,
                                env=env, start_new_session=True)
        deadline, status, limit = Deadline(timeout_s, folder / READY_FILE, call_timeout_s), None, None
        try:
            while status is None:
                try:
                    proc.wait(timeout=POLL_s)
                    status = "ok" if proc.returncode == 0 else "error"
                except subprocess.TimeoutExpired:
                    limit = deadline.passed()
                    if limit is not None:
                        status = "timeout"
        except BaseException:  # KeyboardInterrupt in the notebook: leave no rank behind either
            kill_tree(proc)
            raise
        if status == "timeout":
            kill_tree(proc)
    text = log_path.read_text(encoding="utf-8", errors="replace")
    return status, text[-LOG_CHARS:], limit


def call_on_ranks(function, inputs: list[list[np.ndarray]], *, timeout_s: float,
                  call_timeout_s: float | None = None) -> MPIRun:
    """Call ``function(comm, x)`` on every rank, once per entry of ``inputs`` (``inputs[call][rank]`` is that
    rank's ``x``), in one ``mpiexec`` run of ``len(inputs[0])`` ranks, within ``timeout_s`` in all and, when
    given, ``call_timeout_s`` from the moment every rank has started.

    Raises:
        ValueError: ``inputs`` is empty or its calls name different numbers of ranks.
        TypeError, NotImplementedError: from :func:`function_source`.
        FileNotFoundError: no mpiexec.
    """
    p = {len(per_rank) for per_rank in inputs}
    if not inputs or len(p) != 1 or 0 in p:
        raise ValueError(f"inputs: expected a list of calls, each one array per rank, got rank counts {sorted(p)}")
    p = p.pop()
    source = function_source(function)
    folder = Path(tempfile.mkdtemp(prefix="scaledl_mpi_"))
    try:
        (folder / f"{_MODULE}.py").write_text(source, encoding="utf-8")
        for c, per_rank in enumerate(inputs):
            for r, x in enumerate(per_rank):
                np.save(folder / f"x_c{c}_r{r}.npy", np.asarray(x), allow_pickle=False)
        script = folder / "driver.py"
        script.write_text(_DRIVER.format(folder=str(folder), module=_MODULE, function=function.__name__,
                                         calls=len(inputs), ready=str(folder / READY_FILE)), encoding="utf-8")
        status, log, limit = run_ranks(p, script, folder=folder, timeout_s=timeout_s, call_timeout_s=call_timeout_s)
        results = []
        for c in range(len(inputs)):
            row = []
            for r in range(p):
                path = folder / f"got_c{c}_r{r}.npy"
                row.append(np.load(path, allow_pickle=False) if path.is_file() else None)
            results.append(row)
        return MPIRun(status, log, results, limit)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
