"""The graded notebook comes from the instructor's cells (nbgrader's overwrite-cells rule), and a notebook of
another lab is recognised; one notebook per student is chosen by the documented rule."""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path

import nbformat
import pytest

from scaledl.book.toc import load
from scaledl.course import integrity as I
from scaledl.course import submissions

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LABS = [e for e in BOOK.entries if e.kind == "lab" and e.validated]


def _solution():
    grade = lambda gid, pts: {"nbgrader": {"grade": True, "grade_id": gid, "points": pts, "solution": False,
                                           "locked": True, "schema_version": 3}}
    answer = lambda gid: {"nbgrader": {"grade": False, "grade_id": gid, "solution": True, "locked": False,
                                       "schema_version": 3}}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Lab 9"),
                nbformat.v4.new_code_cell("def f():\n    raise NotImplementedError", metadata=answer("answer_t1")),
                nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nassert f() == 1\n### END HIDDEN TESTS",
                                          metadata=grade("t1", 2)),
                nbformat.v4.new_code_cell("def g():\n    raise NotImplementedError", metadata=answer("answer_t2")),
                nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nassert g() == 2\n### END HIDDEN TESTS",
                                          metadata=grade("t2", 3))]
    for k, c in enumerate(nb.cells):
        c["id"] = f"c{k}"
    return nb


def test_answers_kept_tests_overwritten_deleted_tests_put_back():
    sol = _solution()
    sub = copy.deepcopy(sol)
    sub.cells[1].source = "def f():\n    return 1"
    sub.cells[2].source = "pass  # the student emptied the test"
    del sub.cells[4]                                   # and deleted the other one
    nb, notes = I.assemble(sub, sol)
    assert [c.source for c in nb.cells] == [sol.cells[0].source, "def f():\n    return 1", sol.cells[2].source,
                                            sol.cells[3].source, sol.cells[4].source]
    assert [I.meta(c).get("grade_id") for c in nb.cells] == [None, "answer_t1", "t1", "answer_t2", "t2"]
    assert any("put back" in n for n in notes) and any("edited" in n for n in notes)


def test_invented_renamed_duplicated_and_retyped_cells():
    sol = _solution()
    sub = copy.deepcopy(sol)
    sub.cells[1].metadata["nbgrader"]["grade_id"] = "renamed"            # renamed answer in a new cell: plain code
    sub.cells[1]["id"] = "c1-retyped"
    sub.cells[3] = nbformat.v4.new_markdown_cell("def g():\n    return 2",
                                                 metadata=copy.deepcopy(sub.cells[3].metadata))
    bonus = nbformat.v4.new_code_cell("1e9", metadata={"nbgrader": {"grade": True, "grade_id": "bonus", "points": 100}})
    dup = copy.deepcopy(sub.cells[2])
    dup.source = "print('a second copy of t1')"
    sub.cells += [bonus, dup]
    nb, notes = I.assemble(sub, sol)
    gids = [I.meta(c).get("grade_id") for c in nb.cells]
    assert gids == [None, None, "t1", "answer_t2", "t2", None, None]        # only the instructor's ids remain
    assert nb.cells[3].cell_type == "code" and nb.cells[3].source == "def g():\n    return 2"  # retyped back
    assert [p for _, p in I.test_cells(nb)] == [2.0, 3.0]                     # points: the instructor's only
    assert sum(1 for n in notes if "no points" in n) == 3 and any("turned into markdown" in n for n in notes)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_identify_rejects_another_labs_notebook():
    sols = {e.id: nbformat.read(BOOK.path(e.solution), as_version=4) for e in LABS}
    for e in LABS:
        student = nbformat.read(BOOK.path(e.file), as_version=4)
        assert I.identify(student, e.id, sols) is None, e.id
        other = next(o.id for o in LABS if o.id != e.id)
        why = I.identify(student, other, sols)
        assert why and e.id in why, (e.id, other, why)
    empty = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    assert "nothing in it" in I.identify(empty, LABS[0].id, sols)


def test_find_one_notebook_per_student(tmp_path):
    for rel in ("submitted/bob/lab03/lab03.ipynb", "carol/my lab.ipynb", "carol/again.ipynb", "dave_lab03.ipynb",
                "ada.ipynb", "ada (1).ipynb", "ada (2).ipynb", ".ipynb_checkpoints/x.ipynb", "../evil/x.ipynb"):
        path = (tmp_path / "subs" / rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    now = time.time()
    os.utime(tmp_path / "subs" / "ada (2).ipynb", (now - 100, now - 100))   # older than "ada (1)"
    os.utime(tmp_path / "subs" / "ada.ipynb", (now - 200, now - 200))
    os.utime(tmp_path / "subs" / "carol" / "again.ipynb", (now + 5, now + 5))
    found = {s.student: s for s in submissions.find(tmp_path / "subs")}
    assert sorted(found) == ["ada", "bob", "carol", "dave_lab03"]
    assert found["ada"].path.name == "ada (1).ipynb" and sorted(p.name for p in found["ada"].others) == \
        ["ada (2).ipynb", "ada.ipynb"]
    assert found["carol"].path.name == "again.ipynb"
    os.utime(tmp_path / "subs" / "ada (2).ipynb", (now, now))
    os.utime(tmp_path / "subs" / "ada (1).ipynb", (now, now))                # a tie: the higher copy number
    assert {s.student: s for s in submissions.find(tmp_path / "subs")}["ada"].path.name == "ada (2).ipynb"
    with pytest.raises(ValueError, match="holds no .ipynb"):
        (tmp_path / "none").mkdir()
        submissions.find(tmp_path / "none")
    with pytest.raises(ValueError, match="expected a folder"):
        submissions.find(tmp_path / "missing")


def test_student_names_are_safe_file_names(tmp_path):
    (tmp_path / "<script>x").mkdir()
    (tmp_path / "<script>x" / "a.ipynb").write_text("{}")
    (tmp_path / "..hidden.ipynb").write_text("{}")
    names = [s.student for s in submissions.find(tmp_path)]
    assert all("/" not in n and "<" not in n and not n.startswith(".") for n in names), names


def test_cells_are_the_instructors_by_cell_id_first():
    """A copy of a test cell's grade_id pasted above the answer (JupyterLab gives a pasted cell a new id) does
    not move the hidden test there; a test cell whose grade_id was edited is still the test; a notebook whose
    cell ids were all lost is matched by grade_id."""
    sol = _solution()
    sub = copy.deepcopy(sol)
    sub.cells[1].source = "def f():\n    return 1"
    pasted = copy.deepcopy(sub.cells[2])
    pasted["id"] = "pasted"
    sub.cells.insert(1, pasted)                                     # t1's test cell copied above f's answer
    sub.cells[5].metadata["nbgrader"]["grade_id"] = "t2-edited"     # t2's test cell renamed in place
    nb, notes = I.assemble(sub, sol)
    gids = [I.meta(c).get("grade_id") for c in nb.cells]
    assert gids == [None, None, "answer_t1", "t1", "answer_t2", "t2"], gids
    assert nb.cells[3].source == sol.cells[2].source and nb.cells[5].source == sol.cells[4].source
    assert nb.cells[1].cell_type == "code" and "nbgrader" not in nb.cells[1].metadata
    assert any("cell 1" in n and "duplicate" in n for n in notes), notes
    assert not any("put back" in n for n in notes), notes           # t2 was never missing
    lost = copy.deepcopy(sol)
    for k, c in enumerate(lost.cells):
        c["id"] = f"new-{k}"
    lost.cells[1].source = "def f():\n    return 1"
    nb, notes = I.assemble(lost, sol)
    assert [I.meta(c).get("grade_id") for c in nb.cells] == [None, "answer_t1", "t1", "answer_t2", "t2"]
    assert nb.cells[1].source == "def f():\n    return 1" and notes == []
