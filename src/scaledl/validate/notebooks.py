"""Execute every cell of the book's GPU notebooks (``gpu = true`` in book.toml), recording each cell.

Each notebook runs in a fresh kernel with the backend of this process (so on the simulator at the sizes the
notebook picks through ``scaledl.sized``), from its own folder as ``make test`` runs it. The notebook on
disk is only read: the executed copy goes to the report folder. The first failing cell stops its notebook
(later cells would fail because of it, which says nothing new); they are reported as not run.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from scaledl._args import UsageError
from scaledl.book.execute import _kernel_env, kernel_config
from scaledl.book.toc import Book, Entry

CELL_TIMEOUT_S = 900  # as `make test` allows a cell (NBVAL_ARGS); a GPU cell takes seconds
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def select(book: Book, *, quick: bool = False, only: list[str] | None = None) -> list[Entry]:
    """The entries to execute: ``only`` (ids or paths) if given; else every written entry marked gpu, and with
    ``quick`` only the first such chapter and the first such lab (to bound a CI run).

    Raises:
        ValueError: a name in ``only`` is not in book.toml, or names a planned entry.
    """
    if only:
        entries = [book.resolve(name) for name in only]
        for e in entries:
            if not e.validated:
                raise UsageError(f"only: {e.kind} {e.id} is planned in book.toml: no notebook to execute")
        return entries
    gpu = [e for e in book.entries if e.gpu and e.validated]
    if quick:
        firsts = {}
        for e in gpu:
            firsts.setdefault(e.kind, e)
        gpu = [e for e in gpu if e in firsts.values()]
    return gpu


def _error_text(err: BaseException) -> str:
    if isinstance(err, CellExecutionError) and getattr(err, "ename", None):
        return _ANSI.sub("", f"{err.ename}: {err.evalue}")
    return f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"


def execute(path: Path, *, cwd: Path, timeout_s: float = CELL_TIMEOUT_S) -> tuple[nbformat.NotebookNode, list]:
    """Execute a copy of ``path`` cell by cell; return it and one record per code cell:
    ``{"index", "status" (passed | failed | not run), "seconds", "error", "source"}``."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}}, config=kernel_config())
    cells, failed = [], False
    saved = os.environ.copy()
    os.environ.update(_kernel_env())  # the kernel inherits the backend and a fixed hash seed
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                record = {"index": index, "status": "not run", "seconds": 0.0, "error": "",
                          "source": cell.source.strip().splitlines()[0][:80] if cell.source.strip() else ""}
                cells.append(record)
                if failed:
                    continue
                start = time.perf_counter()
                try:
                    client.execute_cell(cell, index)
                    record["status"] = "passed"
                except Exception as err:  # a raising cell, a timeout, a dead kernel: all stop the notebook
                    record.update(status="failed", error=_error_text(err))
                    failed = True
                record["seconds"] = round(time.perf_counter() - start, 3)
    except Exception as err:  # the kernel did not even start
        cells.append({"index": -1, "status": "failed", "seconds": 0.0, "error": _error_text(err),
                      "source": "(kernel start)"})
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb, cells


def summarize(entry_id: str, file: str, cells: list, seconds: float) -> dict:
    """A notebook's line of the report from its cell records."""
    counts = {s: sum(c["status"] == s for c in cells) for s in ("passed", "failed", "not run")}
    first = next((c for c in cells if c["status"] == "failed"), None)
    return {"id": entry_id, "file": file, "status": "failed" if first else "passed", "seconds": round(seconds, 1),
            "cells_passed": counts["passed"], "cells_failed": counts["failed"], "cells_not_run": counts["not run"],
            "first_error": None if first is None else f"cell {first['index']}: {first['error']}",
            "cells": cells}


def run(book: Book | None, out: Path, *, quick: bool = False, only: list[str] | None = None,
        progress=print) -> dict:
    """The notebooks step: each selected entry executed, its executed copy written to ``out/notebooks``."""
    if book is None:
        return {"status": "absent", "reason": "no book.toml here: run scaledl validate from the book's folder "
                                              "(or set SCALEDL_BOOK_ROOT)", "notebooks": []}
    entries = select(book, quick=quick, only=only)
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    results = []
    for i, entry in enumerate(entries, 1):
        path = book.path(entry.executed_file)
        progress(f"notebook {i}/{len(entries)}: {entry.id} {entry.executed_file}")
        start = time.perf_counter()
        nb, cells = execute(path, cwd=path.parent)
        nbformat.write(nb, out / "notebooks" / path.name)
        result = summarize(entry.id, entry.executed_file, cells, time.perf_counter() - start)
        progress(f"  {result['cells_passed']}/{len(cells)} cells passed in {result['seconds']:.0f} s"
                 + (f"; first error: {result['first_error']}" if result["first_error"] else ""))
        results.append(result)
    failed = [r["id"] for r in results if r["status"] == "failed"]
    status = "failed" if failed else ("passed" if results else "skipped")
    reason = (f"{len(results) - len(failed)} of {len(results)} notebooks ran every cell"
              + (" (--quick: the first chapter and lab marked gpu)" if quick and not only else ""))
    return {"status": status, "reason": reason, "notebooks": results}
