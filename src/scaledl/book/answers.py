"""Folded answers: a chapter's ``answer-key`` markdown cells inside ``<details>`` (:func:`fold`), and the code
cells that only compute the answers' numbers (tagged ``answer-code``) collapsed in JupyterLab, their first line
saying so (:func:`fold_code`). Which code cells those are follows from the chapter's structure: every code cell
of its exercises section (:func:`exercise_sections`, :func:`answer_code_cells`). :mod:`scaledl.book.journey`
applies both to every chapter and ``scaledl book check`` fails until it has; the static site and students' copies
leave the answers out, answer code untagged or not (:func:`is_answer_code`, :mod:`scaledl.book.site`,
:mod:`scaledl.book.student_copy`)."""

from __future__ import annotations

import re

# An exercises heading ("## Exercises", "### Questions"): where a chapter's exercises begin. book.check reads
# exercise prompts with it too.
EXERCISE_HEADING = re.compile(r"#{1,6}\s*(Exercises?|Questions?)\b", re.I)

ANSWER_KEY_TAG = "answer-key"
ANSWER_CODE_TAG = "answer-code"  # a code cell that only computes exercises' answers: the site and students skip it
# How such a cell opens, in the lesson's part of a chapter too: "# Numbers for the answers below." and the
# folded cells' own note ("# Numbers for the answer below (folded ...)").
ANSWER_CODE_FIRST_LINE = re.compile(r"# Numbers for the answers?\b")
# JupyterLab shows a code cell with both collapsed: a "..." placeholder for its input and for its outputs.
# It keeps ``collapsed`` (nbformat's older key) and ``jupyter.outputs_hidden`` in step when it loads a cell
# (scaledl.book.nbfile writes both), so a notebook saved from JupyterLab keeps the same bytes.
ANSWER_CODE_FOLD = {"collapsed": True, "jupyter": {"source_hidden": True, "outputs_hidden": True}}
FOLD_OPEN = "<details>\n<summary>Answer</summary>\n\n"
FOLD_CLOSE = "\n\n</details>"
# The label an unfolded answer starts with ("**Answer.**", "*Answer.*", "**Answers.**"): the summary says it.
ANSWER_LABEL = re.compile(r"^\s*(\*\*|\*|__|_)Answers?(\.\1|\1\.)[ \t]*\n?")


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


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


# A markdown heading line (ATX, as JupyterLab, GitHub and myst render it: up to three spaces, one to six "#",
# then a space or the line's end) and the fence of a code block, inside which a "#" line is code, not a heading.
HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def headings(source: str) -> list[tuple[int, str]]:
    """The headings of markdown ``source`` as ``(level, text)``, in order, leaving out fenced code blocks.

    >>> headings("Text\\n\\n## Exercises\\n\\n```python\\n# a comment\\n```\\n### Computations")
    [(2, 'Exercises'), (3, 'Computations')]
    """
    found, fence = [], None
    for line in source.splitlines():
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        m = HEADING.match(line)
        if m:
            found.append((len(m.group(1)), line.strip().lstrip("#").strip()))
    return found


def exercise_sections(nb) -> list[bool]:
    """For each cell of ``nb``, whether it lies in an exercises section, the answer block of a chapter: from a
    heading ``## Exercises`` or ``### Questions`` (:data:`EXERCISE_HEADING`), on any line of a markdown cell,
    to the next heading of the same or a higher level (as many ``#`` or fewer) or the notebook's end. A lower
    heading inside it ("### Computations behind the worked answers") does not end it. A cell is in the section
    when the section is open where the cell starts: the markdown cell holding the heading is not, nor is the one
    whose heading closes it.

    Every code cell in it only computes exercises' answers (:func:`answer_code_cells`), and every ``answer-key``
    cell of a chapter sits in one (``scaledl book check`` says so). A lab's task sections hold answer-key cells
    followed by task code, so an answer-key cell alone opens no block.
    """
    inside, section = [], None  # section: the level of the open exercises heading
    for cell in nb.cells:
        inside.append(section is not None)
        if cell.cell_type != "markdown":
            continue
        for level, text in headings(cell.source):
            if section is not None and level <= section:
                section = None
            if section is None and EXERCISE_HEADING.match("#" * level + " " + text):
                section = level
    return inside


def answer_code_cells(nb) -> list[int]:
    """Indices of a notebook's code cells that only compute answers: every code cell in an exercises section
    (:func:`exercise_sections`), and any that opens with ``# Numbers for the answers``."""
    found = []
    for i, (cell, inside) in enumerate(zip(nb.cells, exercise_sections(nb))):
        first = cell.source.lstrip().split("\n", 1)[0]
        if cell.cell_type == "code" and (inside or ANSWER_CODE_FIRST_LINE.match(first)):
            found.append(i)
    return found


def is_answer_code(nb) -> list[bool]:
    """For each cell of ``nb``, whether the site and the students' copies leave it out as answer code: a code
    cell tagged ``answer-code``, or one that :func:`answer_code_cells` finds (tagged or not, so a cell the
    author forgot to tag never shows the answers' numbers)."""
    found = set(answer_code_cells(nb))
    return [cell.cell_type == "code" and (i in found or ANSWER_CODE_TAG in _tags(cell))
            for i, cell in enumerate(nb.cells)]


def answer_code_note(cells, i: int) -> str:
    """The first line of the ``answer-code`` cell ``cells[i]``: what it is and that it is folded on purpose.

    It names the answers it serves as those "below", "the answer below" when one answer-key cell comes before
    the next ``answer-code`` cell, or, when no answer follows (a chapter that computes every answer in its last
    cell), those "above".
    """
    answers = [cell.cell_type == "markdown" and ANSWER_KEY_TAG in _tags(cell) for cell in cells]
    if not any(answers[i + 1:]):
        return "# Numbers for the answers above (folded so the answers stay hidden until you open them)."
    served = 0
    for cell, answer in zip(cells[i + 1:], answers[i + 1:]):
        if cell.cell_type == "code" and ANSWER_CODE_TAG in _tags(cell):
            break
        served += answer
    if served == 1:
        return "# Numbers for the answer below (folded so the answer stays hidden until you open it)."
    return "# Numbers for the answers below (folded so the answers stay hidden until you open them)."


def is_folded_code(cells, i: int) -> bool:
    """Whether the code cell ``cells[i]`` is folded as :func:`fold_code` folds it."""
    cell = cells[i]
    meta = cell.get("metadata", {})
    jupyter = meta.get("jupyter", {})
    return (jupyter.get("source_hidden") is True and jupyter.get("outputs_hidden") is True
            and meta.get("collapsed") is True
            and cell.source.split("\n", 1)[0] == answer_code_note(cells, i))


def fold_code(cells, i: int) -> None:
    """Fold the code cell ``cells[i]`` in place: input and outputs collapsed in JupyterLab, and its first line
    :func:`answer_code_note` (replacing an older "# Numbers for the answers ..." line, else added above the
    code). Its code, outputs and execution count are left as they are."""
    cell = cells[i]
    cell.metadata["collapsed"] = ANSWER_CODE_FOLD["collapsed"]
    cell.metadata["jupyter"] = {**cell.metadata.get("jupyter", {}), **ANSWER_CODE_FOLD["jupyter"]}
    first, _, rest = cell.source.partition("\n")
    note = answer_code_note(cells, i)
    if first == note:
        return
    if ANSWER_CODE_FIRST_LINE.match(first):
        cell.source = f"{note}\n{rest}" if rest else note
    else:
        cell.source = f"{note}\n{cell.source}"
