"""Reading what a graded run left in its folder, without trusting it: the run had write access there, so a file
may be a link out of it (to the instructor's solution, to /etc/shadow), huge, or half written."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat


def plain_file(work: Path, path: Path) -> bool:
    """True when ``path`` is a regular file inside ``work`` reached without a symbolic link.

    The graded notebook ran as the grading user with write access to ``work``: it may have left
    ``run.ipynb -> /home/you/solutions/lab03.ipynb`` for the grader (you) to read into its feedback. Its
    processes are all dead by now, so checking each component with lstat is not racy.
    """
    import stat

    try:
        rel = Path(path).relative_to(work)
    except ValueError:
        return False
    at = Path(work)
    for k, part in enumerate(rel.parts):
        at = at / part
        try:
            mode = os.lstat(at).st_mode
        except OSError:
            return False
        last = k == len(rel.parts) - 1
        if stat.S_ISLNK(mode) or (last and not stat.S_ISREG(mode)) or (not last and not stat.S_ISDIR(mode)):
            return False
    return True


def read_notebook(work: Path, path: Path, max_bytes: int):
    """The notebook at ``path`` if it is a plain file inside ``work`` of at most ``max_bytes``, else None."""
    try:
        if not plain_file(work, path) or path.stat().st_size > max_bytes:
            return None
        return nbformat.read(path, as_version=4)
    except Exception:  # a run killed mid-write leaves half a file: the feedback then shows no cells
        return None
