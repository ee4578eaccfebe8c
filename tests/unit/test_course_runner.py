"""The runner (scaledl.course.runner) and the grader's side of its channel (scaledl.course.graded_run), without a
sandbox: setup cells one statement at a time, outputs recorded per cell, results only for the token of the request
that asked, and a whole lab graded through it on the "none" level."""

import json
import os
import subprocess
import sys

import nbformat
import numpy as np
import pytest

from scaledl.course import exchange, graded_run, integrity, runner
from scaledl.course import grade as G


@pytest.fixture(scope="module")
def shell():
    return runner._shell()


def test_setup_statements_split_imports_by_name(shell):
    src = "import numpy as np\nfrom os import path, sep\ntry:\n    import scaledl\nexcept ImportError:\n    %pip x\n"
    parts = runner.statements(src, shell)
    assert parts[0] == "import numpy as np" and parts[1:3] == ["\nfrom os import path", "\nfrom os import sep"]
    assert parts[3].startswith("\n\ntry:") and "run_line_magic('pip'" in parts[3]  # its own line numbers
    deco = runner.statements("x = 1\n@staticmethod\ndef f():\n    # a comment\n    return 1\n", shell)
    assert deco[1] == "\n@staticmethod\ndef f():\n    # a comment\n    return 1"


def test_a_missing_module_leaves_only_its_own_names_unbound(shell):
    src = "from os import path, no_such_name, sep\nx = 1\nimport no_such_module_here\ny = 2"
    outs = runner.run_cell(shell, src)
    ns = shell.user_ns
    assert ns["path"] is os.path and ns["sep"] == os.sep and ns["x"] == 1 and ns["y"] == 2
    assert [o["ename"] for o in outs if o["output_type"] == "error"] == ["ImportError", "ModuleNotFoundError"]


def test_an_error_ends_the_cell_as_in_jupyter(shell):
    """What the student saw is what is graded: statements after an error do not run (a notebook whose answers sit
    behind `if not found: raise` would otherwise get its definitions all the same), but for a failed import."""
    outs = runner.run_cell(shell, "a_before = 1\nraise NotImplementedError('stop')\ndef after():\n    return 2\n")
    assert shell.user_ns["a_before"] == 1 and "after" not in shell.user_ns
    assert [o["ename"] for o in outs if o["output_type"] == "error"] == ["NotImplementedError"]
    runner.run_cell(shell, "if True:\n    raise ImportError('not an import statement')\nnot_reached = 1")
    assert "not_reached" not in shell.user_ns
    runner.run_cell(shell, "import no_such_module_either\nreached = 1")
    assert shell.user_ns["reached"] == 1


def test_a_cell_records_prints_results_displays_and_errors(shell):
    outs = runner.run_cell(shell, "print('hi')\nfrom IPython.display import display, HTML\ndisplay(HTML('<b>'))\n6*7")
    kinds = [o["output_type"] for o in outs]
    assert kinds == ["stream", "display_data", "execute_result"], outs
    assert outs[0]["text"] == "hi\n" and outs[2]["data"]["text/plain"] == "42"
    err = runner.run_cell(shell, "def f():\n    raise ValueError('mine')\nf()")
    assert err[-1]["output_type"] == "error" and err[-1]["ename"] == "ValueError" and err[-1]["evalue"] == "mine"
    big = runner.run_cell(shell, f"print('x' * {runner.OUTPUT_CAP_CHARS + 50})")
    assert len(big[0]["text"]) < runner.OUTPUT_CAP_CHARS + 100 and "more characters cut" in big[0]["text"]


def _start(work, lab, nb):
    graded_run._job(work, lab, nb, True, None)
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    env = {**os.environ, "SCALEDL_BACKEND": "simulator", "MPLBACKEND": "agg"}
    proc = subprocess.Popen([sys.executable, "-m", "scaledl.course.runner", "job.json", "--requests", str(req_r),
                             "--replies", str(rep_w)], cwd=work, env=env, pass_fds=(req_r, rep_w),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(req_r)
    os.close(rep_w)
    return proc, os.fdopen(req_w, "wb"), os.fdopen(rep_r, "rb")


def _until(replies, key):
    while True:
        line = replies.readline()
        assert line, f"the runner ended before {key!r}"
        msg = json.loads(line)
        if key in msg:
            return msg


def test_results_come_only_for_the_requests_token(tmp_path):
    lab = G.load_lab("lab03")
    nb, _ = integrity.assemble(lab.solution, lab.solution)
    proc, requests, replies = _start(tmp_path, lab, nb)
    try:
        assert _until(replies, "ready")["ready"] is True
        task = lab.tasks["task_2_2"]
        inputs = exchange.roundtrip(task.make_inputs(np.random.default_rng(3)))
        requests.write((json.dumps({"grade_id": "task_2_2", "token": "t0", "inputs": exchange.pack(inputs)})
                        + "\n").encode())
        requests.flush()
        reply = _until(replies, "grade_id")
        assert reply["token"] == "t0" and "results" in reply, reply
        task.judge(inputs, exchange.unpack(reply["results"]))  # the solution's results pass the judge
        requests.write(b'{"grade_id": "task_2_2", "token": "t1", "inputs": {"npz": "", "json": {}}}\n')
        requests.flush()
        bad = _until(replies, "grade_id")
        assert bad["token"] == "t1" and "error" in bad and len(bad["error"]) <= runner.ERROR_CHARS
    finally:
        requests.close()
        proc.wait(30)
    ran = nbformat.read(tmp_path / graded_run.RUN, as_version=4)
    assert not any(graded_run.HIDDEN_NOTE != c.source and integrity.is_test(c) for c in ran.cells)


def test_a_lab_graded_through_the_runner_on_the_none_level(tmp_path):
    from scaledl.course import sandbox as S
    from scaledl.course.submissions import Submission

    lab = G.load_lab("lab03")
    path = tmp_path / "ada.ipynb"
    nbformat.write(lab.solution, path)
    g, ran = G.grade_one(Submission("ada", path), lab, S.detect("none"), timeout_s=120, batch_seed=1)
    assert g.total == lab.maximum and g.status == "OK", (g.status, g.detail, g.messages)
    assert ran is not None


def test_the_labs_check_blocks_are_not_run(shell):
    src = ("def f(x):\n    return x\n\nwith task('Task 1.1'):\n    raise AssertionError('a check')\n"
           "with open('x') as g:\n    pass")
    parts = runner.statements(src, shell)
    assert len(parts) == 2 and parts[0].startswith("def f") and "open('x')" in parts[1]
    assert len(runner.statements(src, shell, checks=True)) == 3  # an answer cell runs them (lab06 3.2 is one)
