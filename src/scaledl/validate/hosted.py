"""A hosted-notebook dry run: what Colab does, on this machine. Build the book's wheel, install ONLY it (with
its dependencies from PyPI) into a fresh virtualenv, add the runtime's own ipykernel and nbclient, and execute
chapter 04 and lab 02's solution there, each alone in an empty folder, cell by cell.

It catches what a checkout hides: a module or data file missing from the wheel, a dependency only the dev
extra brings, a notebook that reads a file from the repository. tests/packaging/test_wheel.py does the same
for chapter 00 and a student lab; this one runs the GPU notebooks, on the GPU where there is one. It needs
PyPI or a warm pip cache and takes minutes, so it runs only with ``scaledl validate --hosted``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scaledl import device

NOTEBOOKS = ("04", "lab02")
RUNTIME_PACKAGES = ("ipykernel", "nbclient")  # the hosted runtime's, not scaledl's
TIMEOUT_S = 1800  # one pip install or one notebook
# A fresh runtime shares nothing with this checkout's environment (PYTHONPATH=src would make pip think
# the package is already installed; SCALEDL_BOOK_ROOT would point notebooks at the repository).
_DROPPED_ENV = ("PYTHONPATH", "SCALEDL_BOOK_ROOT", "VIRTUAL_ENV", "NUMBA_ENABLE_CUDASIM", "PYTHONHOME")

# Runs inside the fresh venv: execute one notebook cell by cell, print one JSON list of cell records.
DRIVER = r'''
import json, sys, time, nbformat, zmq
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from traitlets.config import Config
nb = nbformat.read(sys.argv[1], 4)
# As scaledl.book.execute.kernel_config: CurveZMQ where this runtime's jupyter_client and libzmq offer it.
config = Config({"KernelManager": {"transport_encryption": "auto"}}) if (
    "transport_encryption" in KernelManager.class_trait_names() and zmq.has("curve")) else Config()
client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": "."}},
                        config=config)
cells, failed = [], False
with client.setup_kernel():
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        rec = {"index": i, "status": "not run", "seconds": 0.0, "error": "",
               "source": cell.source.strip().splitlines()[0][:80] if cell.source.strip() else ""}
        cells.append(rec)
        if failed:
            continue
        t = time.perf_counter()
        try:
            client.execute_cell(cell, i)
            rec["status"] = "passed"
        except Exception as err:
            rec.update(status="failed", error=f"{getattr(err, 'ename', type(err).__name__)}: "
                                              f"{getattr(err, 'evalue', str(err).splitlines()[0] if str(err) else '')}")
            failed = True
        rec["seconds"] = round(time.perf_counter() - t, 3)
nbformat.write(nb, sys.argv[1])
print("CELLS " + json.dumps(cells))
'''


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("env", _env())
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=TIMEOUT_S, **kw)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip()[-2000:]
        raise RuntimeError(f"{' '.join(str(c) for c in cmd[:4])} ... exited {proc.returncode}: {tail}")
    return proc


def build_wheel(root: Path, work: Path) -> Path:
    """``pip wheel --no-deps`` of a copy of the package (so the checkout gets no build/ or egg-info)."""
    src = work / "project"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(root / name, src / name)
    shutil.copytree(root / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", work / "dist", src])
    return next((work / "dist").glob("scaledl-*.whl"))


def run(root: Path | None, out: Path, *, names=NOTEBOOKS, progress=print) -> dict:
    """The hosted step: ``absent`` without a checkout (nothing to build a wheel from), ``failed`` when the
    build or an install fails or a notebook cell raises. Executed copies go to ``out/hosted``."""
    from scaledl.book import load
    from scaledl.validate.notebooks import summarize

    if root is None or not (root / "pyproject.toml").is_file():
        return {"status": "absent", "reason": "no checkout with a pyproject.toml to build the wheel from",
                "notebooks": []}
    book = load(root)
    (out / "hosted").mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="scaledl-hosted-") as tmp:
        work = Path(tmp)
        try:
            progress("hosted: pip wheel --no-deps")
            wheel = build_wheel(root, work)
            venv = work / "venv"
            _run([sys.executable, "-m", "venv", venv])
            py = venv / "bin" / "python"
            progress(f"hosted: pip install {wheel.name} (its dependencies from PyPI), then "
                     f"{' '.join(RUNTIME_PACKAGES)}")
            _run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel], cwd=work)
            _run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *RUNTIME_PACKAGES])
        except (RuntimeError, subprocess.TimeoutExpired, StopIteration) as err:
            return {"status": "failed", "reason": f"could not make the hosted runtime: {err}", "notebooks": []}
        env = _env()
        env.update({device.ENV_VAR: device.backend(), "JUPYTER_DATA_DIR": str(work / "jupyter-data"),
                    "JUPYTER_PATH": "", "PATH": f"{py.parent}{os.pathsep}{env.get('PATH', '')}"})
        for name in names:
            entry = book.resolve(name)
            folder = work / entry.id  # empty but for the notebook, as a fresh runtime's working directory
            folder.mkdir()
            nb_path = folder / Path(entry.executed_file).name
            shutil.copy2(book.path(entry.executed_file), nb_path)
            progress(f"hosted: {entry.id} {entry.executed_file} in the fresh venv's kernel")
            proc = subprocess.run([str(py), "-c", DRIVER, nb_path.name], cwd=folder, env=env, capture_output=True,
                                  text=True, timeout=TIMEOUT_S)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("CELLS ")), None)
            if line is None:
                tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
                cells = [{"index": -1, "status": "failed", "seconds": 0.0, "source": "(driver)",
                          "error": f"the driver exited {proc.returncode}: {' / '.join(tail)}"}]
            else:
                cells = json.loads(line[len("CELLS "):])
                shutil.copy2(nb_path, out / "hosted" / nb_path.name)
            results.append(summarize(entry.id, entry.executed_file, cells, sum(c["seconds"] for c in cells)))
    failed = [r["id"] for r in results if r["status"] == "failed"]
    return {"status": "failed" if failed else "passed", "wheel": wheel.name,
            "reason": f"{len(results) - len(failed)} of {len(results)} notebooks ran every cell in a fresh venv "
                      f"with only {wheel.name} and {', '.join(RUNTIME_PACKAGES)}", "notebooks": results}
