"""A class of 300: one lab graded by ``scaledl course grade --jobs 2`` without a failure (``make test-scale``).

The batch is lab07, the cheapest lab to grade: 2.9 CPU seconds per solution and 1.4 per untouched student copy
(docs/grading-runs/2026-11-27-throughput.json; lab01 2.8 and 2.3, lab03 3.4 and 2.9, the others 4 to 18). Its
notebook and hidden tests are a queue's event loop in plain Python over some thousands of requests (3,000 per
load for Task 1.1, 20,000 per simulation for Task 3.1): no kernel on the CUDA simulator (lab01, lab02, lab04),
no MPI ranks (lab05), no training (lab04, lab06), and an untouched copy skips every simulation, since each sits
in its task's cell. The 300 notebooks are made with the corpus
helpers (tests/grading/corpus.py): 100 solutions as students hand them in, 80 untouched student copies, and 30
each of four classic bugs, one per task, each with the points it must lose. Every notebook must get exactly
its points and the status OK, the CSV a row each, every student a feedback page, and nothing may be left
running. The seconds per notebook and the submissions per minute are printed.

Slow (300 notebooks took 1,262 s on two cores on 2026-12-02, 8.5 s each, median): skipped unless
``SCALEDL_TEST_SCALE=1``, as ``make test-scale`` sets.
"""

from __future__ import annotations

import csv
import os
import statistics
import time

import nbformat
import pytest

pytestmark = pytest.mark.skipif(os.environ.get("SCALEDL_TEST_SCALE") != "1",
                                reason="the 300-student batch takes about 20 minutes: `make test-scale` runs it")
pytest.importorskip("nbclient")

import corpus  # noqa: E402  (tests/grading is on sys.path: conftest)

from scaledl.course import grade as G  # noqa: E402

LAB = "lab07"
# The class: 300 by default; CI's run sets SCALEDL_CLASS_SIZE=100 (.ci/run), since at 8.5 s a notebook (median,
# two jobs) the 300 take 21 minutes of its 90. A third hand in the solution, a tenth each of the four bugs, the
# rest untouched copies (300: 100, 30 of each bug, 80).
CLASS = int(os.environ.get("SCALEDL_CLASS_SIZE", "300"))
if CLASS < 10:
    raise ValueError(f"SCALEDL_CLASS_SIZE={CLASS}: expected at least 10 notebooks, one of each kind")
SOLUTIONS, PER_BUG = CLASS // 3, CLASS // 10
STUBS = CLASS - SOLUTIONS - 4 * PER_BUG
# name -> (edit of the solution, the tasks it loses)
BUGS = {
    "busy": (("    if busy:\n        return 0\n    return min(waiting, max_batch)",  # dispatches while serving
              "    return min(waiting, max_batch)"), ("task_1_1",)),
    "mm1": (("    return rho * service_s / (2 * (1 - rho))",  # M/M/1's wait for a deterministic service time
             "    return rho * service_s / (1 - rho)"), ("task_1_2",)),
    "steady": (("    return rate * a_s / (1 - rate * c_s)", "    return rate * a_s / (1 + rate * c_s)"), ("task_2_1",)),
    # the SLO read at p90 instead of p98: a near miss, within 1 % of the answer at loose objectives, which Task
    # 3.1's three objectives of 2 to 3 batches catch on every draw (tests/unit/test_tasks_lab07.py)
    "percentile": (("        return r.percentile_s(98) <= slo_s",
                    "        return r.percentile_s(90) <= slo_s"), ("task_3_1",)),
}


def test_a_class_of_300(tmp_path, box):  # of SCALEDL_CLASS_SIZE in CI
    sol, pts = corpus.solution(LAB), corpus.points(LAB)
    full = sum(pts.values())
    subs = tmp_path / "submissions"
    subs.mkdir()
    kinds = ([("solution", corpus.handed_in(sol), ())] * SOLUTIONS
             + [("stub", corpus.student_copy(LAB), tuple(pts))] * STUBS)
    for name, (edit, lost) in BUGS.items():
        kinds += [(name, corpus.handed_in(sol, edit), lost)] * PER_BUG
    assert len(kinds) == CLASS
    expected = {}
    for k, (kind, nb, lost) in enumerate(kinds):
        student = f"s{k:03d}-{kind}"
        nbformat.write(nb, subs / f"{student}.ipynb")
        expected[student] = (full - sum(pts[t] for t in lost), lost)
    out = tmp_path / "out"
    start = time.perf_counter()
    grades = G.grade_folder(subs, LAB, out=out, timeout_s=120, sandbox=box, jobs=2, seed=300)
    wall = time.perf_counter() - start
    by_status = {s: sum(g.status == s for g in grades) for s in G.STATUSES}
    seconds = sorted(g.seconds for g in grades)
    print(f"\n{LAB}: {len(grades)} notebooks in {wall:.0f} s with --jobs 2: {60 * len(grades) / wall:.1f} per minute; "
          f"per notebook median {statistics.median(seconds):.1f} s, max {seconds[-1]:.1f} s; statuses {by_status}; "
          f"load average now {os.getloadavg()[0]:.1f}")
    wrong = [f"{g.student}: {g.total:g} {g.status} {g.detail[:120]}" for g in grades
             if (g.total, g.status) != (expected[g.student][0], "OK")
             or any(g.points[t] for t in expected[g.student][1])]
    assert not wrong, f"{len(wrong)} wrong:\n" + "\n".join(wrong[:20])
    with open(out / "grades.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert sorted(rows) == sorted(expected) and all(float(rows[s]["total"]) == t for s, (t, _) in expected.items())
    assert sorted(p.stem for p in (out / "feedback").glob("*.html")) == sorted(expected)
    assert not (out / "grades.partial.csv").exists()
    from test_hostile import leftover_pids  # the same scan as the hostile corpus's

    assert leftover_pids(box, tmp_path) == [], "processes left behind"
