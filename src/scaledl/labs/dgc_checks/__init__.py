"""Lab 06 checks: top-k with error feedback, Deep Gradient Compression, and the compressed exchange.

Each check compares the student's code with an *independent* specification written here in a few lines of
plain NumPy and Python (never with :mod:`scaledl.comm.compression`, which a student might call), prints
``Yours`` beside ``Spec`` on a mismatch, and names the classic bug the mismatch points to:

========================================  ================================================================
what the check sees                        what it most likely means
========================================  ================================================================
top-k picks the largest *signed* values    rank by magnitude ``|v|``: a large negative gradient matters too
top-k differs only where ``|v|`` ties      ties must go to the lower index (a stable sort)
sent + residual > the sum of gradients     the residual was not cleared where it was sent: counted twice
sent + residual < the sum of gradients     what was not sent was dropped (no local accumulation)
values differ, invariant holds             the values sent came from the gradient, not the accumulator
DGC at ratio 1 sends g, not the momentum   no momentum correction: accumulate u = m u + g, not g
DGC at ratio 1 close to, not equal to      the state left float32 or the order differs: ``u *= m; u += g``
momentum SGD
u not zero where sent (masking on)         momentum factor masking is missing
reducer bytes != 8 per sent element        the count is not the encoded message (4 B index + 4 B value)
========================================  ================================================================

An unwritten stub's ``NotImplementedError`` goes through: the notebook's ``with task("Task 1.2"):`` block
(:mod:`scaledl.labs.unanswered`) reports it as "not answered yet" and lets the rest of the lab run.

``tests/unit/test_lab06_checks.py`` proves each row of this table on a deliberately buggy version. The hints are
:mod:`scaledl.labs.hints`' "lab06" ones, decided by :func:`top_k_hint`, :func:`ef_hint` and :func:`dgc_hint`,
which the grader's judges (:mod:`scaledl.course.tasks.lab06`) call on their own inputs too.

>>> import numpy as np
>>> spec_top_k(np.float32([3, -5, 1, 5]), 2).tolist()     # |-5| = |5|: ties to the lower index
[1, 3]
>>> sent, residual = spec_topk_ef([np.float32([1, -4, 2, 0.5])] * 2, 0.5)
>>> [s.tolist() for s in sent], residual.tolist()
([[0.0, -4.0, 2.0, 0.0], [2.0, -4.0, 0.0, 0.0]], [0.0, 0.0, 2.0, 1.0])
"""

from __future__ import annotations

from scaledl.labs.dgc_checks.exchange import check_compressed_training, check_reducer, compression_ratio
from scaledl.labs.dgc_checks.sparsify import (check_dgc, check_error_feedback, check_top_k, dgc_hint, ef_hint,
                                              top_k_cases, top_k_hint)
from scaledl.labs.dgc_checks.spec import spec_dgc, spec_k, spec_topk_ef
from scaledl.labs.top_k_spec import spec_top_k

# Kept under the package's name for the grader's judges (scaledl.course.tasks.lab06) and the tests.
from scaledl.labs.dgc_checks.spec import BYTES_PER_SENT, EF_RATIOS, EF_SIZES, SHOWN, _ef_gradients  # noqa: F401

__all__ = ["spec_top_k", "spec_k", "spec_topk_ef", "spec_dgc", "check_top_k", "check_error_feedback",
           "check_dgc", "check_reducer", "check_compressed_training", "compression_ratio", "top_k_hint", "ef_hint",
           "dgc_hint", "top_k_cases"]
