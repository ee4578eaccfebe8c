"""The reader's path through the notebooks: each one's opening cell, its closing "where next" cell, and folded
answers, all made from book.toml.

Every written notebook (a chapter, a lab's solution and so its student copy) gets two generated markdown cells:

* right after the title (cell 0), a cell tagged ``book-intro``: what it teaches, what it assumes (links to the
  earlier chapters) and how long it takes to run on a CPU and on a GPU (``teaches``, ``assumes``,
  ``cpu_minutes``, ``gpu_minutes`` in book.toml);
* as its last cell, a cell tagged ``book-nav``: links to the previous and next chapter in reading order and to
  the labs that practise it (a lab: back to the chapters it practises, on to the next chapter).

Links are relative to the notebook a reader opens (a lab's student copy in ``labs/``, whose cells are copied
from the solution), so they work in JupyterLab: ``[14 All-reduce](14_all_reduce.ipynb)``,
``[Lab 5: ...](../labs/lab05_ring_all_reduce.ipynb)``. In a chapter every markdown cell tagged ``answer-key``
is folded into ``<details><summary>Answer</summary> ... </details>``, with blank lines around the answer so that
JupyterLab, Colab and GitHub render its markdown. :func:`update` does all of it and only ever touches those
cells, so running it twice changes nothing and no re-execution is needed; :func:`problems` is what
``scaledl book check`` reports until ``scaledl book journey --write`` has been run.
"""

from __future__ import annotations

import copy
import math
import os
import re
from pathlib import Path

import nbformat

from scaledl.book import nbfile
from scaledl.book.toc import Book, Entry

INTRO_TAG = "book-intro"
NAV_TAG = "book-nav"
ANSWER_KEY_TAG = "answer-key"
ANSWER_CODE_TAG = "answer-code"  # a code cell that only computes exercises' answers: the site and students skip it
ANSWER_CODE_FIRST_LINE = "# Numbers for the answers"
FOLD_OPEN = "<details>\n<summary>Answer</summary>\n\n"
FOLD_CLOSE = "\n\n</details>"
# The label an unfolded answer starts with ("**Answer.**", "*Answer.*", "**Answers.**"): the summary says it.
ANSWER_LABEL = re.compile(r"^\s*(\*\*|\*|__|_)Answers?(\.\1|\1\.)[ \t]*\n?")
CPU_WORDS = "a 2-core CPU"  # the machine the book's outputs are executed on, shared: the minutes are an upper bound


def fix_command(entry: Entry) -> str:
    return f"`scaledl book journey --write {entry.id}`"


def minutes_from_seconds(seconds: float) -> int:
    """Whole minutes, rounded up (at least 1): what book.toml's ``cpu_minutes`` holds.

    >>> minutes_from_seconds(61.0)
    2
    """
    if not seconds >= 0:
        raise ValueError(f"seconds = {seconds!r}; expected a measured time >= 0")
    return max(1, math.ceil(seconds / 60))


# ---------------------------------------------------------------------------------------------------------
# Links and the two generated cells


def label(entry: Entry) -> str:
    """How a link names an entry: ``14 All-reduce`` for a chapter, its title (``Lab 5: ...``) for a lab."""
    return f"{entry.id} {entry.title}" if entry.kind == "chapter" else entry.title


def link(holder: Entry, target: Entry) -> str:
    """A markdown link from the notebook a reader opens for ``holder`` to the one they open for ``target``;
    the bare label when ``target`` is planned (no notebook yet)."""
    if not target.validated:
        return f"{label(target)} (planned, not written yet)"
    rel = os.path.relpath(target.file, start=os.path.dirname(holder.file) or ".")
    return f"[{label(target)}]({Path(rel).as_posix()})"


def _written(book: Book) -> list[Entry]:
    return [e for e in book.entries if e.validated]


def _after(book: Book, entry: Entry, kind: str | None = None) -> Entry | None:
    order = _written(book)
    later = order[order.index(entry) + 1:]
    return next((e for e in later if kind is None or e.kind == kind), None)


def _before(book: Book, entry: Entry, kind: str) -> Entry | None:
    order = _written(book)
    earlier = order[: order.index(entry)]
    return next((e for e in reversed(earlier) if e.kind == kind), None)


def practised(book: Book, lab: Entry) -> list[Entry]:
    """The chapters a lab practises: its ``practises`` in book.toml, else every chapter of its part."""
    if lab.practises:
        return [book.resolve(i) for i in lab.practises]
    return [e for e in book.entries if e.kind == "chapter" and e.part == lab.part]


def labs_of(book: Book, chapter: Entry) -> list[Entry]:
    """The written labs that practise ``chapter``."""
    return [e for e in _written(book) if e.kind == "lab" and chapter in practised(book, e)]


def intro_source(book: Book, entry: Entry) -> str:
    """The ``book-intro`` cell: what the notebook teaches, what it assumes, its time to run."""
    if entry.teaches is None or entry.cpu_minutes is None:
        raise ValueError(f"{entry.kind} {entry.id}: book.toml gives no 'teaches' or 'cpu_minutes' to make its "
                         f"opening cell from")
    assumed = [book.resolve(i) for i in entry.assumes]
    if assumed:
        assumes = "Read first: " + ", ".join(link(entry, e) for e in assumed) + "."
    else:
        assumes = "No earlier chapter: Python and a little NumPy are enough."
    if entry.gpu_minutes is not None:
        gpu = f"about {entry.gpu_minutes:g} min on a GPU"
    else:
        gpu = (f"on a GPU its time is not measured yet (`scaledl validate --only {entry.id}` on a GPU machine "
               f"records it)")
    return (f"**What you will learn.** {entry.teaches}\n\n"
            f"**What it assumes.** {assumes}\n\n"
            f"**Time to run.** About {entry.cpu_minutes} min on {CPU_WORDS} with the simulator backend (the whole "
            f"notebook, measured; an upper bound); {gpu}.")


def _chapter_zero_paths(book: Book, entry: Entry) -> list[str]:
    lines = ["Two ways through the book:", "",
             "* **Read it in order.** Each chapter builds on the ones before it, and the labs at the end of a "
             "part practise its chapters.",
             "* **Jump to a part.** Every chapter opens by saying what it assumes, with links, so you can start "
             "where your question is and go back only where you need to:"]
    for pid, title in book.parts:
        first = next((e for e in _written(book) if e.part == pid and e.kind == "chapter" and e != entry),
                     None)
        if first is not None:
            lines.append(f"  * Part {pid}, {title}: start at {link(entry, first)}")
    return lines


def nav_source(book: Book, entry: Entry) -> str:
    """The ``book-nav`` cell that ends a notebook: where to go next, in reading order."""
    parts = dict(book.parts)
    # The first line names the notebook: like the cell's id, it must not be shared between notebooks.
    lines = [f"**Where next** after {label(entry)} (Part {entry.part}, {parts[entry.part]})", ""]
    next_entry, next_chapter = _after(book, entry), _after(book, entry, "chapter")
    if entry.kind == "chapter":
        previous = _before(book, entry, "chapter")
        if previous is not None:
            lines.append(f"* Previous chapter: {link(entry, previous)}")
        labs = labs_of(book, entry)
        if labs:
            what = "The lab that practises" if len(labs) == 1 else "The labs that practise"
            lines.append(f"* {what} this chapter: " + ", ".join(link(entry, e) for e in labs))
    else:
        chapters = practised(book, entry)
        if chapters:
            what = "the chapter" if len(chapters) == 1 else "the chapters"
            lines.append(f"* Back to {what} this lab practises: " + ", ".join(link(entry, e) for e in chapters))
    if next_entry is not None and next_entry != next_chapter:
        lines.append(f"* Next in reading order: {link(entry, next_entry)}")
    if next_chapter is not None:
        lines.append(f"* Next chapter: {link(entry, next_chapter)}")
    elif entry.kind == "chapter":
        lines.append("* This is the book's last chapter.")
    elif next_entry is None:
        lines.append("* This is the book's last lab: you have reached the end of the book.")
    if entry.kind == "chapter" and _before(book, entry, "chapter") is None and next_chapter is not None:
        lines += [""] + _chapter_zero_paths(book, entry)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# Folded answers


def is_folded(source: str) -> bool:
    text = source.strip()
    return text.startswith("<details>") and text.endswith("</details>") and "<summary>" in text


def fold(source: str) -> str:
    """``source`` (an answer) inside ``<details>``, its "Answer." label dropped (the summary says it); a folded
    answer is returned unchanged.

    >>> fold("**Answer.** 42.")
    '<details>\\n<summary>Answer</summary>\\n\\n42.\\n\\n</details>'
    """
    if is_folded(source):
        return source
    body = ANSWER_LABEL.sub("", source, count=1).strip()
    return f"{FOLD_OPEN}{body}{FOLD_CLOSE}"


# ---------------------------------------------------------------------------------------------------------
# Applying and checking


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _generated(nb, old, tag: str, source: str, entry: Entry):
    if old is not None:
        cell = copy.deepcopy(old)
        cell.source = source
        return cell
    cell = nbformat.v4.new_markdown_cell(source, metadata={"tags": [tag]})
    # A stable id (generating the cell again gives the same file) that is the notebook's own: the grader
    # tells one lab's notebook from another's by cell ids and markdown first lines (scaledl.course.integrity).
    stable = f"{tag}-{entry.id}"
    if nb.get("nbformat_minor", 0) >= 5 and stable not in {c.get("id") for c in nb.cells}:
        cell["id"] = stable
    elif nb.get("nbformat_minor", 0) < 5:
        cell.pop("id", None)
    return cell


def answer_code_cells(nb) -> list[int]:
    """Indices of a chapter's code cells that only compute answers: every code cell after its exercises heading,
    and any that opens with ``# Numbers for the answers``."""
    from scaledl.book.check import EXERCISE_HEADING

    found, in_exercises = [], False
    for i, cell in enumerate(nb.cells):
        first = cell.source.lstrip().split("\n", 1)[0]
        if cell.cell_type == "markdown" and EXERCISE_HEADING.match(first):
            in_exercises = True
        elif cell.cell_type == "code" and (in_exercises or first.startswith(ANSWER_CODE_FIRST_LINE)):
            found.append(i)
    return found


def update(nb, book: Book, entry: Entry):
    """A copy of ``nb`` with its ``book-intro`` cell at index 1, its ``book-nav`` cell last and, in a chapter,
    every ``answer-key`` cell folded. Other cells are left exactly as they are (outputs and execution counts
    included), wherever the generated cells were before.

    Raises:
        ValueError: ``nb`` has no cells (no title to put the opening cell after).
    """
    nb = copy.deepcopy(nb)
    if not nb.cells:
        raise ValueError(f"{entry.executed_file}: has no cells; expected a title cell to open the notebook")
    intro = next((c for c in nb.cells if INTRO_TAG in _tags(c)), None)
    nav = next((c for c in nb.cells if NAV_TAG in _tags(c)), None)
    cells = [c for c in nb.cells if INTRO_TAG not in _tags(c) and NAV_TAG not in _tags(c)]
    nb.cells = cells
    if entry.kind == "chapter":
        for cell in cells:
            if cell.cell_type == "markdown" and ANSWER_KEY_TAG in _tags(cell):
                cell.source = fold(cell.source)
        for i in answer_code_cells(nb):
            if ANSWER_CODE_TAG not in _tags(cells[i]):
                cells[i].metadata["tags"] = [*_tags(cells[i]), ANSWER_CODE_TAG]
    cells.insert(1, _generated(nb, intro, INTRO_TAG, intro_source(book, entry), entry))
    cells.append(_generated(nb, nav, NAV_TAG, nav_source(book, entry), entry))
    return nb


def problems(nb, book: Book, entry: Entry, name: str | None = None) -> list[str]:
    """What :func:`update` would change in ``nb``, one line per cell, naming the command that fixes it."""
    name = name or entry.executed_file
    fix = f"run {fix_command(entry)}"
    found = []
    cells = nb.cells
    for tag, want_at, source in ((INTRO_TAG, 1, intro_source(book, entry)),
                                 (NAV_TAG, len(cells) - 1, nav_source(book, entry))):
        where = "after the title (cell 1)" if tag == INTRO_TAG else "as the last cell"
        at = [i for i, c in enumerate(cells) if tag in _tags(c)]
        if not at:
            found.append(f"{name}: no {tag!r} cell {where}; {fix}")
            continue
        for i in at:
            if i != want_at or len(at) > 1:
                found.append(f"{name}: cell {i} is tagged {tag!r} but belongs {where}, once; {fix}")
            elif cells[i].cell_type != "markdown" or cells[i].source != source:
                found.append(f"{name}: cell {i} ({tag!r}) is out of date with book.toml; {fix}")
    if entry.kind == "chapter":
        for i, cell in enumerate(cells):
            if cell.cell_type == "markdown" and ANSWER_KEY_TAG in _tags(cell) and not is_folded(cell.source):
                found.append(f"{name}: cell {i} is tagged 'answer-key' but not folded in <details>; {fix}")
        for i in answer_code_cells(nb):
            if ANSWER_CODE_TAG not in _tags(cells[i]):
                found.append(f"{name}: code cell {i} computes exercise answers but is not tagged "
                             f"{ANSWER_CODE_TAG!r} (the site and the students' copy leave such cells out); {fix}")
    return found


def check_journey(book: Book) -> list[str]:
    """``scaledl book check``'s lines for every written notebook; none when book.toml has no journey fields."""
    if not book.journey:
        return []
    found = []
    for entry in _written(book):
        path = book.path(entry.executed_file)
        if path.is_file():  # a missing file is reported by check_entry
            found += problems(nbformat.read(path, as_version=4), book, entry)
    return found


def write(book: Book, entry: Entry) -> list[str]:
    """Bring ``entry``'s notebook (and a lab's student copy) in step; the paths written, empty if none changed.

    Raises:
        ValueError: ``entry`` is planned (no notebook to write).
    """
    if not entry.validated:
        raise ValueError(f"{entry.kind} {entry.id} is planned in book.toml: there is no notebook to update")
    path = book.path(entry.executed_file)
    text = path.read_text(encoding="utf-8")
    before = nbformat.reads(text, as_version=4)
    after = update(before, book, entry)
    written = []
    if nbfile.dumps(after) != text:
        nbfile.write(after, path)
        written.append(entry.executed_file)
    if entry.kind == "lab":
        from scaledl.labs.release import write_student_version

        if write_student_version(path, book.path(entry.file), previous_solution=before) == "written":
            written.append(entry.file)
    return written
