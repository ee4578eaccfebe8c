"""A lab's written answers (the Markdown cells tagged ``answer``: the Questions and the short explanations after
some tasks) and which of them a notebook still holds as handed out.

One decision, made in one place and used by both sides: the notebook's *Check before you hand in* cell
(:mod:`scaledl.labs.handin`, from the answers listed in its catalogue) and the grader's feedback
(:mod:`scaledl.course.grade`, from the lab's student copy). Written answers are graded by hand, so an answer left
as handed out costs its points without any check failing: both say "Question 2: not answered yet".

>>> lab = {"cells": [{"cell_type": "markdown", "id": "q", "source": "**Question 2.** Why?"},
...                  {"cell_type": "markdown", "id": "a", "metadata": {"tags": ["answer"]},
...                   "source": "*Your answer* (double-click this cell to write it):"}]}
>>> answers = answers_of(lab)
>>> answers
[{'id': 'a', 'label': 'Question 2', 'stub': '*Your answer* (double-click this cell to write it):'}]
>>> unanswered(lab, answers), unanswered({"cells": [{**lab["cells"][1], "source": "Because."}]}, answers)
(['Question 2'], [])
"""

from __future__ import annotations

import re

LABEL = re.compile(r"^\s*(?:#+\s*)?\**\s*((?:Question|Task)\s+\d+(?:\.\d+)?[a-z]?)\b", re.IGNORECASE)
HEADING = re.compile(r"^\s*#+\s*(.+?)\s*$")
ITEM = re.compile(r"^\s{0,3}(\d+)\.\s")  # "2. Set CHAINS = 1, ...": an item of a Questions list


def _source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else str(s)


def _plain(text: str) -> str:
    """Text compared for "as handed out": trailing spaces and blank lines at either end ignored."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _is_answer(cell) -> bool:
    return cell.get("cell_type") == "markdown" and "answer" in (cell.get("metadata") or {}).get("tags", [])


def answers_of(student_copy: dict) -> list[dict]:
    """The written answers of a lab's student copy (a notebook as a dict or NotebookNode), in order: each one's
    cell id, a label from the Markdown before it ("Question 2", else the last heading) and its handed-out text."""
    out, label, heading = [], None, None
    for cell in student_copy.get("cells", []):
        text = _source(cell)
        if _is_answer(cell):
            name = label or (f"the answer after {heading!r}" if heading else f"written answer {len(out) + 1}")
            out.append({"id": cell.get("id"), "label": name, "stub": _plain(text)})
            label = None
        elif cell.get("cell_type") == "markdown":
            for line in text.splitlines():
                if LABEL.match(line):
                    label = LABEL.match(line).group(1)
                    break
                if HEADING.match(line):
                    heading, label = HEADING.match(line).group(1)[:60], None
                elif ITEM.match(line):
                    label = f"{heading or 'item'} {ITEM.match(line).group(1)}"
    return out


def unanswered(nb: dict, answers: list[dict]) -> list[str]:
    """The labels of ``answers`` that ``nb`` holds as handed out (or empty, or deleted)."""
    cells = {c.get("id"): c for c in nb.get("cells", []) if c.get("id")}
    left = []
    for a in answers:
        cell = cells.get(a["id"])
        text = _plain(_source(cell)) if cell is not None else ""
        if not text or text == a["stub"]:
            left.append(a["label"])
    return left
