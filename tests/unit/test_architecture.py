"""ARCHITECTURE.md, enforced: pyproject.toml's import-linter contracts (layers, no cycles) hold for the package,
and each fails, naming the import, when a bad import is planted in a copy of it. The old names that released
notebooks import still work."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked  # noqa: E402

LINT = Path(sys.executable).with_name("lint-imports")


def lint(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    if not LINT.exists():
        pytest.fail(f"{LINT} not found: import-linter is in the [dev] extra (pip install -e '.[dev]')")
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_package_keeps_its_contracts():
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "2 kept, 0 broken" in r.stdout


@pytest.fixture
def copy_of_the_package(tmp_path):
    """src/scaledl and pyproject.toml copied, so a bad import can be planted without touching the checkout."""
    copy_tracked(tmp_path, "src/scaledl", "pyproject.toml")
    return tmp_path


def _plant(root: Path, module: str, line: str) -> None:
    where = root / "src" / module.replace(".", "/")
    path = where / "__init__.py" if where.is_dir() else where.with_suffix(".py")
    path.write_text(path.read_text() + f"\n{line}  # planted by tests/unit/test_architecture.py\n")


def test_an_upward_import_breaks_the_layers_naming_it(copy_of_the_package):
    _plant(copy_of_the_package, "scaledl.nn", "from scaledl import cli")
    r = lint(copy_of_the_package, copy_of_the_package / "src")
    assert r.returncode != 0
    assert "scaledl.nn is not allowed to import scaledl.cli" in r.stdout
    assert "scaledl.nn -> scaledl.cli" in r.stdout


def test_a_lazy_import_counts_too(copy_of_the_package):
    _plant(copy_of_the_package, "scaledl.perf.hardware", "def _f():\n    from scaledl.kernels import gemm")
    r = lint(copy_of_the_package, copy_of_the_package / "src")
    assert r.returncode != 0 and "scaledl.perf.hardware -> scaledl.kernels.gemm" in r.stdout


def test_a_cycle_inside_an_area_breaks_the_build(copy_of_the_package):
    # book.check imports book.journey; the reverse closes a cycle (the one this contract was written after)
    _plant(copy_of_the_package, "scaledl.book.journey", "def _f():\n    from scaledl.book import check")
    r = lint(copy_of_the_package, copy_of_the_package / "src")
    assert r.returncode != 0
    assert "No cycles are allowed in scaledl.book" in r.stdout


def test_the_names_released_notebooks_import_still_work(monkeypatch):
    """Chapters 03, 04, 12, 19 and labs 01, 02 and 07 as students got them before the moves."""
    from scaledl.cli import doctor  # noqa: F401  (chapter 00)
    from scaledl.comm import interconnect
    from scaledl.kernels import bandwidth, kernel_model
    from scaledl.perf import interconnect as old_ic
    from scaledl.perf import kernel_model as old_km
    from scaledl.perf import roofline
    from scaledl.serve.hook import batch_dispatch_spec, check_batch_policy, policy_hint

    assert old_km.predict is kernel_model.predict and old_km.PEAK_TFLOPS == kernel_model.PEAK_TFLOPS
    assert old_ic.__all__ == interconnect.__all__
    assert all(getattr(old_ic, n) is getattr(interconnect, n) for n in interconnect.__all__)
    monkeypatch.setattr(bandwidth, "measure_triad_GBps", lambda n, repeats: ("triad", n, repeats))
    monkeypatch.setattr(bandwidth, "measure_fma_TFLOPS", lambda t, i, repeats: ("fma", t, i, repeats))
    assert roofline.measure_triad_GBps(97, 2) == ("triad", 97, 2)  # on a GPU: tests/sim runs both for real
    assert roofline.measure_fma_TFLOPS(40, 8, 1) == ("fma", 40, 8, 1)
    assert check_batch_policy(batch_dispatch_spec, n_requests=300, report=io.StringIO()).passed
    assert policy_hint(3, True, 5, 3, 0).startswith("dispatching while busy")
    from scaledl.perf import views

    assert roofline.plot_roofline is views.plot_roofline  # lab 01's R.plot_roofline


def test_the_names_kept_after_this_issues_splits():
    """Split modules keep their old names where graders, tests and notebooks reach them (ARCHITECTURE.md, the
    moves marked "also"), the same objects (graders ban library functions by identity); released labs import
    the GEMM launcher both as a function of scaledl.kernels and from the module."""
    import scaledl.kernels as K
    from scaledl.comm import algorithms, mpi, mpi_allreduce, ring_fit, routes, schedule, topology, transfers
    from scaledl.course import account, authoring, grade, lab, limits, sandbox
    from scaledl.kernels import gemm as gemm_fn  # lab 01, lab 02 (the function)
    from scaledl.kernels import gemm_kloop
    from scaledl.kernels.gemm import LADDER_FACTORIES, gemm, prefetch_kernel  # lab 02 (the module's name)
    from scaledl.labs import dgc_checks, top_k_spec
    from scaledl.serve import hook, policy_specs

    assert gemm is gemm_fn is K.gemm and callable(gemm)
    assert prefetch_kernel is gemm_kloop.prefetch_kernel is LADDER_FACTORIES["prefetch"]
    assert topology.ring_order is ring_fit.ring_order and topology.path_alpha_beta is routes.path_alpha_beta
    assert topology.ring_seconds_per_byte is ring_fit.ring_seconds_per_byte
    assert all(getattr(schedule, n) is getattr(transfers, n) for n in transfers.__all__)  # lab 05's data model
    assert all(getattr(schedule, n) is getattr(algorithms, n) for n in algorithms.__all__)  # and its answers
    assert schedule._ring is algorithms._ring  # chapter 14 shows its source
    assert all(getattr(mpi, n) is getattr(mpi_allreduce, n) for n in mpi_allreduce.__all__)
    assert hook.batch_dispatch_spec is policy_specs.batch_dispatch_spec and hook.single_spec is policy_specs.single_spec
    assert grade.load_lab is lab.load_lab and grade.new_test_cell is authoring.new_test_cell
    assert sandbox.Limits is limits.Limits and sandbox.grading_user is account.grading_user
    assert dgc_checks.spec_top_k is top_k_spec.spec_top_k  # lab 06's Task 1.1 forbids its module, 1.2-2.2 need it
    assert all(hasattr(dgc_checks, n) for n in dgc_checks.__all__)


def test_every_area_has_a_layer_and_a_line_on_the_map():
    """A new area (a folder or a top-level module of src/scaledl) must be placed in the layers and in
    ARCHITECTURE.md; a name that left the package must leave both."""
    import re
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    placed = {m.strip() for layer in layers for m in re.split(r"[|:]", layer)}
    package = ROOT / "src" / "scaledl"
    areas = {f"scaledl.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()}
    areas |= {f"scaledl.{p.stem}" for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert areas == placed, f"in the package, not in a layer: {sorted(areas - placed)}; " \
                            f"in a layer, not in the package: {sorted(placed - areas)}"
    text = (ROOT / "ARCHITECTURE.md").read_text()
    missing = [a for a in sorted(areas) if f"`{a.split('.', 1)[1]}`" not in text]
    assert not missing, f"ARCHITECTURE.md does not place {missing}"


def test_ruff_finds_no_pyflakes_error():
    """pyproject.toml's [tool.ruff]: no unused import or variable, no undefined name, no redefinition, no line
    over 120 characters."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.fail(f"{ruff} not found: ruff is in the [dev] extra (pip install -e '.[dev]')")
    r = subprocess.run([str(ruff), "check", "--no-cache", "src", "tests", "tools"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_no_module_passes_400_lines():
    """ARCHITECTURE.md: a module that grows past ~400 lines is split by what it holds (a package or a sibling
    module), its old names re-exported where a released notebook imports them."""
    package = ROOT / "src" / "scaledl"
    long = {str(p.relative_to(package)): n for p in sorted(package.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, f"modules past 400 lines: {long}"


PRESENTATION = ("matplotlib", "ipywidgets")
_LOADED = """
import importlib, sys
from pathlib import Path
import scaledl
top = Path(scaledl.__file__).parent
# From the files, not pkgutil.walk_packages, which imports every package (widgets too) to list it.
every = (".".join(("scaledl",) + p.relative_to(top).with_suffix("").parts).removesuffix(".__init__")
         for p in sorted(top.rglob("*.py")))
names = sys.argv[1:] or [n for n in every if not n.startswith(("scaledl.widgets", "scaledl.plotting"))
                         and not n.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(" ".join(sorted(m for m in ("matplotlib", "ipywidgets") if m in sys.modules)))
"""


def _presentation_loaded_by(*modules: str) -> set[str]:
    r = subprocess.run([sys.executable, "-c", _LOADED, *modules], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    return set(r.stdout.split())


def test_importing_the_library_loads_no_presentation_code():
    """The views rule (ARCHITECTURE.md): a figure or a widget view imports matplotlib and ipywidgets inside the
    function that draws, so importing any model, kernel or tool (every module but widgets and plotting) loads
    neither. The probe sees them when a module does load them (widgets)."""
    assert _presentation_loaded_by() == set(), "a module outside widgets/plotting imports presentation at its top"
    assert "ipywidgets" in _presentation_loaded_by("scaledl.widgets")


def _drawing_imports(package: Path) -> list[str]:
    """Every import of matplotlib, ipywidgets, scaledl.widgets or scaledl.plotting (at any depth of a function)
    in a module that is not a views module (``views.py``, ``*_views.py``) nor widgets/plotting themselves."""
    import ast

    drawing = ("matplotlib", "ipywidgets", "scaledl.widgets", "scaledl.plotting")
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] == "widgets" or rel.name == "plotting.py" or rel.stem == "views" or rel.stem.endswith("_views"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{rel}:{node.lineno} imports {n}" for n in names if n.startswith(drawing)]
    return found


def test_only_views_modules_draw(tmp_path):
    """The views rule (ARCHITECTURE.md): every figure and widget view of an area lives in its views module
    (``perf/views.py``, ``comm/record_views.py``, ...); no model, kernel or tool imports matplotlib or ipywidgets,
    not even inside a function. A drawing function planted in a model fails the check."""
    package = ROOT / "src" / "scaledl"
    assert _drawing_imports(package) == []
    planted = tmp_path / "scaledl"
    (planted / "perf").mkdir(parents=True)
    (planted / "perf" / "energy.py").write_text("def chart():\n    import matplotlib.pyplot as plt\n    return plt\n")
    assert _drawing_imports(planted) == ["perf/energy.py:2 imports matplotlib.pyplot"]
