"""The student's side of a hidden test: call their functions on the grader's inputs, hand back the results.

Every lab's autograded-test cell ends with ``produce.run("labNN", "task_x_y", globals())``. Under
``scaledl course grade`` (``SCALEDL_GRADE_DIR`` set by the grader inside the sandbox) it reads the inputs the
grader drew for this run, calls the task's produce function and writes the results for the grader to judge in
its own process: nothing in the kernel decides a grade. Outside grading (the solution notebook run by the
book's tests, or an instructor trying it) it draws the task's fixed local inputs and judges them right here, so
the solution shows ``Task 1.1: hidden tests passed`` or the judge's message.

This package is the part of the tasks that runs beside the student's code, and the only part the sandbox holds
(with :mod:`~scaledl.course.exchange` and the runner): one module per lab (``scaledl.course.produce.labNN``,
with ``PRODUCE = {grade_id: produce}`` in notebook order) and :mod:`.mpi_runner`. It imports no module of the
grader (:mod:`scaledl.course.tasks` holds the inputs and the judges, with their references), only
:mod:`scaledl.course.exchange`, and at module level no library module a lab forbids: a produce function that
needs one imports it inside. Only :func:`run`'s local judging, outside grading, reaches the tasks.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

GRADE_DIR_VAR = "SCALEDL_GRADE_DIR"
LABS = ("lab01", "lab02", "lab03", "lab04", "lab05", "lab06", "lab07")


def inputs_path(grade_dir, grade_id: str) -> Path:
    return Path(grade_dir) / "inputs" / grade_id


def outputs_path(grade_dir, grade_id: str) -> Path:
    return Path(grade_dir) / "outputs" / grade_id


def student(ns: dict, name: str):
    """The student's object ``name`` ("f" or "Class.method") from their notebook's namespace, or a clear error."""
    head, *rest = name.split(".")
    if head not in ns:
        raise NameError(f"{name} is not defined: run the cell that defines it")
    obj = ns[head]
    for part in rest:
        obj = getattr(obj, part)
    return obj


def producer(lab: str, grade_id: str):
    """The produce function ``(ns, inputs) -> outputs`` of task ``grade_id`` of ``lab``; imports no judge.

    Raises:
        ValueError: an unknown lab, or a ``grade_id`` the lab does not have (the message names those it has).
    """
    if lab not in LABS:
        raise ValueError(f"lab={lab!r}: expected one of {', '.join(LABS)}")
    table = importlib.import_module(f"scaledl.course.produce.{lab}").PRODUCE
    if grade_id not in table:
        raise ValueError(f"grade_id={grade_id!r}: {lab} has {', '.join(table)}")
    return table[grade_id]


def title(grade_id: str) -> str:
    """The task's title as the notebook names it, from its grade_id (the inverse of
    :func:`scaledl.course.authoring.new_test_cell`'s): "task_2_1b" is "Task 2.1b", "task_3_1_3_2" "Task 3.1-3.2"."""
    parts = grade_id.removeprefix("task_").split("_")
    return "Task " + "-".join(".".join(parts[i:i + 2]) for i in range(0, len(parts), 2))


def run(lab: str, grade_id: str, namespace: dict) -> None:
    """Produce (and, outside grading, judge) task ``grade_id`` of ``lab`` with the notebook's ``namespace``.

    Raises:
        AssertionError: outside grading, the judge's message when a result is wrong.
        ValueError: an unknown lab or grade_id.
    """
    import numpy as np

    from scaledl.course import exchange

    produce = producer(lab, grade_id)
    grade_dir = os.environ.get(GRADE_DIR_VAR)
    if grade_dir:
        given = exchange.load(inputs_path(grade_dir, grade_id))
        exchange.save(outputs_path(grade_dir, grade_id), produce(namespace, given))
        print(f"{title(grade_id)}: results handed to the grader")
        return
    # Outside grading only: the judges are the grader's, absent from the sandbox (pyproject.toml ignores this
    # one import in its acyclic contract: the tasks import their produce functions from here).
    from scaledl.course import tasks

    task = tasks.get(lab, grade_id)
    given = exchange.roundtrip(task.make_inputs(np.random.default_rng(task.local_seed)))
    task.judge(given, exchange.roundtrip(produce(namespace, given)))
    print(f"{task.title}: hidden tests passed")
