"""The notebook that is graded is built from the instructor's cells, not trusted from the submission.

nbgrader's rule (its ``OverwriteCells`` step): a cell's identity, points and, for anything but an answer, its
source come from the instructor's version, matched by ``grade_id``. Here that means:

- an **answer cell** keeps the student's source and gets the instructor's metadata (a cell the student turned
  into markdown runs as code again, as nbgrader does);
- an **autograded-test cell** is the instructor's, hidden tests included; one the student deleted is put back
  after the instructor's preceding cell;
- a cell claiming a ``grade_id`` the instructor does not have (invented, renamed) or one already used
  (duplicated) loses its nbgrader metadata and runs as plain code: it can neither earn nor cost points;
- points exist only for the instructor's test cells, so totals always equal the sum of the task columns.

:func:`identify` rejects a notebook of another lab (all labs share grade_ids such as ``answer_task_1_1``, so it
compares cell ids and markdown headings, which JupyterLab keeps).
"""

from __future__ import annotations

import copy

import nbformat

from scaledl.book.student_copy import strip_hidden_tests


def meta(cell) -> dict:
    m = cell.get("metadata", {}).get("nbgrader", {})
    return m if isinstance(m, dict) else {}


def is_test(cell) -> bool:
    m = meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("grade")) and not m.get("solution")


def test_cells(solution_nb) -> list[tuple[str, float]]:
    """The autograded-test cells of a solution notebook: ``[(grade_id, points), ...]`` in notebook order."""
    return [(meta(c)["grade_id"], float(meta(c)["points"])) for c in solution_nb.cells if is_test(c)]


def _fresh(cell):
    """A copy of the instructor's ``cell`` with no outputs."""
    new = copy.deepcopy(cell)
    if new.cell_type == "code":
        new.outputs, new.execution_count = [], None
    return new


def assemble(submitted, solution) -> tuple[nbformat.NotebookNode, list[str]]:
    """The notebook to run: the submission's cells with the instructor's graded cells in place.

    Returns the notebook (outputs cleared) and notes on what was overwritten, demoted or put back.
    """
    instructor = {meta(c)["grade_id"]: c for c in solution.cells if meta(c).get("grade_id")}
    # A cell is the instructor's by its cell id first, its grade_id only where that id is gone (a notebook whose
    # ids were lost, e.g. cells pasted into a new one): a copy of a test cell's grade_id pasted above the answer
    # (a new id) does not move the hidden test there, and a test cell whose grade_id was edited is still the test.
    by_id = {c.get("id"): meta(c)["grade_id"] for c in solution.cells if meta(c).get("grade_id") and c.get("id")}
    present = {c.get("id") for c in submitted.cells if c.get("id") in by_id}
    id_of = {gid: c.get("id") for c in solution.cells if (gid := meta(c).get("grade_id"))}
    nb = nbformat.v4.new_notebook(metadata=copy.deepcopy(solution.metadata))
    notes, seen = [], set()
    for i, cell in enumerate(submitted.cells):
        claimed = meta(cell).get("grade_id")
        if cell.get("id") in by_id:
            gid = by_id[cell.get("id")]
        elif claimed in instructor and id_of.get(claimed) in present:
            gid = None  # the instructor's cell of that grade_id is elsewhere in the notebook: this is a copy
        else:
            gid = claimed
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        if gid in instructor and gid not in seen:
            seen.add(gid)
            theirs = instructor[gid]
            if meta(theirs).get("solution"):
                kept = nbformat.v4.new_code_cell(cell.source) if theirs.cell_type == "code" else \
                    nbformat.v4.new_markdown_cell(cell.source)
                if cell.cell_type != theirs.cell_type:
                    notes.append(f"cell {i} ({gid}) was turned into {cell.cell_type}; graded as {theirs.cell_type}")
                kept.metadata = copy.deepcopy(theirs.metadata)
                kept["id"] = theirs.get("id", kept.get("id"))
                nb.cells.append(kept)
            else:
                if (is_test(theirs)
                        and strip_hidden_tests(cell.source).rstrip() != strip_hidden_tests(theirs.source).rstrip()):
                    notes.append(f"cell {i} ({gid}): the instructor's test cell was put back over an edited one")
                nb.cells.append(_fresh(theirs))
            continue
        plain = _fresh(cell) if cell.cell_type == "code" else copy.deepcopy(cell)
        if claimed is not None or "nbgrader" in plain.get("metadata", {}):
            plain.metadata.pop("nbgrader", None)
            why = "a duplicate of an instructor's cell" if claimed in instructor else "not one of the instructor's"
            notes.append(f"cell {i}: grade_id {str(claimed)[:40]!r} is {why}; run as plain code, no points")
        nb.cells.append(plain)
    ids = [c.get("id") for c in nb.cells]
    previous = None
    for cell in solution.cells:  # test cells the student deleted go back where the instructor had them
        gid = meta(cell).get("grade_id")
        if is_test(cell) and gid not in seen:
            at = ids.index(previous) + 1 if previous in ids else len(nb.cells)
            nb.cells.insert(at, _fresh(cell))
            ids.insert(at, cell.get("id"))
            notes.append(f"{gid}: the test cell was missing; put back")
        previous = cell.get("id")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb, notes


def fingerprint(nb) -> set[str]:
    """What marks a notebook as one lab's: its cell ids and the first line of each markdown cell."""
    marks = {f"id:{c.get('id')}" for c in nb.cells if c.get("id")}
    marks |= {"md:" + c.source.strip().splitlines()[0][:80] for c in nb.cells
              if c.get("cell_type") == "markdown" and c.source.strip()}
    return marks


def identify(submitted, lab: str, solutions: dict[str, object]) -> str | None:
    """None when ``submitted`` is a notebook of ``lab``; else why not (another lab's, or no lab's).

    ``solutions`` maps every lab id to its solution notebook (``lab`` included).
    """
    theirs = fingerprint(submitted)
    score = {k: len(theirs & fingerprint(nb)) for k, nb in solutions.items()}
    best = max(score, key=lambda k: (score[k], k == lab))
    if best != lab and score[best] > score[lab]:
        return f"this is {best}'s notebook ({score[best]} cells match it, {score[lab]} match {lab})"
    if score[lab] == 0:
        return f"nothing in it is from {lab}'s notebook (no cell id or heading of it): another notebook?"
    return None
