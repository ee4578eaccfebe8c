"""Make a lab's student notebook from its solution notebook, and never overwrite a student's work.

A solution notebook marks what students write between two comment lines, nbgrader style::

    def copy_kernel(src, dst):
        ### BEGIN SOLUTION Task 1.1
        i = cuda.grid(1)
        if i < dst.size:
            dst[i] = src[i]
        ### END SOLUTION

The student version keeps everything else and puts, at the marker's indentation::

        # YOUR CODE HERE (Task 1.1)
        raise NotImplementedError("Task 1.1")

Autograded-test cells keep their visible part and lose every ``### BEGIN HIDDEN TESTS`` ...
``### END HIDDEN TESTS`` region (what nbgrader's ClearHiddenTests does; done here without nbgrader, which is
only needed to grade). Markdown cells tagged ``answer-key`` or ``solution`` (worked answers) become an empty
answer cell tagged ``answer`` (ANSWER_CELL, where the student writes theirs), code cells that only compute
answers (tagged ``answer-code``, or in an exercises section: :func:`scaledl.book.answers.is_answer_code`) are
left out, as the static site leaves them out, and all outputs are cleared. The
student version is derived data:
``scaledl book check`` verifies it equals what this module makes from the solution.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path

import nbformat

from scaledl._args import UsageError
from scaledl.book import nbfile
from scaledl.book.answers import is_answer_code

BEGIN = re.compile(r"^(?P<indent>[ \t]*)### BEGIN SOLUTION(?P<task>.*)$")
END = re.compile(r"^[ \t]*### END SOLUTION\s*$")
HIDDEN_BEGIN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS")
HIDDEN_END = re.compile(r"^[ \t]*### END HIDDEN TESTS\s*$")


def strip_hidden_tests(source: str, where: str = "cell") -> str:
    """Drop every ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` region, markers included.

    Raises:
        ValueError: an unmatched or nested marker, naming ``where``.
    """
    if "HIDDEN TESTS" not in source:
        return source
    out, inside = [], False
    for lineno, line in enumerate(source.splitlines(), 1):
        if HIDDEN_BEGIN.match(line):
            if inside:
                raise UsageError(f"{where}: line {lineno} opens a hidden-test region inside another one")
            inside = True
        elif HIDDEN_END.match(line):
            if not inside:
                raise UsageError(f"{where}: line {lineno} closes a hidden-test region that was never opened")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise UsageError(f"{where}: a hidden-test region is never closed")
    return "\n".join(out).rstrip("\n")


def strip_source(source: str, where: str = "cell") -> str:
    """Replace every marked solution block in ``source`` with a ``NotImplementedError`` stub.

    Raises:
        ValueError: a BEGIN without END (or the reverse), naming ``where``.
    """
    out, inside = [], None
    for lineno, line in enumerate(source.splitlines(), 1):
        begin = BEGIN.match(line)
        if begin:
            if inside is not None:
                raise UsageError(f"{where}: line {lineno} opens a solution block inside another one")
            inside = begin
            task = begin.group("task").strip()
            label = f" ({task})" if task else ""
            message = task or "write this part"
            out.append(f"{begin.group('indent')}# YOUR CODE HERE{label}")
            out.append(f"{begin.group('indent')}raise NotImplementedError({message!r})")
        elif END.match(line):
            if inside is None:
                raise UsageError(f"{where}: line {lineno} closes a solution block that was never opened")
            inside = None
        elif inside is None:
            out.append(line)
    if inside is not None:
        raise UsageError(f"{where}: a solution block is never closed")
    return "\n".join(out)


ANSWER_CELL = "*Your answer* (double-click this cell to write it):"
# Markdown cells holding a worked answer: "answer-key" (the book-wide tag for exercise answers) or
# "solution" (the labs' older name for the same thing). Neither reaches a student copy.
ANSWER_TAGS = frozenset({"answer-key", "solution"})


def student_version(solution_nb) -> nbformat.NotebookNode:
    """The notebook a student starts from: solutions stubbed, worked answers replaced by empty answer cells,
    the code that only computes answers left out, outputs cleared."""
    nb = copy.deepcopy(solution_nb)
    cells = []
    for i, (cell, answer_code) in enumerate(zip(nb.cells, is_answer_code(nb))):
        if answer_code:
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "markdown" and ANSWER_TAGS.intersection(tags):
            blank = nbformat.v4.new_markdown_cell(ANSWER_CELL, metadata={"tags": ["answer"]})
            if "id" in cell:
                blank["id"] = cell["id"]  # stable ids: regenerating the copy changes nothing else
            else:
                blank.pop("id", None)  # nbformat < 4.5 has no cell ids; a random one would differ on every run
            cells.append(blank)
            continue
        if cell.cell_type == "code":
            cell.source = strip_hidden_tests(strip_source(cell.source, where=f"cell {i}"), where=f"cell {i}")
            cell.outputs = []
            cell.execution_count = None
        cell.get("metadata", {}).pop("execution", None)
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    nb.metadata[STAMP] = {"fingerprint": fingerprint(nb)}
    return nb


STAMP = "scaledl_student_version"  # notebook metadata: the fingerprint of the file as generated


def fingerprint(nb) -> str:
    """A hash of the notebook's content, leaving out its own stamp."""
    bare = copy.deepcopy(nb)
    bare.metadata.pop(STAMP, None)
    return hashlib.sha256(nbfile.dumps(bare).encode()).hexdigest()


def untouched(nb) -> bool:
    """True when a student notebook is exactly as it was generated: no edit, no run, since then."""
    return nb.metadata.get(STAMP, {}).get("fingerprint") == fingerprint(nb)


def _same(a, b) -> bool:
    return nbfile.dumps(a) == nbfile.dumps(b)


def _same_content(a, b) -> bool:
    return fingerprint(a) == fingerprint(b)


def write_student_version(solution_path: Path, student_path: Path, previous_solution=None) -> str:
    """Write the student notebook, unless doing so would lose a student's edits.

    The file is written when it does not exist, or when nobody has touched it since it was generated: its
    stamp (a fingerprint of its content at generation) still matches, or it equals the student version of
    ``previous_solution``. Any edit, and any run of a cell, changes the fingerprint, so a student's copy is
    left alone. Returns ``"written"``, ``"unchanged"`` or ``"kept"``.
    """
    solution_nb = nbformat.read(solution_path, as_version=4)
    fresh = student_version(solution_nb)
    if student_path.exists():
        on_disk = nbformat.read(student_path, as_version=4)
        if _same(on_disk, fresh):
            return "unchanged"
        pristine = untouched(on_disk) or _same_content(on_disk, fresh) or (
            previous_solution is not None and _same_content(on_disk, student_version(previous_solution)))
        if not pristine:
            return "kept"
    student_path.parent.mkdir(parents=True, exist_ok=True)
    nbfile.write(fresh, student_path)
    return "written"


def student_work_kept(book, entry) -> bool:
    """True when the lab's student copy holds a student's own work: edited or run since it was generated.

    Such a copy is a valid state of the repository (a student's checkout); no command overwrites it and
    ``scaledl book check`` reports it instead of failing.
    """
    path = book.path(entry.file)
    if entry.kind != "lab" or not path.is_file():
        return False
    on_disk = nbformat.read(path, as_version=4)
    try:
        fresh = student_version(nbformat.read(book.path(entry.solution), as_version=4))
    except ValueError:
        return False
    return STAMP in on_disk.metadata and not untouched(on_disk) and not _same_content(on_disk, fresh)


def check_student_version(book, entry) -> list[str]:
    """``scaledl book check``'s test that a lab's student file is exactly derived from its solution.

    A copy with a student's work in it (see :func:`student_work_kept`) is not checked: it is theirs.
    """
    solution = nbformat.read(book.path(entry.solution), as_version=4)
    student = nbformat.read(book.path(entry.file), as_version=4)
    problems = []
    try:
        expected = student_version(solution)
    except ValueError as err:
        return [f"{entry.solution}: {err}"]
    if not any(BEGIN.match(line) for c in solution.cells if c.cell_type == "code"
               for line in c.source.splitlines()):
        problems.append(f"{entry.solution}: marks no '### BEGIN SOLUTION' block; students would have nothing "
                        f"to write")
    if student_work_kept(book, entry):
        return problems
    if not _same(student, expected):
        problems.append(f"{entry.file}: differs from the student version of {entry.solution}; run "
                        f"`scaledl book execute {entry.id}` to remake it (edits in a student's own copy are "
                        f"never overwritten)")
    return problems


def write_handin_catalogue(book) -> bool:
    """Rewrite :data:`scaledl.labs.handin.CATALOGUE` (each lab's file, tasks and cell marks, which the labs' *Check
    before you hand in* cell reads) from the book's lab solutions; True when it changed. ``scaledl book execute``
    calls it after a lab. Only the book whose checkout holds that very file rewrites it: a book elsewhere (a test's
    temporary book, a fork executed against an installed package) changes nothing."""
    import json

    from scaledl.labs import handin

    own = Path(book.root) / "src" / "scaledl" / "labs" / handin.CATALOGUE.name
    if not own.is_file() or own.resolve() != handin.CATALOGUE.resolve():
        return False

    text = json.dumps(handin.catalogue(book), indent=1, sort_keys=True) + "\n"
    if handin.CATALOGUE.exists() and handin.CATALOGUE.read_text(encoding="utf-8") == text:
        return False
    handin.CATALOGUE.write_text(text, encoding="utf-8")
    return True
