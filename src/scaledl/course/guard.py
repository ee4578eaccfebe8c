"""Hidden tests' guard against a task answered by calling the library's own answer.

A lab task such as "round to E4M3" passes every value check with one line, ``return quantize(x, "e4m3")``,
because the book's package ships the reference. A hidden test therefore also asks :func:`check_own_work`:
it reads the task function's source (IPython keeps every cell's source, so this works in a notebook),
resolves each name and dotted attribute the code mentions through the function's globals and closure, and
fails when one of them *is* a forbidden object (whatever name it was imported under) or lives in a forbidden
module. Helper functions the student wrote themselves are followed, so hiding the call one level down does
not help. Static inspection is used rather than patching the library to raise while the task runs, because a
task may legitimately call other library code that itself uses the forbidden function.

>>> import math
>>> def mine(x):
...     return x * x
>>> def lazy(x):
...     return math.pow(x, 2)
>>> check_own_work(mine, [math.pow], task="Task 0")
>>> check_own_work(lazy, [math.pow], task="Task 0")
Traceback (most recent call last):
...
AssertionError: Task 0: lazy calls math.pow, the library's own answer; write it yourself
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types


def _resolve(chain: list[str], namespace: dict):
    """The object a dotted name (``["np", "linalg", "norm"]``) denotes in ``namespace``, or None."""
    if chain[0] not in namespace:
        obj = getattr(builtins, chain[0], None)
    else:
        obj = namespace[chain[0]]
    for part in chain[1:]:
        if obj is None:
            return None
        try:
            obj = inspect.getattr_static(obj, part) if isinstance(obj, type) else getattr(obj, part, None)
        except AttributeError:
            return None
    return obj


def _chain(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _namespace(func) -> dict:
    ns = dict(getattr(func, "__globals__", {}))
    code, cells = getattr(func, "__code__", None), getattr(func, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, cells):
            try:
                ns[name] = cell.cell_contents
            except ValueError:  # an empty cell: a name assigned later in the enclosing function
                pass
    return ns


def _label(obj) -> str:
    module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", repr(obj))
    return name if isinstance(obj, types.ModuleType) else f"{module}.{name}"


def references(func) -> list[tuple[str, object]]:
    """Every (dotted name, object) the source of ``func`` mentions, resolved through its globals and closure.

    Raises:
        TypeError: ``func`` is not a Python function whose source can be read.
    """
    func = inspect.unwrap(func)  # functools.wraps, lru_cache: the student's own def
    if not isinstance(func, types.FunctionType):
        raise TypeError(f"func={func!r}; expected a Python function (def ...)")
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as err:
        raise TypeError(f"func={func.__name__}: its source cannot be read ({err})") from None
    ns = _namespace(func)
    found = []
    for node in ast.walk(ast.parse(source)):
        chain = _chain(node) if isinstance(node, (ast.Attribute, ast.Name)) else None
        if chain:
            # every prefix: `scaledl.numerics.quantize` mentions the module and the function
            for k in range(len(chain), 0, -1):
                obj = _resolve(chain[:k], ns)
                if obj is not None:
                    found.append((".".join(chain[:k]), obj))
                    break
    return found


def check_own_work(func, forbidden, *, modules: tuple[str, ...] = (), task: str = "this task",
                   _seen=None) -> None:
    """Fail when ``func`` (or a helper it calls that the student wrote) uses a forbidden object.

    Args:
        func: the student's task function.
        forbidden: library functions, classes or modules that compute the task's answer.
        modules: module-name prefixes whose every function is forbidden (e.g. ``"scaledl.kernels"``).
        task: named in the message.

    Raises:
        AssertionError: naming the function, what it uses and the task.
        TypeError: ``func`` is not a function with readable source.
    """
    func = inspect.unwrap(func)
    seen = set() if _seen is None else _seen
    if id(func) in seen:
        return
    seen.add(id(func))
    banned = {id(f) for f in forbidden}
    home = getattr(func, "__module__", None)
    for name, obj in references(func):
        # only code counts against a module: a constant or a format object from the library is fair to use
        code = inspect.isroutine(obj) or isinstance(obj, type)
        owner = obj.__name__ if isinstance(obj, types.ModuleType) else \
            (getattr(obj, "__module__", "") or "") if code else ""
        if id(obj) in banned or any(owner == m or owner.startswith(m + ".") for m in modules):
            label = _label(obj)
            what = name if label.endswith(name) else f"{name} ({label})"
            raise AssertionError(f"{task}: {func.__name__} calls {what}, the library's own answer; "
                                 f"write it yourself")
        if isinstance(obj, types.FunctionType) and obj is not func and obj.__module__ == home:
            try:
                check_own_work(obj, forbidden, modules=modules, task=task, _seen=seen)
            except TypeError:
                pass  # a helper without readable source (defined by exec): nothing more to inspect
