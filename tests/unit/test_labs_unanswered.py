"""scaledl.labs.unanswered: a stub's NotImplementedError becomes one line in its own cell, and nothing else is
swallowed. (tests/notebooks/test_student_run_all.py runs every lab's student copy with it.)"""

import io

import pytest

from scaledl.labs import task, uses
from scaledl.labs import unanswered as U


@pytest.fixture(autouse=True)
def fresh_kernel(monkeypatch):
    monkeypatch.setattr(U, "_stopped", {})


def run(block, body):
    out = io.StringIO()
    block.report = out
    with block:
        body()
    return out.getvalue()


def stub(title):
    def f():
        raise NotImplementedError(title)
    return f


def test_the_tasks_own_stub_is_one_line_and_the_cell_goes_on():
    said = run(task("Task 2.1"), stub("Task 2.1"))
    assert said == ("Task 2.1 not answered yet: replace raise NotImplementedError('Task 2.1') with your code, then "
                    "run the task's cells again.\n")
    assert U.stopped() == {"Task 2.1": "Task 2.1"}
    assert run(task("Task 2.1"), lambda: None) == ""  # answered since: nothing to say, and no longer stopped
    assert U.stopped() == {}


def test_a_stub_of_an_earlier_task_is_named_as_what_the_task_needs():
    said = run(task("Task 1.2"), stub("Task 1.1"))
    assert said.startswith("Task 1.2 needs Task 1.1, which is not answered yet: answer Task 1.1 first")
    assert U.stopped() == {"Task 1.2": "Task 1.1"}


def test_declared_needs_that_stopped_too_are_named_with_the_own_stub():
    run(task("Task 1.1"), stub("Task 1.1"))
    said = run(task("Task 1.3", needs=("Task 1.1", "Task 1.2")), stub("Task 1.3"))
    assert said.rstrip().endswith("It also needs Task 1.1, not answered yet either.")  # 1.2 never stopped


def test_one_cell_checking_two_tasks_says_so():
    said = run(task("Task 2.1", "Task 2.2"), stub("Task 2.1"))
    assert "Task 2.1 not answered yet" in said and "This cell checks Task 2.1 and Task 2.2 together." in said
    assert U.stopped() == {"Task 2.1": "Task 2.1", "Task 2.2": "Task 2.1"}


def test_a_stub_message_without_a_title_is_the_cells_own_task_with_the_message():
    said = run(task("Task 2.1"), stub("ring_allreduce_mpi is not written yet"))
    assert said.startswith("Task 2.1 not answered yet") and "(ring_allreduce_mpi is not written yet)" in said


def test_a_wrong_answer_or_a_bug_goes_through_and_the_task_no_longer_counts_as_stopped():
    run(task("Task 2.1"), stub("Task 2.1"))
    with pytest.raises(AssertionError, match="Yours 3, Spec 4"):
        run(task("Task 2.1"), lambda: (_ for _ in ()).throw(AssertionError("Yours 3, Spec 4")))
    assert U.stopped() == {}
    with pytest.raises(NameError):
        run(task("Task 2.1"), lambda: undefined_name)  # noqa: F821  (a typo is the student's to see)


def test_a_cell_that_uses_a_task_explains_what_a_stopped_task_left_undefined():
    assert run(uses("Task 1.4"), stub("Task 1.4")).startswith("This cell uses Task 1.4, which is not answered yet")
    with pytest.raises(NameError):  # nothing stopped: a NameError is a real one
        run(uses("Task 3.2"), lambda: dgc_accuracy)  # noqa: F821
    run(task("Task 3.2"), stub("Task 3.1"))
    said = run(uses("Task 1.2", "Task 3.2"), lambda: dgc_accuracy)  # noqa: F821
    assert said == ("This cell uses Task 3.2 (which needs Task 3.1), not answered yet: it runs once that is done "
                    "(name 'dgc_accuracy' is not defined).\n")
    said = run(uses("Task 3.2"), lambda: max([]))
    assert "(ValueError: max() iterable argument is empty)" in said or "(ValueError: max() arg" in said


@pytest.mark.parametrize("make, match", [
    (lambda: task(), r"task\(\) needs the title"), (lambda: uses(), r"uses\(\) needs the titles"),
    (lambda: task("2.1"), r"titles='2\.1': expected a task title such as 'Task 2\.1'"),
    (lambda: task("Task 2.1", needs=["Task x"]), r"needs='Task x'"),
])
def test_titles_must_look_like_the_notebooks(make, match):
    with pytest.raises(ValueError, match=match):
        make()
