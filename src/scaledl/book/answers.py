"""Folded answers: a chapter's ``answer-key`` markdown cells inside ``<details>`` (:func:`fold`), and the code
cells that only compute the answers' numbers (tagged ``answer-code``) collapsed in JupyterLab, their first line
saying so (:func:`fold_code`). :mod:`scaledl.book.journey` applies both to every chapter; students' copies leave
the answers out (:mod:`scaledl.book.student_copy`)."""

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


def answer_code_cells(nb) -> list[int]:
    """Indices of a chapter's code cells that only compute answers: every code cell after its exercises heading,
    and any that opens with ``# Numbers for the answers``."""
    found, in_exercises = [], False
    for i, cell in enumerate(nb.cells):
        first = cell.source.lstrip().split("\n", 1)[0]
        if cell.cell_type == "markdown" and EXERCISE_HEADING.match(first):
            in_exercises = True
        elif cell.cell_type == "code" and (in_exercises or ANSWER_CODE_FIRST_LINE.match(first)):
            found.append(i)
    return found


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
