"""``scaledl course grade``: grade a folder of submitted lab notebooks, trusting none of them.

Each submission goes through the same short pipeline (nbgrader's autograde, with the parts it leaves to trust
done here):

1. **find** one notebook per student (:mod:`~scaledl.course.submissions`: layouts, duplicate uploads);
2. **identify** it as this lab's, else REJECTED (:func:`~scaledl.course.integrity.identify`);
3. **assemble** the notebook to run from the instructor's graded cells (:mod:`~scaledl.course.integrity`);
4. **review** its source statically: the library's own answer used, no kernel written, dynamic lookups
   (:mod:`~scaledl.course.review`);
5. **run** it in a throw-away folder in the sandbox, as the grading user, under time and resource limits
   (:mod:`~scaledl.course.sandbox`, :mod:`~scaledl.course.worker`); its hidden-test cells hand back results
   on inputs drawn here for this run (:mod:`~scaledl.course.produce`);
6. **judge** those results in this process, against references computed here (:mod:`~scaledl.course.tasks`);
7. **report**: a row per student in ``grades.csv`` (status OK, TIMEOUT, CRASHED, REJECTED or REVIEW; each
   task's column named with its maximum, "Task 1.1 (max 3)"; an empty column for the written answers, which an
   instructor grades by hand), a feedback page (:mod:`~scaledl.course.feedback`), ``grades.partial.csv`` as
   the batch goes; cells that would start a spreadsheet formula are escaped (:mod:`~scaledl.course.safe_csv`);
8. **record**, when the folder graded is an nbgrader course's ``submitted/``: the points into its gradebook and
   the feedback pages into its ``feedback/`` (:mod:`~scaledl.course.nbgrader_exchange`).

Nothing a submission does can stop the batch: every step's failure becomes that student's status.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import numpy as np

from scaledl._args import UsageError
from scaledl.course import exchange, integrity, nbgrader_exchange, produce, safe_csv, submissions
from scaledl.course.integrity import meta, test_cells  # noqa: F401  (test_cells: the public name it had here)
from scaledl.course.review.bypass import NO_KERNEL
from scaledl.course.untrusted import read_notebook
from scaledl.course.lab import (STATUSES, UNTOUCHED, Grade, Lab, handed_out, load_lab,  # noqa: F401  (old home)
                                note_untouched, untouched)
from scaledl.course.authoring import mark_answer_cells, new_test_cell  # noqa: F401  (their old home)

MAX_NOTEBOOK_BYTES = 20 << 20  # a lab notebook with outputs is < 2 MB; bigger is not a lab
MESSAGE_CHARS = 1000  # of a judge's message, kept for the feedback page: a race checker's finding runs to ~400 and
#                      the hint naming its fix must fit after it



def kernel_env(inside: Path) -> dict[str, str]:
    """The whole environment of a graded kernel: nothing of the instructor's, everything pointing inside."""
    venv_bin = str(Path(sys.executable).parent)
    return {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(inside / "home"),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONNOUSERSITE": "1",
            # figures are made but not drawn: the feedback page shows an image as a note, so rendering PNGs
            # would only cost time (about a second a lab)
            "MPLBACKEND": "agg", "PYTHONWARNINGS": "ignore:FigureCanvasAgg is non-interactive",
            "MPLCONFIGDIR": str(inside / "home" / ".mpl"),
            "IPYTHONDIR": str(inside / "home" / ".ipython"), "JUPYTER_RUNTIME_DIR": str(inside / "home" / ".run"),
            "JUPYTER_DATA_DIR": str(inside / "home" / ".jupyter"), "NUMBA_CACHE_DIR": str(inside / "home" / ".numba"),
            "SCALEDL_BACKEND": "simulator", "NUMBA_ENABLE_CUDASIM": "1", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "TMPDIR": "/tmp", produce.GRADE_DIR_VAR: str(inside / "grade")}


def _seed(batch_seed: int, student: str, grade_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{student}\0{grade_id}".encode()).digest()
    return np.random.default_rng([batch_seed, int.from_bytes(digest[:8], "little")])


def cell_errors(ran) -> dict[str, str]:
    """grade_id -> the error its test cell showed in the notebook as run (told to the student, never trusted)."""
    found = {}
    for cell in getattr(ran, "cells", []):
        gid = meta(cell).get("grade_id")
        for out in cell.get("outputs", []) if gid else []:
            if out.get("output_type") == "error":
                found[gid] = f"{str(out.get('ename', ''))[:60]}: {str(out.get('evalue', ''))[:200]}"
    return found


def judge(lab: Lab, grade: Grade, inputs: dict, results: dict, bypass: dict, errors=None) -> None:
    """Points per task from the results handed back (``results[grade_id]``), judged here against references
    computed here; a task with no result scores 0 with ``errors[grade_id]`` as the reason; a bypass finding
    costs the task."""
    errors = errors or {}
    for gid, task in lab.tasks.items():
        found = bypass.get(gid, [])
        if gid not in results:  # unanswered: a missing kernel in a stub is no finding, the library's answer is
            found = [f for f in found if f.why != NO_KERNEL]
        if found:  # the library's own answer (or a kernel task without a kernel): no points, and a person looks
            f = found[0]
            grade.points[gid], grade.messages[gid] = 0.0, f"{task.title}: {f.why} (cell {f.cell}, line {f.line})"
            if gid not in results:
                grade.messages[gid] += f"; no result ({errors.get(gid) or 'none came back'})"
            grade.status = "REVIEW"
            grade.details.append(f"cell {f.cell} line {f.line}: {f.why}: {f.code}")
            continue
        if gid not in results:
            why = errors.get(gid) or "no result came back"
            grade.points[gid], grade.messages[gid] = 0.0, f"{task.title}: no result ({why})"
            continue
        try:
            task.judge(inputs[gid], results[gid])
        except Exception as err:  # hostile data: whatever the judge raises costs this task, nothing more
            msg = str(err) if isinstance(err, AssertionError) else f"{task.title}: {type(err).__name__}: {err}"
            grade.points[gid], grade.messages[gid] = 0.0, msg[:MESSAGE_CHARS]
        else:
            grade.points[gid], grade.messages[gid] = lab.points[gid], "passed"


def numba_cache_seed(lab: Lab, folder: Path) -> Path | None:
    """A Numba cache under ``folder`` holding scaledl.nn's compiled kernels, for a lab whose notebook trains with
    scaledl.nn (else None): compiled once per batch, outside the sandbox, by a process with nothing of the
    instructor's environment, and copied into each student's sandbox (``NUMBA_CACHE_DIR``), where the same
    read-only package makes every entry a hit. Without it every student's kernel compiles the same code for
    several CPU-seconds. A failure only costs that time: None."""
    if not any(c.cell_type == "code" and "scaledl.nn" in c.source for c in lab.solution.cells):
        return None
    cache = Path(folder) / "numba-cache"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder), "NUMBA_CACHE_DIR": str(cache),
           "SCALEDL_BACKEND": "simulator", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "LC_ALL": "C.UTF-8"}
    try:
        subprocess.run([sys.executable, "-c", "from scaledl.nn import ops; ops.precompile()"], env=env,
                       cwd=folder, capture_output=True, timeout=300, check=True)
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(cache, ignore_errors=True)
        return None
    return cache if cache.is_dir() else None


def grader_numba_cache() -> Path:
    """Where this grading process's own Numba cache goes: ``$NUMBA_CACHE_DIR`` where it is set, else
    ``$XDG_CACHE_HOME/scaledl/numba`` (``~/.cache``), never the installed package's ``__pycache__``.

    The judges of labs 04 and 06 train with :mod:`scaledl.nn` in the grader's process, whose kernels are cached
    (``cache=True``); without this the first submission wrote compiled files into the grader's virtual environment.
    Kernels of :mod:`scaledl.nn.ops` already imported are pointed at the new place too."""
    where = os.environ.get("NUMBA_CACHE_DIR")
    if not where:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        where = os.environ["NUMBA_CACHE_DIR"] = str(Path(base) / "scaledl" / "numba")
        import numba

        numba.config.reload_config()  # numba read the environment when it was imported
        ops = sys.modules.get("scaledl.nn.ops")
        for kernel in vars(ops).values() if ops is not None else ():
            if callable(getattr(kernel, "enable_caching", None)) and getattr(kernel, "_cache", None) is not None \
                    and type(kernel._cache).__name__ != "NullCache":
                kernel.enable_caching()  # a cache made at import chose its folder then: choose again
    return Path(where)


class Prepared:
    """What a batch computes once: the lab's tasks in groups (one process each, :func:`scaledl.course.view.groups`)
    and, at the bwrap level, each group's view built under ``scratch``."""

    def __init__(self, lab: Lab, sandbox, scratch: Path):
        from scaledl.course import view

        self.groups = view.groups(lab.tasks)
        self.views = None
        if sandbox.level == "bwrap":
            def why(module):
                titles = [t.title for t in lab.tasks.values()  # a carved package's submodule is its package's
                          if any(module == m or module.startswith(m + ".") for m in view.own_absent(t))]
                return (f"{', '.join(titles) or 'this lab'} of {lab.id} must be answered with your own code, so "
                        f"the grader runs your functions where the library's answer is not")

            self.views = {g: view.build(g.absent, Path(scratch) / f"view-{k}", why=why)
                          for k, g in enumerate(self.groups)}


def grade_one(sub, lab: Lab, sandbox, *, timeout_s: float, batch_seed: int, limits=None,
              numba_cache: Path | None = None, prepared: Prepared | None = None):
    """Grade one submission; returns (Grade, notebook as run or None). Never raises for what it holds.

    ``numba_cache``: a cache from :func:`numba_cache_seed`, copied into the sandbox; ``prepared``: the batch's
    :class:`Prepared` (made here when None)."""
    from scaledl.course import graded_run, review as R

    grader_numba_cache()
    g = Grade(sub.student, sub.path, {gid: 0.0 for gid in lab.tasks})
    if sub.others:
        g.details.append("also handed in: " + ", ".join(p.name for p in sub.others) + " (graded the newest)")
    try:
        size = sub.path.stat().st_size
        if size > MAX_NOTEBOOK_BYTES:
            raise UsageError(f"the notebook is {size / 2**20:.1f} MB; a lab notebook with its outputs is under 2 MB, "
                             f"and the grader reads at most {MAX_NOTEBOOK_BYTES / 2**20:.1f} MB: clear its outputs "
                             f"(Edit > Clear Outputs of All Cells), save, and hand it in again")
        submitted = nbformat.read(sub.path, as_version=4)
    except UsageError as err:
        g.status, g.details = "REJECTED", g.details + [str(err)]
        return g, None
    except Exception as err:
        g.status, g.details = "REJECTED", g.details + [f"unreadable notebook: {type(err).__name__}: {str(err)[:200]}"]
        return g, None
    why = integrity.identify(submitted, lab.id, lab.solutions)
    if why:
        g.status, g.details = "REJECTED", g.details + [f"{why}; hand in your {lab.id} notebook"
                                                       + (f" ({lab.file})" if getattr(lab, "file", "") else "")]
        return g, None
    nb, notes = integrity.assemble(submitted, lab.solution)
    g.details += notes
    theirs = {c.get("id"): c.source for c in lab.solution.cells if c.cell_type == "code"}

    def students(c) -> bool:  # an answer, or a cell the student wrote or changed: the lab's own cells are not
        same = c.get("id") in theirs and c.source == theirs[c.get("id")] and not meta(c).get("solution")
        return not (integrity.is_test(c) or meta(c).get("locked") or same)

    started = time.perf_counter()
    found = R.review([(i, c.source, students(c)) for i, c in enumerate(nb.cells) if c.cell_type == "code"],
                     lab.tasks.values())
    g.stages["review"] = round(time.perf_counter() - started, 3)
    from scaledl.course.mounts import scratch

    views_dir = None if prepared is not None else scratch("views")
    try:
        prepared = prepared or Prepared(lab, sandbox, views_dir)
        inputs = {}

        def draw(gid):  # called when the task is served: after every cell of the notebook has run
            inputs[gid] = exchange.roundtrip(lab.tasks[gid].make_inputs(_seed(batch_seed, sub.student, gid)))
            return inputs[gid]

        out = graded_run.run(sandbox, lab, nb, prepared.groups, draw, timeout_s=timeout_s, env_for=kernel_env,
                             limits=limits, numba_cache=numba_cache, views=prepared.views,
                             read_notebook=lambda w, p: read_notebook(w, p, 4 * MAX_NOTEBOOK_BYTES))
    finally:
        if views_dir is not None:
            shutil.rmtree(views_dir, ignore_errors=True)
    if out.status == "timeout":
        g.status = "TIMEOUT"
        g.details.append(f"time limit ({timeout_s:g} s)" + (f" at cell {out.cell}" if out.cell is not None else
                                                           " while the hidden tests ran"))
    elif out.status == "died":
        g.status = "CRASHED"
        said = [ln for ln in out.output.strip().splitlines() if ln.strip() and "WARNING" not in ln]
        g.details.append("the run ended before its hidden tests were done"
                         + (f" (at cell {out.cell})" if out.cell is not None else "")
                         + (f": {said[-1][:200]}" if said else ""))
    g.stages.update(out.stages)
    started = time.perf_counter()
    judge(lab, g, inputs, out.results, found.bypass, out.errors)
    g.stages["judge"] = round(time.perf_counter() - started, 3)
    note_untouched(g, submitted, lab)
    from scaledl.labs.written import unanswered

    g.unwritten = unanswered(submitted, list(lab.answers))
    if g.unwritten and UNTOUCHED not in g.details:  # an untouched notebook says so once
        g.details.append("written answers not answered yet: " + ", ".join(g.unwritten))
    if found.suspicious:  # a person must look, whatever else happened (the detail says what)
        g.details += [f"cell {f.cell} line {f.line}: {f.why}: {f.code}" for f in found.suspicious]
        g.status = "REVIEW"
    handed = {ln.strip() for stub in lab.stubs for ln in stub.splitlines() if ln.strip()}
    routes = [f for f in found.routes if f.code not in handed]  # a line students were given is not theirs
    if prepared.views is None and routes:  # no view here: the library's answers were importable
        g.details += [f"cell {f.cell} line {f.line}: {f.why} (this sandbox level does not leave the library's "
                      f"answers out): {f.code}" for f in routes]
        g.status = "REVIEW"
    return g, out.ran


CSV_HEAD = ["student", "file", "status", "total", "max"]
# The written answers (markdown answer cells, the Questions) are read and graded by the instructor: an empty
# column to fill in. "total" and "max" are the autograded tasks only; a lab's grade is total + written.
WRITTEN_COLUMN = "written (manual; not in total)"


def task_column(lab: Lab, grade_id: str) -> str:
    """A task's column in grades.csv: its title and its maximum, "Task 1.1 (max 3)"."""
    return f"{lab.tasks[grade_id].title} (max {lab.points[grade_id]:g})"


def csv_head(lab: Lab) -> list[str]:
    """grades.csv's header: student, file, status, total, max, one column per task, written, seconds, detail."""
    return CSV_HEAD + [task_column(lab, t) for t in lab.points] + [WRITTEN_COLUMN, "seconds", "detail"]


def _row(g: Grade, lab: Lab, folder: Path) -> list[str]:
    return [g.student, str(g.path.relative_to(folder)), g.status, f"{g.total:g}", f"{lab.maximum:g}",
            *[f"{g.points.get(t, 0):g}" for t in lab.points], "", f"{g.seconds:.1f}", g.detail]


def grade_folder(folder, lab: Lab | str, *, out, timeout_s: float = 300, sandbox="auto", jobs: int = 1,
                 seed: int | None = None, limits=None, progress=None) -> list[Grade]:
    """Grade every student's notebook under ``folder``; write ``out/grades.csv`` and ``out/feedback/``.

    Raises:
        ValueError: a bad folder, time limit, jobs or sandbox mode (before anything runs).
    """
    from scaledl.course import feedback, sandbox as S

    if not timeout_s > 0:
        raise UsageError(f"timeout_s={timeout_s!r}: expected a positive number of seconds per notebook")
    if not (isinstance(jobs, int) and jobs >= 1):
        raise UsageError(f"jobs={jobs!r}: expected a whole number of notebooks to run at once, at least 1")
    lab = load_lab(lab) if isinstance(lab, str) else lab
    box = S.detect(sandbox) if isinstance(sandbox, str) else sandbox
    if sandbox == "auto" and box.level == "none":
        raise UsageError("sandbox='auto': no sandbox works here, so student code would run as you, with your "
                         f"files and environment. {S.INSTALL_HINT} (Linux), or ask for sandbox 'none' "
                         "(--sandbox none) to grade without that protection; see the instructor guide")
    folder, out = Path(folder).resolve(), Path(out).resolve()
    course = nbgrader_exchange.course_of(folder, lab.id)  # an nbgrader course's submitted/: its gradebook too
    subs = submissions.find(folder, assignment=lab.id if course else None)
    if out == folder or folder in out.parents:
        raise UsageError(f"out={str(out)!r}: is inside the submissions folder; expected a folder outside it")
    batch_seed = int.from_bytes(os.urandom(8), "little") if seed is None else int(seed)
    (out / "feedback").mkdir(parents=True, exist_ok=True)
    head = csv_head(lab)
    hidden_sources = [c.source for c in lab.solution.cells if integrity.is_test(c)]
    if progress:
        progress(f"grading {len(subs)} notebook(s) of {lab.id}; sandbox: {box.describe()}")
    from scaledl.course.mounts import scratch as new_scratch, sweep_stale

    sweep_stale()  # what a grader killed from outside left behind
    scratch = new_scratch("batch")

    def one(sub):
        start = time.perf_counter()
        try:
            g, ran = grade_one(sub, lab, box, timeout_s=timeout_s, batch_seed=batch_seed, limits=limits,
                               numba_cache=numba_cache, prepared=prepared)
        except Exception as err:  # a grader bug must not cost the other students their rows
            g, ran = Grade(sub.student, sub.path, {t: 0.0 for t in lab.points}, status="CRASHED",
                           details=[f"grader error: {type(err).__name__}: {str(err)[:300]}"]), None
        g.seconds = time.perf_counter() - start
        rows = [feedback.Row(t.title, gid, g.points.get(gid, 0.0), lab.points[gid], g.messages.get(gid, ""))
                for gid, t in lab.tasks.items()]
        try:
            text = feedback.page(lab=lab.id, student=g.student,
                                 status=f"{g.status}: {g.detail}" if g.detail else g.status,
                                 rows=rows, nb=ran, hidden_sources=hidden_sources, hidden_ids=set(lab.points),
                                 written=lab.written > 0, unwritten=getattr(g, "unwritten", []))
        except Exception as err:
            text = f"<!doctype html><meta charset=utf-8><p>feedback failed: {type(err).__name__}</p>"
        (out / "feedback" / f"{g.student}.html").write_text(text, encoding="utf-8", errors="replace")
        return g

    grades = []
    try:
        numba_cache = numba_cache_seed(lab, scratch) if subs else None
        prepared = Prepared(lab, box, scratch)
        with open(out / "grades.partial.csv", "w", newline="", encoding="utf-8") as partial, \
                ThreadPoolExecutor(max_workers=jobs) as pool:
            writer = safe_csv.writer(partial)  # no cell a spreadsheet would run as a formula (a student's file name)
            writer.writerow(head)
            for k, g in enumerate(pool.map(one, subs)):
                grades.append(g)
                writer.writerow(_row(g, lab, folder))
                partial.flush()
                if progress:
                    progress(f"[{k + 1}/{len(subs)}] {g.student}: {g.total:g}/{lab.maximum:g} points, {g.status}"
                             + (f" ({g.detail[:120]})" if g.detail else "") + f", {g.seconds:.0f} s")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    left = box.sweep()
    if left and progress:
        progress(f"killed {len(left)} process(es) left by graded notebooks: {left[:10]}")
    tmp = out / "grades.csv.tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = safe_csv.writer(f)
        w.writerow(head)
        for g in grades:
            w.writerow(_row(g, lab, folder))
    os.replace(tmp, out / "grades.csv")  # a reader sees the old file or the whole new one, never half
    (out / "grades.partial.csv").unlink()
    (out / "batch.json").write_text(json.dumps({"lab": lab.id, "seed": batch_seed, "sandbox": box.describe(),
                                                "timeout_s": timeout_s, "students": len(grades),
                                                "submissions": str(folder)}, indent=1))
    if course is not None:
        nbgrader_exchange.record(course, lab, grades, out, progress)
    return grades


def grade_lab(lab: str, folder, *, out=None, timeout_s: float = 300, sandbox="auto", jobs: int = 1,
              seed: int | None = None, book=None, progress=print) -> list[Grade]:
    """``scaledl course grade``: grade ``folder`` against lab ``lab`` of the book (an id from book.toml)."""
    spec = load_lab(lab, book)
    out = Path(out) if out is not None else Path(f"grades-{spec.id}")
    grades = grade_folder(folder, spec, out=out, timeout_s=timeout_s, sandbox=sandbox, jobs=jobs, seed=seed,
                          progress=progress)
    if progress:
        counts = {s: sum(s in g.statuses for g in grades) for s in STATUSES}
        progress(f"wrote {out / 'grades.csv'} and {len(grades)} feedback page(s) in {out / 'feedback'}: "
                 + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return grades
