"""A corpus of hostile submissions for ``scaledl course grade`` (issue 19), with what each must score.

``build(lab, folder, ...)`` writes one lab's cases into ``folder`` (one ``STUDENT.ipynb`` each) and returns
``{student: Expect}``. Run as a script to write every lab's corpus for a look or for another grader::

    python tests/grading/corpus.py OUT/        # OUT/lab03/*.ipynb ... OUT/lab06/*.ipynb

Three families:
- **cheats**, for every lab 03-06: the solution (full marks), the untouched student copy (0), one classic bug
  (loses that task), the library's own answer called by name (loses that task) and through dynamic lookups
  (REVIEW), stubs dressed up to pass (an exception hook that swallows every error, a fake ``produce`` module,
  ``vars(module).update``, ``np.array_equal`` always true: all 0), invented grade cells worth 103 of 10 (no
  effect), a renamed answer cell (graded all the same), the notebook of another lab (REJECTED);
- **harm**, on lab03 (the fastest): writing the instructor's files (submissions, solution, feedback, the
  package), printing the environment, killing the grader, a detached ``setsid`` process that rewrites
  ``grades.csv`` later, forked children, 52 MB of output, JavaScript in outputs, ``print(In)``,
  a memory hog, a duplicate upload, an unreadable file;
- **lab-specific**: lab04 Task 2.1 answered without a kernel, lab05's ring that deadlocks under MPI and the
  library's own ring (`scaledl.comm.mpi.ring_allreduce`).
"""

from __future__ import annotations

import copy
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from scaledl.book.toc import load  # noqa: E402
from scaledl.course import integrity  # noqa: E402
from scaledl.book.student_copy import strip_hidden_tests  # noqa: E402

BOOK = load(ROOT)
CANARY = "SCALEDL_CORPUS_CANARY"  # the test sets it in the grader's environment: no feedback may show its value
HARM_LAB = "lab03"


@dataclass
class Expect:
    total: float
    status: str = "OK"
    lost: tuple[str, ...] = ()          # grade_ids that must score 0 (the rest full)
    note: str = ""
    checks: dict = field(default_factory=dict)  # extra checks the test runs (see test_hostile.py)


def entry(lab):
    return next(e for e in BOOK.entries if e.id == lab)


def solution(lab):
    return nbformat.read(BOOK.path(entry(lab).solution), as_version=4)


def student_copy(lab):
    return nbformat.read(BOOK.path(entry(lab).file), as_version=4)


def handed_in(nb, *edits):
    """The solution as a student hands it in (hidden tests gone, outputs cleared), then ``(old, new)`` edits
    that must each match exactly one code cell."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_hidden_tests(cell.source)
            cell.outputs, cell.execution_count = [], None
    for old, new in edits:
        hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
        assert len(hits) == 1, f"the edit {old!r:.60} matched {len(hits)} cells"
        hits[0].source = hits[0].source.replace(old, new)
    return nb


def with_cell(nb, source, *, at=None, metadata=None):
    """``nb`` with a code cell ``source`` inserted at ``at`` (default: after the setup cell, index 2)."""
    nb = copy.deepcopy(nb)
    cell = nbformat.v4.new_code_cell(source, metadata=metadata or {})
    nb.cells.insert(len(nb.cells) if at == "end" else (2 if at is None else at), cell)
    return nb


def answer(nb, task_gid):
    """The answer cell of ``task_gid`` ("task_1_1")."""
    return next(c for c in nb.cells if integrity.meta(c).get("grade_id") == f"answer_{task_gid}")


def points(lab):
    return dict(integrity.test_cells(solution(lab)))


# lab -> (task it breaks, text in the solution, buggy text): one classic bug each
BUGS = {
    "lab03": ("task_1_1", "    q = np.rint(a / ulp) * ulp", "    q = np.floor(a / ulp + 0.5) * ulp"),  # ties up
    "lab04": ("task_2_1",  # no bounds guard: threads past the last row read indptr out of range
              "        if row < y.shape[0]:                 # the grid is rounded up: threads past the last row do "
              "nothing\n            acc = float32(0.0)\n            for j in range(indptr[row], indptr[row + 1]):\n"
              "                acc += data[j] * x[indices[j]]\n            y[row] = acc",
              "        acc = float32(0.0)\n        for j in range(indptr[row], indptr[row + 1]):\n"
              "            acc += data[j] * x[indices[j]]\n        y[row] = acc"),
    "lab05": ("task_1_1", 'b[(i + 1 - s) % p], b[(i + 1 - s) % p + 1], "copy"',
              'b[(i - s) % p], b[(i - s) % p + 1], "copy"'),
    "lab06": ("task_3_1", "                sent += len(message)\n", "                sent += len(message) // 2\n"),
}
# lab -> (tasks it loses, text, replacement): the library's own answer, called by name
BYPASS = {
    "lab03": (("task_1_1",), "    a = np.abs(x.astype(np.float64))\n", '    return quantize(x, "e4m3")\n'),
    # lab04: Task 3.1's answer calls prune_magnitude, so the library's mask reaches it too: both tasks lose
    "lab04": (("task_1_1", "task_3_1"), "def prune_magnitude(w, sparsity):\n",
              "def prune_magnitude(w, sparsity):\n    from scaledl.sparsity import magnitude_mask\n"
              "    return w * magnitude_mask(w, sparsity)\n"),
    "lab05": (("task_2_1",), "    right, left = (rank + 1) % p, (rank - 1) % p\n",
              "    from scaledl.comm.mpi import ring_allreduce\n    return ring_allreduce(comm, x)\n"),
    # lab06: Task 3.2's training compresses with the student's top_k, so the library's top-k costs it too
    "lab06": (("task_1_1", "task_3_2"), "    return np.sort(np.argsort(-np.abs(v), kind=\"stable\")[:k])\n",
              "    from scaledl.comm.compression.sparse import select_topk\n"
              "    return np.sort(select_topk(np.abs(np.asarray(v, np.float64)), k))\n"),
}
DYNAMIC = ("import importlib\n_lib = importlib.import_module('scal' + 'edl')\n"
           "_same = getattr(_lib, 'dev' + 'ice')\n")  # dynamic lookups: flagged for a person, points unchanged
DYNAMIC_LAB03 = ("    import importlib\n    return getattr(importlib.import_module('scaledl.numer' + 'ics'), "
                 "'quant' + 'ize')(x, 'e4m3')\n")

SWALLOW = "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: print('all good'))"
FAKE_PRODUCE = """import sys, types, os
fake = types.ModuleType('scaledl.course.produce')
def run(lab, gid, ns):
    d = os.environ.get('SCALEDL_GRADE_DIR', '.')
    import shutil, glob
    os.makedirs(f'{d}/outputs', exist_ok=True)
    for f in glob.glob(f'{d}/inputs/{gid}.*'):      # hand the inputs back as if they were results
        shutil.copy(f, f'{d}/outputs/')
    print(gid, 'passed')
fake.run = run
import scaledl.course
scaledl.course.produce = fake
sys.modules['scaledl.course.produce'] = fake"""
VARS_UPDATE = """import scaledl.course.tasks as _T, scaledl.course.exchange as _X
vars(_T).update(get=lambda lab, gid: None)
vars(_X).update(save=lambda stem, data: None)"""
ARRAY_EQUAL = "import numpy as np\nnp.array_equal = lambda *a, **k: True\nnp.allclose = lambda *a, **k: True"


# The four attacks the instructor's trial of issue 41 found holding: each failed on the main of that day.
# lab -> (first task, its function, the library's answer as a lambda, what to import for it)
LIBRARY_ANSWER = {
    "lab03": ("task_1_1", "e4m3_round", "lambda x: quantize(np.asarray(x, np.float32), 'e4m3')",
              "from scaledl.numerics import quantize"),
    "lab04": ("task_1_1", "prune_magnitude", "lambda w, s: np.asarray(w) * magnitude_mask(np.asarray(w), s)",
              "from scaledl.sparsity import magnitude_mask"),
    "lab05": ("task_1_1", "ring_schedule", "lambda p, length: build('ring', p, length)",
              "from scaledl.comm.schedule import build"),
    "lab06": ("task_1_1", "top_k", "lambda v, k: np.sort(select_topk(np.abs(np.asarray(v, np.float64)), k))",
              "from scaledl.comm.compression.sparse import select_topk"),
}
# Results written before the hidden test runs, with the library's answer, where the grader of that day read
# them (grade/outputs/<gid>, beside the inputs it had left in grade/inputs/): judged as the student's, 6 of 15.
PREWRITE = """import os
def _prewrite():
    try:
        import numpy as np
        {imports}
        from scaledl.course import exchange as _X, tasks as _T
        gid, name = {gid!r}, {name!r}
        d = os.environ.get("SCALEDL_GRADE_DIR", "grade")
        inputs = _X.load(f"{{d}}/inputs/{{gid}}")
        _X.save(f"{{d}}/outputs/{{gid}}", _T.get({lab!r}, gid).produce({{name: {answer}}}, inputs))
        print("pre-wrote", gid)
    except Exception as err:
        print("could not pre-write:", type(err).__name__, str(err)[:200])
_prewrite()"""
# The library's function with no import, getattr or importlib: pickle imports what a payload names.
PICKLED = "    import pickle\n    _lib = pickle.loads(b'c{module}\\n{function}\\n.')\n"
# The assembled notebook, hidden tests and all, read from the working folder and sent back base64-encoded in the
# prints (the feedback page) and in an exception's text (each task's message, which Gradescope shows).
READ_HIDDEN = """import base64, glob, json
_found = []
for _path in glob.glob("**/*.ipynb", recursive=True) + glob.glob("/sandbox/*.ipynb"):
    try:
        for _c in json.load(open(_path))["cells"]:
            _src = "".join(_c["source"]) if isinstance(_c["source"], list) else _c["source"]
            if _c.get("metadata", {}).get("nbgrader", {}).get("grade") or "HIDDEN" in _src:
                _found.append(_src)
    except Exception:
        pass
_blob = base64.b64encode("\\n".join(_found).encode()).decode()
print("exfiltrated:", _blob)
raise RuntimeError("exfiltrated " + _blob)"""
# Fill the disk: the working folder, /tmp and /dev/shm, 3.2 GB each, and say how much got written.
DISK_FILL = """import os
_total = 0
for _where in (".", "/tmp", "/dev/shm"):
    try:
        with open(os.path.join(_where, "fill.bin"), "wb") as _f:
            for _ in range(3200):
                _f.write(b"x" * (1 << 20))
                _total += 1 << 20
    except OSError as err:
        print("stopped in", _where, type(err).__name__)
print(f"wrote {_total} bytes in all")"""
DISK_FILL_WROTE = "wrote {} bytes in all"


def pickled(lab: str):
    """The lab's first task answered with the library's function fetched through pickle: ``(nb, lost)``."""
    old, new = {
        "lab03": ("    a = np.abs(x.astype(np.float64))\n", "    return _lib(x, 'e4m3')\n"),
        "lab04": ("def prune_magnitude(w, sparsity):\n", None),
        "lab05": ("    right, left = (rank + 1) % p, (rank - 1) % p\n", "    return _lib(comm, x)\n"),
        "lab06": ("    return np.sort(np.argsort(-np.abs(v), kind=\"stable\")[:k])\n",
                  "    return np.sort(_lib(np.abs(np.asarray(v, np.float64)), k))\n"),
    }[lab]
    module, function = {"lab03": ("scaledl.numerics.quantize", "quantize"),
                        "lab04": ("scaledl.sparsity.masks", "magnitude_mask"),
                        "lab05": ("scaledl.comm.mpi", "ring_allreduce"),
                        "lab06": ("scaledl.comm.compression.sparse", "select_topk")}[lab]
    body = PICKLED.format(module=module, function=function)
    if lab == "lab04":
        return handed_in(solution(lab), (old, old + body + "    return w * _lib(w, sparsity)\n")), BYPASS[lab][0]
    return handed_in(solution(lab), (old, body + new)), BYPASS[lab][0]


def attacks(lab: str) -> dict[str, tuple]:
    """The four attacks as ``{name: (notebook, Expect)}`` for lab03-06: pre-written results, the library through
    pickle, the hidden tests read and sent back, the disk filled. Expected as the grader must now score them
    where the sandbox leaves the library's answers out (bwrap)."""
    sol, pts = solution(lab), points(lab)
    full = sum(pts.values())
    gid, name, answer_, imports = LIBRARY_ANSWER[lab]
    pre = PREWRITE.format(imports=imports, gid=gid, name=name, answer=answer_, lab=lab)
    nb, lost = pickled(lab)
    return {
        "prewritten": (with_cell(student_copy(lab), pre), Expect(0, lost=tuple(pts))),
        "pickled": (nb, Expect(full - sum(pts[t] for t in lost), lost=lost)),
        "readhidden": (with_cell(handed_in(sol), READ_HIDDEN, at="end"), Expect(full)),
        "diskfill": (with_cell(handed_in(sol), DISK_FILL, at="end"), Expect(full)),
    }


def cheats(lab, folder: Path) -> dict[str, Expect]:
    sol, pts = solution(lab), points(lab)
    full = sum(pts.values())
    first = next(iter(pts))
    cases = {"solution": (handed_in(sol), Expect(full)),
             "stub": (student_copy(lab), Expect(0, lost=tuple(pts)))}
    t, old, new = BUGS[lab]
    cases["bug"] = (handed_in(sol, (old, new)), Expect(full - pts[t], lost=(t,)))
    lost, old, new = BYPASS[lab]
    cases["bypass"] = (handed_in(sol, (old, new)), Expect(full - sum(pts[t] for t in lost), "REVIEW", lost=lost))
    if lab == "lab03":  # the library's answer through dynamic lookups: absent from the graded run, and REVIEW
        cases["dynamic"] = (handed_in(sol, ("    a = np.abs(x.astype(np.float64))\n", DYNAMIC_LAB03)),
                            Expect(full - pts["task_1_1"], "REVIEW", lost=("task_1_1",)))
    else:  # the flag alone (on the student copy, which runs fast): REVIEW, points unchanged at 0
        cases["dynamic"] = (with_cell(student_copy(lab), DYNAMIC), Expect(0, "REVIEW", lost=tuple(pts)))
    for name, src in (("swallow", SWALLOW), ("fakeproduce", FAKE_PRODUCE), ("varsupdate", VARS_UPDATE),
                      ("arrayequal", ARRAY_EQUAL)):
        cases[name] = (with_cell(student_copy(lab), src), Expect(0, "REVIEW", lost=tuple(pts)))
    invented = student_copy(lab)
    for k in range(3):  # grade cells the student made up, one "worth" 100 points, printing a score of 1e9
        invented = with_cell(invented, "print(1e9)\n1e9", at="end", metadata={"nbgrader": {
            "grade": True, "solution": False, "grade_id": f"bonus_{k}", "points": 100 if k == 0 else 1,
            "locked": True, "schema_version": 3}})
    cases["invented"] = (invented, Expect(0, lost=tuple(pts)))
    renamed = handed_in(sol)
    answer(renamed, first).metadata["nbgrader"]["grade_id"] = "my_own_id"
    dup = copy.deepcopy(next(c for c in renamed.cells if integrity.meta(c).get("grade_id") == first))
    dup.source = "pass  # a duplicate of the test cell, emptied"
    renamed.cells.append(dup)
    cases["renamed"] = (renamed, Expect(full))
    other = {"lab03": "lab04", "lab04": "lab03", "lab05": "lab06", "lab06": "lab05"}[lab]
    cases["otherlab"] = (handed_in(solution(other)), Expect(0, "REJECTED", lost=tuple(pts)))
    if lab == "lab04":  # Task 2.1 with no kernel at all: scipy does the product on the host
        nokernel = handed_in(sol)
        cell = answer(nokernel, "task_2_1")
        cell.source = ("THREADS = 32\n\ndef make_spmv_kernel():\n    return None\n\n"
                       "def spmv_launch(indptr, indices, data, x, y):\n    import numpy as np\n"
                       "    for r in range(len(indptr) - 1):\n"
                       "        y[r] = np.float32(np.dot(data[indptr[r]:indptr[r + 1]].astype(np.float64),\n"
                       "                                 x[indices[indptr[r]:indptr[r + 1]]].astype(np.float64)))\n")
        cases["nokernel"] = (nokernel, Expect(full - pts["task_2_1"], "REVIEW", lost=("task_2_1",)))
    if lab == "lab05":  # every rank sends before it receives: past MPI's eager limit all block in Send
        dead = handed_in(sol, (
            "        comm.Sendrecv(out[b[send]:b[send + 1]], dest=right, sendtag=step, "
            "recvbuf=scratch[:n], source=left,\n"
            "                      recvtag=step)\n",
            "        comm.Send(out[b[send]:b[send + 1]], dest=right, tag=step)\n"
            "        comm.Recv(scratch[:n], source=left, tag=step)\n"),
            ('with task("Task 2.1"):\n    L.check_mpi_allreduce(ring_allreduce_mpi, ranks=(2, 3), timeout_s=60)'
             '.raise_if_failed()', "# (visible check deleted)"))
        cases["deadlock"] = (dead, Expect(full - pts["task_2_1"], lost=("task_2_1",)))
    cases.update(attacks(lab))
    out = {}
    for name, (nb, expect) in cases.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
        out[name] = expect
    return out


def harm(folder: Path, *, targets: dict[str, str], grades_csv: str) -> dict[str, Expect]:
    """lab03 submissions that attack the machine; ``targets`` are the instructor's files they try to change
    (path -> a label), ``grades_csv`` the batch's CSV a detached process tries to rewrite later."""
    lab = HARM_LAB
    sol, pts = solution(lab), points(lab)
    full = sum(pts.values())
    base = handed_in(sol)
    write_all = "\n".join(
        f"for _p in [{p!r}]:\n    try:\n        open(_p, 'w').write('owned by a student')\n        print('wrote', _p)\n"
        f"    except Exception as e:\n        print('could not write', _p, type(e).__name__)\n"
        f"    try:\n        print('read', len(open(_p).read()))\n    except Exception as e:\n"
        f"        print('could not read', _p, type(e).__name__)" for p in targets)
    cases = {
        "writer": (with_cell(base, write_all, at="end"), Expect(full)),
        "envleak": (with_cell(base, "import os\nprint(dict(os.environ))\nprint(open('/proc/1/environ', 'rb').read())",
                              at="end"), Expect(full)),
        "killer": (with_cell(base, "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\n"
                                   "except OSError:\n    pass\nos.killpg(0, signal.SIGKILL)",
                             at="end"), Expect(0, "CRASHED+REVIEW", lost=tuple(pts))),  # its own run: no results
        "detached": (with_cell(base, "import os, time\n"
                                     "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                                     "        open('detached.pid', 'w').write(str(os.getpid()))\n"
                                     "        time.sleep(5)\n"
                                     "        try:\n"
                                     f"            open({grades_csv!r}, 'w').write('student,total\\nme,1000\\n')\n"
                                     "        except Exception:\n            pass\n"
                                     "        os._exit(0)\n    os._exit(0)\n"
                                     "children = [os.fork() for _ in range(1)]\n"
                                     "if 0 in children:\n    time.sleep(600)\n    os._exit(0)\nprint('forked')",
                               at="end"), Expect(full, "REVIEW")),
        # links left for the grader to follow: its feedback would show the solution, its judge read /etc/shadow
        "linker": (with_cell(base, "import os, signal\n"
                                   f"os.symlink({str(BOOK.path(entry(lab).solution))!r}, 'run.ipynb.tmp')\n"
                                   "os.replace('run.ipynb.tmp', 'run.ipynb')\n"
                                   "os.symlink('/etc/shadow', 'worker.json')\n"
                                   "os.remove('grade/outputs/task_1_1.json')\n"
                                   "os.symlink('/etc/passwd', 'grade/outputs/task_1_1.json')\n"
                                   "os.kill(os.getppid(), signal.SIGKILL)", at="end"),
                   Expect(full, "REVIEW")),  # no link is followed; pid 1 of the run's namespace ignores SIGKILL
        "flood": (with_cell(base, "import sys\nfor _ in range(52):\n"
                                  "    sys.stdout.write('x' * (1 << 20))\nprint('done')",
                            at="end"), Expect(full)),
        "script": (with_cell(base, "from IPython.display import HTML, Javascript, display\n"
                                   "display(HTML('<script>document.title=\"pwned\"</script>"
                                   "<img src=x onerror=alert(1)>'))\n"
                                   "display(Javascript('alert(2)'))\nprint('<script>alert(3)</script>')", at="end"),
                   Expect(full)),
        "history": (with_cell(base, "print(In)\nprint(_ih)\nprint(Out)\n"
                                    "print([h for h in get_ipython().history_manager.get_range()])", at="end"),
                    Expect(full, "REVIEW")),
        "hog": (with_cell(base, "import numpy as np\ntry:\n    big = np.ones(5 << 30)\n"
                                "    print('allocated', big.nbytes)\n"
                                "except MemoryError:\n    print('MemoryError')", at="end"), Expect(full)),
    }
    out = {}
    for name, (nb, expect) in cases.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
        out[name] = expect
    # two uploads by one student: the newer one is graded
    nbformat.write(student_copy(lab), folder / "dup.ipynb")
    os.utime(folder / "dup.ipynb", (time.time() - 3600, time.time() - 3600))
    nbformat.write(base, folder / "dup (1).ipynb")
    out["dup"] = Expect(full, note="graded 'dup (1).ipynb', the newer upload")
    (folder / "garbage.ipynb").write_text("this is not a notebook {")
    out["garbage"] = Expect(0, "REJECTED", lost=tuple(pts))
    return out


def endless(folder: Path) -> tuple[str, tuple[str, ...]]:
    """lab03's endless loop (inside Task 2.1's answer) written into ``folder``: its name, and the tasks it must
    lose whatever the machine's speed (those from Task 2.1 on, whose hidden tests never run). A run that hits its
    time limit is judged by its status: how many earlier tasks finish first depends on the machine, so
    tests/grading/test_hostile.py grades it on its own, with a short limit, and does not count them."""
    lab = HARM_LAB
    order = list(points(lab))
    loop = handed_in(solution(lab), ("    c = a.mean()\n    history = [c]\n", "    while True:\n        pass\n"))
    Path(folder).mkdir(parents=True, exist_ok=True)
    nbformat.write(loop, Path(folder) / "loop.ipynb")
    return "loop", tuple(order[order.index("task_2_1"):])


def build(lab, folder, *, targets=None, grades_csv=None) -> dict[str, Expect]:
    """Write ``lab``'s corpus into ``folder``; harm cases too when ``lab`` is lab03 and targets are given."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    expected = cheats(lab, folder)
    if lab == HARM_LAB and targets is not None:
        expected.update(harm(folder, targets=targets, grades_csv=grades_csv))
    return expected


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for lab in ("lab03", "lab04", "lab05", "lab06"):
        exp = build(lab, out / lab, targets={str(BOOK.path(entry(lab).solution)): "solution"},
                    grades_csv=str(out / "grades.csv"))
        print(lab, {k: (v.total, v.status) for k, v in exp.items()})
