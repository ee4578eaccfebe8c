"""A sandboxed run's resource limits (:class:`Limits`) and how the run takes them on before it starts: rlimits,
inherited through bwrap and setpriv, and the run's cgroup where one could be made, set by a trampoline script
(:mod:`scaledl.course.enter_limits`) rather than a ``preexec_fn``, which is unsafe beside threads."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from scaledl._args import UsageError
from scaledl.course.processes import Cgroup

TRAMPOLINE = Path(__file__).with_name("enter_limits.py")


@dataclass(frozen=True)
class Limits:
    """Per-run resource limits (rlimits are per process; the cgroup ones cover the whole tree)."""

    address_space_bytes: int = 16 << 30  # RLIMIT_AS; Numba/LLVM and MPICH reserve much virtual memory
    memory_bytes: int = 4 << 30  # cgroup memory limit where a cgroup can be made
    processes: int = 4096  # the cgroup's pids.max (RLIMIT_NPROC where no cgroup): the CUDA simulator runs a
    #                        thread per CUDA thread
    cpu_s: int = 1800  # RLIMIT_CPU
    file_size_bytes: int = 256 << 20  # RLIMIT_FSIZE (also caps the captured output)
    open_files: int = 1024  # RLIMIT_NOFILE
    disk_bytes: int = 1 << 30  # what the run may write in all: its folder, home, /tmp and /dev/shm (one tmpfs
    #                            of this size, where the grader may mount one: as root at the bwrap level)

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                raise UsageError(f"Limits.{f.name}={value!r}: expected a positive whole number")


def rlimits(limits: Limits, cg: Cgroup | None) -> dict[str, int]:
    """The rlimits a run takes on. With a cgroup, its ``pids.max`` bounds the run's processes and RLIMIT_NPROC
    is left alone: RLIMIT_NPROC counts every process of the uid, so concurrent runs as one grading account
    would share it and one fork bomb could starve the others."""
    out = {"RLIMIT_AS": limits.address_space_bytes, "RLIMIT_CPU": limits.cpu_s,
           "RLIMIT_FSIZE": limits.file_size_bytes, "RLIMIT_NOFILE": limits.open_files, "RLIMIT_CORE": 0}
    if cg is None:
        out["RLIMIT_NPROC"] = limits.processes
    return out


def trampoline(limits: Limits, cg: Cgroup | None) -> list[str]:
    """The argv prefix that starts a command with ``limits`` and inside ``cg``: ``prefix + [command...]``."""
    spec = {"rlimits": rlimits(limits, cg), "cgroup_procs": [str(d / "cgroup.procs") for d in (cg.dirs if cg else [])]}
    return [sys.executable, "-I", "-S", str(TRAMPOLINE), json.dumps(spec), "--"]
