"""The student's side of the grader (scaledl.course.produce) stands alone: every task's produce function is the
one the produce side hands out, found without the tasks; no module of it imports a module of the grader (the
judges and their references: tasks, review, grade, ...), nor at module level a library module a lab forbids;
and a grading run works in a copy of the package whose course holds nothing else, as the sandbox's will."""

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from scaledl.course import exchange, produce, tasks

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked  # noqa: E402

PRODUCE_DIR = ROOT / "src" / "scaledl" / "course" / "produce"
SIDE = ("scaledl.course.produce", "scaledl.course.exchange")  # what of scaledl.course the produce side may import
# The one import of the grader the produce side makes: run's local judging, outside grading only.
LOCAL_JUDGING = ("__init__.py", "run", "scaledl.course.tasks")
# The sandbox's course (the grader's plan): everything else of scaledl.course is absent there.
SANDBOX_COURSE = ("__init__.py", "exchange.py", "runner.py", "produce")


def _foundations() -> set[str]:
    """The modules at the bottom of pyproject.toml's layers (scaledl.device, scaledl._deadline, ...)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    bottom = next(c for c in contracts if c["id"] == "layers")["layers"][-1]
    return {m.strip() for m in bottom.split(":")}


def _allowed(module: str, *, top_level: bool) -> bool:
    """May the produce side import ``module`` (anywhere, or with ``top_level`` at module level)?"""
    if module.startswith("scaledl.course."):  # the grader's modules: never, wherever the import stands
        return any(module == s or module.startswith(f"{s}.") for s in SIDE)
    if not module.startswith("scaledl.") or not top_level:
        return True
    area = ".".join(module.split(".")[:2])  # a library module, at module level: only the foundations
    return area == "scaledl.course" or area in _foundations()


# --- every task's produce function comes from the produce side ------------------------------------------------

@pytest.mark.parametrize("lab", tasks.LABS)
def test_every_task_produces_with_the_function_the_produce_side_hands_out(lab):
    by_id = tasks.for_lab(lab)
    table = importlib.import_module(f"scaledl.course.produce.{lab}").PRODUCE
    assert list(table) == list(by_id)  # notebook order, and no task without a produce function
    for gid, task in by_id.items():
        assert task.produce is produce.producer(lab, gid) is table[gid], gid
        assert produce.title(gid) == task.title  # what run prints under grading, without the tasks


def test_producer_names_what_there_is():
    with pytest.raises(ValueError, match=r"grade_id='task_9_9': lab03 has task_1_1, task_1_2, task_2_1, task_2_2"):
        produce.producer("lab03", "task_9_9")
    with pytest.raises(ValueError, match=r"lab='lab99': expected one of lab01, .*lab07"):
        produce.producer("lab99", "task_1_1")


def test_the_old_homes_give_the_same_objects():
    from scaledl.course.produce import mpi_runner
    from scaledl.course.tasks import mpi_runner as old_runner

    assert tasks.student is produce.student
    assert old_runner is mpi_runner and old_runner.call_on_ranks is mpi_runner.call_on_ranks


def test_run_judges_here_outside_grading(monkeypatch, capsys):
    from scaledl.serve import eager_steady_batch

    monkeypatch.delenv(produce.GRADE_DIR_VAR, raising=False)
    produce.run("lab07", "task_2_1", {"steady_batch": eager_steady_batch})
    assert capsys.readouterr().out.endswith("Task 2.1: hidden tests passed\n")
    with pytest.raises(AssertionError, match="^Task 2.1: steady_batch"):
        produce.run("lab07", "task_2_1", {"steady_batch": lambda r, a, c: 1.0})


# --- what the produce side imports --------------------------------------------------------------------------

def _imports(path: Path) -> list[tuple[str, bool, str]]:
    """(module, at module level, enclosing top-level function) for every absolute import in ``path``; a
    ``from X import y`` counts as X.y, which may name a module."""
    found = []

    def visit(node, top_level: bool, function: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, top_level, function) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.extend((f"{child.module}.{a.name}", top_level, function) for a in child.names)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                visit(child, False, function or getattr(child, "name", ""))
            else:
                visit(child, top_level, function)

    visit(ast.parse(path.read_text(encoding="utf-8")), True, "")
    return found


def _bad_imports(folder: Path) -> list[str]:
    """The imports of the modules in ``folder`` that the produce side must not make."""
    bad = []
    for path in sorted(folder.glob("*.py")):
        for module, top_level, function in _imports(path):
            if (path.name, function) == LOCAL_JUDGING[:2] and module == LOCAL_JUDGING[2]:
                continue
            if not _allowed(module, top_level=top_level):
                bad.append(f"{path.name}: {module} ({'at module level' if top_level else 'in ' + function})")
    return bad


def test_the_produce_side_reads_no_grader_module_and_no_library_at_module_level():
    assert _bad_imports(PRODUCE_DIR) == []
    assert any(m == LOCAL_JUDGING[2] for m, _, f in _imports(PRODUCE_DIR / "__init__.py") if f == "run")


def test_the_import_check_finds_a_planted_import(tmp_path):
    shutil.copytree(PRODUCE_DIR, tmp_path / "produce", ignore=shutil.ignore_patterns("__pycache__"))
    lab03, lab05 = tmp_path / "produce" / "lab03.py", tmp_path / "produce" / "lab05.py"
    lab03.write_text(lab03.read_text() + "\ndef _leak():\n    from scaledl.course import review\n")
    lab05.write_text("from scaledl.comm import topology\n" + lab05.read_text())
    assert _bad_imports(tmp_path / "produce") == ["lab03.py: scaledl.course.review (in _leak)",
                                                   "lab05.py: scaledl.comm.topology (at module level)"]


_LOADED = """
import importlib, json, sys
from pathlib import Path
import scaledl.course.produce as P
for path in sorted(Path(P.__file__).parent.glob("*.py")):
    if path.stem != "__init__":
        importlib.import_module(f"scaledl.course.produce.{path.stem}")
for lab in P.LABS:
    for gid in importlib.import_module(f"scaledl.course.produce.{lab}").PRODUCE:
        P.producer(lab, gid)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("scaledl"))))
"""


def _loaded_by_the_produce_side(src: Path) -> list[str]:
    """The scaledl modules a fresh interpreter has loaded, with ``src`` first on its path, after importing every
    module of the produce side and asking it for every task's produce function."""
    env = {**os.environ, "PYTHONPATH": str(src), "SCALEDL_BACKEND": "simulator"}
    r = subprocess.run([sys.executable, "-c", _LOADED], capture_output=True, text=True, timeout=300, env=env,
                       cwd=src)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _unwanted(loaded: list[str]) -> list[str]:
    return [m for m in loaded if m != "scaledl" and not _allowed(m, top_level=True)]


def test_importing_the_produce_side_loads_no_grader_module_and_no_library(tmp_path):
    copy_tracked(tmp_path, "src/scaledl")
    loaded = _loaded_by_the_produce_side(tmp_path / "src")
    assert "scaledl.course.produce.lab07" in loaded and _unwanted(loaded) == []
    # ... and the same check fails once the produce side imports the grader or a library module
    lab02, lab07 = (tmp_path / "src/scaledl/course/produce" / f for f in ("lab02.py", "lab07.py"))
    lab02.write_text(lab02.read_text() + "\nfrom scaledl.course import review  # planted\n")
    lab07.write_text(lab07.read_text() + "\nimport scaledl.serve  # planted\n")
    unwanted = _unwanted(_loaded_by_the_produce_side(tmp_path / "src"))
    assert "scaledl.course.review" in unwanted and "scaledl.serve" in unwanted, unwanted


# --- a grading run in the sandbox's view of the package ---------------------------------------------------------

_GRADING = """
import importlib, sys
import ml_dtypes
import numpy as np
from scaledl.course import produce
from scaledl.serve import eager_steady_batch

ns = {"steady_batch": eager_steady_batch,
      "e4m3_encode": lambda x: np.asarray(x, np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)}
produce.run("lab07", "task_2_1", ns)
produce.run("lab03", "task_1_2", ns)
for lab in produce.LABS:
    for gid in importlib.import_module(f"scaledl.course.produce.{lab}").PRODUCE:
        produce.producer(lab, gid)
print("tasks loaded" if any(m.startswith("scaledl.course.tasks") for m in sys.modules) else "no tasks")
"""


def test_a_grading_run_needs_nothing_of_the_course_but_the_sandboxs_view(tmp_path):
    copy_tracked(tmp_path, "src/scaledl")
    course = tmp_path / "src" / "scaledl" / "course"
    for path in course.iterdir():
        if path.name not in SANDBOX_COURSE:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    grade_dir = tmp_path / "grade"
    inputs = {}
    for lab, gid in (("lab07", "task_2_1"), ("lab03", "task_1_2")):
        task = tasks.get(lab, gid)
        inputs[lab, gid] = task.make_inputs(np.random.default_rng(7))
        exchange.save(produce.inputs_path(grade_dir, gid), inputs[lab, gid])
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src"), "SCALEDL_BACKEND": "simulator",
           produce.GRADE_DIR_VAR: str(grade_dir)}
    r = subprocess.run([sys.executable, "-c", _GRADING], capture_output=True, text=True, timeout=300, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-3:] == ["Task 2.1: results handed to the grader",
                                          "Task 1.2: results handed to the grader", "no tasks"]
    for (lab, gid), given in inputs.items():  # judged here, as the grader does, on what came back
        tasks.get(lab, gid).judge(exchange.roundtrip(given), exchange.load(produce.outputs_path(grade_dir, gid)))
