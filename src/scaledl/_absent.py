"""Packages that still import when a grading run has left one of their modules out.

``scaledl course grade`` runs a lab's graded functions in a sandbox whose view of the package has the library's
own answers replaced by stubs (:mod:`scaledl.course.view`): importing one raises ``ModuleNotFoundError`` saying
it is left out. A package's ``__init__`` that imports such a module would then fail whole, and take every other
name of the package with it (``from scaledl.numerics import get_format`` would break because ``quantize`` is
out). So a package imports its modules as usual and hands an import that fails that way to :func:`left_out`,
which keeps the error for the names that went missing (the package's ``__getattr__``, :func:`missing`, raises it
on use) and lets every other error through: outside a grading view nothing changes.

>>> err = ModuleNotFoundError(f"scaledl.numerics.quantize {MARK}: Task 1.1 asks for your own code",
...                           name="scaledl.numerics.quantize")
>>> kept = {}
>>> left_out(err, kept)
>>> missing("quantize", "scaledl.numerics", kept)
Traceback (most recent call last):
...
ModuleNotFoundError: scaledl.numerics.quantize is left out of this grading run: Task 1.1 asks for your own code
>>> missing("views", "scaledl.numerics", {**kept, "__path__": []})  # a submodule, not left out: imported as usual
Traceback (most recent call last):
...
AttributeError: module 'scaledl.numerics' has no attribute 'views'
"""

from __future__ import annotations

import importlib.util

MARK = "is left out of this grading run"  # in every stub's message (scaledl.course.view.stub_text)
KEY = "__scaledl_left_out__"


def is_left_out(err: BaseException) -> bool:
    """Whether ``err`` is a grading view's stub refusing to import (not a real missing dependency)."""
    return isinstance(err, ModuleNotFoundError) and MARK in str(err)


def left_out(err: ImportError, namespace: dict) -> None:
    """In a package's ``__init__``: note ``err`` if a grading view left the module out; re-raise it otherwise."""
    if not is_left_out(err):
        raise err
    namespace.setdefault(KEY, []).append(err)


def missing(name: str, package: str, namespace: dict):
    """A package's ``__getattr__``: a name its left-out modules would have given raises their error; any other
    is the usual AttributeError, and so is a submodule not imported yet that is not left out itself:
    ``from scaledl.comm import views`` asks ``hasattr(scaledl.comm, "views")`` first, and imports the submodule
    only on an AttributeError."""
    errors = namespace.get(KEY)
    if errors and not name.startswith("_"):  # hasattr(pkg, "__wrapped__") and the like stay AttributeErrors
        full = f"{package}.{name}"
        err = next((e for e in errors if e.name == full), errors[0])
        if err.name == full or "__path__" not in namespace or importlib.util.find_spec(full) is None:
            raise ModuleNotFoundError(str(err), name=err.name)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
