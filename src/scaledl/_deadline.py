"""How long to wait for MPI ranks: one object shared by the labs' launcher (scaledl.comm.mpi.launch) and the
grader's (scaledl.course.produce.mpi_runner), which watch their ranks differently (a pipe, a log file) but stop
them by the same two limits; :func:`kill_tree` stops them."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


class Deadline:
    """The two limits on waiting for MPI ranks: ``timeout_s`` from now (start-up on a loaded machine
    included), and ``call_timeout_s`` from the moment ``ready_file`` exists (rank 0 writes it once every rank
    has passed a barrier), so a deadlock is caught in seconds without cutting a slow start short."""

    def __init__(self, timeout_s: float, ready_file: str | os.PathLike | None = None,
                 call_timeout_s: float | None = None):
        self.timeout_s, self.call_timeout_s = timeout_s, call_timeout_s
        self.ready_file = None if ready_file is None or call_timeout_s is None else Path(ready_file)
        self.start, self.ready_at = time.monotonic(), None

    @property
    def watching(self) -> bool:
        """True when there is a ready file to watch (poll often), False when only the whole limit applies."""
        return self.ready_file is not None

    def passed(self) -> str | None:
        """None while both limits hold; else which one passed: ``"call"`` or ``"whole"``."""
        now = time.monotonic()
        if self.ready_at is None and self.ready_file is not None and self.ready_file.exists():
            self.ready_at = now
        if self.ready_at is not None and now - self.ready_at > self.call_timeout_s:
            return "call"
        return "whole" if now - self.start > self.timeout_s else None

    def describe(self, which: str) -> str:
        return f"{self.call_timeout_s:g} s of the ranks starting" if which == "call" else f"{self.timeout_s} s"


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), read from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            stat = entry.read_text()
        except OSError:  # gone since the listing
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the name in (...) may hold spaces
        children.setdefault(ppid, []).append(int(entry.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to ``pid``'s process group (a process started with ``start_new_session=True``) and to every
    process below it. The group alone is not enough: Hydra's proxies and the ranks set up sessions of their own,
    and an emulated cluster's ranks sit under ``ip netns exec``. The tree is listed before anything is killed,
    while every rank still has its parent."""
    below = descendants(pid)
    for p in below:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
