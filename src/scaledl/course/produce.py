"""The student's side of a hidden test: call their functions on the grader's inputs, hand back the results.

Every lab's autograded-test cell ends with ``produce.run("labNN", "task_x_y", globals())``. Under
``scaledl course grade`` (``SCALEDL_GRADE_DIR`` set by the grader inside the sandbox) it reads the inputs the
grader drew for this run, calls the task's ``produce`` and writes the results for the grader to judge in its own
process: nothing in the kernel decides a grade. Outside grading (the solution notebook run by the book's tests,
or an instructor trying it) it draws the task's fixed local inputs and judges them right here, so the solution
shows ``Task 1.1: hidden tests passed`` or the judge's message.
"""

from __future__ import annotations

import os
from pathlib import Path

GRADE_DIR_VAR = "SCALEDL_GRADE_DIR"


def inputs_path(grade_dir, grade_id: str) -> Path:
    return Path(grade_dir) / "inputs" / grade_id


def outputs_path(grade_dir, grade_id: str) -> Path:
    return Path(grade_dir) / "outputs" / grade_id


def run(lab: str, grade_id: str, namespace: dict) -> None:
    """Produce (and, outside grading, judge) task ``grade_id`` of ``lab`` with the notebook's ``namespace``.

    Raises:
        AssertionError: outside grading, the judge's message when a result is wrong.
        ValueError: an unknown lab or grade_id.
    """
    import numpy as np

    from scaledl.course import exchange, tasks

    task = tasks.get(lab, grade_id)
    grade_dir = os.environ.get(GRADE_DIR_VAR)
    if grade_dir:
        given = exchange.load(inputs_path(grade_dir, grade_id))
        exchange.save(outputs_path(grade_dir, grade_id), task.produce(namespace, given))
        print(f"{task.title}: results handed to the grader")
        return
    given = exchange.roundtrip(task.make_inputs(np.random.default_rng(task.local_seed)))
    task.judge(given, exchange.roundtrip(task.produce(namespace, given)))
    print(f"{task.title}: hidden tests passed")
