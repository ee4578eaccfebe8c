"""Checking students' lab work: side-by-side comparison with a reference at odd sizes, on random data,
with poisoned outputs, so the classic kernel bugs (no bounds guard, no syncthreads) are caught; the hints the
checks and the grader share (:mod:`scaledl.labs.hints`); and :func:`task` / :func:`uses`, which let a student's
Run All go past a task not answered yet (:mod:`scaledl.labs.unanswered`)."""

from scaledl.labs.unanswered import task, uses

__all__ = ["task", "uses"]
