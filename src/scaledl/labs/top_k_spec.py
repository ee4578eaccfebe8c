"""Lab 06's specification of top-k, in a module of its own: it is Task 1.1's answer, which that task's grading run
leaves out, and the stand-in the grader puts in place of the student's ``top_k`` while it grades Tasks 1.2, 2.1 and
2.2 (:mod:`scaledl.course.produce.lab06`), whose runs keep it and leave the rest of :mod:`scaledl.labs.dgc_checks`
out (which gives this function under its name too).

>>> import numpy as np
>>> spec_top_k(np.float32([3, -5, 1, 5]), 2).tolist()     # |-5| = |5|: ties to the lower index
[1, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["spec_top_k"]


def spec_top_k(v, k: int) -> np.ndarray:
    """Sorted flat indices of the ``k`` largest ``|v|``, ties to the lower index (plain Python sort)."""
    flat = [abs(float(x)) for x in np.asarray(v).ravel()]
    chosen = sorted(range(len(flat)), key=lambda i: (-flat[i], i))[:k]
    return np.array(sorted(chosen), dtype=np.int64)
