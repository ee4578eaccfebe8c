"""Labs 05-07 in their grading views (scaledl.course.view): each task's view leaves out the modules that hold its
library answer, and nothing else the lab needs. In a fresh process whose imports of the left-out modules fail as a
view's stubs make them fail, the solution notebook's imports (one name at a time, as the grader's runner makes
them) and the produce side's lose exactly the names that live in those modules: no module the lab needs imports
an answer at module level, and every forbidden name is out of reach where the notebooks import it. No sandbox
needed (tests/grading grades the labs in bwrap)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from scaledl.course import tasks, view

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = {"lab05": "lab05_ring_all_reduce", "lab06": "lab06_deep_gradient_compression",
             "lab07": "lab07_batch_dispatch"}
PRODUCE = ROOT / "src" / "scaledl" / "course" / "produce"

# Each lab's processes: the modules its view leaves out, and the tasks graded there.
GROUPS = {
    "lab05": [({"scaledl.comm.algorithms", "scaledl.comm.mpi_allreduce", "scaledl.comm.ring_fit"},
               ("task_1_1", "task_2_1", "task_3_1_3_2"))],
    "lab06": [({"scaledl.comm.compression", "scaledl.labs.dgc_checks", "scaledl.labs.top_k_spec"},
               ("task_1_1", "task_3_1", "task_3_2")),
              ({"scaledl.comm.compression", "scaledl.labs.dgc_checks"},  # the reference top-k stands in for 1.1
               ("task_1_2", "task_2_1", "task_2_2"))],
    "lab07": [({"scaledl.serve.policy_specs", "scaledl.serve.theory", "scaledl.serve.slo"},
               ("task_1_1", "task_1_2", "task_2_1")),
              ({"scaledl.serve.theory", "scaledl.serve.slo"}, ("task_3_1",))],  # its search gets the spec policy
}

# Imports fail in the child as a view's stub makes them fail: ModuleNotFoundError, the stub's words, its name.
CHILD = """
import importlib.abc, json, sys
absent, units = json.loads(sys.argv[1])

class LeftOut(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == m or name.startswith(m + ".") for m in absent):
            raise ModuleNotFoundError(f"{name} is left out of this grading run: a test", name=name)

sys.meta_path.insert(0, LeftOut())
failed = []
for module, name in units:
    try:
        exec(f"from {module} import {name}" if name else f"import {module}", {})
    except ImportError as err:
        failed.append([module, name, f"{type(err).__name__}: {err}"])
print(json.dumps(failed))
"""


def _units(tree: ast.AST, *, top_level: bool) -> list[tuple[str, str]]:
    """``(module, name)`` of each import in ``tree`` (``name`` "" for ``import module``), one per name."""
    nodes = tree.body if top_level else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out += [(node.module, a.name) for a in node.names]
    return [u for u in out if u[0].split(".")[0] == "scaledl"]


def lab_imports(lab: str) -> list[tuple[str, str]]:
    """The solution notebook's top-level imports of scaledl, every import of its produce side, and the tasks'
    forbidden names and modules where the notebooks find them."""
    nb = nbformat.read(ROOT / "labs" / "solutions" / f"{NOTEBOOKS[lab]}.ipynb", as_version=4)
    units = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            try:
                units += _units(ast.parse(cell.source), top_level=True)
            except SyntaxError:  # the set-up cell's %pip line
                continue
    for path in (PRODUCE / f"{lab}.py", PRODUCE / "mpi_runner.py"):
        units += _units(ast.parse(path.read_text()), top_level=False)
    for task in tasks.for_lab(lab).values():
        units += [tuple(n.rsplit(".", 1)) for n in task.forbidden] + [(m, "") for m in task.forbidden_modules]
    return sorted(set(units))


def _inside(module: str, absent) -> bool:
    return any(module == m or module.startswith(m + ".") for m in absent)


def expected_to_fail(unit: tuple[str, str], absent) -> bool:
    """Whether ``unit`` names something a view without ``absent`` cannot give: the module it imports from is left
    out, or the object it imports is defined in a left-out module."""
    module, name = unit
    return _inside(module, absent) or bool(name) and _inside(view.module_of(f"{module}.{name}"), absent)


@pytest.mark.parametrize("lab", sorted(GROUPS))
def test_each_task_is_graded_where_its_answer_is_left_out(lab):
    got = [(set(g.absent), g.grade_ids) for g in view.groups(tasks.for_lab(lab))]
    assert got == GROUPS[lab]


@pytest.mark.parametrize("lab, absent", [(lab, a) for lab, groups in sorted(GROUPS.items()) for a, _ in groups])
def test_a_view_costs_the_lab_only_the_names_it_leaves_out(lab, absent):
    units = lab_imports(lab)
    want = sorted(u for u in units if expected_to_fail(u, absent))
    run = subprocess.run([sys.executable, "-c", CHILD, json.dumps([sorted(absent), units])], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    failed = json.loads(run.stdout.strip().splitlines()[-1])
    # a stub's own error, or the import system's word for it (a left-out submodule in a from-list, a private name)
    assert all("is left out of this grading run" in why or "cannot import name" in why for *_, why in failed), failed
    assert sorted((m, n) for m, n, _ in failed) == want


# --- labs 01 and 02: scaledl.kernels left out but for the race checker their produce runs the kernels under ----

def test_a_kernel_labs_view_keeps_only_the_sanitizer_of_scaledl_kernels():
    import pkgutil

    import scaledl.kernels

    on_disk = {f"scaledl.kernels.{i.name}" for i in pkgutil.iter_modules(scaledl.kernels.__path__)}
    for lab in ("lab01", "lab02"):
        (group,) = view.groups(tasks.for_lab(lab))  # still one process for the whole lab
        assert {m for m in group.absent if m.startswith("scaledl.kernels")} == on_disk - {"scaledl.kernels.sanitizer"}
        assert "scaledl.perf" in group.absent and "scaledl.kernels" not in group.absent
        units = [("scaledl.kernels.sanitizer", "sanitize"), ("scaledl.kernels.sanitizer", "KernelDeadlock"),
                 (f"scaledl.course.produce.{lab}", "PRODUCE"), ("scaledl.kernels", "gemm"),
                 ("scaledl.kernels.gemm", ""), ("scaledl.kernels.reference", "")]
        run = subprocess.run([sys.executable, "-c", CHILD, json.dumps([sorted(group.absent), units])],
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert run.returncode == 0, run.stderr[-3000:]
        failed = {(m, n) for m, n, _ in json.loads(run.stdout.strip().splitlines()[-1])}
        assert failed == {("scaledl.kernels", "gemm"), ("scaledl.kernels.gemm", ""), ("scaledl.kernels.reference", "")}


def test_carving_a_package_leaves_out_its_other_modules_and_needs_a_package_to_carve():
    assert view.carve("scaledl.perf", {"scaledl.kernels.sanitizer"}) == {"scaledl.perf"}
    carved = view.carve("scaledl.kernels", {"scaledl.kernels.sanitizer"})
    assert "scaledl.kernels.gemm" in carved and not any(m.startswith("scaledl.kernels.sanitizer") for m in carved)
    with pytest.raises(ValueError, match="which is a module, not a package"):
        view.carve("scaledl.kernels.gemm", {"scaledl.kernels.gemm.x"})
    task = tasks.get("lab02", "task_2_1")
    with pytest.raises(ValueError, match=r"needs \['scaledl'\], which holds \['scaledl.kernels'\], which it forbids"):
        view.absent_for(type(task)(**{**task.__dict__, "needs": ("scaledl",)}), frozenset({"scaledl.kernels"}))


def test_a_folder_with_several_modules_left_out_gets_one_bytecode_cache_without_any_of_theirs(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    for stem in ("a", "b", "c"):
        (pkg / f"{stem}.py").write_text("")
        (pkg / "__pycache__" / f"{stem}.cpython-312.pyc").write_bytes(b"")
    monkeypatch.setattr(view, "_where", lambda m: (pkg / f"{m.split('.')[-1]}.py", False))
    pairs = view.build({"pkg.a", "pkg.b"}, tmp_path / "view", why="a test")
    caches = [(stub, target) for stub, target in pairs if target == pkg / "__pycache__"]
    assert len(caches) == 1 and sorted(f.name for f in caches[0][0].iterdir()) == ["c.cpython-312.pyc"]
