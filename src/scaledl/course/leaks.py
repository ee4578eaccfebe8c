"""Prove that a student bundle leaks nothing: the lines only solutions, hidden tests and answer keys hold.

:func:`secret_lines` classifies every line of the source book directly from its markers and tags (not
through the release code, so a bug there cannot hide itself): a line inside a ``### BEGIN SOLUTION`` or
``### BEGIN HIDDEN TESTS`` block, or in a cell tagged ``answer-key``/``solution``/``hidden-test``, is secret
unless the same line also occurs in public material (outside those blocks, in the package's source, the
README...), where it says nothing (``return out``). :func:`scan` then looks for every secret line, and every
marker, in every file of a folder.

>>> blocks = "x = 1\\n### BEGIN SOLUTION Task 1\\nreturn np.sqrt(mean_square)\\n### END SOLUTION\\n"
>>> sorted(_split(blocks)[0])
['### BEGIN SOLUTION Task 1', '### END SOLUTION', 'return np.sqrt(mean_square)']
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from scaledl.book.toc import Book
from scaledl.course.bundle import SECRET_MARKERS, SECRET_TAGS, hidden_cell

_OPEN = re.compile(r"^\s*### BEGIN (SOLUTION|HIDDEN TESTS)")
_CLOSE = re.compile(r"^\s*### END (SOLUTION|HIDDEN TESTS)")
MIN_CHARS = 12  # shorter lines ("else:", "return out") are too common to say anything about a solution
# Files a bundle publishes that may name the markers: the tools that define them, and the writing guide.
MARKERS_ALLOWED = ("src/", "CONTRIBUTING.md")


def _norm(line: str) -> str:
    return " ".join(line.split())


def _split(source: str) -> tuple[set[str], set[str]]:
    """(secret, public) normalised lines of one cell's source, by its solution and hidden-test blocks."""
    secret, public, depth = set(), set(), 0
    for line in source.splitlines():
        if _OPEN.match(line):
            depth += 1
        (secret if depth else public).add(_norm(line))
        if _CLOSE.match(line):
            depth = max(depth - 1, 0)
    return secret, public


def _outputs(cell: dict) -> list[str]:
    lines = []
    for out in cell.get("outputs", []):
        lines += "".join(out.get("text", "")).splitlines()
        for value in out.get("data", {}).values():
            if isinstance(value, (str, list)):
                lines += "".join(value).splitlines()
    return lines


def _notebook_text(path: Path) -> list[str]:
    """Every line a notebook shows: cell sources and text outputs."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    lines = []
    for cell in nb.get("cells", []):
        lines += "".join(cell.get("source", "")).splitlines() + _outputs(cell)
    return lines


def _file_lines(path: Path) -> list[str]:
    if path.suffix == ".ipynb":
        return _notebook_text(path)
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, ValueError):
        return []  # a binary file (an image) holds no source line


def secret_lines(book: Book) -> set[str]:
    """Normalised lines (at least :data:`MIN_CHARS` long) found only in solution blocks, hidden tests and
    answer keys of the book at ``book.root``."""
    secret, public = set(), set()
    for e in book.entries:
        path = book.path(e.executed_file)
        if not e.validated or not path.is_file():
            continue
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell.get("source", ""))
            if SECRET_TAGS.intersection(cell.get("metadata", {}).get("tags", [])) or hidden_cell(cell):
                secret |= {_norm(x) for x in source.splitlines()}
                continue
            s, p = _split(source)
            secret |= s
            public |= p | {_norm(x) for x in _outputs(cell)}  # e.g. show_source() printing library code
    for path in [*book.root.glob("*.md"), *(book.root / "src").rglob("*.py")]:
        public |= {_norm(x) for x in _file_lines(path)}
    return {x for x in secret - public if len(x) >= MIN_CHARS}


def scan(folder: Path, secrets: set[str]) -> list[str]:
    """Every leak in ``folder``: a file holding a secret line, or a marker outside :data:`MARKERS_ALLOWED`."""
    folder = Path(folder)
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        rel = path.relative_to(folder).as_posix()
        lines = _file_lines(path)
        text = "\n".join(lines)
        if not rel.startswith(MARKERS_ALLOWED):
            found += [f"{rel}: holds the marker {m!r}" for m in SECRET_MARKERS if m in text]
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
            for i, cell in enumerate(cells):
                tags = SECRET_TAGS.intersection(cell.get("metadata", {}).get("tags", []))
                found += [f"{rel}: cell {i} is tagged {t!r}" for t in sorted(tags)]
                if hidden_cell(cell):
                    found.append(f"{rel}: cell {i} has nbgrader metadata naming a hidden test")
        hits = secrets.intersection(_norm(x) for x in lines)
        found += [f"{rel}: holds a line of a solution, hidden test or answer key: {h!r}" for h in sorted(hits)]
    return found
