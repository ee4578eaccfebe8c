"""What each graded lab task is, split the way a grader that trusts no student code needs it.

A :class:`Task` has three parts that run in two places:

- ``make_inputs(rng)`` runs in the **grader's** process: fresh sizes, seeds and values for this grading run.
- ``produce(ns, inputs)`` runs in the **student's** kernel, from the lab's hidden-test cell
  (``produce.run("lab03", "task_1_1", globals())``): it calls the student's own functions, found by name in
  ``ns``, on ``inputs`` and returns their results as plain data (arrays, numbers, strings). It computes no
  reference and judges nothing, so patching anything in the kernel gains nothing. It lives apart, in
  :mod:`scaledl.course.produce` (``produce.labNN.PRODUCE``), the one part of the grader the sandbox holds, so
  that no judge and no reference is there to be read.
- ``judge(inputs, outputs)`` runs in the **grader's** process again: it computes the reference itself and
  raises ``AssertionError`` with a "Yours ..., Spec ..." message when a result is wrong. Its input is hostile
  data (any shape, dtype or NaN); whatever it raises costs the task its points and nothing else.

The static part (``functions``, ``forbidden``, ``forbidden_modules``, ``forbidden_attributes``,
``requires_kernel``) is read by
:mod:`scaledl.course.review`, which inspects the submitted source without running it: what the task must be
answered without (the library's own answer), and whether it must launch a CUDA kernel the student wrote.

One module per lab, ``scaledl.course.tasks.labNN``, with ``TASKS = (Task(...), ...)`` in notebook order, each
``produce`` the function of ``scaledl.course.produce.labNN.PRODUCE`` (the same object
:func:`scaledl.course.produce.producer` returns).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from scaledl.course.produce import LABS
from scaledl.course.produce import student  # noqa: F401  (moved to the produce side; judges and tests use it here)


@dataclass(frozen=True)
class Task:
    grade_id: str                      # the nbgrader grade_id of the task's autograded-test cell
    title: str                         # "Task 1.1", as the notebook names it
    functions: tuple[str, ...]         # the student's names that answer it ("e4m3_round", "TopKEF.compress")
    make_inputs: Callable[[np.random.Generator], dict]
    produce: Callable[[dict, dict], dict]
    judge: Callable[[dict, dict], None]
    local_seed: int                    # inputs when the solution notebook runs the cell itself (not grading)
    forbidden: tuple[str, ...] = ()    # dotted names of the library's own answer ("scaledl.numerics.quantize")
    forbidden_modules: tuple[str, ...] = ()  # every function of these modules is the library's own answer
    forbidden_attributes: tuple[str, ...] = ()  # methods that must not be called on anything ("Allreduce")
    requires_kernel: bool = False      # the answer must define and launch a @cuda.jit kernel of its own
    replaced: tuple[str, ...] = ()     # names produce swaps for a reference while it runs (graded on its own):
    #                                    the review does not follow them into this task
    needs: tuple[str, ...] = ()        # modules another task of the lab forbids that this one's graded run
    #                                    needs (a stand-in produce calls, what the answer may use): kept in its
    #                                    view (scaledl.course.view), so it runs in a process of its own


def for_lab(lab: str) -> dict[str, Task]:
    """The tasks of ``lab`` by grade_id, in notebook order.

    Raises:
        ValueError: ``lab`` has no task module.
    """
    if lab not in LABS:
        raise ValueError(f"lab={lab!r}: expected one of {', '.join(LABS)}")
    module = importlib.import_module(f"scaledl.course.tasks.{lab}")
    return {t.grade_id: t for t in module.TASKS}


def get(lab: str, grade_id: str) -> Task:
    """One task. Raises ValueError naming the lab's grade_ids when ``grade_id`` is not one of them."""
    tasks = for_lab(lab)
    if grade_id not in tasks:
        raise ValueError(f"grade_id={grade_id!r}: {lab} has {', '.join(tasks)}")
    return tasks[grade_id]


# --- helpers for judges: hostile outputs give a message, never a crash in the grader -------------------------

def array(outputs: dict, key: str, *, shape=None, dtype=None, title: str = "") -> np.ndarray:
    """``outputs[key]`` as an array of ``shape`` (and ``dtype`` kind, e.g. "f" or "iu"), else AssertionError."""
    if key not in outputs:
        raise AssertionError(f"{title}: no result {key!r} came back (did the function raise?)")
    got = outputs[key]
    if not isinstance(got, np.ndarray):
        try:
            got = np.asarray(got)
        except (ValueError, TypeError, OverflowError):  # a ragged list from the JSON side
            raise AssertionError(f"{title}: {key} is not a rectangular array of numbers") from None
    if got.dtype.hasobject:
        raise AssertionError(f"{title}: {key} is not numeric")
    if shape is not None and got.shape != tuple(shape):
        raise AssertionError(f"{title}: {key} has shape {got.shape}; expected {tuple(shape)}")
    if dtype is not None and got.dtype.kind not in dtype:
        raise AssertionError(f"{title}: {key} has dtype {got.dtype}; expected kind {dtype!r}")
    return got


def number(outputs: dict, key: str, *, title: str = "") -> float:
    """``outputs[key]`` as a finite float, else AssertionError."""
    if key not in outputs:
        raise AssertionError(f"{title}: no result {key!r} came back (did the function raise?)")
    got = outputs[key]
    if isinstance(got, np.ndarray) and got.shape == ():
        got = got.item()
    try:
        ok = not isinstance(got, bool) and isinstance(got, (int, float)) and bool(np.isfinite(float(got)))
    except (OverflowError, TypeError, ValueError):  # 10**400 from the JSON side
        ok = False
    if not ok:
        raise AssertionError(f"{title}: {key} = {str(got)[:60]}; expected a finite number")
    return float(got)


def first_mismatch(got: np.ndarray, want: np.ndarray, bad: np.ndarray, *, title: str, what: str = "values",
                   inputs: np.ndarray | None = None) -> None:
    """Raise AssertionError naming how many of ``bad`` (a boolean mask) differ and the first three."""
    idx = np.flatnonzero(np.asarray(bad).ravel())
    if idx.size == 0:
        return
    show = []
    for i in idx[:3]:
        at = np.unravel_index(i, np.shape(bad))
        x = f"x = {_plain(inputs.ravel()[i])!r}: " if inputs is not None and inputs.size == np.size(bad) else ""
        show.append(f"at {tuple(int(v) for v in at)}: {x}Yours {_plain(got.ravel()[i])!r}, "
                    f"Spec {_plain(want.ravel()[i])!r}")
    raise AssertionError(f"{title}: {idx.size} of {np.size(bad)} {what} differ; " + "; ".join(show))


def _plain(value):
    """A NumPy scalar as the Python number it holds, so messages read 0.0625, not np.float32(0.0625)."""
    return value.item() if isinstance(value, np.generic) else value
