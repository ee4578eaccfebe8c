"""A lab as the grader sees it (:class:`Lab`: the instructor's solution, its tasks and points, what students
were handed) and a student's :class:`Grade`, loaded once per batch by :func:`load_lab`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

from scaledl._args import UsageError
from scaledl.course.integrity import meta, test_cells

STATUSES = ("OK", "REVIEW", "TIMEOUT", "CRASHED", "REJECTED")
UNTOUCHED = "no task answered: every answer cell is as handed out"


class Grade:
    """One student's grade: points and messages per task, a status, details for the instructor.

    The status has two parts that combine: how the run ended (OK, TIMEOUT, CRASHED, REJECTED) and whether a
    person must look (REVIEW). Setting ``status = "REVIEW"`` marks the second without hiding the first, so a run
    that timed out and used ``signal`` reads ``TIMEOUT+REVIEW``, and both are counted.
    """

    def __init__(self, student: str, path: Path, points: dict | None = None, messages: dict | None = None,
                 status: str = "OK", details: list | None = None, seconds: float = 0.0):
        self.student, self.path = student, path
        self.points = {} if points is None else points
        self.messages = {} if messages is None else messages
        self.ended, self.review = "OK", False
        self.status = status
        self.details = [] if details is None else details
        self.seconds = seconds
        self.unwritten: list[str] = []  # written answers still as handed out (scaledl.labs.written)
        self.stages: dict[str, float] = {}  # seconds by stage of grading it (review, start, cells, hidden, judge)

    @property
    def status(self) -> str:
        if not self.review:
            return self.ended
        return "REVIEW" if self.ended == "OK" else f"{self.ended}+REVIEW"

    @status.setter
    def status(self, value: str) -> None:
        for part in str(value).split("+"):
            if part == "REVIEW":
                self.review = True
            elif part in STATUSES:
                self.ended = part
            else:
                raise ValueError(f"status={value!r}: expected one of {', '.join(STATUSES)} (REVIEW combines)")

    @property
    def statuses(self) -> tuple[str, ...]:
        """Each part of the status: ("TIMEOUT", "REVIEW"), ("OK",), ..."""
        return tuple(self.status.split("+"))

    @property
    def total(self) -> float:
        return sum(self.points.values())

    @property
    def detail(self) -> str:
        return "; ".join(self.details)

    def __repr__(self) -> str:
        return f"Grade({self.student!r}, {self.total:g} points, {self.status})"


@dataclass
class Lab:
    """What grading one lab needs, loaded once per batch in the grader's process."""

    id: str
    solution: object                 # the instructor's notebook
    tasks: dict                      # grade_id -> scaledl.course.tasks.Task
    points: dict[str, float]         # grade_id -> points, from the instructor's cells
    solutions: dict[str, object]     # every lab's solution, to recognise another lab's notebook
    stubs: frozenset[str] = frozenset()  # the answer cells as students get them (normalised by _plain_source)
    written: int = 0                 # markdown answer cells (tagged "answer"): written answers, graded by hand
    answers: tuple = ()              # those cells as handed out (scaledl.labs.written.answers_of)
    file: str = ""                   # the notebook students hand in (lab03_quantizer_and_clipping.ipynb)

    @property
    def maximum(self) -> float:
        return sum(self.points.values())


def _plain_source(source: str) -> str:
    """A cell's source compared for "as handed out": trailing spaces and blank lines at either end ignored."""
    return "\n".join(line.rstrip() for line in str(source).strip().splitlines())


def handed_out(solution) -> tuple[frozenset[str], int]:
    """What students get of a solution's answers: the stubbed answer cells' sources (normalised), and the
    number of markdown answer cells (the Questions' and the tasks' written answers)."""
    stubs, answers = _handed_out(solution)
    return stubs, len(answers)


def _handed_out(solution) -> tuple[frozenset[str], tuple]:
    from scaledl.book.student_copy import student_version
    from scaledl.labs.written import answers_of

    student = student_version(solution)
    stubs = frozenset(_plain_source(c.source) for c in student.cells
                      if c.cell_type == "code" and meta(c).get("solution"))
    return stubs, tuple(answers_of(student))


def untouched(submitted, lab: Lab) -> bool:
    """True when every answer cell students were given is still in ``submitted`` as it was handed out."""
    if not lab.stubs:
        return False
    sources = {_plain_source(c.get("source", "")) for c in submitted.cells if c.get("cell_type") == "code"}
    return lab.stubs <= sources


def note_untouched(grade: Grade, submitted, lab: Lab) -> None:
    """Say "no task answered" in the detail of a notebook handed in as it was handed out (rather than an OK
    with an empty detail). Not when it earned points: a stub left in place with the task answered in a cell of
    one's own is an answer."""
    if not grade.total and untouched(submitted, lab):
        grade.details.append(UNTOUCHED)


def load_lab(lab_id: str, book=None) -> Lab:
    """The lab ``lab_id`` of the book, with its tasks.

    Raises:
        ValueError: not a lab of the book, planned, or its test cells and task specs disagree.
    """
    from scaledl.book.toc import load
    from scaledl.course import tasks

    book = book or load()
    entry = book.resolve(lab_id)
    if entry.kind != "lab":
        raise UsageError(f"--lab {lab_id!r} is a {entry.kind}; expected a lab id from book.toml such as lab03")
    if not entry.validated:
        raise UsageError(f"--lab {lab_id!r}: {entry.title!r} is planned in book.toml; it has no solution to grade with")
    solutions = {e.id: nbformat.read(book.path(e.solution), as_version=4)
                 for e in book.entries if e.kind == "lab" and e.validated}
    points = dict(test_cells(solutions[entry.id]))
    specs = tasks.for_lab(entry.id)
    if list(points) != list(specs):
        raise UsageError(f"{entry.id}: the solution's test cells {list(points)} and the task specs "
                         f"{list(specs)} disagree; fix scaledl/course/tasks/{entry.id}.py")
    stubs, answers = _handed_out(solutions[entry.id])
    return Lab(entry.id, solutions[entry.id], specs, points, solutions, stubs, len(answers), answers,
               Path(entry.file).name)
