"""A JupyterHub course that keeps nbgrader's flow: its folders, its exchange and its gradebook.

nbgrader 0.9 lays a course out as ``COURSE/{source,release,submitted,feedback}/.../ASSIGNMENT/`` beside
``gradebook.db`` and ``nbgrader_config.py``. This module fills the parts that nbgrader's own steps would, so
that nbgrader's exchange commands work unchanged around ``scaledl course``:

1. ``scaledl course release --nbgrader COURSE`` (:func:`release_labs`) writes one assignment per lab, named by
   its id (``lab03``): ``source/lab03/NAME.ipynb`` is the solution (what ``nbgrader generate_assignment`` would
   read), ``release/lab03/NAME.ipynb`` the student notebook exactly as the student bundle holds it (what
   ``generate_assignment`` would write: solutions stubbed, hidden tests removed, nbgrader's cell metadata kept,
   so the grader matches cells by ``grade_id``). Then ``nbgrader release_assignment lab03``, students'
   ``fetch_assignment`` and ``submit``, and ``nbgrader collect lab03``, as usual. Do not run
   ``generate_assignment``: it would replace the released notebook with nbgrader's own stubs.
2. ``scaledl course grade COURSE/submitted --lab lab03`` grades ``submitted/STUDENT/lab03/`` only (the course's
   other assignments are not this lab's), and then (:func:`record`)

   - writes each task's points into the gradebook through nbgrader's :class:`~nbgrader.api.Gradebook`, as
     nbgrader's autograde does: the assignment, its notebook, one grade cell per task (its ``grade_id``
     and points) and the students are created where missing; each task's score is the ``auto_score`` of its
     grade cell, so a manual score you gave in formgrader still wins; the submission's time is read from
     ``timestamp.txt``. A REVIEW or REJECTED submission's grades are flagged "needs manual grade";
   - copies each student's feedback page to ``feedback/STUDENT/lab03/NAME.html`` with the submission's
     ``timestamp.txt`` and ``submission_secret.txt``, which is what ``nbgrader release_feedback lab03`` reads
     and ``fetch_feedback`` delivers.

The course is found from the folder graded: a folder named as nbgrader's ``submitted`` directory whose parent
holds ``nbgrader_config.py``, ``gradebook.db``, or the lab's ``source/LAB/`` or ``release/LAB/``. Its settings
are nbgrader's: the ``nbgrader_config.py`` files of Jupyter's config path (``~/.jupyter``, ``/etc/jupyter``,
...), then the course's, read as nbgrader reads them (``CourseDirectory.course_id``, ``db_url``, the directory
names).
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat

from scaledl._args import UsageError
from scaledl.book import nbfile

CONFIG_FILE = "nbgrader_config.py"
FLAGGED = ("REVIEW", "REJECTED")  # statuses whose grades nbgrader shows as "needs manual grade"
COPIED = ("timestamp.txt", "submission_secret.txt")  # what release_feedback reads beside each feedback page
MAX_COPIED_BYTES = 4096  # a timestamp or a secret is ~130 bytes


@dataclass(frozen=True)
class Course:
    """An nbgrader course directory, with nbgrader's settings for it."""

    root: Path
    coursedir: object  # nbgrader.coursedir.CourseDirectory

    @property
    def course_id(self) -> str:
        return self.coursedir.course_id

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    def folder(self, step: str, student: str, assignment: str) -> Path:
        """``COURSE/STEP/STUDENT/ASSIGNMENT`` as nbgrader's ``directory_structure`` places it; ``step`` is
        ``source``, ``release``, ``submitted`` or ``feedback`` (named as the config names them)."""
        name = getattr(self.coursedir, f"{step}_directory")
        return Path(self.coursedir.format_path(name, student, assignment))


def _config(root: Path):
    """nbgrader's configuration for a course at ``root``: Jupyter's config path (lowest priority first), then
    the course's own ``nbgrader_config.py``."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    cfg = Config()
    for folder in [*reversed(jupyter_config_path()), str(root)]:
        if (Path(folder) / CONFIG_FILE).is_file():
            cfg.merge(PyFileConfigLoader(CONFIG_FILE, path=folder).load_config())
    return cfg


def load_course(root) -> Course:
    """The nbgrader course at ``root`` (the folder may not exist yet: nbgrader's defaults then).

    Raises:
        ValueError: nbgrader's configuration names another folder as the course (``CourseDirectory.root``).
    """
    from nbgrader.coursedir import CourseDirectory

    root = Path(root).resolve()
    cfg = _config(root)
    configured = cfg.CourseDirectory.get("root") if "CourseDirectory" in cfg else None
    if configured and Path(configured).resolve() != root:
        raise UsageError(f"course={str(root)!r}: nbgrader's configuration sets CourseDirectory.root = "
                         f"{configured!r}, another folder; grade that course's submitted/ folder, or fix "
                         f"{CONFIG_FILE}")
    return Course(root, CourseDirectory(config=cfg, root=str(root)))


def course_of(folder, lab_id: str) -> Course | None:
    """The nbgrader course whose ``submitted/`` folder ``folder`` is, else None (any other submissions folder):
    its parent holds ``nbgrader_config.py``, ``gradebook.db``, or the lab's ``source/LAB/`` or ``release/LAB/``."""
    folder = Path(folder).resolve()
    root = folder.parent
    if not ((root / CONFIG_FILE).is_file() or (root / "gradebook.db").is_file()
            or (root / "source" / lab_id).is_dir() or (root / "release" / lab_id).is_dir()):
        return None
    course = load_course(root)
    return course if folder == course.root / course.coursedir.submitted_directory else None


# --- release ------------------------------------------------------------------------------------------------

def release_labs(book, course_root, *, labs=None, force: bool = False) -> list[str]:
    """``scaledl course release --nbgrader COURSE``: each lab's ``source/LAB/`` and ``release/LAB/`` in the
    nbgrader course at ``course_root`` (created if missing); returns the files written, relative to it. Nothing
    else in the course (its gradebook, submissions, feedback, config) is touched.

    Args:
        labs: lab ids to release (default: every lab that is not planned).
        force: replace a lab's ``source/LAB/`` and ``release/LAB/`` that already hold files.

    Raises:
        ValueError: the course is inside the book's repository; an unknown or planned lab; a lab's folders
            already hold files and ``force`` is not given (nothing is written then).
        RuntimeError: a released notebook holds a solution, hidden-test or answer-key line (a bug: report it).
    """
    from scaledl.course.bundle import secret_markers
    from scaledl.course.leaks import scan, secret_lines
    from scaledl.course.release import student_lab

    repo, course = Path(book.root).resolve(), load_course(course_root)
    root = course.root
    if root == repo or repo in root.parents or root in repo.parents:
        raise UsageError(f"course={str(root)!r}: an nbgrader course is never written into the book's repository "
                         f"({repo}) or a folder holding it; choose a folder outside it")
    every = [e for e in book.entries if e.kind == "lab" and e.validated]
    if labs:
        known = {e.id: e for e in every}
        unknown = [x for x in labs if x not in known]
        if unknown:
            raise UsageError(f"labs={unknown!r}: expected lab ids of the book that are not planned: {sorted(known)}")
        every = [known[x] for x in dict.fromkeys(labs)]
    folders = {e.id: (course.folder("source", ".", e.id), course.folder("release", ".", e.id)) for e in every}
    full = [str(d) for pair in folders.values() for d in pair if d.is_dir() and any(d.iterdir())]
    if full and not force:
        raise UsageError(f"course={str(root)!r}: {', '.join(full)} already hold files; pass --force to replace "
                         f"them (the course's gradebook, submissions and feedback are never touched)")
    made = {}
    for e in every:
        solution = nbformat.read(book.path(e.solution), as_version=4)
        made[e.id] = student_lab(solution, e.executed_file)
        left = secret_markers(made[e.id])
        if left:
            raise RuntimeError(f"{e.file}: still holds {left[0]} after the release; not writing the course")
    written = []
    for e in every:
        name = Path(e.file).name
        source, release = folders[e.id]
        for d in (source, release):
            if d.exists():
                shutil.rmtree(d)
            d.mkdir(parents=True)
        shutil.copyfile(book.path(e.solution), source / name)
        nbfile.write(made[e.id], release / name)
        written += [p.relative_to(root).as_posix() for p in (source / name, release / name)]
    release_root = root / course.coursedir.release_directory
    leaks = [x for x in scan(release_root, secret_lines(book))
             if x.split(":", 1)[0].split("/", 1)[0] in folders]
    if leaks:
        raise RuntimeError("the released notebooks leak:\n" + "\n".join(leaks[:20]))
    return written


# --- grading ------------------------------------------------------------------------------------------------

def notebook_name(course: Course, lab_id: str) -> str:
    """The assignment's notebook in nbgrader's gradebook: the released notebook's name (without ``.ipynb``),
    else the lab's file name in the book."""
    released = sorted(course.folder("release", ".", lab_id).glob("*.ipynb"))
    if len(released) == 1:
        return released[0].stem
    from scaledl.book.toc import load

    return Path(load().resolve(lab_id).file).stem


def _timestamp(folder: Path, warn):
    """The submission time nbgrader's ``submit`` wrote in ``folder/timestamp.txt`` (UTC), or None."""
    from nbgrader.utils import parse_utc

    path = folder / "timestamp.txt"
    if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_COPIED_BYTES:
        return None
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    try:
        return parse_utc(text) if text else None
    except (ValueError, OverflowError):
        warn(f"{path}: not a timestamp ({text[:60]!r}); the submission is recorded without its time")
        return None


def _grade_rows(gb, submission, notebook: str, lab_id: str, student: str, grade_ids) -> dict:
    """grade_id -> the submission's nbgrader Grade row, made where missing (a submission recorded before the
    lab's grade cells existed in the gradebook has none)."""
    from nbgrader.api import Grade, MissingEntry, SubmittedNotebook

    try:
        snb = gb.find_submission_notebook(notebook, lab_id, student)
    except MissingEntry:
        snb = SubmittedNotebook(notebook=gb.find_notebook(notebook, lab_id), assignment=submission)
        gb.db.add(snb)
        gb.db.commit()
    rows = {}
    for gid in grade_ids:
        try:
            rows[gid] = gb.find_grade(gid, notebook, lab_id, student)
        except MissingEntry:
            rows[gid] = Grade(cell_id=gb.find_grade_cell(gid, notebook, lab_id).id, notebook=snb)
            gb.db.add(rows[gid])
    gb.db.commit()
    return rows


def _copy_small(src: Path, dest: Path) -> bool:
    if not src.is_file() or src.is_symlink() or src.stat().st_size > MAX_COPIED_BYTES:
        return False
    shutil.copyfile(src, dest)
    return True


@contextmanager
def _alembic_on_path():
    """nbgrader makes a new gradebook.db by running ``alembic`` from PATH (``nbgrader.api.get_alembic_version``),
    which is not there when this environment's ``scaledl`` runs without its virtual environment activated: put
    this interpreter's bin folder, where alembic is installed beside nbgrader, on PATH meanwhile."""
    before = os.environ.get("PATH")
    here = Path(sys.executable).parent
    if shutil.which("alembic") is None and (here / "alembic").is_file():
        os.environ["PATH"] = os.pathsep.join([str(here), before] if before else [str(here)])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def record(course: Course, lab, grades, out, progress=None) -> None:
    """Write a graded batch of ``lab`` into the nbgrader ``course``: scores into its gradebook, feedback pages
    into ``feedback/STUDENT/LAB/`` (see the module's docstring). ``grades`` are :class:`~scaledl.course.grade.Grade`
    rows of submissions under the course's ``submitted/``; ``out`` is the batch's output folder (its
    ``feedback/STUDENT.html`` pages are copied)."""
    from nbgrader.api import Gradebook, MissingEntry

    say = progress or (lambda _msg: None)
    submitted = course.root / course.coursedir.submitted_directory
    notebook = notebook_name(course, lab.id)
    with _alembic_on_path(), warnings.catch_warnings(), Gradebook(course.db_url, course.course_id) as gb:
        # nbgrader's add_submission reads the new submission's relations before adding it to the session, which
        # SQLAlchemy 2 reports as "Object of type <...> not in session" (nbgrader's autograde prints the same);
        # the rows are added right after, and the tests read them back.
        warnings.filterwarnings("ignore", message=r"Object of type <\w+> not in session")
        gb.update_or_create_assignment(lab.id)
        gb.update_or_create_notebook(notebook, lab.id)
        for gid, points in lab.points.items():
            gb.update_or_create_grade_cell(gid, notebook, lab.id, max_score=points, cell_type="code")
        assignment = gb.find_assignment(lab.id)
        others = sorted(n.name for n in assignment.notebooks if n.name != notebook)
        stale = sorted(c.name for n in assignment.notebooks for c in n.grade_cells
                       if n.name == notebook and c.name not in lab.points)
        if others or stale:
            say(f"nbgrader: the gradebook's {lab.id} also holds " + "; ".join(
                ([f"notebooks {others}"] if others else []) + ([f"grade cells {stale}"] if stale else []))
                + " that scaledl does not grade: they count in its maximum")
        no_secret = []
        for g in grades:
            student = Path(g.path).relative_to(submitted).parts[0]  # nbgrader's id, as its folder says
            handed_in = course.folder("submitted", student, lab.id)
            try:
                gb.find_student(student)
            except MissingEntry:
                gb.add_student(student)
            when = _timestamp(handed_in, say)
            submission = gb.update_or_create_submission(lab.id, student, **({"timestamp": when} if when else {}))
            for gid, row in _grade_rows(gb, submission, notebook, lab.id, student, lab.points).items():
                row.auto_score = float(g.points.get(gid, 0.0))
                row.needs_manual_grade = row.manual_score is not None or bool(set(g.statuses) & set(FLAGGED))
            gb.db.commit()
            feedback = course.folder("feedback", student, lab.id)
            feedback.mkdir(parents=True, exist_ok=True)
            for old in feedback.glob("*.html"):  # a page for a notebook name of an earlier batch
                old.unlink()
            shutil.copyfile(Path(out) / "feedback" / f"{g.student}.html", feedback / f"{Path(g.path).stem}.html")
            copied = {name: _copy_small(handed_in / name, feedback / name) for name in COPIED}
            if not all(copied.values()):
                no_secret.append(student)
    say(f"nbgrader: wrote {len(grades)} submission(s) of {lab.id} to the gradebook ({course.db_url}) and their "
        f"feedback to {course.root / course.coursedir.feedback_directory}/STUDENT/{lab.id}/; "
        f"`nbgrader release_feedback {lab.id}` hands it out")
    if no_secret:
        say(f"nbgrader: no timestamp.txt or submission_secret.txt beside the notebooks of {', '.join(no_secret)} "
            "(not collected by nbgrader 0.9's `nbgrader collect`?): release_feedback cannot hand out their feedback")
