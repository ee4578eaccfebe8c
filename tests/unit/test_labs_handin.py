"""The labs' "Check before you hand in" cell (scaledl.labs.handin): it judges a file as the grader would, names
the unanswered tasks, runs the task cells again with the current answers, and never shows their output."""

import io
import json
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load
from scaledl.course import grade
from scaledl.labs import handin as H
from scaledl.labs import task
from scaledl.labs import unanswered as U

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LABS = [e for e in BOOK.entries if e.kind == "lab" and e.validated]


def _lab(lab_id):
    return next(e for e in LABS if e.id == lab_id)


def test_the_catalogue_is_the_books():
    assert json.loads(H.CATALOGUE.read_text()) == H.catalogue(BOOK), (
        "src/scaledl/labs/handin_labs.json is out of date with the lab solutions: `scaledl book execute LAB` "
        "rewrites it (scaledl.book.student_copy.write_handin_catalogue)")


def test_the_size_limit_is_the_graders():
    assert H.MAX_NOTEBOOK_BYTES == grade.MAX_NOTEBOOK_BYTES


@pytest.mark.parametrize("entry", LABS, ids=lambda e: e.id)
def test_every_lab_ends_with_the_check_of_its_own_lab_before_its_navigation(entry):
    for path in (entry.executed_file, entry.file):  # the solution and the student copy
        nb = nbformat.read(BOOK.path(path), 4)
        assert "book-nav" in nb.cells[-1].metadata.get("tags", [])
        cell = nb.cells[-2]
        assert cell.cell_type == "code" and f'check_before_hand_in("{entry.id}", globals())' in cell.source, path
        assert nb.cells[-3].source.startswith("## Check before you hand in")


@pytest.mark.parametrize("entry", LABS, ids=lambda e: e.id)
def test_a_solution_is_graded_and_the_untouched_copy_has_every_task_unanswered(entry):
    assert H.check_file(BOOK.path(entry.executed_file), entry.id) == (None, [])
    why, stubs = H.check_file(BOOK.path(entry.file), entry.id)
    assert why is None
    assert stubs and set(stubs) <= set(H.catalogue(BOOK)[entry.id]["tasks"])


def test_another_labs_notebook_a_broken_file_and_a_huge_one_are_rejected(tmp_path):
    why, _ = H.check_file(BOOK.path(_lab("lab03").file), "lab02")
    assert why.startswith("this is lab03's notebook") and "hand in lab02_tiled_gemm.ipynb" in why
    broken = tmp_path / "lab02_tiled_gemm.ipynb"
    broken.write_text('{"cells": [')
    assert "cannot read it" in H.check_file(broken, "lab02")[0]
    assert "not a notebook" in H.check_file({"nbformat": 4}, "lab02")[0]
    nb = json.loads(BOOK.path(_lab("lab02").executed_file).read_text())
    assert "over the grader's 20 MB" in H.check_file(nb, "lab02", size=21 << 20)[0]
    assert "nothing in it is from lab02" in H.check_file({"cells": []}, "lab02")[0]
    with pytest.raises(ValueError, match="lab='lab99'"):
        H.check_file(nb, "lab99")


@pytest.fixture
def fresh_session(monkeypatch):
    """An empty record of task cells, and a stand-in for IPython's 'the cell running now'."""
    monkeypatch.setattr(U, "_cells", {})
    monkeypatch.setattr(U, "_outcome", {})
    running = {}
    monkeypatch.setattr(U, "_current_cell", lambda: (running["key"], running["source"]))

    def run_cell(source, ns, key=None):
        running.update(key=key or source, source=source)
        exec(source, ns)

    return run_cell


def test_task_cells_run_again_with_the_answers_as_they_are_now(fresh_session, capsys):
    ns = {"task": task, "answer": lambda: 41}
    check = 'print("checking")\nwith task("Task 2.1"):\n    assert answer() == 42, "wrong answer"\n'
    stub = 'with task("Task 2.2"):\n    raise NotImplementedError("Task 2.2")\n'
    with pytest.raises(AssertionError):
        fresh_session(check, ns)
    fresh_session(stub, ns)
    assert U.outcomes()["Task 2.1"] == "failed: AssertionError: wrong answer"
    assert U.outcomes()["Task 2.2"] == "not answered yet"
    capsys.readouterr()

    ns["answer"] = lambda: 42  # the student fixes the function and runs only its cell
    path = BOOK.path(_lab("lab02").executed_file)
    h = H.check_before_hand_in("lab02", ns, path=path)
    out = capsys.readouterr().out
    assert "checking" not in out and "not answered yet: replace" not in out  # the cells ran quietly
    assert h.tasks == {"Task 2.1": "passed", "Task 2.1b": "not run", "Task 2.2": "not answered yet"}
    assert "Task 2.1: its visible check passes" in out
    assert "Task 2.1b: its cells have not run in this session" in out
    assert not h.ready and out.rstrip().endswith("Not ready yet: see the lines above.")


def test_an_edited_cell_replaces_its_earlier_version(fresh_session):
    ns = {"task": task}
    with pytest.raises(AssertionError):
        fresh_session('with task("Task 2.1"):\n    assert False, "old"\n', ns, key="id:c1")
    fresh_session('with task("Task 2.1"):\n    pass\n', ns, key="id:c1")
    assert [titles for _, titles in U.task_cells()] == [("Task 2.1",)]
    h = H.check_before_hand_in("lab02", ns, path=BOOK.path(_lab("lab02").executed_file),
                               report=io.StringIO())
    assert h.tasks["Task 2.1"] == "passed"


def test_the_students_copy_is_not_ready_and_the_cli_says_so(capsys):
    assert H.main([str(BOOK.path(_lab("lab07").file))]) == 1
    out = capsys.readouterr().out
    assert "Task 1.1: not answered" in out and "it scores 0" in out
    assert H.main([str(BOOK.path(_lab("lab07").executed_file)), "--lab", "lab07"]) == 0


def test_a_graded_run_is_left_to_the_grader(monkeypatch, capsys):
    monkeypatch.setenv(H.GRADING_VAR, "run-1")
    h = H.check_before_hand_in("lab02", {})
    assert h.lines == [] and capsys.readouterr().out == ""


def test_no_file_found_says_how_to_check_a_download(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    h = H.check_before_hand_in("lab02")
    out = capsys.readouterr().out
    assert h.file is None and "python -m scaledl.labs.handin lab02_tiled_gemm.ipynb" in out
    assert "Not checked" in out


def test_a_book_elsewhere_never_rewrites_the_packages_catalogue(tmp_path):
    """`scaledl book execute` on another book (a test's temporary one, a fork run against an installed package)
    must not replace the catalogue the package ships: a clean clone's `make test` once left it holding one lab."""
    import types

    from scaledl.book.student_copy import write_handin_catalogue

    before = H.CATALOGUE.read_bytes()
    assert write_handin_catalogue(types.SimpleNamespace(root=tmp_path, entries=[])) is False
    assert H.CATALOGUE.read_bytes() == before
    assert write_handin_catalogue(BOOK) is False  # the book's own: already current
    assert H.CATALOGUE.read_bytes() == before


def test_written_answers_left_as_handed_out_are_named_and_keep_it_from_ready(tmp_path):
    """The check names every written answer still as handed out and says Ready only when none is left; the
    grader's feedback uses the same function (scaledl.labs.written) on the lab's student copy."""
    from scaledl.labs import written

    entry = _lab("lab05")
    answers = H.catalogue(BOOK)["lab05"]["written"]
    assert [a["label"] for a in answers] == ["Question 1", "Question 2", "Question 3"]
    nb = json.loads(BOOK.path(entry.executed_file).read_text())  # every task answered
    ids = {a["id"]: a for a in answers}
    for c in nb["cells"]:
        if c.get("id") in ids:
            c["source"] = ids[c["id"]]["stub"]  # the written answers as handed out
    path = tmp_path / "lab05_ring_all_reduce.ipynb"
    path.write_text(json.dumps(nb))
    h = H.check_before_hand_in("lab05", None, path=path, report=io.StringIO())
    assert h.unwritten == ["Question 1", "Question 2", "Question 3"] and not h.ready
    assert any("Question 2: not answered yet" in ln for ln in h.lines) and "Ready" not in h.lines[-1]
    for c in nb["cells"]:
        if c.get("id") in ids:
            c["source"] = "Because the ring's time is bandwidth-bound."
    path.write_text(json.dumps(nb))
    h = H.check_before_hand_in("lab05", None, path=path, report=io.StringIO())
    assert h.unwritten == [] and h.ready and h.lines[-1].startswith("Ready")
    assert written.unanswered({"cells": []}, answers) == ["Question 1", "Question 2", "Question 3"]  # deleted
