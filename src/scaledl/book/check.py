"""Fast static checks of the book's notebooks: no kernel is started.

Every problem is a line that names the notebook, the cell and what is wrong, so that ``scaledl book check``
can be read like a compiler's error list.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from scaledl.book import nbfile
from scaledl.book.answers import EXERCISE_HEADING
from scaledl.book.journey import check_journey
from scaledl.book.site import ANSWER_KEY_TAGS
from scaledl.book.toc import Book, Entry

# Absolute paths of a particular machine, which make outputs differ between readers.
MACHINE_PATH = re.compile(r"(/root/|/home/[^/\s]+/|/Users/[^/\s]+/|/work/|/tmp/|[A-Za-z]:\\\\Users\\\\|site-packages/)")
NOTEBOOK_FOLDERS = ("chapters", "labs")
# How the book writes an exercise or question prompt, as the first characters of a markdown line: a heading
# ("## Exercises"), a bold label ("**Exercise 2.**", "**Question 1.1.**", "**3.**"), or, at the start of a
# paragraph, an ordered-list item ("2. Fit the ..."). Answers number their points "(1)", which none of these
# match; a mid-paragraph line that wraps at a number ("... 12. The model") is not a list item in Markdown.
EXERCISE_LABEL = re.compile(r"(\*\*|__|\*|_)((Exercise|Question)s?(?![a-z])|\d+(\.\d+)*\.(\*\*|__|\*|_))", re.I)
LIST_ITEM = re.compile(r"\d+[.)]\s")


def notebooks_on_disk(root: Path) -> list[str]:
    found = []
    for folder in NOTEBOOK_FOLDERS:
        for path in sorted((root / folder).rglob("*.ipynb")):
            if ".ipynb_checkpoints" not in path.parts:
                found.append(path.relative_to(root).as_posix())
    return found


def check_executed(nb, name: str) -> list[str]:
    """Problems of a notebook that is committed with outputs (a chapter or a lab solution)."""
    problems = []
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
    if code and not any(c.get("outputs") for _, c in code):
        problems.append(f"{name}: no stored outputs; execute it with `scaledl book execute {Path(name).stem}`")
    counts = [c.get("execution_count") for _, c in code]
    if None in counts:
        missing = [i for (i, c) in code if c.get("execution_count") is None]
        problems.append(f"{name}: code cells {missing[:5]} were never executed")
    elif counts != list(range(1, len(counts) + 1)):
        problems.append(f"{name}: execution counts {counts[:10]} are not 1, 2, 3, ... (not run top to bottom "
                        f"in one fresh kernel)")
    for i, cell in code:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                problems.append(f"{name}: cell {i} stores an error ({out.get('ename')}: {out.get('evalue')})")
            blob = repr(out.get("text", "")) + repr(out.get("data", {}))
            match = MACHINE_PATH.search(blob)
            if match:
                problems.append(f"{name}: cell {i} output shows a machine path ({match.group(0)!r}...)")
    return problems


def exercise_line(source: str) -> str | None:
    """The first line of markdown ``source`` that opens an exercise prompt, or None."""
    previous = ""
    for line in source.splitlines():
        text = line.strip()
        list_item = not previous.strip() and LIST_ITEM.match(text)  # only a paragraph's first line can be one
        if EXERCISE_HEADING.match(text) or EXERCISE_LABEL.match(text) or list_item:
            return text
        previous = line
    return None


def check_answer_keys(nb, name: str) -> list[str]:
    """An answer-key cell must hold only an answer: the site and the student release drop it, prompt and all."""
    problems = []
    for i, cell in enumerate(nb.cells):
        tags = ANSWER_KEY_TAGS.intersection(cell.get("metadata", {}).get("tags", []))
        if cell.cell_type != "markdown" or not tags:
            continue
        line = exercise_line(cell.source)
        if line is not None:
            problems.append(f"{name}: cell {i} is tagged {sorted(tags)[0]!r} but holds an exercise prompt "
                            f"({line[:60]!r}); the site and the student release drop that cell, so move the "
                            f"prompt into an untagged markdown cell before it")
    return problems


def check_kernelspec(nb, name: str) -> list[str]:
    spec = nb.metadata.get("kernelspec", {})
    if spec.get("name") != "python3" or spec.get("language", "python") != "python":
        return [f"{name}: kernelspec is {dict(spec)!r}; expected name 'python3', language 'python' so that "
                f"every Jupyter (JupyterLab, Colab, a JupyterHub) opens it with its Python kernel"]
    return []


def check_entry(book: Book, entry: Entry) -> list[str]:
    problems = []
    if not entry.validated:
        return problems
    for rel in {entry.file, entry.executed_file}:
        if not book.path(rel).is_file():
            problems.append(f"{rel}: listed in book.toml as {entry.kind} {entry.id} ({entry.status}) but missing")
    if problems:
        return problems
    executed = nbformat.read(book.path(entry.executed_file), as_version=4)
    problems += check_kernelspec(executed, entry.executed_file)
    problems += check_executed(executed, entry.executed_file)
    problems += check_answer_keys(executed, entry.executed_file)
    problems += nbfile.problems(book.path(entry.executed_file), entry.executed_file)
    if entry.kind == "lab":
        from scaledl.book.student_copy import check_student_version, student_work_kept

        problems += check_student_version(book, entry)
        if not student_work_kept(book, entry):
            problems += nbfile.problems(book.path(entry.file), entry.file)
    return problems


def student_work(book: Book) -> list[str]:
    """The lab copies holding a student's own work, which every command leaves alone (reported, not errors)."""
    from scaledl.book.student_copy import student_work_kept

    return [e.file for e in book.entries if e.validated and student_work_kept(book, e)]


def check_readme(book: Book) -> list[str]:
    """The README's table of chapters and labs must say what book.toml says (statuses included)."""
    from scaledl.book.toc import README_END, README_START, status_table

    path = book.root / "README.md"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if README_START not in text:
        return []  # a book without the generated table (the tests' small books)
    current = text.split(README_START, 1)[1].split(README_END, 1)[0].strip()
    if current != status_table(book):
        return ["README.md: its table of chapters and labs differs from book.toml; run `scaledl book readme`"]
    return []


PLACEHOLDER_ORG = "YOUR-ORG"


def placeholder_warnings(book: Book) -> list[str]:
    """Warnings, not problems: book.toml's repository is still the placeholder, so the setup cells' install
    line cannot work outside a checkout; the fix is one command."""
    if PLACEHOLDER_ORG not in book.repository:
        return []
    return [f"warning: book.toml's repository is the placeholder {book.repository}: every notebook's setup cell "
            f"installs from it, which cannot work outside this checkout (Colab, Kaggle, a JupyterHub). Set the "
            f"book's real home with `scaledl book set-repository https://github.com/ORG/REPO`."]


def check_book(book: Book) -> list[str]:
    """Every problem found, as readable lines; an empty list means the book is consistent."""
    problems = []
    listed = set()
    for e in book.entries:
        listed.add(e.file)
        if e.solution:
            listed.add(e.solution)
        problems += check_entry(book, e)
    problems += check_readme(book)

    problems += check_journey(book)  # opening and "where next" cells, folded answers (book.toml's journey)
    for rel in notebooks_on_disk(book.root):
        if rel not in listed:
            problems.append(f"{rel}: on disk but not in book.toml (add it, with status 'draft' if unfinished)")
    return problems
