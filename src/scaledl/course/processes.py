"""What the grading sandbox needs to know about processes on the host: a run's cgroup, and the process table.

The sandbox (:mod:`scaledl.course.sandbox`) kills a run's whole tree at its end; these helpers find what might
have escaped that (``/proc``, by uid or by a marker variable in the environment) and hold the run's memory and
pids limits where the host lets this process make a cgroup (v1 ``pids`` + ``memory`` hierarchies, or v2).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path


def kill(pid: int) -> None:
    """SIGKILL ``pid``; gone already or not ours is fine."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Proc:
    ppid: int
    pgrp: int
    uid: int
    mark: str | None  # the value of the sandbox's marker variable in its environment, if any


def processes(mark_var: str) -> dict[int, Proc]:
    """Every live (not zombie) process on the host: its parent, group, real uid and sandbox mark."""
    found = {}
    needle = f"{mark_var}=".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            state, ppid, pgrp = stat[stat.rindex(")") + 2:].split()[:3]
            if state in "ZX":
                continue
            status = Path(entry.path, "status").read_text()
            uid = int(status[status.index("\nUid:") + 5:].split()[0])  # real uid (the dir's owner is euid)
            mark = None
            try:
                env = Path(entry.path, "environ").read_bytes()
                if needle in env:
                    mark = next((v[len(needle):].decode(errors="replace") for v in env.split(b"\0")
                                 if v.startswith(needle)), None)
            except OSError:
                pass
            found[int(entry.name)] = Proc(int(ppid), int(pgrp), uid, mark)
        except (OSError, ValueError):
            continue  # exited while we looked
    return found


class Cgroup:
    """One run's cgroup (v1 pids + memory hierarchies, or v2), made under this process's own cgroup."""

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, version: str, dirs: list[Path]):
        self.version, self.dirs = version, dirs

    @classmethod
    def make(cls, name: str, *, processes: int, memory_bytes: int) -> Cgroup | None:
        """A new cgroup allowing ``processes`` tasks and ``memory_bytes``, or None where none can be made (not
        root, no delegation, ...)."""
        try:
            own = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
        except OSError:
            return None
        cg = None
        try:
            if (cls.ROOT / "cgroup.controllers").exists():
                base = cls.ROOT / next(path for hid, _, path in own if hid == "0").lstrip("/")
                cg = cls("v2", [base / name])
                cg.dirs[0].mkdir()
                cls._write(cg.dirs[0] / "pids.max", processes)
                cls._write(cg.dirs[0] / "memory.max", memory_bytes)
                if (cg.dirs[0] / "memory.swap.max").exists():
                    cls._write(cg.dirs[0] / "memory.swap.max", 0)
                return cg
            bases = {c: cls.ROOT / c / path.lstrip("/") for _, ctrls, path in own for c in ctrls.split(",")}
            cg = cls("v1", [])
            for c, limit_file, value in (("pids", "pids.max", processes),
                                         ("memory", "memory.limit_in_bytes", memory_bytes)):
                d = bases[c] / name
                d.mkdir()
                cg.dirs.append(d)
                cls._write(d / limit_file, value)
            if (cg.dirs[1] / "memory.memsw.limit_in_bytes").exists():  # no swapping past the limit either
                cls._write(cg.dirs[1] / "memory.memsw.limit_in_bytes", memory_bytes)
            return cg
        except (OSError, KeyError, StopIteration):
            if cg is not None:
                cg.remove()
            return None

    @staticmethod
    def _write(path: Path, value) -> None:
        with open(path, "w") as f:
            f.write(str(value))

    def enter(self, pid: int) -> None:
        for d in self.dirs:
            self._write(d / "cgroup.procs", pid)

    def pids(self) -> list[int]:
        out = []
        for d in self.dirs:
            try:
                out += [int(x) for x in (d / "cgroup.procs").read_text().split()]
            except OSError:
                pass
        return out

    def remove(self) -> None:
        """Kill whatever is still inside, then remove the directories (rmdir needs them empty)."""
        for _ in range(200):
            for pid in self.pids():
                kill(pid)
            for d in list(self.dirs):
                try:
                    d.rmdir()
                    self.dirs.remove(d)
                except FileNotFoundError:
                    self.dirs.remove(d)
                except OSError:
                    pass
            if not self.dirs:
                return
            time.sleep(0.01)
