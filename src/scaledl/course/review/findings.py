"""What the review reports: a :class:`Finding` (one source line and why it matters, charged to a task or left
for a person as a REVIEW flag), the :class:`Review` that collects them, and the helper that cuts a cell's line
into a finding."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Finding:
    cell: int         # index of the cell in the notebook as graded
    line: int         # 1-based line within that cell
    code: str         # that source line, stripped, cut to 120 characters
    why: str
    task: str | None  # grade_id whose points it costs, or None for a flag a person should look at (REVIEW)


@dataclass
class Review:
    bypass: dict[str, list[Finding]] = field(default_factory=dict)  # only tasks with a finding appear
    suspicious: list[Finding] = field(default_factory=list)
    # ways to reach code without importing it by name (pickle, marshal, a source file read): harmless where the
    # library's answers are left out of the graded process, flagged for review where they cannot be
    routes: list[Finding] = field(default_factory=list)


def _finding(lines, cell, line, why, task) -> Finding:
    code = lines[line - 1].strip()[:120] if 0 < line <= len(lines) else ""
    return Finding(cell, line, code, why, task)
