"""Run one graded notebook, inside the grading sandbox: ``python -m scaledl.course.worker``.

The grader starts this in the submission's throw-away directory, as the grading user, with a scrubbed
environment (:mod:`scaledl.course.sandbox`). It executes ``graded.ipynb`` cell by cell in a fresh kernel and
leaves three things for the grader: ``run.ipynb`` (the notebook as run, rewritten after every cell, its text
outputs cut at ``OUTPUT_CAP_CHARS``), ``cells.jsonl`` (one line per finished cell: the kernel's reply status,
which is how an error is known, not from stderr) and ``worker.json`` (how the run ended). Everything here runs
beside the student's code and is read back by the grader as information for the feedback only: points come
from the results the hidden-test cells hand over, judged in the grader's own process.

The autograded-test cells (``--hidden``) run with ``store_history=False``, so ``In``, ``_ih`` and the history
database never hold their source.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

OUTPUT_CAP_CHARS = 200_000  # per output; the feedback page shows far less, this only keeps run.ipynb small


def _cap(cell) -> None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and len(out.get("text", "")) > OUTPUT_CAP_CHARS:
            cut = len(out["text"]) - OUTPUT_CAP_CHARS
            out["text"] = out["text"][:OUTPUT_CAP_CHARS] + f"\n[... {cut} more characters cut by the grader]\n"
        data = out.get("data", {})
        for mime, value in list(data.items()):
            if isinstance(value, str) and len(value) > OUTPUT_CAP_CHARS:
                data[mime] = value[:OUTPUT_CAP_CHARS]


def execute(path: Path, *, timeout_s: float, cell_timeout_s: float, hidden: set[str]) -> dict:
    """Run the notebook at ``path``; returns what ``worker.json`` records."""
    from scaledl import _startup  # noqa: F401  (jsonschema without its slow IRI parsers: see there)
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    log = open("cells.jsonl", "w", encoding="utf-8")
    replies = {}

    def on_cell_executed(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        replies[cell_index] = {"status": content.get("status", "unknown"), "ename": content.get("ename", "")}

    client = NotebookClient(nb, timeout=cell_timeout_s, kernel_name="python3", allow_errors=True,
                            record_timing=False, shutdown_kernel="immediate", on_cell_executed=on_cell_executed,
                            resources={"metadata": {"path": str(Path.cwd())}})
    ended = {"status": "finished", "cell": None}
    deadline = time.monotonic() + timeout_s
    with client.setup_kernel(cwd=str(Path.cwd())):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                ended = {"status": "timeout", "cell": i}
                break
            client.timeout = max(1, int(min(cell_timeout_s, left) + 0.999))
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            start = time.monotonic()
            try:
                client.execute_cell(cell, i, store_history=grade_id not in hidden)
            except CellTimeoutError:
                ended = {"status": "timeout", "cell": i}
            except DeadKernelError:
                ended = {"status": "died", "cell": i}
            _cap(cell)
            reply = replies.pop(i, {"status": ended["status"] if ended["cell"] == i else "unknown", "ename": ""})
            log.write(json.dumps({"cell": i, "seconds": round(time.monotonic() - start, 3), **reply}) + "\n")
            log.flush()
            nbformat.write(nb, "run.ipynb")
            if ended["cell"] is not None:
                break
    log.close()
    return ended


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scaledl.course.worker", description=__doc__.splitlines()[0])
    p.add_argument("notebook", type=Path)
    p.add_argument("--timeout", type=float, required=True, help="seconds for the whole notebook")
    p.add_argument("--cell-timeout", type=float, required=True, help="seconds for any one cell")
    p.add_argument("--hidden", default="", help="comma-separated grade_ids of the autograded-test cells")
    args = p.parse_args(argv)
    start = time.monotonic()
    ended = execute(args.notebook, timeout_s=args.timeout, cell_timeout_s=args.cell_timeout,
                    hidden={h for h in args.hidden.split(",") if h})
    ended["seconds"] = round(time.monotonic() - start, 3)
    Path("worker.json").write_text(json.dumps(ended), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
