"""Run All on every lab's student copy, as a student who has answered nothing yet presses it in JupyterLab.

The copy is the one ``scaledl book execute labNN`` generates from the solution
(:func:`scaledl.book.student_copy.student_version`), executed top to bottom in a fresh kernel on the simulator with
errors *not* allowed: every cell must run (a stub that raised would stop the run here, as it stops JupyterLab's
Run All), and every task must say in its own cells that it is not answered yet, instead of a traceback. Lab 05's
cells start mpiexec ranks (its deadlock demonstration), so this file runs in the "mpi" unit of ``make test``.
"""

import re
from pathlib import Path

import nbformat
import pytest

from scaledl.book import load
from scaledl.book.execute import execute_notebook
from scaledl.book.student_copy import student_version
from scaledl.labs.unanswered import NOT_ANSWERED

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LABS = [e for e in BOOK.entries if e.kind == "lab" and e.validated]
STUB = re.compile(r"raise NotImplementedError\('(Task [^']+)'\)")


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def run_all(solution_path, tmp_path):
    """The student copy of ``solution_path``, executed top to bottom (CellExecutionError if a cell raised)."""
    copy = tmp_path / "student.ipynb"
    nbformat.write(student_version(nbformat.read(solution_path, as_version=4)), copy)
    return execute_notebook(copy, timeout_s=600, progress=False, cwd=tmp_path)


@pytest.mark.parametrize("entry", LABS, ids=[e.id for e in LABS])
def test_run_all_on_a_fresh_student_copy_runs_every_cell_and_names_each_unanswered_task(entry, tmp_path):
    nb = run_all(BOOK.path(entry.solution), tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "Run All stopped before the last cell"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    titles = sorted({t for c in code for t in STUB.findall(c.source)})
    assert titles, f"{entry.solution} has no stub"
    hand_in = [c for c in code if "check_before_hand_in(" in c.source]  # the lab's last working cell
    assert len(hand_in) == 1, f"{entry.id}: expected one 'Check before you hand in' cell"
    reports = [line for c in code if c not in hand_in for line in _text(c).splitlines() if NOT_ANSWERED in line]
    for title in titles:
        assert any(re.search(rf"{re.escape(title)}\b", line) for line in reports), \
            f"{entry.id}: no cell says {title} is {NOT_ANSWERED}; the reports were:\n" + "\n".join(reports)
    # each report is one line in the task's own cells, not a traceback
    assert all(line.startswith(("Task ", "This cell uses Task ")) for line in reports), reports
    # and the hand-in check, run last, names every unanswered task once more and does not say "Ready"
    summary = _text(hand_in[0])
    assert summary.startswith("Check before you hand in") and "Ready" not in summary, summary
    for title in titles:
        assert re.search(rf"  {re.escape(title)}: ({NOT_ANSWERED}|its cells stopped)", summary), summary
