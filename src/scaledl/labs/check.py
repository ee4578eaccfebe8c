"""Check a student's kernel against its specification, and say which classic bug a failure points to.

:func:`check_kernel` runs the student's launcher at several sizes that are *not* multiples of any block or
tile, on random data, into an output poisoned with NaN, twice per size, and compares with a float64 NumPy
specification. GPU-Puzzles showed the format ("Yours" beside "Spec"); its weakness, checking only sizes that
are multiples of the block, is what the odd sizes fix. The bugs it is built to expose:

=====================================  ===================================================================
what the check sees                     what it most likely means
=====================================  ===================================================================
an IndexError (simulator), or a write   no bounds guard: threads past the edge of the data read or write
beyond the output (GPU guard region)    out of range
NaN left in the output                  some outputs are never written: the grid is too small, or the
                                        guard is too strict
a never-written tail, where smaller     one element per thread on a grid smaller than the array: a
sizes passed                            grid-stride loop is missing
two identical runs disagree             a race: threads read shared memory before (or after) others
                                        wrote it, i.e. a missing ``cuda.syncthreads()``
values no input could produce           uninitialised memory was read: typically a tile used before the
(beyond K max|a| max|b|), inf           ``cuda.syncthreads()`` that ends its loading
right at the smallest size, wrong at    the tile loop: the tile offset (``t * TILE + threadIdx``) or a tile
larger ones                             overwritten before every thread used it (the second syncthreads)
a clean block of NaN at the end         the grid is too small: blocks rounded down, or x and y swapped
(whole tiles, a vector's tail)
every output the sum over whole tiles   the last, partial tile is dropped: ``range(K // TILE)``
of K only (``gemm_patterns``)
a finding of the sanitizer (simulator)  what it says: a race, a barrier some threads miss, a read of shared
                                        memory nobody wrote, an index out of bounds, even where the values
                                        came out right
=====================================  ===================================================================

On the simulator the runs are watched by :func:`scaledl.kernels.sanitizer.sanitize`, which reads every access
of every thread: the findings come first, and a kernel with one fails (a deadlock at a barrier ends the size with
its message instead of hanging). On a GPU the report says in one line that the race checker could not watch.
The decision for each size is :func:`scaledl.labs.kernel_verdict.kernel_verdict`, the grader's too.

The hints are :mod:`scaledl.labs.hints`' "kernel" ones; the grader's judges of the kernel tasks
(:func:`scaledl.course.tasks.lab01.judge_kernel_runs`) name the same symptoms in the same words.

On the simulator every CUDA thread is a Python thread and a thread runs until it blocks at a barrier, so a
missing ``syncthreads`` lets a thread race ahead and read a tile nobody has written yet: the bug is visible
there too (``tests/sim/test_labs_buggy_kernels.py`` proves it for each bug above).

>>> import numpy as np
>>> def yours(x, out): out[:] = 2 * x
>>> r = check_kernel(yours, lambda x: 2 * x.astype(np.float64), lambda n, rng: (rng.random(n, np.float32),),
...                  sizes=[1, 37], name="double", report=None)
>>> r.passed
True
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from scaledl import device
from scaledl.kernels.reference import gemm_tolerance
from scaledl.kernels.sanitizer import KernelDeadlock
from scaledl.labs.hints import hint as _text
from scaledl.labs.kernel_verdict import gemm_patterns, kernel_verdict

FLOAT32_EPS = float(np.finfo(np.float32).eps)
MAX_SHOWN = 5  # mismatching indices printed per size
GUARD_ELEMENTS = 4096  # poisoned elements after the output on a GPU, to catch writes past its end


@dataclass
class CheckResult:
    """What :func:`check_kernel` found. ``passed`` is True when every size matched the specification."""

    name: str
    passed: bool = True
    lines: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    printed: bool = False  # the report was already printed, so an exception need not repeat it
    static: list[str] = field(default_factory=list)  # check_gemm(gpu=...): the kernel's static report, after a pass

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return "\n".join(self.lines + ([""] + [f"Hint: {h}" for h in self.hints] if self.hints else []))

    def finish(self, what: str | None = None, report=None) -> "CheckResult":
        """End the report: a PASSED/FAILED line about ``what`` (if given), then print it to ``report``."""
        if what is not None:
            self.lines.append(f"{'PASSED' if self.passed else 'FAILED'}: {what}")
        if report is not None:
            print(self, file=report)
            self.printed = True
        return self

    def raise_if_failed(self):
        """Raise :class:`CheckFailed` when the check failed (for a grader or a test), with the report unless it
        was printed just above. In a notebook it shows as its one line, not a traceback into this module."""
        if not self.passed:
            if self.printed:
                raise CheckFailed(f"{self.name} did not pass: see the report and the hints above")
            raise CheckFailed(str(self))


class CheckFailed(AssertionError):
    """A lab check failed. IPython shows it as its message alone (``_render_traceback_``): the report printed
    above it says what is wrong, and a traceback into the library would only hide that."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def elementwise_tolerance(ulps: float = 2.0):
    """A tolerance function: ``ulps`` float32 units in the last place of the expected value (for kernels
    that compute each output from a few inputs with one or two roundings: copy, scale, triad)."""
    def tol(inputs, expected):
        return ulps * FLOAT32_EPS * np.abs(expected) + np.finfo(np.float32).tiny
    return tol


def _size_label(size) -> str:
    return "x".join(str(s) for s in size) if isinstance(size, tuple) else str(size)


def _poisoned_output(shape, dtype):
    """NaN-filled output; on a GPU it is the head of a longer device buffer whose tail is the guard."""
    n = int(np.prod(shape))
    if not device.on_gpu():
        return np.full(shape, np.nan, dtype), None
    cuda = device.cuda()
    buf = cuda.to_device(np.full(n + GUARD_ELEMENTS, np.nan, dtype))
    return buf[:n].reshape(shape), buf


def _run_once(yours, inputs, shape, dtype):
    out, buf = _poisoned_output(shape, dtype)
    args = inputs
    if buf is not None:
        cuda = device.cuda()
        args = tuple(cuda.to_device(x) if isinstance(x, np.ndarray) else x for x in inputs)
    yours(*args, out)
    if buf is None:
        return np.asarray(out), False
    full = buf.copy_to_host()
    n = int(np.prod(shape))
    return full[:n].reshape(shape), bool(np.any(~np.isnan(full[n:])))


def _sanitizing(on: bool):
    """``sanitize()`` around a check's launches on the simulator when ``on`` (None elsewhere: a GPU's threads are
    out of Python's sight)."""
    if not on or device.backend() != "simulator":
        return None
    from scaledl.kernels.sanitizer import sanitize

    return sanitize()


def _describe_mismatch(got, want, bad, limit=MAX_SHOWN) -> list[str]:
    idx = np.argwhere(bad)
    lines = [f"    {len(idx)} of {bad.size} outputs differ; the first {min(limit, len(idx))}:",
             f"    {'index':>14}  {'Yours':>14}  {'Spec':>14}"]
    for i in idx[:limit]:
        t = tuple(int(v) for v in i)
        lines.append(f"    {str(t if len(t) > 1 else t[0]):>14}  {got[t]:>14.6g}  {want[t]:>14.6g}")
    return lines


def _run_size(yours, inputs, shape, dtype, repeats, sanitize: bool):
    """``repeats`` poisoned runs, under the sanitizer on the simulator: ``(runs, guard_hit, error, findings)``,
    ``findings`` as ``(kind, message)`` pairs (:func:`scaledl.labs.kernel_verdict.kernel_verdict`'s)."""
    runs, guard_hit, error, found = [], False, None, []
    watch = _sanitizing(sanitize)
    report = None
    try:
        with watch if watch is not None else contextlib.nullcontext() as report:
            for _ in range(repeats):
                got, hit = _run_once(yours, inputs, shape, dtype)
                runs.append(got)
                guard_hit |= hit
    except NotImplementedError:
        raise
    except IndexError as err:
        error = str(err)
    except KernelDeadlock as err:
        runs = []  # the launch was stopped: its outputs are half-written
        if report is None or not report.of_kind("barrier"):
            found.append(("barrier", f"deadlock: a block waited at a cuda.syncthreads() that some of its "
                                     f"threads never reached, and the launch was stopped ({err or 'KernelDeadlock'})"))
    if report is not None:
        found = [(f.kind, str(f)) for f in report.findings] + found  # str: as produce hands them to the grader
    return runs, guard_hit, error, found


def check_kernel(yours: Callable, spec: Callable, make_inputs: Callable, sizes, *, tolerance=None,
                 magnitude_bound: Callable | None = None, repeats: int = 2, seed: int = 0,
                 out_dtype=np.float32, name: str | None = None, fallback: str | None = None,
                 patterns: Callable | None = None, sanitize: bool = True, report=sys.stdout) -> CheckResult:
    """Run ``yours`` at each size and compare it with ``spec``; print a report and return a CheckResult.

    On the simulator every run is watched by :func:`scaledl.kernels.sanitizer.sanitize`: a race, a barrier
    some threads miss, a read of shared memory nobody wrote or an index out of bounds fails the size with the
    sanitizer's message, even where the values came out right. The verdict of each size is
    :func:`scaledl.labs.kernel_verdict.kernel_verdict`, which the grader's judges call too.

    Args:
        yours: ``yours(*inputs, out)`` launches the student's kernel and writes ``out`` (poisoned with NaN
            before every call).
        spec: ``spec(*inputs)`` returns the expected output (compute it in float64).
        make_inputs: ``make_inputs(size, rng)`` returns the tuple of inputs for one size.
        sizes: sizes to try; choose them so that none is a multiple of the block or tile.
        tolerance: ``tolerance(inputs, expected)`` gives the allowed absolute error per element (default:
            2 float32 ulps of the expected value).
        magnitude_bound: ``magnitude_bound(*inputs)`` bounds |output| for any output made from the inputs,
            even misindexed (for GEMM, K max|A| max|B|); values beyond it are reported as reads of
            uninitialised memory.
        repeats: runs per size; outputs that differ between runs reveal a race.
        fallback: the hint for wrong values that no classic symptom explains (default: compare the first
            indices for a transposed index or a wrong stride).
        patterns: ``patterns(*inputs)`` returns ``(hint, output, problem)`` triples, the outputs classic bugs
            give (:func:`gemm_patterns`); a wrong output that matches one gets its hint.
        sanitize: watch the runs with the race checker on the simulator (the default, and what the grader does);
            False checks the symptoms alone, as before the checker (chapter 04 shows what that misses).
        report: where to print (None: print nothing).

    Returns:
        CheckResult, truthy when every size passed.
    """
    if not isinstance(sanitize, bool):
        raise TypeError(f"sanitize must be True or False, got {sanitize!r}")
    watched = sanitize and device.backend() == "simulator"
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes must list at least one size to try")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    tolerance = tolerance or elementwise_tolerance()
    name = name or getattr(yours, "__name__", "your kernel")
    result = CheckResult(name)
    if sanitize and not watched:
        result.lines.append(f"note: kernels run on the {device.backend()!r} backend here, where the race checker "
                            "cannot watch threads; run with SCALEDL_BACKEND=simulator, or use compute-sanitizer")
    rng = np.random.default_rng(seed)
    wrong_sizes = []
    hints: list[str] = []

    for k, size in enumerate(sizes):
        inputs = make_inputs(size, rng)
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        want = np.asarray(spec(*inputs), np.float64)
        label = f"{name} at size {_size_label(size)}"
        runs, guard_hit, error, found = _run_size(yours, inputs, want.shape, out_dtype, repeats, watched)
        tol = np.asarray(tolerance(inputs, want), np.float64)
        bound = None if magnitude_bound is None else np.asarray(magnitude_bound(*inputs), np.float64)
        passed_before = k > 0 and all(s not in wrong_sizes for s in sizes[:k])
        verdict = kernel_verdict(runs, want, tol, bound=bound, findings=found, error=error, guard_hit=guard_hit,
                                 grid_stride=passed_before,
                                 patterns=None if patterns is None else (lambda: patterns(*inputs)))
        hints += [h for h in verdict.hints if h not in hints]
        if verdict.passed:
            result.lines.append(f"ok   {label}")
            continue
        result.passed = False
        wrong_sizes.append(size)
        result.lines.append(f"FAIL {label}: {verdict.message}")
        if verdict.bad is not None and verdict.bad.any():
            result.lines += _describe_mismatch(verdict.shown, want, verdict.bad)
    if wrong_sizes and len(wrong_sizes) < len(sizes) and sizes[0] not in wrong_sizes and not hints:
        hints.append("the smallest size is right but larger ones are wrong: look at what changes with size, e.g. "
                     "the loop over tiles (the tile offset t * TILE + threadIdx, the number of tiles rounded up) or "
                     "a tile overwritten while others still read it (the second cuda.syncthreads()).")
    if wrong_sizes and not hints:
        hints.append(fallback or _text("kernel", "compare"))
    result.hints = hints
    return result.finish(f"{name} on {len(sizes)} sizes {[_size_label(s) for s in sizes]}, {repeats} runs "
                         f"each, outputs poisoned with NaN" + (", under the race checker" if watched else ""), report)


def check_values(yours: Callable, spec: Callable, cases, *, rtol: float = 1e-12, name: str | None = None,
                 hint: str | None = None, report=sys.stdout) -> CheckResult:
    """Compare a plain (non-kernel) function with its specification on a list of argument tuples.

    For counting and modelling tasks (bytes moved, FLOPs, intensity), where the answer is a number: each
    case prints ``ok`` or ``FAIL`` with Yours beside Spec.

    Args:
        yours, spec: called as ``f(*case)``; each returns a number.
        cases: argument tuples to try (include awkward ones: sizes that are not multiples of a tile).
        rtol: allowed relative difference (the default allows only float rounding of the same formula).
        hint: printed on failure, e.g. which term students usually forget.

    >>> r = check_values(lambda n: 2 * n, lambda n: 2 * n, [(1,), (37,)], name="double", report=None)
    >>> r.passed, r.lines[0]
    (True, 'ok   double(1) = 2')
    """
    cases = [c if isinstance(c, tuple) else (c,) for c in cases]
    if not cases:
        raise ValueError("cases must list at least one argument tuple to try")
    if not (isinstance(rtol, (int, float)) and rtol >= 0):
        raise ValueError(f"rtol must be a non-negative number, got {rtol!r}")
    name = name or getattr(yours, "__name__", "your function")
    result = CheckResult(name)
    for case in cases:
        args = ", ".join(repr(a) for a in case)
        want = spec(*case)
        got = yours(*case)
        try:
            ok = got is not None and bool(np.isclose(float(got), float(want), rtol=rtol, atol=0))
        except (TypeError, ValueError):
            ok = False
        if ok:
            result.lines.append(f"ok   {name}({args}) = {got:.6g}")
        else:
            result.passed = False
            result.lines.append(f"FAIL {name}({args}):  Yours: {got!r:>22}  Spec: {float(want):.12g}")
    if not result.passed and hint:
        result.hints.append(hint)
    return result.finish(f"{name} on {len(cases)} cases", report)


# ------------------------------------------------------------------------------------------ GEMM helpers
def gemm_inputs(size, rng):
    """Random float32 A (M x K) and B (K x N) for ``size = (M, N, K)``, uniform in [-1, 1)."""
    M, N, K = size
    return (rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32))


def gemm_spec(A, B):
    return np.asarray(A, np.float64) @ np.asarray(B, np.float64)


def gemm_bound(A, B):
    """K max|A| max|B|: no output built from A's and B's elements, however misindexed, exceeds it, so a
    larger value was made from memory nobody wrote."""
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    return A.shape[1] * np.max(np.abs(A), initial=0) * np.max(np.abs(B), initial=0)


# Odd sizes: none is a multiple of 8, 16 or 32, the first fits in one tile, the others span several in every
# dimension, and M != N != K so swapped dimensions are caught.
GEMM_SIZES = ((5, 3, 7), (19, 13, 23), (37, 29, 41))


def gemm_sizes(block: int) -> tuple[tuple[int, int, int], ...]:
    """Three (M, N, K) check sizes scaled to a kernel's block of ``block x block`` outputs.

    The first is tiny (inside one block once ``block >= 8``); the second spans 3, 3 and 4 blocks along M, N
    and K, the third 5, 4 and 6 (for ``block >= 4``). For an even ``block`` every dimension of the larger
    two is odd, so none is a multiple of any power-of-two tile, and M != N != K catches swapped dimensions.
    Scaling with the block keeps the simulator fast (a 4x4-thread tile needs no 37x29x41 product to span
    several tiles) while a GPU's 64x64 block still gets sizes that cross several of its blocks.

    >>> gemm_sizes(4)
    ((5, 3, 7), (11, 9, 13), (19, 13, 23))
    >>> gemm_sizes(64)[2]
    (259, 193, 323)
    """
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 2:
        raise ValueError(f"block must be an int >= 2 (outputs per block side), got {block!r}")
    b = int(block)
    return (5, 3, 7), (2 * b + 3, 2 * b + 1, 3 * b + 1), (4 * b + 3, 3 * b + 1, 5 * b + 3)


def check_gemm(yours, sizes=GEMM_SIZES, *, gpu=None, **kwargs) -> CheckResult:
    """:func:`check_kernel` for ``yours(A, B, C)`` computing ``C = A @ B`` in float32.

    ``gpu``: a :class:`scaledl.labs.gpu_report.GpuShape` (the kernel built at the GPU's sizes, its threads per
    block): once the check has passed and printed its verdict, it also prints that kernel's static report, what
    it would do on an H100/H200 (registers, warps per SM, loads by width, bytes in flight, FFMA share), compiled
    here without a GPU; one line instead where the tools are missing. It never changes the verdict.
    """
    kwargs.setdefault("name", getattr(yours, "__name__", "gemm"))
    result = check_kernel(yours, gemm_spec, gemm_inputs, sizes,
                          tolerance=lambda inputs, want: gemm_tolerance(*inputs), magnitude_bound=gemm_bound,
                          patterns=gemm_patterns, **kwargs)
    if gpu is not None and result.passed:
        from scaledl.labs.gpu_report import print_static_report

        result.static = print_static_report(gpu, kwargs.get("report", sys.stdout))
    return result
