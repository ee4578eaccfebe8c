"""The grader's pure, security-relevant decisions, each able to fail: judge, the graded notebook's plan, the
hidden tests left out of what the sandbox gets, the results channel's data format, combined statuses, plain_file.

The first test is the mutation the grading review planted (full points for calling the library's own answer,
which only the slow grading tier caught): here it fails in make test-fast.
"""

import json
import os
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest

from scaledl.course import exchange, graded_run, integrity
from scaledl.course import grade as G
from scaledl.course.lab import Grade
from scaledl.course.review.findings import Finding
from scaledl.course.untrusted import plain_file

LAB03 = G.load_lab("lab03")
GID = "task_1_1"


def _right_results(gid=GID, lab=LAB03):
    """The results a correct answer hands back: the task's produce run on the solution's own function."""
    ns = {}
    for cell in lab.solution.cells:
        if cell.cell_type == "code" and integrity.meta(cell).get("grade_id") == f"answer_{gid}":
            exec(cell.source, {"np": np, "__builtins__": __builtins__}, ns)
    ns["np"] = np
    task = lab.tasks[gid]
    inputs = exchange.roundtrip(task.make_inputs(np.random.default_rng(7)))
    return inputs, exchange.roundtrip(task.produce(ns, inputs))


def _grade():
    return Grade("ada", None, {gid: 0.0 for gid in LAB03.tasks})


def test_the_library_answer_scores_nothing_even_when_right():
    inputs, results = _right_results()
    bypass = {GID: [Finding(9, 4, 'return quantize(x, "e4m3")', "calls quantize (scaledl.numerics.quantize), the "
                                                                  "library's own answer", GID)]}
    g = _grade()
    G.judge(LAB03, g, {GID: inputs}, {GID: results}, bypass)
    assert g.points[GID] == 0 and g.status == "REVIEW" and "library's own answer" in g.messages[GID]
    g = _grade()
    G.judge(LAB03, g, {GID: inputs}, {GID: results}, {})  # the same results, no bypass: full points
    assert g.points[GID] == LAB03.points[GID] and g.messages[GID] == "passed" and g.status == "OK"


def test_a_wrong_result_and_a_missing_one_score_nothing_with_the_reason():
    inputs, results = _right_results()
    wrong = {k: (v + 1 if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v) for k, v in results.items()}
    g = _grade()
    G.judge(LAB03, g, {GID: inputs}, {GID: wrong}, {})
    assert g.points[GID] == 0 and "differ" in g.messages[GID]
    g = _grade()
    G.judge(LAB03, g, {}, {}, {}, {GID: "NotImplementedError: Task 1.1"})
    assert g.points[GID] == 0 and g.messages[GID] == "Task 1.1: no result (NotImplementedError: Task 1.1)"
    assert all(g.points[t] == 0 and "no result came back" in g.messages[t] for t in LAB03.tasks if t != GID)


@pytest.mark.parametrize("hostile", [{"q": "a string"}, {"q": np.zeros((2, 2))}, {}, {"q": None},
                                     {"q": np.full(3, np.nan)}])
def test_hostile_results_cost_the_task_and_nothing_else(hostile):
    inputs, _ = _right_results()
    g = _grade()
    G.judge(LAB03, g, {GID: inputs}, {GID: hostile}, {})  # never raises
    assert g.points[GID] == 0 and g.messages[GID]


def test_cell_errors_reads_the_test_cells_errors_only():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1/0"), nbformat.v4.new_code_cell("x")])
    nb.cells[0].outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                                  traceback=[])]
    nb.cells[1].metadata["nbgrader"] = {"grade_id": "task_1_1", "grade": True}
    nb.cells[1].outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="name 'x' is not defined" * 50,
                                                  traceback=[])]
    found = G.cell_errors(nb)
    assert list(found) == ["task_1_1"] and found["task_1_1"].startswith("NameError: name 'x'")
    assert len(found["task_1_1"]) <= 60 + 2 + 200


def test_plain_file_refuses_links_directories_and_paths_outside(tmp_path):
    (tmp_path / "a").write_text("x")
    (tmp_path / "d").mkdir()
    os.symlink("/etc/passwd", tmp_path / "link")
    os.symlink(tmp_path / "d", tmp_path / "dlink")
    (tmp_path / "d" / "f").write_text("y")
    assert plain_file(tmp_path, tmp_path / "a") and plain_file(tmp_path, tmp_path / "d" / "f")
    assert not plain_file(tmp_path, tmp_path / "link")
    assert not plain_file(tmp_path, tmp_path / "d")
    assert not plain_file(tmp_path, tmp_path / "dlink" / "f")  # a link on the way
    assert not plain_file(tmp_path, tmp_path / "missing")
    assert not plain_file(tmp_path / "d", tmp_path / "a")  # outside the folder


def test_the_notebook_the_sandbox_gets_holds_no_line_of_the_hidden_tests():
    nb = graded_run.without_hidden_tests(LAB03.solution)
    hidden = [ln.strip() for c in LAB03.solution.cells if integrity.is_test(c) for ln in c.source.splitlines()
              if len(ln.strip()) > 8]
    text = nbformat.writes(nb)
    assert hidden and not any(h in text for h in hidden)
    assert sum(c.source == graded_run.HIDDEN_NOTE for c in nb.cells) == len(LAB03.tasks)


def test_the_plan_skips_checks_tests_and_the_hand_in_cell_and_runs_the_rest():
    nb, _ = integrity.assemble(LAB03.solution, LAB03.solution)
    plan = graded_run.plan(nb, LAB03.solution)
    kinds = {i: (plan.get(str(i)), nb.cells[i].source.lstrip()[:20]) for i, c in enumerate(nb.cells)
             if c.cell_type == "code"}
    for i, (how, opening) in kinds.items():
        cell = nb.cells[i]
        m = integrity.meta(cell)
        if integrity.is_test(cell) or str(m.get("grade_id", "")).startswith("hand_in"):
            assert how == "skip", (i, opening)
        elif m.get("solution"):
            assert how == "answer", (i, opening)
        elif opening.startswith(("with task(", "with uses(")):
            assert how == "skip", (i, opening)
        else:
            assert how == "run", (i, opening)
    assert {"answer", "run", "skip"} == {how for how, _ in kinds.values()}
    extra = nbformat.v4.new_code_cell("with task('Task 1.1'):\n    pass")  # the student's own: it runs
    nb.cells.insert(5, extra)
    assert graded_run.plan(nb, LAB03.solution)["5"] == "run"


def test_results_on_the_pipe_are_data_only():
    packed = exchange.pack({"x": np.arange(3, dtype=np.float32), "n": 2, "s": "ok", "l": [1, 2.5]})
    back = exchange.unpack(json.loads(json.dumps(packed)))
    assert back["x"].dtype == np.float32 and back["x"].tolist() == [0, 1, 2]
    assert back["n"] == 2 and back["l"] == [1, 2.5]
    with pytest.raises(TypeError, match="object array"):
        exchange.pack({"o": np.array([object()])})
    with pytest.raises(ValueError, match="not base64"):
        exchange.unpack({"npz": "***", "json": {}})
    with pytest.raises(ValueError, match="expected what exchange.pack makes"):
        exchange.unpack({"npz": "", "json": {}, "extra": 1})
    import base64
    import io
    import pickle

    buf = io.BytesIO()
    np.save(buf, np.array([SimpleNamespace()], dtype=object), allow_pickle=True)
    evil = {"npz": base64.b64encode(pickle.dumps(print)).decode(), "json": {}}
    with pytest.raises(ValueError):
        exchange.unpack(evil)
    with pytest.raises(ValueError, match="more than 100 bytes"):
        exchange.unpack(exchange.pack({"x": np.zeros(1000)}), max_bytes=100)


@pytest.mark.parametrize("sets, shown, parts", [
    (["TIMEOUT", "REVIEW"], "TIMEOUT+REVIEW", ("TIMEOUT", "REVIEW")),
    (["REVIEW", "CRASHED"], "CRASHED+REVIEW", ("CRASHED", "REVIEW")),
    (["REVIEW"], "REVIEW", ("REVIEW",)),
    ([], "OK", ("OK",)),
])
def test_statuses_combine(sets, shown, parts):
    g = Grade("ada", None)
    for s in sets:
        g.status = s
    assert g.status == shown and g.statuses == parts
    with pytest.raises(ValueError, match="expected one of"):
        g.status = "PASSED"


def test_the_feedback_page_names_the_written_answers_left_as_handed_out():
    from scaledl.course.feedback import page

    text = page(lab="lab05", student="ada", status="OK", rows=[], written=True, unwritten=["Question 2", "<b>"])
    assert "Not answered yet (as handed out): Question 2, &lt;b&gt;" in text
    assert "Not answered yet" not in page(lab="lab05", student="ada", status="OK", rows=[], written=True)
