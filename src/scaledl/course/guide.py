"""The instructor guide's generated part: which chapters and labs want a GPU, from book.toml's ``gpu``.

``docs/instructor-guide.md`` holds the table between two markers; ``python -m scaledl.course.guide``
rewrites it, and ``tests/unit/test_instructor_guide.py`` fails when it differs from book.toml (as the
README's table does). The course plans are written by hand, and that test checks that every chapter and lab
that is not planned appears in both.

>>> from scaledl.book.toc import Book, Entry
>>> book = Book(root=None, title="T", authors=(), license="", repository="", parts=(("I", "P"),),
...             entries=(Entry("chapter", "04", "c.ipynb", "GEMM", "done", "I", gpu=True),))
>>> print(gpu_table(book))
| | Title | GPU | Simulator budget |
| --- | --- | --- | --- |
| Chapter 04 | GEMM | recommended | 60 s |
"""

from __future__ import annotations

from pathlib import Path

from scaledl._args import UsageError
from scaledl.book.toc import Book

GUIDE = "docs/instructor-guide.md"
START, END = "<!-- gpu table: start -->", "<!-- gpu table: end -->"


def gpu_table(book: Book) -> str:
    """Every chapter and lab that is not planned: whether a GPU is recommended, and its simulator budget."""
    rows = ["| | Title | GPU | Simulator budget |", "| --- | --- | --- | --- |"]
    for e in book.entries:
        if e.validated:
            label = f"Chapter {e.id}" if e.kind == "chapter" else f"Lab {e.id[3:]}"
            rows.append(f"| {label} | {e.title} | {'recommended' if e.gpu else 'not needed'} | "
                        f"{e.sim_budget_s:.0f} s |")
    return "\n".join(rows)


def section(text: str) -> str:
    """The guide's text between the table markers.

    Raises:
        ValueError: the markers are missing.
    """
    if START not in text or END not in text:
        raise UsageError(f"{GUIDE}: expected the markers {START!r} and {END!r}")
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def update_guide(book: Book) -> bool:
    """Rewrite the guide's GPU table from book.toml; True when the file changed."""
    path = Path(book.root) / GUIDE
    text = path.read_text(encoding="utf-8")
    section(text)  # the markers are there
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    new = f"{head}{START}\n{gpu_table(book)}\n{END}{tail}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    from scaledl.book import load

    print(f"{GUIDE} updated" if update_guide(load()) else f"{GUIDE} already up to date")
