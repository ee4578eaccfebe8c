"""The light install, as a hosted runtime (Colab, Kaggle, a JupyterHub) gets it: build the wheel, install it
WITHOUT extras into a fresh virtual environment, and execute one chapter and one student lab in an empty
folder, far from the repository.

The runtime's own Jupyter is stood in for by ipykernel and nbclient, installed after the wheel's size is
measured (they are the runtime's, not scaledl's dependencies). The install's size (du of site-packages, and
what the wheel added to a bare venv) and time are printed with the test output. pip needs PyPI or its cache
(a warm cache: about 1 min in all; a cold one downloads about 150 MB). SCALEDL_SKIP_PACKAGING=1 skips it on a
machine with neither.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.packaging,
              pytest.mark.skipif(os.environ.get("SCALEDL_SKIP_PACKAGING") == "1",
                                 reason="SCALEDL_SKIP_PACKAGING=1 (no PyPI and no pip cache here)")]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the shared tracked module
from tracked import copy_tracked  # noqa: E402
CHAPTER, LAB = "00", "lab03"
FORBIDDEN = ("jupyterlab", "nbval", "mpich", "mpi4py", "pytest", "playwright", "nbgrader", "notebook")


# A fresh runtime: nothing of this checkout's environment (PYTHONPATH=src would make pip think the package
# is already installed).
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "SCALEDL_BOOK_ROOT", "VIRTUAL_ENV", "NUMBA_ENABLE_CUDASIM", "PYTHONHOME")}


def _run(cmd, **kw):
    kw.setdefault("env", CLEAN_ENV)
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=1200, **kw)
    assert run.returncode == 0, f"{cmd}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run


def _du_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


@pytest.fixture(scope="module")
def runtime(tmp_path_factory, request):
    work = tmp_path_factory.mktemp("light")
    src = work / "project"  # build from a copy, so the checkout gets no build/ or egg-info
    src.mkdir()
    copy_tracked(src, "pyproject.toml", "README.md", "LICENSE", "src")   # what git does not ignore
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", work / "dist", src])
    wheel = next((work / "dist").glob("scaledl-*.whl"))
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", venv])
    py = venv / "bin" / "python"
    bare_B = _du_bytes(_site_packages(venv))
    start = time.perf_counter()
    _run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel], cwd=work)
    install_s = time.perf_counter() - start
    site = _site_packages(venv)
    size_B = _du_bytes(site)
    freeze = _run([py, "-m", "pip", "freeze"], cwd=work).stdout.lower()
    numbers = {"install_s": install_s, "site_packages_MiB": size_B / 2**20,
               "added_MiB": (size_B - bare_B) / 2**20, "packages": len(freeze.split()), "freeze": freeze,
               "wheel_KiB": wheel.stat().st_size / 2**10}
    # the hosted runtime's own Jupyter, not scaledl's
    _run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "ipykernel", "nbclient"])
    return py, work, numbers


def test_the_light_install_has_no_extra(runtime, capsys):
    py, _, n = runtime
    names = {line.split("==")[0].split(" @ ")[0].replace("_", "-") for line in n["freeze"].split()}
    assert "scaledl" in names and "numba" in names and "numpy" in names
    assert not names & set(FORBIDDEN), sorted(names & set(FORBIDDEN))
    with capsys.disabled():
        print(f"\n[light install] wheel {n['wheel_KiB']:.0f} KiB; pip install of the wheel, no extras: "
              f"{n['install_s']:.1f} s, {n['packages']} distributions, site-packages {n['site_packages_MiB']:.0f} "
              f"MiB ({n['added_MiB']:.0f} MiB over a bare venv)")


def _execute(py: Path, folder: Path, name: str) -> nbformat.NotebookNode:
    """Execute ``folder/name`` in place with the venv's kernel, as the runtime's Jupyter would."""
    driver = ("import sys, nbformat\nfrom nbclient import NotebookClient\n"
              "nb = nbformat.read(sys.argv[1], 4)\n"
              "NotebookClient(nb, timeout=600, kernel_name='python3', allow_errors=True,\n"
              "               resources={'metadata': {'path': '.'}}).execute()\n"
              "nbformat.write(nb, sys.argv[1])\n")
    env = dict(CLEAN_ENV)
    env.update(SCALEDL_BACKEND="simulator", JUPYTER_DATA_DIR=str(folder / ".jupyter-data"), JUPYTER_PATH="",
               PATH=f"{py.parent}{os.pathsep}{env.get('PATH', '')}")
    _run([py, "-c", driver, name], cwd=folder, env=env)
    return nbformat.read(folder / name, 4)


def _errors(nb):
    return [(i, o.ename, o.evalue[:100]) for i, c in enumerate(nb.cells) if c.cell_type == "code"
            for o in c.get("outputs", []) if o.output_type == "error"]


def _prepare(work: Path, rel: str, label: str) -> tuple[Path, str]:
    folder = work / label  # empty but for the notebook, as a fresh runtime's working directory
    folder.mkdir()
    nb = nbformat.read(ROOT / rel, 4)
    nb.cells.insert(0, nbformat.v4.new_code_cell("import sys; print('prefix', sys.prefix)"))
    name = Path(rel).name
    nbformat.write(nb, folder / name)
    return folder, name


def test_a_chapter_runs_on_the_light_install(runtime):
    from scaledl.book import load

    py, work, _ = runtime
    folder, name = _prepare(work, load(ROOT).resolve(CHAPTER).file, "chapter")
    nb = _execute(py, folder, name)
    assert nb.cells[0].outputs[0].text.split()[1] == str(py.parent.parent)  # the venv's kernel ran it
    assert _errors(nb) == []
    first_code = next(c for c in nb.cells[1:] if c.cell_type == "code")  # the chapter's setup cell
    setup = "".join(o.get("text", "") for o in first_code.outputs)
    assert "scaledl: simulator backend" in setup


def test_a_student_lab_runs_on_the_light_install(runtime):
    from scaledl.book import load

    py, work, _ = runtime
    folder, name = _prepare(work, load(ROOT).resolve(LAB).file, "lab")
    nb = _execute(py, folder, name)
    assert nb.cells[0].outputs[0].text.split()[1] == str(py.parent.parent)
    assert _errors(nb) == []  # no ImportError, and Run All goes past the unwritten tasks (scaledl.labs.unanswered)
    said = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "Task 1.1 not answered yet" in said  # each unwritten task says so in its own cells
