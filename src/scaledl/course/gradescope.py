"""What runs in Gradescope's container: :func:`setup` once (from ``setup.sh``), :func:`run` per submission
(``run_autograder``). The zip itself is built by :mod:`scaledl.course.gradescope_zip`
(``scaledl course gradescope LAB``).

``run`` grades the one notebook in ``submission/`` with :func:`~scaledl.course.grade.grade_one`, the pipeline
``scaledl course grade`` runs for each student (the instructor's graded cells put back, the source reviewed,
the notebook run in a sandbox on inputs drawn here for this run, the results judged in this process), and writes
``results/results.json``: one test per task, the status in the top-level output, stdout for instructors only,
the seed in ``extra_data``. ``AUTOGRADER_ROOT=DIR`` runs either step on a folder laid out as ``/autograder`` is.

Trust. Gradescope's containers run as root and usually cannot make namespaces, so bubblewrap may not start
there: the notebook runs in the strongest sandbox that works (:func:`strongest`: ``bwrap``, else ``user``, else
``account``, the unprivileged account ``scaledl-grader`` with no namespace), never as root. Before it runs,
:func:`lock` takes every permission of other users off ``source/`` (solutions and hidden tests), ``results/``,
``submission/`` and ``submission_metadata.json``, as Gradescope advises; the virtual environment stays
readable, since the student's kernel runs from it. After the run every process of the grading account is
killed, and only then is ``results.json`` written, whole (a rename).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import time
import traceback
from pathlib import Path

from scaledl._args import UsageError
from scaledl.course import grade as G
from scaledl.course import sandbox as S
from scaledl.course.submissions import Submission
from scaledl.course.untrusted import plain_file

ROOT_VAR = "AUTOGRADER_ROOT"
DEFAULT_ROOT = "/autograder"
SANDBOX_VAR = "SCALEDL_GRADESCOPE_SANDBOX"  # auto (default), or a level by name: tests force "account"
VENV = "scaledl-venv"
WARM = "numba-warm"  # setup's Numba cache, copied into each run's sandbox
LAB_FILE = "lab.json"
BOOK_DIR = "book"
# The student's name in the seed of the hidden tests' inputs (grade._seed). Always this, so that the seed in
# results.json's extra_data and the notebook saved as submission.ipynb reproduce a run locally:
# `scaledl course grade FOLDER --lab LAB --seed N`.
STUDENT = "submission"
DEFAULT_TIMEOUT_S = 300.0  # per notebook, as `scaledl course grade`; Gradescope's own limit must be above it
# What the student never reaches: the solutions and hidden tests, the results, the submission and its metadata
# (names, e-mails, earlier scores), the setup's files. Gradescope's advice: chmod o= on source/ and results/.
LOCKED = ("source", "results", "submission", "submission_metadata.json", "run_autograder", WARM)


def read_spec(root: Path) -> dict:
    return json.loads((Path(root) / "source" / LAB_FILE).read_text(encoding="utf-8"))


def bundled_lab(root: Path, spec: dict) -> G.Lab:
    """The lab to grade, loaded as :func:`~scaledl.course.grade.load_lab` loads it, from the bundle's notebooks
    and what ``book.toml`` says of them (in lab.json: no TOML parser needed, so Python 3.10 will do)."""
    from scaledl.book.toc import Book, Entry

    entries = tuple(Entry(kind="lab", id=i, file=e["file"], title=e["title"], status=e["status"], part="labs",
                          solution=e["solution"]) for i, e in spec["labs"].items())
    book = Book(root=Path(root) / "source" / BOOK_DIR, title=spec.get("book", ""), authors=(), license="",
                repository="", parts=(), entries=entries)
    return G.load_lab(spec["lab"], book)


def lock(root: Path) -> list[str]:
    """Take every permission of other users (and of a group other than root's) off :data:`LOCKED` under
    ``root``, and make ``root`` itself traversable (the sandboxed kernel runs ``root/scaledl-venv``'s Python).
    Returns what was locked."""
    root = Path(root)
    os.chmod(root, os.stat(root).st_mode | 0o005)
    (root / "results").mkdir(mode=0o700, exist_ok=True)
    done = []
    for name in LOCKED:
        top = root / name
        if not os.path.lexists(top) or top.is_symlink():
            continue
        for path in [top, *(top.rglob("*") if top.is_dir() else [])]:
            if path.is_symlink():
                continue
            st = os.stat(path)
            keep = 0o7770 if st.st_gid == 0 else 0o7700
            os.chmod(path, stat.S_IMODE(st.st_mode) & keep)
        done.append(name)
    return done


def make_readable(folder: Path) -> None:
    """``chmod -R o+rX folder`` (the virtual environment, under a umask that kept other users out)."""
    for path in [Path(folder), *Path(folder).rglob("*")]:
        if not path.is_symlink():
            mode = stat.S_IMODE(os.stat(path).st_mode)
            os.chmod(path, mode | 0o004 | (0o001 if path.is_dir() or mode & 0o100 else 0))


def strongest(mode: str = "auto") -> S.Sandbox:
    """The sandbox for ``mode``: "auto" is the strongest level that works here, down to ``account`` (the
    grading account, no namespace), which a one-submission container can use; never ``none``.

    Raises:
        ValueError: nothing but ``none`` works here (not root, or the grading account cannot run Python).
    """
    if mode != "auto":
        return S.detect(mode)
    box = S.detect("auto")
    return box if box.level != "none" else S.detect(S.ACCOUNT)


def choose(folder: Path, lab: G.Lab, student_file: str) -> tuple[Submission | None, str]:
    """The notebook to grade among the files handed in: ``(Submission, "")``, or ``(None, why not)``.

    One notebook is graded whatever its name. Of several, the one that is this lab's notebook
    (:func:`~scaledl.course.integrity.identify`); of several of those, the one named as the lab's file. Links
    and hidden files are not submissions.
    """
    import nbformat

    from scaledl.course import integrity

    folder = Path(folder)
    found = []
    if folder.is_dir():
        for path in sorted(folder.rglob("*.ipynb")):
            rel = path.relative_to(folder)
            if not any(p.startswith(".") or p == "__MACOSX" for p in rel.parts) and plain_file(folder, path):
                found.append(path)
    if not found:
        handed = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        listed = ", ".join(handed[:10]) + (f" and {len(handed) - 10} more" if len(handed) > 10 else "")
        return None, (f"no notebook (.ipynb) was handed in ({'files: ' + listed if handed else 'no files'}); "
                      f"hand in your {lab.id} notebook, {student_file}")
    if len(found) == 1:
        return Submission(STUDENT, found[0]), ""
    why = {}
    for path in found:
        try:
            if path.stat().st_size > G.MAX_NOTEBOOK_BYTES:
                raise UsageError("too large")
            why[path] = integrity.identify(nbformat.read(path, as_version=4), lab.id, lab.solutions)
        except Exception as err:
            why[path] = f"unreadable ({type(err).__name__})"
    mine = [p for p in found if why[p] is None]
    if len(mine) > 1:
        mine = [p for p in mine if p.name == student_file] or mine
    names = lambda paths: ", ".join(str(p.relative_to(folder)) for p in paths)  # noqa: E731
    if len(mine) == 1:
        return Submission(STUDENT, mine[0], [p for p in found if p != mine[0]]), ""
    if mine:
        return None, f"{len(mine)} notebooks of {lab.id} were handed in ({names(mine)}): hand in one"
    return None, (f"none of the {len(found)} notebooks handed in is {lab.id}'s: "
                  + "; ".join(f"{p.relative_to(folder)}: {why[p]}" for p in found[:5]))


STATUS_NOTES = {
    "REVIEW": "Your instructor reads this submission before the points are final (the detail says why).",
    "TIMEOUT": "The notebook hit the time limit; the tasks whose results came back before it still count.",
    "CRASHED": "The notebook's run ended before its hidden tests were done (it died, or a cell ended it); tasks "
               "whose results came back before still count.",
    "REJECTED": "This submission was not graded.",
}
NOT_SET_UP = ("Not graded: the autograder is not set up in this container (its sandbox could not start). Your "
              "instructor has been told and will grade this submission again; nothing is wrong with your notebook.")


def results_json(lab: G.Lab, g: G.Grade, *, seed: int, seconds: float, sandbox: str, spec: dict) -> dict:
    """Gradescope's results.json for one graded notebook: one test per task with its points and the judge's
    message (never the hidden tests' source), the status in the top-level output, stdout for instructors."""
    tests = []
    for gid, task in lab.tasks.items():
        got, top = float(g.points.get(gid, 0.0)), float(lab.points[gid])
        message = g.messages.get(gid) or (f"not graded: {g.detail}" if g.status == "REJECTED" else "no result")
        tests.append({"name": task.title, "number": task.title.replace("Task", "").strip(), "score": got,
                      "max_score": top, "status": "passed" if got >= top else "failed", "output": message,
                      "output_format": "text", "tags": [lab.id, gid], "visibility": "visible"})
    lines = [f"{spec.get('title', lab.id)}: {g.total:g} of {lab.maximum:g} autograded points. Status: {g.status}."]
    if g.detail:
        lines.append(f"Detail: {g.detail}")
    if getattr(g, "not_set_up", False):
        lines.append(NOT_SET_UP)
    else:
        lines += [STATUS_NOTES[part] for part in g.statuses if part in STATUS_NOTES]
    if lab.written:
        lines.append("Written answers (the cells headed \u201cYour answer\u201d, the Questions) are graded by hand "
                     "by your instructor and are not in this score.")
    graded = g.path.name if g.path.suffix == ".ipynb" else None  # none when nothing was handed in
    return {"score": g.total, "execution_time": round(seconds), "output": "\n".join(lines), "output_format": "text",
            "visibility": "visible", "stdout_visibility": "hidden",
            "extra_data": {"lab": lab.id, "status": g.status, "detail": g.detail, "seed": seed, "student": STUDENT,
                           "notebook": graded, "sandbox": sandbox, "seconds": round(seconds, 1)},
            "tests": tests}


def write_results(root: Path, data: dict) -> Path:
    """Write ``root/results/results.json`` whole: a reader sees the old file or the new one, never half."""
    folder = Path(root) / "results"
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    folder.mkdir(mode=0o700, exist_ok=True)
    partial = folder / f".results.{os.getpid()}.tmp"
    partial.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(partial, folder / "results.json")
    return folder / "results.json"


def run(root, *, sandbox: str = "auto", seed: int | None = None, progress=print) -> dict:
    """Grade the notebook in ``root/submission`` and write ``root/results/results.json``; returns what it wrote.

    Never raises for what the submission holds: every failure is a status, 0 points when nothing ran.
    """
    start = time.perf_counter()
    root = Path(root).resolve()
    spec = read_spec(root)
    lock(root)  # before anything of the student's exists as a process
    seed = int.from_bytes(os.urandom(8), "little") if seed is None else int(seed)
    lab = bundled_lab(root, spec)
    progress(f"scaledl gradescope: {lab.id}, {len(lab.tasks)} tasks, {lab.maximum:g} points; seed {seed}")
    sub, why = choose(root / "submission", lab, spec.get("file", ""))
    level, box = "none", None
    if sub is None:
        g = G.Grade(STUDENT, Path("(none)"), {gid: 0.0 for gid in lab.tasks}, status="REJECTED", details=[why])
    else:
        try:
            box = strongest(sandbox)
            level = box.level
            progress(f"sandbox: {box.describe()}")
        except ValueError as err:  # the autograder's fault, not the student's: said so to them, why to you
            g = G.Grade(STUDENT, sub.path, {gid: 0.0 for gid in lab.tasks}, status="CRASHED",
                        details=[f"not run: the sandbox level {sandbox!r} does not work in this container "
                                 f"(student code never runs as root): {str(err)[:300]}"])
            g.not_set_up = True
            progress(f"no sandbox: {err}")
        else:
            cache = root / WARM / "numba-cache"
            try:
                g, _ = G.grade_one(sub, lab, box, timeout_s=float(spec.get("timeout_s", DEFAULT_TIMEOUT_S)),
                                   batch_seed=seed, numba_cache=cache if cache.is_dir() else None)
            except Exception as err:  # a grader bug: the instructor sees the traceback in stdout
                traceback.print_exc(file=sys.stdout)
                g = G.Grade(STUDENT, sub.path, {gid: 0.0 for gid in lab.tasks}, status="CRASHED",
                            details=[f"grader error: {type(err).__name__}: {str(err)[:300]}"])
            finally:
                left = box.sweep()  # every process of the grading account, before results.json exists
                if left:
                    progress(f"killed {len(left)} process(es) the notebook left: {left[:10]}")
    seconds = time.perf_counter() - start
    data = results_json(lab, g, seed=seed, seconds=seconds, sandbox=level, spec=spec)
    write_results(root, data)
    progress(f"{g.path.name}: {g.total:g}/{lab.maximum:g} points, {g.status}"
             + (f" ({g.detail})" if g.detail else "") + f", {seconds:.1f} s")
    for t in data["tests"]:
        progress(f"  {t['name']}: {t['score']:g}/{t['max_score']:g} {t['output'][:300]}")
    return data


def setup(root, *, progress=print) -> int:
    """What ``setup.sh`` does once the package is installed: the grading account, Numba's cache for a lab
    that trains, the virtual environment readable by the grading account, the locks, and a first look at
    which sandbox works (the one each run gets may differ: it is found again then). Returns an exit status."""
    root = Path(root).resolve()
    spec = read_spec(root)
    lab = bundled_lab(root, spec)
    if os.geteuid() == 0:
        S.grading_user()  # made in the image once, not in every run
    warm = root / WARM
    shutil.rmtree(warm, ignore_errors=True)
    warm.mkdir(mode=0o700)
    start = time.perf_counter()
    cache = G.numba_cache_seed(lab, warm)
    progress(f"scaledl gradescope setup: {lab.id} ({len(lab.tasks)} tasks, {lab.maximum:g} points); Numba cache: "
             + (f"warmed in {time.perf_counter() - start:.0f} s" if cache else "none needed"))
    make_readable(Path(sys.prefix))
    lock(root)
    level = sandbox_level(spec)
    try:  # the level each run will ask for, not "auto": a run must not find less than setup found
        box = strongest(level)
    except ValueError as err:
        progress(f"scaledl gradescope setup: the sandbox level {level!r} that run_autograder will use does not "
                 f"work here: {err}")
        return 1
    progress(f"sandbox here: {box.describe()} (level {level!r}, as each run will ask)")
    return 0


def sandbox_level(spec: dict) -> str:
    """The level every run of this bundle asks for: $SCALEDL_GRADESCOPE_SANDBOX, else lab.json's ``sandbox``
    (``scaledl course gradescope --sandbox``), else "auto"."""
    return os.environ.get(SANDBOX_VAR) or spec.get("sandbox") or "auto"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scaledl.course.gradescope",
                                description="The steps setup.sh and run_autograder run in Gradescope's container.")
    steps = p.add_subparsers(dest="step", required=True)
    for name in ("setup", "run"):
        s = steps.add_parser(name)
        s.add_argument("--root", default=os.environ.get(ROOT_VAR, DEFAULT_ROOT), help="default $AUTOGRADER_ROOT "
                                                                                   "or /autograder")
        if name == "run":
            s.add_argument("--seed", type=int, default=None, help="the hidden tests' inputs (default: new)")
            s.add_argument("--sandbox", default=None, choices=("auto", *S.LEVELS[:-1], S.ACCOUNT),
                           help="default: $SCALEDL_GRADESCOPE_SANDBOX, else lab.json's sandbox, else auto")
    args = p.parse_args(argv)
    from scaledl import _startup  # noqa: F401  (nbformat without jsonschema's slow IRI parsers)

    if args.step == "setup":
        return setup(args.root)
    try:
        run(args.root, sandbox=args.sandbox or sandbox_level(read_spec(Path(args.root))), seed=args.seed)
    except Exception as err:  # the bundle itself is broken: say so to the student, the traceback to stdout
        traceback.print_exc(file=sys.stdout)
        write_results(Path(args.root), {"score": 0, "stdout_visibility": "hidden", "output":
                                        f"Not graded: the autograder failed ({type(err).__name__}). Your "
                                        f"instructor can see why and grade this submission again."})
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
