"""The grader's view of library objects: a dotted name resolved to the object it names, importing only modules
under :data:`ROOTS` (never a module a student named anywhere else), and small questions about such objects
(its prefixes, whether it is code, which module defined it, whether it is ``numba.cuda.jit``)."""

from __future__ import annotations

import importlib
import inspect
import types
import warnings
from functools import lru_cache

ROOTS = ("scaledl", "numpy", "scipy", "ml_dtypes", "numba", "mpi4py", "math")  # the only modules ever imported
NEVER_IMPORTED = {"__main__", "conftest"}  # importing these runs a program (a CLI, a test session)
CUDA_JIT = "numba.cuda.jit"

_MISSING = object()


@lru_cache(maxsize=4096)
def _lookup(path: str):
    """The object ``path`` names, importing only modules under :data:`ROOTS`; ``_MISSING`` when it cannot.

    ``"a.b.c"`` is attribute access from module ``a``, as after ``import a``; ``"a.b:c"`` is attribute ``c`` of
    module ``a.b``, as after ``from a.b import c`` (which differs when a package's function shadows its
    submodule of the same name).
    """
    module, colon, rest = path.partition(":")
    if not colon:
        module, _, rest = path.partition(".")
    if module.split(".")[0] not in ROOTS or any(p in NEVER_IMPORTED for p in path.replace(":", ".").split(".")):
        return _MISSING
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            obj = importlib.import_module(module)
        except Exception:
            return _MISSING
        for part in rest.split(".") if rest else []:
            try:
                obj = getattr(obj, part)
            except Exception:
                if not isinstance(obj, types.ModuleType):
                    return _MISSING
                try:  # a submodule not imported yet, as ``import a.b`` would at run time
                    obj = importlib.import_module(f"{obj.__name__}.{part}")
                except Exception:
                    return _MISSING
    return obj


def _shown(path: str) -> str:
    return path.replace(":", ".")


def _prefixes(path: str) -> list[tuple[str, str]]:
    """(dotted name, lookup key) for every prefix of ``path``, shortest first."""
    module, colon, rest = path.partition(":")
    if not colon:
        parts = path.split(".")
        return [(".".join(parts[:k]),) * 2 for k in range(1, len(parts) + 1)]
    mparts, rparts = module.split("."), rest.split(".") if rest else []
    out = [(".".join(mparts[:k]), ".".join(mparts[:k]) + ":") for k in range(1, len(mparts) + 1)]
    return out + [(f"{module}.{'.'.join(rparts[:k])}", f"{module}:{'.'.join(rparts[:k])}")
                  for k in range(1, len(rparts) + 1)]


def _is_code(obj) -> bool:
    return obj is not _MISSING and not isinstance(obj, types.ModuleType) and \
        (inspect.isroutine(obj) or isinstance(obj, type) or callable(obj))


def _owner(obj) -> str:
    """The module a function or class was defined in (a Numba dispatcher: its Python function's)."""
    obj = getattr(obj, "py_func", obj)
    owner = getattr(obj, "__module__", None)
    return owner if isinstance(owner, str) else ""


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _is_cuda_jit(path: str) -> bool:
    return _shown(path) == CUDA_JIT or (_lookup(path) is not _MISSING and _lookup(path) is _lookup(CUDA_JIT))
