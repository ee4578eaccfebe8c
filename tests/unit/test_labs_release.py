"""Student versions of labs: solutions are stubbed, and a student's own edits are never overwritten."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from scaledl.book.student_copy import ANSWER_CELL, strip_source, student_version, write_student_version

SOLUTION = """\
def copy_kernel(src, dst):
    i = cuda.grid(1)
    ### BEGIN SOLUTION Task 1.1
    if i < dst.size:
        dst[i] = src[i]
    ### END SOLUTION
"""


def test_strip_replaces_the_block_at_its_indentation():
    assert strip_source(SOLUTION) == (
        "def copy_kernel(src, dst):\n"
        "    i = cuda.grid(1)\n"
        "    # YOUR CODE HERE (Task 1.1)\n"
        "    raise NotImplementedError('Task 1.1')"
    )


def test_strip_leaves_unmarked_code_alone():
    assert strip_source("x = 1\ny = 2") == "x = 1\ny = 2"


@pytest.mark.parametrize("source, message", [
    ("### BEGIN SOLUTION\nx = 1", "a solution block is never closed"),
    ("x = 1\n### END SOLUTION", "line 2 closes a solution block that was never opened"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "line 2 opens a solution block inside"),
])
def test_unbalanced_markers_are_errors(source, message):
    with pytest.raises(ValueError, match=message):
        strip_source(source, where="cell 3")


def _solution_notebook(answer="42"):
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [
        new_markdown_cell("# Lab"),
        new_code_cell(SOLUTION, execution_count=1, outputs=[]),
        new_markdown_cell(f"The answer is {answer}.", metadata={"tags": ["solution"]}),
    ]
    return nb


def test_student_version_blanks_answers_and_drops_outputs():
    nb = student_version(_solution_notebook())
    assert len(nb.cells) == 3
    assert "42" not in nb.cells[2].source and nb.cells[2].source == ANSWER_CELL  # a place to write, not the answer
    assert nb.cells[2].cell_type == "markdown" and nb.cells[2].metadata["tags"] == ["answer"]
    assert "NotImplementedError('Task 1.1')" in nb.cells[1].source
    assert nb.cells[1].execution_count is None and nb.cells[1].outputs == []


def test_student_work_is_never_overwritten(tmp_path):
    sol, stu = tmp_path / "solution.ipynb", tmp_path / "student.ipynb"
    nbformat.write(_solution_notebook(), sol)
    assert write_student_version(sol, stu) == "written"
    assert write_student_version(sol, stu) == "unchanged"

    # The student writes code in their copy; then the solution changes and is re-executed.
    mine = nbformat.read(stu, as_version=4)
    mine.cells[1].source = mine.cells[1].source.replace("raise NotImplementedError('Task 1.1')",
                                                        "dst[i] = src[i]  # my answer")
    nbformat.write(mine, stu)
    before = stu.read_bytes()
    previous = nbformat.read(sol, as_version=4)
    changed = _solution_notebook()
    changed.cells[1].source = "# a new hint\n" + SOLUTION
    nbformat.write(changed, sol)
    assert write_student_version(sol, stu, previous_solution=previous) == "kept"
    assert stu.read_bytes() == before


def test_pristine_student_copy_follows_the_solution(tmp_path):
    sol, stu = tmp_path / "solution.ipynb", tmp_path / "student.ipynb"
    nbformat.write(_solution_notebook(), sol)
    write_student_version(sol, stu)
    previous = nbformat.read(sol, as_version=4)
    changed = _solution_notebook()
    changed.cells[1].source = "# a new hint\n" + SOLUTION
    nbformat.write(changed, sol)
    assert write_student_version(sol, stu, previous_solution=previous) == "written"
    assert "# a new hint" in nbformat.read(stu, as_version=4).cells[1].source


def test_untouched_copy_follows_an_edited_solution_without_knowing_the_old_one(tmp_path):
    # The author edits the solution's source in place, then executes it: the on-disk "previous" solution is
    # already the edited one. The stamp still tells an untouched student copy from a student's work.
    sol, stu = tmp_path / "solution.ipynb", tmp_path / "student.ipynb"
    nbformat.write(_solution_notebook(), sol)
    write_student_version(sol, stu)
    edited = _solution_notebook()
    edited.cells[1].source = "# a new hint\n" + SOLUTION
    nbformat.write(edited, sol)
    assert write_student_version(sol, stu, previous_solution=edited) == "written"
    # Running one cell (an execution count appears) is enough to make the copy the student's.
    mine = nbformat.read(stu, as_version=4)
    mine.cells[1].execution_count = 1
    nbformat.write(mine, stu)
    edited.cells[1].source = "# another hint\n" + SOLUTION
    nbformat.write(edited, sol)
    assert write_student_version(sol, stu, previous_solution=edited) == "kept"
    assert nbformat.read(stu, as_version=4).cells[1].execution_count == 1


@pytest.mark.parametrize("tag", ["answer-key", "solution"])
def test_answer_key_cells_never_reach_the_student(tag):
    nb = _solution_notebook()
    nb.cells[2].metadata["tags"] = [tag]
    student = student_version(nb)
    assert "The answer is" not in nbformat.writes(student)
    assert student.cells[2].source == ANSWER_CELL and student.cells[2].metadata["tags"] == ["answer"]
