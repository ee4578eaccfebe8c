"""The watchdog that turns a block stuck at a barrier into a finding instead of a hang.

The simulator releases a barrier when every live thread of the block waits at one, so a thread that
finishes early or waits at another ``syncthreads()`` does not stop it (:mod:`~.analysis` reports those when the
block ends). What does stop it is a thread that neither reaches a barrier nor finishes while others wait: a
loop waiting on a flag that a thread behind the barrier would set. On a GPU that deadlocks too. The watchdog
sees the block make no progress (no barrier reached or passed, no thread finished) for ``stall_s`` seconds
while some thread waits, reports a "barrier" finding naming where each side is, and stops the running
threads by raising :class:`KernelDeadlock` in them (``PyThreadState_SetAsyncExc``), which ends the launch with
that error. It raises again every ``POLL_s`` until they are gone: an exception that arrives while the thread
runs a weakref callback or a ``__del__`` is swallowed there (and kept off standard error here).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import sysconfig
import threading
import time

POLL_s = 0.05  # how often the watchdog looks; small beside any stall worth reporting
_STDLIB = sysconfig.get_paths()["stdlib"]
_PACKAGES = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])


class KernelDeadlock(RuntimeError):
    """A block waited at a barrier that some of its threads never reached (the launch was stopped)."""


@contextlib.contextmanager
def watch_block(launch, stall_s: float):
    """Watch the block that ``launch`` runs inside the ``with`` (from a thread of its own)."""
    stop = threading.Event()
    dog = threading.Thread(target=_watch, args=(launch, stall_s, stop), name="sanitizer watchdog", daemon=True)
    hook = sys.unraisablehook
    dog.start()
    try:
        yield
    finally:
        stop.set()
        dog.join()
        sys.unraisablehook = hook


def _quiet(hook):
    """``sys.unraisablehook`` that drops the KernelDeadlock a callback swallowed (the watchdog raises again)."""
    def unraisable(arg):
        if not isinstance(arg.exc_value, KernelDeadlock):
            hook(arg)
    return unraisable


def _watch(launch, stall_s: float, stop: threading.Event) -> None:
    seen, since = launch.progress, time.monotonic()
    stuck = None
    while not stop.wait(POLL_s):
        if stuck is not None:  # raise again in what still runs: a weakref callback or __del__ swallows it
            _stop_threads([t for t in stuck if t.is_alive()])
            continue
        if launch.progress != seen:
            seen, since = launch.progress, time.monotonic()
            continue
        if time.monotonic() - since < stall_s:
            continue
        threads = [t for t in launch.threads if t.is_alive()]
        waiting = [t for t in threads if t.syncthreads_blocked]
        running = [t for t in threads if not t.syncthreads_blocked]
        if waiting and running:
            frames = sys._current_frames()
            where = _kernel_side(launch.site(frames[running[0].ident])) if running[0].ident in frames else ()
            launch.deadlock(waiting[0], running[0], where, stall_s)
            sys.unraisablehook = _quiet(sys.unraisablehook)  # watch_block puts it back
            stuck = running
            _stop_threads(stuck)


def _kernel_side(site: tuple) -> tuple:
    """A running thread's call site without the standard library's frames on top (caught in a weakref
    callback, say); the kernel's frames are never in it, unless installed among its packages."""
    def stdlib(path: str) -> bool:
        return path.startswith(_STDLIB) and not path.startswith(_PACKAGES)
    return tuple(p for p in site if not stdlib(p[0])) or site


def _stop_threads(threads) -> None:
    """Raise KernelDeadlock in each thread, at its next bytecode (a Python loop takes it at once)."""
    for t in threads:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(KernelDeadlock))
