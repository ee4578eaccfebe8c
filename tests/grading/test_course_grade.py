"""End to end: ``scaledl course grade`` on labs 01, 02 and 07, the command line, and the grading helpers.

Labs 03-06 are graded against a corpus of hostile submissions in test_hostile.py. Here, for each other lab,
one batch in the sandbox (one kernel per notebook, simulator backend): the solution as a student would hand it
in scores full marks, one classic bug loses exactly that task's points, the untouched student copy scores 0.
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
from corpus import handed_in  # the solution as a student hands it in (tests/grading/corpus.py)

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LABS = [e for e in BOOK.entries if e.kind == "lab" and e.validated]
OTHER_LABS = [e for e in LABS if e.id in ("lab01", "lab02", "lab07")]

# lab id -> (task grade_id the bug breaks, text in the solution, buggy text). One classic bug each.
BUGS = {
    "lab01": ("task_1_1",  # a grid too small for the data and no grid-stride loop: the tail is never copied
              "        for i in range(cuda.grid(1), dst.size, cuda.gridsize(1)):\n            dst[i] = src[i]",
              "        i = cuda.grid(1)\n        if i < dst.size:\n            dst[i] = src[i]"),
    "lab02": ("task_2_1",  # a missing syncthreads: threads read the shared tile before it is loaded
              "            cuda.syncthreads()                       # the whole tile is loaded\n", ""),
    "lab07": ("task_1_1",  # dispatch while the server is busy
              "    if busy:\n        return 0\n    return min(waiting, max_batch)",
              "    return min(waiting, max_batch)"),
}


def read_csv(path):
    with open(path, newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


@pytest.mark.parametrize("entry", OTHER_LABS, ids=[e.id for e in OTHER_LABS])
def test_grade_batch(entry, tmp_path, box):
    """Labs 01, 02 and 07 (tests/grading/test_hostile.py grades 03-06 with a hostile corpus): the solution
    scores full marks, one classic bug loses exactly its task, the untouched student copy scores 0."""
    solution = nbformat.read(BOOK.path(entry.solution), as_version=4)
    tasks = dict(G.test_cells(solution))
    full = sum(tasks.values())
    subs = tmp_path / "subs"
    (subs / "submitted" / "ada" / entry.id).mkdir(parents=True)  # nbgrader's layout for one student, flat for the rest
    nbformat.write(handed_in(solution), subs / "submitted" / "ada" / entry.id / Path(entry.file).name)
    expected = {"ada": (full, "OK")}
    task, old, new = BUGS[entry.id]
    nbformat.write(handed_in(solution, (old, new)), subs / "bug.ipynb")
    expected["bug"] = (full - tasks[task], "OK")
    nbformat.write(nbformat.read(BOOK.path(entry.file), as_version=4), subs / "empty.ipynb")
    expected["empty"] = (0, "OK")
    out = tmp_path / "out"
    grades = G.grade_folder(subs, entry.id, out=out, timeout_s=300, sandbox=box, jobs=2, seed=1)
    got = {g.student: (g.total, g.status) for g in grades}
    report = "\n".join(f"| {entry.id} | {g.student} | {expected[g.student]} | {g.total:g} | {g.status} | "
                       f"{g.seconds:.0f} s | {g.detail[:120]} |" for g in grades)
    print("\n" + report)
    assert got == expected, report
    rows = read_csv(out / "grades.csv")
    assert {r: float(rows[r]["total"]) for r in rows} == {s: t for s, (t, _) in expected.items()}
    lab = G.load_lab(entry.id)
    assert float(rows["bug"][G.task_column(lab, task)]) == 0  # "Task 2.1 (max 3)": each task names its maximum
    assert {s: rows[s]["detail"] for s in ("ada", "bug", "empty")} == {"ada": "", "bug": "", "empty": G.UNTOUCHED}
    assert all(r[G.WRITTEN_COLUMN] == "" for r in rows.values())  # the written answers: graded by hand
    for student, (total, _) in expected.items():
        page = (out / "feedback" / f"{student}.html").read_text()
        assert f"{total:g} of {full:g} points" in page
        assert "BEGIN HIDDEN TESTS" not in page and "_produce" not in page  # hidden tests stay hidden


def test_student_copies_have_no_hidden_tests():
    for entry in LABS:
        student = BOOK.path(entry.file).read_text()
        assert "HIDDEN TESTS" not in student and "_produce" not in student, entry.file
        assert G.test_cells(nbformat.read(BOOK.path(entry.solution), as_version=4)), entry.solution


def test_bad_arguments(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="expected a folder"):
        G.grade_folder(tmp_path / "missing", "lab03", out=tmp_path / "o", sandbox="none")
    with pytest.raises(ValueError, match="timeout_s=0"):
        G.grade_folder(tmp_path / "subs", "lab03", out=tmp_path / "o", timeout_s=0)
    with pytest.raises(ValueError, match="jobs=0"):
        G.grade_folder(tmp_path / "subs", "lab03", out=tmp_path / "o", jobs=0)
    with pytest.raises(ValueError, match="inside the submissions folder"):
        G.grade_folder(tmp_path / "subs", "lab03", out=tmp_path / "subs" / "o", sandbox="none")
    with pytest.raises(ValueError, match="is a chapter"):
        G.grade_lab("01", tmp_path, book=BOOK)


def test_unreadable_notebook_gets_a_row(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "broken.ipynb").write_text("not json")
    grades = G.grade_folder(tmp_path / "subs", "lab03", out=tmp_path / "o", timeout_s=30, sandbox="none")
    assert grades[0].total == 0 and grades[0].status == "REJECTED" and "unreadable" in grades[0].detail
    assert read_csv(tmp_path / "o" / "grades.csv")["broken"]["status"] == "REJECTED"


def test_cli_grade(tmp_path, box):
    lab = next(e for e in LABS if e.id == "lab03")
    (tmp_path / "subs").mkdir()
    nbformat.write(nbformat.read(BOOK.path(lab.file), as_version=4), tmp_path / "subs" / "s.ipynb")
    run = subprocess.run([sys.executable, "-m", "scaledl", "course", "grade", str(tmp_path / "subs"), "--lab",
                          "lab03", "--out", str(tmp_path / "o"), "--timeout", "150", "--sandbox", box.level,
                          "--seed", "3"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert read_csv(tmp_path / "o" / "grades.csv")["s"]["total"] == "0"
    assert "sandbox:" in run.stdout and "1 OK" in run.stdout


def test_solutions_are_valid_nbgrader_sources():
    """nbgrader's own release steps accept every solution notebook (so an instructor can also run
    ``nbgrader generate_assignment``), and its ClearHiddenTests leaves what our student copy has."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    from scaledl.book.student_copy import student_version

    for entry in LABS:
        solution = nbformat.read(BOOK.path(entry.solution), as_version=4)
        theirs, _ = ClearSolutions().preprocess(copy.deepcopy(solution), {})
        theirs, _ = ClearHiddenTests().preprocess(theirs, {})
        ours = student_version(solution)
        pick = lambda nb: [c.source.rstrip() for c in nb.cells if G.meta(c).get("grade")]
        assert pick(theirs) == pick(ours), entry.id
        assert all("raise NotImplementedError" in c.source for c in ours.cells
                   if G.meta(c).get("solution")), entry.id


def test_the_helpers_reproduce_the_labs_metadata():
    """mark_answer_cells and new_test_cell make what the labs hold (so lab06 can be marked the same way)."""
    lab = next(e for e in LABS if e.id == "lab03")
    solution = nbformat.read(BOOK.path(lab.solution), as_version=4)
    bare = copy.deepcopy(solution)
    for cell in bare.cells:
        if G.meta(cell).get("solution"):
            del cell.metadata["nbgrader"]
    G.mark_answer_cells(bare)
    assert [G.meta(c) for c in bare.cells] == [G.meta(c) for c in solution.cells]
    for entry in LABS:  # every test cell is what new_test_cell makes: the visible line and produce.run
        for cell in nbformat.read(BOOK.path(entry.solution), as_version=4).cells:
            if G.integrity.is_test(cell):
                title = cell.source.split(":")[0].lstrip("# ")
                made = G.new_test_cell(title, cell.metadata["nbgrader"]["points"], entry.id)
                assert made.metadata == cell.metadata and made["id"] == cell["id"], (entry.id, title)
                assert made.source == cell.source, (entry.id, title)
    with pytest.raises(ValueError, match="points=0"):
        G.new_test_cell("Task 1.1", 0, "lab03")




def test_a_lab_that_trains_gets_a_numba_cache_every_student_reuses(tmp_path):
    assert G.numba_cache_seed(G.load_lab("lab03"), tmp_path / "none") is None  # no scaledl.nn: nothing to seed
    cache = G.numba_cache_seed(G.load_lab("lab06"), tmp_path)
    assert cache is not None and sorted(p.name.split("-")[0] for p in cache.rglob("*.nbi")) == [
        "ops._exp1", "ops._exp_into", "ops._log1", "ops._log_into", "ops._matmul_into", "ops._softmax_xent",
        "ops._sum_rows_into"]
    before = sorted(p.relative_to(cache) for p in cache.rglob("*"))
    code = ("from scaledl import nn\n"
            "nn.train(nn.mlp([64, 16, 10], seed=0), nn.digits(), steps=2, batch_size=8)\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NUMBA_CACHE_DIR": str(cache),
           "SCALEDL_BACKEND": "simulator"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(p.relative_to(cache) for p in cache.rglob("*")) == before, "training compiled what the seed lacked"
