"""Point the book at an instructor's fork: book.toml's ``repository`` and every notebook's setup cell.

Each chapter's setup cell installs the package from the repository URL when ``scaledl`` is missing (on
Colab, Kaggle, a JupyterHub). An instructor who forks the book runs ``scaledl book set-repository URL`` once;
lab student copies with edits of their own are left alone, as always.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from scaledl.book import nbfile
from scaledl.book.toc import Book

URL = re.compile(r"^https://[\w.-]+(/[\w.~-]+)+/?$")
INSTALL = re.compile(r'(%pip install[^\n]*"scaledl @ git\+)([^"]+)(")')
TOML_LINE = re.compile(r'^(repository\s*=\s*")([^"]*)(")', re.MULTILINE)


def _rewrite_notebook(path: Path, url: str) -> bool:
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "code" and INSTALL.search(cell.source):
            new = INSTALL.sub(lambda m: m.group(1) + url + m.group(3), cell.source)
            changed |= new != cell.source
            cell.source = new
    if changed:
        nbfile.write(nb, path)
    return changed


def set_repository(book: Book, url: str) -> list[str]:
    """Set the repository URL everywhere; returns the files changed.

    Raises:
        ValueError: ``url`` is not an https URL of a repository.
    """
    url = url.rstrip("/")
    if not URL.match(url):
        raise ValueError(f"repository URL {url!r} should look like https://github.com/ORG/REPO")
    from scaledl.labs.release import write_student_version

    changed = []
    toml = book.root / "book.toml"
    text = toml.read_text()
    new_text = TOML_LINE.sub(lambda m: m.group(1) + url + m.group(3), text, count=1)
    if new_text != text:
        toml.write_text(new_text)
        changed.append("book.toml")
    for e in book.entries:
        path = book.path(e.executed_file)
        if not path.is_file():
            continue
        previous = nbformat.read(path, as_version=4)
        if _rewrite_notebook(path, url):
            changed.append(e.executed_file)
            if e.kind == "lab" and write_student_version(path, book.path(e.file), previous) == "written":
                changed.append(e.file)
    return changed
