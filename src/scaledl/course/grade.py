"""``scaledl course grade``: grade a folder of submitted lab notebooks with the solution's hidden tests.

Why nbgrader: the labs already mark solutions with its ``### BEGIN SOLUTION`` syntax and hidden tests with its
``### BEGIN HIDDEN TESTS``; its cell metadata (``grade_id``, ``points``) is what JupyterHub courses already use,
so an instructor can run ``nbgrader autograde`` on the same notebooks; and it works offline. What this module
adds is the part nbgrader leaves to a course directory and a database: it grades *any* folder (files as an LMS
downloads them, maybe one folder per student, or nbgrader's ``submitted/STUDENT/ASSIGNMENT/`` layout) straight
against the solution notebook in the book, and keeps the points earned before a notebook crashes, loops or
deadlocks.

For each submission: the autograded-test cells (nbgrader ``grade`` cells that are not solutions) are replaced
by the solution's, hidden tests included, matched by ``grade_id``; the notebook runs cell by cell in a fresh
kernel on the simulator backend under one time limit for the whole notebook; each test cell earns its points
when it ran without an error (nbgrader's rule, except that a warning on stderr costs nothing). A cell never
reached (time limit, dead kernel) earns nothing. Writes ``grades.csv`` (points per task per student) and one
``feedback/STUDENT.html`` per student, with the hidden tests' source replaced by a note but their output kept.
"""

from __future__ import annotations

import copy
import csv
import html
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from scaledl import device
from scaledl.book.execute import DETERMINISTIC_ENV

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[ \t]*$", re.S | re.M)
HIDDEN_NOTE = "# (hidden tests ran here)"


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def test_cells(solution_nb) -> list[tuple[str, float]]:
    """The autograded-test cells of a solution notebook: ``[(grade_id, points), ...]`` in notebook order."""
    out = []
    for cell in solution_nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            out.append((meta["grade_id"], float(meta["points"])))
    return out


def mark_answer_cells(nb) -> list[str]:
    """Mark every code cell holding a ``### BEGIN SOLUTION`` block as an nbgrader "autograded answer" cell
    (grade_id ``answer_task_N_M`` from the marker), as nbgrader's release steps require; returns the ids.
    For a new lab's solution notebook; run once, then re-execute it."""
    used = []
    for cell in nb.cells:
        m = re.search(r"### BEGIN SOLUTION(.*)", cell.source) if cell.cell_type == "code" else None
        if not m or nbgrader_meta(cell).get("solution"):
            continue
        slug = "answer_" + (re.sub(r"[^0-9a-z]+", "_", m.group(1).strip().lower()).strip("_") or "cell")
        gid, k = slug, 2
        while gid in used:
            gid, k = f"{slug}_{k}", k + 1
        used.append(gid)
        cell.metadata["nbgrader"] = {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3,
                                     "solution": True, "task": False}
    return used


def new_test_cell(task: str, points: float, hidden: str) -> nbformat.NotebookNode:
    """An nbgrader autograded-test cell for ``task`` ("Task 1.1"): a visible line, then ``hidden`` between
    ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``. Insert it after the task's visible check.

    Raises:
        ValueError: ``points`` is not positive.
    """
    if not points > 0:
        raise ValueError(f"points={points!r}: expected a positive number")
    gid = re.sub(r"[^0-9a-z]+", "_", task.strip().lower()).strip("_")
    source = (f"# {task}: {points:g} points. Hidden tests, with new sizes and seeds, run here when the lab is "
              f"graded.\n### BEGIN HIDDEN TESTS\n{hidden.strip()}\nprint({task + ': hidden tests passed'!r})\n"
              f"### END HIDDEN TESTS")
    cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {
        "grade": True, "grade_id": gid, "locked": True, "points": points, "schema_version": 3, "solution": False,
        "task": False}})
    cell["id"] = f"{gid.replace('_', '-')}-tests"
    return cell


@dataclass
class Submission:
    student: str
    path: Path


def find_submissions(folder: Path) -> list[Submission]:
    """Every notebook under ``folder`` with a student name.

    The name is STUDENT in nbgrader's ``submitted/STUDENT/ASSIGNMENT/*.ipynb``, else the first folder below
    ``folder`` (one folder per student), else the file's stem (an LMS download's flat list).

    Raises:
        ValueError: ``folder`` is not a folder, or holds no notebook.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"submissions={str(folder)!r}: expected a folder of submitted notebooks")
    found, names = [], set()
    for path in sorted(folder.rglob("*.ipynb")):
        rel = path.relative_to(folder)
        if any(p.startswith(".") for p in rel.parts):  # .ipynb_checkpoints
            continue
        parts = rel.parts
        if "submitted" in parts[:-1] and parts.index("submitted") + 2 < len(parts):
            student = parts[parts.index("submitted") + 1]
        elif len(parts) > 1:
            student = parts[0]
        else:
            student = path.stem
        name, k = student, 2
        while name in names:  # two notebooks from one student: keep both, distinctly named
            name, k = f"{student}-{k}", k + 1
        names.add(name)
        found.append(Submission(name, path))
    if not found:
        raise ValueError(f"submissions={str(folder)!r}: holds no .ipynb notebook")
    return found


def with_tests(submission_nb, solution_nb) -> nbformat.NotebookNode:
    """The submission with the solution's autograded-test cells (hidden tests included) in place of its own.

    A test cell is matched by ``grade_id``; one the student deleted is put back after the cell that precedes
    it in the solution (matched by cell id), or at the end.
    """
    nb = copy.deepcopy(submission_nb)
    by_id = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("grade")}
    previous_id = None
    for cell in solution_nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            fresh = nbformat.v4.new_code_cell(cell.source, metadata=copy.deepcopy(cell.metadata))
            fresh.pop("id", None)
            if meta["grade_id"] in by_id:
                i = by_id[meta["grade_id"]]
                fresh["id"] = nb.cells[i].get("id", fresh.get("id"))
                nb.cells[i] = fresh
            else:
                ids = [c.get("id") for c in nb.cells]
                at = ids.index(previous_id) + 1 if previous_id in ids else len(nb.cells)
                nb.cells.insert(at, fresh)
                by_id = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(nb.cells)
                         if nbgrader_meta(c).get("grade")}
        previous_id = cell.get("id")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(DETERMINISTIC_ENV)
    env[device.ENV_VAR] = "simulator"  # graded alike on every machine, GPU or not
    return env


def run(nb, *, timeout_s: float, cwd: Path) -> tuple[set[int], str]:
    """Execute ``nb`` in place, cell by cell, in a fresh kernel, under one time limit for the whole notebook.

    Returns the indices of the cells that finished and a status: ``"finished"``, ``"time limit at cell N"`` or
    ``"kernel died at cell N"``. Errors in cells do not stop the run (they are recorded as outputs).
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3", allow_errors=True,
                            record_timing=False, shutdown_kernel="immediate",
                            resources={"metadata": {"path": str(cwd)}})
    done, status = set(), "finished"
    deadline = time.monotonic() + timeout_s
    with client.setup_kernel(env=kernel_env(), cwd=str(cwd)):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return done, f"time limit at cell {i}"
            client.timeout = max(1, int(left + 0.999))
            try:
                client.execute_cell(cell, i)
            except CellTimeoutError:
                status = f"time limit ({timeout_s:g} s) at cell {i}"
                break
            except DeadKernelError:
                status = f"kernel died at cell {i}"
                break
            done.add(i)
    return done, status


def scores(nb, done: set[int]) -> dict[str, float]:
    """Points per ``grade_id``, by nbgrader's ``determine_grade``: a test cell earns its points unless it
    shows an error (or returns a partial-credit number); a cell that never finished earns nothing. Unlike
    plain nbgrader, text on stderr (a library's warning) costs nothing."""
    from nbgrader.utils import determine_grade

    out = {}
    for i, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            shown = copy.deepcopy(cell)
            shown.outputs = [o for o in cell.outputs if not (o.get("output_type") == "stream"
                                                              and o.get("name") == "stderr")]
            out[meta["grade_id"]] = float(determine_grade(shown)[0] or 0.0) if i in done else 0.0
    return out


def _parse(source: str):
    import ast

    lines = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines()]  # IPython magics
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def tampering(nb) -> list[str]:
    """Cells that rebind something inside the book's package (``S.check_spmv = ...``, ``setattr(...)`` on it,
    ``sys.modules[...] = ...``): hidden tests run in the student's kernel, so such a cell could switch them
    off. Reported for a person to look at; the points are not changed."""
    import ast

    found, library = [], set()
    for i, cell in enumerate(nb.cells):
        tree = _parse(cell.source) if cell.cell_type == "code" and not nbgrader_meta(cell).get("grade") else None
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = getattr(node, "module", None) or ""
                for alias in node.names:
                    if module.startswith("scaledl") or alias.name.startswith("scaledl"):
                        library.add((alias.asname or alias.name).split(".")[0])
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                root = t
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if isinstance(t, (ast.Attribute, ast.Subscript)) and isinstance(root, ast.Name) and \
                        (root.id in library or root.id == "sys"):
                    found.append(f"cell {i} assigns to {ast.unparse(t)}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in library:
                found.append(f"cell {i} calls {node.func.id}({node.args[0].id}, ...)")
    return found


@dataclass
class Grade:
    student: str
    path: Path
    points: dict[str, float] = field(default_factory=dict)
    status: str = ""
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.points.values())


def grade_notebook(path: Path, solution_nb, *, timeout_s: float, workdir: Path):
    """Grade one submitted notebook; returns (points per grade_id, status, the executed notebook).

    A file that is not a readable notebook earns nothing, with the reason as its status.
    """
    tasks = test_cells(solution_nb)
    try:
        submitted = nbformat.read(path, as_version=4)
    except Exception as err:  # not JSON, not a notebook: the student still gets a row and a reason
        return {g: 0.0 for g, _ in tasks}, f"unreadable notebook: {type(err).__name__}", None
    nb = with_tests(submitted, solution_nb)
    workdir.mkdir(parents=True, exist_ok=True)
    done, status = run(nb, timeout_s=timeout_s, cwd=workdir)
    review = tampering(nb)
    if review:
        status += "; REVIEW: " + "; ".join(review)
    return scores(nb, done), status, nb


def feedback_html(grade: Grade, nb, tasks, lab: str) -> str:
    """One student's feedback page: a table of points per task, then their notebook as run, hidden tests'
    source replaced by a note (their output, which names what failed, is kept)."""
    rows = "".join(f"<tr><td>{html.escape(g)}</td><td>{grade.points.get(g, 0):g}</td><td>{p:g}</td></tr>"
                   for g, p in tasks)
    head = (f"<h1>{html.escape(lab)}: {html.escape(grade.student)}</h1><p>{grade.total:g} of "
            f"{sum(p for _, p in tasks):g} points; run: {html.escape(grade.status)}</p>"
            f"<table border=1><tr><th>task</th><th>points</th><th>of</th></tr>{rows}</table>")
    if nb is None:
        return f"<html><body>{head}</body></html>"
    from nbconvert import HTMLExporter

    shown = copy.deepcopy(nb)
    for cell in shown.cells:
        if cell.cell_type == "code" and HIDDEN.search(cell.source):
            cell.source = HIDDEN.sub(HIDDEN_NOTE, cell.source)
            for o in cell.outputs:  # a traceback quotes the hidden lines; the message says what failed
                if o.get("output_type") == "error":
                    o["traceback"] = [f"{o.get('ename', 'Error')}: {o.get('evalue', '')}"]
    body, _ = HTMLExporter(template_name="classic").from_notebook_node(shown)
    return body.replace("<body>", f"<body>{head}", 1)


def grade_folder(submissions: Path, solution_path: Path, *, lab: str, out: Path, timeout_s: float = 300,
                 progress=None) -> list[Grade]:
    """Grade every notebook under ``submissions``; write ``out/grades.csv`` and ``out/feedback/*.html``.

    Raises:
        ValueError: a bad folder or time limit, or a solution without autograded-test cells.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s={timeout_s!r}: expected a positive number of seconds per notebook")
    solution_nb = nbformat.read(solution_path, as_version=4)
    tasks = test_cells(solution_nb)
    if not tasks:
        raise ValueError(f"{solution_path}: has no autograded-test cells (nbgrader grade cells); nothing to grade")
    subs = find_submissions(submissions)
    out = Path(out)
    (out / "feedback").mkdir(parents=True, exist_ok=True)
    grades = []
    for k, sub in enumerate(subs):
        start = time.perf_counter()
        points, status, nb = grade_notebook(sub.path, solution_nb, timeout_s=timeout_s,
                                            workdir=out / "work" / sub.student)
        g = Grade(sub.student, sub.path, points, status, time.perf_counter() - start)
        grades.append(g)
        (out / "feedback" / f"{sub.student}.html").write_text(feedback_html(g, nb, tasks, lab), encoding="utf-8")
        if progress:
            progress(f"[{k + 1}/{len(subs)}] {g.student}: {g.total:g}/{sum(p for _, p in tasks):g} points, "
                     f"{g.status}, {g.seconds:.0f} s")
    shutil.rmtree(out / "work", ignore_errors=True)  # what the notebooks wrote while they ran
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", "file", *[g for g, _ in tasks], "total", "max", "status"])
        maximum = sum(p for _, p in tasks)
        for g in grades:
            w.writerow([g.student, str(g.path.relative_to(submissions)),
                        *[f"{g.points.get(t, 0):g}" for t, _ in tasks], f"{g.total:g}", f"{maximum:g}", g.status])
    return grades


def grade_lab(lab: str, submissions: Path, *, out: Path | None = None, timeout_s: float = 300, book=None,
              progress=print) -> list[Grade]:
    """``scaledl course grade``: grade ``submissions`` against lab ``lab`` of the book (an id from book.toml).

    Raises:
        ValueError: ``lab`` is not a lab of the book, or is still planned.
    """
    from scaledl.book.toc import load

    book = book or load()
    entry = book.resolve(lab)
    if entry.kind != "lab":
        raise ValueError(f"--lab {lab!r} is a {entry.kind}; expected a lab id from book.toml such as lab03")
    if not entry.validated:
        raise ValueError(f"--lab {lab!r}: {entry.title!r} is planned in book.toml; it has no solution to grade with")
    out = Path(out) if out is not None else Path(f"grades-{entry.id}")
    grades = grade_folder(Path(submissions), book.path(entry.solution), lab=entry.id, out=out,
                          timeout_s=timeout_s, progress=progress)
    if progress:
        progress(f"wrote {out / 'grades.csv'} and {len(grades)} feedback page(s) in {out / 'feedback'}")
    return grades
