"""One submission's graded runs, from the grader's side: a runner (:mod:`scaledl.course.runner`) per group of
tasks, each in a fresh sandbox with its group's view, and the hidden tests served to it over two pipes.

For each group, in order: a workdir (a quota'd tmpfs where the sandbox can make one) holding only the notebook
to run, with its hidden-test cells left out, and the plan of its cells; the group's view mounted over the
installed packages; the runner started with one pipe to read requests from and one to write replies to. The
runner reports each cell as it starts and says ``ready`` when the notebook's cells are done. Once every
group is ready, each task's inputs are sent, in notebook order, to its group's runner, with a token made then;
the first reply that names the task and carries its token is the task's result. Every runner is killed at the
end, or when the submission's time runs out (its tasks not served by then get no result).
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from scaledl.course import exchange
from scaledl.course.integrity import is_test, meta

REPLY_CAP_BYTES = 3 * exchange.MAX_BYTES  # one reply line: base64 of a task's largest results, and some
NOTEBOOK = "graded.ipynb"  # the notebook the runner is given: the hidden tests are not in it
RUN = "run.ipynb"  # the notebook as the first group's runner ran it (for the feedback page)
HIDDEN_NOTE = "# (hidden tests ran here)"
CHECK_OPENINGS = ("with task(", "with uses(")  # the lab's own check cells (scaledl.labs.task / uses blocks)


@dataclass
class Outcome:
    """What the graded runs of one submission gave."""

    results: dict[str, dict] = field(default_factory=dict)  # grade_id -> the results handed back
    errors: dict[str, str] = field(default_factory=dict)  # grade_id -> why there is no result (the student's text)
    status: str = "finished"  # "finished", "timeout" or "died"
    cell: int | None = None  # the cell that ran when a runner was cut or died
    notes: list[str] = field(default_factory=list)  # what a person should know (REVIEW)
    ran: object = None  # the first runner's notebook as run, or None
    output: str = ""  # the last runner output (diagnostics)
    stages: dict = field(default_factory=dict)  # seconds by stage (start, cells, hidden tests), summed over groups


def plan(nb, solution, grade_ids=None) -> dict[str, str]:
    """How each code cell of the graded notebook runs: ``"answer"`` (an answer cell, whole), ``"run"`` (the lab's
    setup and the student's own cells, without check blocks) or ``"skip"`` (the lab's check cells, its hand-in
    cell and the hidden-test cells). A cell is the lab's
    own when the solution has a cell of its id; a check cell is one whose solution version opens with
    ``with task(`` or ``with uses(``. With ``grade_ids`` (a group's tasks), only their own answer cells run whole:
    another task's answer cell runs without its check blocks (the check may train a network for seconds)."""
    theirs = {c.get("id"): c for c in solution.cells if c.get("id")}
    out = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        mine = theirs.get(cell.get("id"))
        m = meta(cell)
        if is_test(cell) or (m.get("grade_id") or "").startswith("hand_in") or cell.source == HIDDEN_NOTE:
            out[str(i)] = "skip"
        elif not m.get("solution") and mine is not None and _opening(mine.source).startswith(CHECK_OPENINGS):
            out[str(i)] = "skip"
        else:
            mine_task = str(m.get("grade_id", "")).removeprefix("answer_")
            whole = m.get("solution") and (grade_ids is None or mine_task in grade_ids)
            out[str(i)] = "answer" if whole else "run"
    return out


def _opening(source: str) -> str:
    lines = [ln for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return lines[0].lstrip() if lines else ""


def without_hidden_tests(nb):
    """A copy of ``nb`` whose hidden-test cells hold only :data:`HIDDEN_NOTE` (no line of the tests)."""
    import copy

    out = copy.deepcopy(nb)
    for cell in out.cells:
        if is_test(cell):
            cell.source, cell.outputs = HIDDEN_NOTE, []
    return out


class _Runner:
    """One group's runner: started in its sandbox, its replies read by a thread into a queue."""

    def __init__(self, box, work: Path, *, env, limits, overlays, argv_python):
        self.req_r, self.req_w = os.pipe()
        self.rep_r, self.rep_w = os.pipe()
        argv = [argv_python, "-m", "scaledl.course.runner", "job.json", "--requests", str(self.req_r),
                "--replies", str(self.rep_w)]
        kw = {"limits": limits} if limits is not None else {}
        try:
            self.running = box.start(argv, workdir=work, env=env, overlays=overlays,
                                     pass_fds=(self.req_r, self.rep_w), **kw)
        finally:
            os.close(self.req_r)
            os.close(self.rep_w)
        self.replies: queue.Queue = queue.Queue()
        self.requests = os.fdopen(self.req_w, "wb")
        self.cell = None
        self.started, self.first_cell, self.cells_s = time.monotonic(), None, 0.0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        with os.fdopen(self.rep_r, "rb") as f:
            while True:
                line = f.readline(REPLY_CAP_BYTES)
                if not line:
                    break
                if not line.endswith(b"\n"):  # longer than any result may be: drop the rest of it
                    while line and not line.endswith(b"\n"):
                        line = f.readline(REPLY_CAP_BYTES)
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict):
                    self.replies.put(msg)
        self.replies.put(None)  # end of file: the runner ended (or closed its pipe)

    def next(self, deadline: float):
        """The next reply, None at end of file, or "timeout" past ``deadline``."""
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            return self.replies.get(timeout=left)
        except queue.Empty:
            return "timeout"

    def ready(self, deadline: float) -> str:
        """Wait until the runner has run the cells: "ready", "timeout" or "died"."""
        while True:
            msg = self.next(deadline)
            if msg == "timeout":
                return "timeout"
            if msg is None:
                return "died"
            if "cell" in msg and isinstance(msg["cell"], int):
                self.cell = msg["cell"]
                self.first_cell = self.first_cell or time.monotonic()
            if isinstance(msg.get("seconds"), (int, float)):
                self.cells_s += float(msg["seconds"])
            if msg.get("ready") is True:
                return "ready"

    def ask(self, gid: str, inputs: dict, deadline: float):
        """Send one task's inputs with a token made now; the first reply naming the task with that token, or
        "timeout" past ``deadline``, or None when the runner is gone."""
        token = secrets.token_hex(16)
        try:
            self.requests.write((json.dumps({"grade_id": gid, "token": token, "inputs": exchange.pack(inputs)})
                                 + "\n").encode("utf-8"))
            self.requests.flush()
        except (BrokenPipeError, OSError):
            return None
        while True:
            msg = self.next(deadline)
            if msg == "timeout" or msg is None:
                return msg
            if msg.get("grade_id") == gid and msg.get("token") == token:
                return msg

    def close(self, *, timed_out: bool):
        try:
            self.requests.close()
        except OSError:
            pass
        if not timed_out:
            self.running.wait(5)
        return self.running.finish(timed_out=timed_out)


def _job(work: Path, lab, nb, first: bool, numba_cache: Path | None, grade_ids=None) -> None:
    """The runner's folder: the notebook without its hidden tests, the plan of its cells, a home."""
    nbformat.write(without_hidden_tests(nb), work / NOTEBOOK)
    job = {"lab": lab.id, "notebook": NOTEBOOK, "plan": plan(nb, lab.solution, grade_ids),
           "written": RUN if first else "run-unshown.ipynb"}
    (work / "job.json").write_text(json.dumps(job), encoding="utf-8")
    (work / "home").mkdir()
    if numba_cache is not None:
        import shutil

        shutil.copytree(numba_cache, work / "home" / ".numba")


def run(box, lab, nb, groups, draw, *, timeout_s: float, env_for, limits=None, numba_cache=None,
        views=None, read_notebook=None) -> Outcome:
    """Grade ``nb`` (assembled) of ``lab``: a runner per group, then each task's inputs (``draw(grade_id)``,
    called when the task is served) to its group's runner, in notebook order, within ``timeout_s`` in all.

    Args:
        groups: :class:`scaledl.course.view.Group` objects covering the lab's tasks.
        env_for: the runner's environment, given the workdir as the sandbox shows it.
        views: group -> overlay pairs (bwrap only), or None for no view.
        read_notebook: ``(workdir, path) -> notebook or None``, reading what the runner wrote without trusting it.
    """
    import contextlib

    from scaledl.course.limits import Limits

    out = Outcome()
    deadline = time.monotonic() + timeout_s
    group_of = {gid: g for g in groups for gid in g.grade_ids}
    runners: dict = {}
    with contextlib.ExitStack() as stack:
        for k, group in enumerate(groups):
            work, _ = stack.enter_context(box.workspace(limits or Limits()))
            _job(work, lab, nb, k == 0, numba_cache, group.grade_ids)
            runner = _Runner(box, work, env=env_for(box.workdir_inside(work)), limits=limits,
                             overlays=(views or {}).get(group, ()), argv_python=sys.executable)
            stack.callback(lambda r=runner, w=work, first=k == 0: _finish(r, w, first, out, read_notebook))
            state = runner.ready(deadline)
            _add(out.stages, "start (sandbox, Python, IPython)",
                 (runner.first_cell or time.monotonic()) - runner.started)
            _add(out.stages, "cells", runner.cells_s)
            if state == "ready":
                runners[group] = runner
                continue
            out.cell = runner.cell
            if state == "timeout":
                out.status = "timeout"
                break
            out.status = "died"
            for gid in group.grade_ids:
                out.errors[gid] = (f"the run ended at cell {runner.cell} before the hidden tests"
                                   if runner.cell is not None else "the run ended before any cell ran")
        for gid in lab.tasks:
            runner = runners.get(group_of.get(gid))
            if runner is None or out.status == "timeout":
                out.errors.setdefault(gid, "not run: the time limit was reached first" if out.status == "timeout"
                                      else "not run")
                continue
            asked = time.monotonic()
            reply = runner.ask(gid, draw(gid), deadline)
            _add(out.stages, "hidden tests", time.monotonic() - asked)
            if reply == "timeout":
                out.status, out.errors[gid] = "timeout", "the time limit was reached while its hidden tests ran"
                continue
            if reply is None:
                out.status, out.errors[gid] = "died", "the run ended while its hidden tests ran"
                runners.pop(group_of[gid])
                continue
            if "results" in reply:
                try:
                    out.results[gid] = exchange.unpack(reply["results"])
                except ValueError as err:
                    out.errors[gid] = f"its results could not be read as data ({str(err)[:120]})"
            else:
                out.errors[gid] = str(reply.get("error", "no result"))[:200]
    return out


def _add(stages: dict, name: str, seconds: float) -> None:
    stages[name] = round(stages.get(name, 0.0) + max(0.0, seconds), 3)


def _finish(runner: _Runner, work: Path, first: bool, out: Outcome, read_notebook) -> None:
    res = runner.close(timed_out=out.status == "timeout")
    out.output = res.output
    if first and read_notebook is not None:
        out.ran = read_notebook(work, work / RUN)
