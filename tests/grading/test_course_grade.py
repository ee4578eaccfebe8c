"""End to end: ``scaledl course grade`` on every lab with the submissions issue 15 lists.

For each lab that is not planned in book.toml, one batch (one kernel per notebook, simulator backend):
- the solution as a student would hand it in (hidden tests removed): full marks;
- the same with one classic bug: loses exactly that task's points (the bug per lab is in BUGS);
- the untouched student copy: zero, without an error;
and besides:
- lab05: a ring that deadlocks, its visible check deleted (the hidden test's mpiexec is stopped at its time
  limit: loses Task 2.1 only); lab03 and lab05: a submission calling the library's (MPI's) own answer (caught,
  loses that task);
- lab03 (the fastest lab): one that loops forever in Task 2.1 (cut at the notebook's time limit) and one whose
  kernel dies there: both keep the points of the tasks before it.
Run time: about 5 minutes in all on 2 shared cores; lab05 (MPI, a deadlock to wait out) is about 2 of them.
"""

from __future__ import annotations

import copy
import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbclient")

from scaledl.book.toc import load
from scaledl.course import grade as G
from scaledl.labs.release import strip_hidden_tests

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LABS = [e for e in BOOK.entries if e.kind == "lab" and e.validated]

# lab id -> (task grade_id the bug breaks, text in the solution, buggy text). One classic bug each.
BUGS = {
    "lab01": ("task_1_1",  # a grid too small for the data and no grid-stride loop: the tail is never copied
              "        for i in range(cuda.grid(1), dst.size, cuda.gridsize(1)):\n            dst[i] = src[i]",
              "        i = cuda.grid(1)\n        if i < dst.size:\n            dst[i] = src[i]"),
    "lab02": ("task_2_1",  # a missing syncthreads: threads read the shared tile before it is loaded
              "            cuda.syncthreads()                       # the whole tile is loaded\n", ""),
    "lab03": ("task_1_1",  # round half up instead of ties to even
              "    q = np.rint(a / ulp) * ulp", "    q = np.floor(a / ulp + 0.5) * ulp"),
    "lab04": ("task_2_1",  # a missing bounds guard: threads past the last row read indptr out of range
              "        if row < y.shape[0]:                 # the grid is rounded up: threads past the last row do "
              "nothing\n            acc = float32(0.0)\n            for j in range(indptr[row], indptr[row + 1]):\n"
              "                acc += data[j] * x[indices[j]]\n            y[row] = acc",
              "        acc = float32(0.0)\n        for j in range(indptr[row], indptr[row + 1]):\n"
              "            acc += data[j] * x[indices[j]]\n        y[row] = acc"),
    "lab05": ("task_1_1",  # a ring chunk off by one: the all-gather forwards the chunk one rank too early
              'b[(i + 1 - s) % p], b[(i + 1 - s) % p + 1], "copy"', 'b[(i - s) % p], b[(i - s) % p + 1], "copy"'),
    "lab06": ("task_3_1",  # bytes counted without the indices: the values alone (half of each message)
              "                sent += len(message)\n", "                sent += len(message) // 2\n"),
    "lab07": ("task_1_1",  # dispatch while the server is busy
              "    if busy:\n        return 0\n    return min(waiting, max_batch)", "    return min(waiting, max_batch)"),
}
# lab id -> submissions that call the library's (or MPI's) own answer: (task it loses, text, replacement)
BYPASS = {
    # the library's own top-k with error feedback inside the student's compressor
    "lab06": ("task_1_2", "        r += grad\n        flat = r.reshape(-1)\n        indices = top_k(flat, k)\n",
              "        from scaledl.comm.compression import make_compressor\n"
              "        msg = self.__dict__.setdefault('_lib', make_compressor('topk', ratio=self.ratio)).compress(grad, key)\n"
              "        indices = np.flatnonzero(msg.decode().ravel())\n        flat = r.reshape(-1)\n"),
    "lab03": ("task_1_1", "    a = np.abs(x.astype(np.float64))\n", '    return quantize(x, "e4m3")\n'),
    "lab05": ("task_2_1", "    right, left = (rank + 1) % p, (rank - 1) % p\n",
              "    comm.Allreduce(__import__('mpi4py').MPI.IN_PLACE, out)\n    return out\n"),
}
LOOP = ("lab03", "task_2_1", "    c = a.mean()\n    history = [c]\n", "    while True:\n        pass\n")
LOOP_TIMEOUT_S = 25
# lab05: every rank sends before it receives; past MPI's eager limit all ranks block in Send (the hidden test's
# mpiexec is killed at its own time limit, the batch goes on)
DEADLOCK = ("lab05", "task_2_1",
            "        comm.Sendrecv(out[b[send]:b[send + 1]], dest=right, sendtag=step, recvbuf=scratch[:n], source=left,\n"
            "                      recvtag=step)\n",
            "        comm.Send(out[b[send]:b[send + 1]], dest=right, tag=step)\n"
            "        comm.Recv(scratch[:n], source=left, tag=step)\n",
            # and deleted the visible check, which would wait 60 s for each of its two rank counts
            "L.check_mpi_allreduce(ring_allreduce_mpi, ranks=(2, 3), timeout_s=60).raise_if_failed()",
            "# (visible check deleted)")
CRASH = ("lab03", "task_2_1", "    c = a.mean()\n    history = [c]\n", "    import os\n    os._exit(3)\n")  # kernel dies


def handed_in(solution_nb, *edits):
    """The solution as a student hands it in: hidden tests gone, outputs cleared, then ``(old, new)`` edits,
    each of which must match exactly one cell."""
    nb = nbformat.from_dict(nbformat.reader.reads(nbformat.writes(solution_nb)))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_hidden_tests(cell.source)
            cell.outputs, cell.execution_count = [], None
    for old, new in edits:
        hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
        assert len(hits) == 1, f"the edit {old!r} matched {len(hits)} cells"
        hits[0].source = hits[0].source.replace(old, new)
    return nb


def read_csv(path):
    with open(path, newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


@pytest.mark.parametrize("entry", LABS, ids=[e.id for e in LABS])
def test_grade_batch(entry, tmp_path):
    solution = nbformat.read(BOOK.path(entry.solution), as_version=4)
    tasks = dict(G.test_cells(solution))
    assert tasks, f"{entry.solution} has no autograded-test cells"
    full = sum(tasks.values())
    subs = tmp_path / "subs"
    # an LMS download: flat files; and nbgrader's layout for one student
    (subs / "submitted" / "ada" / entry.id).mkdir(parents=True)
    nbformat.write(handed_in(solution), subs / "submitted" / "ada" / entry.id / Path(entry.file).name)
    expected = {"ada": full}
    if entry.id in BUGS:
        task, old, new = BUGS[entry.id]
        nbformat.write(handed_in(solution, (old, new)), subs / "bug.ipynb")
        expected["bug"] = full - tasks[task]
    nbformat.write(nbformat.read(BOOK.path(entry.file), as_version=4), subs / "empty.ipynb")
    expected["empty"] = 0
    timeout_s = 300
    if entry.id in BYPASS:
        task, old, new = BYPASS[entry.id]
        nbformat.write(handed_in(solution, (old, new)), subs / "bypass.ipynb")
        expected["bypass"] = full - tasks[task]
    if entry.id == LOOP[0]:
        nbformat.write(handed_in(solution, LOOP[2:]), subs / "loop.ipynb")
        order = list(tasks)
        expected["loop"] = sum(tasks[t] for t in order[:order.index(LOOP[1])])
        timeout_s = LOOP_TIMEOUT_S
    if entry.id == DEADLOCK[0]:
        nbformat.write(handed_in(solution, DEADLOCK[2:4], DEADLOCK[4:]), subs / "deadlock.ipynb")
        expected["deadlock"] = full - tasks[DEADLOCK[1]]
    if entry.id == CRASH[0]:
        nbformat.write(handed_in(solution, CRASH[2:]), subs / "crash.ipynb")
        order = list(tasks)
        expected["crash"] = sum(tasks[t] for t in order[:order.index(CRASH[1])])
    out = tmp_path / "out"
    grades = G.grade_folder(subs, BOOK.path(entry.solution), lab=entry.id, out=out, timeout_s=timeout_s)
    got = {g.student: g.total for g in grades}
    report = "\n".join(f"| {entry.id} | {s} | {expected[s]:g} | {got.get(s):g} | {g.status} | {g.seconds:.0f} s |"
                       for s, g in zip(got, grades))
    print("\n" + report)
    assert got == expected, report
    rows = read_csv(out / "grades.csv")
    assert {r: float(rows[r]["total"]) for r in rows} == expected
    for student in expected:
        page = (out / "feedback" / f"{student}.html").read_text()
        assert f"{expected[student]:g} of {full:g} points" in page
        assert "BEGIN HIDDEN TESTS" not in page and "check_own_work" not in page  # hidden tests stay hidden
    if entry.id == LOOP[0]:
        assert "time limit" in {g.student: g for g in grades}["loop"].status
    if entry.id == CRASH[0]:
        assert "kernel died" in {g.student: g for g in grades}["crash"].status


def test_student_copies_have_no_hidden_tests():
    for entry in LABS:
        student = BOOK.path(entry.file).read_text()
        assert "HIDDEN TESTS" not in student and "check_own_work" not in student, entry.file
        assert G.test_cells(nbformat.read(BOOK.path(entry.solution), as_version=4)), entry.solution


def test_find_submissions_names_students(tmp_path):
    for rel in ("submitted/bob/lab03/lab03.ipynb", "carol/my lab.ipynb", "dave_lab03.ipynb",
                ".ipynb_checkpoints/x.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    assert [s.student for s in G.find_submissions(tmp_path)] == ["carol", "dave_lab03", "bob"]
    (tmp_path / "none").mkdir()
    with pytest.raises(ValueError, match="holds no .ipynb"):
        G.find_submissions(tmp_path / "none")


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="expected a folder"):
        G.find_submissions(tmp_path / "missing")
    with pytest.raises(ValueError, match="timeout_s=0"):
        G.grade_folder(tmp_path, BOOK.path(LABS[0].solution), lab="x", out=tmp_path / "o", timeout_s=0)
    with pytest.raises(ValueError, match="is a chapter"):
        G.grade_lab("01", tmp_path, book=BOOK)


def test_unreadable_notebook_gets_a_row(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "broken.ipynb").write_text("not json")
    lab = next(e for e in LABS if e.id == "lab03")
    grades = G.grade_folder(tmp_path / "subs", BOOK.path(lab.solution), lab="lab03", out=tmp_path / "o",
                            timeout_s=30)
    assert grades[0].total == 0 and grades[0].status.startswith("unreadable")


def test_cli_grade(tmp_path):
    lab = next(e for e in LABS if e.id == "lab03")
    (tmp_path / "subs").mkdir()
    nbformat.write(nbformat.read(BOOK.path(lab.file), as_version=4), tmp_path / "subs" / "s.ipynb")
    run = subprocess.run([sys.executable, "-m", "scaledl", "course", "grade", str(tmp_path / "subs"), "--lab",
                          "lab03", "--out", str(tmp_path / "o"), "--timeout", "60"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert read_csv(tmp_path / "o" / "grades.csv")["s"]["total"] == "0"


def test_solutions_are_valid_nbgrader_sources():
    """nbgrader's own release steps accept every solution notebook (so an instructor can also run
    ``nbgrader generate_assignment``), and its ClearHiddenTests leaves what our student copy has."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    from scaledl.labs.release import student_version

    for entry in LABS:
        solution = nbformat.read(BOOK.path(entry.solution), as_version=4)
        theirs, _ = ClearSolutions().preprocess(copy.deepcopy(solution), {})
        theirs, _ = ClearHiddenTests().preprocess(theirs, {})
        ours = student_version(solution)
        pick = lambda nb: [c.source.rstrip() for c in nb.cells if G.nbgrader_meta(c).get("grade")]
        assert pick(theirs) == pick(ours), entry.id
        assert all("raise NotImplementedError" in c.source for c in ours.cells
                   if G.nbgrader_meta(c).get("solution")), entry.id


def _tiny_solution():
    meta = lambda gid, pts: {"nbgrader": {"grade": True, "grade_id": gid, "points": pts, "solution": False,
                                          "locked": True, "schema_version": 3}}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nassert x == 1\n### END HIDDEN TESTS", metadata=meta("t1", 2)),
                nbformat.v4.new_code_cell("y = 2"),
                nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nassert y == 2\n### END HIDDEN TESTS", metadata=meta("t2", 3))]
    for k, c in enumerate(nb.cells):
        c["id"] = f"c{k}"
    return nb


def test_with_tests_restores_edited_and_deleted_test_cells():
    solution = _tiny_solution()
    submitted = copy.deepcopy(solution)
    submitted.cells[1].source = "pass  # the student emptied the test"
    del submitted.cells[3]  # and deleted the other one
    graded = G.with_tests(submitted, solution)
    assert [c.source for c in graded.cells] == [c.source for c in solution.cells]
    assert [G.nbgrader_meta(c).get("grade_id") for c in graded.cells] == [None, "t1", None, "t2"]


def test_scores_count_errors_and_unreached_cells_as_zero():
    nb = _tiny_solution()
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stderr", text="a warning\n")]
    nb.cells[3].outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])]
    assert G.scores(nb, done={0, 1, 2, 3}) == {"t1": 2.0, "t2": 0.0}  # a warning costs nothing
    nb.cells[3].outputs = []
    assert G.scores(nb, done={0, 1}) == {"t1": 2.0, "t2": 0.0}  # never reached: nothing


def test_the_helpers_reproduce_the_labs_metadata():
    """mark_answer_cells and new_test_cell make what the labs hold (so lab06 can be marked the same way)."""
    lab = next(e for e in LABS if e.id == "lab03")
    solution = nbformat.read(BOOK.path(lab.solution), as_version=4)
    bare = copy.deepcopy(solution)
    for cell in bare.cells:
        if G.nbgrader_meta(cell).get("solution"):
            del cell.metadata["nbgrader"]
    G.mark_answer_cells(bare)
    assert [G.nbgrader_meta(c) for c in bare.cells] == [G.nbgrader_meta(c) for c in solution.cells]
    made = G.new_test_cell("Task 1.1", 3, "assert True")
    first = next(c for c in solution.cells if G.nbgrader_meta(c).get("grade_id") == "task_1_1")
    assert made.metadata == first.metadata and made["id"] == first["id"]
    assert made.source.splitlines()[:2] == first.source.splitlines()[:2]
    with pytest.raises(ValueError, match="points=0"):
        G.new_test_cell("Task 1.1", 0, "")


def test_tampering_with_the_library_is_flagged():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%matplotlib inline\nfrom scaledl.labs import sparse_checks as S\n"
                                          "import scaledl.labs.check\nimport numpy as np"),
                nbformat.v4.new_code_cell("np.x = 1\nS.check_spmv = lambda *a, **k: None"),
                nbformat.v4.new_code_cell("scaledl.labs.check.CheckResult.raise_if_failed = print\n"
                                          "setattr(S, 'check_nm_mask', print)"),
                nbformat.v4.new_code_cell("import sys\nsys.modules['scaledl.course.guard'] = None")]
    assert G.tampering(nb) == ["cell 1 assigns to S.check_spmv",
                               "cell 2 assigns to scaledl.labs.check.CheckResult.raise_if_failed",
                               "cell 2 calls setattr(S, ...)",
                               "cell 3 assigns to sys.modules['scaledl.course.guard']"]
    for lab in LABS:  # no false alarm on the labs themselves
        assert G.tampering(nbformat.read(BOOK.path(lab.solution), as_version=4)) == [], lab.id
