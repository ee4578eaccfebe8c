"""An nbgrader course around ``scaledl course``: release lays out source/ and release/, grading a course's
submitted/ fills its gradebook (through nbgrader's own Gradebook API) and its feedback/ folder. No notebook runs
here (grade_one is a stand-in); tests/grading/test_nbgrader_course.py runs the whole exchange with nbgrader's
commands and real grading. About 10 s (each release reads every notebook for its leak scan)."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbgrader")

from nbgrader.api import Gradebook  # noqa: E402

from scaledl.book import load  # noqa: E402
from scaledl.course import grade as G  # noqa: E402
from scaledl.course import nbgrader_exchange as X  # noqa: E402
from scaledl.course.release import student_lab  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LAB03 = BOOK.resolve("lab03")
NAME = Path(LAB03.file).name  # lab03_quantizer_and_clipping.ipynb


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    """nbgrader reads ~/.jupyter/nbgrader_config.py too: these tests see only the course's own."""
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))


def make_course(path: Path, course_id="sdl") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(path)!r}\n"
                                            f"c.CourseDirectory.course_id = {course_id!r}\n")
    return path


def test_release_writes_one_assignment_per_lab_and_nothing_else(tmp_path):
    course = make_course(tmp_path / "course")
    (course / "gradebook.db").write_bytes(b"not touched")
    (course / "submitted" / "ada" / "lab03").mkdir(parents=True)
    written = X.release_labs(BOOK, course, labs=["lab03"])
    assert written == [f"source/lab03/{NAME}", f"release/lab03/{NAME}"]
    assert (course / "source" / "lab03" / NAME).read_bytes() == BOOK.path(LAB03.solution).read_bytes()
    released = nbformat.read(course / "release" / "lab03" / NAME, as_version=4)
    solution = nbformat.read(BOOK.path(LAB03.solution), as_version=4)
    assert nbformat.writes(released) == nbformat.writes(student_lab(solution, LAB03.solution))  # the bundle's copy
    text = (course / "release" / "lab03" / NAME).read_text()
    assert "HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text and "_produce" not in text
    ids = [G.meta(c).get("grade_id") for c in released.cells if G.meta(c)]  # nbgrader's metadata, as the grader needs
    assert set(dict(G.test_cells(solution))) <= set(ids) and any(i.startswith("answer_") for i in ids)
    assert (course / "gradebook.db").read_bytes() == b"not touched"
    assert sorted(p.name for p in course.iterdir()) == ["gradebook.db", "nbgrader_config.py", "release", "source",
                                                         "submitted"]


def test_release_refuses_to_replace_without_force_and_outside_labs_or_repository(tmp_path):
    course = make_course(tmp_path / "course")
    X.release_labs(BOOK, course, labs=["lab03"])
    mine = course / "release" / "lab03" / "extra.txt"
    mine.write_text("x")
    with pytest.raises(ValueError, match=r"release/lab03 already hold files; pass --force"):
        X.release_labs(BOOK, course, labs=["lab03"])
    assert mine.exists()
    X.release_labs(BOOK, course, labs=["lab03"], force=True)
    assert not mine.exists() and (course / "release" / "lab03" / NAME).is_file()
    with pytest.raises(ValueError, match=r"labs=\['lab99'\]"):
        X.release_labs(BOOK, course, labs=["lab99"])
    with pytest.raises(ValueError, match="never written into the book's repository"):
        X.release_labs(BOOK, ROOT / "build" / "course", labs=["lab03"])


def test_a_course_is_found_from_its_submitted_folder_only(tmp_path):
    course = make_course(tmp_path / "course")
    (course / "submitted").mkdir()
    found = X.course_of(course / "submitted", "lab03")
    assert found is not None and found.root == course and found.course_id == "sdl"
    assert found.db_url == f"sqlite:///{course / 'gradebook.db'}"
    assert X.course_of(course, "lab03") is None  # the course itself is not a submissions folder
    (tmp_path / "lms" / "submitted").mkdir(parents=True)
    (tmp_path / "lms" / "source").mkdir()
    assert X.course_of(tmp_path / "lms" / "submitted", "lab03") is None  # an LMS download named "submitted": no course
    (tmp_path / "lms" / "release" / "lab03").mkdir(parents=True)  # what `release --nbgrader` wrote: a course
    assert X.course_of(tmp_path / "lms" / "submitted", "lab03").root == tmp_path / "lms"
    other = tmp_path / "other"
    other.mkdir()
    (other / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\n")
    with pytest.raises(ValueError, match=r"sets CourseDirectory.root = .*another folder"):
        X.course_of(other / "submitted", "lab03")


def submit(course: Path, student: str, lab: str = "lab03", *, secret=True, name=NAME) -> Path:
    """A submission as `nbgrader collect` leaves it."""
    folder = course / "submitted" / student / lab
    folder.mkdir(parents=True)
    shutil.copyfile(BOOK.path(BOOK.resolve(lab).file), folder / name)
    (folder / "timestamp.txt").write_text("2026-03-02 10:00:00.000000 UTC")
    if secret:
        (folder / "submission_secret.txt").write_text(f"secret-of-{student}")
    return folder / name


@pytest.fixture(scope="module")
def lab03():
    return G.load_lab("lab03", BOOK)


def scores(course: Path, student: str) -> dict:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "sdl") as gb:
        sub = gb.find_submission("lab03", student)
        return {"timestamp": str(sub.timestamp), "score": sub.score, "max": sub.max_score,
                "cells": {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade)
                          for nb in sub.notebooks for g in nb.grades},
                "notebooks": [nb.name for nb in sub.notebooks]}


def test_record_writes_one_grade_per_task_and_the_feedback_release_feedback_reads(tmp_path, lab03):
    course = make_course(tmp_path / "course")
    X.release_labs(BOOK, course, labs=["lab03"])
    out = tmp_path / "out"
    (out / "feedback").mkdir(parents=True)
    grades = []
    for student, status, secret in (("ada", "OK", True), ("bob", "REVIEW", False)):
        path = submit(course, student, secret=secret)
        points = {gid: (p if student == "ada" else 0.0) for gid, p in lab03.points.items()}
        grades.append(G.Grade(student, path, points, status=status))
        (out / "feedback" / f"{student}.html").write_text(f"<p>page of {student}</p>")
    said = []
    X.record(X.course_of(course / "submitted", "lab03"), lab03, grades, out, said.append)
    stem = Path(NAME).stem
    ada, bob = scores(course, "ada"), scores(course, "bob")
    assert ada["notebooks"] == [stem] and list(ada["cells"]) == list(lab03.points)  # one grade per task cell
    assert ada["score"] == ada["max"] == lab03.maximum == 10 and ada["timestamp"] == "2026-03-02 10:00:00"
    assert all(not manual for _, _, manual in ada["cells"].values())
    assert bob["score"] == 0 and all(manual for _, _, manual in bob["cells"].values())  # REVIEW: a person looks
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "sdl") as gb:
        cells = {c.name: c.max_score for c in gb.find_notebook(stem, "lab03").grade_cells}
        assert cells == lab03.points and sorted(s.id for s in gb.students) == ["ada", "bob"]
    fb = course / "feedback" / "ada" / "lab03"
    assert sorted(p.name for p in fb.iterdir()) == sorted([f"{stem}.html", "timestamp.txt", "submission_secret.txt"])
    assert (fb / f"{stem}.html").read_text() == "<p>page of ada</p>"
    assert (fb / "submission_secret.txt").read_text() == "secret-of-ada"
    assert any("bob" in line and "submission_secret.txt" in line for line in said)

    # Graded again: auto scores are replaced, a manual score given in formgrader is kept and still wins.
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "sdl") as gb:
        g = gb.find_grade("task_1_1", stem, "lab03", "ada")
        g.manual_score = 1.0
        gb.db.commit()
    grades[0].points = {gid: 0.0 for gid in lab03.points}
    X.record(X.course_of(course / "submitted", "lab03"), lab03, grades, out)
    again = scores(course, "ada")
    assert again["cells"]["task_1_1"] == (0.0, 1.0, True) and again["score"] == 1.0


def _fake_grade_one(sub, lab, sandbox, **kw):
    g = G.Grade(sub.student, sub.path, {gid: 0.0 for gid in lab.tasks})
    g.points["task_1_1"] = lab.points["task_1_1"]
    return g, nbformat.read(sub.path, as_version=4)


def test_grading_a_course_grades_only_that_lab_and_fills_the_gradebook(tmp_path, lab03, monkeypatch):
    monkeypatch.setattr(G, "grade_one", _fake_grade_one)
    monkeypatch.setattr(G, "numba_cache_seed", lambda lab, folder: None)
    course = make_course(tmp_path / "course")
    X.release_labs(BOOK, course, labs=["lab03"])
    submit(course, "ada")
    submit(course, "bob")
    submit(course, "cy", "lab01", name=Path(BOOK.resolve("lab01").file).name)  # another assignment: not graded
    grades = G.grade_folder(course / "submitted", lab03, out=tmp_path / "out", sandbox="none", seed=1)
    assert [g.student for g in grades] == ["ada", "bob"]
    assert scores(course, "bob")["score"] == 3 and scores(course, "bob")["cells"]["task_1_1"][0] == 3
    assert (course / "feedback" / "bob" / "lab03" / f"{Path(NAME).stem}.html").is_file()
    assert not (course / "feedback" / "cy").exists()
    with pytest.raises(ValueError, match="no .ipynb notebook of assignment 'lab04'"):
        G.grade_folder(course / "submitted", "lab04", out=tmp_path / "o4", sandbox="none", seed=1)


def test_the_command_releases_into_a_course_and_refuses_lab_without_nbgrader(tmp_path):
    import subprocess
    import sys

    course = make_course(tmp_path / "course")
    run = subprocess.run([sys.executable, "-m", "scaledl", "course", "release", "--nbgrader", str(course), "--lab",
                          "lab03"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "wrote 2 notebooks to the nbgrader course" in run.stdout and (course / "release" / "lab03" / NAME).is_file()
    run = subprocess.run([sys.executable, "-m", "scaledl", "course", "release", str(tmp_path / "b"), "--lab", "lab03"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "--lab lab03: only with --nbgrader" in run.stderr
    assert not (tmp_path / "b").exists()
