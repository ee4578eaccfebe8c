"""``scaledl course gradescope``: the zip, and run_autograder's grading, in this process (the fast tier).

The zip is built by the command line, unpacked as Gradescope lays it out, and graded by
:func:`scaledl.course.gradescope.run` with this checkout's interpreter, in the sandbox that works here
(bubblewrap): the solution scores full marks, the untouched student copy 0 with every task listed, another lab's
notebook and a submission without one 0 with a clear message; results.json never carries the hidden tests.
setup.sh's virtual environment, the ``account`` sandbox Gradescope's containers leave, and the hostile
submissions are in test_gradescope_container.py (``make test-scale``: setup.sh installs for about a minute).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbclient")

import corpus  # noqa: E402  (tests/grading is on sys.path: conftest)

from scaledl.course import gradescope as GS  # noqa: E402
from scaledl.course import gradescope_zip as GZ  # noqa: E402

LAB = "lab03"
TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradescope")
    start = time.perf_counter()
    made = subprocess.run([sys.executable, "-m", "scaledl", "course", "gradescope", LAB, "--out", str(out),
                           "--timeout", "60"], capture_output=True, text=True, timeout=600)
    TIMES["build"] = time.perf_counter() - start
    assert made.returncode == 0, made.stderr[-3000:]
    assert f"wrote {out / f'{LAB}-gradescope.zip'}" in made.stdout
    return out / f"{LAB}-gradescope.zip"


def hidden_lines(lab: str) -> list[str]:
    """Lines of the lab's hidden tests long enough to be telling (what must never reach a student)."""
    return [ln.strip() for c in corpus.solution(lab).cells if corpus.integrity.is_test(c)
            for ln in c.source.split("### BEGIN HIDDEN TESTS")[-1].splitlines()
            if len(ln.strip()) >= 8 and "END HIDDEN" not in ln]


def test_the_zip_holds_the_scripts_the_wheel_and_the_solutions(bundle):
    with zipfile.ZipFile(bundle) as z:
        names = z.namelist()
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        spec = json.loads(z.read(GS.LAB_FILE))
        setup_sh = z.read("setup.sh").decode()
    labs = [e for e in corpus.BOOK.entries if e.kind == "lab" and e.validated]
    wheel = [n for n in names if n.endswith(".whl")]
    assert sorted(names) == sorted(["setup.sh", "run_autograder", GS.LAB_FILE, *wheel,
                                    *(f"{GS.BOOK_DIR}/{e.solution}" for e in labs)])
    assert len(wheel) == 1 and wheel[0].startswith("scaledl-")
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert spec["lab"] == LAB and spec["extras"] == ["course"] and spec["timeout_s"] == 60
    assert spec["points"] == sum(corpus.points(LAB).values()) and list(spec["tasks"]) == list(corpus.points(LAB))
    assert '"$WHEEL[course]"' in setup_sh and "@" not in setup_sh.replace("$@", "")
    print(f"\nbuilt {bundle.name} ({bundle.stat().st_size / 2**20:.1f} MiB) in {TIMES['build']:.1f} s")


@pytest.fixture
def root(bundle, tmp_path):
    return GZ.unpack(bundle, tmp_path / "autograder")


def grade(root: Path, files: dict[str, object], box) -> dict:
    """Hand ``files`` in (name -> notebook or text) and run the autograder in this process; returns results.json."""
    (root / "submission").mkdir()
    for name, content in files.items():
        if isinstance(content, str):
            (root / "submission" / name).write_text(content)
        else:
            nbformat.write(content, root / "submission" / name)
    start = time.perf_counter()
    returned = GS.run(root, sandbox=box.level, progress=lambda line: None)
    TIMES[", ".join(files) or "nothing"] = time.perf_counter() - start
    written = json.loads((root / "results" / "results.json").read_text())
    assert written == json.loads(json.dumps(returned))
    page = json.dumps(written)
    assert not any(h in page for h in hidden_lines(LAB)), "hidden-test source in results.json"
    assert written["stdout_visibility"] == "hidden" and isinstance(written["extra_data"]["seed"], int)
    points = corpus.points(LAB)
    assert [(t["name"], t["max_score"]) for t in written["tests"]] == [
        (f"Task {g[5]}.{g[7]}", p) for g, p in points.items()]  # every task listed, with its points
    assert written["score"] == sum(t["score"] for t in written["tests"])
    for name in ("source", "results", "submission"):  # locked before the notebook ran
        assert stat.S_IMODE(os.stat(root / name).st_mode) & 0o007 == 0, name
    return written


def test_the_solution_scores_full_marks(root, box):
    got = grade(root, {"mine.ipynb": corpus.handed_in(corpus.solution(LAB))}, box)
    assert got["score"] == 10 and got["extra_data"]["status"] == "OK", got["output"]
    assert all(t["status"] == "passed" and t["output"] == "passed" for t in got["tests"])
    assert got["extra_data"]["sandbox"] == box.level and got["extra_data"]["notebook"] == "mine.ipynb"


def test_the_student_copy_scores_zero_on_every_task(root, box):
    got = grade(root, {"lab03.ipynb": corpus.student_copy(LAB)}, box)
    assert got["score"] == 0 and got["extra_data"]["status"] == "OK"
    assert "no task answered: every answer cell is as handed out" in got["output"]
    assert all(t["status"] == "failed" and t["output"].startswith(t["name"]) for t in got["tests"]), got["tests"]


def test_another_lab_s_notebook_is_rejected(root, box):
    got = grade(root, {"lab04.ipynb": corpus.handed_in(corpus.solution("lab04"))}, box)
    assert got["score"] == 0 and "Status: REJECTED" in got["output"]
    assert "this is lab04's notebook" in got["output"] and got["extra_data"]["status"] == "REJECTED"


def test_no_notebook_is_a_clear_zero(root, box):
    got = grade(root, {"answers.py": "def e4m3_round(x):\n    return x\n"}, box)
    assert got["score"] == 0 and got["extra_data"]["status"] == "REJECTED"
    assert "no notebook (.ipynb) was handed in (files: answers.py); hand in your lab03 notebook, " \
           "lab03_quantizer_and_clipping.ipynb" in got["output"]
    print("\n" + "\n".join(f"{k}: {v:.1f} s" for k, v in TIMES.items()))
