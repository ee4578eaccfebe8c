"""What a bwrap sandbox shows, and the folder a graded run may write (its quota).

:func:`bwrap_mounts` lists bwrap's mount arguments: the system directories as the distribution has them,
read-only, the Python installation, the virtual environment and the package, the run's own folder at
``/sandbox``, and, over those, a *view* (:mod:`scaledl.course.view`): read-only stubs mounted where the modules a
run must not have would be. :func:`workspace` makes the run's folder: as root at the bwrap level a tmpfs of
``Limits.disk_bytes`` that also holds the run's ``/tmp`` and ``/dev/shm``, so everything the run can write counts
against one quota (RAM, charged to the run's memory cgroup); elsewhere a folder on disk, where only
RLIMIT_FSIZE bounds each file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

INSIDE = Path("/sandbox")  # where bwrap shows the workdir
SYSTEM_DIRS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
TMP, SHM = ".tmp", ".shm"  # in a quota'd workdir: what bwrap shows at /tmp and /dev/shm


def quota_possible(level: str) -> bool:
    """Whether a run's folder can be a size-capped tmpfs here: mounting needs root, and only bwrap's own mount
    namespace can put the run's /tmp and /dev/shm inside it."""
    return level == "bwrap" and os.geteuid() == 0 and shutil.which("mount") is not None


SCRATCH = re.compile(r"^scaledl-(grade|batch|views|sandbox-out)-(\d+)-")


def scratch(kind: str) -> Path:
    """A fresh folder of the grader's (``kind``: grade, batch, views, sandbox-out), named with this process's pid
    so that :func:`sweep_stale` can tell one whose grader was killed from outside."""
    return Path(tempfile.mkdtemp(prefix=f"scaledl-{kind}-{os.getpid()}-"))


def sweep_stale() -> list[Path]:
    """Remove (and unmount) the grader folders under the temporary directory whose grader is gone: a grader
    killed from outside (SIGKILL, a container stopped) cannot clean up after itself; the next one does."""
    gone = []
    for entry in Path(tempfile.gettempdir()).iterdir():
        m = SCRATCH.match(entry.name)
        if not m or entry.is_symlink() or not entry.is_dir() or _alive(int(m.group(2))):
            continue
        if entry.lstat().st_uid not in _graders_uids():  # /tmp is everyone's: only the graders' folders
            continue
        subprocess.run(["umount", "-l", str(entry)], capture_output=True)
        shutil.rmtree(entry, ignore_errors=True)
        gone.append(entry)
    return gone


def _graders_uids() -> set[int]:
    """This account's uid and, as root, the grading account's (a run's folder is chowned to it)."""
    uids = {os.geteuid()}
    if os.geteuid() == 0:
        import pwd

        from scaledl.course.account import GRADING_ACCOUNT

        for name in (GRADING_ACCOUNT, "nobody"):  # nobody: grading_user's fallback
            try:
                uids.add(pwd.getpwnam(name).pw_uid)
            except KeyError:
                pass
    return uids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def workspace(level: str, disk_bytes: int):
    """A fresh folder for one run, removed (and unmounted) afterwards; yields ``(path, quota)``, ``quota``
    True when it is a tmpfs of ``disk_bytes`` holding the run's /tmp and /dev/shm too."""
    work = scratch("grade")
    quota = False
    try:
        if quota_possible(level):
            made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={int(disk_bytes)},mode=0755,nosuid,nodev",
                                   "tmpfs", str(work)], capture_output=True)
            quota = made.returncode == 0
            if quota:
                for name in (TMP, SHM):
                    (work / name).mkdir()
                    os.chmod(work / name, 0o1777)
        yield work, quota
    finally:
        if quota:
            subprocess.run(["umount", "-l", str(work)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def bwrap_mounts(workdir: Path, *, readonly=(), overlays=()) -> list[str]:
    """bwrap's mount arguments for a run in ``workdir``.

    Args:
        readonly: host paths shown read-only beyond the system, Python, venv and package directories.
        overlays: ``(stub, target)`` pairs mounted read-only over ``target`` after everything else, outermost
            first (a view's stubs).
    """
    args, binds = [], []
    for name in SYSTEM_DIRS:
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            binds.append(p)
    # /dev/shm: MPICH's shared memory between ranks. /sys: only the CPU topology (hwloc, UCX and Numba look
    # there; an empty /sys/class/net stops UCX complaining about the missing network).
    quota = (workdir / TMP).is_dir() and (workdir / SHM).is_dir()
    args += ["--dev", "/dev", "--proc", "/proc"]
    if quota:
        args += ["--bind", str(workdir / SHM), "/dev/shm", "--bind", str(workdir / TMP), "/tmp"]
    else:
        args += ["--perms", "1777", "--tmpfs", "/dev/shm", "--perms", "1777", "--tmpfs", "/tmp"]
    for d in ("/sys", "/sys/class", "/sys/class/net", "/sys/devices", "/sys/devices/system"):
        args += ["--perms", "0755", "--dir", d]
    if Path("/sys/devices/system/cpu").is_dir():
        args += ["--ro-bind", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    import scaledl

    extra = [Path(sys.base_prefix), Path(sys.prefix), Path(scaledl.__file__).parents[1], *readonly]
    for p in extra:  # both the path as given (argv uses it) and where its symlinks lead
        binds += [Path(os.path.abspath(p)), p.resolve()]
    # mounts made above (nothing is bound beneath them) and dirs that exist in the sandbox already
    special = {Path("/dev"), Path("/proc"), Path("/sys")}
    special |= {Path("/") / n for n in SYSTEM_DIRS if (Path("/") / n).is_symlink()}
    made = {Path("/"), Path("/tmp"), *special}
    kept: list[Path] = []
    for p in sorted(set(binds), key=lambda q: (len(q.parts), str(q))):
        covered = any(p == k or k in p.parents for k in kept) or any(s in p.parents for s in special)
        if covered or not p.exists():
            continue
        # bwrap makes a missing parent with the source's mode (0700 for /root): make each one 0755 first
        for parent in reversed(p.parents):
            if parent not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        args += ["--ro-bind", str(p), str(p)]
        kept.append(p)
    args += ["--bind", str(workdir), str(INSIDE)]
    for stub, target in sorted(overlays, key=lambda pair: len(Path(pair[1]).parts)):
        args += ["--ro-bind", str(stub), str(target)]
    return [*args, "--remount-ro", "/"]
