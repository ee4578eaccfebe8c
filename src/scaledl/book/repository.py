"""Point the book at an instructor's fork: ``scaledl book set-repository URL``.

book.toml's ``repository`` is the one source of the URL: the static book builds its "Open in Colab" links
from it. This command writes the new URL there and everywhere a copy of the old one appears:

- every notebook's setup cell (``%pip install "scaledl @ git+URL"``, extras such as ``scaledl[mpi]`` too),
  and any link in a notebook's cells;
- README.md, CONTRIBUTING.md, INSTRUCTORS.md and ``docs/*.md``;
- pyproject.toml's ``[project.urls]`` ``Repository``;
- Colab links (``colab.research.google.com/github/ORG/REPO/...``) when both URLs are on GitHub.

Lab student copies with a student's edits are left alone, as always.

>>> replace_url("clone https://github.com/a/b.git or see https://github.com/a/b-extra",
...             "https://github.com/a/b", "https://github.com/course/b")
'clone https://github.com/course/b.git or see https://github.com/a/b-extra'
>>> replace_url("https://colab.research.google.com/github/a/b/blob/main/x.ipynb",
...             "https://github.com/a/b", "https://github.com/course/b")
'https://colab.research.google.com/github/course/b/blob/main/x.ipynb'
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from scaledl._args import UsageError
from scaledl.book import nbfile
from scaledl.book.toc import Book

URL = re.compile(r"^https://[\w.-]+(/[\w.~-]+)+/?$")
INSTALL = re.compile(r'(%pip install[^\n]*"scaledl(?:\[[\w,\s-]*\])? @ git\+)([^"]+)(")')
TOML_LINE = re.compile(r'^(repository\s*=\s*")([^"]*)(")', re.MULTILINE)
URLS_LINE = re.compile(r'^(\[project\.urls\][^\[]*?^Repository\s*=\s*")([^"]*)(")', re.MULTILINE | re.DOTALL)
GITHUB = re.compile(r"^https://github\.com/([\w.-]+/[\w.-]+)$")
TEXT_FILES = ("README.md", "CONTRIBUTING.md", "INSTRUCTORS.md", "pyproject.toml")


def replace_url(text: str, old: str, new: str) -> str:
    """``text`` with the repository URL ``old`` replaced by ``new`` (a longer name that starts with ``old``
    is a different repository and stays), and Colab's GitHub links with it when both are on GitHub."""
    if not old or old == new:
        return text
    text = re.sub(re.escape(old) + r"(?![\w-])", lambda m: new, text)
    old_gh, new_gh = GITHUB.match(old), GITHUB.match(new)
    if old_gh and new_gh:
        colab = "colab.research.google.com/github/"
        text = re.sub(re.escape(colab + old_gh.group(1)) + r"(?![\w-])", lambda m: colab + new_gh.group(1), text)
    return text


def _rewrite_notebook(path: Path, old: str, url: str) -> bool:
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        new = INSTALL.sub(lambda m: m.group(1) + url + m.group(3), cell.source)
        new = replace_url(new, old, url)
        changed |= new != cell.source
        cell.source = new
    if changed:
        nbfile.write(nb, path)
    return changed


def _rewrite_text(path: Path, old: str, url: str) -> bool:
    text = path.read_text(encoding="utf-8")
    new = replace_url(text, old, url)
    if path.name == "pyproject.toml":
        new = URLS_LINE.sub(lambda m: m.group(1) + url + m.group(3), new, count=1)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def set_repository(book: Book, url: str) -> list[str]:
    """Set the repository URL everywhere; returns the files changed.

    Raises:
        ValueError: ``url`` is not an https URL of a repository.
    """
    url = url.rstrip("/")
    if not URL.match(url):
        raise UsageError(f"repository URL {url!r} should look like https://github.com/ORG/REPO")
    from scaledl.book.student_copy import write_student_version

    old = book.repository.rstrip("/")
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
        if _rewrite_notebook(path, old, url):
            changed.append(e.executed_file)
            if e.kind == "lab" and write_student_version(path, book.path(e.file), previous) == "written":
                changed.append(e.file)
    texts = [book.root / name for name in TEXT_FILES] + sorted((book.root / "docs").glob("*.md"))
    for path in texts:
        if path.is_file() and _rewrite_text(path, old, url):
            changed.append(path.relative_to(book.root).as_posix())
    return changed
