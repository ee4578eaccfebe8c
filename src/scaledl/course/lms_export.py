"""``scaledl course export``: labs' grades as a Canvas gradebook import and a plain roster CSV for other LMSs.

Input: one grader output folder per lab (``grades.csv`` and ``batch.json``, as ``scaledl course grade`` writes
them) and the class roster: Canvas's own gradebook export (*Grades > Export*: ``Student``, ``ID``,
``SIS User ID``, ``SIS Login ID``, ``Section``, the assignments, and a ``Points Possible`` row), or a plain CSV
with a student id and a name (see :func:`read_roster` for the column names it knows). Output, in one folder:

- ``canvas-import.csv`` (with a Canvas roster): ``Student, ID, SIS User ID, SIS Login ID, Section`` copied
  from the roster, one column per lab, and Canvas's ``Points Possible`` row second. A lab's column is the
  roster's column for it if there is one (its header without Canvas's `` (ID)`` is the lab's id or title,
  in any case: ``lab03 (48213)``), so Canvas updates that assignment; else it is named with the lab's title and
  Canvas creates the assignment. Import it with *Grades > Import*;
- ``roster-grades.csv``: ``student id, name``, one column per lab (the lab's id), for any other LMS;
- ``export-report.csv``: every submission left out and why, and every roster student without a score.

**Who handed in what: never guessed.** Each row of ``grades.csv`` says who it is from in one of three ways,
and is matched to the roster by exact keys, the strongest first:

1. **Gradescope's metadata**, where the batch's submissions folder (``batch.json``) holds it: the export's
   ``submission_metadata.yml`` (or ``.json``) beside the submission folders, ``submission_NNN:
   {":submitters": [{":name", ":email", ":sid"}]}`` (``submitters`` or ``users``, as an autograder's
   ``submission_metadata.json`` calls them, work too). Only that file counts: one inside a submission's folder
   is something the student uploaded, and vouches for nothing. Every user of a group submission gets its
   score;
2. **nbgrader's student id** (the submissions' ``submitted/STUDENT/`` folders), a folder name, or a file name:
   the grades.csv ``student`` as it is;
3. a **Canvas download's file name** (``lovelaceada_12345_67890_lab03.ipynb``, ``..._LATE_...``): the user ID
   after the name.

Keys, compared after case folding: an **id** (Canvas's ``ID``, ``SIS User ID``, ``SIS Login ID`` and the part of
an email login before ``@``; a plain roster's id and ``sid``) against a Gradescope ``sid``, an nbgrader id, a
folder or file name, a Canvas download's user ID; then an **email**; then a **name**, compared with accents,
spaces and punctuation removed, in either order of given and family name (``Lovelace, Ada`` is ``adalovelace``
and ``lovelaceada``). A key that matches one student matches; one that matches several is **ambiguous** and
stops there; nothing matching is **unmatched**. Two submissions of one lab matching the same student are both
ambiguous. An ambiguous or unmatched submission is listed on stderr and in the report and its score is left
blank; so is a submission whose status is REVIEW or REJECTED (read its detail; once you are content, set its
status to ``OK`` in ``grades.csv`` and export again).

A score is ``total`` plus ``written (manual; not in total)`` where you filled it in, out of ``max`` plus
``written_max`` (0 unless you say). Every CSV goes through :mod:`scaledl.course.safe_csv`.

The roster's side (reading it, the keys, :func:`~scaledl.course.roster.match`) is :mod:`scaledl.course.roster`.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scaledl._args import UsageError
from scaledl.course import safe_csv
from scaledl.course.roster import (CANVAS_ROSTER, POINTS_POSSIBLE, Keys, match, norm_id, norm_name, read_canvas_roster,
                                   read_roster)

CANVAS_ASSIGNMENT_ID = re.compile(r"\s*\((\d+)\)\s*$")  # "Lab 3 (48213)": Canvas's id of an existing assignment
CANVAS_DOWNLOAD = re.compile(r"^(?P<name>[^_]+?)(?:_LATE)?_(?P<uid>\d+)_(?P<sub>\d+)_", re.IGNORECASE)
HELD = ("REVIEW", "REJECTED")  # statuses left blank until the instructor has read the detail
GRADESCOPE_FILES = ("submission_metadata.yml", "submission_metadata.yaml", "submission_metadata.json")
WRITTEN = "written (manual; not in total)"  # grades.csv's column for the written answers (scaledl.course.grade)


@dataclass
class LabResults:
    lab: str
    title: str
    max_points: float
    rows: list[dict]
    submissions: Path | None
    folder: Path


@dataclass
class Export:
    """What :func:`export` wrote and left out."""

    files: list[Path] = field(default_factory=list)
    problems: list[list[str]] = field(default_factory=list)  # lab, student, file, problem, candidates
    scores: int = 0


# --- reading ------------------------------------------------------------------------------------------------

def _lab_title(lab: str) -> str:
    try:
        from scaledl.book.toc import load

        return load().resolve(lab).title
    except (ValueError, OSError):
        return lab


def read_results(folder) -> LabResults:
    """One lab's grader output folder.

    Raises:
        ValueError: no ``grades.csv`` or ``batch.json`` there, or they lack the grader's columns.
    """
    folder = Path(folder)
    grades, batch = folder / "grades.csv", folder / "batch.json"
    if not grades.is_file() or not batch.is_file():
        raise UsageError(f"results={str(folder)!r}: expected a folder written by `scaledl course grade` "
                         "(grades.csv and batch.json)")
    info = json.loads(batch.read_text(encoding="utf-8"))
    with open(grades, newline="", encoding="utf-8-sig") as f:
        rows = [{k: safe_csv.uncell(v) if k in ("student", "file") else v for k, v in r.items()}
                for r in csv.DictReader(f)]  # the names as the grader found them, before it escaped them
    missing = [c for c in ("student", "file", "status", "total", "max") if rows and c not in rows[0]]
    if not isinstance(info, dict) or "lab" not in info or missing:
        raise UsageError(f"results={str(folder)!r}: grades.csv or batch.json is not the grader's "
                         f"(missing {missing or ['lab']})")
    maxima = {_number(r["max"]) for r in rows} - {None}
    subs = Path(info["submissions"]) if info.get("submissions") else None
    return LabResults(str(info["lab"]), _lab_title(str(info["lab"])), max(maxima) if maxima else 0.0, rows,
                      subs, folder)


def _number(text) -> float | None:
    text = str(text or "").strip().lstrip("'")
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _load_gradescope(submissions: Path | None) -> dict[str, list[dict]]:
    """Submission folder name -> its users ({name, email, sid}), from the export's own metadata file beside the
    submission folders (Gradescope writes it; students upload only into their own folder)."""
    if submissions is None or not submissions.is_dir():
        return {}
    for name in GRADESCOPE_FILES:
        path = submissions / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            try:
                import yaml
            except ModuleNotFoundError as err:
                raise UsageError(f"{path}: reading Gradescope's YAML metadata needs PyYAML "
                                 "(pip install pyyaml), or convert it to submission_metadata.json") from err
            data = yaml.safe_load(text)
        if not isinstance(data, dict):
            raise UsageError(f"{path}: expected a mapping of submission folders to their submitters")
        return {str(k): _users(v) for k, v in data.items()}
    return {}


def _users(entry) -> list[dict]:
    """The people of one Gradescope submission: keys without Ruby's leading colon (``:submitters``)."""
    if not isinstance(entry, dict):
        return []
    entry = {str(k).lstrip(":"): v for k, v in entry.items()}
    people = entry.get("users", entry.get("submitters", []))
    return [{str(k).lstrip(":"): v for k, v in p.items()} for p in people if isinstance(p, dict)]


def submitters(row: dict, results: LabResults, export_wide: dict[str, list[dict]]) -> list[Keys]:
    """Who a grades.csv row says handed it in, by the rules of the module's docstring (one Keys per person)."""
    parts = Path(row.get("file", "")).parts
    people = export_wide.get(parts[0], []) if len(parts) > 1 else []  # never a file inside the student's folder
    if people:
        return [Keys(frozenset({norm_id(p.get("sid"))} - {""}), frozenset({norm_id(p.get("email"))} - {""}),
                     frozenset({norm_name(p.get("name"))} - {""}),
                     said=f"Gradescope: {p.get('name') or ''} <{p.get('email') or ''}> sid {p.get('sid') or ''}")
                for p in people]
    student = str(row.get("student", "")).strip()
    canvas = CANVAS_DOWNLOAD.match(student)
    if canvas:
        return [Keys(frozenset({canvas["uid"]}), frozenset(), frozenset({norm_name(canvas["name"])}),
                     said=f"Canvas download: user {canvas['uid']}")]
    return [Keys(frozenset({norm_id(student)}), frozenset({norm_id(student)} if "@" in student else ()),
                 frozenset({norm_name(student)} - {""}), said=f"name {student!r}")]


# --- writing ------------------------------------------------------------------------------------------------

def _score(row: dict) -> tuple[float | None, str]:
    total, written = _number(row.get("total")), str(row.get(WRITTEN, "") or "").strip()
    if total is None:
        return None, f"total {row.get('total')!r} is not a number"
    if written:
        extra = _number(written)
        if extra is None:
            return None, f"written {written!r} is not a number"
        total += extra
    return total, ""


def _canvas_column(header: list[str], results: LabResults) -> str:
    """The roster's column for this lab (its id or title, Canvas's " (ID)" aside), else a new one: its title.

    Raises:
        ValueError: several columns of the roster match the lab.
    """
    wanted = {" ".join(results.lab.split()).casefold(), " ".join(results.title.split()).casefold()}
    found = [h for h in header if " ".join(CANVAS_ASSIGNMENT_ID.sub("", h).split()).casefold() in wanted]
    if len(found) > 1:
        raise UsageError(f"canvas roster: columns {found} all match {results.lab}; rename all but one in Canvas")
    return found[0] if found else results.title


def _fmt(x: float) -> str:
    return f"{x:g}"


def export(results_folders, *, out, canvas=None, roster=None, written_max: float = 0.0, warn=None) -> Export:
    """Write ``canvas-import.csv`` (with ``canvas``), ``roster-grades.csv`` and ``export-report.csv`` in ``out``.

    Args:
        results_folders: one grader output folder per lab.
        canvas: Canvas's gradebook export (the roster); or ``roster``: a plain roster CSV. Exactly one.
        written_max: the written answers' maximum, added to each lab's points possible.
        warn: called with each line about a left-out submission (the command prints them on stderr).

    Raises:
        ValueError: no results, two folders of one lab, neither or both rosters, a bad roster or results folder.
    """
    say = warn or (lambda line: print(line, file=sys.stderr))
    if (canvas is None) == (roster is None):
        raise UsageError("expected one roster: canvas=Canvas's gradebook export, or roster=a plain roster CSV")
    labs = [read_results(f) for f in results_folders]
    if not labs:
        raise UsageError("results: expected at least one grader output folder (grades-LAB/)")
    seen = [r.lab for r in labs]
    if len(set(seen)) != len(seen):
        raise UsageError(f"results: two folders of one lab ({seen}); expected one folder per lab")
    header, students = read_canvas_roster(canvas) if canvas is not None else ([], read_roster(roster))
    done = Export()
    scores: dict[str, dict[int, float]] = {r.lab: {} for r in labs}  # lab -> roster index -> score
    index = {id(s): k for k, s in enumerate(students)}

    def problem(lab, row, why, candidates=()):
        names = "; ".join(f"{s.name} ({s.plain_id})" for s in candidates)
        done.problems.append([lab, row.get("student", ""), row.get("file", ""), why, names])
        say(f"{lab}: {row.get('student', '')} ({row.get('file', '')}): {why}" + (f" [{names}]" if names else ""))

    for results in labs:
        export_wide = _load_gradescope(results.submissions)
        claims: dict[int, list[tuple[dict, float | None]]] = {}  # roster index -> (row, score or None: held)
        for row in results.rows:
            status = str(row.get("status", "")).strip()
            found = []
            for who in submitters(row, results, export_wide):
                student, why, candidates = match(who, students)
                if student is None:
                    problem(results.lab, row, f"{why} ({who.said}); left blank", candidates)
                else:
                    found.append(student)
            value, bad = _score(row)
            if status in HELD:
                value, bad = None, (f"status {status}: read its detail, then set its status to OK in grades.csv "
                                    "and export again")
            if bad:
                problem(results.lab, row, bad + "; left blank", found)
            for student in found:
                claims.setdefault(index[id(student)], []).append((row, value))
        for k, claim in claims.items():
            if len(claim) > 1:  # two submissions of one lab are the same student's: which counts is not ours
                for row, _ in claim:
                    problem(results.lab, row, f"ambiguous: {len(claim)} submissions match {students[k].name}; "
                                              "left blank", [students[k]])
            elif claim[0][1] is not None:
                scores[results.lab][k] = claim[0][1]
    for results in labs:
        for k, s in enumerate(students):
            if k not in scores[results.lab]:
                done.problems.append([results.lab, "", "", f"no score for {s.name} ({s.plain_id})", ""])
    done.scores = sum(len(v) for v in scores.values())

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    points = {r.lab: r.max_points + written_max for r in labs}
    if canvas is not None:
        columns = [_canvas_column(header, r) for r in labs]
        path = out / "canvas-import.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = safe_csv.writer(f)
            w.writerow([*CANVAS_ROSTER, *columns])
            w.writerow([POINTS_POSSIBLE, *[""] * (len(CANVAS_ROSTER) - 1), *[_fmt(points[r.lab]) for r in labs]])
            for k, s in enumerate(students):
                w.writerow([*(s.cells.get(c, "") for c in CANVAS_ROSTER),
                            *[_fmt(scores[r.lab][k]) if k in scores[r.lab] else "" for r in labs]])
        done.files.append(path)
    path = out / "roster-grades.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = safe_csv.writer(f)
        w.writerow(["student id", "name", *[r.lab for r in labs]])
        for k, s in enumerate(students):
            w.writerow([s.plain_id, s.name, *[_fmt(scores[r.lab][k]) if k in scores[r.lab] else "" for r in labs]])
    done.files.append(path)
    path = out / "export-report.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = safe_csv.writer(f)
        w.writerow(["lab", "student", "file", "problem", "candidates"])
        w.writerows(done.problems)
    done.files.append(path)
    return done
