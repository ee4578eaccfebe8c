"""The grader's static review of a submitted lab notebook: library bypasses and code a person should look at.

It reads the source text of the notebook's code cells in the grader's own process and never runs any of it.
Two kinds of result:

- **bypass** (costs a task its points): a task's code, with every helper, class and module-level value it
  reaches by name, uses the library's own answer (``Task.forbidden`` by object identity, so a re-export under
  another name counts; any function or class of ``Task.forbidden_modules``; any attribute named in
  ``Task.forbidden_attributes``), or a task that must write a CUDA kernel defines none.
- **suspicious** (a REVIEW flag; points unchanged): dynamic lookups that static reading cannot follow
  (``getattr`` with a computed name, ``importlib``, ``sys.modules``, ``vars``, ``exec``), reaching into
  frames, the interpreter or the IPython shell, processes and signals, and rebinding anything inside an
  imported module (``np.array_equal = ...``).

Names are resolved with the notebook's state just before the task's autograded cell (the instructor cell that
names the task's grade_id), as they are at run time; a binding made inside ``if``/``try``/``for`` adds to what
a name may be rather than replacing it. To resolve a dotted name to an object the grader imports only modules
under :data:`ROOTS`, never a module a student named anywhere else.

>>> from types import SimpleNamespace as Task
>>> t = Task(grade_id="t1", functions=("half",), forbidden=("math.floor",), forbidden_modules=(),
...          forbidden_attributes=(), requires_kernel=False)
>>> cells = [(0, "import math\\nfloor = math.floor", True), (1, "def half(x):\\n    return floor(x / 2)", True)]
>>> r = review(cells, [t])
>>> [(f.cell, f.line, f.why) for f in r.bypass["t1"]]
[(1, 2, "calls floor (math.floor), the library's own answer")]
"""

from __future__ import annotations

from scaledl.course.review.bypass import _review_task
from scaledl.course.review.findings import Finding, Review, _finding
from scaledl.course.review.flags import _ScanWalker
from scaledl.course.review.library import ROOTS
from scaledl.course.review.source import _parse
from scaledl.course.review.walker import _states

__all__ = ["Finding", "Review", "ROOTS", "review"]


# --- the whole review ------------------------------------------------------------------------------------------

def review(cells, tasks) -> Review:
    """Review a notebook's code cells for ``tasks``; nothing is executed.

    Args:
        cells: ``(index, source, is_student)`` for every code cell of the notebook as graded, in order. The
            instructor's cells (``is_student`` False) only teach which names their imports bind.
        tasks: :class:`scaledl.course.tasks.Task` objects (or a dict of them by grade_id).

    Returns:
        A :class:`Review`: per grade_id the findings that cost the task its points, and REVIEW flags.
    """
    tasks = list(tasks.values()) if isinstance(tasks, dict) else list(tasks)
    parsed, sources, result = [], {}, Review()
    flagged = []
    for index, source, student in cells:
        tree, magic = _parse(source)
        lines = source.split("\n")
        sources[index] = lines
        parsed.append((index, tree, lines, student))
        if student:
            flagged += [_finding(lines, index, line, why, None) for line, why in magic]
            if tree is None:
                flagged.append(_finding(lines, index, 1, "does not parse as Python, so it was not reviewed", None))
    states = _states(parsed)
    union: dict = {}
    for state, _ in states:
        for name, bindings in state.items():
            union[name] = union.get(name, frozenset()) | bindings
    scan = _ScanWalker(union, states[-1][1], sources)
    for index, tree, _, student in parsed:
        if student and tree is not None:
            scan.cell = index
            try:
                scan.visit(tree, [])
            except RecursionError:  # hostile nesting must not crash the grader
                flagged.append(_finding(sources[index], index, 1, "nested too deeply to review", None))
    seen = set()
    for f in flagged + scan.findings:  # one flag per line: the first reason found
        if (f.cell, f.line) not in seen:
            seen.add((f.cell, f.line))
            result.suspicious.append(f)
    for task in tasks:
        try:
            found = list(dict.fromkeys(_review_task(task, parsed, states, sources)))
        except RecursionError:
            first = parsed[0][0] if parsed else 0
            result.suspicious.append(_finding(sources.get(first, []), first, 0,
                                              f"{task.title}: its code is nested too deeply to review", None))
            continue
        if found:
            result.bypass[task.grade_id] = sorted(found, key=lambda f: (f.cell, f.line))
    result.suspicious.sort(key=lambda f: (f.cell, f.line))
    result.routes = sorted(dict.fromkeys(scan.routes), key=lambda f: (f.cell, f.line))
    return result
