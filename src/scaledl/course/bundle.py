"""A student bundle: the book as students get it, without ``labs/solutions/`` or answer keys.

Its ``book.toml`` is the instructor's, entries and their ``solution`` paths included (so ids, tables and
links stay the same), plus one line under ``[book]``::

    student_bundle = true

``scaledl book check`` sees that line and runs :func:`check_bundle` instead of the authors' check: the
solution notebooks are absent on purpose, so each lab is checked through its student copy.

>>> marked = mark_book_toml('[book]\\ntitle = "T"\\n')
>>> marked.splitlines()[1]
'student_bundle = true'
>>> mark_book_toml(marked) == marked
True
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from scaledl._args import UsageError
from scaledl.book.toc import Book

FLAG = "student_bundle"
_BOOK_TABLE = re.compile(r"^\[book\][ \t]*$", re.MULTILINE)
# Markers that only a solution (or an instructor's copy) holds.
SECRET_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
SECRET_TAGS = frozenset({"answer-key", "answer-code", "solution", "hidden-test", "hidden-tests"})


def hidden_cell(cell) -> bool:
    """True for a cell whose nbgrader metadata names it a hidden test (``grade_id`` or ``hidden``)."""
    nbgrader = cell.get("metadata", {}).get("nbgrader", {})
    return any("hidden" in str(v).lower() for v in (nbgrader.get("grade_id", ""), nbgrader.get("hidden", "")))


def is_student_bundle(root: Path) -> bool:
    """True when ``root/book.toml`` says ``student_bundle = true`` under ``[book]``."""
    with open(Path(root) / "book.toml", "rb") as f:
        return bool(tomllib.load(f).get("book", {}).get(FLAG, False))


def mark_book_toml(text: str) -> str:
    """``book.toml``'s text with ``student_bundle = true`` as the first line of its ``[book]`` table.

    Raises:
        ValueError: the text has no ``[book]`` table.
    """
    if re.search(rf"^{FLAG}\s*=\s*true\s*$", text, re.MULTILINE):
        return text
    if not _BOOK_TABLE.search(text):
        raise UsageError("book.toml: expected a [book] table to mark as a student bundle")
    note = f"{FLAG} = true"
    return _BOOK_TABLE.sub(lambda m: f"{m.group(0)}\n{note}", text, count=1)


def secret_markers(nb) -> list[str]:
    """What in a notebook only an instructor's copy may hold: solution or hidden-test markers, secret tags."""
    found = []
    for i, cell in enumerate(nb.cells):
        for marker in SECRET_MARKERS:
            if marker in cell.source:
                found.append(f"cell {i} holds {marker!r}")
        tags = SECRET_TAGS.intersection(cell.get("metadata", {}).get("tags", []))
        if tags:
            found.append(f"cell {i} is tagged {sorted(tags)}")
    return found


def check_bundle(book: Book) -> list[str]:
    """``scaledl book check`` for a student bundle: chapters as usual, labs through their student copies.

    Returns the problems as readable lines (empty: the bundle is consistent).
    """
    import nbformat

    from scaledl.book import nbfile
    from scaledl.book.check import check_entry, check_readme, notebooks_on_disk

    problems, listed = [], set()
    for e in book.entries:
        listed.add(e.file)
        if not e.validated:
            continue
        if e.kind == "chapter":
            problems += check_entry(book, e)
            continue
        path = book.path(e.file)
        if not path.is_file():
            problems.append(f"{e.file}: listed in book.toml as lab {e.id} ({e.status}) but missing")
            continue
        nb = nbformat.read(path, as_version=4)
        problems += [f"{e.file}: {p}" for p in secret_markers(nb)]
        problems += nbfile.problems(path, e.file)
    problems += check_readme(book)
    for rel in notebooks_on_disk(book.root):
        if rel not in listed:
            problems.append(f"{rel}: in a student bundle but not one of its chapters or student labs")
    return problems
