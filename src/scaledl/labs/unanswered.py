"""Run All through a student's lab: a task not answered yet says so in its own cells, and the rest runs.

A student copy stubs every answer with ``raise NotImplementedError("Task 2.1")`` (:mod:`scaledl.book.student_copy`).
Left bare, the first stub a cell reaches would raise, and JupyterLab's *Run All* would stop there with the error
scrolled out of sight, so later sections that do not depend on the task would never run. The cells that run a
task's answer (its check, a factory call, a plot of its results) therefore sit in a ``with`` block::

    with task("Task 2.1"):
        check_gemm(launch_tiled, sizes=gemm_sizes(TILE), name="tiled").raise_if_failed()

    with task("Task 1.2", needs="Task 1.1"):      # Task 1.2's answer calls Task 1.1's
        check(...)

    with uses("Task 1.3", "Task 1.4"):            # not a task, but it runs their answers
        ...

The block swallows one kind of error only, a stub's ``NotImplementedError``, and prints one line instead of a
traceback: ``Task 2.1 not answered yet: ...``, or ``Task 1.2 needs Task 1.1, which is not answered yet`` when
the stub that stopped it is another task's. A ``uses`` block also explains any other error while a task it
uses is stopped (a ``NameError`` for a name the stopped cell never got to define, an empty result it never
filled in). Everything else (a wrong answer's ``AssertionError``, a typo) goes through unchanged: the student
must see it. In the solution notebook nothing raises, so the blocks print
nothing. Grading does not depend on any of this: the grader calls the student's functions from its own
hidden-test cells, where an unanswered task hands back no result and scores 0.

>>> with task("Task 9.1"):
...     raise NotImplementedError("Task 9.1")
Task 9.1 not answered yet: replace raise NotImplementedError('Task 9.1') with your code, then run the task's cells again.
>>> with task("Task 9.2", needs="Task 9.1"):
...     raise NotImplementedError("Task 9.1")
Task 9.2 needs Task 9.1, which is not answered yet: answer Task 9.1 first, then run this cell again.
>>> with uses("Task 9.1"):
...     print(made_by_task_9_1)
This cell uses Task 9.1, not answered yet: it runs once that is done (name 'made_by_task_9_1' is not defined).
"""

from __future__ import annotations

import re
import sys

__all__ = ["task", "uses", "stopped", "NOT_ANSWERED", "task_cells", "outcomes"]

NOT_ANSWERED = "not answered yet"  # the words every report carries
_TASK = re.compile(r"\bTask \d+\.\d+[a-z]?\b")
_stopped: dict[str, str] = {}  # task -> the stub that stopped its cells last time they ran, in this kernel
# For the lab's "Check before you hand in" cell (scaledl.labs.handin), which runs these cells again:
_cells: dict[str, tuple[str, tuple[str, ...]]] = {}  # each cell that ran a task block: key -> (its source, tasks)
_outcome: dict[str, str] = {}  # task -> "passed", "not answered" or "failed: ..." when its cells last ran
_rerun = [False]  # True while handin runs the cells again: they are not recorded twice


def task_cells() -> list[tuple[str, tuple[str, ...]]]:
    """``(source, tasks)`` of every cell that ran a :func:`task` block in this IPython kernel, in the order they
    first ran (empty outside IPython)."""
    return list(_cells.values())


def outcomes() -> dict[str, str]:
    """Each task's outcome when its cells last ran: ``"passed"``, ``"not answered"`` or ``"failed: ..."``."""
    return dict(_outcome)


def record(title: str, outcome: str) -> None:
    _outcome[title] = outcome


class rerunning:  # noqa: N801  (a context manager used like a function)
    """While task cells run again (:mod:`scaledl.labs.handin`), they are not recorded as new cells."""

    def __enter__(self):
        _rerun[0] = True

    def __exit__(self, *exc):
        _rerun[0] = False
        return False


def _current_cell() -> tuple[str, str] | None:
    """``(key, source)`` of the cell running now: its source from IPython's input history (stored before the cell
    runs), its key the frontend's cell id where the request carries one (JupyterLab's ``cellId``: an edited cell
    replaces its earlier version), else the source itself."""
    ip = sys.modules.get("IPython")
    get = getattr(ip, "get_ipython", None) if ip is not None else None
    shell = get() if get is not None else None
    history = getattr(shell, "user_ns", {}).get("In") if shell is not None else None
    if not history:
        return None
    header = getattr(shell, "parent_header", None) or {}
    cell_id = (header.get("metadata") or {}).get("cellId") if isinstance(header, dict) else None
    return (f"id:{cell_id}" if cell_id else history[-1]), history[-1]


def stopped() -> dict[str, str]:
    """The tasks whose cells stopped at a stub when they last ran in this process, each with that stub's task
    (itself, or a task it needs)."""
    return dict(_stopped)


def _titles(value, what: str) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else tuple(value)
    for t in items:
        if not isinstance(t, str) or not _TASK.fullmatch(t):
            raise ValueError(f"{what}={t!r}: expected a task title such as 'Task 2.1'")
    return items


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _which(tasks) -> str:
    """'Task 1.1 and Task 3.2 (which needs Task 3.1)': the tasks, each with the stub that stopped it if another's."""
    return _and([t if _stopped.get(t, t) == t else f"{t} (which needs {_stopped[t]})" for t in tasks])


class _Block:
    """The context manager behind :func:`task` and :func:`uses`."""

    def __init__(self, own: tuple[str, ...], needs: tuple[str, ...], report):
        self.own, self.needs, self.report = own, needs, report

    def __enter__(self):
        if self.own and not _rerun[0]:
            cell = _current_cell()
            if cell and "check_before_hand_in" not in cell[1]:
                key, source = cell
                before = _cells.get(key, ("", ()))[1] if _cells.get(key, ("",))[0] == source else ()
                _cells[key] = (source, tuple(dict.fromkeys((*before, *self.own))))
        return self

    def _say(self, text: str) -> None:
        print(text, file=self.report if self.report is not None else sys.stdout)

    def __exit__(self, etype, err, tb):
        if etype is None:
            for t in self.own:
                _stopped.pop(t, None)
                _outcome[t] = "passed"
            return False
        if issubclass(etype, NotImplementedError):
            named = _TASK.findall(str(err))
            stub = named[0] if named else (self.own or self.needs)[0]
            detail = f" ({err})" if str(err) and not named else ""
            for t in self.own:
                _stopped[t] = stub
                _outcome[t] = NOT_ANSWERED if stub == t else f"stopped: it needs {stub}, {NOT_ANSWERED}"
            if stub in self.own:
                _stopped[stub] = stub
                also = [t for t in self.needs if t in _stopped]
                self._say(f"{stub} {NOT_ANSWERED}: replace raise NotImplementedError({stub!r}) with your code, then "
                          f"run the task's cells again.{detail}"
                          + (f" It also needs {_which(also)}, not answered yet either." if also else "")
                          + (f" This cell checks {_and(self.own)} together." if len(self.own) > 1 else ""))
            elif self.own:
                self._say(f"{_and(self.own)} needs {stub}, which is {NOT_ANSWERED}: answer {stub} first, then run "
                          f"this cell again.{detail}")
            else:
                self._say(f"This cell uses {stub}, which is {NOT_ANSWERED}: it runs once that is done.{detail}")
            return True
        if issubclass(etype, Exception) and not self.own:
            missing = [t for t in self.needs if t in _stopped]
            if missing:  # a name the stopped cell never defined, or a result it never filled in
                self._say(f"This cell uses {_which(missing)}, {NOT_ANSWERED}: it runs once "
                          f"{'that is' if len(missing) == 1 else 'they are'} done "
                          f"({err if issubclass(etype, NameError) else f'{etype.__name__}: {err}'}).")
                return True
        for t in self.own:  # answered, wrongly or with a bug: the error is the student's to see
            _stopped.pop(t, None)
            first = (str(err).strip().splitlines() or [""])[0]
            _outcome[t] = f"failed: {etype.__name__}: {first[:160]}"
        return False


def task(*titles: str, needs=(), report=None) -> _Block:
    """The cells of one task (or of several checked together): ``with task("Task 2.1"): ...``.

    Args:
        titles: the task's title as the notebook and its stub name it ("Task 2.1").
        needs: titles of earlier tasks whose answers this one calls; named when they stopped too.
        report: where to print (default ``sys.stdout``).

    Raises:
        ValueError: no title, or one that is not of the form "Task N.M".
    """
    if not titles:
        raise ValueError("task() needs the title of the task, e.g. task('Task 2.1')")
    return _Block(_titles(titles, "titles"), _titles(needs, "needs"), report)


def uses(*titles: str, report=None) -> _Block:
    """A cell that belongs to no task but runs the answers of ``titles``: ``with uses("Task 1.4"): ...``.

    Raises:
        ValueError: no title, or one that is not of the form "Task N.M".
    """
    if not titles:
        raise ValueError("uses() needs the titles of the tasks the cell uses, e.g. uses('Task 1.4')")
    return _Block((), _titles(titles, "titles"), report)
