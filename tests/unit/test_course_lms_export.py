"""``scaledl course export``: the Canvas gradebook import and the plain roster CSV, and who is matched to
whom: exact id, email, name in either order, a Canvas download's user ID, Gradescope's metadata; ambiguous and
unmatched submissions are listed and left blank, never guessed. Grader output folders are written by hand here
(the grader's own are checked in tests/unit/test_course_grades_csv.py). Under a second, plus one CLI run."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scaledl.course import lms_export as L
from scaledl.course.grade import WRITTEN_COLUMN

HEAD = ["student", "file", "status", "total", "max", "Task 1.1 (max 3)", WRITTEN_COLUMN, "seconds", "detail"]
CANVAS_HEAD = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "lab03 (48213)", "Quiz 1 (48100)",
               "Current Score"]
CANVAS_ROWS = [
    ["    Points Possible", "", "", "", "", "10.00", "5.00", "(read only)"],
    ["Lovelace, Ada", "101", "S001", "ada@uni.edu", "A", "", "4", ""],
    ["Hopper, Grace", "102", "S002", "ghopper", "A", "", "5", ""],
    ["Turing, Alan", "103", "S003", "aturing", "B", "", "5", ""],
    ["Smith, John", "104", "S004", "jsmith1", "B", "", "", ""],
    ["Smith, John", "105", "S005", "jsmith2", "B", "", "", ""],
    ["Zoë, O'Brien", "106", "S006", "obrien", "B", "", "", ""],
]


def write_results(folder: Path, lab: str, rows, submissions=None, maximum=10) -> Path:
    """A grader output folder: grades.csv with ``rows`` of (student, file, status, total[, written])."""
    folder.mkdir(parents=True)
    with open(folder / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEAD)
        for student, file, status, total, *written in rows:
            w.writerow([student, file, status, total, maximum, total, *(written or [""]), "1.0", ""])
    info = {"lab": lab, "seed": 1, "sandbox": "bwrap", "timeout_s": 300, "students": len(rows)}
    if submissions is not None:
        info["submissions"] = str(submissions)
    (folder / "batch.json").write_text(json.dumps(info))
    return folder


def write_canvas(path: Path, rows=CANVAS_ROWS, head=CANVAS_HEAD) -> Path:
    with open(path, "w", newline="", encoding="utf-8-sig") as f:  # Canvas's export starts with a BOM
        csv.writer(f).writerows([head, *rows])
    return path


def read(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def by_id(path: Path, key="ID") -> dict:
    rows = read(path)
    return {r[rows[0].index(key)]: dict(zip(rows[0], r)) for r in rows[1:]}


def problems(done, lab="lab03") -> dict:
    return {(p[1], p[2]): p[3] for p in done.problems if p[0] == lab and p[1]}


def test_canvas_import_format_and_each_matching_rule(tmp_path):
    results = write_results(tmp_path / "grades-lab03", "lab03", [
        ("ghopper", "submitted/ghopper/lab03/x.ipynb", "OK", "7"),      # nbgrader id = SIS Login ID
        ("ada", "ada.ipynb", "OK", "9"),                                # the login's part before @
        ("turingalan_103_9001_lab03", "turingalan_103_9001_lab03.ipynb", "TIMEOUT", "4"),  # Canvas download
        ("John Smith", "John Smith.ipynb", "OK", "10"),                # two students of that name: ambiguous
        ("nobody", "nobody.ipynb", "OK", "10"),                         # unmatched
        ("Zoe O'Brien", "Zoe O'Brien.ipynb", "OK", "8", "2"),          # name, accents and order aside; + written
    ])
    warned = []
    done = L.export([results], out=tmp_path / "lms", canvas=write_canvas(tmp_path / "canvas.csv"),
                    warn=warned.append)
    rows = read(tmp_path / "lms" / "canvas-import.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "lab03 (48213)"]  # Canvas's column
    assert rows[1] == ["    Points Possible", "", "", "", "", "10"]  # Canvas's Points Possible row, second
    got = {r[1]: r[5] for r in rows[2:]}
    assert got == {"101": "9", "102": "7", "103": "4", "104": "", "105": "", "106": "10"}
    assert rows[2][:5] == ["Lovelace, Ada", "101", "S001", "ada@uni.edu", "A"]  # the roster's cells, as they were
    p = problems(done)
    assert p[("John Smith", "John Smith.ipynb")].startswith("ambiguous: its name matches 2 students")
    assert p[("nobody", "nobody.ipynb")].startswith("unmatched")
    assert len(p) == 2 and done.scores == 4
    assert any("nobody" in line and "unmatched" in line for line in warned)
    report = read(tmp_path / "lms" / "export-report.csv")
    assert report[0] == ["lab", "student", "file", "problem", "candidates"]
    assert any(r[1] == "John Smith" and "Smith, John (S004); Smith, John (S005)" == r[4] for r in report)
    assert any(r[3] == "no score for Smith, John (S004)" for r in report)  # the roster's blanks are listed too
    plain = read(tmp_path / "lms" / "roster-grades.csv")
    assert plain[0] == ["student id", "name", "lab03"]
    assert plain[1] == ["S001", "Lovelace, Ada", "9"]


def test_held_statuses_two_submissions_of_one_student_and_bad_numbers_are_left_blank(tmp_path):
    results = write_results(tmp_path / "g", "lab03", [
        ("ghopper", "ghopper.ipynb", "REVIEW", "10"),
        ("aturing", "aturing.ipynb", "OK", "5"),
        ("Alan Turing", "Alan Turing.ipynb", "OK", "6"),   # the same student again, by name
        ("ada", "ada.ipynb", "OK", "3", "lots"),           # the written column is not a number
        ("obrien", "obrien.ipynb", "REJECTED", "0"),
    ])
    done = L.export([results], out=tmp_path / "lms", canvas=write_canvas(tmp_path / "c.csv"), warn=lambda _: None)
    got = {k: v["lab03 (48213)"] for k, v in by_id(tmp_path / "lms" / "canvas-import.csv").items() if k.isdigit()}
    assert got == {"101": "", "102": "", "103": "", "104": "", "105": "", "106": ""}
    p = problems(done)
    assert p[("ghopper", "ghopper.ipynb")].startswith("status REVIEW: read its detail")
    assert p[("obrien", "obrien.ipynb")].startswith("status REJECTED")
    assert p[("aturing", "aturing.ipynb")].startswith("ambiguous: 2 submissions match Turing, Alan")
    assert p[("Alan Turing", "Alan Turing.ipynb")].startswith("ambiguous: 2 submissions match")
    assert p[("ada", "ada.ipynb")] == "written 'lots' is not a number; left blank"
    assert done.scores == 0


def test_gradescope_metadata_matches_by_sid_then_email_then_name_and_gives_a_group_its_score(tmp_path):
    """Only the export's own metadata file counts, and of a group every member gets the score."""
    subs = tmp_path / "export"
    for folder in ("submission_1", "submission_2", "submission_3"):
        (subs / folder).mkdir(parents=True)
    (subs / "submission_metadata.yml").write_text(  # the export's, with Ruby's symbol keys
        "submission_1:\n  :submitters:\n  - :name: Someone Else\n    :email: x@y.z\n    :sid: S002\n"
        "submission_2:\n  :submitters:\n  - :name: Alan Turing\n    :email: AT@uni.edu\n"
        "  - :name: Ada Lovelace\n    :email: ada@uni.edu\n"
        "submission_3:\n  :submitters:\n  - :name: Nobody Known\n    :email: nobody@uni.edu\n")
    (subs / "submission_3" / "submission_metadata.json").write_text(json.dumps({  # uploaded by the student
        "users": [{"name": "Grace Hopper", "email": "ghopper@uni.edu", "sid": "S002"}]}))
    results = write_results(tmp_path / "g", "lab03", [
        ("submission_1", "submission_1/lab03.ipynb", "OK", "6"),
        ("submission_2", "submission_2/lab03.ipynb", "OK", "8"),
        ("submission_3", "submission_3/lab03.ipynb", "OK", "9"),
    ], submissions=subs)
    done = L.export([results], out=tmp_path / "lms", canvas=write_canvas(tmp_path / "c.csv"), warn=lambda _: None)
    got = {k: v["lab03 (48213)"] for k, v in by_id(tmp_path / "lms" / "canvas-import.csv").items() if k.isdigit()}
    # submission_1: its sid (not its name) is Grace Hopper's; submission_2: a group, Ada by email, Alan by name;
    # submission_3: the metadata a student put in their own folder claims Grace, and is not read
    assert got == {"101": "8", "102": "6", "103": "8", "104": "", "105": "", "106": ""}
    p = problems(done)
    assert list(p) == [("submission_3", "submission_3/lab03.ipynb")] and "Gradescope: Nobody Known" in p[
        ("submission_3", "submission_3/lab03.ipynb")]


def test_a_new_lab_column_is_named_with_its_title_and_several_labs_share_a_file(tmp_path):
    one = write_results(tmp_path / "g3", "lab03", [("ghopper", "ghopper.ipynb", "OK", "7")])
    two = write_results(tmp_path / "g7", "lab07", [("ghopper", "ghopper.ipynb", "OK", "9")], maximum=9)
    L.export([one, two], out=tmp_path / "lms", canvas=write_canvas(tmp_path / "c.csv"), written_max=2,
             warn=lambda _: None)
    rows = read(tmp_path / "lms" / "canvas-import.csv")
    assert rows[0][5:] == ["lab03 (48213)", "Lab 7: Batch dispatch"]
    assert rows[1][5:] == ["12", "11"]  # max + the written answers' maximum
    assert [r[5:] for r in rows[2:] if r[1] == "102"] == [["7", "9"]]
    with pytest.raises(ValueError, match="two folders of one lab"):
        L.export([one, one], out=tmp_path / "x", canvas=tmp_path / "c.csv")
    with pytest.raises(ValueError, match="expected one roster"):
        L.export([one], out=tmp_path / "x")
    write_canvas(tmp_path / "bad.csv", head=["Name", "Email"], rows=[])
    with pytest.raises(ValueError, match="expected Canvas's gradebook export"):
        L.export([one], out=tmp_path / "x", canvas=tmp_path / "bad.csv")
    with pytest.raises(ValueError, match="expected a folder written by `scaledl course grade`"):
        L.export([tmp_path], out=tmp_path / "x", canvas=tmp_path / "c.csv")


def test_a_plain_roster_and_formula_cells_are_escaped_in_every_output(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Username,First name,Last name,Email\n=cmd|calc,Eve,@Evil,eve@uni.edu\nghopper,Grace,Hopper,\n"
                      "-jdoe,John,Doe,\n")
    results = write_results(tmp_path / "g", "lab03", [("eve@uni.edu", "eve@uni.edu.ipynb", "OK", "5"),
                                                      ("-2+3", "-2+3.ipynb", "OK", "1"),
                                                      ("'-jdoe", "'-jdoe.ipynb", "OK", "4")])  # as grade.py escaped it
    done = L.export([results], out=tmp_path / "lms", roster=roster, warn=lambda _: None)
    plain = read(tmp_path / "lms" / "roster-grades.csv")
    assert plain == [["student id", "name", "lab03"], ["'=cmd|calc", "'@Evil, Eve", "5"],
                     ["ghopper", "Hopper, Grace", ""], ["'-jdoe", "Doe, John", "4"]]
    assert not (tmp_path / "lms" / "canvas-import.csv").exists()
    report = read(tmp_path / "lms" / "export-report.csv")
    assert ["lab03", "'-2+3", "'-2+3.ipynb"] == report[1][:3] and report[1][3].startswith("unmatched")
    assert done.scores == 2


def test_the_command_lists_what_it_left_blank_on_stderr(tmp_path):
    results = write_results(tmp_path / "g", "lab03", [("ghopper", "ghopper.ipynb", "OK", "7"),
                                                      ("nobody", "nobody.ipynb", "OK", "1")])
    run = subprocess.run([sys.executable, "-m", "scaledl", "course", "export", str(results), "--canvas",
                          str(write_canvas(tmp_path / "c.csv")), "--out", str(tmp_path / "lms")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "lab03: nobody (nobody.ipynb): unmatched" in run.stderr
    assert "1 score(s); 1 submission(s) left blank" in run.stdout
    assert by_id(tmp_path / "lms" / "canvas-import.csv")["102"]["lab03 (48213)"] == "7"
    run = subprocess.run([sys.executable, "-m", "scaledl", "course", "export", str(results)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and "one of the arguments --canvas --roster is required" in run.stderr
