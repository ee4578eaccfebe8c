"""Run a graded notebook's cells, then its hidden tests, in the grading sandbox: ``python -m scaledl.course.runner``.

The grader starts one runner per group of tasks (:func:`scaledl.course.view.groups`), each in a fresh sandbox whose
view of the installed packages leaves out what those tasks forbid. The runner

1. executes the notebook's code cells in an IPython shell of its own (no Jupyter kernel: no ZeroMQ, no second
   process), in order, skipping the lab's own check cells, its hand-in cell and the hidden-test cells (which
   are not in the file it is given at all). Each cell runs one top-level statement at a time, each imported
   name on its own, so a module left out of this view costs only the names it would have bound (any other error
   ends the cell, as in Jupyter); outside the
   answer cells, a top-level ``with task(...)`` / ``with uses(...)`` block, the labs' visible check, is not run;
2. writes the notebook as run (``run.ipynb``, outputs capped) for the feedback page;
3. says ``ready`` to the grader, and only then receives each task's inputs, drawn by the grader at that moment
   and carrying a token made at that moment, calls the task's ``produce`` on them (the student's functions,
   found by name in the notebook's namespace) and hands the results back with the token.

The channel is two pipes the grader made (``--requests FD`` and ``--replies FD``): nothing written before the
grader sent a task's inputs can carry that task's token, so no result can be written ahead, and no file is
ever judged. The student's code runs in this same process and could write to the pipes too; what it could send
is a result for inputs it has only just seen, computed without the library's answer (not in this view): the
student's own work. Everything here is the student's side: the judging happens in the grader's process.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
from pathlib import Path

OUTPUT_CAP_CHARS = 200_000  # per output; the feedback page shows far less, this only keeps run.ipynb small
ERROR_CHARS = 200  # a student's exception text handed back: theirs only, and short


def _send(out, message: dict) -> None:
    out.write((json.dumps(message) + "\n").encode("utf-8"))
    out.flush()


def _shell():
    """An IPython shell without history, colours or prompts, its errors and results recorded per cell."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    shell = InteractiveShell.instance(config=config)
    shell.recorded = []

    def traceback(etype, evalue, stb):
        shell.recorded.append({"output_type": "error", "ename": getattr(etype, "__name__", str(etype)),
                               "evalue": str(evalue)[:OUTPUT_CAP_CHARS], "traceback": list(stb)[-40:]})

    def result(format_dict, md_dict=None):
        shell.recorded.append({"output_type": "execute_result", "data": dict(format_dict), "metadata": {},
                               "execution_count": None})

    shell._showtraceback = traceback
    shell.displayhook.write_output_prompt = lambda: None
    shell.displayhook.write_format_data = result
    return shell


def statements(source: str, shell, *, checks: bool = False) -> list[str]:
    """A cell's top-level statements, each as its own piece of source with the cell's line numbers (blank lines
    before it), and each ``from m import a, b`` as one import per name; the whole cell when it does not parse (its
    error then shows as the notebook would show it). The lab's check blocks are left out unless ``checks`` (an
    answer cell: some answers, lab06's Task 3.2, are written inside one)."""
    code = shell.transform_cell(source)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [source]
    lines = code.splitlines()
    out = []
    for node in tree.body:
        if not checks and _check_block(node):
            continue
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        pad = "\n" * (start - 1)
        if isinstance(node, ast.ImportFrom) and len(node.names) > 1:
            out += [pad + ast.unparse(ast.ImportFrom(module=node.module, names=[a], level=node.level))
                    for a in node.names]
        else:
            out.append(pad + "\n".join(lines[start - 1:node.end_lineno]))
    return out


def _check_block(node) -> bool:
    """A top-level ``with task(...)`` or ``with uses(...)`` block: the lab's own visible check (scaledl.labs.task,
    uses), which the grader does not run (it runs the student's functions on its own inputs)."""
    if not isinstance(node, ast.With):
        return False
    calls = [item.context_expr for item in node.items]
    return all(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in ("task", "uses")
               for c in calls)


def _cap(outputs: list) -> list:
    for out in outputs:
        if out.get("output_type") == "stream" and len(out.get("text", "")) > OUTPUT_CAP_CHARS:
            cut = len(out["text"]) - OUTPUT_CAP_CHARS
            out["text"] = out["text"][:OUTPUT_CAP_CHARS] + f"\n[... {cut} more characters cut by the grader]\n"
        for mime, value in list(out.get("data", {}).items()):
            if isinstance(value, str) and len(value) > OUTPUT_CAP_CHARS:
                out["data"][mime] = value[:OUTPUT_CAP_CHARS]
    return outputs


def run_cell(shell, source: str, *, one_statement_at_a_time: bool = True, checks: bool = False) -> list[dict]:
    """Execute a cell's source, one top-level statement at a time; its outputs as nbformat output dicts (prints,
    displays, results, errors). An error ends the cell, as in Jupyter, so that nothing after it runs that did not
    run for the student, except an ImportError from an import statement: a module this view leaves out costs only
    the names that import binds."""
    from IPython.utils.capture import capture_output

    outputs: list[dict] = []
    for part in (statements(source, shell, checks=checks) if one_statement_at_a_time else [source]):
        shell.recorded = []
        with capture_output(display=True) as cap:
            ran = shell.run_cell(part, store_history=False)
        error = ran.error_before_exec or ran.error_in_exec
        stop = error is not None and not (isinstance(error, ImportError) and _is_import(part))
        for name, text in (("stdout", cap.stdout), ("stderr", cap.stderr)):
            if text:
                outputs.append({"output_type": "stream", "name": name, "text": text})
        for shown in cap.outputs:
            outputs.append({"output_type": "display_data", "data": dict(shown.data),
                            "metadata": dict(shown.metadata or {})})
        outputs += shell.recorded
        if stop:
            break
    return _cap(outputs)


def _is_import(part: str) -> bool:
    try:
        body = ast.parse(part).body
    except SyntaxError:
        return False
    return len(body) == 1 and isinstance(body[0], (ast.Import, ast.ImportFrom))


def execute(notebook: Path, plan: dict[str, str], shell, replies, *, written: Path) -> None:
    """Run the notebook's code cells as ``plan`` says (cell index -> "answer", "run" or "skip"; an answer cell
    runs its check blocks too), reporting each cell before
    it starts, and write the notebook as run after every cell. The notebook is read and written as plain JSON:
    nbformat's schema validation costs a second or two a process, and the grader validates what it reads."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    for i, cell in enumerate(nb.get("cells", [])):
        how = plan.get(str(i), "skip")
        if cell.get("cell_type") != "code" or how == "skip":
            continue
        _send(replies, {"cell": i})
        start = time.monotonic()
        source = cell.get("source", "")
        cell["outputs"] = run_cell(shell, "".join(source) if isinstance(source, list) else str(source),
                                   checks=how == "answer")
        _send(replies, {"cell_done": i, "seconds": round(time.monotonic() - start, 3),
                        "error": next((o["ename"] for o in cell["outputs"] if o.get("output_type") == "error"), "")})
        _write(nb, written)


def _write(nb: dict, path: Path) -> None:
    """Write ``nb`` to ``path`` by renaming a new file over it: a link a cell left there is replaced, never
    followed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):  # a full or rearranged folder, an output that is not JSON
        pass


def serve(lab: str, shell, requests, replies) -> None:
    """Answer the grader's requests, one per task: call its produce on the inputs sent, hand back the results."""
    from scaledl.course import exchange, produce

    for line in requests:
        try:
            req = json.loads(line)
            gid, token = str(req["grade_id"]), str(req["token"])
        except (ValueError, KeyError, TypeError):
            continue
        try:
            inputs = exchange.unpack(req["inputs"])
            results = produce.producer(lab, gid)(shell.user_ns, inputs)
            reply = {"grade_id": gid, "token": token, "results": exchange.pack(results)}
        except BaseException as err:  # the student's function raised (or returned what cannot be handed over)
            text = f"{type(err).__name__}: {err}"
            reply = {"grade_id": gid, "token": token, "error": text[:ERROR_CHARS]}
        _send(replies, reply)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scaledl.course.runner", description=__doc__.splitlines()[0])
    p.add_argument("job", type=Path, help="job.json: the lab, the notebook to run and the plan of its cells")
    p.add_argument("--requests", type=int, required=True, help="file descriptor the grader's requests come on")
    p.add_argument("--replies", type=int, required=True, help="file descriptor the replies go to")
    args = p.parse_args(argv)
    requests, replies = os.fdopen(args.requests, "rb"), os.fdopen(args.replies, "wb")
    for fd in (args.requests, args.replies):  # not handed on to the processes a notebook starts
        os.set_inheritable(fd, False)
    job = json.loads(args.job.read_text(encoding="utf-8"))
    sys.argv = ["runner"]
    shell = _shell()
    execute(Path(job["notebook"]), job["plan"], shell, replies, written=Path(job.get("written", "run.ipynb")))
    _send(replies, {"ready": True})
    serve(job["lab"], shell, requests, replies)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
