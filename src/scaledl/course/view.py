"""What a graded process can import: the installed packages with the library's answers left out.

A task that forbids the library's own answer (``Task.forbidden``, ``Task.forbidden_modules``) is graded in a
process whose view of the installed packages does not hold that answer at all. At the ``bwrap`` level the
sandbox mounts a stub over each such module (a package directory, or one file and its bytecode): the stub's
only statement raises :class:`ModuleNotFoundError` saying why, so ``import``, ``importlib``, ``pickle``'s
``find_class``, ``exec`` of the module's source, ``marshal`` of its bytecode and every other route find nothing to
run, the same way. The static review (:mod:`scaledl.course.review`) stays as what a student reads: which line
used the library's answer.

The same view leaves out the grader's side of ``scaledl.course`` (the tasks' inputs and judges, the review,
the grading code): only the modules that run beside the student's code (:data:`INSIDE`) are there, so an
instructor's own hidden tests are never readable from a notebook.

A forbidden *name* (``scaledl.numerics.quantize``) stands for the module that defines it. A lab's tasks share one
view, all their forbidden modules left out, unless a task names what its graded run needs of them
(``Task.needs``: a stand-in its ``produce`` calls, a module its answer may use): those stay in its view, and tasks
with the same view share one process (:func:`groups`). A package whose ``__init__`` imports a module that is left
out still imports (:func:`scaledl._absent.left_out`), without that module's names.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

# The part of scaledl.course that runs inside the sandbox, beside the student's code: everything else of the
# package (grade, review, tasks with their judges, sandbox, gradescope, ...) is left out of every graded view.
INSIDE = ("__init__.py", "exchange.py", "runner.py", "produce")


@dataclass(frozen=True)
class Group:
    """Tasks graded in one process: the modules absent from its view, and the tasks' grade_ids in order."""

    absent: frozenset[str]
    grade_ids: tuple[str, ...]


def module_of(name: str) -> str:
    """The module that holds ``name`` (a dotted module, function, class or attribute), found by importing it here.

    A function or class stands for the module that defines it (``scaledl.numerics.quantize``, the function, is
    ``scaledl.numerics.quantize``, the module; ``ml_dtypes.float8_e4m3fn``, a type, is ``ml_dtypes``).

    Raises:
        ValueError: nothing of that name can be imported.
    """
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            mod = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        obj = mod
        try:
            for part in parts[k:]:
                obj = getattr(obj, part)
        except AttributeError:
            break
        if inspect.ismodule(obj):
            return obj.__name__
        owner = getattr(obj, "__module__", None)
        return owner if isinstance(owner, str) and owner in sys.modules else mod.__name__
    raise ValueError(f"forbidden name {name!r}: no module of it can be imported here")


def _outermost(modules) -> frozenset[str]:
    """``modules`` without those inside another one of them (``a.b`` goes when ``a`` is there)."""
    mods = set(modules)
    return frozenset(m for m in mods if not any(m.startswith(o + ".") for o in mods))


def own_absent(task) -> frozenset[str]:
    """The modules ``task`` itself forbids (its forbidden names stand for the modules that define them)."""
    return _outermost({module_of(n) for n in task.forbidden} | set(task.forbidden_modules))


def absent_for(task, union: frozenset[str]) -> frozenset[str]:
    """The modules left out of ``task``'s view: the lab's ``union`` of forbidden modules less what the task's run
    ``needs`` (and what holds it: a package above a needed module stays), always with its own forbidden ones.
    A module the task forbids itself that holds a needed one (``scaledl.kernels``, which holds the sanitizer a
    kernel task's ``produce`` runs under) is carved: left out as its other submodules, the package itself and the
    path down to the needed module kept (:func:`carve`).

    Raises:
        ValueError: a task needs a module it forbids, or a package that holds one (the two cannot both hold).
    """
    own = own_absent(task)
    needs = set(getattr(task, "needs", ()))
    clash = {m for m in own for n in needs if n == m or m.startswith(n + ".")}
    if clash:
        raise ValueError(f"{task.grade_id}: needs {sorted(needs)}, which holds {sorted(clash)}, which it forbids")
    keep = {m for m in union - own for n in needs if n == m or n.startswith(m + ".") or m.startswith(n + ".")}
    return frozenset(c for m in _outermost((union - keep) | own) for c in carve(m, needs))


def carve(module: str, needs) -> set[str]:
    """``module`` left out less the ``needs`` inside it: ``{module}`` when none is, else its submodules (found on
    disk) other than the needed ones, and those of the packages on the way down to them, carved the same way.

    Raises:
        ValueError: a needed module is inside a plain module (nothing to carve), or not installed.
    """
    import pkgutil

    inside = [n for n in needs if n.startswith(module + ".")]
    if not inside:
        return {module}
    path, package = _where(module)
    if not package:
        raise ValueError(f"needs {inside} inside {module!r}, which is a module, not a package")
    out: set[str] = set()
    for info in pkgutil.iter_modules([str(path)]):
        sub = f"{module}.{info.name}"
        if sub in inside:
            continue
        out |= carve(sub, inside) if any(n.startswith(sub + ".") for n in inside) else {sub}
    return out


def groups(tasks) -> list[Group]:
    """The lab's tasks in processes: one per distinct view, in the order of each view's first task."""
    tasks = list(tasks.values()) if isinstance(tasks, dict) else list(tasks)
    union = _outermost({module_of(n) for t in tasks for n in t.forbidden} |
                       {m for t in tasks for m in t.forbidden_modules})
    order: dict[frozenset[str], list[str]] = {}
    for t in tasks:
        order.setdefault(absent_for(t, union), []).append(t.grade_id)
    return [Group(a, tuple(g)) for a, g in order.items()]


# --- the stubs ---------------------------------------------------------------------------------------------------

def stub_text(module: str, why: str) -> str:
    return (f'"""Left out of this grading run: {why}"""\n'
            f"raise ModuleNotFoundError({f'{module} is left out of this grading run: {why}'!r}, name={module!r})\n")


def _where(module: str) -> tuple[Path, bool]:
    """The file or package directory of ``module`` here, and whether it is a package."""
    spec = importlib.util.find_spec(module)
    if spec is None or (spec.origin is None and not spec.submodule_search_locations):
        raise ValueError(f"module {module!r} is not installed here")
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0]), True
    return Path(spec.origin), False


def build(absent, dest: Path, *, why) -> list[tuple[Path, Path]]:
    """Stubs for the ``absent`` modules, and the grading side of ``scaledl.course`` left out, under ``dest``.

    Returns ``(stub, target)`` pairs for the sandbox to mount read-only, outermost first: a stub directory over a
    package, a stub file over a module and a filtered copy of its ``__pycache__`` (its own bytecode left out).
    ``why`` is the reason the stub gives, or a function of the module that returns it.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    pairs: list[tuple[Path, Path]] = []
    stems: dict[Path, set[str]] = {}  # __pycache__ folder -> stems of its modules left out
    for i, module in enumerate(sorted(_outermost(absent))):
        target, package = _where(module)
        stub = dest / f"{i:02d}-{module}"
        if package:
            stub.mkdir()
            (stub / "__init__.py").write_text(stub_text(module, why(module) if callable(why) else why))
            pairs.append((stub, target))
            continue
        stub.mkdir()
        (stub / target.name).write_text(stub_text(module, why(module) if callable(why) else why))
        pairs.append((stub / target.name, target))
        stems.setdefault(target.parent / "__pycache__", set()).add(target.stem)
    # One filtered copy per __pycache__, without the bytecode of every module left out of its folder (a mount per
    # module would leave only the last one's filter in force).
    for j, (cache, left) in enumerate(sorted(stems.items())):
        if cache.is_dir():
            kept = dest / f"cache-{j:02d}" / "__pycache__"
            kept.mkdir(parents=True)
            for f in cache.iterdir():
                if f.name.split(".")[0] not in left:
                    shutil.copy2(f, kept / f.name)
            pairs.append((kept, cache))
    course = Path(__file__).resolve().parent
    inside = dest / "course"
    inside.mkdir()
    for name in INSIDE:
        src = course / name
        if src.is_dir():
            shutil.copytree(src, inside / name, copy_function=shutil.copy2)
        elif src.exists():
            shutil.copy2(src, inside / name)
    if (course / "__pycache__").is_dir():
        (inside / "__pycache__").mkdir()
        for f in (course / "__pycache__").iterdir():
            if f.name.split(".")[0] + ".py" in INSIDE:
                shutil.copy2(f, inside / "__pycache__" / f.name)
    pairs.append((inside, course))
    return sorted(pairs, key=lambda p: len(p[1].parts))
