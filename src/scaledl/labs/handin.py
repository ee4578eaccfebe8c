"""A lab's last working cell, "Check before you hand in": what the grader will make of the file a student is
about to download and hand in, said plainly, before it is graded.

:func:`check_before_hand_in` runs in the student's kernel, wherever the notebook is open:

1. **The file as it will be handed in.** On Colab, the notebook as it is now (Colab's own ``get_ipynb``
   request, what *File > Download > Download .ipynb* saves); in JupyterLab or Jupyter Notebook, the file as last
   saved (``JPY_SESSION_NAME``, which Jupyter Server gives the kernel, else the lab's file in the kernel's
   folder). Where none is found it says how to check a downloaded file: ``python -m scaledl.labs.handin FILE``.
2. **Will it be graded?** The grader's own tests: a notebook it cannot read or one over its size limit is
   REJECTED, and so is another lab's notebook, told apart as :func:`scaledl.course.integrity.identify` does,
   by cell ids and headings (here from :data:`CATALOGUE`, shipped in the package: a student on Colab has no
   other lab's notebook).
3. **What is unanswered**: a task whose ``raise NotImplementedError("Task N.M")`` stub is still in the file
   scores 0.
4. **The visible checks, run again**: every cell of this session that ran a ``with task(...)`` block
   (:mod:`scaledl.labs.unanswered` keeps them) runs once more, quietly, and each task says whether its cells
   passed, stopped at a stub, or failed, and with what error. A task whose cells never ran is named too.

It never raises, never changes the notebook and changes nothing on disk. In a graded run (inside the grader's
sandbox) it returns at once: the grader decides there, not this cell.

>>> print(title_of("lab02_tiled_gemm.ipynb"), stubs_in({"cells": [{"cell_type": "code",
...     "source": "def f():\\n    raise NotImplementedError('Task 2.2')"}]}))
lab02 ['Task 2.2']
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scaledl.labs import written

__all__ = ["CATALOGUE", "HandIn", "catalogue", "check_before_hand_in", "check_file", "stubs_in", "title_of"]

CATALOGUE = Path(__file__).with_name("handin_labs.json")  # each lab's file, tasks and marks (cell ids, headings)
MAX_NOTEBOOK_BYTES = 20 << 20  # the grader's limit (scaledl.course.grade.MAX_NOTEBOOK_BYTES; a test keeps them equal)
_STUB = re.compile(r"""raise NotImplementedError\(\s*(['"])(Task \d+\.\d+[a-z]?)\1\s*\)""")
_SOLUTION = re.compile(r"### BEGIN SOLUTION (Task \d+\.\d+[a-z]?)")
_LAB = re.compile(r"^(lab\d\d)_")
GRADING_VAR = "SCALEDL_SANDBOX"  # set in every graded run by the grader's sandbox (scaledl.course.sandbox.MARK_VAR)


def title_of(filename: str) -> str | None:
    """The lab id a file name starts with (``lab02_tiled_gemm.ipynb`` -> ``lab02``), else None."""
    m = _LAB.match(Path(filename).name)
    return m.group(1) if m else None


def _source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def stubs_in(nb: dict) -> list[str]:
    """The tasks whose ``raise NotImplementedError("Task N.M")`` stub is still in a code cell, in order."""
    found: list[str] = []
    for c in nb.get("cells", []):
        if c.get("cell_type") == "code":
            for _, t in _STUB.findall(_source(c)):
                if t not in found:
                    found.append(t)
    return found


def marks(nb: dict) -> set[str]:
    """Cell ids and each markdown cell's first line: :func:`scaledl.course.integrity.fingerprint`, on a dict."""
    out = {f"id:{c['id']}" for c in nb.get("cells", []) if c.get("id")}
    out |= {"md:" + _source(c).strip().splitlines()[0][:80] for c in nb.get("cells", [])
            if c.get("cell_type") == "markdown" and _source(c).strip()}
    return out


def catalogue(book) -> dict:
    """What :data:`CATALOGUE` holds, made from the book's lab solutions: per lab its student file's name, its tasks
    (from the solution markers) and its marks. ``scaledl book execute LAB`` writes it
    (:func:`scaledl.book.student_copy.write_handin_catalogue`); this module never imports the book's tools."""
    out = {}
    for e in book.entries:
        if e.kind != "lab" or not e.validated:
            continue
        nb = json.loads(book.path(e.executed_file).read_text(encoding="utf-8"))
        tasks: list[str] = []
        for c in nb["cells"]:
            if c.get("cell_type") == "code":
                tasks += _SOLUTION.findall(_source(c))
        student = json.loads(book.path(e.file).read_text(encoding="utf-8"))
        out[e.id] = {"file": Path(e.file).name, "tasks": list(dict.fromkeys(tasks)), "marks": sorted(marks(nb)),
                     "written": written.answers_of(student)}
    return out


def _load_catalogue() -> dict:
    return json.loads(CATALOGUE.read_text(encoding="utf-8"))


@dataclass
class HandIn:
    """What the check found: ``ready`` when the file will be graded as this lab and nothing is left to do."""

    lab: str
    file: str | None = None
    rejected: str | None = None  # why the grader would not grade the file
    unanswered: list[str] = field(default_factory=list)
    unwritten: list[str] = field(default_factory=list)  # written answers still as handed out ("Question 2")
    tasks: dict[str, str] = field(default_factory=dict)  # task -> what its visible check said on this run
    lines: list[str] = field(default_factory=list)

    def _ipython_display_(self):  # the last line of a cell: its lines were printed already, show nothing more
        pass

    @property
    def ready(self) -> bool:
        return (self.file is not None and self.rejected is None and not self.unanswered and not self.unwritten
                and all(v == "passed" for v in self.tasks.values()))


def check_file(nb_or_path, lab: str, *, size: int | None = None) -> tuple[str | None, list[str]]:
    """``(why the grader would reject it or None, the tasks still stubbed)`` for a notebook (a dict, or a path)."""
    cat = _load_catalogue()
    if lab not in cat:
        raise ValueError(f"lab={lab!r}: not a lab of this book; expected one of {', '.join(sorted(cat))}")
    if not isinstance(nb_or_path, dict):
        path = Path(nb_or_path)
        size = path.stat().st_size
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            return f"the grader cannot read it ({type(err).__name__}: {str(err)[:120]}): REJECTED", []
    else:
        nb = nb_or_path
    if size is not None and size > MAX_NOTEBOOK_BYTES:
        return (f"it is {size / 2**20:.0f} MB, over the grader's {MAX_NOTEBOOK_BYTES >> 20} MB: REJECTED (clear "
                "the outputs, Edit > Clear Outputs of All Cells, and save)"), []
    if not isinstance(nb.get("cells"), list):
        return "it is not a notebook (no cells): REJECTED", []
    theirs = marks(nb)
    score = {k: len(theirs & set(v["marks"])) for k, v in cat.items()}
    best = max(score, key=lambda k: (score[k], k == lab))
    if best != lab and score[best] > score[lab]:
        return (f"this is {best}'s notebook ({cat[best]['file']}), not {lab}'s: REJECTED if handed in for "
                f"{lab}; hand in {cat[lab]['file']}"), []
    if score[lab] == 0:
        return f"nothing in it is from {lab}'s notebook: REJECTED; hand in {cat[lab]['file']}", []
    return None, stubs_in(nb)


def _colab_notebook() -> dict | None:
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import _message  # Colab's own request for the notebook as it is now

        return _message.blocking_request("get_ipynb", timeout_sec=30)["ipynb"]
    except Exception:  # an older or newer Colab: fall back to the file
        return None


def _saved_file(lab: str, file: str) -> Path | None:
    named = os.environ.get("JPY_SESSION_NAME")  # Jupyter Server 2: the notebook's path
    if named and named.endswith(".ipynb") and Path(named).is_file():
        return Path(named)
    here = Path.cwd() / file
    if here.is_file():
        return here
    found = sorted(Path.cwd().glob(f"{lab}_*.ipynb"))
    return found[0] if len(found) == 1 else None


@contextlib.contextmanager
def _quiet():
    """Nothing printed reaches the cell's output: ``sys.stdout``/``sys.stderr`` are replaced, and the streams
    they were (which checks hold as their default ``report``) write nowhere meanwhile."""
    streams = [s for s in (sys.stdout, sys.stderr) if s is not None]
    patched = []
    for s in streams:
        try:
            s.write = lambda text: len(text)  # an instance attribute: the class's method is back once removed
            patched.append(s)
        except (AttributeError, TypeError):  # a stream that refuses (a C-level file): redirection still applies
            pass
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            yield
    finally:
        for s in patched:
            try:
                del s.write
            except AttributeError:
                pass


def _rerun(namespace: dict) -> dict[str, str]:
    """Run again every cell that ran a task block this session; return each task's outcome."""
    from scaledl.labs import unanswered as U

    cells = U.task_cells()
    figures = None
    if "matplotlib.pyplot" in sys.modules:
        figures = set(sys.modules["matplotlib.pyplot"].get_fignums())
    with U.rerunning():
        for source, titles in cells:
            try:
                with _quiet():
                    exec(compile(source, "<a task cell, run again>", "exec"), namespace)
            except Exception as err:  # a check that failed, a typo: the student's to see
                first = (str(err).strip().splitlines() or [""])[0]
                for t in titles:
                    U.record(t, f"failed: {type(err).__name__}: {first[:160]}")
    if figures is not None:  # the checks' plots are not this cell's output
        plt = sys.modules["matplotlib.pyplot"]
        for n in set(plt.get_fignums()) - figures:
            plt.close(n)
    return U.outcomes()


def check_before_hand_in(lab: str, namespace: dict | None = None, *, path=None, report=None) -> HandIn:
    """Print what the grader will make of this lab's notebook, and return it as a :class:`HandIn`.

    Args:
        lab: the lab's id (``"lab02"``): the cell in each lab passes its own.
        namespace: the notebook's globals (``globals()``), where the task cells run again; None: not run again.
        path: the notebook file to check; default: found as the module docstring says.
        report: where to print (default: ``sys.stdout`` as it is when called).

    Raises:
        ValueError: ``lab`` is not one of the book's labs.
    """
    cat = _load_catalogue()
    if lab not in cat:
        raise ValueError(f"lab={lab!r}: not a lab of this book; expected one of {', '.join(sorted(cat))}")
    h = HandIn(lab)
    if os.environ.get(GRADING_VAR) and path is None:
        return h  # a graded run: the grader judges, not this cell
    say = h.lines.append
    file = cat[lab]["file"]
    say(f"Check before you hand in ({lab}, {file}):")
    nb = _colab_notebook() if path is None else None
    if nb is not None:
        h.file = file
        why, h.unanswered = check_file(nb, lab, size=len(json.dumps(nb)))
        say("  the notebook as it is now in Colab (what File > Download > Download .ipynb saves)")
    else:
        found = Path(path) if path is not None else _saved_file(lab, file)
        if found is None or not found.is_file():
            why = None
            say(f"  the file: not found here ({Path.cwd().name}/); after downloading it, check it with "
                f"`python -m scaledl.labs.handin {file}`")
        else:
            h.file = found.name
            why, h.unanswered = check_file(found, lab)
            try:
                nb = json.loads(found.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                nb = None
            say(f"  the file: {found.name}, as last saved: save it (Ctrl+S) before you hand it in")
    if isinstance(nb, dict) and not why:
        h.unwritten = written.unanswered(nb, cat[lab].get("written", []))
    h.rejected = why
    if why:
        say(f"  will it be graded? No: {why}")
    elif h.file:
        say(f"  will it be graded? Yes: it is {lab}'s notebook")
    for t in h.unanswered:
        say(f"  {t}: not answered (its raise NotImplementedError is still there): it scores 0")
    for label in h.unwritten:
        say(f"  {label}: not answered yet (its *Your answer* cell is as handed out): written answers are graded "
            f"by hand, and an empty one earns nothing")
    if namespace is not None:
        from scaledl.labs import unanswered as U

        outcomes = _rerun(namespace)
        for t in cat[lab]["tasks"]:
            if t in h.unanswered:
                continue
            got = outcomes.get(t)
            h.tasks[t] = got or "not run"
            if got is None:
                say(f"  {t}: its cells have not run in this session: Run All (Run > Run All Cells), then this cell")
            elif got == "passed":
                say(f"  {t}: its visible check passes (the hidden tests use new inputs)")
            elif got == U.NOT_ANSWERED:
                say(f"  {t}: {got}: its cells stop at raise NotImplementedError; it scores 0")
            elif got.startswith("stopped: "):
                say(f"  {t}: its cells {got}")
            else:
                say(f"  {t}: its visible check {got}")
    if h.ready:
        say(f"Ready: hand in {h.file}. Written answers are graded by hand.")
    elif h.file is None:
        say("Not checked: no notebook file found.")
    else:
        say("Not ready yet: see the lines above.")
    print("\n".join(h.lines), file=report if report is not None else sys.stdout)
    return h


def main(argv: list[str] | None = None) -> int:
    """``python -m scaledl.labs.handin FILE [--lab labNN]``: check a downloaded notebook before handing it in."""
    p = argparse.ArgumentParser(prog="python -m scaledl.labs.handin", description=main.__doc__)
    p.add_argument("file", help="the notebook you will hand in")
    p.add_argument("--lab", help="the lab it is for (default: from the file's name)")
    args = p.parse_args(argv)
    lab = args.lab or title_of(args.file)
    if lab is None:
        p.error(f"--lab is needed: {args.file!r} does not start with a lab id such as lab02_")
    h = check_before_hand_in(lab, path=args.file)
    return 0 if h.file and not h.rejected and not h.unanswered else 1


if __name__ == "__main__":
    sys.exit(main())
