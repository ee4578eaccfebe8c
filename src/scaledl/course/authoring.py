"""For writing a new lab's solution notebook: mark its answer cells and make its hidden-test cells as
nbgrader and :mod:`scaledl.course.grade` expect them."""

from __future__ import annotations

import re

import nbformat

from scaledl._args import UsageError
from scaledl.course.integrity import meta


def mark_answer_cells(nb) -> list[str]:
    """Mark every code cell holding a ``### BEGIN SOLUTION`` block as an nbgrader "autograded answer" cell
    (grade_id ``answer_task_N_M`` from the marker), as nbgrader's release steps require; returns the ids.
    For a new lab's solution notebook; run once, then re-execute it."""
    used = []
    for cell in nb.cells:
        m = re.search(r"### BEGIN SOLUTION(.*)", cell.source) if cell.cell_type == "code" else None
        if not m or meta(cell).get("solution"):
            continue
        slug = "answer_" + (re.sub(r"[^0-9a-z]+", "_", m.group(1).strip().lower()).strip("_") or "cell")
        gid, k = slug, 2
        while gid in used:
            gid, k = f"{slug}_{k}", k + 1
        used.append(gid)
        cell.metadata["nbgrader"] = {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3,
                                     "solution": True, "task": False}
    return used


def new_test_cell(task: str, points: float, lab: str) -> nbformat.NotebookNode:
    """An nbgrader autograded-test cell for ``task`` ("Task 1.1") of ``lab``: a visible line, then the hidden
    part, which hands the task's results to the grader (:mod:`scaledl.course.produce`). Insert it after the
    task's visible check, write the task's produce function in ``scaledl/course/produce/LAB.py`` (its
    ``PRODUCE``) and the rest of its spec in ``scaledl/course/tasks/LAB.py``.

    Raises:
        ValueError: ``points`` is not positive.
    """
    if not points > 0:
        raise UsageError(f"points={points!r}: expected a positive number")
    gid = re.sub(r"[^0-9a-z]+", "_", task.strip().lower()).strip("_")
    source = (f"# {task}: {points:g} points. Hidden tests, with new sizes and seeds, run here when the lab is "
              f"graded.\n### BEGIN HIDDEN TESTS\nfrom scaledl.course import produce as _produce\n"
              f'_produce.run("{lab}", "{gid}", globals())\n### END HIDDEN TESTS')
    cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {
        "grade": True, "grade_id": gid, "locked": True, "points": points, "schema_version": 3, "solution": False,
        "task": False}})
    cell["id"] = f"{gid.replace('_', '-')}-tests"
    return cell
