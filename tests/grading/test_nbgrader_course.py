"""End to end on a JupyterHub's flow, with nbgrader 0.9's own commands: a course in a temp dir with a local
exchange, ``scaledl course release --nbgrader``, ``nbgrader release_assignment``, students' ``fetch_assignment``
and ``submit`` (each in their own home, ``--student`` giving their id, as nbgrader's own tests do), ``nbgrader
collect``, ``scaledl course grade COURSE/submitted`` in the sandbox, then ``nbgrader export`` shows the scores and
``release_feedback``/``fetch_feedback`` deliver each student's feedback page. About 80 s (14 nbgrader
commands of ~2 s, and two lab03 notebooks graded), so it runs in ``make test-scale`` (``SCALEDL_TEST_SCALE=1``,
CI), not ``make test``."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.skipif(os.environ.get("SCALEDL_TEST_SCALE") != "1",
                                reason="nbgrader's 14 commands take about 80 s: `make test-scale` runs this test")
pytest.importorskip("nbgrader")

from nbgrader.api import Gradebook  # noqa: E402

from corpus import handed_in, solution  # noqa: E402  (tests/grading/corpus.py)
from scaledl.book.toc import load  # noqa: E402
from scaledl.course import grade as G  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BOOK = load(ROOT)
VENV_BIN = Path(sys.executable).parent
LAB = "lab03"
NAME = Path(BOOK.resolve(LAB).file).name
COURSE_ID = "sdl101"


def env_for(home: Path, config: Path) -> dict[str, str]:
    """A user's environment: their own home (nbgrader's submission cache lives under it), no one's Jupyter
    config but the course's."""
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
            "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
            "SCALEDL_BACKEND": "simulator"}


def run(args, cwd: Path, env: dict, timeout=300) -> str:
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, args))}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout + r.stderr


def test_release_exchange_grade_export_and_feedback_with_nbgrader(tmp_path, box):
    course, exchange, config = tmp_path / "course", tmp_path / "exchange", tmp_path / "jupyter-config"
    for d in (course, exchange, config):
        d.mkdir()
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\nc.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n")
    teacher = env_for(tmp_path / "instructor", config)
    nbgrader = [str(VENV_BIN / "nbgrader")]
    flags = ["--course", COURSE_ID, f"--Exchange.root={exchange}"]  # students have no course config

    said = run([sys.executable, "-m", "scaledl", "course", "release", "--nbgrader", str(course), "--lab", LAB,
                "--lab", "lab01"], tmp_path, teacher)
    assert "wrote 4 notebooks" in said
    for lab in (LAB, "lab01"):
        run([*nbgrader, "release_assignment", lab], course, teacher)

    homes = {}
    for student in ("ada", "bob"):
        homes[student] = tmp_path / "home" / student
        env = env_for(homes[student], config)
        run([*nbgrader, "fetch_assignment", LAB, *flags], homes[student], env)
        fetched = homes[student] / LAB / NAME
        assert fetched.read_bytes() == (course / "release" / LAB / NAME).read_bytes()
        if student == "ada":  # ada answers every task; bob hands the notebook in as he got it
            nbformat.write(handed_in(solution(LAB)), fetched)
        run([*nbgrader, "submit", LAB, *flags, "--student", student], homes[student], env)
    bob = env_for(homes["bob"], config)
    run([*nbgrader, "fetch_assignment", "lab01", *flags], homes["bob"], bob)  # another assignment: not lab03's
    run([*nbgrader, "submit", "lab01", *flags, "--student", "bob"], homes["bob"], bob)
    for lab in (LAB, "lab01"):
        run([*nbgrader, "collect", lab], course, teacher)
    assert (course / "submitted" / "ada" / LAB / NAME).is_file()

    grades = tmp_path / "grades"
    said = run([sys.executable, "-m", "scaledl", "course", "grade", str(course / "submitted"), "--lab", LAB, "--out",
                str(grades), "--timeout", "120", "--sandbox", box.level, "--seed", "1", "--jobs", "2"],
               tmp_path, {**os.environ, "JUPYTER_CONFIG_DIR": str(config)}, timeout=600)
    assert "grading 2 notebook(s) of lab03" in said and "nbgrader: wrote 2 submission(s) of lab03" in said, said

    run([*nbgrader, "export", "--to", str(tmp_path / "export.csv")], course, teacher)
    with open(tmp_path / "export.csv", newline="") as f:
        exported = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(f)}
    assert float(exported[(LAB, "ada")]["score"]) == 10 == float(exported[(LAB, "ada")]["max_score"])
    assert float(exported[(LAB, "bob")]["score"]) == 0 and exported[(LAB, "bob")]["timestamp"]
    assert not any(a == "lab01" and float(r["score"]) for (a, _), r in exported.items())
    lab = G.load_lab(LAB, BOOK)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:  # one grade per task cell
        ada = {g.name: g.score for nb in gb.find_submission(LAB, "ada").notebooks for g in nb.grades}
        assert ada == lab.points

    run([*nbgrader, "release_feedback", LAB], course, teacher)
    for student, points in (("ada", 10), ("bob", 0)):
        env = env_for(homes[student], config)
        run([*nbgrader, "fetch_feedback", LAB, *flags, "--student", student], homes[student], env)
        pages = list((homes[student] / LAB / "feedback").glob(f"*/{Path(NAME).stem}.html"))
        assert len(pages) == 1, pages
        assert pages[0].read_text() == (grades / "feedback" / f"{student}.html").read_text()
        assert f"{points} of 10 points" in pages[0].read_text()
    assert not (course / "feedback" / "bob" / "lab01").exists()
