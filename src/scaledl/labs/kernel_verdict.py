"""Is this kernel right, and which classic bug does it look like: the one decision a lab's check and the grader share.

:func:`kernel_verdict` takes what running a kernel at one size left behind (its outputs from repeated runs into
NaN-poisoned buffers, whether the guard region after the output changed, the message of an IndexError, the
sanitizer's findings as plain ``(kind, message)`` data) with the float64 expected output, the tolerance and the
magnitude bound, and returns a :class:`KernelVerdict`: passed or not, the problems in words, and the hints
(:mod:`scaledl.labs.hints`). :func:`scaledl.labs.check.check_kernel` prints it beside the Yours/Spec table in the
notebook; :func:`scaledl.course.tasks.lab01.judge_kernel_runs` raises it as the task's message in the grader.

A finding of :mod:`scaledl.kernels.sanitizer` fails the kernel even where its values are right (a race the
simulator's scheduling hid). The grader reads findings from the sandbox, beside the student's code, so they are
untrusted: :func:`read_findings` keeps only well-formed ones, each message cut to :data:`MAX_MESSAGE` characters
and at most :data:`MAX_FINDINGS` of them, and says so when what came back was not findings at all. Faking "no
findings" only hides a race; the values are still judged.

The patterns of wrong outputs, read the same way on both sides:

* NaN left in a clean block at the end (whole rows or columns of tiles, or a vector's tail) starting at a multiple
  of a block: the grid is too small (``wrong_grid``); a vector's tail where smaller sizes passed: a grid-stride
  loop is missing (``grid_stride``); NaN anywhere else: ``never_written``.
* Outputs that match one of ``patterns`` (an output a classic bug would give, such as a GEMM without its last,
  partial tile: :func:`gemm_patterns`): that bug's hint.

>>> v = kernel_verdict([np.array([1.0, 2.0])], np.array([1.0, 2.0]), 0.0, findings=[("race", "race on `s[0]`")])
>>> v.passed, v.problems, v.hints[0][:28]
(False, ('race on `s[0]`',), 'two threads touched one elem')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scaledl.labs.hints import hint

MAX_FINDINGS = 20   # findings judged per size; a kernel with more is wrong many times over
MAX_MESSAGE = 600   # characters kept of a finding's message (the sanitizer's are 200-400)
SHOWN_FINDINGS = 1  # findings named in a verdict's problems (the first is the one to fix); the rest counted
KINDS = ("race", "barrier", "uninitialized", "out_of_bounds")  # scaledl.kernels.sanitizer.KINDS (kept in step
#                                                                by tests/unit/test_kernel_verdict.py)
WARP = 32           # threads per block of a 1-D launch are a multiple of a warp
MIN_TILE = 2        # a 2-D block's side is at least this


@dataclass(frozen=True)
class KernelVerdict:
    """What :func:`kernel_verdict` decided for one size.

    ``problems``: each thing wrong, in words (a finding's message, "3 of 15 outputs differ", ...).
    ``hints``: texts of :mod:`scaledl.labs.hints`, most specific first. ``shown``/``bad``: the run to show beside
    the specification and its wrong outputs (None when no run came back)."""

    passed: bool
    problems: tuple[str, ...]
    hints: tuple[str, ...]
    shown: np.ndarray | None = None
    bad: np.ndarray | None = None
    found: int = 0  # how many of ``problems`` (at the start) are the sanitizer's

    @property
    def message(self) -> str:
        return "; ".join(self.problems)

    @property
    def headline(self) -> str:
        """The sanitizer's problems when it found any (they explain the rest), else every problem: what a
        message with little room (the grader's feedback) leads with."""
        return "; ".join(self.problems[:self.found] if self.found else self.problems)


def findings_data(findings) -> list[dict]:
    """A sanitizer report's findings as the plain data the grader's exchange carries: ``{"kind", "message"}``."""
    return [{"kind": str(f.kind), "message": str(f)[:MAX_MESSAGE]} for f in list(findings)[:MAX_FINDINGS]]


def read_findings(data) -> tuple[list[tuple[str, str]], str | None]:
    """Findings from untrusted data: ``(kind, message)`` pairs, and a problem when ``data`` is not findings.

    Accepts None (none came back), a list of ``{"kind": str, "message": str}`` dicts or of ``(kind, message)``
    pairs. Anything else, or an entry of another shape or an unknown kind, is left out and named in the problem,
    so a crafted value costs its sender the check and never crashes the judge.

    >>> read_findings([{"kind": "race", "message": "x" * 700}])[0][0][1] == "x" * MAX_MESSAGE
    True
    >>> read_findings({"kind": "race"})
    ([], 'the sanitizer findings that came back are not a list (a dict)')
    """
    if data is None:
        return [], None
    if isinstance(data, np.ndarray) or not isinstance(data, (list, tuple)):
        return [], f"the sanitizer findings that came back are not a list (a {type(data).__name__})"
    out, malformed = [], 0
    for entry in list(data[:MAX_FINDINGS]):
        if isinstance(entry, dict):
            kind, message = entry.get("kind"), entry.get("message")
        elif isinstance(entry, (list, tuple)) and len(entry) == 2:
            kind, message = entry
        else:
            kind = message = None
        if isinstance(kind, str) and kind in KINDS and isinstance(message, str):
            out.append((kind, message[:MAX_MESSAGE]))
        else:
            malformed += 1
    problem = (f"{malformed} of the sanitizer findings that came back are not {{kind, message}} pairs of a known "
               f"kind" if malformed else None)
    return out, problem


def unwritten_tail(out) -> int | None:
    """Where the never-written (NaN) tail of a 1-D output begins, when the kernel wrote a prefix ``[0, start)``
    and nothing from ``start`` on: the footprint of one element per thread on a grid smaller than the array.
    None for any other pattern (2-D outputs, scattered NaN, nothing missing, nothing written).

    >>> unwritten_tail(np.array([1.0, 2.0, np.nan, np.nan])), unwritten_tail(np.array([1.0, np.nan, 3.0]))
    (2, None)
    """
    out = np.asarray(out)
    if out.ndim != 1 or out.dtype.kind != "f" or out.size == 0:
        return None
    written = ~np.isnan(out)
    start = int(np.argmin(written)) if not written.all() else out.size
    return start if 0 < start < out.size and not written[start:].any() else None


def unwritten_block(out) -> tuple[int, int] | None:
    """``(r0, c0)`` when the never-written (NaN) outputs of a 2-D output are exactly rows ``r0:`` and columns ``c0:``
    (one of them may be the full size): the footprint of a grid short of blocks along y or x. None otherwise.

    >>> C = np.ones((5, 6)); C[4:, :] = np.nan; C[:, 4:] = np.nan
    >>> unwritten_block(C), unwritten_block(np.ones((5, 6)))
    ((4, 4), None)
    """
    out = np.asarray(out)
    if out.ndim != 2 or out.dtype.kind != "f" or out.size == 0:
        return None
    nan = np.isnan(out)
    if not nan.any() or nan.all():
        return None
    r0 = nan.shape[0] - _trailing(nan.all(axis=1))
    c0 = nan.shape[1] - _trailing(nan.all(axis=0))
    expect = np.zeros_like(nan)
    expect[r0:, :] = True
    expect[:, c0:] = True
    return (r0, c0) if np.array_equal(expect, nan) else None


def _trailing(flags) -> int:
    """How many of ``flags`` are True at its end."""
    n = 0
    for f in flags[::-1]:
        if not f:
            break
        n += 1
    return n


def _block_aligned(start: int, block: int) -> bool:
    """``start`` is a positive multiple of ``block`` (a 1-D block is a multiple of a warp, a 2-D side >= 2)."""
    return start > 0 and start % block == 0


def _never_written(got, want_shape, grid_stride: bool) -> tuple[str, str]:
    """What NaN left in ``got`` looks like, and the hint it points to (see the module's docstring)."""
    nan = np.isnan(got)
    count = f"{int(nan.sum())} of {got.size} outputs were never written (still the NaN poured in before the launch)"
    tail = unwritten_tail(got)
    if tail is not None:
        if grid_stride:
            return (f"elements from index {tail} on were never written, while the smaller sizes passed",
                    hint("kernel", "grid_stride"))
        if _block_aligned(tail, WARP):
            return f"elements from index {tail} on were never written", hint("kernel", "wrong_grid")
        return count, hint("kernel", "never_written")
    block = unwritten_block(got)
    if block is not None:
        starts = [(s, axis) for s, axis, n in ((block[0], "rows", want_shape[0]), (block[1], "columns", want_shape[1]))
                  if s < n]
        if all(_block_aligned(s, MIN_TILE) for s, _ in starts):
            where = " and ".join(f"{axis} from {s}" for s, axis in starts)
            return f"{where} on were never written", hint("kernel", "wrong_grid")
    return count, hint("kernel", "never_written")


def kernel_verdict(runs, want, tol, *, bound=None, findings=(), error: str | None = None, guard_hit: bool = False,
                   grid_stride: bool = False, patterns=None, fallback: str | None = None) -> KernelVerdict:
    """Judge one size of a kernel's check.

    Args:
        runs: the outputs of the repeated runs (each of ``want``'s shape; empty when the kernel raised or hung).
        want: the expected output, float64.
        tol: allowed absolute error, scalar or per element.
        bound: the largest |value| any output made from the inputs can have (larger ones: uninitialised reads).
        findings: the sanitizer's findings, ``(kind, message)`` pairs (:func:`read_findings` checks untrusted ones).
        error: the message of an error the launch raised (an IndexError: no bounds guard).
        guard_hit: the guard region after the output changed (a store past its end, on a GPU).
        grid_stride: smaller sizes passed, so a clean never-written tail means a missing grid-stride loop.
        patterns: ``patterns()`` returns ``(hint, output, problem)`` triples: outputs a classic bug gives, called
            only when the values are wrong; the first that ``runs[0]`` matches within ``tol`` adds its words.
        fallback: the hint for wrong values no symptom explains (None: none; a caller adds its own).

    Returns:
        KernelVerdict.
    """
    problems: list[str] = []
    hints: list[str] = []

    def add_hint(text):
        if text and text not in hints:
            hints.append(text)

    findings = list(findings)
    for kind, message in findings[:SHOWN_FINDINGS]:
        problems.append(message)
    if len(findings) > SHOWN_FINDINGS:
        problems.append(f"and {len(findings) - SHOWN_FINDINGS} more defect(s) the sanitizer found")
    found = len(problems)
    for kind, _ in findings:
        add_hint(hint("sanitizer", kind))
    if error is not None:
        problems.append(f"the kernel indexed outside an array: {error}")
        add_hint(hint("kernel", "out_of_bounds"))
    runs = [np.asarray(r) for r in runs]
    if not runs:
        if not problems:
            problems.append("no output came back")
        return KernelVerdict(False, tuple(problems), tuple(hints), found=found)
    want = np.asarray(want, np.float64)
    tol = np.asarray(tol, np.float64)
    got = runs[0]
    if guard_hit:
        problems.append("wrote past the end of the output")
        add_hint(hint("kernel", "past_end"))
    nan = np.isnan(got)
    if nan.any() and any(kind in ("race", "uninitialized") for kind, _ in findings):
        # the sanitizer fills shared memory with NaN: a read of it before it was written shows up as NaN too
        problems.append(f"{int(nan.sum())} of {got.size} outputs NaN (never written, or made from shared memory "
                        "read before it was written)")
    elif nan.any():
        problem, text = _never_written(got, want.shape, grid_stride)
        problems.append(problem)
        add_hint(text)
    other = next((r for r in runs[1:] if not np.array_equal(r, got, equal_nan=True)), None)
    if other is not None:
        problems.append("two identical runs gave different results")
        if not any(kind == "race" for kind, _ in findings):  # the sanitizer's race hint says it, and where
            add_hint(hint("kernel", "race"))
    with np.errstate(invalid="ignore", over="ignore"):
        g64 = got.astype(np.float64)
        if bound is not None:
            impossible = ~nan & ~(np.abs(g64) <= np.asarray(bound, np.float64) + tol)
            if impossible.any():
                problems.append("values the inputs cannot produce")
                add_hint(hint("kernel", "impossible"))
        bad = ~(np.abs(g64 - want) <= tol)
        shown = got
        if not bad.any() and other is not None:  # the first run was right, a later one was not: still a race
            shown = other
            bad = ~(np.abs(other.astype(np.float64) - want) <= tol) | (other != got)
    if bad.any():
        if not nan.any() and patterns is not None:
            for text, output, problem in patterns():
                with np.errstate(invalid="ignore", over="ignore"):
                    if np.all(np.abs(g64 - np.asarray(output, np.float64)) <= tol):
                        problems.append(problem)
                        add_hint(text)
                        break
        wrong = int((bad & ~np.isnan(shown)).sum())  # written but wrong (the NaN are named above)
        if wrong:
            problems.append(f"{wrong} of {bad.size} outputs differ")
        if not hints:
            add_hint(fallback)
    passed = not (findings or error is not None or guard_hit or bad.any())
    return KernelVerdict(passed, tuple(problems), tuple(hints), shown, bad, found)


# --- the outputs classic bugs give -------------------------------------------------------------------------

PATTERN_TILES = tuple(2 ** i for i in range(1, 9))  # tile sides a kernel's K loop may step by (2 to 256)


def gemm_patterns(A, B) -> list[tuple[str, np.ndarray, str]]:
    """The outputs a GEMM without its last, partial tile gives: for each tile side T of :data:`PATTERN_TILES`
    that does not divide K, ``A[:, :K'] @ B[:K', :]`` with ``K' = K - K % T`` (0 when T > K), as
    ``(hint, output, problem)`` triples for :func:`scaledl.labs.kernel_verdict.kernel_verdict`, each K' once.

    >>> [p[2][len("every output is "):] for p in gemm_patterns(np.ones((2, 13)), np.ones((13, 3)))]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['0, as if the tile loop made no trip (K = 13 is less than a tile)',
     'the sum of the first 8 of its K = 13 products only', 'the sum of the first 12 of its K = 13 products only']
    """
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    K = A.shape[1]
    text = hint("kernel", "partial_tile")
    out, seen = [], set()
    for T in reversed(PATTERN_TILES):
        k = K - K % T
        if K % T == 0 or k in seen:
            continue
        seen.add(k)
        problem = (f"every output is the sum of the first {k} of its K = {K} products only" if k
                   else f"every output is 0, as if the tile loop made no trip (K = {K} is less than a tile)")
        out.append((text, A[:, :k] @ B[:k, :], problem))
    return out
