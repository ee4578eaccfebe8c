"""The reader's path through the notebooks: each one's opening cell, its closing "where next" cell, and folded
answers, all made from book.toml.

Every written notebook (a chapter, a lab's solution and so its student copy) gets two generated markdown cells:

* right after the title (cell 0), a cell tagged ``book-intro``: what it teaches, what it assumes (links to the
  earlier chapters) and how long it takes to run on a CPU and on a GPU (``teaches``, ``assumes``,
  ``cpu_seconds``, ``gpu_minutes`` in book.toml; both times said as :func:`duration` rounds them);
* as its last cell, a cell tagged ``book-nav``: links to the previous and next chapter in reading order and to
  the labs that practise it (a lab: back to the chapters it practises, on to the next chapter).

Links are relative to the notebook a reader opens (a lab's student copy in ``labs/``, whose cells are copied from
the solution), so they work in JupyterLab: ``[14 All-reduce](14_all_reduce.ipynb)``, ``[Lab 5:
...](../labs/lab05_ring_all_reduce.ipynb)``. In a chapter every markdown cell tagged ``answer-key`` is folded into
``<details><summary>Answer</summary> ... </details>``, with blank lines around the answer so that JupyterLab, Colab
and GitHub render its markdown. Every code cell tagged ``answer-code`` (the cells that compute the numbers the
answers quote) is folded in JupyterLab too: its input and its outputs collapsed (cell metadata
``jupyter.source_hidden`` and ``jupyter.outputs_hidden``, and ``collapsed``, which JupyterLab keeps in step with the
latter), and its first line a comment saying what it is and that it is folded on purpose (:func:`answer_code_note`),
so a reader scrolling to the exercises sees neither its code nor its printed numbers until they open it (the folding
itself is :mod:`scaledl.book.answers`). :func:`update` does all of it and only ever touches those cells (a code cell
only in its metadata and its first comment line, never its code or outputs), so running it twice changes nothing and
no re-execution is needed; :func:`problems` is what ``scaledl book check`` reports until ``scaledl book journey
--write`` has been run.
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import nbformat

from scaledl._args import UsageError
from scaledl.book import nbfile
from scaledl.book.answers import (ANSWER_CODE_TAG, ANSWER_KEY_TAG, _tags, answer_code_cells, answer_code_note,
                                  exercise_sections, fold, fold_code, is_folded, is_folded_code)
from scaledl.book.toc import Book, Entry

INTRO_TAG = "book-intro"
NAV_TAG = "book-nav"

CPU_WORDS = "a 2-core CPU"  # the machine the book's outputs are executed on (book.toml's cpu_seconds)


def fix_command(entry: Entry) -> str:
    return f"`scaledl book journey --write {entry.id}`"


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def duration(seconds: float) -> str:
    """A measured run time in words, rounded as far as a time that varies from machine to machine deserves.

    The rule (book.toml's ``cpu_seconds`` and ``gpu_minutes`` are both said with it): under 10 s, "under
    10 s"; under a minute, the nearest 10 s; under 10 minutes, the nearest half minute; beyond, the nearest
    minute. Halves round up, and a time that rounds to 60 s is said in minutes.

    >>> [duration(s) for s in (5.7, 44, 45, 56, 100, 135, 700)]
    ['under 10 s', 'about 40 s', 'about 50 s', 'about 1 min', 'about 1.5 min', 'about 2.5 min', 'about 12 min']

    Raises:
        ValueError: ``seconds`` is negative or not a number.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
        raise UsageError(f"seconds = {seconds!r}; expected a measured time >= 0")
    if seconds < 10:
        return "under 10 s"
    tens = 10 * _round_half_up(seconds / 10)
    if tens < 60:
        return f"about {tens} s"
    halves = _round_half_up(seconds / 30)
    if halves < 20:
        return f"about {halves / 2:g} min"
    return f"about {_round_half_up(seconds / 60)} min"


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
    """The ``book-intro`` cell: what the notebook teaches, what it assumes, its time to run (measured, said as
    :func:`duration` rounds it)."""
    if entry.teaches is None or entry.cpu_seconds is None:
        raise UsageError(f"{entry.kind} {entry.id}: book.toml gives no 'teaches' or 'cpu_seconds' to make its "
                         f"opening cell from")
    assumed = [book.resolve(i) for i in entry.assumes]
    if assumed:
        assumes = "Read first: " + ", ".join(link(entry, e) for e in assumed) + "."
    else:
        assumes = "No earlier chapter: Python and a little NumPy are enough."
    if entry.gpu_minutes is not None:
        gpu = f"{duration(entry.gpu_minutes * 60)} on a GPU"
    else:
        gpu = (f"on a GPU its time is not measured yet (`scaledl validate --only {entry.id}` on a GPU machine "
               f"records it)")
    cpu = duration(entry.cpu_seconds)
    return (f"**What you will learn.** {entry.teaches}\n\n"
            f"**What it assumes.** {assumes}\n\n"
            f"**Time to run.** {cpu[0].upper()}{cpu[1:]} on {CPU_WORDS} with the simulator backend (the whole "
            f"notebook, measured); {gpu}.")


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
# Applying and checking


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


def update(nb, book: Book, entry: Entry):
    """A copy of ``nb`` with its ``book-intro`` cell at index 1, its ``book-nav`` cell last and, in a chapter,
    every ``answer-key`` cell folded, every code cell that only computes answers tagged ``answer-code`` and
    folded (:func:`fold_code`). Other cells are left exactly as they are (outputs and execution counts
    included), wherever the generated cells were before.

    Raises:
        ValueError: ``nb`` has no cells (no title to put the opening cell after).
    """
    nb = copy.deepcopy(nb)
    if not nb.cells:
        raise UsageError(f"{entry.executed_file}: has no cells; expected a title cell to open the notebook")
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
        for i, cell in enumerate(cells):
            if cell.cell_type == "code" and ANSWER_CODE_TAG in _tags(cell):
                fold_code(cells, i)
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
        for i, (cell, in_exercises) in enumerate(zip(cells, exercise_sections(nb))):
            if cell.cell_type == "markdown" and ANSWER_KEY_TAG in _tags(cell) and not is_folded(cell.source):
                found.append(f"{name}: cell {i} is tagged 'answer-key' but not folded in <details>; {fix}")
            if cell.cell_type == "markdown" and ANSWER_KEY_TAG in _tags(cell) and not in_exercises:
                found.append(f"{name}: cell {i} is tagged 'answer-key' but no exercises heading ('## Exercises' or "
                             f"'## Questions') opens its section, so the code cells that compute its numbers are "
                             f"not checked as answer code; put it under the chapter's exercises heading")
        for i in answer_code_cells(nb):
            if ANSWER_CODE_TAG not in _tags(cells[i]):
                found.append(f"{name}: code cell {i} computes exercise answers but is not tagged "
                             f"{ANSWER_CODE_TAG!r} (the site and the students' copy leave such cells out); {fix}")
        for i, cell in enumerate(cells):
            if cell.cell_type == "code" and ANSWER_CODE_TAG in _tags(cell) and not is_folded_code(cells, i):
                found.append(f"{name}: code cell {i} is tagged {ANSWER_CODE_TAG!r} but not folded: JupyterLab "
                             f"would show its code and the numbers of the answers (expected metadata "
                             f"jupyter.source_hidden, jupyter.outputs_hidden and collapsed true, and the first "
                             f"line {answer_code_note(cells, i)!r}); {fix}")
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
        raise UsageError(f"{entry.kind} {entry.id} is planned in book.toml: there is no notebook to update")
    path = book.path(entry.executed_file)
    text = path.read_text(encoding="utf-8")
    before = nbformat.reads(text, as_version=4)
    after = update(before, book, entry)
    written = []
    if nbfile.dumps(after) != text:
        nbfile.write(after, path)
        written.append(entry.executed_file)
    if entry.kind == "lab":
        from scaledl.book.student_copy import write_student_version

        if write_student_version(path, book.path(entry.file), previous_solution=before) == "written":
            written.append(entry.file)
    return written
