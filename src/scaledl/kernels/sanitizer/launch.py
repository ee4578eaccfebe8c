"""One watched kernel launch: its arrays, the running block's log and threads, and the findings it makes."""

from __future__ import annotations

import linecache
import os
import re
import threading
from collections import deque

import numpy as np

from scaledl.kernels.sanitizer import analysis
from scaledl.kernels.sanitizer import report as words
from scaledl.kernels.sanitizer.arrays import READ, Root, Watched, watch
from scaledl.kernels.sanitizer.report import Finding, thread_ref, where

_SHARED_NAME = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*\w+(?:\.\w+)*\.shared\.array\s*\(")
_OWN_DIR = os.path.dirname(__file__)


POISON_BYTE = 0x5A  # fills non-float shared memory at each block's start (floats get NaN)


def poison(ary: np.ndarray) -> None:
    """Fill a shared array as a GPU leaves it: garbage, made recognisable (NaN, or bytes of 0x5A)."""
    if ary.dtype.kind in "fc":
        ary.fill(np.nan)
    else:
        ary.view(np.uint8).fill(POISON_BYTE)


def _ndim(dims) -> int:
    """How many of a launch's three dimensions are in use (trailing 1s dropped, at least one)."""
    n = 3
    while n > 1 and dims[n - 1] == 1:
        n -= 1
    return n


class Launch:
    """The bookkeeping of one launch of ``kernel`` (a simulator ``FakeCUDAKernel``) with ``args``.

    ``becomes_array(arg)``: whether the simulator hands ``arg`` to the kernel as a device array (it then
    calls :meth:`wrap_global` once per such argument, in order). ``sim_dir``: the simulator's folder, whose
    frames a barrier's call site skips."""

    def __init__(self, report, kernel, args, becomes_array, sim_dir: str):
        fn = kernel.fn
        self.report = report
        self.name = fn.__name__
        self.code = fn.__code__
        self.ndim_grid, self.ndim_block = _ndim(kernel.grid_dim), _ndim(kernel.block_dim)
        params = self.code.co_varnames[: self.code.co_argcount]
        self._names = deque(p for p, a in zip(params, args) if becomes_array(a))
        self._skip = (sim_dir, _OWN_DIR, threading.__file__, os.path.dirname(np.__file__))  # not the kernel's
        self.slog: list = []  # the running block's shared-memory accesses
        self.glog: list = []  # its global-memory accesses
        self.gblocks: list[list] = []  # global accesses of each finished block
        self.threads: list = []  # the running block's threads
        self.shared: dict = {}  # allocation key -> Watched shared array
        self.shared_lock = threading.Lock()
        self.accesses = 0
        self.progress = 0  # barriers reached and passed, threads finished: what the watchdog sees move
        self.deadlocked: str | None = None  # the watchdog's message, once it stopped the launch

    # ------------------------------------------------------------------------------------------- arrays
    def wrap_global(self, fake, plain):
        """The kernel's view of the simulator array ``fake`` (a ``FakeCUDAArray``): watched; ``plain(fake)``
        (the simulator's own wrapper) for what is not a NumPy array (a record)."""
        name = self._names.popleft() if self._names else "an argument"
        ary = fake._ary
        if not isinstance(ary, np.ndarray) or ary.ndim == 0:
            return plain(fake)
        return watch(ary, Root(name, ary, shared=False), 0, self.glog, self, fake=fake)

    def wrap_shared(self, ary: np.ndarray, frame) -> Watched:
        """A shared array, named after the variable its declaring line assigns it to, and poisoned."""
        poison(ary)
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
        m = _SHARED_NAME.match(text)
        name = m.group(1) if m else f"shared array of {words.short(where(frame.f_code, frame.f_lineno))}"
        return watch(ary, Root(name, ary, shared=True), 0, self.slog, self)

    # ------------------------------------------------------------------------------- blocks and threads
    def begin_block(self) -> None:
        for watched in self.shared.values():  # the simulator keeps a launch's shared arrays from block to block
            poison(watched._ary)
        self.threads = []
        self.slog.clear()
        self.glog.clear()

    def register(self, thread) -> None:
        """A thread of the running block starts (in that thread)."""
        thread._sz_epoch = 0  # barriers passed
        thread._sz_sites = []  # the call site of each barrier reached
        self.threads.append(thread)

    def site(self, frame) -> tuple:
        """Where a barrier was called (or a thread is): ``(path, line)`` of each frame from there up to the
        kernel's own, leaving out the simulator's, the sanitizer's, NumPy's and ``threading``'s."""
        chain = []
        innermost = (frame.f_code.co_filename, frame.f_lineno)
        while frame is not None:
            code = frame.f_code
            if not code.co_filename.startswith(self._skip):
                chain.append((code.co_filename, frame.f_lineno))
                if code is self.code:
                    break
            frame = frame.f_back
        return tuple(chain) or (innermost,)

    def end_block(self, completed: bool) -> None:
        """Check the block that ran (not one an exception cut short: its threads were aborted)."""
        if completed:
            self.accesses += len(self.slog) + len(self.glog)
            threads = sorted(self.threads, key=lambda t: t.thread_id)
            parted = analysis.barrier_divergence(threads)
            if parted is not None:
                self._barrier(*parted)
            analysis.scan(self.slog, self._race, uninitialized=self._uninitialized)
            self.gblocks.append(list(self.glog))
        self.slog.clear()
        self.glog.clear()

    def end(self, completed: bool) -> None:
        """The launch is over: check its global accesses (only of elements something wrote)."""
        if completed:
            written = {(e[0], e[1]) for block in self.gblocks for e in block if e[0].written and e[2] != READ}
            prev: dict = {}
            for block in self.gblocks:
                analysis.scan([e for e in block if e[0].written and (e[0], e[1]) in written], self._race,
                              prev=prev)
        self.report.launches += 1
        self.report.accesses += self.accesses
        self.gblocks = []

    # ------------------------------------------------------------------------------------------ findings
    def _ref(self, t):
        return thread_ref(t, self.ndim_block, self.ndim_grid)

    def _race(self, a, b) -> None:
        if a[2] == READ:  # name the writer first
            a, b = b, a
        root = a[0]
        ends = sorted([(a[5].co_filename, a[6]), (b[5].co_filename, b[6])])  # one finding per pair of lines
        same_block = a[3]._manager is b[3]._manager
        key = ("race", self.name, root.name, root.shared, tuple(ends), same_block)

        def build():
            ep = b[4]
            barrier = None
            if same_block and ep:
                sites = a[3]._sz_sites
                barrier = where(*sites[ep - 1][0]) if len(sites) >= ep else None
            line_a, line_b = where(a[5], a[6]), where(b[5], b[6])
            msg = words.race_message(self.name, root.name, root.index_of(a[1]), self._ref(a[3]), self._ref(b[3]),
                                     a[2], b[2], line_a, line_b, barrier, root.shared)
            return Finding("race", self.name, root.name, root.index_of(a[1]), (self._ref(a[3]), self._ref(b[3])),
                           (line_a, line_b) + ((barrier,) if barrier else ()), msg)

        self.report.add(key, build)

    def _uninitialized(self, e) -> None:
        root = e[0]
        key = ("uninitialized", self.name, root.name, e[5].co_filename, e[6])

        def build():
            line = where(e[5], e[6])
            index = root.index_of(e[1])
            msg = words.uninitialized_message(self.name, root.name, index, self._ref(e[3]), e[2], line)
            return Finding("uninitialized", self.name, root.name, index, (self._ref(e[3]),), (line,), msg)

        self.report.add(key, build)

    def out_of_bounds(self, watched: Watched, bad, op: int, frame) -> None:
        """Called (in the kernel's thread) for an index outside the array; ``bad``: ``(axis, index)``."""
        axis, index = bad
        index = tuple(int(i) if isinstance(i, (int, np.integer)) else i for i in index)
        root = watched._root
        negative = isinstance(index[axis], int) and index[axis] < 0
        key = ("out_of_bounds", self.name, root.name, frame.f_code.co_filename, frame.f_lineno, axis, negative)
        t = threading.current_thread()

        def build():
            line = where(frame.f_code, frame.f_lineno)
            msg = words.out_of_bounds_message(self.name, root.name, index, watched._shape, axis, self._ref(t), op,
                                              line)
            return Finding("out_of_bounds", self.name, root.name, index, (self._ref(t),), (line,), msg)

        self.report.add(key, build)

    def deadlock(self, waiting, running, running_site, stall_s: float) -> None:
        """The watchdog saw ``waiting`` at a barrier and ``running`` (at ``running_site``) get nowhere."""
        site = waiting._sz_sites[-1]
        lines = (where(*site[0]),) + ((where(*running_site[0]),) if running_site else ())
        msg = words.deadlock_message(self.name, self._ref(waiting), self._ref(running), lines[0],
                                     lines[1] if running_site else None, stall_s)
        self.deadlocked = msg
        self.report.add(("deadlock", self.name) + lines,
                        lambda: Finding("barrier", self.name, None, None, (self._ref(waiting), self._ref(running)),
                                        lines, msg))

    def _barrier(self, k, waiting, site, other, other_site) -> None:
        lines = (where(*site[0]),) + ((where(*other_site[0]),) if other_site else ())
        key = ("barrier", self.name) + lines

        def build():
            msg = words.barrier_message(self.name, self._ref(waiting), self._ref(other), k, lines[0],
                                        lines[1] if other_site else None)
            return Finding("barrier", self.name, None, None, (self._ref(waiting), self._ref(other)), lines, msg)

        self.report.add(key, build)
