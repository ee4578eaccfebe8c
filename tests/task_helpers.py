"""What grading does with one task, for the tests of every lab's tasks (tests/unit/test_tasks_labNN.py): the
grader's inputs for a seed and the student's outputs, both handed over as exchange files and read back, and the
judge's verdict on them."""

import re

import numpy as np
import pytest

from scaledl.course import exchange
from scaledl.course.tasks import get


def graded(lab: str, grade_id: str, ns: dict, seed: int = 0):
    """``(task, inputs, outputs)``: the inputs drawn for ``seed`` and ``ns``'s outputs, as the grader reads them."""
    task = get(lab, grade_id)
    inputs = exchange.roundtrip(task.make_inputs(np.random.default_rng(seed)))
    return task, inputs, exchange.roundtrip(task.produce(ns, inputs))


def rejected(task, inputs, outputs, match: str | None = None) -> str:
    """The judge fails ``outputs`` with an AssertionError (nothing else) whose message starts with the task's
    title and, where given, matches ``match`` (a regex, searched across lines); returns the message."""
    with pytest.raises(AssertionError) as err:
        task.judge(inputs, outputs)
    message = str(err.value)
    assert message.startswith(task.title), message
    if match is not None:
        assert re.search(match, message, re.S), f"{match!r} not in: {message}"
    return message
