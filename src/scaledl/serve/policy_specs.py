"""The two reference policies of lab 07, as functions ``next_batch(waiting, busy, max_batch)`` that
:func:`scaledl.serve.hook.run_policy` calls (and :mod:`scaledl.serve.hook` gives under their names too): one request
at a time, and Deep Speech 2's Batch Dispatch. They are the lab's Task 1.1 and 1.2 answers, in a module of their
own so that those tasks' grading run leaves them out and keeps the event loop (:mod:`scaledl.course.view`); Task
3.1's run keeps them, as the policy it hands to the student's search.

>>> [batch_dispatch_spec(w, False, 64) for w in (0, 5, 100)], batch_dispatch_spec(5, True, 64)
([0, 5, 64], 0)
"""

from __future__ import annotations

__all__ = ["single_spec", "batch_dispatch_spec"]


def single_spec(waiting: int, busy: bool, max_batch: int) -> int:
    """One request at a time: start the oldest one whenever the server is free."""
    return 0 if busy or waiting == 0 else 1


def batch_dispatch_spec(waiting: int, busy: bool, max_batch: int) -> int:
    """Deep Speech 2's Batch Dispatch: when the server is free, start everything waiting, up to ``max_batch``."""
    return 0 if busy else min(waiting, max_batch)
