"""Run one untrusted process tree (a submission's worker, its kernel, its MPI ranks) out of the grader's reach.

Threat model, for the instructor. A submission is arbitrary code. At level ``bwrap`` (the one to use; needs
``apt-get install bubblewrap``) it runs in fresh mount, PID, network, IPC and UTS namespaces that show only
read-only system directories, the Python installation, the virtual environment and the ``scaledl`` sources,
plus its own throw-away workdir (at ``/sandbox``), a private ``/tmp`` and ``/dev/shm``. Run as root, the
grader also drops to the unprivileged account ``scaledl-grader`` (uid-based file permissions then protect
even the read-only parts' secrets, such as ``/etc/shadow``). So the code cannot read or change the
instructor's files, the other submissions or the grades, cannot see the grader's environment or processes,
and has no network. Every level puts the tree in its own session with rlimits (address space, processes,
CPU time, file size, open files) and, where one can be made, a memory + pids cgroup, and kills the whole tree
at the time limit or when the run ends. Not covered: kernel exploits (no seccomp filter), and CPU shares
between concurrent runs. The weaker levels say what they give up in :meth:`Sandbox.describe`.

The grader must still treat the workdir's contents as hostile after the run: a submission can leave symlinks
or huge files there, so read results without following links out of it and with size caps.
"""

from __future__ import annotations

import os
import itertools
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from scaledl._args import UsageError
from scaledl.course.account import GRADING_ACCOUNT, _chown_tree, grading_user
from scaledl.course.limits import Limits, trampoline
from scaledl.course.mounts import INSIDE, bwrap_mounts, quota_possible, scratch, workspace
from scaledl.course.processes import Cgroup, kill, processes

LEVELS = ("bwrap", "user", "none")  # strongest first: what detect("auto") tries
# By name only: the grading account without namespaces, for a container that runs one submission and cannot
# make namespaces (Gradescope's; scaledl.course.gradescope). Runs at once could reach each other's workdirs
# (one uid, one /tmp), so detect("auto") never picks it for a batch.
ACCOUNT = "account"
OUTPUT_TAIL_BYTES = 64 << 10  # the last lines are what explains a crash; a runaway print loop is not kept
MARK_VAR = "SCALEDL_SANDBOX"  # marks processes where uid and namespaces cannot tell them apart
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap)"
_KILL_WAIT_S = 10.0  # a SIGKILLed tree is gone in milliseconds; this only bounds a stuck kernel
# Where any account may write on a Debian or Ubuntu image: what an account-level run leaves there is removed.
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/shm", "/run/lock", "/var/lock", "/dev/mqueue")


@dataclass
class Result:
    """How a run ended: exit status (None when killed at the time limit) and the tail of its output."""

    returncode: int | None
    timed_out: bool
    seconds: float
    output: str  # last 64 kB of stdout+stderr


@dataclass
class Running:
    """A run :meth:`Sandbox.start` began: wait for it, then ``finish`` (kills what is left, returns a Result)."""

    box: Sandbox
    proc: subprocess.Popen
    cg: Cgroup | None
    run_id: str
    outdir: Path
    started: float
    workdir: Path | None = None

    def wait(self, timeout_s: float | None) -> bool:
        """True when the run's first process ended within ``timeout_s`` (None: however long it takes)."""
        try:
            self.proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False

    def finish(self, *, timed_out: bool = False) -> Result:
        """SIGKILL everything the run started, wait until it is gone, and say how it ended."""
        try:
            self.box._kill_run(self.proc, self.cg, self.run_id)
            if self.box.level == ACCOUNT:  # no private /tmp: what the run left in the shared ones goes now
                self.box.remove_account_files(keep=(self.workdir,))
            seconds = time.perf_counter() - self.started
            return Result(None if timed_out else self.proc.returncode, timed_out, seconds,
                          _tail(self.outdir / "output"))
        finally:
            if self.cg is not None:
                self.cg.remove()
            shutil.rmtree(self.outdir, ignore_errors=True)


@dataclass
class Sandbox:
    """A way to run untrusted commands at one protection ``level`` ("bwrap", "user" or "none").

    Use :func:`detect` rather than this constructor: it checks the level works here. ``readonly`` adds
    host paths that bwrap shows read-only (beyond the system, Python, venv and package directories).
    """

    level: str
    readonly: tuple[Path, ...] = ()
    user: str | None = field(init=False, default=None)
    cgroup: str | None = field(init=False, default=None)  # "v1", "v2" or None: whether runs get a cgroup
    _uid: int | None = field(init=False, default=None, repr=False)
    _gid: int | None = field(init=False, default=None, repr=False)
    _token: str = field(init=False, default_factory=lambda: secrets.token_hex(8), repr=False)
    _count: itertools.count = field(init=False, default_factory=lambda: itertools.count(1), repr=False)

    def __post_init__(self):
        if self.level not in (*LEVELS, ACCOUNT):
            raise UsageError(f"level={self.level!r}: expected one of {', '.join((*LEVELS, ACCOUNT))}")
        self.readonly = tuple(Path(p) for p in self.readonly)
        for p in self.readonly:
            if not p.is_absolute() or p == Path("/"):
                raise UsageError(f"readonly={str(p)!r}: expected an absolute path below /")
        if os.geteuid() == 0 and self.level != "none":
            self.user, self._uid, self._gid = grading_user()
        cg = Cgroup.make(f"scaledl-probe-{self._token}", processes=Limits().processes,
                         memory_bytes=Limits().memory_bytes)
        if cg is not None:
            self.cgroup = cg.version
            cg.remove()

    # -- what it protects ---------------------------------------------------------------------------------

    def describe(self) -> str:
        """One line: what protects the instructor at this level, and what does not."""
        limits = "rlimits" + (f" + {self.cgroup} memory/pids cgroup" if self.cgroup else " (no cgroup: memory "
                                                                                         "limited per process only)")
        disk = (f"a {Limits().disk_bytes >> 20} MiB quota on everything it writes (one tmpfs)" if self.quota else
                f"no disk quota (each file under {Limits().file_size_bytes >> 20} MB; a quota needs root)")
        view = "the library's answers and the grader's code left out of its view of the package"
        if self.level == "bwrap" and self.user:
            return (f"bwrap: runs as {self.user} (uid {self._uid}) in new pid/net/ipc/uts/mount namespaces; sees "
                    f"only read-only system, Python, venv and package dirs, {view}; writes only its workdir, /tmp "
                    f"and /dev/shm, {disk}; no network; {limits}; not covered: kernel exploits (no seccomp)")
        if self.level == "bwrap":
            return (f"bwrap (unprivileged): keeps the instructor's uid {os.geteuid()} inside a user namespace; sees "
                    f"only read-only system, Python, venv and package dirs, {view}; writes only its workdir, /tmp "
                    f"and /dev/shm, {disk}; no network; {limits}; a namespace escape would act as the instructor "
                    f"(run as root to use {GRADING_ACCOUNT})")
        unviewed = ("the library's answers and the grader's code are NOT left out (no mount namespace): a "
                    "submission that reaches past an import is flagged for review")
        if self.level == ACCOUNT:
            return (f"account: runs as {self.user} (uid {self._uid}) with no namespace: files are protected only by "
                    f"their permissions, processes are found by uid and killed, and its files outside the results "
                    f"removed after each run; {unviewed}; network is NOT isolated; {disk}; {limits}; for a "
                    f"container that grades one submission")
        if self.level == "user":
            return (f"user: runs as {self.user} (uid {self._uid}) in a new pid namespace; the instructor's files "
                    f"are protected only by their permissions (world-readable ones are readable); {unviewed}; "
                    f"network is NOT isolated; {disk}; {limits}; {INSTALL_HINT} for the bwrap level")
        return (f"none: same uid {os.geteuid()} as the grader, scrubbed environment, new session, {limits}; "
                f"protects against runaway processes only: the instructor's files and the grader are NOT "
                f"protected; {unviewed}; {INSTALL_HINT}")

    def workspace(self, limits: Limits = Limits()):
        """A context manager giving a fresh folder for one run and whether it holds a disk quota
        (:func:`scaledl.course.mounts.workspace`): ``with box.workspace() as (work, quota): ...``."""
        return workspace(self.level, limits.disk_bytes)

    @property
    def quota(self) -> bool:
        """Whether runs get a disk quota here (a tmpfs of ``Limits.disk_bytes`` for folder, /tmp and /dev/shm)."""
        return quota_possible(self.level)

    def workdir_inside(self, workdir: Path) -> Path:
        """Where the sandboxed code sees ``workdir`` (for HOME, NUMBA_CACHE_DIR, ... in its env)."""
        return INSIDE if self.level == "bwrap" else Path(workdir)

    # -- running ------------------------------------------------------------------------------------------

    def run(self, argv: list[str], *, workdir: Path, env: dict[str, str], timeout_s: float,
            limits: Limits = Limits(), overlays=()) -> Result:
        """Run ``argv`` in ``workdir`` with exactly ``env``; kill the whole tree at ``timeout_s`` or at its end.

        Args:
            argv: ``argv[0]`` an absolute path visible in the sandbox; other paths relative to ``workdir``.
            workdir: an existing directory, the only host directory the code may write (chowned to the
                grading user when there is one).
            env: the complete environment of the command.
            timeout_s: wall-clock limit, measured here.
            overlays: ``(stub, target)`` pairs shown over ``target`` (a view: :mod:`scaledl.course.view`);
                bwrap level only.

        Raises:
            ValueError: an empty or relative argv, a missing workdir or a non-positive timeout.
        """
        if not timeout_s > 0:
            raise UsageError(f"timeout_s={timeout_s!r}: expected a positive number of seconds")
        running = self.start(argv, workdir=workdir, env=env, limits=limits, overlays=overlays)
        return running.finish(timed_out=not running.wait(timeout_s))

    def start(self, argv: list[str], *, workdir: Path, env: dict[str, str], limits: Limits = Limits(),
              overlays=(), pass_fds=()) -> Running:
        """Start ``argv`` as :meth:`run` does and return at once: the caller waits, talks to it over
        ``pass_fds`` (file descriptors the run inherits, at the same numbers) and calls ``finish``."""
        if not argv or not os.path.isabs(argv[0]):
            raise UsageError(f"argv={argv!r}: expected a command whose first item is an absolute path")
        workdir = Path(workdir).resolve()
        if not workdir.is_dir():
            raise UsageError(f"workdir={str(workdir)!r}: expected an existing directory")
        if overlays and self.level != "bwrap":
            raise UsageError(f"overlays: only the bwrap level can show a view; this sandbox is {self.level!r}")
        run_id = f"{self._token}.{next(self._count)}"  # next() on a count is atomic: runs may overlap
        if self._uid is not None:
            _chown_tree(workdir, self._uid, self._gid)
        cmd, host_env = self._command(list(argv), workdir, dict(env), run_id, overlays)
        cg = Cgroup.make(f"scaledl-{run_id}", processes=limits.processes, memory_bytes=limits.memory_bytes)
        outdir = scratch("sandbox-out")  # the grader's, never bound inside
        try:
            with open(outdir / "output", "wb") as out:
                proc = subprocess.Popen([*trampoline(limits, cg), *cmd], cwd=workdir, env=host_env,
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True, pass_fds=tuple(pass_fds))
        except BaseException:
            if cg is not None:
                cg.remove()
            shutil.rmtree(outdir, ignore_errors=True)
            raise
        return Running(self, proc, cg, run_id, outdir, time.perf_counter(), workdir)

    def _command(self, argv: list[str], workdir: Path, env: dict[str, str], run_id: str, overlays=()):
        """The host command line and its environment for this level."""
        root = self._uid is not None
        drop = [_which("setpriv"), f"--reuid={self._uid}", f"--regid={self._gid}", "--clear-groups",
                "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all", "--"] if root else []
        env = {**env, MARK_VAR: run_id}  # lets sweep() spare other sandboxes' live runs
        if self.level == "none":
            return argv, env
        if self.level == ACCOUNT:
            return [*drop, *argv], env
        if self.level == "user":
            return [_which("unshare"), "--pid", "--fork", "--kill-child", "--mount-proc", *drop, *argv], env
        cmd = [_which("bwrap"), *bwrap_mounts(workdir, readonly=self.readonly, overlays=overlays)]
        cmd += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        cmd += ["--unshare-user", "--unshare-all"] if not root else []
        cmd += ["--die-with-parent", "--new-session", "--chdir", str(INSIDE), "--clearenv"]
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        return [*cmd, *drop, *argv], {"PATH": "/usr/bin:/bin"}

    # -- killing ------------------------------------------------------------------------------------------

    def _kill_run(self, proc: subprocess.Popen, cg: Cgroup | None, run_id: str) -> None:
        """SIGKILL everything the run started and wait until it is gone."""
        deadline = time.monotonic() + _KILL_WAIT_S
        while True:
            # The namespace's pid 1 (bwrap's init, or unshare's child) is the Popen child's child: killing it
            # makes the kernel kill the rest of the namespace before the Popen child sees it exit.
            victims = {pid for pid, info in processes(MARK_VAR).items()
                       if info.ppid == proc.pid or info.pgrp == proc.pid or info.mark == run_id}
            if proc.poll() is None:
                victims.add(proc.pid)
            victims |= set(cg.pids()) if cg is not None else set()
            victims.discard(os.getpid())
            if not victims or time.monotonic() > deadline:
                break
            for pid in victims:
                kill(pid)
            time.sleep(0.02)
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass

    def sweep(self) -> list[int]:
        """SIGKILL and return the pids of processes left by this sandbox's runs (expect none)."""
        prefix = f"{self._token}."
        left = sorted(pid for pid, info in processes(MARK_VAR).items() if pid != os.getpid() and (
            (info.mark or "").startswith(prefix)
            # as root also whatever runs as the grading account unmarked (it cleared its environment); a mark
            # of another Sandbox's means another batch's live run, which is spared
            or (self._uid is not None and info.uid == self._uid and info.mark is None)))
        for pid in left:
            kill(pid)
        return left

    def remove_account_files(self, keep=()) -> list[str]:
        """At the ``account`` level (no namespaces, one submission per container): remove every file and folder
        the grading account owns in the world-writable places it could reach (:data:`SHARED_TMP`); returns
        them. A run's own folder goes with its workspace; results are written by the grader, as root."""
        if self._uid is None:
            return []
        kept = {os.path.realpath(p) for p in keep if p is not None}
        removed = []
        for top in SHARED_TMP:
            try:
                entries = list(os.scandir(top))
            except OSError:
                continue
            for e in entries:
                try:
                    if e.stat(follow_symlinks=False).st_uid != self._uid or os.path.realpath(e.path) in kept:
                        continue
                    if e.is_dir(follow_symlinks=False):
                        shutil.rmtree(e.path, ignore_errors=True)
                    else:
                        os.unlink(e.path)
                    removed.append(e.path)
                except OSError:
                    continue
        return removed

    def _problem(self) -> str | None:
        """Why this level does not work here (a probe run), or None."""
        import scaledl

        # The same interpreter, venv and package must come up: where the grading account cannot read the
        # Python installation the dynamic loader may quietly pick the distro's libpython instead.
        want = {"version": sys.version, "prefix": sys.prefix, "package": scaledl.__file__}
        probe = [sys.executable, "-c", _PROBE, repr(want)]
        with tempfile.TemporaryDirectory(prefix="scaledl-sandbox-probe-") as tmp:
            res = self.run(probe, workdir=Path(tmp), env={"PATH": "/usr/bin:/bin"}, timeout_s=60)
        if res.returncode == 0:
            return None
        return f"a probe run failed (exit {res.returncode}): {res.output.strip()[-300:] or 'no output'}"


_PROBE = """import ast, importlib.util, sys
want = ast.literal_eval(sys.argv[1])
spec = importlib.util.find_spec("scaledl")
got = {"version": sys.version, "prefix": sys.prefix, "package": spec and spec.origin}
bad = [f"{k}: {got[k]!r} instead of {want[k]!r}" for k in want if got[k] != want[k]]
sys.exit("; ".join(bad) or None)
"""


class SandboxUnavailable(UsageError):
    """A named sandbox level does not work on this machine; the message says why and how to get it. The only
    error ``detect("auto")`` passes over to try the next level: any other (a bug in a probe) goes through."""


def detect(mode: str = "auto", *, readonly: tuple[Path, ...] = ()) -> Sandbox:
    """The sandbox for ``mode``: "auto" (the strongest that works here), "bwrap", "user" or "none".

    Raises:
        ValueError: an unknown mode.
        SandboxUnavailable: a named mode that does not work here (the message says why and how to get it, e.g.
            ``apt-get install bubblewrap``); a ValueError, so callers that report either need not tell them apart.
    """
    if mode == "auto":
        for level in LEVELS:
            try:
                return detect(level, readonly=readonly)
            except SandboxUnavailable:
                continue
    if mode not in (*LEVELS, ACCOUNT):
        raise UsageError(f"mode={mode!r}: expected 'auto', 'bwrap', 'user' or 'none' (or 'account', by name)")
    root = os.geteuid() == 0
    if mode == "bwrap" and shutil.which("bwrap") is None:
        raise SandboxUnavailable(f"sandbox mode 'bwrap' is unavailable: bwrap is not on PATH; {INSTALL_HINT}")
    if mode != "none" and root and shutil.which("setpriv") is None:
        raise SandboxUnavailable(f"sandbox mode {mode!r} is unavailable: setpriv is not on PATH "
                                 "(apt-get install util-linux)")
    if mode == ACCOUNT and not root:
        raise SandboxUnavailable(f"sandbox mode {ACCOUNT!r} is unavailable: it needs root to switch to "
                                 f"{GRADING_ACCOUNT} (running as uid {os.geteuid()})")
    if mode == "user":
        if not root:
            raise SandboxUnavailable(f"sandbox mode 'user' is unavailable: it needs root to switch to "
                                     f"{GRADING_ACCOUNT} (running as uid {os.geteuid()}); {INSTALL_HINT} and use "
                                     "mode 'bwrap'")
        if shutil.which("unshare") is None:
            raise SandboxUnavailable("sandbox mode 'user' is unavailable: unshare is not on PATH "
                                     "(apt-get install util-linux)")
    box = Sandbox(mode, readonly=tuple(readonly))
    if mode != "none":
        problem = box._problem()
        if problem:
            why = (f"the grading account {box.user} cannot run {sys.executable} with its installation (e.g. a "
                   f"0700 /root above it); " if mode == "user" else "")
            raise SandboxUnavailable(f"sandbox mode {mode!r} is unavailable: {why}{problem}"
                                     + (f"; {INSTALL_HINT} and use mode 'bwrap'" if mode == "user" else ""))
    return box


# -- helpers ------------------------------------------------------------------------------------------------


def _which(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise UsageError(f"{name} is not on PATH; {INSTALL_HINT} (setpriv and unshare come with util-linux)")
    return path


def _tail(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - OUTPUT_TAIL_BYTES))
        return f.read(OUTPUT_TAIL_BYTES).decode("utf-8", errors="replace")
