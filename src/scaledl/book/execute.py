"""Re-execute notebooks in place: top to bottom, in a fresh kernel, deterministically.

A notebook is only replaced when every cell ran; otherwise the committed file stays as it was and the failing
cell is printed. Outputs are made with the backend of the calling process (see :mod:`scaledl.device`), which
is passed to the kernel, so the book's committed outputs come from ``SCALEDL_BACKEND=simulator``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from tqdm.auto import tqdm

from scaledl import device
from scaledl.book import nbfile
from scaledl.book.toc import Book, Entry

# Fixed so that set iteration order, and so anything printed from it, is the same on every run.
DETERMINISTIC_ENV = {"PYTHONHASHSEED": "0", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}


@dataclass
class Result:
    entry: Entry
    ok: bool
    seconds: float
    message: str = ""


def _kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(DETERMINISTIC_ENV)
    env[device.ENV_VAR] = device.backend()
    env[device.QUIET_VAR] = env.get(device.QUIET_VAR, "")
    return env


def kernel_config():
    """The configuration every kernel the book starts gets (``book execute``, ``scaledl validate``): CurveZMQ
    transport encryption, which jupyter_client provisions for a kernelspec that declares it supports it (as
    ipykernel's does) when ``KernelManager.transport_encryption`` is ``"auto"``. The kernel's messages are then
    encrypted, and ipykernel no longer warns that it "is running over TCP without encryption". An empty
    configuration where this jupyter_client has no such setting (older releases) or pyzmq's libzmq lacks CurveZMQ
    (``zmq.has("curve")``; asking for it there would fail the kernel's start)."""
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    if "transport_encryption" not in KernelManager.class_trait_names() or not zmq.has("curve"):
        return Config()
    return Config({"KernelManager": {"transport_encryption": "auto"}})


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def stable_widget_ids(nb, salt: str):
    """Replace the random widget model ids (uuid4) with ids derived from ``salt`` and creation order.

    ipywidgets names every model with a fresh uuid, so each execution would rewrite the notebook's widget
    state and the ids in its outputs even when nothing changed. Renaming them by creation order makes a
    re-execution reproduce the committed file byte for byte.
    """
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        return nb
    mapping = {old: hashlib.md5(f"{salt}:{i}".encode()).hexdigest() for i, old in enumerate(state)}
    text = json.dumps(nb)
    for old, new in mapping.items():
        text = text.replace(old, new)
    return nbformat.from_dict(json.loads(text))


def execute_notebook(path: Path, *, timeout_s: float = 1800, progress: bool = True, cwd: Path | None = None):
    """Execute ``path`` in a fresh kernel and return the executed notebook (the file is not written).

    Raises:
        CellExecutionError: a cell raised; its message holds the cell source and the traceback.
    """
    nb = nbformat.read(path, as_version=4)
    code_cells = sum(1 for c in nb.cells if c.cell_type == "code")
    bar = tqdm(total=code_cells, desc=path.name, unit="cell", disable=not progress, leave=True)

    def advance(cell, cell_index, execute_reply):  # nbclient hook: after each cell
        if cell.cell_type == "code":
            bar.update(1)

    client = NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd or path.parent)}},
        record_timing=False,  # wall-clock stamps would make every run differ
        store_widget_state=True,  # so a static copy (make book) still draws the controls
        on_cell_executed=advance,
        config=kernel_config(),  # encrypted, and no "running over TCP without encryption" warning
    )
    saved = os.environ.copy()
    os.environ.update(_kernel_env())
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        bar.close()
    return stable_widget_ids(nb, salt=path.stem)


def execute_entry(book: Book, entry: Entry, *, progress: bool = True) -> Result:
    """Execute one chapter or lab solution in place; for a lab, remake the student version afterwards."""
    path = book.path(entry.executed_file)
    if not path.is_file():
        return Result(entry, False, 0.0, f"{entry.executed_file} does not exist")
    previous = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        nb = execute_notebook(path, progress=progress)
    except CellExecutionError as err:
        return Result(entry, False, time.perf_counter() - start,
                      f"{entry.executed_file} was NOT changed: a cell failed.\n{err}")
    except Exception as err:  # kernel died, timeout, ...: same promise, the old file stays
        return Result(entry, False, time.perf_counter() - start,
                      f"{entry.executed_file} was NOT changed: {type(err).__name__}: {err}")
    seconds = time.perf_counter() - start
    nbfile.write(nb, path)  # in the form JupyterLab saves, so opening the notebook does not change it
    message = f"{entry.executed_file}: executed in {seconds:.1f} s on the {device.backend()} backend"
    if entry.kind == "lab":
        from scaledl.book.student_copy import write_student_version

        outcome = write_student_version(path, book.path(entry.file), previous_solution=previous)
        if outcome == "kept":
            message += (f"\n  {entry.file} has edits of its own, so it was kept as it is; the fresh student "
                        f"version was not written")
        else:
            message += f"\n  {entry.file}: student version {outcome}"
        from scaledl.book.student_copy import write_handin_catalogue

        if write_handin_catalogue(book):
            message += "\n  src/scaledl/labs/handin_labs.json (the hand-in check's catalogue) rewritten"
    if seconds > entry.sim_budget_s and device.backend() == "simulator":
        message += f"\n  over its simulator budget of {entry.sim_budget_s:.0f} s (book.toml)"
    return Result(entry, True, seconds, message)


def run(book: Book, names: list[str], *, progress: bool = True, out=sys.stdout) -> int:
    """Execute the named entries (all validated ones when ``names`` is empty); exit status 0 if all ran."""
    entries = [book.resolve(n) for n in names] if names else [e for e in book.entries if e.validated]
    failed = 0
    for entry in entries:
        result = execute_entry(book, entry, progress=progress)
        print(result.message, file=out if result.ok else sys.stderr)
        failed += not result.ok
    return 1 if failed else 0
