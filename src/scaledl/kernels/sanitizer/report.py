"""What :func:`~scaledl.kernels.sanitizer.sanitize` found: one :class:`Finding` per defect, and the
:class:`Report` that collects them, with the words each kind of defect is explained in.

A defect that many threads repeat (every thread of an off-by-one row, every element of a racy tile) is one
finding, counted: findings are keyed by kind, kernel, array and the source lines involved, and the first
occurrence names the element and the two threads.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace

KINDS = ("race", "barrier", "uninitialized", "out_of_bounds")
MAX_FINDINGS = 200  # distinct findings kept per sanitize(); further ones are counted in Report.dropped


@dataclass(frozen=True)
class ThreadRef:
    """One CUDA thread: its block and thread indices, trimmed to the launch's dimensions."""

    block: tuple[int, ...]
    thread: tuple[int, ...]

    def __str__(self) -> str:
        return f"thread {_dims(self.thread)} of block {_dims(self.block)}"


def _dims(t: tuple[int, ...]) -> str:
    return str(t[0]) if len(t) == 1 else "(" + ",".join(str(i) for i in t) + ")"


def thread_ref(t, ndim_block: int, ndim_grid: int) -> ThreadRef:
    """A simulator thread (``BlockThread``) as a :class:`ThreadRef`."""
    return ThreadRef(tuple(t.blockIdx)[:ndim_grid], tuple(t.threadIdx)[:ndim_block])


@dataclass(frozen=True)
class Finding:
    """One defect.

    ``kind``: "race", "barrier", "uninitialized" or "out_of_bounds". ``array``: the kernel parameter's name
    for a global array, the variable's name for a shared one (None for a barrier). ``index``: the element
    (the first one found; None for a barrier). ``threads``: the thread(s) involved, first the one named first
    in the message. ``lines``: the source lines involved, as ``path:line``. ``count``: how many times the
    checker saw it (elements, thread pairs or blocks)."""

    kind: str
    kernel: str
    array: str | None
    index: tuple | None
    threads: tuple[ThreadRef, ...]
    lines: tuple[str, ...]
    message: str
    count: int = 1

    def __str__(self) -> str:
        more = f" ({self.count} times)" if self.count > 1 else ""
        return f"[{self.kind}] {self.message}{more}"


@dataclass
class Report:
    """Everything one ``with sanitize() as report:`` saw; filled in as each launch ends."""

    findings: list[Finding] = field(default_factory=list)
    launches: int = 0  # kernel launches watched
    accesses: int = 0  # array accesses recorded
    dropped: int = 0  # distinct findings past MAX_FINDINGS, not kept
    _index: dict = field(default_factory=dict, repr=False, compare=False)  # finding key -> place in findings
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}

    def of_kind(self, kind: str) -> list[Finding]:
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not a kind of finding; expected one of {KINDS}")
        return [f for f in self.findings if f.kind == kind]

    def add(self, key, build) -> None:
        """Count the finding ``key``; ``build()`` makes it the first time (messages cost, repeats do not)."""
        with self._lock:
            at = self._index.get(key)
            if at is not None:
                self.findings[at] = replace(self.findings[at], count=self.findings[at].count + 1)
                return
            if len(self.findings) >= MAX_FINDINGS:
                self.dropped += 1
                return
            self._index[key] = len(self.findings)
            self.findings.append(build())

    def __str__(self) -> str:
        if not self.findings:
            return f"no defect found in {self.launches} kernel launch{'es' if self.launches != 1 else ''}"
        lines = [f"{len(self.findings)} defect(s) in {self.launches} kernel launch(es):"]
        lines += [f"  {f}" for f in self.findings]
        if self.dropped:
            lines.append(f"  ... and {self.dropped} more not kept")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ the words
def where(code_or_file, line: int) -> str:
    """``path:line`` of a code object's (or a file's) line."""
    path = getattr(code_or_file, "co_filename", code_or_file)
    return f"{path}:{line}"


def short(path_line: str) -> str:
    """``file.py:12`` from ``/a/b/file.py:12``."""
    path, _, line = path_line.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def element(array: str, index: tuple) -> str:
    return f"`{array}[{', '.join(str(i) for i in index)}]`"


OPS = ("reading", "writing", "updating atomically")


def race_message(kernel, array, index, first, second, op1, op2, line1, line2, barrier, shared) -> str:
    """Why two accesses of one element race, and what fixes it.

    ``first``, ``second``: :class:`ThreadRef`. ``barrier``: the ``path:line`` of the barrier both come after
    (None at the start of the kernel), for threads of one block; threads of two blocks no barrier orders.
    ``shared``: the element is in shared memory (else global)."""
    same_block = first.block == second.block
    who1, who2 = (f"thread {_dims(first.thread)}", f"thread {_dims(second.thread)}") if same_block else (first, second)
    block = f" (block {_dims(first.block)})" if same_block else ""
    head = (f"race on {element(array, index)} in `{kernel}`{block} between {who1} {OPS[op1]} at {short(line1)} "
            f"and {who2} {OPS[op2]} at {short(line2)}")
    atomic = "use `cuda.atomic` for a total that many threads add to, or give each thread elements of its own"
    if not same_block:
        return (f"{head}: threads of different blocks are not ordered within a launch (no barrier spans "
                f"blocks); {atomic}")
    after = f"both after the barrier at {short(barrier)}" if barrier else "both before the first barrier"
    if 2 in (op1, op2):
        return (f"{head}, {after}: an atomic update is ordered only with other atomics; a plain access of the "
                "same element needs a `cuda.syncthreads()` between them")
    if op1 == 1 and op2 == 1:
        return f"{head}, {after}: two threads write one element with no barrier between them; {atomic}"
    write_line, read_line = (line1, line2) if op1 == 1 else (line2, line1)
    if not shared:
        return (f"{head}, {after}: one thread writes what another reads with nothing ordering them; {atomic}, "
                "or put a `cuda.syncthreads()` between them (which orders threads of one block only)")
    if barrier and _file(write_line) == _file(barrier) and _line(write_line) < _line(barrier) < _line(read_line):
        fix = ("a `cuda.syncthreads()` is missing before the next tile overwrites it (at the end of the loop, "
               f"after the read at {short(read_line)})")
    elif write_line == read_line:
        fix = (f"one thread writes what another reads at {short(write_line)} with no barrier between them: in a "
               "loop (a tree), a `cuda.syncthreads()` is missing inside it, after that line; for a total that "
               "many threads add to, use `cuda.atomic.add`")
    elif _line(write_line) < _line(read_line):
        fix = (f"a `cuda.syncthreads()` is missing between the write at {short(write_line)} and the read at "
               f"{short(read_line)}")
    else:
        fix = (f"a `cuda.syncthreads()` is missing between the read at {short(read_line)} and the write at "
               f"{short(write_line)} (or the write comes from a later trip of a loop)")
    return f"{head}, {after}: {fix}"


def _line(path_line: str) -> int:
    return int(path_line.rpartition(":")[2])


def _file(path_line: str) -> str:
    return path_line.rpartition(":")[0]


def uninitialized_message(kernel, array, index, reader, op, line) -> str:
    verb = "updates" if op == 2 else "reads"
    return (f"uninitialized read of {element(array, index)} in `{kernel}`: {reader} {verb} it at "
            f"{short(line)}, but no thread of its block wrote it before; shared memory starts as garbage (the "
            "sanitizer fills it with NaN, or bytes of 0x5A, at each block's start)")


def out_of_bounds_message(kernel, array, index, shape, axis, who, op, line) -> str:
    i, n = index[axis], shape[axis]
    what = "read" if op == 0 else "write" if op == 1 else "atomic update"
    if i < 0:
        why = (f"index {i} on axis {axis} is negative: NumPy (and so the simulator) would silently wrap it to "
               f"{i + n}, a GPU would touch memory before the array")
    else:
        why = f"index {i} on axis {axis} is past the end of the shape {tuple(shape)}"
    return (f"out-of-bounds {what} of {element(array, index)} in `{kernel}` by {who} at {short(line)}: {why}; "
            "guard it (`if i < a.shape[0]`) or fix the bound (the sanitizer did not perform the access)")


def barrier_message(kernel, first, second, k, site1, site2) -> str:
    """``site2`` None: ``second`` had finished when ``first`` waited at barrier ``k`` (0-based)."""
    nth = _ordinal(k + 1)
    if site2 is None:
        diverge = (f"{first} waits at the `cuda.syncthreads()` at {short(site1)} (its {nth} barrier) while "
                   f"{second} has finished after {k} barrier{'s' if k != 1 else ''}")
    else:
        diverge = (f"{first} waits at the `cuda.syncthreads()` at {short(site1)} while {second} waits at the one "
                   f"at {short(site2)} (the {nth} barrier of each)")
    return (f"barrier divergence in `{kernel}`: {diverge}; every thread of a block must reach the same "
            "barriers the same number of times (a barrier inside a branch or a loop whose trip count differs "
            "between threads, or a thread that returns early): on a GPU this hangs or goes wrong, the simulator "
            "lets it through")


def deadlock_message(kernel, waiting, running, site, running_line, stall_s) -> str:
    at = f", still running at {short(running_line)}" if running_line else ""
    return (f"deadlock in `{kernel}`: {waiting} waits at the `cuda.syncthreads()` at {short(site)} while {running} "
            f"has neither reached a barrier nor finished for {stall_s:g} s{at}; a thread that waits for what a "
            "thread behind the barrier would do never gets it (on a GPU this hangs too); the sanitizer stopped the "
            "launch")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
