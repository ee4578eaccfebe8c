"""The Gradescope autograder as Gradescope runs it: ``setup.sh`` once, then ``run_autograder`` per submission.

Slow (setup.sh makes a virtual environment and pip-installs the wheel with ``[course]``: about a minute with a
warm pip cache), so it runs in ``make test-scale`` (``SCALEDL_TEST_SCALE=1``), not ``make test``;
test_gradescope.py grades in process there.

The zip is built by the command line and unpacked into a folder laid out as ``/autograder`` (``AUTOGRADER_ROOT``);
setup.sh runs once for the module with the system's python3 (the image's, in Gradescope). Each submission is
graded by ``run_autograder`` in the ``account`` sandbox, what a container that cannot make namespaces leaves
(the unprivileged grading account, nothing else): the solution, the untouched student copy, one bug, another
lab's notebook, no notebook, and three hostile notebooks:

- **resultwriter** writes results.json itself, and leaves a process (own session, empty environment) that
  rewrites it for 30 s after the notebook ends;
- **sourcereader** answers every task only if it can read a hidden test in ``source/`` (the solutions);
- **envreader** answers every task only if it finds the grader's canary variable, in its own environment or in
  any process's ``/proc/PID/environ``.

None may change the score. Each hostile notebook is also graded with the protections off (level ``none``: as
root, so ``chmod o=`` protects nothing and no process is swept), where each attack must succeed: the test shows
it can fail. Every run's seconds are printed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.skipif(os.environ.get("SCALEDL_TEST_SCALE") != "1",
                                reason="setup.sh's venv install is slow: `make test-scale` runs this tier")
pytest.importorskip("nbclient")

import corpus  # noqa: E402  (tests/grading is on sys.path: conftest)

from scaledl.course import gradescope as GS  # noqa: E402
from scaledl.course import gradescope_zip as GZ  # noqa: E402

LAB = "lab03"
CANARY = "SCALEDL_GS_CANARY"
FAKE = {"score": 1000, "output": "written by the submission", "tests": []}
TIMES: dict[str, float] = {}


def reachable_python() -> str:
    """The system's python3 (3.10+) where the grading account can reach it: what Gradescope's image has."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3") or ""):
        if not cand or not Path(cand).exists():
            continue
        real = Path(os.path.realpath(cand))
        if all(os.stat(p).st_mode & 0o001 for p in real.parents) and subprocess.run(
                [cand, "-c", "import sys, venv; sys.exit(sys.version_info < (3, 10))"]).returncode == 0:
            return cand
    pytest.skip("no python3 >= 3.10 with venv that other users can run (the grading account must run it)")


@pytest.fixture(scope="module")
def root(box):
    base = Path(tempfile.mkdtemp(prefix="scaledl-gradescope-", dir="/tmp"))
    os.chmod(base, 0o755)  # /tmp/pytest-of-root is 0700: the grading account could not reach the venv there
    try:
        start = time.perf_counter()
        made = subprocess.run([sys.executable, "-m", "scaledl", "course", "gradescope", LAB, "--out", str(base),
                               "--timeout", "150"], capture_output=True, text=True, timeout=600)
        TIMES["build the zip"] = time.perf_counter() - start
        assert made.returncode == 0, made.stderr[-3000:]
        top = GZ.unpack(base / f"{LAB}-gradescope.zip", base / "autograder")
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "SCALEDL_BOOK_ROOT")}
        env.update(AUTOGRADER_ROOT=str(top), SCALEDL_PYTHON=reachable_python())
        start = time.perf_counter()
        setup = subprocess.run(["bash", str(top / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                               timeout=1800, cwd=base)
        TIMES["setup.sh"] = time.perf_counter() - start
        assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-3000:]
        assert "scaledl gradescope setup: lab03" in setup.stdout and "sandbox here:" in setup.stdout
        yield top
    finally:
        shutil.rmtree(base, ignore_errors=True)
        print("\n" + "\n".join(f"| {k} | {v:.1f} s |" for k, v in TIMES.items()))


def submit(top: Path, name: str, files: dict[str, object], *, sandbox="account", env_extra=None) -> dict:
    """Hand in ``files`` (name -> notebook or text) and run run_autograder as Gradescope does; results.json."""
    for d in ("submission", "results"):
        shutil.rmtree(top / d, ignore_errors=True)
    (top / "submission").mkdir()
    (top / "results").mkdir()
    os.chmod(top / "results", 0o777)  # as open as a harness could leave it: run_autograder must lock it
    for fname, content in files.items():
        if isinstance(content, str):
            (top / "submission" / fname).write_text(content)
        else:
            nbformat.write(content, top / "submission" / fname)
    (top / "submission_metadata.json").write_text(json.dumps({"id": 1, "users": [{"name": "Ada", "email": "a@x"}]}))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
           "AUTOGRADER_ROOT": str(top), GS.SANDBOX_VAR: sandbox, **(env_extra or {})}
    start = time.perf_counter()
    ran = subprocess.run([str(top / "run_autograder")], env=env, capture_output=True, text=True, timeout=900,
                         cwd=top)
    TIMES[f"{name} ({sandbox})"] = time.perf_counter() - start
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    got = json.loads((top / "results" / "results.json").read_text())
    got["_stdout"] = ran.stdout
    return got


def check(got: dict, total: float, status: str) -> None:
    assert (got["score"], got["extra_data"]["status"]) == (total, status), got["output"] + got["_stdout"][-2000:]
    assert got["score"] == sum(t["score"] for t in got["tests"]) and len(got["tests"]) == len(corpus.points(LAB))
    assert got["stdout_visibility"] == "hidden" and isinstance(got["extra_data"]["seed"], int)
    hidden = [ln.strip() for c in corpus.solution(LAB).cells if corpus.integrity.is_test(c)
              for ln in c.source.split("### BEGIN HIDDEN TESTS")[-1].splitlines()
              if len(ln.strip()) >= 8 and "END HIDDEN" not in ln]
    shown = json.dumps({k: v for k, v in got.items() if k != "_stdout"})
    assert not any(h in shown for h in hidden), "hidden-test source in results.json"


# --- the ordinary cases -------------------------------------------------------------------------------------

def test_solution_stub_bug_wrong_lab_and_no_notebook(root):
    sol, pts = corpus.solution(LAB), corpus.points(LAB)
    got = submit(root, "solution", {"lab03.ipynb": corpus.handed_in(sol)})
    check(got, 10, "OK")
    assert got["extra_data"]["sandbox"] == "account" and "sandbox: account: runs as" in got["_stdout"]
    got = submit(root, "solution", {"lab03.ipynb": corpus.handed_in(sol)}, sandbox="auto")
    check(got, 10, "OK")  # the strongest level here (bubblewrap, where it works)
    got = submit(root, "student copy", {"lab03.ipynb": corpus.student_copy(LAB)})
    check(got, 0, "OK")
    assert "no task answered" in got["output"] and all(t["status"] == "failed" for t in got["tests"])
    task, old, new = corpus.BUGS[LAB]
    got = submit(root, "bug", {"lab03.ipynb": corpus.handed_in(sol, (old, new))})
    check(got, 10 - pts[task], "OK")
    assert [t["score"] for t in got["tests"] if task in t["tags"]] == [0]
    got = submit(root, "wrong lab", {"lab03.ipynb": corpus.handed_in(corpus.solution("lab04"))})
    check(got, 0, "REJECTED")
    assert "this is lab04's notebook" in got["output"]
    got = submit(root, "no notebook", {"notes.txt": "my answers are in my head"})
    check(got, 0, "REJECTED")
    assert "no notebook (.ipynb) was handed in (files: notes.txt)" in got["output"]


# --- hostile submissions -------------------------------------------------------------------------------------

def result_writer(top: Path):
    """The student copy (0 points), writing results.json and leaving a process that rewrites it."""
    target = str(top / "results" / "results.json")
    fake = json.dumps(FAKE)
    # It leaves the run's cgroups for their parents (the grader's), which only root may do, and replaces the
    # file rather than writing into it (the grader's results.json is root's, but a folder others may write
    # lets anyone replace it).
    later = (f"import os, time\n"
             f"for line in open('/proc/self/cgroup'):\n    _, ctrl, path = line.strip().split(':', 2)\n"
             f"    if ctrl and '=' not in ctrl and path not in ('', '/'):\n        try:\n"
             f"            open(f'/sys/fs/cgroup/{{ctrl.split(\",\")[0]}}{{os.path.dirname(path)}}/cgroup.procs', 'w')"
             f".write(str(os.getpid()))\n        except OSError:\n            pass\n"
             f"for _ in range(300):\n    time.sleep(0.1)\n    try:\n"
             f"        open({target + '.new'!r}, 'w').write({fake!r})\n"
             f"        os.replace({target + '.new'!r}, {target!r})\n    except OSError:\n        pass\n")
    code = (f"import subprocess, sys\n"
            f"for p in ({target!r}, '/autograder/results/results.json'):\n"
            f"    try:\n        open(p, 'w').write({fake!r})\n        print('wrote', p)\n"
            f"    except OSError as e:\n        print('could not write', p, type(e).__name__)\n"
            f"subprocess.Popen([sys.executable, '-c', {later!r}], env={{}}, start_new_session=True,\n"
            f"                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
    return corpus.with_cell(corpus.student_copy(LAB), code, at="end")


def guarded(probe: str):
    """The solution whose every answer runs only when ``probe`` (code setting LEAKED) found what it looks for."""
    nb = corpus.with_cell(corpus.handed_in(corpus.solution(LAB)), probe)
    for cell in nb.cells:
        if corpus.integrity.meta(cell).get("grade_id", "").startswith("answer_"):
            cell.source = "if not LEAKED:\n    raise NotImplementedError('nothing leaked')\n" + cell.source
    return nb


def source_reader(top: Path):
    return guarded(f"import glob\nLEAKED = []\nfor base in ({str(top / 'source')!r}, '/autograder/source'):\n"
                   f"    for p in glob.glob(base + '/**/*.ipynb', recursive=True):\n        try:\n"
                   f"            if 'BEGIN HIDDEN TESTS' in open(p).read():\n                LEAKED.append(p)\n"
                   f"        except OSError:\n            pass\nprint('read', len(LEAKED), 'solutions')\n")


def env_reader():
    return guarded(f"import os\nLEAKED = [k for k in os.environ if {CANARY!r} in k]\n"
                   f"for pid in filter(str.isdigit, os.listdir('/proc')):\n    try:\n"
                   f"        if {CANARY!r}.encode() in open(f'/proc/{{pid}}/environ', 'rb').read():\n"
                   f"            LEAKED.append(pid)\n    except OSError:\n        pass\n"
                   f"print('found the canary in', len(LEAKED), 'places')\n")


def processes_naming(text: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes() and int(pid) != os.getpid():
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_submission_cannot_write_its_own_results(root):
    got = submit(root, "resultwriter", {"lab03.ipynb": result_writer(root)})
    check(got, 0, got["extra_data"]["status"])
    assert got["extra_data"]["status"] in ("OK", "REVIEW")
    time.sleep(3)  # the left process would rewrite results.json every 0.1 s
    again = json.loads((root / "results" / "results.json").read_text())
    assert again["score"] == 0 and again["extra_data"]["seed"] == got["extra_data"]["seed"], "results.json rewritten"
    assert processes_naming(str(root / "results")) == [], "the submission's process outlived run_autograder"


def test_a_submission_cannot_read_the_solutions(root):
    got = submit(root, "sourcereader", {"lab03.ipynb": source_reader(root)})
    check(got, 0, got["extra_data"]["status"])


def test_a_submission_cannot_see_the_grader_s_environment(root):
    got = submit(root, "envreader", {"lab03.ipynb": env_reader()}, env_extra={CANARY: os.urandom(8).hex()})
    check(got, 0, got["extra_data"]["status"])


def test_without_the_protections_every_attack_succeeds(bundle_root_unprotected):
    """The control: graded as root (level none: no account, so no permission stops it, and no sweep), each
    hostile notebook gets what it looks for, so the three tests above would fail without the protections."""
    top, grade = bundle_root_unprotected
    got = grade("sourcereader", source_reader(top), {})
    assert got["score"] == 10, got["output"]
    got = grade("envreader", env_reader(), {CANARY: os.urandom(8).hex()})
    assert got["score"] == 10, got["output"]
    grade("resultwriter", result_writer(top), {})
    try:
        time.sleep(1.5)
        assert json.loads((top / "results" / "results.json").read_text())["score"] == FAKE["score"]
    finally:
        for pid in processes_naming(str(top / "results")):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def bundle_root_unprotected(root, tmp_path):
    """A second root from the same bundle, graded in a subprocess of this checkout's Python at level none."""
    top = Path(tempfile.mkdtemp(prefix="scaledl-gradescope-none-", dir="/tmp"))
    shutil.copytree(root / "source", top / "source")

    def grade(name, nb, env_extra):
        for d in ("submission", "results"):
            shutil.rmtree(top / d, ignore_errors=True)
        (top / "submission").mkdir()
        nbformat.write(nb, top / "submission" / "lab03.ipynb")
        code = "import sys\nfrom scaledl.course import gradescope as G\nG.run(sys.argv[1], sandbox='none')\n"
        start = time.perf_counter()
        ran = subprocess.run([sys.executable, "-c", code, str(top)], capture_output=True, text=True, timeout=900,
                             env={**os.environ, **env_extra})
        TIMES[f"{name} (none, the control)"] = time.perf_counter() - start
        assert ran.returncode == 0, ran.stderr[-3000:]
        return json.loads((top / "results" / "results.json").read_text())

    yield top, grade
    for pid in processes_naming(str(top)):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(top, ignore_errors=True)


# --- issue 41: the four attacks, at the account level and at the strongest one here ----------------------------

@pytest.mark.parametrize("level", ["account", "auto"])
def test_the_four_attacks_gain_nothing(root, level):
    """Pre-written results score 0; the library through pickle scores 0 for its task where the view leaves the
    library out, and is flagged REVIEW where it cannot (account); the hidden tests are never sent back, even
    base64-encoded; the disk filled leaves nothing behind in the container's shared /tmp and /dev/shm."""
    import base64
    import re

    cases = corpus.attacks(LAB)
    pts = corpus.points(LAB)
    hidden = [ln.strip() for c in corpus.solution(LAB).cells if corpus.integrity.is_test(c)
              for ln in c.source.split("### BEGIN HIDDEN TESTS")[-1].splitlines()
              if len(ln.strip()) >= 8 and "END HIDDEN" not in ln]
    got = submit(root, f"prewritten ({level})", {"lab03.ipynb": cases["prewritten"][0]}, sandbox=level)
    assert got["score"] == 0, got["output"]
    got = submit(root, f"pickled ({level})", {"lab03.ipynb": cases["pickled"][0]}, sandbox=level)
    lost = cases["pickled"][1].lost
    if got["extra_data"]["sandbox"] == "bwrap":
        assert got["score"] == 10 - sum(pts[t] for t in lost), got["output"]
    else:  # no view: pickle finds the library, and the submission is flagged for the instructor to read
        assert "REVIEW" in got["extra_data"]["status"] and "pickle" in got["extra_data"]["detail"], got["output"]
    got = submit(root, f"readhidden ({level})", {"lab03.ipynb": cases["readhidden"][0]}, sandbox=level)
    shown = json.dumps({k: v for k, v in got.items() if k != "_stdout"}) + got["_stdout"]
    sent = [base64.b64decode(b + "=" * (-len(b) % 4)).decode(errors="replace")
            for b in re.findall(r"[A-Za-z0-9+/]{60,}={0,2}", shown)]
    assert not any(h in blob for blob in [shown, *sent] for h in hidden), "the hidden tests came back"
    got = submit(root, f"diskfill ({level})", {"lab03.ipynb": cases["diskfill"][0]}, sandbox=level)
    assert got["score"] == 10, got["output"]
    left = [p for p in ("/tmp/fill.bin", "/dev/shm/fill.bin", "/var/tmp/fill.bin") if os.path.exists(p)]
    assert left == [], f"left behind after run_autograder: {left}"
