"""The static report of a kernel that is not in the book's table: one a student wrote in a notebook cell.

:func:`report_kernel` takes what ``@cuda.jit`` returned, on either backend (the simulator's kernel and a GPU's
dispatcher both keep the Python function as ``py_func``), and its argument types, and compiles it the way
:mod:`scaledl.kernels.static_report` compiles the book's kernels: in a fresh process with the backend forced to
"cuda" (no GPU needed), Numba's CUDA compiler to PTX, then ``ptxas -v`` and ``nvdisasm`` for one architecture.

The function reaches that process as data, not as source (a notebook cell has no source file to import):

* its bytecode, with ``marshal``: the compile process is this same Python (``sys.executable``), which reads it
  back as it was written, and Numba compiles bytecode, not text;
* the values its closure holds: a factory's ``TILE`` and ``R``, which Numba compiles in as constants;
* the globals it names: modules by name (``cuda``, ``math``, ``np``), and numbers, Numba types (``float32``) and
  device functions (``@cuda.jit(device=True)``, sent the same way, recursively) by value. Anything else (an array,
  an object of the notebook's) raises :class:`KernelNotPortable`, naming it.

>>> KernelNotPortable.__mro__[1].__name__
'ValueError'
"""

from __future__ import annotations

import base64
import builtins
import json
import marshal
import os
import pickle
import subprocess
import sys
import types

from scaledl.kernels import static_report as sr

__all__ = ["KernelNotPortable", "KernelRejected", "report_kernel", "kernel_ptx"]


class KernelNotPortable(ValueError):
    """The kernel names something the compile process cannot be sent (an array, an object of the notebook's)."""


class KernelRejected(RuntimeError):
    """Numba's CUDA compiler rejects the kernel: it runs on the simulator, which never type-checks a kernel, but a
    GPU could not run it."""


_SIMPLE = (int, float, complex, bool, str, bytes, type(None))


def _names(code: types.CodeType) -> set[str]:
    """Every global name the code (and the code nested in it: a generator expression, a lambda) may load."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _value(name: str, value, depth: int) -> list:
    """``[kind, payload]`` for one global or closure value (see the module docstring)."""
    if isinstance(value, types.ModuleType):
        return ["module", "numba.cuda" if value.__name__.startswith("numba.cuda") else value.__name__]
    py_func = getattr(value, "py_func", None)
    device = getattr(value, "_device", False) or getattr(value, "targetoptions", {}).get("device", False)
    if py_func is not None and device:
        if depth > 8:
            raise KernelNotPortable(f"{name}: device functions nested more than 8 deep")
        return ["device", _function(py_func, depth + 1)]
    if isinstance(value, _SIMPLE) or type(value).__module__.startswith("numba.core.types"):
        try:
            return ["value", base64.b64encode(pickle.dumps(value)).decode()]
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            raise KernelNotPortable(f"{name}: {type(value).__name__} could not be sent ({err})") from err
    raise KernelNotPortable(f"{name} is a {type(value).__name__}, which the compile process cannot be sent: the "
                            "report compiles kernels whose globals are modules, numbers, Numba types and device "
                            "functions")


def _function(func: types.FunctionType, depth: int = 0) -> dict:
    """The portable form of a Python function: bytecode, closure values, named globals."""
    if not isinstance(func, types.FunctionType):
        raise KernelNotPortable(f"{func!r} is not a Python function")
    closure = [_value(n, c.cell_contents, depth) for n, c in zip(func.__code__.co_freevars, func.__closure__ or ())]
    found = {}
    for n in sorted(_names(func.__code__)):
        if n in func.__globals__:
            found[n] = _value(n, func.__globals__[n], depth)
        elif not hasattr(builtins, n):
            pass  # an attribute name (cuda.shared.array's "shared", "array"), not a global
    return {"name": func.__name__, "code": base64.b64encode(marshal.dumps(func.__code__)).decode(),
            "closure": closure, "globals": found}


# Run in a fresh process, like static_report's compile (the backend forced to "cuda" before numba.cuda is
# imported); prints one JSON line: {"ptx": ...}, {"missing": ...} (libNVVM) or {"error": ...} (Numba's).
_SCRIPT = r'''
import base64, builtins, importlib, importlib.util, json, marshal, os, pickle, sys, types
''' + sr.COMPILE_PREAMBLE + r'''

def value(kind, payload):
    if kind == "module":
        return importlib.import_module(payload)
    if kind == "device":
        return cuda.jit(device=True)(function(payload))
    return pickle.loads(base64.b64decode(payload))


def function(p):
    g = {"__name__": "scaledl_student_kernel", "__builtins__": builtins}
    g.update({n: value(*v) for n, v in p["globals"].items()})
    cells = tuple(types.CellType(value(*v)) for v in p["closure"])
    return types.FunctionType(marshal.loads(base64.b64decode(p["code"])), g, p["name"], None, cells or None)


payload = json.loads(sys.stdin.read())
try:
    sig = eval("(" + payload["signature"] + ",)", dict(vars(nt)))
    ptx, _ = cuda.compile_ptx(function(payload["function"]), sig, cc=cc)
except Exception as err:
    text = f"{type(err).__name__}: {err}"
    if any(s in text for s in ("DynamicLibNotFound", "libNVVM", "libnvvm", "NVVM")):
        print(json.dumps({"missing": text.splitlines()[0]})); sys.exit(0)
    print(json.dumps({"error": " ".join(text.split())[:1500]})); sys.exit(0)
print(json.dumps({"ptx": ptx}))
'''


def kernel_ptx(kernel, signature: str, cc: tuple[int, int] = (9, 0), timeout_s: float = 300) -> str:
    """PTX of ``kernel`` (what ``@cuda.jit`` returned, on either backend) for argument types ``signature``
    (Numba's, as :mod:`scaledl.kernels.launch_table` writes them: ``"float32[:, ::1], float32[:, ::1]"``).

    Raises:
        KernelNotPortable: the kernel names a global that cannot be sent (see the module docstring).
        KernelRejected: Numba's CUDA compiler rejects it. ToolsMissing: libNVVM cannot be loaded here.
    """
    py_func = getattr(kernel, "py_func", kernel)
    payload = json.dumps({"function": _function(py_func), "signature": signature})
    env = {k: v for k, v in os.environ.items() if k not in ("SCALEDL_BACKEND", "NUMBA_ENABLE_CUDASIM")}
    env["SCALEDL_CC"] = json.dumps(list(cc))
    r = subprocess.run([sys.executable, "-c", _SCRIPT], input=payload, capture_output=True, text=True, env=env,
                       timeout=timeout_s)
    line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"compiling to PTX failed (exit {r.returncode}): {r.stderr[-2000:]}")
    row = json.loads(line)
    if "missing" in row:
        raise sr.ToolsMissing(f"libNVVM, which compiles kernels to PTX, could not be loaded ({row['missing']}); "
                              "pip install 'numba-cuda[cu13]' (in the book's dev extra)")
    if "error" in row:
        raise KernelRejected(row["error"])
    return row["ptx"]


def report_kernel(kernel, signature: str, threads_per_block: int, arch: str = "sm_90", *, name: str | None = None,
                  timeout_s: float = 300) -> sr.KernelReport:
    """The static report (:class:`~scaledl.kernels.static_report.KernelReport`) of ``kernel`` launched with
    ``threads_per_block`` threads, on ``arch``: registers, occupancy, loads by width, bytes in flight, inner loop.

    Raises:
        ValueError: an unknown architecture. KernelNotPortable: as :func:`kernel_ptx` (checked first).
        ToolsMissing: ptxas, nvdisasm or libNVVM is missing here (checked before anything is compiled).
        KernelRejected: as :func:`kernel_ptx`.
    """
    if arch not in sr.ARCHS:
        raise ValueError(f"arch={arch!r} is not supported; expected one of {sorted(sr.ARCHS)}")
    _function(getattr(kernel, "py_func", kernel))  # a kernel that cannot be sent says so wherever it runs
    sr._require_tools()  # and before the compile process, when ptxas or nvdisasm is missing
    ptx = kernel_ptx(kernel, signature, (int(arch[3]), int(arch[4])), timeout_s)
    py_func = getattr(kernel, "py_func", kernel)
    return sr.assemble_ptx(name or getattr(py_func, "__name__", "kernel"), ptx, threads_per_block, arch, timeout_s)
