"""`pip install scaledl` carries exactly what the chapters and labs import; the rest is an extra, and code that
needs an extra says which one when it is missing. Static checks of pyproject.toml, every notebook's imports
and the package's runtime modules, plus the messages; about 3 s. (tests/packaging/test_wheel.py installs the
wheel for real.)"""

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from scaledl import _optional
from scaledl.book import load

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import tracked  # noqa: E402

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
BOOK = load(ROOT)
# import name -> distribution, where they differ
DISTRIBUTION = {"sklearn": "scikit-learn", "ml_dtypes": "ml-dtypes", "IPython": "ipython"}
TRANSITIVE = {"ipython"}  # ipywidgets requires it, and every Jupyter runtime has it
# imported only when the backend is CUDA (the cu12/cu13 extras, or the runtime's own)
GPU_ONLY = {"cupy", "cupyx", "torch"}
HOSTED = {"google"}  # Colab's own modules (google.colab), imported only inside a try where Colab runs (labs.handin)
# Authors' and instructors' tools, not imported by any chapter: they may need the [lab] or [course] extra.
TOOLS = re.compile(r"^scaledl/(cli|__main__|drift|course/.*|validate/.*|kernels/bench|"
                   r"book/(?!__init__|show|toc)\w+)\.py$")


def _dist(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


BASE = {_dist(r) for r in PROJECT["dependencies"]}


def _imports(tree) -> list[tuple[str, bool]]:
    """(top-level package, imported at module level outside try) for every absolute import in ``tree``."""
    top_level = {id(n) for n in getattr(tree, "body", []) if isinstance(n, (ast.Import, ast.ImportFrom))}
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            found += [(a.name.split(".")[0], id(n) in top_level) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            found.append((n.module.split(".")[0], id(n) in top_level))
    return [(m, t) for m, t in found if m not in sys.stdlib_module_names and m != "scaledl"]


def _in_base(module: str) -> bool:
    dist = DISTRIBUTION.get(module, module).lower().replace("_", "-")
    return dist in BASE or dist in TRANSITIVE


def _notebooks():
    for e in BOOK.entries:
        if e.validated:
            yield from {e.file, e.executed_file}


def _code(path: str) -> str:
    cells = json.loads((ROOT / path).read_text())["cells"]
    lines = [ln for c in cells if c["cell_type"] == "code" for ln in "".join(c["source"]).splitlines()]
    return "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))


def test_the_runtime_leaves_out_jupyterlab_the_test_tools_mpi_and_the_grader():
    assert not BASE & {"jupyterlab", "nbval", "pytest", "mpich", "mpi4py", "nbgrader", "playwright", "nbclient"}
    extras = PROJECT["optional-dependencies"]
    assert {"lab", "mpi", "course", "dev"} <= set(extras)
    assert {_dist(r) for r in extras["mpi"]} == {"mpi4py", "mpich"}
    assert "jupyterlab" in {_dist(r) for r in extras["lab"]}
    assert any(re.fullmatch(r"scaledl\[.*\blab\b.*\bmpi\b.*\bcourse\b.*\]", r) for r in extras["dev"])


@pytest.mark.parametrize("path", sorted(set(_notebooks())))
def test_every_notebook_import_is_in_the_runtime_install(path):
    missing = {m for m, _ in _imports(ast.parse(_code(path))) if not _in_base(m) and m not in GPU_ONLY}
    assert not missing, f"{path} imports {sorted(missing)}: add them to pyproject dependencies"


def test_runtime_modules_import_only_the_runtime_install_or_say_which_extra():
    problems = []
    for py in [ROOT / p for p in tracked("src") if p.endswith(".py")]:
        rel = py.relative_to(ROOT / "src").as_posix()
        if TOOLS.match(rel):
            continue
        for module, top in _imports(ast.parse(py.read_text())):
            if _in_base(module):
                continue
            if top or (module not in _optional.EXTRAS and module not in GPU_ONLY and module not in HOSTED):
                problems.append(f"{rel}: imports {module}")
    assert problems == []


def test_the_tools_are_not_imported_by_the_runtime():
    run = subprocess.run([sys.executable, "-c", "import sys; import scaledl, scaledl.book, scaledl.widgets, "
                          "scaledl.comm, scaledl.comm.mpi, scaledl.labs.check, scaledl.labs.ring, scaledl.nn; "
                          "print(sorted(m for m in ('nbformat', 'nbclient', 'nbconvert', 'mpi4py', 'jupyterlab')"
                          " if m in sys.modules))"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"


BLOCK = "import sys\nfor m in {mods!r}: sys.modules[m] = None  # as if not installed\n"


@pytest.mark.parametrize("code, mods, expected", [
    ("from scaledl.comm.mpi import schedule_allreduce\nschedule_allreduce(None, [1.0])",
     ("mpi4py", "mpi4py.MPI"), r"schedule_allreduce needs mpi4py, .* pip install \"scaledl\[mpi\] @ git\+"),
    ("from scaledl.comm.mpi import launch\nlaunch(2, ['-c', 'pass'])",
     ("mpi4py",), r"running MPI ranks needs mpi4py, .* pip install \"scaledl\[mpi\] @ git\+"),
    ("from scaledl.cli import main\nsys.exit(main(['book', 'check']))",
     ("nbformat",), r"`scaledl book check` needs nbformat, .* pip install \"scaledl\[lab\] @ git\+"),
    ("from scaledl.cli import main\nsys.exit(main(['course', 'release', '/tmp/nowhere']))",
     ("nbformat",), r"`scaledl course release` needs nbformat, .* pip install \"scaledl\[(lab|course)\] @ git\+"),
])
def test_a_missing_extra_is_named(code, mods, expected):
    run = subprocess.run([sys.executable, "-c", BLOCK.format(mods=mods) + code], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert run.returncode != 0
    assert re.search(expected, run.stderr), run.stderr[-2000:]


def test_a_package_outside_the_extras_gets_its_own_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "not_an_extra_xyz", None)
    with pytest.raises(ModuleNotFoundError, match="not_an_extra_xyz.*pip install not_an_extra_xyz"):
        _optional.require("not_an_extra_xyz", "a test")


MPI_USE = re.compile(r"\b(mpi_bench|comm\.mpi|check_mpi_allreduce|mpi4py|mpi_train)\b")


def test_notebooks_that_run_mpi_install_the_mpi_extra():
    wrong = [p for p in sorted(set(_notebooks())) if MPI_USE.search(_code(p))
             and 'scaledl[mpi] @ git+' not in (ROOT / p).read_text()]
    assert wrong == []


# `scaledl` is not on PyPI: a command that says `pip install scaledl` or `pip install 'scaledl[extra]'` (from an
# index) promises a package that does not exist. Installs name a checkout or the book's git repository.
PYPI_PROMISE = re.compile(r"""pip install\s+(['"]?)scaledl(\[[\w,]+\])?\1(?!\s*@)(?![-\w])""")


def test_no_message_or_document_promises_a_pypi_package():
    files = [p for p in tracked("src", "README.md", "INSTRUCTORS.md", "CONTRIBUTING.md", "docs", "chapters")
             if p.endswith((".py", ".md", ".ipynb"))]
    def text(p):
        raw = (ROOT / p).read_text()
        return "\n".join("".join(c["source"]) for c in json.loads(raw)["cells"]) if p.endswith(".ipynb") else raw

    found = [f"{p}: {m.group(0)}" for p in files for m in PYPI_PROMISE.finditer(text(p))]
    assert not found, "scaledl is not on PyPI; say how to install from a checkout or the repository:\n" + \
        "\n".join(found)
    assert PYPI_PROMISE.search("pip install 'scaledl[mpi]'") and PYPI_PROMISE.search("pip install scaledl")
    assert not PYPI_PROMISE.search('pip install "scaledl[mpi] @ git+https://x/y"')
