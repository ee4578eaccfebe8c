"""``scaledl course release OUT/``: the book as students get it, without solutions, hidden tests or answer keys.

Every notebook's title ends with "Open in Colab" and "Open in Kaggle" badges for its file in book.toml's
``repository`` (the students' repository: ``scaledl book set-repository URL`` sets it for a fork).
The bundle holds the chapters (outputs kept, ``answer-key`` cells removed), each lab's student notebook made
afresh from its solution (never a copy of ``labs/solutions/``), the package, a README written for students
(:mod:`scaledl.course.student_readme`, in place of the authors', which points at instructor material and at
``make test``), the licence, install files and ``book.toml`` (marked ``student_bundle = true``:
:mod:`scaledl.course.bundle`). Left out: ``labs/solutions/``, ``tests/`` (they read the solutions), ``.ci/``,
the instructor guide, and any path named ``hidden*`` (grading data). Hidden tests are removed twice over:
blocks between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` in any cell, and whole cells tagged
``hidden-test``/``solution``/``answer-key`` or whose nbgrader metadata names a hidden test. Before returning,
the bundle is scanned (:mod:`scaledl.course.leaks`); a leak removes nothing silently, it raises.

The folder can be ``git init``-ed and pushed as the students' repository, or zipped (``zip_too``) for an
LMS. Releasing again into the same folder with ``force`` replaces everything but its ``.git``, so the next
release is one more commit.

>>> strip_hidden("check(f)\\n### BEGIN HIDDEN TESTS\\ncheck(f, seed=7)\\n### END HIDDEN TESTS")
'check(f)'
"""

from __future__ import annotations

import copy
import re
import shutil
import zipfile
from pathlib import Path

import nbformat

from scaledl._args import UsageError
from scaledl.book import nbfile
from scaledl.book.toc import Book
from scaledl.course.bundle import SECRET_TAGS, hidden_cell, mark_book_toml, secret_markers

HIDDEN_BEGIN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS\b")
HIDDEN_END = re.compile(r"^[ \t]*### END HIDDEN TESTS\b")
# What students get besides the notebooks, as they are in the repository (README.md is written for them;
# CONTRIBUTING.md, the authors' guide to writing the book, is left out with the tests it points to).
FILES = ("LICENSE", "pyproject.toml", "environment.yml", "Makefile", "references.bib",
         ".gitignore")
FOLDERS = ("src", "docs")
LEFT_OUT = ("instructor-guide.md",)  # docs/ pages for instructors only
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "hidden*",
                                 "solutions", *LEFT_OUT)


def strip_hidden(source: str, where: str = "cell") -> str:
    """``source`` without its hidden-test blocks (marker lines included).

    Raises:
        ValueError: a block opened and never closed, or closed and never opened, naming ``where``.
    """
    out, inside = [], False
    for lineno, line in enumerate(source.splitlines(), 1):
        if HIDDEN_BEGIN.match(line):
            if inside:
                raise UsageError(f"{where}: line {lineno} opens a hidden-test block inside another one")
            inside = True
        elif HIDDEN_END.match(line):
            if not inside:
                raise UsageError(f"{where}: line {lineno} closes a hidden-test block that was never opened")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise UsageError(f"{where}: a hidden-test block is never closed")
    return "\n".join(out)


def without_hidden(nb, name: str, *, keep_answer_markdown: bool):
    """A copy of ``nb`` without hidden tests, and without answer-key cells unless ``keep_answer_markdown``
    (a lab keeps them for :func:`scaledl.book.student_copy.student_version` to turn into empty answer cells)."""
    nb = copy.deepcopy(nb)
    cells = []
    for i, cell in enumerate(nb.cells):
        tags = SECRET_TAGS.intersection(cell.get("metadata", {}).get("tags", []))
        answer = cell.cell_type == "markdown" and tags <= {"answer-key", "solution"}
        if (tags and not (answer and keep_answer_markdown)) or hidden_cell(cell):
            continue
        stripped = strip_hidden(cell.source, where=f"{name} cell {i}")
        if stripped != cell.source and not stripped.strip():
            continue  # the cell was nothing but hidden tests
        cell.source = stripped
        cells.append(cell)
    nb.cells = cells
    return nb


COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE_ALT = "Open In Colab"
KAGGLE_BADGE = "https://kaggle.com/static/images/open-in-kaggle.svg"
KAGGLE_ALT = "Open In Kaggle"


def with_colab_badge(nb, url: str | None, kaggle: str | None = None):
    """A copy of ``nb`` whose first cell (the title) ends with an "Open in Colab" badge linking to ``url``, and
    an "Open in Kaggle" one linking to ``kaggle`` beside it where given; earlier badges there are replaced. The
    title's first line, the cell count and the cell ids stay as they were (a lab is still recognised as its own,
    :func:`scaledl.course.integrity.fingerprint`). ``url`` None: unchanged.

    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Lab 1")])
    >>> print(with_colab_badge(nb, "https://colab.example/x.ipynb").cells[0].source)
    # Lab 1
    <BLANKLINE>
    [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.example/x.ipynb)
    >>> with_colab_badge(nb, "https://c/x", "https://k/x").cells[0].source.endswith(
    ...     "(https://c/x) [![Open In Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)](https://k/x)")
    True
    """
    if not url or not nb.cells or nb.cells[0].cell_type != "markdown":
        return nb
    nb = copy.deepcopy(nb)
    lines = [ln for ln in nb.cells[0].source.rstrip().splitlines()
             if f"[![{BADGE_ALT}]" not in ln and f"[![{KAGGLE_ALT}]" not in ln]
    while lines and not lines[-1].strip():
        lines.pop()
    badges = f"[![{BADGE_ALT}]({COLAB_BADGE})]({url})"
    if kaggle:
        badges += f" [![{KAGGLE_ALT}]({KAGGLE_BADGE})]({kaggle})"
    nb.cells[0].source = "\n".join([*lines, "", badges])
    return nb


def student_chapter(nb, name: str = "chapter"):
    """A chapter as students get it: stored outputs kept, answer keys and hidden tests removed."""
    return without_hidden(nb, name, keep_answer_markdown=False)


def student_lab(solution_nb, name: str = "lab"):
    """A lab's student notebook, made from its solution with hidden tests removed first (so its fingerprint
    stamp matches what students receive)."""
    from scaledl.book.student_copy import student_version

    return student_version(without_hidden(solution_nb, name, keep_answer_markdown=True))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _prepare(root: Path, out: Path, force: bool) -> None:
    if _inside(out, root) or _inside(root, out):
        raise UsageError(f"out={str(out)!r}: a student bundle is never written into the repository ({root}) "
                         f"or a folder holding it; choose a folder outside it, e.g. ../course-students")
    if out.exists() and not out.is_dir():
        raise UsageError(f"out={str(out)!r} is a file; expected a folder")
    leftovers = [p for p in out.iterdir() if p.name != ".git"] if out.is_dir() else []
    if leftovers and not force:
        raise UsageError(f"out={str(out)!r} is not empty ({len(leftovers)} entries); pass --force to replace "
                         f"its contents (its .git, if any, is kept)")
    for p in leftovers:
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _zip(out: Path, files: list[str]) -> Path:
    """``OUT.zip`` beside ``out``: its files (not its ``.git``) under one folder named like ``out``."""
    archive = out.with_name(out.name + ".zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for rel in files:
            z.write(out / rel, f"{out.name}/{rel}")
    return archive


def release(book: Book, out: Path, *, force: bool = False, zip_too: bool = False) -> list[str]:
    """Write the student bundle of ``book`` into ``out``; returns the files written (relative paths).

    Raises:
        ValueError: ``out`` is inside the repository, or not empty without ``force``.
        RuntimeError: the written bundle holds a solution, hidden-test or answer-key line (a bug: report it).
    """
    from scaledl.book.site import colab_url, kaggle_url
    from scaledl.course.leaks import scan, secret_lines
    from scaledl.course.student_readme import student_readme

    root, out = book.root.resolve(), Path(out).resolve()
    _prepare(root, out, force)
    for name in FILES:
        if (root / name).is_file():
            shutil.copy2(root / name, out / name)
    for name in FOLDERS:
        if (root / name).is_dir():
            shutil.copytree(root / name, out / name, ignore=IGNORED)
    (out / "README.md").write_text(student_readme(book), encoding="utf-8")
    (out / "book.toml").write_text(mark_book_toml((root / "book.toml").read_text()))
    for e in book.entries:
        if not e.validated:
            continue
        source = book.path(e.executed_file)
        nb = with_colab_badge(nbformat.read(source, as_version=4), colab_url(book.repository, e.file),
                              kaggle_url(book.repository, e.file))
        made = student_chapter(nb, e.file) if e.kind == "chapter" else student_lab(nb, e.executed_file)
        left = secret_markers(made)
        if left:
            raise RuntimeError(f"{e.file}: still holds {left[0]} after the release; not writing a bundle")
        target = out / e.file
        target.parent.mkdir(parents=True, exist_ok=True)
        nbfile.write(made, target)
    leaks = scan(out, secret_lines(book))
    if leaks:
        raise RuntimeError("the student bundle leaks:\n" + "\n".join(leaks[:20]))
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                     if p.is_file() and ".git" not in p.relative_to(out).parts)
    if zip_too:
        written.append(_zip(out, written).name)
    return written
