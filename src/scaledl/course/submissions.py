"""Which notebook is whose: a folder of submitted labs, as an LMS, a shared drive or nbgrader lays it out.

The student's name is STUDENT in nbgrader's ``submitted/STUDENT/ASSIGNMENT/*.ipynb``, else the first folder
below the submissions folder (one folder per student), else the file's stem (an LMS download's flat list),
with an LMS's copy suffix removed: ``ada (1).ipynb`` and ``ada (2).ipynb`` are two uploads by ``ada``.

**One notebook per student is graded**, by this rule: the most recently modified file; between files with the
same modification time, the one with the highest copy number (``(2)`` after ``(1)`` after none); then the
last in path order. The others are named in the student's row (``also handed in``) so an instructor can
look at them. Hidden files and folders (``.ipynb_checkpoints``) are not submissions.

Graded over an nbgrader course's ``submitted/`` folder itself (``assignment`` given), only the notebooks in
``STUDENT/ASSIGNMENT/`` count, and STUDENT is nbgrader's student id as it is: the course's other assignments
are not this lab's submissions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from scaledl._args import UsageError

COPY = re.compile(r"^(?P<base>.*?)\s*\((?P<n>\d+)\)$")  # "ada (1)": the browser's or LMS's second download


@dataclass
class Submission:
    student: str
    path: Path
    others: list[Path] = field(default_factory=list)  # further files of this student, not graded


def _name_and_copy(folder: Path, path: Path) -> tuple[str, int]:
    parts = path.relative_to(folder).parts
    if "submitted" in parts[:-1] and parts.index("submitted") + 2 < len(parts):
        return parts[parts.index("submitted") + 1], 0
    if len(parts) > 1:
        m = COPY.match(path.stem)
        return parts[0], int(m["n"]) if m else 0
    m = COPY.match(path.stem)
    return (m["base"] or path.stem, int(m["n"])) if m else (path.stem, 0)


def _safe(name: str) -> str:
    """A student name usable as a file name (feedback/NAME.html): no separators, no leading dot."""
    name = re.sub(r"[^\w .@+-]", "_", name).strip().lstrip(".")
    return name or "unnamed"


def find(folder, assignment: str | None = None) -> list[Submission]:
    """One :class:`Submission` per student under ``folder``, sorted by student name. ``assignment``: ``folder``
    is nbgrader's ``submitted/``; only ``STUDENT/ASSIGNMENT/*.ipynb`` are taken.

    Raises:
        ValueError: ``folder`` is not a folder, or holds no notebook (of ``assignment``).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"submissions={str(folder)!r}: expected a folder of submitted notebooks")
    by_student: dict[str, list[tuple[float, int, Path]]] = {}
    for path in sorted(folder.rglob("*.ipynb")):
        rel = path.relative_to(folder)
        if any(p.startswith(".") for p in rel.parts) or not path.is_file():
            continue
        if assignment is None:
            student, copy_n = _name_and_copy(folder, path)
        elif len(rel.parts) >= 3 and rel.parts[1] == assignment:
            student, copy_n = rel.parts[0], 0
        else:
            continue
        by_student.setdefault(_safe(student), []).append((path.stat().st_mtime, copy_n, path))
    if not by_student:
        of = f" of assignment {assignment!r} (nbgrader's STUDENT/{assignment}/*.ipynb)" if assignment else ""
        raise UsageError(f"submissions={str(folder)!r}: holds no .ipynb notebook{of}")
    found = []
    for student in sorted(by_student):
        ranked = sorted(by_student[student], key=lambda t: (t[0], t[1], str(t[2])))
        found.append(Submission(student, ranked[-1][2], [p for _, _, p in ranked[:-1]]))
    return found
