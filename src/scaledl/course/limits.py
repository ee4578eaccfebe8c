"""A sandboxed run's resource limits (:class:`Limits`) and how the child takes them on before exec: rlimits,
inherited through bwrap and setpriv, and the run's cgroup where one could be made."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, fields

from scaledl._args import UsageError
from scaledl.course.processes import Cgroup


@dataclass(frozen=True)
class Limits:
    """Per-run resource limits (rlimits are per process; the cgroup ones cover the whole tree)."""

    address_space_bytes: int = 16 << 30  # RLIMIT_AS; Numba/LLVM and MPICH reserve much virtual memory
    memory_bytes: int = 4 << 30  # cgroup memory limit where a cgroup can be made
    processes: int = 4096  # RLIMIT_NPROC (+ cgroup pids.max): the CUDA simulator runs a thread per CUDA thread
    cpu_s: int = 1800  # RLIMIT_CPU
    file_size_bytes: int = 256 << 20  # RLIMIT_FSIZE (also caps the captured output)
    open_files: int = 1024  # RLIMIT_NOFILE

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, int) and value > 0):
                raise UsageError(f"Limits.{f.name}={value!r}: expected a positive whole number")


def _enter(limits: Limits, cg: Cgroup | None) -> None:
    """In the child before exec: rlimits (inherited through bwrap and setpriv) and the run's cgroup."""
    for res, value in ((resource.RLIMIT_AS, limits.address_space_bytes), (resource.RLIMIT_NPROC, limits.processes),
                       (resource.RLIMIT_CPU, limits.cpu_s), (resource.RLIMIT_FSIZE, limits.file_size_bytes),
                       (resource.RLIMIT_NOFILE, limits.open_files), (resource.RLIMIT_CORE, 0)):
        _, hard = resource.getrlimit(res)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)  # only root may raise a hard limit
        resource.setrlimit(res, (value, value))
    if cg is not None:
        try:
            cg.enter(os.getpid())
        except OSError:
            pass  # the rlimits and the namespaces still hold; an exception here would lose the whole run
