"""pytest plugin (enabled in pyproject.toml): a per-notebook duration report at the end of the run.

nbval turns each notebook cell into a test item; this adds their durations up per notebook and sets them
beside the notebook's simulator budget from book.toml, slowest first.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

_durations: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _durations[path] += report.duration


def _budgets() -> dict[str, float]:
    try:
        from scaledl.book import load

        book = load()
    except Exception:  # outside the book's checkout there is simply no budget to show
        return {}
    return {Path(e.executed_file).as_posix(): e.sim_budget_s for e in book.entries}


def pytest_terminal_summary(terminalreporter):
    if not _durations:
        return
    budgets = _budgets()
    tr = terminalreporter
    tr.section("notebook durations (slowest first)")
    for path, seconds in sorted(_durations.items(), key=lambda kv: -kv[1]):
        budget = next((b for p, b in budgets.items() if path.endswith(p)), None)
        flag = ""
        if budget is not None:
            flag = f"  budget {budget:5.0f} s" + ("  OVER BUDGET" if seconds > budget else "")
        tr.write_line(f"{seconds:8.1f} s  {path}{flag}")
    tr.write_line(f"{sum(_durations.values()):8.1f} s  total over {len(_durations)} notebooks")
