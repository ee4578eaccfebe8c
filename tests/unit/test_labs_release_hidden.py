"""scaledl.book.student_copy drops nbgrader hidden-test regions from the student copy."""

import nbformat
import pytest

from scaledl.book.student_copy import strip_hidden_tests, student_version

TEST_CELL = "# Task 1.1: 2 points\n### BEGIN HIDDEN TESTS\nassert secret()\n### END HIDDEN TESTS\nprint('visible')"


def test_hidden_region_goes_visible_part_stays():
    assert strip_hidden_tests(TEST_CELL) == "# Task 1.1: 2 points\nprint('visible')"
    assert strip_hidden_tests("x = 1\n\n") == "x = 1\n\n"  # cells without a region are left byte for byte


def test_student_version_has_no_hidden_tests():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION Task 1.1\n    return 1\n"
                                          "    ### END SOLUTION"),
                nbformat.v4.new_code_cell(TEST_CELL, metadata={"nbgrader": {"grade": True, "grade_id": "t",
                                                                            "points": 2, "solution": False}})]
    student = student_version(nb)
    assert "secret" not in nbformat.writes(student) and "HIDDEN" not in nbformat.writes(student)
    assert student.cells[1].metadata["nbgrader"]["grade_id"] == "t"  # the grader matches cells by grade_id


@pytest.mark.parametrize("source, match", [
    ("### BEGIN HIDDEN TESTS\nx", "never closed"),
    ("### END HIDDEN TESTS", "never opened"),
    ("### BEGIN HIDDEN TESTS\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS", "inside another"),
])
def test_unbalanced_markers_are_named(source, match):
    with pytest.raises(ValueError, match=f"cell 3: .*{match}"):
        strip_hidden_tests(source, where="cell 3")
