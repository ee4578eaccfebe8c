"""The grading sandbox keeps a hostile submission away from the instructor's files, environment and processes.

Each behaviour is checked at every level that works on this machine (the others are skipped with the reason
:func:`sandbox.detect` gives). Every hostile script prints what it managed, so a failure shows what leaked.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import scaledl
from scaledl.course import sandbox as S

PY = sys.executable
VENV_BIN = Path(sys.prefix) / "bin"
_detected: dict[str, S.Sandbox | str] = {}


def _detect(level: str) -> S.Sandbox:
    if level not in _detected:  # one probe run per level for the whole module
        try:
            _detected[level] = S.detect(level)
        except ValueError as err:
            _detected[level] = str(err)
    if isinstance(_detected[level], str):
        pytest.skip(_detected[level])
    return _detected[level]


@pytest.fixture(params=S.LEVELS)
def box(request) -> S.Sandbox:
    return _detect(request.param)


@pytest.fixture
def work(tmp_path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


def run(box, work, code, *args, env=None, timeout_s=60.0, limits=S.Limits()):
    """Run ``code`` as ``main.py`` in the sandbox with the scrubbed env a grader would give."""
    (work / "main.py").write_text(textwrap.dedent(code))
    base = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(box.workdir_inside(work))}
    return box.run([PY, "main.py", *map(str, args)], workdir=work, env={**base, **(env or {})},
                   timeout_s=timeout_s, limits=limits)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has exited; only its parent's wait is missing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _alive_with(needle: str) -> list[int]:
    """Live host processes whose environment contains ``needle``."""
    found = []
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and needle.encode() in Path(entry.path, "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if _alive(pid)]


def test_writes_inside_workdir(box, work):
    res = run(box, work, """
        import os
        os.makedirs("sub", exist_ok=True)
        open("sub/out.txt", "w").write("hello")
        print("cwd", os.getcwd())
    """)
    assert res.returncode == 0, res.output
    assert (work / "sub" / "out.txt").read_text() == "hello"
    assert f"cwd {box.workdir_inside(work)}" in res.output


def test_runs_as_the_grading_account_without_capabilities(box, work):
    if box.user is None:
        pytest.skip(f"level {box.level} as uid {os.geteuid()} keeps the grader's uid")
    res = run(box, work, """
        import os
        caps = dict(line.split(":") for line in open("/proc/self/status") if line.startswith("Cap"))
        print("ids", os.getuid(), os.geteuid(), os.getgid(), os.getgroups(), int(caps["CapEff"], 16),
              int(caps["CapPrm"], 16), int(caps["CapBnd"], 16))
    """)
    account = pwd.getpwnam(box.user)
    assert account.pw_uid != 0
    assert f"ids {account.pw_uid} {account.pw_uid} {account.pw_gid} [] 0 0 0" in res.output, res.output


def test_instructor_files_can_be_neither_read_nor_written(box, work, tmp_path):
    if box.level == "none":
        pytest.skip("level none runs as the grader: the instructor's files are not protected")
    secret = tmp_path / "instructor" / "answers.txt"
    secret.parent.mkdir()
    secret.write_text("the reference solutions\n")
    secret.chmod(0o600)
    before = hashlib.sha256(secret.read_bytes()).hexdigest()
    res = run(box, work, """
        import sys
        path = sys.argv[1]
        try:
            print("READ", open(path).read())
        except OSError as err:
            print("read blocked:", type(err).__name__)
        try:
            open(path, "w").write("pwned")
            print("WROTE")
        except OSError as err:
            print("write blocked:", type(err).__name__)
    """, secret)
    assert res.returncode == 0, res.output
    assert "read blocked" in res.output and "write blocked" in res.output, res.output
    assert hashlib.sha256(secret.read_bytes()).hexdigest() == before


def test_bwrap_shows_nothing_of_the_host_but_the_binds(work):
    box = _detect("bwrap")
    repo = Path(scaledl.__file__).parents[2]
    res = run(box, work, """
        import os, sys
        for path in sys.argv[1:]:
            print(path, "VISIBLE" if os.path.exists(path) else "hidden")
        print("root holds", sorted(os.listdir("/root")))
    """, repo / "pyproject.toml", repo / "labs", "/home", "/work/shared", Path.home() / ".bashrc", work)
    assert res.returncode == 0, res.output
    assert "VISIBLE" not in res.output, res.output
    # /root only as the path down to the Python installation, if that lives there
    assert "root holds []" in res.output or "root holds ['.pyenv']" in res.output, res.output


def test_bwrap_mounts_only_the_listed_paths(work):
    """Checked at the mount layer, so file permissions cannot hide a bind that should not be there."""
    box = _detect("bwrap")
    res = run(box, work, """
        for line in open("/proc/self/mountinfo"):
            fields = line.split()
            print("MOUNT", fields[4], fields[fields.index("-") + 1])
    """)
    assert res.returncode == 0, res.output
    mounts = dict(line.split()[1:] for line in res.output.splitlines() if line.startswith("MOUNT"))
    allowed = {"/", "/usr", "/etc", "/sandbox", "/tmp", "/sys/devices/system/cpu", sys.base_prefix, sys.prefix,
               str(Path(scaledl.__file__).parents[1])} | {str(Path(p).resolve()) for p in (sys.base_prefix, sys.prefix)}
    extra = {m for m in mounts if m not in allowed and not m.startswith(("/dev", "/proc"))}
    assert not extra, sorted(extra)
    assert mounts["/"] == "tmpfs" and mounts["/tmp"] == "tmpfs" and mounts["/dev/shm"] == "tmpfs", mounts


def test_package_directory_is_read_only(box, work):
    if box.level == "none":
        pytest.skip("level none runs as the grader: the package directory is not protected")
    target = Path(scaledl.__file__).parent / f"planted_{uuid.uuid4().hex}.py"
    res = run(box, work, """
        import sys
        try:
            open(sys.argv[1], "w").write("x = 1")
            print("PLANTED")
        except OSError as err:
            print("blocked:", type(err).__name__)
    """, target)
    planted = target.exists()
    target.unlink(missing_ok=True)
    assert "blocked" in res.output and not planted, res.output


def test_environment_is_only_what_was_given(box, work, monkeypatch):
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("SCALEDL_TEST_CANARY", canary)
    res = run(box, work, """
        import json, os
        print(json.dumps(dict(os.environ)))
    """, env={"GIVEN": "yes"})
    assert res.returncode == 0, res.output
    assert canary not in res.output
    import json

    seen = json.loads(res.output.strip().splitlines()[-1])
    assert seen["GIVEN"] == "yes"
    # PWD: bwrap's --chdir sets it; LC_CTYPE: Python's own C-locale coercion (PEP 538) sets it
    assert set(seen) <= {"PATH", "HOME", "GIVEN", S.MARK_VAR, "PWD", "LC_CTYPE"}, sorted(seen)
    assert seen.get("PWD", str(box.workdir_inside(work))) == str(box.workdir_inside(work))


def test_rlimits_are_in_effect(box, work):
    limits = S.Limits(address_space_bytes=1 << 30, file_size_bytes=1 << 20, open_files=256, cpu_s=100,
                      processes=512)
    res = run(box, work, """
        import resource
        for name in ("AS", "FSIZE", "NOFILE", "CPU", "NPROC", "CORE"):
            print(name, resource.getrlimit(getattr(resource, "RLIMIT_" + name)))
        try:
            with open("big.bin", "wb") as f:
                f.write(b"x" * (2 << 20))
            print("WROTE 2 MiB")
        except OSError as err:
            print("file size blocked:", err.errno)
        try:
            block = bytearray(1536 << 20)
            print("ALLOCATED 1.5 GiB")
        except MemoryError:
            print("memory blocked")
    """, limits=limits)
    assert res.returncode == 0, res.output
    for line in ("AS (1073741824, 1073741824)", "FSIZE (1048576, 1048576)", "NOFILE (256, 256)",
                 "CPU (100, 100)", "CORE (0, 0)", "file size blocked: 27", "memory blocked"):
        assert line in res.output, res.output  # 27: EFBIG
    # processes: the run's pids cgroup where one is made (RLIMIT_NPROC counts the whole uid, which concurrent
    # runs share), RLIMIT_NPROC where none is (test_processes_are_bounded checks the bound itself)
    assert ("NPROC (512, 512)" in res.output) == (box.cgroup is None), (box.cgroup, res.output)
    assert (work / "big.bin").stat().st_size <= 1 << 20


def test_killing_parent_group_or_grader_does_not_hurt_the_grader(box, work):
    if box.level == "none":
        pytest.skip("level none runs as the grader: the grader process is not protected")
    res = run(box, work, """
        import os, sys
        for pid in (os.getppid(), int(sys.argv[1])):
            try:
                os.kill(pid, 9)
                print("signalled", pid, flush=True)
            except OSError as err:
                print("kill", pid, "blocked:", type(err).__name__, flush=True)
        os.killpg(0, 9)
        print("SURVIVED killpg")
    """, os.getpid())
    assert not res.timed_out
    assert "SURVIVED" not in res.output, res.output  # killpg(0) hit its own group
    assert f"signalled {os.getpid()}" not in res.output, res.output


TREE = """
    import os, sys, time
    if os.fork() == 0:  # double fork with a new session: escapes the process group
        os.setsid()
        if os.fork() == 0:
            open("escaped.pid", "w").write(str(os.getpid()))
            time.sleep(600)
        os._exit(0)
    if os.fork() == 0:
        open("plain.pid", "w").write(str(os.getpid()))
        time.sleep(600)
        os._exit(0)
    open("main.pid", "w").write(str(os.getpid()))
    time.sleep(600)
"""


TREE_TIMEOUT_S = 15  # the tree writes its pid files within 0.3 s on two idle cores: the limit must not come first


def test_timeout_kills_the_whole_tree(box, work):
    token = f"tree-{uuid.uuid4().hex}"
    res = run(box, work, TREE, env={"SCALEDL_TEST_TREE": token}, timeout_s=TREE_TIMEOUT_S)
    assert res.timed_out and res.returncode is None
    assert res.seconds < TREE_TIMEOUT_S + S._KILL_WAIT_S  # killing takes milliseconds; the wait is a 10 s bound
    pids = {name: int((work / f"{name}.pid").read_text()) for name in ("escaped", "plain", "main")}
    assert _alive_with(token) == []
    if box.level == "none":  # elsewhere these are pid-namespace numbers, meaningless out here
        for name, pid in pids.items():
            assert not _alive(pid), name
    assert box.sweep() == []


def test_a_tree_left_running_is_killed_when_the_run_ends(box, work):
    token = f"left-{uuid.uuid4().hex}"
    res = run(box, work, """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        time.sleep(0.5)
        print("main done")
    """, env={"SCALEDL_TEST_TREE": token}, timeout_s=60)
    assert res.returncode == 0 and not res.timed_out, res.output
    assert _alive_with(token) == []
    assert box.sweep() == []


def test_fork_loop_is_stopped_by_the_process_limit(box, work):
    if box.level == "none" and os.geteuid() == 0 and box.cgroup is None:
        pytest.skip("root ignores RLIMIT_NPROC, and no cgroup can be made here for pids.max")
    res = run(box, work, """
        import os, time
        started = 0
        try:
            for _ in range(300):  # bounded, so a broken limit cannot take the machine down
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                started += 1
            print("NOT STOPPED", started)
        except OSError as err:
            print("stopped after", started, type(err).__name__)
    """, limits=S.Limits(processes=64), timeout_s=60)
    assert "stopped after" in res.output, res.output
    assert int(res.output.split("stopped after")[1].split()[0]) < 64
    assert box.sweep() == []


def test_output_keeps_only_the_tail(box, work):
    res = run(box, work, """
        for i in range(20000):
            print(f"line {i:05d} " + "x" * 20)
    """)
    assert res.returncode == 0
    assert len(res.output.encode()) <= S.OUTPUT_TAIL_BYTES
    assert res.output.endswith("line 19999 " + "x" * 20 + "\n")
    assert "line 00000" not in res.output


def test_mpiexec_runs_two_ranks_in_bwrap(work):
    box = _detect("bwrap")
    if not (VENV_BIN / "mpiexec").exists():
        pytest.skip(f"no mpiexec in {VENV_BIN} (the MPICH wheel is not installed)")
    code = "from mpi4py import MPI; print('rank', MPI.COMM_WORLD.Get_rank(), flush=True)"
    res = box.run([str(VENV_BIN / "mpiexec"), "-n", "2", PY, "-c", code], workdir=work,
                  env={"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(S.INSIDE)}, timeout_s=60)
    assert res.returncode == 0, res.output
    assert sorted(line for line in res.output.splitlines() if line.startswith("rank")) == ["rank 0", "rank 1"]
    assert "ERROR" not in res.output, res.output  # e.g. UCX looking for /sys/class/net


def test_numba_cuda_simulator_and_the_package_work_inside(box, work):
    inside = box.workdir_inside(work)
    res = run(box, work, """
        import numpy as np
        from numba import cuda, njit
        import scaledl

        @cuda.jit
        def iota(a):
            i = cuda.grid(1)
            if i < a.size:  # 5 elements, 8 threads
                a[i] = i

        @njit(cache=True)  # writes to NUMBA_CACHE_DIR
        def total(a):
            return a.sum()

        a = np.zeros(5)
        iota[1, 8](a)
        print("result", a.tolist(), total(a))
    """, env={"NUMBA_ENABLE_CUDASIM": "1", "NUMBA_CACHE_DIR": f"{inside}/.numba", "HOME": str(inside)})
    assert res.returncode == 0, res.output
    assert "result [0.0, 1.0, 2.0, 3.0, 4.0] 10.0" in res.output, res.output


def test_detect_bwrap_without_bwrap_says_how_to_install_it(monkeypatch):
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "bwrap" else which(name, *a, **k))
    with pytest.raises(ValueError, match=r"'bwrap' is unavailable.*apt-get install bubblewrap"):
        S.detect("bwrap")


def test_detect_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match=r"mode='docker': expected 'auto', 'bwrap', 'user' or 'none'"):
        S.detect("docker")


def test_unavailable_user_level_points_to_bubblewrap():
    _detect("none")
    try:
        S.detect("user")
    except ValueError as err:
        assert "apt-get install bubblewrap" in str(err)
    else:
        pytest.skip("the user level works on this machine")


def test_describe_says_what_is_not_protected():
    assert "NOT protected" in _detect("none").describe()
    assert "no network" in _detect("bwrap").describe()


def test_bad_arguments_are_rejected(work):
    box = _detect("none")
    with pytest.raises(ValueError, match="argv=.*absolute path"):
        box.run(["python", "-c", "pass"], workdir=work, env={}, timeout_s=5)
    with pytest.raises(ValueError, match="workdir=.*existing directory"):
        box.run([PY, "-c", "pass"], workdir=work / "missing", env={}, timeout_s=5)
    with pytest.raises(ValueError, match="timeout_s=0"):
        box.run([PY, "-c", "pass"], workdir=work, env={}, timeout_s=0)
    with pytest.raises(ValueError, match=r"Limits.processes=0: expected a positive whole number"):
        S.Limits(processes=0)


# -- issue 41: no network, one disk quota, a process bound per run, the library's answers absent ----------------

def test_bwrap_has_no_network_a_listener_on_the_hosts_loopback_gets_nothing(work):
    import socket
    import threading

    box = _detect("bwrap")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port, accepted, stop = server.getsockname()[1], [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        res = run(box, work, f"""
            import socket
            for host in ("127.0.0.1", "localhost", "10.0.2.2", "1.1.1.1"):
                try:
                    socket.create_connection((host, {port}), timeout=2).sendall(b"hello")
                    print("CONNECTED", host)
                except OSError as err:
                    print("refused", host, type(err).__name__)
        """)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert "CONNECTED" not in res.output and res.output.count("refused") == 4, res.output
    assert accepted == [], "a connection from the sandbox reached the host's listener"


def test_everything_a_run_writes_counts_against_one_quota():
    box = _detect("bwrap")
    if not box.quota:
        pytest.skip("no quota at this level here: mounting the run's tmpfs needs root")
    before = shutil.disk_usage(tempfile_dir()).used
    limits = S.Limits(disk_bytes=64 << 20)
    with box.workspace(limits) as (work, quota):
        assert quota
        res = run(box, work, """
            total = 0
            for where in (".", "/tmp", "/dev/shm", "home"):
                try:
                    import os
                    os.makedirs(where, exist_ok=True)
                    with open(os.path.join(where, "fill.bin"), "wb") as f:
                        for _ in range(200):
                            f.write(b"x" * (1 << 20))
                            total += 1 << 20
                except OSError as err:
                    print("stopped in", where, err.errno)
            print("wrote", total)
        """, limits=limits)
    wrote = int(res.output.split("wrote")[1].split()[0])
    assert wrote <= 64 << 20 and "stopped in . 28" in res.output, res.output  # 28: ENOSPC, the folder first
    assert not work.exists(), "the run's folder outlived it"
    assert abs(shutil.disk_usage(tempfile_dir()).used - before) < 32 << 20, "the run left data on the host disk"


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


def test_concurrent_runs_do_not_share_a_process_bound(tmp_path):
    """One fork loop cannot starve another run's threads: each run has its own pids cgroup."""
    import threading

    box = _detect("bwrap")
    if box.cgroup is None:
        pytest.skip("no cgroup here: runs as one uid share RLIMIT_NPROC")
    works = [tmp_path / "a", tmp_path / "b"]
    for w in works:
        w.mkdir()
    bomb = """
        import os, time
        n = 0
        try:
            for _ in range(300):
                if os.fork() == 0:
                    time.sleep(20)
                    os._exit(0)
                n += 1
        except OSError:
            pass
        print("bomb stopped at", n)
        time.sleep(4)
    """
    threads = """
        import threading, time
        time.sleep(1)  # the bomb is at its bound by now
        ts = [threading.Thread(target=time.sleep, args=(0.5,)) for _ in range(40)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print("40 threads started")
    """
    out = {}
    limits = S.Limits(processes=64)
    jobs = [threading.Thread(target=lambda k=k, src=src: out.__setitem__(k, run(box, works[k], src, limits=limits)))
            for k, src in enumerate((bomb, threads))]
    for j in jobs:
        j.start()
    for j in jobs:
        j.join()
    assert "bomb stopped at" in out[0].output and "40 threads started" in out[1].output, (out[0].output, out[1].output)


def test_a_view_leaves_the_library_answer_and_the_graders_code_out(work, tmp_path):
    from scaledl.course import view

    box = _detect("bwrap")
    pairs = view.build({"scaledl.sparsity", "ml_dtypes"}, tmp_path / "view", why="a test says so")
    res = box.run([PY, "-c", textwrap.dedent("""
        import pickle, importlib, sys
        def attempt(what, f):
            try:
                f()
                print("REACHED", what)
            except ImportError as err:
                print("absent", what, "|", str(err)[:90])
        attempt("import", lambda: __import__("scaledl.sparsity"))
        attempt("pickle", lambda: pickle.loads(b"cscaledl.sparsity.masks\\nmagnitude_mask\\n."))
        attempt("importlib", lambda: importlib.import_module("scaledl.sparsity.masks"))
        attempt("ml_dtypes", lambda: __import__("ml_dtypes"))
        attempt("the grader", lambda: __import__("scaledl.course.grade"))
        attempt("the judges", lambda: __import__("scaledl.course.tasks.lab04"))
        import scaledl.course.produce, scaledl.numerics
        print("present: produce, numerics")
        import os, glob
        src = os.path.join(os.path.dirname(scaledl.numerics.__file__), "..", "sparsity")
        print("files:", sorted(os.path.basename(p) for p in glob.glob(src + "/**", recursive=True)))
    """)], workdir=work, env={"PATH": "/usr/bin:/bin", "SCALEDL_BACKEND": "simulator"}, timeout_s=60, overlays=pairs)
    out = res.output
    assert "REACHED" not in out and out.count("absent") == 6, out
    assert "left out of this grading run: a test says so" in out and "present: produce, numerics" in out, out
    assert "files: ['', '__init__.py']" in out, out  # nothing of the package's sources, nor their bytecode
