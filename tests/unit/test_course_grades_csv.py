"""grades.csv says each task's maximum and leaves a column for the written answers; an untouched notebook is
said to be one ("no task answered"). No notebook runs here: grade_one is replaced by a stand-in, so the CSV
and the feedback pages are checked in about a second (tests/grading runs real batches in the sandbox)."""

from __future__ import annotations

import copy
import csv
import io
import time
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load
from scaledl.course import grade as G

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LABS = [e for e in BOOK.entries if e.kind == "lab" and e.validated]


@pytest.fixture(scope="module")
def lab03():
    return G.load_lab("lab03", BOOK)


@pytest.mark.parametrize("entry", LABS, ids=[e.id for e in LABS])
def test_every_task_column_names_its_maximum_and_they_add_up_to_max(entry):
    lab = G.load_lab(entry.id, BOOK)
    head = G.csv_head(lab)
    assert head[:5] == ["student", "file", "status", "total", "max"]
    assert head[-3:] == [G.WRITTEN_COLUMN, "seconds", "detail"]
    tasks = head[5:-3]
    assert tasks == [f"{lab.tasks[g].title} (max {lab.points[g]:g})" for g in lab.points]
    assert sum(float(c.rsplit("(max ", 1)[1].rstrip(")")) for c in tasks) == lab.maximum
    assert lab.written > 0  # every lab has written answers, graded by hand


def test_the_untouched_student_copy_is_recognised_and_an_answer_is_not(lab03):
    entry = BOOK.resolve("lab03")
    given = nbformat.read(BOOK.path(entry.file), as_version=4)
    assert G.untouched(given, lab03)
    ran = copy.deepcopy(given)  # run (outputs, counts) and saved by JupyterLab: still untouched
    for c in ran.cells:
        if c.cell_type == "code":
            c.source += "\n\n"
            c.execution_count = 1
    assert G.untouched(ran, lab03)
    one = copy.deepcopy(given)
    cell = next(c for c in one.cells if G.meta(c).get("grade_id") == "answer_task_2_1")
    cell.source = cell.source.replace("raise NotImplementedError('Task 2.1')", "return [a.max()]")
    assert not G.untouched(one, lab03)
    assert not G.untouched(lab03.solution, lab03)  # the solution's answer cells hold answers


def _fake_grade_one(sub, lab, sandbox, **kw):
    """What grade_one returns, without running anything: 'empty' is the untouched copy, 'half' got Task 1.1."""
    submitted = nbformat.read(sub.path, as_version=4)
    g = G.Grade(sub.student, sub.path, {gid: 0.0 for gid in lab.tasks})
    for gid, task in lab.tasks.items():
        g.messages[gid] = f"{task.title}: no result (the test cell raised NotImplementedError: {task.title})"
    if sub.student == "half":
        g.points["task_1_1"], g.messages["task_1_1"] = lab.points["task_1_1"], "passed"
    G.note_untouched(g, submitted, lab)
    return g, submitted


def test_grades_csv_and_feedback_of_a_batch(tmp_path, lab03, monkeypatch):
    monkeypatch.setattr(G, "grade_one", _fake_grade_one)
    monkeypatch.setattr(G, "numba_cache_seed", lambda lab, folder: None)
    subs = tmp_path / "subs"
    subs.mkdir()
    given = nbformat.read(BOOK.path(BOOK.resolve("lab03").file), as_version=4)
    nbformat.write(given, subs / "empty.ipynb")
    nbformat.write(given, subs / "half.ipynb")
    G.grade_folder(subs, lab03, out=tmp_path / "out", sandbox="none", seed=1)
    with open(tmp_path / "out" / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}
    assert head == G.csv_head(lab03) and all(len(r) == len(head) for r in rows)
    assert "Task 1.1 (max 3)" in head and "Task 2.2 (max 2)" in head
    assert body["empty"]["detail"] == "no task answered: every answer cell is as handed out"
    assert body["empty"]["status"] == "OK" and body["empty"]["total"] == "0"
    assert body["half"]["Task 1.1 (max 3)"] == "3" and body["half"]["total"] == "3" and body["half"]["detail"] == ""
    assert body["empty"][G.WRITTEN_COLUMN] == "" == body["half"][G.WRITTEN_COLUMN]  # the instructor fills it in
    page = (tmp_path / "out" / "feedback" / "empty.html").read_text()
    assert "run: OK: no task answered" in page and "graded by hand" in page


def test_cells_a_spreadsheet_would_run_as_formulas_are_escaped(tmp_path, lab03, monkeypatch):
    """A student's file name reaches grades.csv (the student and file columns): one that starts a formula
    (CSV injection: ``=``, ``+``, ``-``, ``@``) is written as text, with a leading apostrophe."""
    partial = tmp_path / "out" / "grades.partial.csv"
    seen = []

    def grade_one(sub, lab, sandbox, **kw):  # the last student ("ada") waits for the others' partial rows
        deadline = time.monotonic() + 10
        while sub.student == "ada" and partial.read_text().count("\n") < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        if sub.student == "ada":
            seen.append(partial.read_text())
        return _fake_grade_one(sub, lab, sandbox, **kw)

    monkeypatch.setattr(G, "grade_one", grade_one)
    monkeypatch.setattr(G, "numba_cache_seed", lambda lab, folder: None)
    subs = tmp_path / "subs"
    subs.mkdir()
    given = nbformat.read(BOOK.path(BOOK.resolve("lab03").file), as_version=4)
    for name in ("@SUM(1+1)", "-2+3", "+cmd", "ada"):
        nbformat.write(given, subs / f"{name}.ipynb")
    G.grade_folder(subs, lab03, out=tmp_path / "out", sandbox="none", seed=1, jobs=1)
    for text in (seen[0], (tmp_path / "out" / "grades.csv").read_text()):  # grades.partial.csv, then grades.csv
        rows = {r[1]: r for r in list(csv.reader(io.StringIO(text)))[1:]}
        assert sorted(rows)[:3] == ["'+cmd.ipynb", "'-2+3.ipynb", "'@SUM(1+1).ipynb"]
        assert [rows[k][0] for k in sorted(rows)][:3] == ["'+cmd", "'-2+3", "'@SUM_1+1_"]
        assert all(r[3] == "0" for r in rows.values())  # numbers stay numbers
    assert "ada.ipynb" in rows and rows["ada.ipynb"][0] == "ada"
