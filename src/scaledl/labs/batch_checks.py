"""The check of a student's batch-dispatch policy (lab 07): the policy and the book's spec run on the same
arrivals at several loads (:func:`scaledl.serve.hook.run_policy`), batch by batch, and a mismatch is named by
the classic bug behind it (:mod:`scaledl.labs.hints`).

>>> policy_hint(3, True, 5, 3, 0)[:23]
'dispatching while busy:'
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from scaledl.labs.check import CheckResult
from scaledl.labs.hints import hint
from scaledl.serve.hook import run_policy
from scaledl.serve.service import linear

__all__ = ["CASES", "policy_hint", "check_batch_policy"]


@dataclass(frozen=True)
class _Case:
    label: str
    rate: float
    a_s: float
    c_s: float
    max_batch: int


# Light load (most batches of one: a policy that never sends a partial batch stalls here), moderate load,
# and overload where the cap binds on almost every batch (an off-by-one cap shows). Caps are odd on purpose.
CASES = (
    _Case("light load, max_batch=7", 50.0, 0.002, 0.0005, 7),
    _Case("moderate load, max_batch=13", 1000.0, 0.004, 0.0004, 13),
    _Case("overload, max_batch=5", 3000.0, 0.002, 0.0005, 5),
    _Case("max_batch=1 (single)", 300.0, 0.002, 0.0005, 1),
)


def policy_hint(waiting: int, busy: bool, max_batch: int, got, want: int) -> str:
    """The classic Batch Dispatch bug that one wrong answer ``got`` (the spec says ``want``) to
    ``(waiting, busy, max_batch)`` shows: dispatching while busy, a cap exceeded or one short of it, or a partial
    batch held back ("" for another mistake). The grader's judge names the first wrong answer of its table with
    it, in the words :func:`check_batch_policy` uses for the same bug in a simulation
    (:mod:`scaledl.labs.hints`).

    >>> policy_hint(3, True, 5, 3, 0)[:23]
    'dispatching while busy:'
    """
    if not isinstance(got, int) or isinstance(got, bool) or got == want:
        return ""
    if busy and got > 0:
        return hint("lab07", "busy")
    if got > max_batch:
        return hint("lab07", "cap")
    if want == max_batch and got == max_batch - 1:
        return hint("lab07", "cap_short")
    if not busy and waiting > 0 and got == 0:
        return hint("lab07", "partial")
    return ""


def check_batch_policy(next_batch, *, n_requests: int = 20_000, seed: int = 0, report=sys.stdout):
    """Run ``next_batch`` and :func:`batch_dispatch_spec` on the same arrivals at several loads and compare
    their batches one by one; name the classic bug behind a mismatch.

    Returns a :class:`scaledl.labs.check.CheckResult` (``.passed``, ``.raise_if_failed()``).
    """
    from scaledl.serve.policy_specs import batch_dispatch_spec  # here: lab 07's grading run leaves it out

    name = getattr(next_batch, "__name__", "your policy")
    result = CheckResult(name)
    hints = []
    for case in CASES:
        kw = dict(rate=case.rate, service=linear(case.a_s, case.c_s), n_requests=n_requests,
                  max_batch=case.max_batch, seed=seed)
        want = run_policy(batch_dispatch_spec, **kw)
        try:
            got = run_policy(next_batch, **kw)
        except (TypeError, ValueError) as e:
            result.passed = False
            result.lines.append(f"FAIL {case.label}: {type(e).__name__}: {e}")
            continue
        problems = []
        if got.overlapping:
            problems.append(f"{got.overlapping} batches started while another was running")
            hints.append(hint("lab07", "busy"))
        if got.batch_size.size and got.batch_size.max() > case.max_batch:
            problems.append(f"a batch of {got.batch_size.max()} > max_batch={case.max_batch}")
            hints.append(hint("lab07", "cap"))
        if got.unserved:
            problems.append(f"{got.unserved} requests never served")
            hints.append(hint("lab07", "partial"))
        m = min(got.batch_size.size, want.batch_size.size)
        diff = np.flatnonzero(got.batch_size[:m] != want.batch_size[:m])
        first = int(diff[0]) if diff.size else (m if got.batch_size.size != want.batch_size.size else None)
        if first is not None:
            yours = int(got.batch_size[first]) if first < got.batch_size.size else "none"
            spec = int(want.batch_size[first]) if first < want.batch_size.size else "none"
            waiting = np.searchsorted(got.arrival_s, want.batch_start_s[min(first, want.batch_start_s.size - 1)],
                                      side="right") - int(want.batch_size[:first].sum())
            problems.append(f"first different batch is number {first}: Yours: {yours}  Spec: {spec} "
                            f"({waiting} waiting, server free)")
            if got.batch_size.size and got.batch_size.max() == case.max_batch - 1 and \
                    want.batch_size.max() == case.max_batch:
                hints.append(hint("lab07", "cap_short"))
        if problems:
            result.passed = False
            result.lines.append(f"FAIL {case.label}: " + "; ".join(problems))
        else:
            result.lines.append(f"ok   {case.label}: {got.batch_size.size} batches, mean {got.mean_batch:.2f}, "
                                f"p98 {got.percentile_s(98) * 1e3:.2f} ms, identical to the spec")
    result.hints.extend(dict.fromkeys(hints))  # each hint once, in order
    return result.finish(f"{name} on {len(CASES)} loads, {n_requests} requests each", report)
