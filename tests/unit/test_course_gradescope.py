"""The Gradescope autograder's parts that need no sandbox: which notebook of a submission is graded, results.json,
the locks, the zip's layout. Grading runs end to end in tests/grading/test_gradescope.py (in process, make
test) and tests/grading/test_gradescope_container.py (setup.sh and run_autograder, make test-scale)."""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path

import nbformat
import pytest

from scaledl.book.toc import load
from scaledl.course import grade as G
from scaledl.course import gradescope as GS
from scaledl.course import gradescope_zip as GZ
from scaledl.course import sandbox as S

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
LAB = G.load_lab("lab03", BOOK)
STUDENT_FILE = "lab03_quantizer_and_clipping.ipynb"


def solution(lab):
    entry = next(e for e in BOOK.entries if e.id == lab)
    return nbformat.read(BOOK.path(entry.solution), as_version=4)


def test_the_extras_are_the_setup_cells_and_course():
    assert GZ.lab_extras(solution("lab03")) == ["course"]
    assert GZ.lab_extras(solution("lab05")) == ["course", "mpi"]  # mpi4py and MPICH for the ranks


def test_one_notebook_is_graded_whatever_its_name(tmp_path):
    nbformat.write(solution("lab04"), tmp_path / "whatever.ipynb")  # identified later, by grade_one: REJECTED
    (tmp_path / "notes.txt").write_text("x")
    sub, why = GS.choose(tmp_path, LAB, STUDENT_FILE)
    assert why == "" and sub.path.name == "whatever.ipynb" and sub.student == GS.STUDENT


def test_no_notebook_says_what_was_handed_in(tmp_path):
    (tmp_path / "answers.py").write_text("x = 1")
    sub, why = GS.choose(tmp_path, LAB, STUDENT_FILE)
    assert sub is None and "no notebook (.ipynb) was handed in (files: answers.py)" in why and STUDENT_FILE in why
    assert GS.choose(tmp_path / "missing", LAB, STUDENT_FILE)[1].startswith("no notebook (.ipynb) was handed in "
                                                                           "(no files)")


def test_of_several_notebooks_the_lab_s_own_is_graded(tmp_path):
    nbformat.write(solution("lab04"), tmp_path / "a.ipynb")
    nbformat.write(solution("lab03"), tmp_path / "b.ipynb")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    nbformat.write(solution("lab03"), tmp_path / ".ipynb_checkpoints" / "b-checkpoint.ipynb")
    sub, why = GS.choose(tmp_path, LAB, STUDENT_FILE)
    assert sub.path.name == "b.ipynb" and [p.name for p in sub.others] == ["a.ipynb"]
    nbformat.write(solution("lab03"), tmp_path / STUDENT_FILE)  # two of lab03: the one named as handed out
    assert GS.choose(tmp_path, LAB, STUDENT_FILE)[0].path.name == STUDENT_FILE
    os.remove(tmp_path / STUDENT_FILE)
    nbformat.write(solution("lab03"), tmp_path / "c.ipynb")
    sub, why = GS.choose(tmp_path, LAB, STUDENT_FILE)
    assert sub is None and "2 notebooks of lab03 were handed in (b.ipynb, c.ipynb): hand in one" in why


def test_none_of_several_is_the_lab_s(tmp_path):
    nbformat.write(solution("lab04"), tmp_path / "a.ipynb")
    (tmp_path / "b.ipynb").write_text("not json")
    sub, why = GS.choose(tmp_path, LAB, STUDENT_FILE)
    assert sub is None and "none of the 2 notebooks handed in is lab03's" in why
    assert "a.ipynb: this is lab04's notebook" in why and "b.ipynb: unreadable" in why


def test_a_link_is_not_a_submission(tmp_path):
    """A link to the solution, were the grader (root) to follow it, would be graded as the student's work."""
    secret = tmp_path / "secret.ipynb"
    nbformat.write(solution("lab03"), secret)
    (tmp_path / "sub").mkdir()
    os.symlink(secret, tmp_path / "sub" / "mine.ipynb")
    sub, why = GS.choose(tmp_path / "sub", LAB, STUDENT_FILE)
    assert sub is None and why.startswith("no notebook")


def test_results_json_has_a_test_per_task_and_hides_stdout():
    g = G.Grade(GS.STUDENT, Path("x.ipynb"), {"task_1_1": 3.0, "task_1_2": 0.0, "task_2_1": 3.0, "task_2_2": 0.0},
                {"task_1_1": "passed", "task_1_2": "Task 1.2: 3 of 10 codes differ; ...", "task_2_1": "passed"},
                status="REVIEW", details=["cell 4 line 2: a dynamic lookup: getattr(np, 'x')"])
    data = GS.results_json(LAB, g, seed=7, seconds=12.4, sandbox="account", spec={"title": "Lab 3: T"})
    assert data["score"] == 6 and data["stdout_visibility"] == "hidden" and data["execution_time"] == 12
    assert data["extra_data"] == {"lab": "lab03", "status": "REVIEW", "detail": g.detail, "seed": 7,
                                  "student": GS.STUDENT, "notebook": "x.ipynb", "sandbox": "account", "seconds": 12.4}
    assert data["output"].startswith("Lab 3: T: 6 of 10 autograded points. Status: REVIEW.\nDetail: cell 4 line 2")
    assert "graded by hand" in data["output"]
    assert [(t["name"], t["number"], t["score"], t["max_score"], t["status"]) for t in data["tests"]] == [
        ("Task 1.1", "1.1", 3, 3, "passed"), ("Task 1.2", "1.2", 0, 2, "failed"),
        ("Task 2.1", "2.1", 3, 3, "passed"), ("Task 2.2", "2.2", 0, 2, "failed")]
    assert data["tests"][1]["output"].startswith("Task 1.2: 3 of 10") and data["tests"][3]["output"] == "no result"
    json.dumps(data)  # what Gradescope reads


def test_a_rejected_notebook_scores_zero_on_every_task():
    g = G.Grade(GS.STUDENT, Path("(none)"), {gid: 0.0 for gid in LAB.tasks}, status="REJECTED",
                details=["no notebook (.ipynb) was handed in (no files)"])
    data = GS.results_json(LAB, g, seed=1, seconds=0.4, sandbox="none", spec={})
    assert data["score"] == 0 and len(data["tests"]) == 4 and data["extra_data"]["notebook"] is None
    assert all(t["output"] == "not graded: no notebook (.ipynb) was handed in (no files)" for t in data["tests"])
    assert "This submission was not graded." in data["output"]


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_lock_takes_other_users_off_what_students_must_not_reach(tmp_path):
    for d in ("source/book", "submission", GS.VENV + "/bin"):
        (tmp_path / d).mkdir(parents=True)
        os.chmod(tmp_path / d, 0o755)
    (tmp_path / "source" / "book" / "sol.ipynb").write_text("{}")
    (tmp_path / "submission_metadata.json").write_text("{}")
    os.chmod(tmp_path, 0o700)
    os.symlink("/etc", tmp_path / GS.WARM)  # a link is left alone, not followed
    locked = GS.lock(tmp_path)
    assert locked == ["source", "results", "submission", "submission_metadata.json"]
    for p in ("source", "source/book", "source/book/sol.ipynb", "submission", "submission_metadata.json", "results"):
        assert _mode(tmp_path / p) & 0o007 == 0, p
    assert _mode(tmp_path) & 0o005 == 0o005  # the venv under it stays reachable
    assert _mode(tmp_path / GS.VENV / "bin") == 0o755 and _mode("/etc") & 0o005


def test_results_are_written_whole_even_over_a_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / "results")
    GS.write_results(tmp_path, {"score": 1})
    assert not (tmp_path / "results").is_symlink() and list(elsewhere.iterdir()) == []
    assert json.loads((tmp_path / "results" / "results.json").read_text()) == {"score": 1}
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["results.json"]


def test_unpack_keeps_modes_and_refuses_paths_outside_source(tmp_path):
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as f:
        GZ._add(f, "run_autograder", "#!/bin/sh\n", 0o755)
        GZ._add(f, "lab.json", "{}")
    root = GZ.unpack(z, tmp_path / "root")
    assert _mode(root / "source" / "run_autograder") == 0o755 and _mode(root / "run_autograder") == 0o755
    assert _mode(root / "source" / "lab.json") == 0o644
    with zipfile.ZipFile(z, "a") as f:
        GZ._add(f, "../escape", "x")
    with pytest.raises(ValueError, match="outside source/"):
        GZ.unpack(z, tmp_path / "root2")


def test_the_scripts_fill_in_and_parse():
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("no bash")
    for text in (GZ.SETUP_SH, GZ.RUN_AUTOGRADER):
        filled = text.replace("@VENV@", GS.VENV).replace("@WHEEL@", "scaledl-0.1.0-py3-none-any.whl").replace(
            "@EXTRAS@", "course")
        assert "@" not in filled.replace("$@", "")
        assert subprocess.run(["bash", "-n"], input=filled, text=True).returncode == 0


def test_account_level_is_by_name_only_and_needs_root(monkeypatch):
    assert S.ACCOUNT not in S.LEVELS  # never picked by `scaledl course grade --sandbox auto` for a batch
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(ValueError, match="sandbox mode 'account' is unavailable: it needs root"):
        S.detect(S.ACCOUNT)
    with pytest.raises(ValueError, match="mode='nope'"):
        S.detect("nope")


def test_build_refuses_a_chapter_and_a_bad_time_limit(tmp_path):
    with pytest.raises(ValueError, match="is a chapter"):
        GZ.build("01", tmp_path, book=BOOK, wheel=tmp_path / "w.whl")
    with pytest.raises(ValueError, match="timeout_s=0"):
        GZ.build("lab03", tmp_path, book=BOOK, timeout_s=0)


def test_combined_statuses_get_each_note():
    g = G.Grade(GS.STUDENT, Path("x.ipynb"), {gid: 0.0 for gid in LAB.tasks}, status="TIMEOUT")
    g.status = "REVIEW"
    out = GS.results_json(LAB, g, seed=1, seconds=1, sandbox="bwrap", spec={})["output"]
    assert "Status: TIMEOUT+REVIEW." in out
    assert GS.STATUS_NOTES["TIMEOUT"] in out and GS.STATUS_NOTES["REVIEW"] in out


def test_a_sandbox_that_does_not_start_is_the_autograders_fault_not_the_students(tmp_path, monkeypatch):
    """The student reads that the autograder is not set up and the instructor has been told (never 'your kernel
    died'); stdout, which students do not see, has why."""
    monkeypatch.setattr(GS, "strongest", lambda mode: (_ for _ in ()).throw(
        S.SandboxUnavailable("sandbox mode 'bwrap' is unavailable: a probe run failed")))
    monkeypatch.setattr(GS, "lock", lambda root: [])
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    nbformat.write(solution("lab03"), root / "submission" / STUDENT_FILE)
    monkeypatch.setattr(GS, "read_spec", lambda r: {"lab": "lab03", "file": STUDENT_FILE})
    monkeypatch.setattr(GS, "bundled_lab", lambda r, spec: LAB)
    said = []
    data = GS.run(root, sandbox="bwrap", seed=1, progress=said.append)
    assert data["score"] == 0 and GS.NOT_SET_UP in data["output"]
    assert "died" not in data["output"] and "CRASHED" in data["output"]
    assert any("probe run failed" in line for line in said)  # what the instructor reads (stdout)


def test_setup_and_every_run_ask_for_the_same_level(monkeypatch):
    assert GS.sandbox_level({"sandbox": "account"}) == "account"
    assert GS.sandbox_level({}) == "auto"
    monkeypatch.setenv(GS.SANDBOX_VAR, "bwrap")
    assert GS.sandbox_level({"sandbox": "account"}) == "bwrap"  # the variable wins, for both steps
    with pytest.raises(ValueError, match="sandbox='container'"):
        GZ.build("lab03", "/nonexistent", sandbox="container")
